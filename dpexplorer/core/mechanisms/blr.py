"""BLR / the net mechanism (seeds 000 and 004; Blum, Ligett & Roth 2013; Dwork & Roth 2014,
Section 4.1): release a synthetic dataset of m rows over the universe of N cells, drawn by the
exponential mechanism over ALL multisets of size m (histograms h >= 0 with sum m) with utility
u(D, h) = -max_i |q_i(D) - q_i(h)| (queries as fractions), Delta_u = 1/n and sigma = 2/(n eps):
epsilon-DP (seed 000, Theorem 12.6).

No public n: the weight is exp(-(eps / 2) s(D, h)) with the score in counts
s(D, h) = max_i |c_i(D) - n(D) q_i(h)| = n(D) max_i |q_i(D) - q_i(h)|, q_i(h) = a_i / m in [0, 1].
Adding one row moves c_i by b_i in {0, 1} and n by 1, so each term moves by at most
|b_i - q_i(h)| <= 1, and so does the max: the exponential mechanism with sensitivity 1 (McSherry
& Talwar 2007; Dwork & Roth 2014, Theorem 3.10) is eps-DP under add/remove and replace, with the
private n inside the score and nowhere in a scale, grid or published field.

Sampling is exact and streaming: the C(N+m-1, m) candidates are enumerated block by block (a
meet-in-the-middle over two halves of the cells: every candidate is a left composition of s plus
a right composition of m - s), so nothing of size C(N+m-1, m) is held. Each block's log
normaliser gets one Gumbel variable (Gumbel-max over blocks picks a block with probability
proportional to its mass, exactly), then one candidate is drawn inside the winning block.
Errors are computed in integers, |n a_i - m c_i| / (n m), so ties are exact.

Accuracy (seed 000, Section 12.4, made concrete): some candidate has max error at most
gamma_m = sqrt(ln(2k) / (2m)) (Hoeffding and the union bound), so by the exponential
mechanism's tail bound, with probability >= 1 - beta the released error is below
gamma_m + (2 Delta_u / eps)(ln C(N+m-1, m) + ln(1/beta)) (upper bound)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar, Literal

import numpy as np
from scipy.special import logsumexp

from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.core.errors import DPExplorerError, NotApplicableError
from dpexplorer.core.mechanisms.base import (
    WORKLOAD_ERROR,
    AccuracyReport,
    NumericOutput,
    PureEpsilonMechanism,
    QueryInput,
    WorkloadInput,
)
from dpexplorer.core.mechanisms.exponential import error_quantile, selection_accuracy
from dpexplorer.core.mechanisms.params import EPSILON, Param, log_float, probability, whole_number
from dpexplorer.core.mechanisms.registry import register
from dpexplorer.core.mechanisms.runs import NO_JOB, Job, RunMechanism
from dpexplorer.core.mechanisms.sparse_vector import check_workload, normalised_answers

CHUNK = 1 << 20
"""Candidates per block."""
MAX_TABLE_ROWS = 4_000_000
"""Largest half-table (compositions over half of the cells) the enumeration builds."""
VIEW_LIMIT = 3e7
"""Largest candidate count for the exact views (one uncancellable pass, ~10 M candidates/s)."""
MWEM_HINT = (
    "MWEM (Hardt, Ligett & McSherry 2012) is the practical alternative for this workload; "
    "or lower m (raise the target accuracy α) or use fewer cells"
)

ALPHA = log_float(
    "alpha",
    "Target accuracy α",
    default=0.5,
    high=1.0,
    slider=(0.05, 1.0),
    help=(
        "Sets the synthetic dataset's size m = ⌈2 ln(2k)/α²⌉: a smaller α allows a more faithful "
        "synthetic dataset but the number of candidates (and the run time) explodes."
    ),
)
SIZE = whole_number(
    "m",
    "Synthetic rows m (0 = from α)",
    default=0,
    low=0,
    high=10_000,
    help="The number of rows of the synthetic dataset; 0 derives it from the target accuracy α.",
)
BETA = probability(
    "beta",
    "Failure probability β of the bound",
    default=0.05,
    slider=(1e-4, 0.5),
    help="The accuracy bound shown beside the measured error holds with probability 1 − β.",
)
MAX_CANDIDATES = log_float(
    "max_candidates",
    "Largest number of candidates",
    default=1e9,
    low=1.0,
    high=1e12,
    slider=(1e3, 1e12),
    help=(
        "BLR looks at every possible synthetic dataset. It refuses to start when there are more "
        "than this many (the estimated time is shown before starting)."
    ),
)


@dataclass(frozen=True, eq=False)
class BLRResult:
    """One release. ``synthetic_histogram`` has N cells summing to m; errors are fractions."""

    synthetic_histogram: np.ndarray
    synthetic_answers: np.ndarray
    true_answers: np.ndarray
    query_errors: np.ndarray
    max_error: float
    accuracy_bound: float
    beta: float
    m: int
    candidates: int
    seconds: float = 0.0


# ---------------------------------------------------------------- enumeration
def synthetic_size(params: Mapping[str, Any], k: int) -> int:
    """m as set, or ceil(2 ln(2k) / alpha^2) (seed 000, step 1 of BLR)."""
    if params["m"] > 0:
        return int(params["m"])
    return max(1, math.ceil(2 * math.log(2 * k) / params["alpha"] ** 2))


def multiset_count(n_cells: int, m: int) -> int:
    """C(N + m - 1, m): the number of multisets of size m over N cells (exact integer)."""
    return math.comb(n_cells + m - 1, m)


def _comp_count(t: int, s: int) -> int:
    if t == 0:
        return 1 if s == 0 else 0
    return math.comb(s + t - 1, t - 1)


def compositions(t: int, s: int, memo: dict[tuple[int, int], np.ndarray]) -> np.ndarray:
    """All (h_1..h_t) >= 0 with sum s, shape (C(s+t-1, t-1), t), in a fixed order."""
    if (t, s) in memo:
        return memo[(t, s)]
    if t == 0:
        out = np.zeros((1 if s == 0 else 0, 0), dtype=np.int32)
    elif t == 1:
        out = np.array([[s]], dtype=np.int32)
    else:
        parts = []
        for v in range(s + 1):
            rest = compositions(t - 1, s - v, memo)
            parts.append(np.hstack([np.full((rest.shape[0], 1), v, dtype=np.int32), rest]))
        out = np.vstack(parts)
    memo[(t, s)] = out
    return out


class _Enumeration:
    """Every multiset of size m over the cells as (left composition of s, right composition of
    m - s), enumerated in blocks of about ``chunk`` candidates."""

    def __init__(self, workload: np.ndarray, m: int, chunk: int | None = None) -> None:
        self.workload = np.asarray(workload, dtype=np.int64)
        self.m, self.chunk = m, CHUNK if chunk is None else chunk
        n_cells = self.workload.shape[1]
        self.t_left = n_cells // 2
        self.t_right = n_cells - self.t_left
        rows = max(_comp_count(self.t_left + 1, m), _comp_count(self.t_right + 1, m))
        if rows > MAX_TABLE_ROWS:
            raise DPExplorerError(
                f"this universe ({n_cells} cells, m = {m}) is too large for exact BLR; {MWEM_HINT}"
            )
        self._memo_left: dict[tuple[int, int], np.ndarray] = {}
        self._memo_right: dict[tuple[int, int], np.ndarray] = {}
        self._answers: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.total = multiset_count(n_cells, m)

    def halves(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """Compositions of s over the left cells and of m - s over the right cells."""
        return (
            compositions(self.t_left, s, self._memo_left),
            compositions(self.t_right, self.m - s, self._memo_right),
        )

    def answers(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """Query counts a = W h of the left and right halves (rows x k), memoised."""
        if s not in self._answers:
            left, right = self.halves(s)
            self._answers[s] = (
                left @ self.workload[:, : self.t_left].T,
                right @ self.workload[:, self.t_left :].T,
            )
        return self._answers[s]

    def histogram(self, block: tuple[int, slice, slice], i: int, j: int) -> np.ndarray:
        """The candidate of ``block`` made of its i-th left and j-th right composition."""
        s, rows, cols = block
        left, right = self.halves(s)
        return np.concatenate([left[rows][i], right[cols][j]]).astype(np.int64)

    def blocks(self) -> Iterator[tuple[int, slice, slice]]:
        """(s, left rows, right rows) covering every candidate exactly once."""
        for s in range(self.m + 1):
            n_left, n_right = _comp_count(self.t_left, s), _comp_count(self.t_right, self.m - s)
            if n_left == 0 or n_right == 0:
                continue
            step_right = min(n_right, self.chunk)
            step_left = max(1, self.chunk // step_right)
            for lo in range(0, n_left, step_left):
                for ro in range(0, n_right, step_right):
                    yield s, slice(lo, min(lo + step_left, n_left)), slice(ro, min(ro + step_right, n_right))


@dataclass(frozen=True)
class _Target:
    """The true answers of one dataset in integer form: errors are |n a - m c| / (n m)."""

    counts: np.ndarray
    n: int
    m: int

    def shift(self, left_answers: np.ndarray) -> np.ndarray:
        return (self.n * left_answers - self.m * self.counts[None, :]).astype(np.int64)


def _block_errors(enum: _Enumeration, target: _Target, block: tuple[int, slice, slice]) -> np.ndarray:
    """The integer error numerators |n a - m c|_inf of a block's candidates (rows x cols)."""
    s, rows, cols = block
    left, right = enum.answers(s)
    return _max_abs(target.shift(left[rows]), target.n * right[cols])


def _max_abs(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """max_i |left[:, i] + right[:, i]| over all pairs (rows of left x rows of right)."""
    dtype = np.int32 if max(np.abs(left).max(initial=0), np.abs(right).max(initial=0)) < 2**30 else np.int64
    left, right = left.astype(dtype), right.astype(dtype)
    acc = np.zeros((left.shape[0], right.shape[0]), dtype=dtype)
    work = np.empty_like(acc)
    for i in range(left.shape[1]):
        np.add(left[:, i, None], right[None, :, i], out=work)
        np.abs(work, out=work)
        np.maximum(acc, work, out=acc)
    return acc


def _target(query: WorkloadInput, on: Literal["D", "D'"], m: int) -> _Target:
    hist = np.asarray(query.histogram_d if on == "D" else query.histogram_d_prime, dtype=np.int64)
    return _Target(np.asarray(query.workload, dtype=np.int64) @ hist, int(hist.sum()), m)


def _coefficient(epsilon: float, query: WorkloadInput, target: _Target) -> float:
    """log weight = -coefficient * max_i |n a_i - m c_i| = -(eps / 2) s(h), with the score in
    counts s(h) = max_i |c_i - n a_i / m| on the side's OWN rows n (module docstring, "No
    public n"): it moves by at most 1 when one row is added or removed."""
    return epsilon / (2.0 * target.m)


# ---------------------------------------------------------------- exact class histogram
def error_classes(query: WorkloadInput, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Over ALL candidates: the distinct pairs (v_D, v_D') of integer error numerators
    (error on D is v_D / (n_D m), on D' v_D' / (n_D' m)) with their candidate counts.
    Exact; one streaming pass. Everything BLR's views need follows from it."""
    enum = _Enumeration(query.workload, m)
    t_d, t_dp = _target(query, "D", m), _target(query, "D'", m)
    radix = t_dp.n * m + 1  # v_D' <= n_D' m, so (v_D, v_D') <-> v_D * radix + v_D'
    codes, counts = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    for block in enum.blocks():
        checkpoint(None)  # the compute service's token (core.cancel.ambient): Esc stops the pass
        v_d = _block_errors(enum, t_d, block).astype(np.int64)
        v_dp = _block_errors(enum, t_dp, block).astype(np.int64)
        block_codes, block_counts = np.unique((v_d * radix + v_dp).ravel(), return_counts=True)
        merged, inverse = np.unique(np.concatenate([codes, block_codes]), return_inverse=True)
        counts = np.bincount(inverse, weights=np.concatenate([counts, block_counts]), minlength=merged.size)
        codes, counts = merged, counts.astype(np.int64)
    return codes // radix, codes % radix, counts.astype(float)


def class_log_weights(
    epsilon: float,
    query: WorkloadInput,
    m: int,
    classes: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per class: the D-error value, its candidate count, and the log probability of the WHOLE
    class on D and on D' (exact, normalised)."""
    v_d, v_dp, counts = error_classes(query, m) if classes is None else classes
    t_d, t_dp = _target(query, "D", m), _target(query, "D'", m)
    log_d = np.log(counts) - _coefficient(epsilon, query, t_d) * v_d
    log_dp = np.log(counts) - _coefficient(epsilon, query, t_dp) * v_dp
    return v_d / (t_d.n * m), counts, log_d - logsumexp(log_d), log_dp - logsumexp(log_dp)


# ---------------------------------------------------------------- error levels (exact release)
class ErrorLevels:
    """BLR's candidates on D grouped by their integer error numerator
    v(h) = max_i |n_D a_i(h) - m c_i| (the error is v / (n_D m)): every candidate of a level has
    the same exponential-mechanism weight exp(-exponent(epsilon) v), so an exact sampler can
    pick a level, then a candidate uniformly inside it. Raises DPExplorerError when the universe
    is too large to enumerate. Each method is one streaming pass over every candidate."""

    def __init__(self, query: WorkloadInput, m: int) -> None:
        self._enum = _Enumeration(query.workload, m)
        self._target = _target(query, "D", m)
        self.total = self._enum.total

    def exponent(self, epsilon: float) -> Fraction:
        """The rational c with log weight -c v, exactly: epsilon / (2 m), v = m s(h) the score in
        counts times m (module docstring, "No public n"); n enters only through the score."""
        return Fraction(epsilon) / (2 * self._target.m)

    def counts(
        self, *, cancel: CancelToken | None = None, progress: ProgressFn | None = None
    ) -> dict[int, int]:
        """{level v: number of candidates at v} over ALL candidates, exact integers, by level."""
        counts: dict[int, int] = {}
        for _, v in self._scan(cancel, progress):
            levels, numbers = np.unique(v, return_counts=True)
            for level, number in zip(levels.tolist(), numbers.tolist(), strict=True):
                counts[level] = counts.get(level, 0) + number
        return dict(sorted(counts.items()))

    def candidate(
        self,
        level: int,
        index: int,
        *,
        cancel: CancelToken | None = None,
        progress: ProgressFn | None = None,
    ) -> np.ndarray:
        """The ``index``-th (from 0, in enumeration order) candidate histogram at ``level``."""
        for block, v in self._scan(cancel, progress):
            hits = np.flatnonzero(v.ravel() == level)
            if index < hits.size:
                return self._enum.histogram(block, *divmod(int(hits[index]), v.shape[1]))
            index -= hits.size
        raise ValueError(f"fewer candidates than asked for at error level {level}")

    def _scan(
        self, cancel: CancelToken | None, progress: ProgressFn | None
    ) -> Iterator[tuple[tuple[int, slice, slice], np.ndarray]]:
        done = 0
        for block in self._enum.blocks():
            checkpoint(cancel, progress, done / self.total)
            v = _block_errors(self._enum, self._target, block)
            yield block, v
            done += v.size
        checkpoint(cancel, progress, 1.0)


# ---------------------------------------------------------------- streaming sampler
def _block_lse(enum: _Enumeration, target: _Target, coef: float, block: tuple[int, slice, slice]) -> float:
    v = _block_errors(enum, target, block)
    low = int(v.min())
    return -coef * low + float(np.log(np.exp(-coef * (v - low)).sum()))


def stream_sample(
    enum: _Enumeration,
    target: _Target,
    coef: float,
    rng: np.random.Generator,
    job: Job = NO_JOB,
    *,
    workers: int = 2,
) -> np.ndarray:
    """One exact draw of a histogram h with P(h) proportional to exp(-coef |n a(h) - m c|_inf):
    Gumbel-max over the blocks' log masses (blocks computed on ``workers`` threads, noise drawn
    in block order so the result depends only on ``rng``), then inverse CDF inside the winner."""
    blocks = list(enum.blocks())
    # Each block's left/right tables are built before the threads start (memo is not thread-safe).
    for s in sorted({b[0] for b in blocks}):
        enum.answers(s)
    best_key, best = -np.inf, blocks[0]
    done = 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for start in range(0, len(blocks), 4 * workers):
            job.checkpoint(done / enum.total)
            batch = blocks[start : start + 4 * workers]
            for block, lse in zip(
                batch, pool.map(lambda b: _block_lse(enum, target, coef, b), batch), strict=True
            ):
                key = lse + rng.gumbel()
                if key > best_key:
                    best_key, best = key, block
                done += (block[1].stop - block[1].start) * (block[2].stop - block[2].start)
    job.checkpoint(1.0)
    return _draw_in_block(enum, target, coef, best, rng)


def _draw_in_block(
    enum: _Enumeration,
    target: _Target,
    coef: float,
    block: tuple[int, slice, slice],
    rng: np.random.Generator,
) -> np.ndarray:
    v = _block_errors(enum, target, block)
    weights = np.exp(-coef * (v - v.min())).ravel()
    cumulative = np.cumsum(weights)
    flat = min(
        int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right")), weights.size - 1
    )
    return enum.histogram(block, *divmod(flat, v.shape[1]))


def all_multisets(n_cells: int, m: int) -> np.ndarray:
    """Every histogram of size m over n_cells in the sampler's enumeration order (small cases;
    for tests and views)."""
    enum = _Enumeration(np.zeros((1, n_cells), dtype=np.int64), m)
    out = [
        np.hstack(
            [
                enum.halves(s)[0][rows].repeat(cols.stop - cols.start, axis=0),
                np.tile(enum.halves(s)[1][cols], (rows.stop - rows.start, 1)),
            ]
        )
        for s, rows, cols in enum.blocks()
    ]
    return np.vstack(out)


# ---------------------------------------------------------------- rate estimate
@lru_cache(maxsize=1)
def _measured_rate() -> float:
    """Candidates x queries per second, measured once per process on a small synthetic
    instance (a machine constant, cached)."""
    rng = np.random.default_rng(0)
    workload = (rng.random((8, 12)) < 0.5).astype(np.int64)
    enum = _Enumeration(workload, 8, chunk=1 << 16)
    target = _Target(workload @ np.full(12, 10), 120, 8)
    start = time.perf_counter()
    for block in list(enum.blocks())[:8]:
        _block_lse(enum, target, 1.0, block)
    seconds = max(time.perf_counter() - start, 1e-6)
    sizes = sum((b[1].stop - b[1].start) * (b[2].stop - b[2].start) for b in list(enum.blocks())[:8])
    return sizes * 8 / seconds


# ---------------------------------------------------------------- the mechanism
@register
class BLR(RunMechanism[BLRResult], PureEpsilonMechanism):
    """The BLR / net mechanism: exact exponential mechanism over all synthetic datasets of size
    m; pure epsilon-DP (exact claim, seed 000 Theorem 12.6)."""

    name: ClassVar[str] = "blr"
    label: ClassVar[str] = "BLR synthetic data (net mechanism)"
    summary: ClassVar[str] = (
        "Releases a small synthetic dataset chosen among all possible ones, favouring those that "
        "answer the workload like the real data."
    )
    input_type: ClassVar[type] = WorkloadInput
    output_kind: ClassVar[Literal["synthetic"]] = "synthetic"
    params: ClassVar[tuple[Param, ...]] = (EPSILON, ALPHA, SIZE, BETA, MAX_CANDIDATES)
    order: ClassVar[int] = 60

    def _m(self, params: Mapping[str, Any], query: QueryInput) -> int:
        assert isinstance(query, WorkloadInput)
        check_workload(query)
        return synthetic_size(params, query.workload.shape[0])

    def candidate_count(self, params: Mapping[str, Any], query: QueryInput) -> int:
        """C(N + m - 1, m), exact."""
        assert isinstance(query, WorkloadInput)
        return multiset_count(len(query.histogram_d), self._m(params, query))

    def estimate_seconds(self, params: Mapping[str, Any], query: QueryInput) -> float:
        """Estimated run time: candidates x queries / the rate measured once on this machine on
        one thread (an overestimate when both worker threads get a core)."""
        assert isinstance(query, WorkloadInput)
        return self.candidate_count(params, query) * query.workload.shape[0] / _measured_rate()

    def check_size(self, params: Mapping[str, Any], query: QueryInput) -> int:
        """m; DPExplorerError when there are more candidates than ``max_candidates``."""
        count = self.candidate_count(params, query)
        if count > params["max_candidates"]:
            raise DPExplorerError(
                f"BLR would have to score {count:,} candidate synthetic datasets (about "
                f"{self.estimate_seconds(params, query):,.0f} s), more than the limit of "
                f"{params['max_candidates']:,.0f}; {MWEM_HINT}"
            )
        return self._m(params, query)

    def _check_view_size(self, params: Mapping[str, Any], query: QueryInput) -> int:
        """m, after checking that the exact views' single pass over the candidates is short."""
        m = self.check_size(params, query)
        count = self.candidate_count(params, query)
        if count > VIEW_LIMIT:
            raise NotApplicableError(
                f"the exact error distribution is computed for at most {VIEW_LIMIT:,.0f} candidates "
                f"({count:,} here); a release (run) still works, or lower m"
            )
        return m

    def accuracy_bound(self, params: Mapping[str, Any], query: QueryInput, beta: float) -> float:
        """gamma_m + (2 / (n eps)) (ln C(N+m-1, m) + ln(1/beta)): with probability >= 1 - beta
        the released max error is below this (upper bound; see the module docstring)."""
        assert isinstance(query, WorkloadInput)
        m = self._m(params, query)
        gamma = math.sqrt(math.log(2 * query.workload.shape[0]) / (2 * m))
        log_count = math.log(self.candidate_count(params, query))
        return gamma + 2.0 / (query.n * params["epsilon"]) * (log_count + math.log(1 / beta))

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> NumericOutput:
        """Exact distribution of the released dataset's max workload error against D's true
        answers, when run on D and on D' (a post-processing, so its loss is within epsilon)."""
        assert isinstance(query, WorkloadInput)
        m = self._check_view_size(params, query)
        values, _, log_d, log_dp = class_log_weights(params["epsilon"], query, m)
        grid = np.unique(values)
        index = np.searchsorted(grid, values)
        pmf_d = np.bincount(index, weights=np.exp(log_d), minlength=grid.size)
        pmf_dp = np.bincount(index, weights=np.exp(log_dp), minlength=grid.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            loss = np.log(pmf_d) - np.log(pmf_dp)
        note = f"exact over all {self.candidate_count(params, query):,} candidates (m = {m})"
        return NumericOutput(grid, pmf_d, pmf_dp, loss, discrete=True, note=note, quantity=WORKLOAD_ERROR)

    def delta_at(self, params: Mapping[str, Any], query: QueryInput, epsilon: float) -> float:
        """Exact hockey-stick divergence between the output distributions over synthetic
        datasets (every candidate in a class has the same pair of probabilities)."""
        assert isinstance(query, WorkloadInput)
        m = self._check_view_size(params, query)
        _, counts, log_d, log_dp = class_log_weights(params["epsilon"], query, m)
        per_d, per_dp = np.exp(log_d) / counts, np.exp(log_dp) / counts
        forward = (counts * np.clip(per_d - np.exp(epsilon) * per_dp, 0, None)).sum()
        backward = (counts * np.clip(per_dp - np.exp(epsilon) * per_d, 0, None)).sum()
        return float(max(forward, backward))

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        """Exact tail of the released max error on D beside the bound of
        :meth:`accuracy_bound`, and both against epsilon."""
        assert isinstance(query, WorkloadInput)
        m = self._check_view_size(params, query)
        classes = error_classes(query, m)  # one pass, reused across the epsilon sweep
        values, _, log_d, _ = class_log_weights(params["epsilon"], query, m, classes)
        log_count = math.log(self.candidate_count(params, query))
        gamma = self.accuracy_bound(params, query, 1.0) - 2.0 / (query.n * params["epsilon"]) * log_count

        def tail_bound(alphas: np.ndarray) -> np.ndarray:
            excess = np.clip(np.asarray(alphas) - gamma, 0, None)
            return np.minimum(1.0, np.exp(log_count - excess * query.n * params["epsilon"] / 2))

        def quantile_at(eps: float) -> float:
            return error_quantile(np.exp(class_log_weights(eps, query, m, classes)[2]), values, ci_level)

        return selection_accuracy(
            np.exp(log_d),
            values,
            ci_level=ci_level,
            quantile_at=quantile_at,
            tail_bound=tail_bound,
            bound_alpha_at=lambda e: self.accuracy_bound({**params, "epsilon": e}, query, 1 - ci_level),
            bound_name="γ_m + (2/(nε))(ln|R| + ln(1/β))",
            notes=("error = max over the workload of |q_i(D) − q_i(synthetic)|, exact",),
            x_label="α (max error, share of rows)",  # as PMW and MWEM: the same quantity
        )

    def simulate(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        """``size`` draws of the released dataset's max error against D's answers (exact in
        law, drawn from the exact class distribution, not by ``size`` streaming passes)."""
        assert isinstance(query, WorkloadInput)
        m = self._check_view_size(params, query)
        values, _, log_d, log_dp = class_log_weights(params["epsilon"], query, m)
        pmf = np.exp(log_d if on == "D" else log_dp)
        return values[rng.choice(values.size, size=size, p=pmf / pmf.sum())]

    def one_run(
        self, params: Mapping[str, Any], query: QueryInput, rng: np.random.Generator, job: Job
    ) -> BLRResult:
        """One release by the streaming exact sampler, with its errors and the seed's bound."""
        assert isinstance(query, WorkloadInput)
        m = self.check_size(params, query)
        enum = _Enumeration(query.workload, m)
        target = _target(query, "D", m)
        coef = _coefficient(params["epsilon"], query, target)
        hist = stream_sample(enum, target, coef, rng, job)
        synthetic = normalised_answers(query.workload, hist)
        truth = normalised_answers(query.workload, query.histogram_d)
        errors = np.abs(synthetic - truth)
        bound = self.accuracy_bound(params, query, params["beta"])
        return BLRResult(
            hist, synthetic, truth, errors, float(errors.max()), bound, params["beta"], m, enum.total
        )
