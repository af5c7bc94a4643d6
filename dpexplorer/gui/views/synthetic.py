"""The synthetic-data view of MST and AIM, in four pages: the error of every 2-way marginal
(total-variation distance between the true marginal and the synthetic table's, beside the
independent-columns baseline, the product of the true 1-way marginals); the workload error
against epsilon with the direct and independent baselines (a long job run on request:
:func:`~dpexplorer.gui.views.synthetic_pages.run_job`); the run's selection rounds (which
marginal at what budget); a true-against-synthetic marginal picker.

EXPLORATION ONLY: the errors and the picker compare with the true data, and the runs draw their
noise from the seeded exploration generator (never a release). :func:`job` runs the mechanism
once (selection, measurement, estimation, records; cancellable between steps and fits); the view
only draws."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtWidgets import QTabWidget, QWidget

from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.marginals import Clique, MarginalInput, record_marginal, tvd
from dpexplorer.core.mechanisms.base import Mechanism, QueryInput
from dpexplorer.core.mechanisms.mst import MarginalMechanism
from dpexplorer.core.mechanisms.runs import NO_JOB, Job
from dpexplorer.core.synthetic_error import (
    DEFAULT_EPSILONS,
    ErrorCurve,
    RoundCost,
    error_curve,
    round_costs,
)
from dpexplorer.gui import palette
from dpexplorer.gui.views.base import GREY, PURPLE, RunnerView
from dpexplorer.gui.views.selection import BAR, category_plot, hbars, label_rows
from dpexplorer.gui.views.synthetic_pages import CurvePage, MarginalPair, PickerPage, RoundsPage, run_job

__all__ = ["MECHANISMS", "MarginalErrorView", "MarginalErrors", "job", "run_job"]

MECHANISMS = ("mst", "aim")
"""The mechanisms (registry names) this view serves."""


@dataclass(frozen=True, eq=False)
class MarginalErrors:
    """One run: per 2-way marginal (``labels``), the synthetic table's TVD to the true marginal,
    the independent baseline's, and whether the run measured that marginal; the run's rounds
    (:func:`~dpexplorer.core.synthetic_error.round_costs`) and the true and synthetic counts of
    every 1-way, 2-way and workload marginal (``marginals``, for the picker)."""

    mechanism: str
    labels: tuple[str, ...]
    synthetic: np.ndarray
    independent: np.ndarray
    measured: tuple[bool, ...]
    rows: int
    epsilon: float
    rho: float
    seconds: float
    seed: int
    rounds: tuple[RoundCost, ...] = ()
    one_way_rho: float = 0.0
    marginals: tuple[MarginalPair, ...] = ()
    workload: tuple[str, ...] = ()
    baselines: ErrorCurve | None = None
    """The direct and independent baselines' workload error at the curve's epsilons (cheap)."""


def pair_errors(query: MarginalInput, records: np.ndarray) -> tuple[list[Clique], np.ndarray, np.ndarray]:
    """Every 2-way marginal of the columns with its synthetic and independent-baseline TVD
    (exploration: reads the true counts)."""
    pairs: list[Clique] = list(itertools.combinations(range(len(query.columns)), 2))
    n = max(query.n, 1)
    synthetic, independent = [], []
    for pair in pairs:
        true = query.counts(pair)
        synthetic.append(tvd(true, record_marginal(records, query.sizes, pair)))
        product = np.outer(query.counts((pair[0],)), query.counts((pair[1],))).ravel() / n
        independent.append(tvd(true, product))
    return pairs, np.array(synthetic), np.array(independent)


def picked_marginals(query: MarginalInput, records: np.ndarray) -> tuple[MarginalPair, ...]:
    """The true and synthetic counts of every 1-way and 2-way marginal and of the workload's
    (exploration: the true counts are private)."""
    d = len(query.columns)
    cliques = dict.fromkeys(
        [*((i,) for i in range(d)), *itertools.combinations(range(d), 2), *query.workload]
    )
    return tuple(
        MarginalPair(
            query.name(c),
            tuple(query.cell_labels(c)),
            np.asarray(query.counts(c), dtype=float),
            record_marginal(records, query.sizes, c),
        )
        for c in cliques
    )


def job(
    mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int, job: Job = NO_JOB
) -> MarginalErrors:
    """One exploration run of MST or AIM on D (seeded): its 2-way marginal errors, its rounds
    and the marginals the picker shows."""
    if not isinstance(query, MarginalInput) or not isinstance(mechanism, MarginalMechanism):
        raise NotApplicableError(
            f"{mechanism.label} needs a marginals query (columns on public categories or bins)"
        )
    result = mechanism.run(
        params, query, np.random.default_rng(seed), cancel=job.cancel, progress=job.progress
    )
    pairs, synthetic, independent = pair_errors(query, result.records)
    measured = {m.clique for m in result.transcript.measurements}
    epsilon, _ = mechanism.epsilon_delta(params, query)
    rounds, one_way = round_costs(query, result.transcript)
    return MarginalErrors(
        mechanism=mechanism.label,
        labels=tuple(query.name(p) for p in pairs),
        synthetic=synthetic,
        independent=independent,
        measured=tuple(p in measured for p in pairs),
        rows=len(result.records),
        epsilon=epsilon,
        rho=mechanism.rho(params),
        seconds=result.seconds,
        seed=seed,
        rounds=tuple(rounds),
        one_way_rho=one_way,
        marginals=picked_marginals(query, result.records),
        workload=tuple(query.name(c) for c in query.workload),
        baselines=error_curve(query, params, DEFAULT_EPSILONS, seed, methods=("direct", "independent")),
    )


def _square(colour: tuple[int, int, int]) -> str:
    return f"<span style='color:{palette.css(colour)}'>■</span>"


class MarginalErrorView(RunnerView):
    """Four pages (module docstring). On the first, one row per 2-way marginal: the synthetic
    table's TVD (purple; marked * when the run measured that marginal) above the independent
    baseline's (grey). Signals :attr:`run_requested` and :attr:`cancel_requested` for the curve
    against epsilon (the workspace submits :func:`run_job`)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Synthetic data over marginals: how close the synthetic table is", parent)
        self.plot = category_plot(
            "total-variation distance", "True against synthetic 2-way marginals", "marginal"
        )
        self.curve_page = CurvePage()
        self.controls = self.curve_page.controls
        self.rounds_page = RoundsPage()
        self.picker_page = PickerPage()
        self.pages = QTabWidget()
        self.pages.setDocumentMode(True)
        self.pages.addTab(self.plot, "Each 2-way marginal")
        self.pages.addTab(self.curve_page, "Error against ε")
        self.pages.addTab(self.rounds_page, "Rounds")
        self.pages.addTab(self.picker_page, "True vs synthetic")
        self.body.addWidget(self.error)
        self.body.addWidget(self.summary)
        self.body.addWidget(self.pages, 1)
        self.result_plots = (self.plot,)
        self.curve_page.run_requested.connect(self.run_requested)
        self.curve_page.cancel_requested.connect(self.cancel_requested)
        self.pages.currentChanged.connect(lambda _index: self._page_columns())
        self._errors_columns: dict[str, Any] = {}

    # ------------------------------------------------------------------ the curve's job
    def run_started(self) -> None:
        self.curve_page.run_started()

    def run_cancelled(self) -> None:
        self.curve_page.run_cancelled()

    def run_failed(self, message: str) -> None:
        self.curve_page.run_failed(message)

    def set_progress(self, fraction: float) -> None:
        self.curve_page.set_progress(fraction)

    # ------------------------------------------------------------------ results
    def plot_area(self) -> QWidget:
        return self.pages.currentWidget() or self

    def _page_columns(self) -> None:
        page = self.pages.currentWidget()
        self.columns = (
            getattr(page, "columns", self._errors_columns) if page is not self.plot else self._errors_columns
        )

    def show_error(self, message: str) -> None:
        super().show_error(message)
        self.curve_page.enable(False)
        self._errors_columns = {}

    def show_result(self, result: MarginalErrors | ErrorCurve) -> None:
        """Draw a single run (from :func:`job`) or a curve (from :func:`run_job`)."""
        if isinstance(result, ErrorCurve):
            self.curve_page.show_curve(result)
            self._page_columns()
            return
        if self.result is not None and self.result.workload != result.workload:
            self.curve_page.clear()  # drawn for another query
        self.start_result(result)
        self._draw_errors(result)
        self.curve_page.enable(True)
        self.curve_page.set_cost(f"{result.seconds:.1f} s")
        if result.baselines is not None:
            self.curve_page.show_baselines(result.baselines)
        self.rounds_page.show_rounds(result.mechanism, result.rounds, result.one_way_rho, result.rho)
        self.picker_page.set_marginals(result.marginals)
        self._page_columns()

    def _draw_errors(self, result: MarginalErrors) -> None:
        rows = np.arange(len(result.labels), dtype=float)
        hbars(self.plot, rows - BAR / 2, result.synthetic, PURPLE)
        hbars(self.plot, rows + BAR / 2, result.independent, GREY)
        names = [
            f"{name} *" if seen else name for name, seen in zip(result.labels, result.measured, strict=True)
        ]
        label_rows(self.plot, names)
        top = max(
            float(np.max(result.synthetic, initial=0.0)), float(np.max(result.independent, initial=0.0))
        )
        self.plot.setXRange(0.0, top * 1.1 if top > 0 else 1.0, padding=0.0)
        mean_s, mean_i = float(np.mean(result.synthetic)), float(np.mean(result.independent))
        self.summary.setText(
            f"{_square(PURPLE)} synthetic table (mean {mean_s:.3f}) &nbsp; {_square(GREY)} independent "
            f"columns (mean {mean_i:.3f}) &nbsp; * measured by the run &nbsp;·&nbsp; {result.rows:,} "
            f"records, ε = {result.epsilon:.3g} (ρ = {result.rho:.3g}), {result.seconds:.1f} s, "
            f"seed {result.seed}"
        )
        self.explanation.setText(
            f"{result.mechanism}. Exploration only: the errors compare the synthetic table with the "
            "TRUE data, and the run's noise comes from the seeded generator, not a release. The "
            "total-variation distance is half the l1 distance between the two marginals as shares "
            "(0: the same; 1: disjoint). The grey bars assume the columns independent: a synthetic "
            "table worth releasing should beat them where the columns depend on each other."
        )
        self._errors_columns = {
            "marginal": list(result.labels),
            "measured": [int(m) for m in result.measured],
            "synthetic_tvd": list(result.synthetic),
            "independent_tvd": list(result.independent),
        }
