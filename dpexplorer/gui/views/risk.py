"""The risk view: what the guarantees mean for an attacker who tests whether one person (say
Alice) is in the data.

Left: the hypothesis-testing region. Any test has a type I error alpha (says "Alice is in" when
she is not) and a type II error beta (misses her); differential privacy forces beta above the
trade-off curve, so the closer the curve is to the diagonal beta = 1 - alpha (random
guessing), the less any attacker can learn. Right: the bound on the attacker's belief after
the releases against the belief before. Every number comes from :mod:`dpexplorer.core.risk`;
:func:`risk_job` computes them and :meth:`RiskView.show_result` only draws."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QLabel, QWidget

from dpexplorer.core import planning, risk
from dpexplorer.core.accounting.guarantees import Guarantee
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.figures import privacy_number
from dpexplorer.core.planning import PlannedMeasurement
from dpexplorer.gui import palette
from dpexplorer.gui.plot_export import Column
from dpexplorer.gui.views.base import BLUE, GREY, ORANGE, View, new_plot

ALPHAS = np.linspace(0.0, 1.0, 201)
PRIORS = np.linspace(0.001, 0.999, 199)


@dataclass(frozen=True, eq=False)
class RiskRequest:
    """The current statistic (None if there is none), the guarantees of everything released and
    planned with the delta to read their total at, and the attacker's prior (0 < prior < 1)."""

    current: PlannedMeasurement | None
    plan: tuple[Guarantee, ...]
    plan_delta: float
    prior: float


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
class RiskResult:
    request: RiskRequest
    alphas: np.ndarray
    priors: np.ndarray
    current: RiskCurves | None
    plan: RiskCurves | None
    notes: tuple[str, ...] = ()


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


def risk_job(request: RiskRequest) -> RiskResult:
    """Every number the risk view shows, from :mod:`dpexplorer.core.risk`. A part that cannot be
    computed (no accountant applies to the plan, a budget delta of 0 with Gaussian noise) is left
    out with a note instead of failing the whole view."""
    notes: list[str] = []
    current = plan = None
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
    return RiskResult(request, ALPHAS, PRIORS, current, plan, tuple(notes))


def plain_sentence(curves: RiskCurves, prior: float) -> str:
    """The posterior bound in words, with its exception when delta > 0."""
    text = (
        f"An attacker who believed with {prior:.0%} that Alice is in the data can, after seeing "
        f"{_SEEING[curves.name]}, believe it with at most <b>{curves.posterior:.0%}</b>"
    )
    if curves.delta > 0:
        text += f" (except with probability at most {privacy_number(10 * curves.delta)}, i.e. 10δ)"
    return text + "."


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
            "grey diagonal (guessing at random), the less anyone can learn."
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
        self._current: PlannedMeasurement | None = None
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

    def request(self) -> RiskRequest:
        return RiskRequest(self._current, self._plan, self._plan_delta, self.prior.value() / 100)

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
        self.sentence.setText("<br>".join(parts + [f"<i>{n}</i>" for n in result.notes]))
        self.columns = self._csv(result)

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
                    name=f"{curves.name}: exact profile",
                )
                floor = plot.plot(alphas, np.zeros_like(alphas), pen=None)
                plot.addItem(pg.FillBetweenItem(line, floor, brush=palette.brush(colour, 50)))
            dashed = palette.pen(colour, width=2, style=Qt.PenStyle.DashLine)
            plot.plot(alphas, curves.beta_pair, pen=dashed, name=f"{curves.name}: {pair} alone")
        if self._pairs(result):
            text = pg.TextItem(
                "no test can reach\nthe shaded corner", color=palette.colour(GREY), anchor=(0, 1)
            )
            text.setPos(0.02, 0.02)
            plot.addItem(text)
        plot.setXRange(0, 1, padding=0.02)
        plot.setYRange(0, 1, padding=0.02)

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
        columns["prior"] = list(result.priors)
        for curves, _ in self._pairs(result):
            columns[f"{curves.name}: posterior at most"] = list(curves.posteriors)
        return columns
