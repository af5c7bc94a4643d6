"""The budget view: the released and planned measurements of this dataset, their totals under
every accountant side by side against the steward's budget, the budget left, and the privacy
profiles epsilon(delta) of everything released and planned.

The view holds the plan (immutable :class:`PlannedMeasurement` values). Every change (a
statistic added or removed, a hold, an epsilon or a target error typed, the budget, sharing)
emits :attr:`BudgetView.job_requested` with a :class:`BudgetRequest`; the window runs
:func:`budget_job` on it through the compute service and hands the result to
:meth:`BudgetView.show_result`, which only draws."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from dpexplorer.core import planning
from dpexplorer.core.accounting.compose import METHODS
from dpexplorer.core.accounting.guarantees import Guarantee, Subsampled, poisson_subsampled
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.mechanisms.base import QueryInput
from dpexplorer.core.planning import (
    BudgetReport,
    ErrorTarget,
    PlannedMeasurement,
    ReleasedMeasurement,
)
from dpexplorer.gui import palette
from dpexplorer.gui.plot_export import Column
from dpexplorer.gui.views.base import (
    GREEN,
    GREY,
    ORANGE,
    PALETTE,
    RED,
    View,
    dashed_line,
    log_ticks,
    new_plot,
)

PROFILE_DELTAS = np.geomspace(1e-12, 1e-1, 12)
"""The deltas at which the privacy profiles are drawn (one per decade: the tight accountant
takes tens of milliseconds per delta when Gaussian noise is in the plan)."""

METHOD_NAMES = planning.METHOD_LABELS
COLUMNS = (
    "Statistic",
    "Mechanism",
    "ε",
    "δ",
    "Release charges ε",
    "Hold ε",
    "Target error ±",
    "Level",
    "Note",
)
TABLE_HEIGHT = 120
LEGEND_ROOM = 0.6
"""Decades left empty above the comparison's curves, per decade they span: the legend's room."""
"""The plan table's minimum height in pixels (half of it while two mechanisms are compared)."""
EPSILON_COLUMN, CHARGED_COLUMN, HOLD_COLUMN, TARGET_COLUMN, LEVEL_COLUMN = 2, 4, 5, 6, 7


# ------------------------------------------------------------------ the job
@dataclass(frozen=True, eq=False)
class BudgetRequest:
    """Everything :func:`budget_job` needs, captured on the main thread.

    ``share_method``: when set, the statistics not held share what is left of the budget under
    that accountant (:func:`planning.share_budget`). ``ledger_method``: the accountant the ledger
    charges with (None when the budget is not the ledger's)."""

    plan: tuple[PlannedMeasurement, ...]
    released: tuple[ReleasedMeasurement, ...]
    budget_epsilon: float
    budget_delta: float
    share_method: str | None = None
    ledger_method: str | None = None
    sampling_rate: float | None = None
    """The steward's claim that the file is a secret Poisson sample (None: no claim)."""


@dataclass(frozen=True)
class Row:
    """One line of the table: epsilon and delta as the mechanism claims them (released
    measurements: their guarantee's pair, or its epsilon at the budget's delta); ``charged``:
    the epsilon its release is (or was) charged, at the budget's delta."""

    label: str
    mechanism: str
    epsilon: float
    delta: float
    held: bool
    released: bool
    charged: float = math.nan
    target: ErrorTarget | None = None
    note: str = ""


@dataclass(frozen=True, eq=False)
class BudgetResult:
    """What the budget view draws. ``plan`` is the request's plan with target errors solved and
    the budget shared; ``guarantees`` are those of released + planned (for the risk view)."""

    request: BudgetRequest
    plan: tuple[PlannedMeasurement, ...]
    rows: tuple[Row, ...]
    report: BudgetReport
    profiles: dict[str, planning.Profile]
    guarantees: tuple[Guarantee, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


def _solve_targets(plan: Sequence[PlannedMeasurement]) -> tuple[list[PlannedMeasurement], dict[int, str]]:
    solved, notes = [], {}
    for i, item in enumerate(plan):
        try:
            solved.append(planning.apply_target(item))
        except DPExplorerError as exc:
            solved.append(item)
            notes[i] = str(exc)
    return solved, notes


def release_charge(
    item: PlannedMeasurement, method: str | None, sampling_rate: float | None = None
) -> Guarantee:
    """What releasing ``item`` would charge under ``method`` (``release.planned_charge``: the
    release path's own guarantee; with the steward's ``sampling_rate`` claim, that guarantee
    amplified, under every accountant, as a release with the claim is charged); the mechanism's
    claim where it has no exact release (the row's note then says why)."""
    from dpexplorer.release.release import planned_charge

    relation = item.query.relation
    try:
        if sampling_rate is not None and sampling_rate < 1:
            own = planned_charge(item.mechanism, item.params, item.query, None)
            return poisson_subsampled(own, sampling_rate, relation)
        return planned_charge(item.mechanism, item.params, item.query, method)
    except DPExplorerError:
        return poisson_subsampled(planning.claimed_guarantee(item, method), sampling_rate, relation)


def _release_refusal(item: PlannedMeasurement) -> str:
    """Why ``item`` cannot be released exactly ("" when it can)."""
    from dpexplorer.release.release import planned_charge

    try:
        planned_charge(item.mechanism, item.params, item.query, None)
    except DPExplorerError as exc:
        return f"cannot be released as planned ({exc}); priced at the mechanism's claim"
    return ""


def _rows(
    plan: Sequence[PlannedMeasurement],
    released: Sequence[ReleasedMeasurement],
    delta: float,
    notes: dict[int, str],
    amplified: Sequence[Guarantee | None],
    charges: Sequence[Guarantee],
) -> tuple[Row, ...]:
    """The table: ε and δ as the mechanism claims them (the parameters typed; ``amplified[i]``,
    the plan's i-th guarantee when the sampling claim amplifies it, else None), and the ε its
    release is charged (``charges[i]``, under the ledger's accountant) at the budget's δ, as
    released rows show theirs (the same :func:`planning.guarantee_epsilon_delta`)."""
    rows = []
    pairs = planning.guarantees_epsilon_delta([item.guarantee for item in released], delta)
    for item, (eps, dlt) in zip(released, pairs, strict=True):
        rows.append(
            Row(item.label, item.mechanism, eps, dlt, True, True, eps, note="released (in the ledger)")
        )
    for i, step in enumerate(plan):
        note = notes.get(i, "")
        amplified_guarantee = amplified[i]
        if amplified_guarantee is not None:
            eps, dlt = planning.guarantee_epsilon_delta(amplified_guarantee, delta)
            note = note or "amplified: the file is declared a secret sample"
        else:
            eps, dlt = planning.claimed_epsilon_delta(step)
        charged, _ = planning.guarantee_epsilon_delta(charges[i], delta)
        note = "; ".join(t for t in (note, _release_refusal(step)) if t)
        rows.append(Row(step.label, step.mechanism, eps, dlt, step.held, False, charged, step.target, note))
    return tuple(rows)


def budget_job(request: BudgetRequest) -> BudgetResult:
    """Solve target errors, share the budget if asked, compose under every accountant and
    compute the profiles (everything from :mod:`dpexplorer.core.planning`). A target that cannot
    be met or a budget that cannot be shared becomes a note; the plan is then left as it was."""
    plan, row_notes = _solve_targets(request.plan)
    notes = [f"{plan[i].label}: {text}" for i, text in row_notes.items()]
    pricing = functools.partial(release_charge, sampling_rate=request.sampling_rate)
    released = [item.guarantee for item in request.released]
    if request.share_method is not None and plan:
        try:
            plan = list(
                planning.share_budget(
                    plan,
                    request.budget_epsilon,
                    request.budget_delta,
                    request.share_method,
                    released=released,
                    guarantee_of=pricing,
                )
            )
        except DPExplorerError as exc:
            notes.append(f"Cannot share the budget: {exc}.")
    by_method = planning.guarantees_by_method(plan, pricing)
    everything = {method: released + planned for method, planned in by_method.items()}
    charges = planning.plan_guarantees(plan, method=request.ledger_method, guarantee_of=pricing)
    claimed = planning.plan_guarantees(plan, request.sampling_rate)
    amplified = [g if isinstance(g, Subsampled) else None for g in claimed]
    return BudgetResult(
        request=request,
        plan=tuple(plan),
        rows=_rows(plan, request.released, request.budget_delta, row_notes, amplified, charges),
        report=planning.budget_report(by_method, released, request.budget_epsilon, request.budget_delta),
        profiles=planning.privacy_profiles(everything, PROFILE_DELTAS),
        guarantees=tuple(released + charges),
        notes=tuple(notes),
    )


COMPARE_METHODS = ("basic", "advanced", "zcdp", "pld")
"""The accountants the comparison of two mechanisms over many releases draws (four per
mechanism keep the legend readable; the bars name all six). zCDP is among them because the
exact Gaussian release (discrete Gaussian) is charged its zCDP guarantee under basic, advanced
and zCDP composition, and an (ε, δ) pair under the tight accountant."""


@dataclass(frozen=True)
class Contender:
    """One side of a comparison: a mechanism (registry name) at ``params``, named ``label``."""

    label: str
    mechanism: str
    params: dict[str, Any]
    short: str = ""
    """The mechanism's name alone (the legend's), ``label`` when empty."""

    def __post_init__(self) -> None:
        if not self.short:
            object.__setattr__(self, "short", self.label)


@dataclass(frozen=True, eq=False)
class RepeatsRequest:
    """Two mechanisms on one query, composed over k releases at the budget's delta
    (:func:`repeats_job`); captured on the main thread."""

    current: Contender
    pinned: Contender
    query: QueryInput
    budget_epsilon: float
    budget_delta: float
    sampling_rate: float | None = None


@dataclass(frozen=True, eq=False)
class RepeatsResult:
    """epsilon of k releases of each side under each of :data:`COMPARE_METHODS` (NaN where the
    accountant does not apply), at ``request.budget_delta``."""

    request: RepeatsRequest
    repeats: tuple[int, ...]
    current: dict[str, np.ndarray]
    pinned: dict[str, np.ndarray]


def repeats_job(request: RepeatsRequest) -> RepeatsResult:
    """Price one release of each side as the planner does (:func:`release_charge`: what the
    release would be charged under each accountant, with the steward's sampling claim) and
    compose k of them (:func:`planning.repeated_totals`, upper bounds)."""
    pricing = functools.partial(release_charge, sampling_rate=request.sampling_rate)

    def totals(side: Contender) -> dict[str, np.ndarray]:
        item = PlannedMeasurement(side.label, side.mechanism, side.params, request.query)
        priced = planning.guarantees_by_method([item], pricing, COMPARE_METHODS)
        one = {method: guarantees[0] for method, guarantees in priced.items()}
        return planning.repeated_totals(one, planning.REPEATS, request.budget_delta, COMPARE_METHODS)

    return RepeatsResult(request, planning.REPEATS, totals(request.current), totals(request.pinned))


def released_from_ledger(ledger: object, fingerprint: str) -> tuple[ReleasedMeasurement, ...]:
    """The measurements the ledger (a :class:`dpexplorer.release.ledger.Ledger`) holds for the
    dataset, labelled by their query."""
    out = []
    for m in ledger.measurements(fingerprint):  # type: ignore[attr-defined]
        out.append(ReleasedMeasurement(f"released #{m.id}: {_described(m.query)}", m.mechanism, m.guarantee))
    return tuple(out)


def _described(query: dict) -> str:
    """A ledger row's query in words, as the query panel says it ("the mean of age, clipped to
    [17, 90]"); its fields when the query cannot be rebuilt (an older or foreign row)."""
    from dpexplorer.data.queries import query_from_dict

    try:
        return str(query_from_dict(query).describe())
    except Exception:  # any row the ledger holds must still be listed
        fields = ", ".join(f"{k}={v}" for k, v in query.items() if isinstance(v, str | int | float))
        return fields[:80]


# ------------------------------------------------------------------ the widget
def _total(value: float) -> str:
    """A composed total on a bar, to four digits (compared with the budget there)."""
    if not math.isfinite(value):
        return "∞"
    return "0" if value == 0 else f"{value:.4g}"


def _number(value: float) -> str:
    """ε or δ as a person reads it (release/presentation.py: three significant digits, so an
    exact sampler's ε of 0.29990 for a claimed 0.3 shows 0.3; the ledger decides exactly)."""
    from dpexplorer.release.presentation import privacy_number

    return privacy_number(value)


def _item(text: str, editable: bool = False, tooltip: str = "") -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
    if editable:
        flags |= Qt.ItemFlag.ItemIsEditable
    item.setFlags(flags)
    if tooltip:
        item.setToolTip(tooltip)
    return item


class BudgetView(View):
    """Draws a :class:`BudgetResult`; holds the plan and asks for a new result when it changes."""

    add_requested = Signal()
    """"Add current statistic" was clicked: answer with :meth:`add_measurement`."""
    job_requested = Signal(object)
    """A :class:`BudgetRequest` to run :func:`budget_job` on (through the compute service)."""
    plan_changed = Signal(object)
    """The plan (a tuple of PlannedMeasurement) after every change, e.g. for sessions."""
    plan_total_changed = Signal(object, float)
    """The guarantees of everything released and planned, and the budget's delta (risk view)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Privacy budget: what is released, what is planned, what is left", parent)
        self.explanation.setText(
            "Every release spends part of the dataset's privacy budget. The table lists what is "
            "already released (grey, from the ledger) and what you plan. Type a <b>target error</b> "
            "to have ε solved for it, tick <b>Hold ε</b> to keep a statistic's ε, and let the others "
            "share what is left. The accountants are different theorems bounding the same total: "
            "each bar is a valid upper bound, the lowest one counts."
        )
        self._plan: tuple[PlannedMeasurement, ...] = ()
        self._released: tuple[ReleasedMeasurement, ...] = ()
        self._ledger_method: str | None = None
        self._identity_note: str | None = None  # why the ledger is not read yet (the window's)
        self._sampling_rate: float | None = None
        self._request: BudgetRequest | None = None
        self._filling = False
        self.result: BudgetResult | None = None
        self._reasons: list[str] = []
        self._build_controls()
        self._build_table()
        self._build_plots()

    # ------------------------------------------------------------------ layout
    def _build_controls(self) -> None:
        self.budget_epsilon = QDoubleSpinBox()
        self.budget_epsilon.setRange(0.001, 100.0)
        self.budget_epsilon.setDecimals(3)
        self.budget_epsilon.setValue(1.0)
        self.budget_epsilon.setToolTip("The total ε the steward allows for this dataset.")
        self.budget_delta = QLineEdit("1e-6")
        self.budget_delta.setMaximumWidth(90)
        self.budget_delta.setToolTip(
            "The total δ allowed (0 for a pure-ε budget). Keep it well below 1/n. Press Enter to apply."
        )
        self.budget_source = QLabel("budget: for planning (none set in the ledger)")
        self.budget_source.setWordWrap(True)
        self.share = QCheckBox("Share what is left, under")
        self.share.setToolTip(
            "Scale the ε of every statistic that is neither held nor solved from a target error by one "
            "common factor, so that everything together uses the whole budget under this accountant."
        )
        self.share_method = QComboBox()
        for method in METHODS:
            self.share_method.addItem(METHOD_NAMES[method], method)
        self.share_method.setCurrentIndex(METHODS.index("pld"))
        self.share_method.setAccessibleName("Accountant the budget is shared under")
        row = QHBoxLayout()
        for widget in (QLabel("Budget ε:"), self.budget_epsilon, QLabel("δ:"), self.budget_delta):
            row.addWidget(widget)
        row.addWidget(self.budget_source, 1)
        self.body.addLayout(row)
        share_row = QHBoxLayout()  # its own row: beside the budget it set the window's width
        share_row.addWidget(self.share)
        share_row.addWidget(self.share_method)
        share_row.addStretch(1)
        self.body.addLayout(share_row)
        self.budget_epsilon.valueChanged.connect(lambda _v: self._changed())
        self.budget_delta.editingFinished.connect(self._changed)
        self.share.toggled.connect(lambda _v: self._changed())
        self.share_method.currentIndexChanged.connect(lambda _v: self._changed())

    def _build_table(self) -> None:
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setAccessibleName("Released and planned statistics")
        self.table.setTabKeyNavigation(False)  # Tab leaves the table (arrows move in it)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # the statistic and the note take what is left and wrap: a long description no longer
        # pushes the note out of sight
        for column in (0, len(COLUMNS) - 1):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
        self.table.setWordWrap(True)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setMinimumHeight(TABLE_HEIGHT)
        self.table.itemChanged.connect(self._item_changed)
        self.add_button = QPushButton("Add current statistic")
        self.add_button.setToolTip("Add the query and mechanism you are exploring to the plan.")
        self.add_button.clicked.connect(self.add_requested.emit)
        self.remove_button = QPushButton("Remove selected")
        self.remove_button.setToolTip("Remove the selected planned statistics (released ones stay).")
        self.remove_button.clicked.connect(self._remove_selected)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        self.body.addWidget(self.table, 1)
        self.body.addLayout(buttons)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.RichText)
        self.remaining = QProgressBar()
        self.remaining.setRange(0, 1000)
        self.remaining.setTextVisible(True)
        self.body.addWidget(self.status)
        self.body.addWidget(self.remaining)

    def _build_plots(self) -> None:
        self.bars = new_plot(
            "accountant", "total ε (upper bound)", "Total ε of released + planned, by accountant"
        )
        self.bars.scene().sigMouseMoved.connect(self._hover)
        self.profiles = new_plot("δ (log scale)", "ε", "Privacy profile ε(δ) of released + planned")
        self.profiles.getAxis("bottom").enableAutoSIPrefix(False)
        self.not_applicable = QLabel()
        self.not_applicable.setWordWrap(True)
        # compare mode (gui/compare.py): k releases of the current and the pinned mechanism
        self.releases = new_plot("releases k (log scale)", "total ε (log scale)", "Total ε of k releases")
        self.releases.getAxis("bottom").enableAutoSIPrefix(False)
        legend = self.releases.getPlotItem().legend
        legend.setOffset((10, 10))  # top left: the curves rise to the right
        legend.setColumnCount(2)  # three rows: a short plot in teaching mode
        self.releases.hide()
        self.comparison_note = QLabel()
        self.comparison_note.setWordWrap(True)
        self.comparison_note.setTextFormat(Qt.TextFormat.RichText)
        self.comparison_note.hide()
        self.comparison: RepeatsResult | None = None
        self.comparison_curves: dict[str, pg.PlotDataItem] = {}
        self.explanation.installEventFilter(self)  # teaching mode hides it: see _arrange
        row = QHBoxLayout()
        row.addWidget(self.bars, 1)
        row.addWidget(self.profiles, 1)
        row.addWidget(self.releases, 1)
        self.body.addLayout(row, 3)
        self.body.addWidget(self.comparison_note)
        self.body.addWidget(self.not_applicable)

    # ------------------------------------------------------------------ state
    @property
    def plan(self) -> tuple[PlannedMeasurement, ...]:
        return self._plan

    def set_plan(self, plan: Sequence[PlannedMeasurement]) -> None:
        """Replace the plan (e.g. from a saved session) and ask for a redraw."""
        self._plan = tuple(plan)
        self._changed()

    def add_measurement(self, item: PlannedMeasurement) -> None:
        """Append ``item`` to the plan and ask for a redraw."""
        self.set_plan((*self._plan, item))

    def remove_measurement(self, index: int) -> None:
        """Remove the plan's ``index``-th statistic (0 = first planned, released rows excluded)."""
        self.set_plan(self._plan[:index] + self._plan[index + 1 :])

    def set_released(self, released: Sequence[ReleasedMeasurement]) -> None:
        self._released = tuple(released)
        self._changed()

    def set_budget(self, epsilon: float, delta: float, ledger_method: str | None = None) -> None:
        """The budget to plan against; ``ledger_method`` when it is the ledger's budget."""
        self._ledger_method = ledger_method
        self._show_source()
        widgets = (self.budget_epsilon, self.share_method)
        for widget in widgets:
            widget.blockSignals(True)
        self.budget_epsilon.setValue(epsilon)
        if ledger_method in METHODS:  # share under the accountant the ledger charges with
            self.share_method.setCurrentIndex(self.share_method.findData(ledger_method))
        for widget in widgets:
            widget.blockSignals(False)
        self.budget_delta.setText(f"{delta:g}")
        self._changed()

    def set_sampling_rate(self, rate: float | None) -> None:
        """The steward's claim that the file is a secret Poisson sample of ``rate`` (None: none);
        the planned statistics are then composed as the release would charge them."""
        self._sampling_rate = rate
        self._show_source()
        self._changed()

    def set_identity_note(self, note: str | None) -> None:
        """Say (``note``) that the ledger is not read yet because the dataset's identity, its key
        there, is being computed or failed; None once it is known (the window then loads it)."""
        self._identity_note = note
        self._show_source()

    def _show_source(self) -> None:
        if self._identity_note is not None:
            self.budget_source.setText(
                f"<span style='color:{palette.css(ORANGE)}'>{self._identity_note}</span>"
            )
            return
        method = self._ledger_method
        text = (
            f"budget: from the ledger ({METHOD_NAMES.get(method, method)} composition)"
            if method
            else "budget: for planning (none set in the ledger)"
        )
        if self._sampling_rate is not None:
            text += (
                f"; the file is declared a secret sample (q = {self._sampling_rate:g}, Data tab): "
                "planned statistics count at their amplified ε"
            )
        self.budget_source.setText(text)

    def load_ledger(self, ledger: object, fingerprint: str) -> None:
        """Read the dataset's budget and released measurements from a ``release.ledger.Ledger``."""
        budget = ledger.budget(fingerprint)  # type: ignore[attr-defined]
        self._released = released_from_ledger(ledger, fingerprint)
        if budget is not None:
            self.set_budget(budget.epsilon, budget.delta, budget.method)
        else:
            self.set_budget(self.budget_epsilon.value(), self._delta() or 0.0, None)

    def _delta(self) -> float | None:
        try:
            value = float(self.budget_delta.text())
        except ValueError:
            return None
        return value if 0 <= value < 1 else None

    def request(self) -> BudgetRequest | None:
        """The request for the current state (None while the δ typed is not valid)."""
        delta = self._delta()
        if delta is None:
            return None
        return BudgetRequest(
            plan=self._plan,
            released=self._released,
            budget_epsilon=self.budget_epsilon.value(),
            budget_delta=delta,
            share_method=self.share_method.currentData() if self.share.isChecked() else None,
            ledger_method=self._ledger_method,
            sampling_rate=self._sampling_rate,
        )

    def _changed(self) -> None:
        request = self.request()
        if request is None:
            self.status.setText(
                f"<span style='color:{palette.css(RED)}'>The budget δ must be a number in [0, 1), "
                "e.g. 1e-6 (or 0 for a pure-ε budget).</span>"
            )
            return
        self._request = request
        self._fill_table_from_plan()
        self.plan_changed.emit(self._plan)
        self.job_requested.emit(request)

    # ------------------------------------------------------------------ table editing
    def _fill_table_from_plan(self) -> None:
        """Show the plan at once (epsilons as typed) until the job's result arrives."""
        rows = [
            Row(r.label, r.mechanism, math.nan, math.nan, True, True, note="released") for r in self._released
        ]
        for item in self._plan:
            eps = item.params.get("epsilon", math.nan)
            rows.append(
                Row(item.label, item.mechanism, eps, math.nan, item.held, False, target=item.target, note="…")
            )
        self._fill_table(rows)

    def _fill_table(self, rows: Sequence[Row]) -> None:
        self._filling = True
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            self._fill_row(r, row)
        self._filling = False

    def _fill_row(self, r: int, row: Row) -> None:
        planned = not row.released
        target = row.target
        cells = (
            _item(row.label, tooltip=row.label),
            _item(row.mechanism),
            _item(
                _number(row.epsilon), editable=planned and target is None, tooltip="Double-click to type ε"
            ),
            _item("" if math.isnan(row.delta) else _number(row.delta)),
            _item("" if math.isnan(row.charged) else _number(row.charged), tooltip=_CHARGED_TIP),
            _item("released" if row.released else ""),
            _item(f"{target.halfwidth:.4g}" if target else "", editable=planned, tooltip=_TARGET_TIP),
            _item(f"{target.ci_level:.0%}" if target else "", editable=planned, tooltip=_LEVEL_TIP),
            _item(row.note, tooltip=row.note),
        )
        for c, cell in enumerate(cells):
            if row.released:
                cell.setForeground(QBrush(QColor(*GREY)))
            self.table.setItem(r, c, cell)
        if planned:
            hold = self.table.item(r, HOLD_COLUMN)
            assert hold is not None  # set just above
            hold.setFlags(hold.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            hold.setCheckState(Qt.CheckState.Checked if row.held else Qt.CheckState.Unchecked)

    def _plan_index(self, table_row: int) -> int | None:
        index = table_row - len(self._released)
        return index if 0 <= index < len(self._plan) else None

    def _item_changed(self, cell: QTableWidgetItem) -> None:
        if self._filling:
            return
        index = self._plan_index(cell.row())
        if index is None:
            return
        item = self._plan[index]
        try:
            updated = self._edited(item, cell)
        except ValueError:
            self.status.setText(f"<span style='color:{palette.css(RED)}'>{_EDIT_HINT}</span>")
            self._fill_table_from_plan()
            return
        self.set_plan((*self._plan[:index], updated, *self._plan[index + 1 :]))

    def _edited(self, item: PlannedMeasurement, cell: QTableWidgetItem) -> PlannedMeasurement:
        column, text = cell.column(), cell.text().strip().rstrip("%")
        if column == HOLD_COLUMN:
            return replace(item, held=cell.checkState() == Qt.CheckState.Checked)
        if column == EPSILON_COLUMN:
            value = float(text)
            if not value > 0:
                raise ValueError(text)
            return replace(item, params={**item.params, "epsilon": value})
        if column == TARGET_COLUMN:
            if not text:
                return replace(item, target=None)
            level = item.target.ci_level if item.target else 0.95
            return replace(item, target=ErrorTarget(_positive(text), level))
        if column == LEVEL_COLUMN:
            level = float(text) / 100 if float(text) > 1 else float(text)
            if not 0 < level < 1 or item.target is None:
                raise ValueError(text)
            return replace(item, target=ErrorTarget(item.target.halfwidth, level))
        return item

    def _remove_selected(self) -> None:
        chosen = {self._plan_index(i.row()) for i in self.table.selectionModel().selectedRows()}
        chosen.discard(None)
        if chosen:
            self.set_plan(tuple(item for i, item in enumerate(self._plan) if i not in chosen))

    # ------------------------------------------------------------------ drawing
    def show_error(self, message: str) -> None:
        """The job failed (e.g. a parameter out of range): say so where the totals would be."""
        self.status.setText(
            f"<span style='color:{palette.css(RED)}'><b>Cannot compute the totals:</b> {message}</span>"
        )

    def show_result(self, result: BudgetResult) -> None:
        """Draw ``result`` (ignored if the plan changed since it was asked for)."""
        if self._request is not None and result.request is not self._request:
            return
        self.result = result
        self._plan = result.plan
        self._fill_table(result.rows)
        report = result.report
        self._draw_status(result)
        self._draw_remaining(report)
        self._draw_bars(report)
        self._draw_profiles(result)
        self.columns = {**self._csv(result), **_comparison_columns(self.comparison)}
        self.plan_changed.emit(self._plan)
        self.plan_total_changed.emit(result.guarantees, report.budget_delta)

    def _draw_status(self, result: BudgetResult) -> None:
        report = result.report
        colour = GREEN if report.fits else RED
        text = f"<span style='color:{palette.css(colour)}'><b>{report.message}</b></span>"
        ledger = result.request.ledger_method
        if ledger and report.best != ledger:
            row = report.get(ledger)
            spent = "does not apply" if row.total is None else f"gives ε = {row.total:.4g}"
            text += (
                f" Note: the ledger charges under <b>{METHOD_NAMES[ledger]}</b> composition, which "
                f"{spent}; a release is refused when that exceeds the budget."
            )
        for note in result.notes:
            text += f"<br><span style='color:{palette.css(RED)}'>{note}</span>"
        self.status.setText(text)

    def _draw_remaining(self, report: BudgetReport) -> None:
        if report.best is None or report.remaining is None:
            self.remaining.setValue(0)
            self.remaining.setFormat("no accountant applies: nothing can be said about what is left")
            return
        used = report.budget_epsilon - report.remaining
        fraction = used / report.budget_epsilon
        self.remaining.setValue(round(min(fraction, 1.0) * 1000))
        left = max(report.remaining, 0.0)
        over = f", OVER BUDGET by ε = {-report.remaining:.4g}" if report.remaining < 0 else ""
        self.remaining.setFormat(
            f"used ε = {used:.4g} of {report.budget_epsilon:g} ({fraction:.0%}, "
            f"{METHOD_NAMES[report.best]}); left: ε = {left:.4g}{over}"
        )
        colour = palette.css(GREEN if report.fits else RED)
        self.remaining.setStyleSheet(f"QProgressBar::chunk {{ background-color: {colour}; }}")

    def _draw_bars(self, report: BudgetReport) -> None:
        self.bars.clear()
        x = np.arange(len(report.methods), dtype=float)
        released = np.array([r.released if r.total is not None else 0.0 for r in report.methods])
        total = np.array([r.total if r.total is not None else 0.0 for r in report.methods])
        self.bars.addItem(pg.BarGraphItem(x=x, height=released, width=0.6, brush=palette.brush(GREY, 200)))
        brushes = [palette.brush(GREEN if r.fits else RED, 170) for r in report.methods]
        self.bars.addItem(
            pg.BarGraphItem(x=x, y0=released, height=total - released, width=0.6, brushes=brushes)
        )
        top = max(float(np.max(total, initial=0.0)), report.budget_epsilon)
        for i, row in enumerate(report.methods):
            label = "not\napplicable" if row.total is None else _total(row.total)
            text = pg.TextItem(
                label,
                color=palette.colour(GREY if row.total is None else palette.PLOT_FOREGROUND),
                anchor=(0.5, 1),
            )
            text.setPos(float(i), (row.total or 0.0) + 0.02 * top)
            self.bars.addItem(text)
        self.bars.addItem(
            dashed_line(
                RED,
                f"budget ε = {report.budget_epsilon:g}",
                0.5,
                pos=report.budget_epsilon,
                angle=0,
                width=2,
                fill=palette.brush(palette.PLOT_BACKGROUND, 220),
            )
        )
        self.bars.getAxis("bottom").setTicks(  # two lines: six names side by side overlapped
            [[(float(i), METHOD_NAMES[r.method].replace(" ", "\n", 1)) for i, r in enumerate(report.methods)]]
        )
        if not report.methods or not np.any(total > 0):
            empty = pg.TextItem(
                "Nothing released or planned yet:\nAdd current statistic to see the totals.",
                color=palette.colour(GREY),
                anchor=(0.5, 0.5),
            )
            empty.setPos((len(report.methods) - 1) / 2, top * 0.6)
            self.bars.addItem(empty)
        self.bars.setYRange(0, top * 1.2, padding=0)
        self.bars.setXRange(-0.6, len(report.methods) - 0.4, padding=0)
        self._reasons = [f"{METHOD_NAMES[r.method]}: {r.reason}" for r in report.methods]
        missing = [f"<b>{METHOD_NAMES[r.method]}</b>: {r.reason}" for r in report.methods if r.total is None]
        self.not_applicable.setText(
            ("Not applicable — " + "; ".join(missing) + ". " if missing else "")
            + "Grey bars: already released; green / red on top: with the plan, within / over the "
            "budget (dashed red line). Hover over a bar for how its number was obtained."
        )

    def tooltip_at(self, x: float) -> str:
        """The reason shown when hovering over the bar nearest ``x`` (plot coordinates)."""
        index = round(x)
        return self._reasons[index] if 0 <= index < len(self._reasons) else ""

    def _hover(self, position: object) -> None:
        point = self.bars.plotItem.vb.mapSceneToView(position)
        self.bars.setToolTip(self.tooltip_at(point.x()))

    def _draw_profiles(self, result: BudgetResult) -> None:
        plot = self.profiles
        plot.clear()
        plot.setLogMode(x=True, y=False)
        for i, method in enumerate(METHODS):
            if method not in result.profiles:
                continue
            deltas, eps = (np.asarray(a, dtype=float) for a in result.profiles[method])
            if np.any(np.isfinite(eps)):
                style = Qt.PenStyle.DashLine if method == "advanced" else Qt.PenStyle.SolidLine
                pen = palette.pen(PALETTE[i % len(PALETTE)], width=2, style=style)
                plot.plot(deltas, eps, pen=pen, connect="finite", name=METHOD_NAMES[method])
        report = result.report
        # from 3% of the line rightwards, above it, clear of the legend: centred at 90% it ran
        # past the plot's edge in teaching mode's font
        plot.addItem(dashed_line(RED, "budget ε", 0.03, pos=report.budget_epsilon, angle=0, anchor=(0, 1)))
        if report.budget_delta > 0:
            plot.plot(
                [report.budget_delta],
                [report.budget_epsilon],
                pen=None,
                symbol="star",
                symbolSize=14,
                symbolBrush=palette.brush(RED),
                name="the budget (ε, δ)",
            )

    # ------------------------------------------------------------------ compare mode
    def show_comparison(self, result: RepeatsResult | None) -> None:
        """Draw ε of k releases of the current and the pinned mechanism under each of
        :data:`COMPARE_METHODS` with the budget ε, in place of the privacy profiles, and say up
        to which k each fits. Colour: the accountant (as in the profiles); solid: current,
        dashed: pinned. The legend names the accountants once and the two mechanisms by their
        line style; every curve keeps its full name (``item.name()``). None: back to the profiles."""
        self.comparison = result
        base = self._csv(self.result) if self.result is not None else {}
        self.columns = {**base, **_comparison_columns(result)}  # Save plot… > CSV: what is drawn
        plot = self.releases.getPlotItem()
        plot.clear()
        self.comparison_curves = {}
        if result is None:
            self.comparison_note.hide()
            self._arrange()
            return
        request = result.request
        plot.setLogMode(x=True, y=True)
        ks = np.asarray(result.repeats, dtype=float)
        drawn: list[np.ndarray] = []
        missing: list[str] = []
        for prefix, side, totals, style in (
            ("", request.current, result.current, Qt.PenStyle.SolidLine),
            ("pinned ", request.pinned, result.pinned, Qt.PenStyle.DashLine),
        ):
            sample = pg.PlotDataItem([], [], pen=palette.pen(palette.PLOT_FOREGROUND, 2, style))
            plot.addItem(sample)
            plot.legend.addItem(sample, f"{prefix}{side.short} ({'dashed' if prefix else 'solid'})")
            for method in COMPARE_METHODS:
                values = np.asarray(totals[method], dtype=float)
                finite = np.isfinite(values)
                name = f"{prefix}{side.short}, {METHOD_NAMES[method]}"
                if np.count_nonzero(finite) < 2:  # a point or nothing: said, not drawn
                    missing.append(f"{name}: {_not_drawn(values)}")
                    continue
                colour = PALETTE[METHODS.index(method) % len(PALETTE)]
                item = pg.PlotDataItem(
                    ks, values, pen=palette.pen(colour, width=2, style=style), connect="finite"
                )
                plot.addItem(item)
                item.opts["name"] = name  # after addItem: the legend names accountants and styles once
                self.comparison_curves[name] = item
                drawn.append(values[finite])
        for method in COMPARE_METHODS:
            colour = PALETTE[METHODS.index(method) % len(PALETTE)]
            sample = pg.PlotDataItem([], [], pen=palette.pen(colour, width=2))
            plot.addItem(sample)
            plot.legend.addItem(sample, METHOD_NAMES[method])
        budget = request.budget_epsilon
        plot.addItem(
            dashed_line(RED, f"budget ε = {budget:g}", 0.97, pos=math.log10(budget), angle=0, anchor=(1, 1))
        )
        if drawn:
            values = np.concatenate(drawn)
            low = math.log10(max(min(float(np.min(values)), budget), 1e-12))
            high = math.log10(max(float(np.max(values)), budget))
            # room above the curves for the legend (top left): they rise to the right
            plot.setYRange(low, high + LEGEND_ROOM * max(high - low, 1.0), padding=0.05)
        plot.setXRange(0.0, math.log10(float(ks[-1])), padding=0.02)
        plot.getAxis("bottom").setTicks(log_ticks([ks]))  # powers of ten (pyqtgraph labels 2..9 too)
        plot.getAxis("left").setTicks(log_ticks([*drawn, [budget]]))
        note = _fits_text(result)
        if missing:
            note += " Not drawn: " + "; ".join(missing) + "."
        self.comparison_note.setText(note)
        self.comparison_note.setToolTip(
            "Each release is priced as the ledger would charge it (the exact release path's own "
            "guarantee, e.g. a discrete Gaussian's zCDP); every total is an upper bound."
        )
        self.comparison_note.show()
        self._arrange()

    def _arrange(self) -> None:
        """While comparing, the k-releases plot takes the profiles' place, the bars' key is hidden
        (their tooltips stay) and the table shrinks to half its height; in teaching mode the bars
        make way too (the status line and the bar of what is left still give the plan's total),
        so the comparison reads on a 1280 x 720 projector."""
        comparing = self.comparison is not None
        self.releases.setVisible(comparing)
        self.profiles.setVisible(not comparing)
        self.bars.setVisible(not comparing or View.explanations_shown)
        self.not_applicable.setVisible(not comparing)
        self.table.setMinimumHeight(TABLE_HEIGHT // 2 if comparing else TABLE_HEIGHT)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Teaching mode shows or hides the explanation: arrange the comparison for it."""
        if watched is self.explanation and event.type() in (
            QEvent.Type.ShowToParent,
            QEvent.Type.HideToParent,
        ):
            self._arrange()
        return super().eventFilter(watched, event)

    def comparison_failed(self, message: str) -> None:
        """The comparison could not be composed (or the pinned mechanism does not apply):
        clear its curves and say why under the plots."""
        self.show_comparison(None)
        self.comparison_note.setText(f"<span style='color:{palette.css(RED)}'>{message}</span>")
        self.comparison_note.show()

    def _csv(self, result: BudgetResult) -> dict[str, Column]:
        report = result.report
        columns: dict[str, Column] = {
            "accountant": [r.method for r in report.methods],
            "released_epsilon": [r.released for r in report.methods],
            "total_epsilon": [r.total for r in report.methods],
            "fits_budget": [r.fits for r in report.methods],
            "reason": [r.reason for r in report.methods],
        }
        for method, (deltas, eps) in result.profiles.items():
            columns[f"profile_{method}_delta"] = list(np.asarray(deltas, dtype=float))
            columns[f"profile_{method}_epsilon"] = list(np.asarray(eps, dtype=float))
        return columns


def _within(totals: dict[str, np.ndarray], repeats: Sequence[int], budget: float) -> tuple[int, str] | None:
    """The largest k drawn whose total fits ``budget`` under the accountant that allows most,
    with that accountant's name (None when not even one release fits)."""
    best: tuple[int, str] | None = None
    for method in COMPARE_METHODS:
        values = np.asarray(totals[method], dtype=float)
        fitting = [k for k, v in zip(repeats, values, strict=True) if np.isfinite(v) and v <= budget]
        if fitting and (best is None or max(fitting) > best[0]):
            best = (max(fitting), METHOD_NAMES[method])
    return best


def _comparison_columns(result: RepeatsResult | None) -> dict[str, Column]:
    """The comparison's curves for the CSV export: k, then ε per side and accountant (NaN where
    the accountant does not apply); nothing when no mechanism is pinned."""
    if result is None:
        return {}
    columns: dict[str, Column] = {"compare_releases_k": list(result.repeats)}
    for side, totals in (("current", result.current), ("pinned", result.pinned)):
        for method in COMPARE_METHODS:
            columns[f"compare_{side}_{method}_epsilon"] = list(np.asarray(totals[method], dtype=float))
    columns["compare_mechanisms"] = [result.request.current.label, result.request.pinned.label]
    return columns


def _not_drawn(values: np.ndarray) -> str:
    """Why a curve of k releases is not drawn: no accountant value, or only k = 1's."""
    return "does not apply" if not np.any(np.isfinite(values)) else "only at k = 1"


def _fits_text(result: RepeatsResult) -> str:
    """How many releases of each side fit the budget, e.g. "Gaussian: none; pinned Laplace: up
    to k = 1 (basic)"."""
    request = result.request
    parts = []
    for prefix, side, totals in (
        ("", request.current, result.current),
        ("pinned ", request.pinned, result.pinned),
    ):
        within = _within(totals, result.repeats, request.budget_epsilon)
        if within is None:
            parts.append(f"{prefix}{side.label}: none")
        else:
            k, name = within
            more = " or more" if k == result.repeats[-1] else ""
            parts.append(f"{prefix}{side.label}: up to k = {k}{more} ({name})")
    return (
        f"<b>Releases within the budget ε = {request.budget_epsilon:g}, δ = {request.budget_delta:g}</b> "
        f"(of the k drawn): {'; '.join(parts)}."
    )


def _positive(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(text)
    return value


_TARGET_TIP = (
    "Accuracy first: type the error you can accept (half-width of the confidence interval, in the "
    "statistic's units) and ε is solved for it. Clear the cell to set ε yourself."
)
_LEVEL_TIP = "Confidence level of the target error (95% when left empty)."
_CHARGED_TIP = (
    "The ε the ledger is charged when this statistic is released, at the budget's δ under the "
    "ledger's accountant: the exact release path's own guarantee (e.g. a discrete Gaussian's "
    "zCDP), which can differ a little from the mechanism's ε. The totals use it."
)
_EDIT_HINT = "Type a positive number (ε, target error) or a level between 0 and 100%."
