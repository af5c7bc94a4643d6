"""The budget view: the released and planned measurements of this dataset, their totals under
every accountant side by side against the steward's budget, the budget left, and the privacy
profiles epsilon(delta) of everything released and planned.

The view holds the plan (immutable :class:`PlannedMeasurement` values). Every change (a
statistic added or removed, a hold, an epsilon or a target error typed, the budget, sharing)
emits :attr:`BudgetView.job_requested` with a :class:`BudgetRequest`; the window runs
:func:`budget_job` on it through the compute service and hands the result to
:meth:`BudgetView.show_result`, which only draws. The requests, results and jobs are in
:mod:`budget_jobs`; compare mode's plot is in :mod:`budget_compare`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTableWidgetItem,
    QWidget,
)

from dpexplorer.core import planning
from dpexplorer.core.accounting.compose import METHODS
from dpexplorer.core.figures import left_of, privacy_number, privacy_up
from dpexplorer.core.planning import (
    BudgetReport,
    PlannedMeasurement,
    ReleasedMeasurement,
)
from dpexplorer.gui import palette
from dpexplorer.gui.plot_export import Column
from dpexplorer.gui.views.base import (
    GREEN,
    GREY,
    ORANGE,
    RED,
    View,
    dashed_line,
    new_plot,
)
from dpexplorer.gui.views.budget_compare import (
    COMPARISON_TIP,
    comparison_columns,
    draw_comparison,
    method_colour,
)
from dpexplorer.gui.views.budget_jobs import (
    BudgetRequest,
    BudgetResult,
    RepeatsResult,
    released_from_ledger,
)
from dpexplorer.gui.views.budget_table import (
    EDIT_HINT,
    TABLE_HEIGHT,
    PlanTable,
    edited_measurement,
    provisional_rows,
)

METHOD_NAMES = planning.METHOD_LABELS


# ------------------------------------------------------------------ the widget
def _total(value: float) -> str:
    """A composed total on a bar: an upper bound, to three digits rounded up
    (:func:`~dpexplorer.core.figures.privacy_up`: 2.9991 of a budget of 3 reads 3)."""
    return privacy_up(value)


class BudgetView(View):
    """Draws a :class:`BudgetResult`; holds the plan and asks for a new result when it changes."""

    add_requested = Signal()
    """"Add current statistic" was clicked: answer with :meth:`add_measurement`."""
    audit_requested = Signal()
    """"Audit this plan…" was clicked: the window opens the replay audit of the plan."""
    job_requested = Signal(object)
    """A :class:`BudgetRequest` to run :func:`budget_job` on (through the compute service)."""
    plan_changed = Signal(object)
    """The plan (a tuple of PlannedMeasurement) after every change, e.g. for sessions."""
    plan_total_changed = Signal(object, float)
    """The guarantees of everything released and planned, and the budget's delta (risk view)."""
    released_changed = Signal(object)
    """The guarantees of everything the ledger holds for the dataset (risk view), when read."""

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
        self.table = PlanTable()
        self.table.edited.connect(self._item_changed)
        self.add_button = QPushButton("Add current statistic")
        self.add_button.setToolTip("Add the query and mechanism you are exploring to the plan.")
        self.add_button.clicked.connect(self.add_requested.emit)
        self.remove_button = QPushButton("Remove selected")
        self.remove_button.setToolTip("Remove the selected planned statistics (released ones stay).")
        self.remove_button.clicked.connect(self._remove_selected)
        self.audit_button = QPushButton("Audit this plan…")
        self.audit_button.setToolTip(
            "Replay the plan on the data and on neighbouring datasets with the same random bits, "
            "and check that nothing published but the noisy values depends on the data. Nothing is "
            "charged."
        )
        self.audit_button.clicked.connect(self.audit_requested.emit)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        buttons.addWidget(self.audit_button)
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
        self.released_changed.emit(tuple(item.guarantee for item in self._released))
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
        self.budget_delta.setText(privacy_number(delta))
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
        if note is not None and self._released:  # another dataset's releases: not this one's
            self.set_released(())

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
        self.released_changed.emit(tuple(item.guarantee for item in self._released))
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
        self.table.fill(provisional_rows(self._released, self._plan))

    def _plan_index(self, table_row: int) -> int | None:
        index = table_row - len(self._released)
        return index if 0 <= index < len(self._plan) else None

    def _item_changed(self, cell: QTableWidgetItem) -> None:
        index = self._plan_index(cell.row())
        if index is None:
            return
        item = self._plan[index]
        try:
            updated = edited_measurement(item, cell)
        except ValueError:
            self.status.setText(f"<span style='color:{palette.css(RED)}'>{EDIT_HINT}</span>")
            self._fill_table_from_plan()
            return
        self.set_plan((*self._plan[:index], updated, *self._plan[index + 1 :]))

    def _remove_selected(self) -> None:
        chosen = {self._plan_index(row) for row in self.table.selected_rows()}
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
        self.table.fill(result.rows)
        report = result.report
        self._draw_status(result)
        self._draw_remaining(report)
        self._draw_bars(report)
        self._draw_profiles(result)
        self.columns = {**self._csv(result), **comparison_columns(self.comparison)}
        self.plan_changed.emit(self._plan)
        self.plan_total_changed.emit(result.guarantees, report.budget_delta)

    def _draw_status(self, result: BudgetResult) -> None:
        report = result.report
        colour = GREEN if report.fits else RED
        text = f"<span style='color:{palette.css(colour)}'><b>{report.message}</b></span>"
        ledger = result.request.ledger_method
        if ledger and report.best != ledger:
            row = report.get(ledger)
            spent = "does not apply" if row.total is None else f"gives ε = {privacy_up(row.total)}"
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
        over = f", OVER BUDGET by ε = {privacy_up(-report.remaining)}" if report.remaining < 0 else ""
        self.remaining.setFormat(  # used rounded up, and what is left is the budget less that
            f"used ε = {privacy_up(used)} of {privacy_number(report.budget_epsilon)} ({fraction:.0%}, "
            f"{METHOD_NAMES[report.best]}); left: ε = {left_of(report.budget_epsilon, used)}{over}"
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
                f"budget ε = {privacy_number(report.budget_epsilon)}",
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
        for method in METHODS:
            if method not in result.profiles:
                continue
            deltas, eps = (np.asarray(a, dtype=float) for a in result.profiles[method])
            if np.any(np.isfinite(eps)):
                style = Qt.PenStyle.DashLine if method == "advanced" else Qt.PenStyle.SolidLine
                pen = palette.pen(method_colour(method), width=2, style=style)
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
        self.columns = {**base, **comparison_columns(result)}  # Save plot… > CSV: what is drawn
        plot = self.releases.getPlotItem()
        plot.clear()
        self.comparison_curves = {}
        if result is None:
            self.comparison_note.hide()
            self._arrange()
            return
        self.comparison_curves, note = draw_comparison(plot, result)
        self.comparison_note.setText(note)
        self.comparison_note.setToolTip(COMPARISON_TIP)
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
