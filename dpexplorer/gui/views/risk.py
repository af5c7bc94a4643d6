"""The risk view: what the guarantees mean for an attacker who tests whether one person (say
Alice) is in the data.

Left: the hypothesis-testing region, with the curve of everything the ledger holds for the
open dataset (its releases composed as one privacy-loss distribution,
:mod:`dpexplorer.core.tradeoff`). Any test has a type I error alpha (says "Alice is in" when
she is not) and a type II error beta (misses her); differential privacy forces beta above the
trade-off curve, so the closer the curve is to the diagonal beta = 1 - alpha (random
guessing), the less any attacker can learn. Right: the bound on the attacker's belief after
the releases against the belief before. Below: the dataset's total among published deployments
(:mod:`dpexplorer.release.deployments`). Every number comes from :mod:`dpexplorer.core.risk` and
:mod:`dpexplorer.core.tradeoff`; :func:`risk_job` computes them and :meth:`RiskView.show_result`
only draws."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlparse

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from dpexplorer.core import planning, risk, tradeoff
from dpexplorer.core.accounting.guarantees import Guarantee
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.figures import privacy_number
from dpexplorer.core.planning import PlannedMeasurement
from dpexplorer.gui import palette
from dpexplorer.gui.plot_export import Column
from dpexplorer.gui.views.base import BLUE, GREEN, GREY, ORANGE, View, legend_below, new_plot
from dpexplorer.release.deployments import ContextRow, caveat, epsilon_text, in_context

ALPHAS = np.linspace(0.0, 1.0, 201)
PRIORS = np.linspace(0.001, 0.999, 199)
RELEASED_ALPHAS = np.union1d(ALPHAS, tradeoff.FPR_GRID)
"""Where the curve of everything released is computed: the plot's grid and the reading grid
near 0 (the sentence reads it at a false-positive rate of 0.1% and 1%)."""
READ_AT = (0.001, 0.01)
CONTEXT_ROWS = 4.5
"""Rows of the deployments table shown without scrolling (the half row says there are more);
it is scrolled to this dataset's rows."""
CONTEXT_NOTE = (
    "Units differ (a person, a user-day, a device-day), and a local-DP ε bounds one user's own "
    "report, not a release from everyone's data: the rows are not comparable one to one."
)


@dataclass(frozen=True, eq=False)
class RiskRequest:
    """The current statistic (None if there is none), the guarantees of everything released and
    planned with the delta to read their total at, and the attacker's prior (0 < prior < 1)."""

    current: PlannedMeasurement | None
    plan: tuple[Guarantee, ...]
    plan_delta: float
    prior: float
    released: tuple[Guarantee, ...] = ()
    """What the ledger holds for the open dataset (nothing planned)."""


@dataclass(frozen=True, eq=False)
class RiskCurves:
    """One guarantee's risk: its (epsilon, delta), the trade-off curve of that pair (exact for
    the pair) and of its tight profile (lower bounds on beta), and the posterior bound (an upper
    bound) at the prior and along ``PRIORS``. ``note`` says why a part is missing."""

    name: str
    epsilon: float
    delta: float
    beta_pair: np.ndarray
    beta_profile: np.ndarray | None
    posterior: float
    posteriors: np.ndarray
    note: str = ""


@dataclass(frozen=True, eq=False)
class ReleasedRisk:
    """Everything the ledger holds for the open dataset: its trade-off curve at ``ALPHAS``
    (exact or a lower bound, with its mu-GDP summary: a TradeOff) and its total epsilon at the
    budget's delta under the tightest accountant (an upper bound; None when none applies)."""

    tradeoff: tradeoff.TradeOff
    releases: int
    epsilon: float | None


@dataclass(frozen=True, eq=False)
class RiskResult:
    request: RiskRequest
    alphas: np.ndarray
    priors: np.ndarray
    current: RiskCurves | None
    plan: RiskCurves | None
    notes: tuple[str, ...] = ()
    released: ReleasedRisk | None = None
    context: tuple[ContextRow, ...] = ()
    """The published deployments with this dataset's totals among them (sorted by epsilon)."""


def _curves(
    name: str, guarantees: Sequence[Guarantee], epsilon: float, delta: float, prior: float
) -> RiskCurves:
    note = ""
    try:
        profile: np.ndarray | None = risk.tradeoff_curve_profile(list(guarantees), ALPHAS)
    except DPExplorerError as exc:
        profile, note = None, str(exc)
    return RiskCurves(
        name=name,
        epsilon=epsilon,
        delta=delta,
        beta_pair=risk.tradeoff_curve_epsilon_delta(epsilon, delta, ALPHAS),
        beta_profile=profile,
        posterior=risk.posterior_bound(epsilon, delta, prior),
        posteriors=np.array([risk.posterior_bound(epsilon, delta, float(p)) for p in PRIORS]),
        note=note,
    )


def _current(item: PlannedMeasurement, prior: float) -> RiskCurves:
    epsilon, delta = planning.claimed_epsilon_delta(item)
    guarantee = planning.plan_guarantees([item])
    return _curves("this release", guarantee, epsilon, delta, prior)


def _plan(guarantees: Sequence[Guarantee], delta: float, prior: float) -> RiskCurves:
    """The total at ``delta`` under the tightest applicable accountant (an upper bound)."""
    _, epsilon = planning.best_total(guarantees, delta)
    return _curves("released + planned", guarantees, epsilon, delta, prior)


@functools.lru_cache(maxsize=8)
def _released_curve(guarantees: tuple[Guarantee, ...]) -> tradeoff.TradeOff:
    """Cached: the prior and the plan change far more often than what the ledger holds."""
    return tradeoff.tradeoff_of(list(guarantees), RELEASED_ALPHAS)


def _released(guarantees: tuple[Guarantee, ...], delta: float) -> ReleasedRisk:
    curve = _released_curve(guarantees)
    try:
        epsilon: float | None = planning.best_total(guarantees, delta)[1]
    except DPExplorerError:
        epsilon = None
    return ReleasedRisk(curve, len(guarantees), epsilon)


def _context(released: ReleasedRisk | None, plan: RiskCurves | None, delta: float) -> tuple[ContextRow, ...]:
    own = []
    if released is not None and released.epsilon is not None:
        own.append(("this dataset: everything released", released.epsilon, delta))
    if plan is not None and (released is None or plan.epsilon != released.epsilon):
        own.append(("this dataset: released + planned", plan.epsilon, plan.delta))
    return in_context(own, "as declared for this dataset")


def risk_job(request: RiskRequest) -> RiskResult:
    """Every number the risk view shows, from :mod:`dpexplorer.core.risk` and
    :mod:`dpexplorer.core.tradeoff`. A part that cannot be computed (no accountant applies to the
    plan, a budget delta of 0 with Gaussian noise) is left out with a note instead of failing
    the whole view."""
    notes: list[str] = []
    current = plan = released = None
    if request.current is not None:
        try:
            current = _current(request.current, request.prior)
        except DPExplorerError as exc:
            notes.append(f"This release: {exc}")
    if request.plan:
        try:
            plan = _plan(request.plan, request.plan_delta, request.prior)
        except DPExplorerError as exc:
            notes.append(f"The plan's total: {exc}")
    if request.released:
        try:
            released = _released(request.released, request.plan_delta)
        except DPExplorerError as exc:
            notes.append(f"Everything released: {exc}")
    context = _context(released, plan, request.plan_delta)
    return RiskResult(request, ALPHAS, PRIORS, current, plan, tuple(notes), released, context)


def plain_sentence(curves: RiskCurves, prior: float) -> str:
    """The posterior bound in words, with its exception when delta > 0."""
    text = (
        f"An attacker who believed with {prior:.0%} that Alice is in the data can, after seeing "
        f"{_SEEING[curves.name]}, believe it with at most <b>{curves.posterior:.0%}</b>"
    )
    if curves.delta > 0:
        text += f" (except with probability at most {privacy_number(10 * curves.delta)}, i.e. 10δ)"
    return text + "."


def released_sentence(released: ReleasedRisk) -> str:
    """The curve of everything released in words: the attacker's error at low false-positive
    rates (a lower bound or exact, said) and the mu-GDP summary."""
    t = released.tradeoff
    exact = t.kind == tradeoff.EXACT
    readings = " and ".join(f"{t.fnr_at(a):.3f} at a {a * 100:g}% false-positive rate" for a in READ_AT)
    gdp = (
        f"; as one number, μ-GDP with μ {'=' if t.gdp_kind == tradeoff.GDP_EXACT else '≤'} {t.gdp_mu:.3g}"
        if t.gdp_mu is not None
        else ""
    )
    return (
        f"Everything released from this dataset ({released.releases} release(s) in the ledger): any "
        f"test for Alice misses her with probability {'' if exact else 'at least '}{readings} "
        f"({t.kind}){gdp}."
    )


_SEEING = {"this release": "this release", "released + planned": "everything released and planned"}


class RiskView(View):
    """Draws a :class:`RiskResult`. Set the inputs with :meth:`set_current` and
    :meth:`set_plan`; every change emits :attr:`job_requested` with a :class:`RiskRequest`."""

    job_requested = Signal(object)
    """A :class:`RiskRequest` to run :func:`risk_job` on (through the compute service)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Risk: what can an attacker learn about one person?", parent)
        self.explanation.setText(
            "An attacker sees the releases and tests whether one person, say Alice, is in the data. "
            "Any test either wrongly says she is in (type I error α) or misses her (type II error β). "
            "Differential privacy keeps every test above the curves: the closer a curve is to the "
            "grey diagonal (guessing at random), the less anyone can learn. Dashed: what the "
            "(ε, δ) pair of the total alone guarantees (looser); green: everything the ledger holds "
            "for this dataset."
        )
        self.prior = QDoubleSpinBox()
        self.prior.setRange(0.1, 99.9)
        self.prior.setDecimals(1)
        self.prior.setSuffix(" %")
        self.prior.setValue(10.0)
        self.prior.setToolTip("How sure the attacker is, before the releases, that Alice is in the data.")
        self.prior.valueChanged.connect(lambda _v: self._changed())
        row = QHBoxLayout()
        question = QLabel("Attacker's belief before the releases that Alice is in the data:")
        question.setWordWrap(True)
        row.addWidget(question, 1)
        row.addWidget(self.prior)
        self.body.addLayout(row)
        self.tradeoff = new_plot(
            "type I error α (false alarm)", "type II error β (missed)", "Hypothesis-testing region"
        )
        legend_below(self.tradeoff, columns=2)  # above the diagonal there is no room for six entries
        self.posterior_plot = new_plot(
            "belief before (prior)", "belief after, at most", "Attacker's belief about Alice"
        )
        self.posterior_plot.plotItem.legend.anchor((1, 1), (1, 1), offset=(-10, -10))
        plots = QHBoxLayout()
        plots.addWidget(self.tradeoff, 1)
        plots.addWidget(self.posterior_plot, 1)
        self.body.addLayout(plots, 1)
        self.sentence = QLabel()
        self.sentence.setWordWrap(True)
        self.sentence.setTextFormat(Qt.TextFormat.RichText)
        self.sentence.setStyleSheet("font-size: 14px;")
        self.body.addWidget(self.sentence)
        self.context_title = QLabel("<b>ε in context</b>: published deployments, and this dataset (bold)")
        self.body.addWidget(self.context_title)
        self.context = self._context_table()
        self.body.addWidget(self.context)
        self.context_note = QLabel(CONTEXT_NOTE)
        self.context_note.setToolTip(caveat())
        self.context_note.setWordWrap(True)
        self.context_note.setStyleSheet("color: grey;")
        self.body.addWidget(self.context_note)
        self._current: PlannedMeasurement | None = None
        self._released: tuple[Guarantee, ...] = ()
        self._plan: tuple[Guarantee, ...] = ()
        self._plan_delta = 1e-6
        self._request: RiskRequest | None = None
        self.result: RiskResult | None = None

    # ------------------------------------------------------------------ inputs
    def set_current(self, item: PlannedMeasurement | None) -> None:
        """The statistic being explored (its mechanism, parameters and query)."""
        self._current = item
        self._changed()

    def set_plan(self, guarantees: Sequence[Guarantee], delta: float) -> None:
        """The guarantees of everything released and planned, read at ``delta`` (the budget's);
        connect :attr:`BudgetView.plan_total_changed` here."""
        self._plan = tuple(guarantees)
        self._plan_delta = delta
        self._changed()

    def set_released(self, guarantees: Sequence[Guarantee]) -> None:
        """The guarantees of everything the ledger holds for the open dataset; connect
        :attr:`BudgetView.released_changed` here."""
        self._released = tuple(guarantees)
        self._changed()

    def request(self) -> RiskRequest:
        prior = self.prior.value() / 100
        return RiskRequest(self._current, self._plan, self._plan_delta, prior, self._released)

    @staticmethod
    def _context_table() -> QTableWidget:
        table = QTableWidget(0, 5)
        table.setHorizontalHeaderLabels(
            ["deployment", "ε (as published)", "DP model", "privacy unit", "source"]
        )
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        table.verticalHeader().setVisible(False)
        table.setWordWrap(False)
        table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 8)
        header = table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        table.setAccessibleName("Published deployments and this dataset's total epsilon")
        return table

    def _changed(self) -> None:
        self._request = self.request()
        self.job_requested.emit(self._request)

    # ------------------------------------------------------------------ drawing
    def show_error(self, message: str) -> None:
        self.sentence.setText(f"<b>Cannot compute the risk:</b> {message}")

    def show_result(self, result: RiskResult) -> None:
        """Draw ``result`` (ignored if the inputs changed since it was asked for)."""
        if self._request is not None and result.request is not self._request:
            return
        self.result = result
        self._draw_tradeoff(result)
        self._draw_posterior(result)
        prior = result.request.prior
        parts = [plain_sentence(c, prior) for c in (result.current, result.plan) if c is not None]
        if not parts:
            parts = ["Add a statistic to the plan, or choose a mechanism, to see the risk."]
        if result.released is not None:
            parts.append(released_sentence(result.released))
        self.sentence.setText("<br>".join(parts + [f"<i>{n}</i>" for n in result.notes]))
        self._fill_context(result.context)
        self.columns = self._csv(result)

    def _fill_context(self, rows: Sequence[ContextRow]) -> None:
        table = self.context
        table.setRowCount(len(rows))
        bold = QFont()
        bold.setBold(True)
        for i, row in enumerate(rows):
            source = urlparse(row.url).netloc if row.url else row.source  # the full one: its tooltip
            texts = [row.label, epsilon_text(row, lambda v: f"{v:.3g}"), row.model, row.unit, source]
            for j, text in enumerate(texts):
                cell = QTableWidgetItem(text)
                cell.setToolTip(f"{row.source}: {row.url}" if j == 4 and row.url else text)
                if row.own:
                    cell.setFont(bold)
                    cell.setBackground(palette.brush(GREEN, 60))
                table.setItem(i, j, cell)
        shown = min(len(rows), CONTEXT_ROWS)
        height = table.horizontalHeader().height() + round(
            shown * table.verticalHeader().defaultSectionSize()
        )
        table.setFixedHeight(height + 2 * table.frameWidth())
        first = next((table.item(i, 0) for i, row in enumerate(rows) if row.own), None)
        if first is not None:
            table.scrollToItem(first, QAbstractItemView.ScrollHint.PositionAtCenter)

    def _pairs(self, result: RiskResult) -> list[tuple[RiskCurves, tuple[int, int, int]]]:
        return [(c, colour) for c, colour in ((result.current, BLUE), (result.plan, ORANGE)) if c is not None]

    def _draw_tradeoff(self, result: RiskResult) -> None:
        plot = self.tradeoff
        plot.clear()
        alphas = result.alphas
        plot.plot(
            alphas, 1 - alphas, pen=palette.pen(GREY, width=1), name="random guessing (no privacy loss)"
        )
        for curves, colour in self._pairs(result):
            pair = f"(ε = {privacy_number(curves.epsilon)}, δ = {privacy_number(curves.delta)})"
            if curves.beta_profile is not None:
                line = plot.plot(
                    alphas,
                    curves.beta_profile,
                    pen=palette.pen(colour, width=2),
                    name=curves.name,
                )
                floor = plot.plot(alphas, np.zeros_like(alphas), pen=None)
                plot.addItem(pg.FillBetweenItem(line, floor, brush=palette.brush(colour, 50)))
            dashed = palette.pen(colour, width=2, style=Qt.PenStyle.DashLine)
            alone = None if curves.beta_profile is not None else f"{curves.name}: {pair} alone"
            plot.plot(alphas, curves.beta_pair, pen=dashed, name=alone)  # dashed: the explanation says
        if result.released is not None:
            self._draw_released(result.released)
        if self._pairs(result) or result.released is not None:
            text = pg.TextItem(
                "no test can reach\nthe shaded corner", color=palette.colour(GREY), anchor=(0, 1)
            )
            text.setPos(0.02, 0.02)
            plot.addItem(text)
        plot.setXRange(0, 1, padding=0.02)
        plot.setYRange(0, 1, padding=0.02)

    def _draw_released(self, released: ReleasedRisk) -> None:
        """The curve of everything the ledger holds, its kind and mu-GDP summary in the legend."""
        t = released.tradeoff
        shown = "exact" if t.kind == tradeoff.EXACT else "lower bound"  # its μ: the sentence
        name = f"everything released ({shown})"
        self.tradeoff.plot(t.fpr, t.fnr, pen=palette.pen(GREEN, width=3), name=name)

    def _draw_posterior(self, result: RiskResult) -> None:
        plot = self.posterior_plot
        plot.clear()
        priors, prior = result.priors, result.request.prior
        plot.plot(priors, priors, pen=palette.pen(GREY, width=1), name="learns nothing")
        for curves, colour in self._pairs(result):
            plot.plot(priors, curves.posteriors, pen=palette.pen(colour, width=2), name=curves.name)
            plot.plot(
                [prior],
                [curves.posterior],
                pen=None,
                symbol="o",
                symbolSize=9,
                symbolBrush=palette.brush(colour),
            )
        plot.addItem(pg.InfiniteLine(pos=prior, angle=90, pen=palette.pen(GREY, style=Qt.PenStyle.DotLine)))
        plot.setXRange(0, 1, padding=0.02)
        plot.setYRange(0, 1, padding=0.02)

    def _csv(self, result: RiskResult) -> dict[str, Column]:
        columns: dict[str, Column] = {"alpha": list(result.alphas)}
        for curves, _ in self._pairs(result):
            columns[f"{curves.name}: beta from (eps, delta)"] = list(curves.beta_pair)
            if curves.beta_profile is not None:
                columns[f"{curves.name}: beta tight"] = list(curves.beta_profile)
        if result.released is not None:  # on its own grid (finer near 0)
            columns["released: fpr"] = list(result.released.tradeoff.fpr)
            columns["released: fnr at least"] = list(result.released.tradeoff.fnr)
        columns["prior"] = list(result.priors)
        for curves, _ in self._pairs(result):
            columns[f"{curves.name}: posterior at most"] = list(curves.posteriors)
        return columns
