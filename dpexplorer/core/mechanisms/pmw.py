"""Private multiplicative weights (PMW; Hardt & Rothblum 2010; seed 004; Dwork & Roth 2014,
Section 4.2), answering counting queries online.

A public distribution D_t over the universe starts uniform. Each query q_i (a fraction of the
rows) is tested: is |q_i(x) - q_i(D_t)| above the threshold T? The test is the sparse vector
technique with at most L "above" answers (Dwork & Roth 2014, Algorithm 3, NumericSparse, with
epsilon_1 = 8 epsilon' / 9 for the tests and epsilon_2 = 2 epsilon' / 9 for the answers):
threshold noise Lap(2 L Delta / epsilon_1), refreshed after each update; test noise
Lap(4 L Delta / epsilon_1); Delta = 1 / denominator. The denominator turning counts into shares
is the public n under replace, and under add/remove (n private) a noisy row count bought with a
declared share of epsilon; epsilon' is what is left (:mod:`dpexplorer.core.row_count`).
- Lazy round (below): answer q_i(D_t), computed from public information only.
- Update round (above): answer a_i = q_i(x) + Lap(L Delta / epsilon_2) and update
  D_{t+1}[j] proportional to D_t[j] exp(+-eta q_i[j]), the sign that of a_i - q_i(D_t), with
  eta = T / 4 (seed 004's update).
- After L updates every further query gets "⊥".
Privacy: epsilon-DP (Dwork & Roth 2014, Theorem 3.28 for NumericSparse; D_t is post-processing).
Note: seed 004 outputs the same noisy value it tested with (Hardt & Rothblum's analysis, which
gives (epsilon, delta)); this module implements the pure-DP NumericSparse form instead.

``workload`` may be a dense 0/1 array or a scipy.sparse matrix (large universes)."""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from scipy import sparse
from scipy.sparse._sparsetools import csr_matvec as _csr_matvec

from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms.base import (
    WORKLOAD_ERROR,
    AccuracyReport,
    Curve,
    NumericOutput,
    PureEpsilonMechanism,
    QueryInput,
    WorkloadInput,
)
from dpexplorer.core.mechanisms.exponential import error_quantile, error_tail
from dpexplorer.core.mechanisms.params import EPSILON, Param, log_float, whole_number
from dpexplorer.core.mechanisms.registry import register
from dpexplorer.core.mechanisms.runs import NO_JOB, Job, R, RunMechanism
from dpexplorer.core.mechanisms.sparse_vector import BOTTOM, check_workload
from dpexplorer.core.row_count import COUNT_SHARE, noisy_row_counts, split_epsilon

MIN_BATCH, MAX_BATCH = 16, 2048
MC_RUNS = 400
LAZY, UPDATE = "lazy", "update"

THRESHOLD = log_float(
    "threshold",
    "Error threshold T (share of rows)",
    default=0.05,
    high=1.0,
    slider=(0.001, 0.5),
    help=(
        "Queries that the public synthetic distribution already answers within about this "
        "error are answered from it for free; the others spend budget and teach it."
    ),
)
UPDATES = whole_number(
    "updates",
    "Update rounds L",
    default=20,
    low=1,
    high=10_000,
    help=(
        "The most queries that may spend budget. The budget is split over them, so a larger L "
        "means noisier tests and answers; after L updates the remaining queries get no answer (⊥)."
    ),
)


@dataclass(frozen=True, eq=False)
class PMWTranscript:
    """One run. Per query: ``answers`` (NaN for ⊥), ``kinds`` ("lazy", "update" or "⊥"),
    ``true_answers``, ``errors`` = |answer - true| (NaN for ⊥), ``updates_used`` after it."""

    query_labels: tuple[str, ...]
    answers: np.ndarray
    kinds: tuple[str, ...]
    true_answers: np.ndarray
    errors: np.ndarray
    updates_used: np.ndarray
    max_updates: int
    threshold: float
    public_distribution: np.ndarray
    seconds: float = 0.0

    @property
    def max_error(self) -> float:
        """Largest error over the answered queries (0 if none)."""
        answered = self.errors[~np.isnan(self.errors)]
        return float(answered.max()) if answered.size else 0.0


def dense_workload(workload: Any) -> np.ndarray:
    """The (k, N) workload matrix as a dense float array (it may be a scipy sparse matrix)."""
    return np.asarray(workload.toarray() if sparse.issparse(workload) else workload, dtype=float)


def workload_row(workload: Any, i: int) -> np.ndarray:
    if sparse.issparse(workload):
        return np.asarray(workload[i].toarray(), dtype=float).ravel()
    return np.asarray(workload[i], dtype=float)


def workload_answers(workload: Any, distribution: np.ndarray) -> np.ndarray:
    return np.asarray(workload @ distribution, dtype=float).ravel()


def _batch_answers(workload: Any, start: int, stop: int, distribution: np.ndarray) -> np.ndarray:
    """W[start:stop] @ distribution; for a CSR matrix by scipy's own CSR kernel on views of its
    index arrays (row slicing or building a sub-matrix scans or copies the rows: ~5x slower)."""
    if not sparse.isspmatrix_csr(workload) and not isinstance(workload, sparse.csr_array):
        return workload_answers(workload[start:stop], distribution)
    ptr = workload.indptr[start : stop + 1]
    segment = slice(int(ptr[0]), int(ptr[-1]))
    out = np.zeros(stop - start)
    data = np.ascontiguousarray(workload.data[segment], dtype=float)
    _csr_matvec(
        stop - start, workload.shape[1], ptr - ptr[0], workload.indices[segment], data, distribution, out
    )
    return out


def measured_shares(
    workload: Any, histogram: np.ndarray, params: Mapping[str, Any], relation: str, rng: np.random.Generator
) -> tuple[float, np.ndarray, np.ndarray]:
    """A run's first draw, as a release's (PMW and MWEM): the denominator (the public n under
    replace, a noisy row count under add/remove); then (denominator, the workload's true
    answers as shares of the rows, the same answers as shares of the denominator: what the run
    measures)."""
    hist = np.asarray(histogram, dtype=float)
    counts = workload_answers(workload, hist)
    denominator = float(noisy_row_counts(hist.sum(), params, relation, rng, 1)[0])
    return denominator, counts / max(hist.sum(), 1.0), counts / denominator


def simulation_inputs(
    query: QueryInput, on: Literal["D", "D'"]
) -> tuple[WorkloadInput, np.ndarray, np.ndarray]:
    """What a Monte-Carlo run of PMW or MWEM needs: (the workload query, checked; the histogram
    of side ``on``; D's true answers as shares of D's rows, which every run's error is measured
    against, on either side)."""
    assert isinstance(query, WorkloadInput)
    check_any_workload(query)
    hist = np.asarray(query.histogram_d if on == "D" else query.histogram_d_prime, dtype=float)
    hist_d = np.asarray(query.histogram_d, dtype=float)
    return query, hist, workload_answers(query.workload, hist_d) / hist_d.sum()


def answered_max_error(answers: np.ndarray, truth: np.ndarray) -> float:
    """max |answer - truth| over the answered queries (an answer is NaN for ⊥); 0 if none."""
    answered = ~np.isnan(answers)
    return float(np.abs(answers[answered] - truth[answered]).max()) if answered.any() else 0.0


def noise_scales(params: Mapping[str, Any], denominator: float, relation: str) -> tuple[float, float, float]:
    """(threshold noise, test noise, answer noise) Laplace scales of NumericSparse, for answers
    as shares of ``denominator`` (Delta = 1 / denominator), at the epsilon left after the row
    count under ``relation``."""
    delta_q, updates = 1.0 / denominator, params["updates"]
    rest = split_epsilon(params, relation)[1]
    eps_tests, eps_answers = 8 * rest / 9, 2 * rest / 9
    sigma = 2 * updates * delta_q / eps_tests
    return sigma, 2 * sigma, updates * delta_q / eps_answers


def pmw_run(
    workload: Any,
    histogram: np.ndarray,
    params: Mapping[str, Any],
    rng: np.random.Generator,
    relation: str,
    job: Job = NO_JOB,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One run over all queries: (answers, is_update, updates_used, final public distribution,
    true answers of ``histogram`` as shares of its rows). The denominator is drawn first, as a
    release does (the public n under replace, a noisy row count under add/remove).
    Queries are tested in batches against the current D_t (batches double while lazy and restart
    small after an update, where the batch is cut)."""
    k, n_cells = workload.shape
    denominator, truth, scaled = measured_shares(workload, histogram, params, relation, rng)
    rho, nu, answer_scale = noise_scales(params, denominator, relation)
    threshold, limit, eta = params["threshold"], params["updates"], params["threshold"] / 4
    distribution = np.full(n_cells, 1.0 / n_cells)
    noisy_threshold = threshold + rng.laplace(scale=rho)
    answers, is_update = np.full(k, np.nan), np.zeros(k, dtype=bool)
    used = np.zeros(k, dtype=np.int64)
    updates, i, batch = 0, 0, MIN_BATCH
    while i < k and updates < limit:
        job.checkpoint(i / k)
        stop = min(i + batch, k)
        approx = _batch_answers(workload, i, stop, distribution)
        above = np.abs(scaled[i:stop] - approx) + rng.laplace(scale=nu, size=stop - i) >= noisy_threshold
        first = int(np.argmax(above)) if above.any() else stop - i
        answers[i : i + first], used[i : i + first] = approx[:first], updates
        i += first
        if i == stop:
            batch = min(2 * batch, MAX_BATCH)
            continue
        batch = MIN_BATCH
        noisy = scaled[i] + rng.laplace(scale=answer_scale)
        direction = 1.0 if noisy > approx[first] else -1.0
        distribution = distribution * np.exp(direction * eta * workload_row(workload, i))
        distribution /= distribution.sum()
        updates += 1
        answers[i], is_update[i], used[i] = noisy, True, updates
        noisy_threshold = threshold + rng.laplace(scale=rho)
        i += 1
    used[i:] = updates
    job.checkpoint(1.0)
    return answers, is_update, used, distribution, truth


class MonteCarloWorkload(RunMechanism[R], PureEpsilonMechanism):
    """What PMW and MWEM share: a run on a workload of counting queries (its denominator drawn
    first, as a release's), pure epsilon-DP as proven (no exact privacy profile), and views
    that are Monte Carlo over independent runs of the max error against D's true answers."""

    input_type: ClassVar[type] = WorkloadInput
    mc_runs: ClassVar[int] = MC_RUNS
    """Runs per side of the Monte-Carlo views."""
    proof: ClassVar[str]
    """Where the pure epsilon is proven."""
    bound_note: ClassVar[str]
    """Why the accuracy view draws no proven bound."""

    @abstractmethod
    def answers(
        self, params: Mapping[str, Any], query: WorkloadInput, histogram: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """One run on ``histogram``: its answers to the workload as shares of the rows (NaN for
        ⊥)."""

    def run_error(
        self, params: Mapping[str, Any], query: QueryInput, on: Literal["D", "D'"]
    ) -> Callable[[np.random.Generator], float]:
        """A run's max error over the answered queries (0 if none) against D's true answers."""
        query, hist, truth = simulation_inputs(query, on)

        return lambda rng: answered_max_error(self.answers(params, query, hist, rng), truth)

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> NumericOutput:
        """Monte-Carlo distribution of the max error of the answered queries against D's true
        answers, on D and on D' (see :func:`monte_carlo_output`)."""
        return monte_carlo_output(
            lambda rng, size, on: self.simulate(params, query, rng, size, on), self.mc_runs
        )

    def proven(self, params: Mapping[str, Any]) -> str:
        return f"pure ε = {params['epsilon']:g} ({self.proof})"

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        """Monte-Carlo tail of the max error over answered queries (``mc_runs`` runs, seeded)."""
        errors = self.simulate(params, query, np.random.default_rng(1), self.mc_runs, "D")
        return monte_carlo_accuracy(errors, ci_level, self.bound_note)


@register
class PMW(MonteCarloWorkload[PMWTranscript]):
    """Private multiplicative weights via NumericSparse: pure epsilon-DP (exact claim)."""

    name: ClassVar[str] = "pmw"
    label: ClassVar[str] = "Private multiplicative weights (online)"
    summary: ClassVar[str] = (
        "Answers a long stream of counting queries from a public synthetic distribution, "
        "spending budget only on the queries it answers badly."
    )
    output_kind: ClassVar[Literal["transcript"]] = "transcript"
    params: ClassVar[tuple[Param, ...]] = (EPSILON, THRESHOLD, UPDATES, COUNT_SHARE)
    order: ClassVar[int] = 61
    proof: ClassVar[str] = "Dwork & Roth 2014, Theorem 3.28"
    # the seed's bound is asymptotic (O-notation)
    bound_note: ClassVar[str] = (
        "the proven bound α = Õ((εn)^−1/2) (Dwork & Roth 2014, section 4.2) has no constants"
    )

    def one_run(
        self, params: Mapping[str, Any], query: QueryInput, rng: np.random.Generator, job: Job
    ) -> PMWTranscript:
        """One run on D with its transcript."""
        assert isinstance(query, WorkloadInput)
        check_any_workload(query)
        answers, is_update, used, distribution, truth = pmw_run(
            query.workload, query.histogram_d, params, rng, query.relation, job
        )
        kinds = tuple(
            BOTTOM if np.isnan(a) else (UPDATE if u else LAZY)
            for a, u in zip(answers, is_update, strict=True)
        )
        return PMWTranscript(
            query.query_labels,
            answers,
            kinds,
            truth,
            np.abs(answers - truth),
            used,
            params["updates"],
            params["threshold"],
            distribution,
        )

    def answers(
        self, params: Mapping[str, Any], query: WorkloadInput, histogram: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        return pmw_run(query.workload, histogram, params, rng, query.relation)[0]


def monte_carlo_output(
    simulate: Callable[[np.random.Generator, int, Literal["D", "D'"]], np.ndarray],
    runs: int = MC_RUNS,
    quantity: str = WORKLOAD_ERROR,
) -> NumericOutput:
    """``runs`` simulated statistics on each side (seed 0) as histogram densities on 30 shared
    bins; the loss is estimated from them (±inf where a bin is empty on one side)."""
    rng = np.random.default_rng(0)
    on_d, on_dp = simulate(rng, runs, "D"), simulate(rng, runs, "D'")
    edges = np.histogram_bin_edges(np.concatenate([on_d, on_dp]), bins=30)
    dens_d, _ = np.histogram(on_d, edges, density=True)
    dens_dp, _ = np.histogram(on_dp, edges, density=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(dens_d) - np.log(dens_dp)
    note = f"Monte Carlo: {runs} runs on D and {runs} on D' (seed 0), 30 bins"
    centres = (edges[:-1] + edges[1:]) / 2
    return NumericOutput(centres, dens_d, dens_dp, loss, note=note, monte_carlo_runs=runs, quantity=quantity)


def monte_carlo_accuracy(errors: np.ndarray, ci_level: float, note: str) -> AccuracyReport:
    """The AccuracyReport of simulated max errors (empirical tail, quantile and MSE)."""
    pmf = np.full(errors.size, 1.0 / errors.size)
    alphas = np.linspace(0.0, float(errors.max()) * 1.05 + 1e-12, 200)
    tail = Curve(
        alphas,
        error_tail(pmf, errors, alphas),
        "α (max error, share of rows)",
        "P(max error > α)",
        f"Monte Carlo, {errors.size} runs",
        "monte_carlo",
    )
    return AccuracyReport(
        error_tail=tail,
        error_tail_bound=None,
        ci_level=ci_level,
        ci_halfwidth=error_quantile(pmf, errors, ci_level),
        mse=float(np.mean(errors**2)),
        notes=(f"Monte Carlo over {errors.size} runs; {note}",),
    )


def check_any_workload(query: WorkloadInput) -> None:
    if sparse.issparse(query.workload):
        if query.workload.shape[1] != len(query.histogram_d):
            raise NotApplicableError("the workload's columns must match the universe's cells")
        return
    check_workload(query)


def suggested_updates(n_cells: int, threshold: float) -> int:
    """L = ceil(16 ln N / T^2): with eta = T/4 and an update only when the error is at least
    T/2, each update lowers KL(x || D_t) by at least T^2/16 and KL starts at most ln N (seed 004,
    potential argument), so more updates cannot happen when the noise stays below T/2."""
    return math.ceil(16 * math.log(n_cells) / threshold**2)
