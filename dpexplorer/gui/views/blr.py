"""The BLR view (the net mechanism; seeds 000 and 004; Dwork & Roth 2014, section 4.1): how many
candidate synthetic datasets there are and how long scoring them all takes, a Run button with
progress and Cancel, then the synthetic dataset as a histogram over the universe beside the
true one, and each workload query's error with the seed's accuracy bound beside the measured
maximum error.

Two jobs, both pure calls of the mechanism: :func:`job` (cheap: the plan, submitted like any
view's job) and :func:`run_job` (long: one exact draw by streaming over every candidate, with
cancellation and progress; submitted when the view emits :attr:`BLRView.run_requested`). The
view only draws."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

from dpexplorer.core.cancel import CancelToken
from dpexplorer.core.errors import CancelledError, DPExplorerError
from dpexplorer.core.mechanisms.base import Mechanism, QueryInput, WorkloadInput
from dpexplorer.core.mechanisms.blr import MWEM_HINT, BLRResult, synthetic_size
from dpexplorer.core.mechanisms.runs import NO_JOB, Job
from dpexplorer.core.mechanisms.sparse_vector import normalised_answers
from dpexplorer.gui import palette
from dpexplorer.gui.views.base import (
    GREEN,
    GREY,
    RED,
    RunnerView,
    keep_line_labels_inside,
    marker_line,
)
from dpexplorer.gui.views.run_controls import RunControls
from dpexplorer.gui.views.selection import (
    axis_end,
    category_plot,
    colour_key,
    hbars,
    label_rows,
    paired_hbars,
)

MECHANISMS = ("blr",)
"""The mechanisms (registry names) this view serves."""


@dataclass(frozen=True, eq=False)
class BLRPlan:
    """What BLR will do with these parameters, before running: ``candidates`` = C(N + m − 1, m)
    (exact), ``estimated_seconds`` (an estimate; ``inf`` when too large to say), the seed's
    accuracy bound at ``beta`` (an upper bound on the max error with probability ≥ 1 − β), and
    ``refusal``: the mechanism's own message when it refuses to run ("" when it will run)."""

    mechanism: str
    m: int
    cells: int
    candidates: int
    estimated_seconds: float
    accuracy_bound: float
    beta: float
    max_candidates: float
    refusal: str
    cell_labels: tuple[str, ...]
    true_fractions: np.ndarray
    query_labels: tuple[str, ...]
    true_answers: np.ndarray
    params: dict[str, Any]


@dataclass(frozen=True, eq=False)
class BLRRun:
    """One run: the mechanism's :class:`BLRResult` with the plan it was run under."""

    plan: BLRPlan
    result: BLRResult
    synthetic_fractions: np.ndarray
    seed: int


def _estimate(mechanism: Any, params: dict[str, Any], query: WorkloadInput) -> float:
    try:
        return float(mechanism.estimate_seconds(params, query))
    except OverflowError:  # more candidates than a float holds
        return math.inf


def _refusal(mechanism: Any, params: dict[str, Any], query: WorkloadInput, candidates: int) -> str:
    """The mechanism's own refusal, from asking it to run with an already cancelled token: past
    the limit it refuses before scoring anything."""
    if candidates <= params["max_candidates"]:
        return ""
    token = CancelToken()
    token.cancel()
    try:
        mechanism.run(params, query, np.random.default_rng(0), cancel=token)
    except DPExplorerError as error:
        return str(error)
    except CancelledError:
        return ""
    except OverflowError:  # the core could not print its own estimate: say it here
        digits = len(str(candidates)) - 1
        return (
            f"BLR would have to score about 10^{digits} candidate synthetic datasets, more than "
            f"the limit of {params['max_candidates']:,.0f}; {MWEM_HINT}"
        )
    return ""


def plan_job(mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int = 0) -> BLRPlan:
    """The plan of a BLR run (cheap; nothing is sampled). ``seed`` is unused here (the run uses
    it); it keeps the views' job signatures alike."""
    del seed
    if not isinstance(query, WorkloadInput):
        raise TypeError(f"the BLR view needs a WorkloadInput, not {type(query).__name__}")
    blr: Any = mechanism
    candidates = int(blr.candidate_count(params, query))
    histogram = np.asarray(query.histogram_d, dtype=float)
    return BLRPlan(
        mechanism=mechanism.label,
        m=synthetic_size(params, query.workload.shape[0]),
        cells=len(query.cell_labels),
        candidates=candidates,
        estimated_seconds=_estimate(blr, params, query),
        accuracy_bound=float(blr.accuracy_bound(params, query, params["beta"])),
        beta=float(params["beta"]),
        max_candidates=float(params["max_candidates"]),
        refusal=_refusal(blr, params, query, candidates),
        cell_labels=tuple(query.cell_labels),
        true_fractions=histogram / max(histogram.sum(), 1.0),
        query_labels=tuple(query.query_labels),
        true_answers=normalised_answers(query.workload, histogram),
        params=dict(params),
    )


job = plan_job
"""The view's quick job, under the name the workspace submits (``module.job``)."""


def run_job(
    mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int, job: Job = NO_JOB
) -> BLRRun:
    """One BLR run on D with the exploration RNG seeded by ``seed`` (never a release): the
    mechanism's exact streaming sampler, cancellable, reporting progress."""
    plan = plan_job(mechanism, params, query)
    if plan.refusal:
        raise DPExplorerError(plan.refusal)
    blr: Any = mechanism
    result = blr.run(params, query, np.random.default_rng(seed), cancel=job.cancel, progress=job.progress)
    synthetic = np.asarray(result.synthetic_histogram, dtype=float)
    return BLRRun(plan, result, synthetic / max(synthetic.sum(), 1.0), seed)


def _seconds_text(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "longer than anyone can wait"
    if seconds < 1:
        return "under a second"
    if seconds < 120:
        return f"about {seconds:.0f} s"
    if seconds < 7200:
        return f"about {seconds / 60:.0f} min"
    years = seconds / (3600 * 24 * 365)
    return f"about {seconds / 3600:,.0f} hours" if years < 1 else f"about {years:,.3g} years"


def _count_text(count: int) -> str:
    return f"{count:,}" if count < 10**15 else f"about 10^{len(str(count)) - 1}"


class BLRView(RunnerView):
    """The plan, the Run / Cancel controls, and the last run's synthetic data and errors.

    Signals: :attr:`run_requested` (the user pressed Run: submit :func:`run_job`),
    :attr:`cancel_requested` (the user pressed Cancel: cancel that job; the view is already
    back to idle, since a cancelled job reports nothing). The plan job's result goes to
    :meth:`show_result` and its failure to :meth:`show_error`; the run job's result to
    :meth:`show_result` (or :meth:`show_run`), its failure to :meth:`run_failed`, its progress
    to :meth:`set_progress`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("BLR: a synthetic dataset chosen among all possible ones", parent)
        self.controls = RunControls(
            "Run BLR",
            "Draw one synthetic dataset by scoring every candidate (exploration only: never a release)",
            "Stop the run; nothing is shown or released",
            "%p% of the candidates scored",
            busy="Scoring every candidate synthetic dataset…",
            cancelled="Cancelled: no synthetic dataset was drawn.",
        )
        self.run_button, self.cancel_button = self.controls.run_button, self.controls.cancel_button
        self.progress, self.status = self.controls.progress, self.controls.status
        self.universe = category_plot(
            "share of the rows", "The data over the universe", "cell of the universe"
        )
        self.errors = category_plot(
            "error |q(synthetic) − q(D)| (share of rows)", "Error of each workload query", "query"
        )
        self.body.addWidget(self.controls)
        self.place_plots((self.universe, 1), (self.errors, 1))
        self.controls.run_requested.connect(self._on_run)
        self.controls.cancel_requested.connect(self.cancel_requested)
        self.plan: BLRPlan | None = None
        self.run: BLRRun | None = None
        self.controls.idle("Press Run to draw a synthetic dataset.")
        self.explanation.setText(
            "<b>BLR</b> (the net mechanism) considers <i>every</i> possible synthetic dataset of m "
            "rows over the universe and picks one by the exponential mechanism: the smaller its "
            "largest error on the workload's counting queries, the likelier it is chosen. Exact, "
            "but the number of candidates explodes with m and the number of cells."
        )

    # ------------------------------------------------------------------ controls
    @property
    def running(self) -> bool:
        return self.controls.running

    @property
    def can_run(self) -> bool:
        return self.plan is not None and not self.plan.refusal and not self.running

    def _on_run(self) -> None:
        """Run was pressed (the controls show the run busy): the previous run's result goes."""
        self._forget_run()
        self.run_requested.emit()

    def _forget_run(self) -> None:
        self.run = None
        self.error.hide()
        self._draw()

    def run_started(self) -> None:
        """Busy: Run disabled, Cancel enabled, the previous run's result cleared."""
        self._forget_run()
        self.controls.started(self.controls.busy)

    def run_cancelled(self) -> None:
        """Back to idle with nothing shown (call it too when the lead cancels the run itself)."""
        self.controls.idle(self.controls.cancelled)

    def set_progress(self, fraction: float) -> None:
        """The share of the candidates scored so far (0 to 1)."""
        self.controls.set_progress(fraction)

    # ------------------------------------------------------------------ results
    def show_result(self, result: BLRPlan | BLRRun) -> None:
        """Draw a plan (from :func:`job`) or a finished run (from :func:`run_job`)."""
        if isinstance(result, BLRRun):
            self.show_run(result)
        else:
            self.show_plan(result)

    def show_plan(self, plan: BLRPlan) -> None:
        changed = self.plan is None or self.plan.params != plan.params
        self.plan = plan
        if self.run is not None and self.run.plan.params != plan.params:
            self.run = None  # drawn under other parameters
        if changed and not self.running and self.run is None:
            self.status.setText("Press Run to draw a synthetic dataset.")
        self.controls.info.setText(self._plan_text(plan))
        self.error.setText(plan.refusal)
        self.error.setVisible(bool(plan.refusal))
        self.controls.set_ready(not plan.refusal)
        self._draw()

    def show_run(self, run: BLRRun) -> None:
        self.run = run
        self.plan = self.plan or run.plan
        self.controls.idle(f"Done in {run.result.seconds:.3g} s (seed {run.seed}).")
        self._draw()

    def show_error(self, message: str) -> None:
        """The plan job failed: its message shown as it is; nothing can run until a new plan."""
        self.plan = None
        self.controls.info.clear()
        self.error.setText(message)
        self.error.show()
        self.controls.set_ready(False)
        self._draw()

    def run_failed(self, message: str) -> None:
        """The run job failed (a refusal, or a bug): its message shown as it is; back to idle."""
        self.error.setText(message)
        self.error.show()
        self.controls.idle("The run stopped.")

    def _plan_text(self, plan: BLRPlan) -> str:
        over = plan.candidates > plan.max_candidates
        count = _count_text(plan.candidates)
        limit = f" (limit {plan.max_candidates:,.0f})" if over else ""
        return (
            f"<b>{count}</b> candidate synthetic datasets{limit}: every way to put m = {plan.m:,} "
            f"rows into {plan.cells:,} cells. Estimated time: <b>{_seconds_text(plan.estimated_seconds)}</b>."
        )

    def _draw(self) -> None:
        self.universe.clear()
        self.errors.clear()
        plan = self.plan
        if plan is None:
            self.summary.clear()
            self.columns = {}
            return
        run = self.run
        synthetic = run.synthetic_fractions if run is not None else None
        top = axis_end(plan.true_fractions, *(() if synthetic is None else (synthetic,)), room=1.2)
        paired_hbars(self.universe, plan.true_fractions, synthetic, top)
        label_rows(self.universe, plan.cell_labels)
        self._draw_errors(plan, run)
        self.summary.setText(self._summary(plan, run))
        self.columns = {
            "cell": list(plan.cell_labels),
            "true_share": list(plan.true_fractions),
            "query": list(plan.query_labels),
            "true_answer": list(plan.true_answers),
        }
        if run is not None:
            self.columns["synthetic_share"] = list(run.synthetic_fractions)
            self.columns["synthetic_answer"] = list(run.result.synthetic_answers)
            self.columns["error"] = list(run.result.query_errors)

    def _draw_errors(self, plan: BLRPlan, run: BLRRun | None) -> None:
        rows = np.arange(len(plan.query_labels), dtype=float)
        label_rows(self.errors, plan.query_labels)
        bound = plan.accuracy_bound
        if run is None:
            self.errors.setXRange(0.0, bound * 1.1 if np.isfinite(bound) else 1.0, padding=0.0)
            waiting = pg.TextItem(
                "No synthetic dataset yet: press Run to draw one\nand see each query's error.",
                color=palette.colour(GREY),
                anchor=(0.5, 0.5),
            )
            waiting.setPos((bound * 0.55 if np.isfinite(bound) else 0.5), (len(rows) - 1) / 2)
            self.errors.addItem(waiting)
        else:
            hbars(self.errors, rows, run.result.query_errors, GREY, height=0.6)
            label = f"measured max error {run.result.max_error:.3g}"
            marker_line(self.errors, run.result.max_error, GREEN, label, 0.5, 0, opacity=230)
            reach = max(run.result.max_error * 1.3, min(bound, 1.0) * 1.1 if np.isfinite(bound) else 0.0)
            self.errors.setXRange(0.0, reach or 1.0, padding=0.0)
        if np.isfinite(bound):
            label = f"proven bound {bound:.3g} (prob. ≥ {1 - plan.beta:.0%})"
            marker_line(self.errors, bound, RED, label, 0.97, 1, opacity=230)
        keep_line_labels_inside(self.errors)

    @staticmethod
    def _summary(plan: BLRPlan, run: BLRRun | None) -> str:
        key = colour_key("D, your data (true shares)", "the synthetic dataset (shares of its m rows)")
        bound = (
            f"the proven bound: with probability ≥ {1 - plan.beta:.0%} the largest error is below "
            f"<b>{plan.accuracy_bound:.4g}</b> (BLR's accuracy theorem, Blum, Ligett & Roth 2008; "
            "Dwork & Roth 2014, Theorem 4.5)"
        )
        if run is None:
            return f"{key}<br>No synthetic dataset drawn yet; {bound}."
        verdict = "within" if run.result.max_error <= plan.accuracy_bound else "ABOVE"
        return (
            f"{key}<br>Measured largest error over the {len(plan.query_labels):,} queries: "
            f"<b>{run.result.max_error:.4g}</b>, {verdict} {bound}."
        )
