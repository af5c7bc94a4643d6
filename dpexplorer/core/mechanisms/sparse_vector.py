"""Sparse vector: report which queries of a stream are above a threshold, stopping after c "⊤".

Dwork & Roth 2014, Algorithm 2 ("Sparse", built from AboveThreshold, Algorithm 1): the
threshold is perturbed, T_hat = T + Lap(2 c Delta / epsilon); query i is answered "⊤" when
q_i + Lap(4 c Delta / epsilon) >= T_hat, else "⊥"; after each "⊤" a fresh threshold noise is
drawn; after c "⊤" the mechanism halts. epsilon-DP (Theorems 3.23 and 3.25). With c = 1 this is
AboveThreshold. Queries are the workload's counting queries as shares of a denominator: the
public n under replace, a noisy row count n_hat bought with a share of epsilon under add/remove,
where n is private (:mod:`dpexplorer.core.row_count`); Delta = 1 / denominator, and the rest of
epsilon goes to the comparisons. The exact views condition on n_hat = n (D's size).

The output is the set of positions answered "⊤". Its exact pmf is a product over segments
(each segment restarts with fresh threshold noise), each segment probability a one-dimensional
integral over the noisy threshold computed by adaptive Gauss-Kronrod quadrature, vectorised over
its nodes (:mod:`dpexplorer.core.quadrature`; numerical, rel. ~1e-9)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from dpexplorer.core.errors import InvalidParameterError, NotApplicableError
from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    CategoricalOutput,
    QueryInput,
    WorkloadInput,
)
from dpexplorer.core.mechanisms.exponential import (
    CategoricalPureMechanism,
    categorical_output,
    error_quantile,
    selection_accuracy,
)
from dpexplorer.core.mechanisms.noisy_max import _laplace_logcdf
from dpexplorer.core.mechanisms.params import EPSILON, Param, number, whole_number
from dpexplorer.core.mechanisms.registry import register
from dpexplorer.core.quadrature import log_integrals
from dpexplorer.core.row_count import COUNT_SHARE, denominator_note, noisy_row_counts, split_epsilon

MAX_EXACT_QUERIES = 12
"""Beyond this the quadrature (one vector integral per query and epsilon) takes tens of seconds:
the views would freeze the explorer; the transcript view still runs any workload."""
MAX_OUTCOMES = 20_000
TOP, BOTTOM, HALTED = "⊤", "⊥", "—"

THRESHOLD = number(
    "threshold",
    "Threshold (share of rows)",
    default=0.1,
    low=0.0,
    high=1.0,
    help=(
        "The mechanism reports which queries count more than this share of the rows. Only the "
        "above/below answers are released, not the counts."
    ),
)

MAX_POSITIVES = whole_number(
    "c",
    "c (stop after this many ⊤)",
    default=1,
    low=1,
    high=100,
    help=(
        "The mechanism stops after this many queries were found above the threshold. The "
        "budget is split over them: a larger c means more noise on every comparison."
    ),
)


@dataclass(frozen=True, eq=False)
class SVTTranscript:
    """One run: for each query its response (⊤, ⊥, or — once halted) and its true answer."""

    query_labels: tuple[str, ...]
    responses: tuple[str, ...]
    true_answers: np.ndarray
    threshold: float
    positives: int


def normalised_answers(workload: np.ndarray, histogram: np.ndarray, denominator: Any = None) -> np.ndarray:
    """q_i = (W h)_i / denominator: the counting queries as shares of the (public or noisy) row
    count (:mod:`dpexplorer.core.row_count`); by default of the histogram's own total (for
    views on one side only, never for noise)."""
    hist = np.asarray(histogram, dtype=float)
    total = max(hist.sum(), 1.0) if denominator is None else denominator
    return np.asarray(workload @ hist, dtype=float) / total


def check_workload(query: WorkloadInput) -> None:
    """Raise :class:`InvalidParameterError` unless the workload and histograms fit together."""
    w = query.workload
    n_cells = len(query.histogram_d)
    if w.ndim != 2 or w.shape[1] != n_cells or len(query.histogram_d_prime) != n_cells or w.shape[0] == 0:
        raise InvalidParameterError(
            f"the workload must be a (k, N) matrix over the {n_cells} cells, with k >= 1; got "
            f"shape {w.shape}; rebuild the query"
        )


def _outcome_sets(k: int, c: int) -> list[tuple[int, ...]]:
    count = sum(math.comb(k, j) for j in range(min(c, k) + 1))
    if k > MAX_EXACT_QUERIES or count > MAX_OUTCOMES:
        raise NotApplicableError(
            f"the exact distribution covers at most {MAX_EXACT_QUERIES} queries and "
            f"{MAX_OUTCOMES:,} outcomes ({k} queries, {count:,} outcomes here); use fewer queries "
            "or a smaller c, or simulate"
        )
    return [s for j in range(min(c, k) + 1) for s in itertools.combinations(range(k), j)]


def _codes(sets: list[tuple[int, ...]]) -> np.ndarray:
    return np.array([sum(1 << i for i in s) for s in sets], dtype=np.int64)


def segment_log_probs(
    answers: np.ndarray, threshold: float, rho_scale: float, nu_scale: float, c: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """With a fresh threshold noise at query s: ``top[s, i]`` = ln P(first ⊤ at query i >= s) and
    ``none[s]`` = ln P(no ⊤ in queries s..k-1) (``none[k]`` = 0). Numerical quadrature over the
    noisy threshold x: int f_rho(x - T) prod_{s<=j<i} F_nu(x - q_j) (1 - F_nu(x - q_i)) dx, all
    i of one s in one vector integral. With c = 1 only s = 0 is ever needed (the others stay
    -inf / 0). The integrals by :func:`dpexplorer.core.quadrature.log_integrals` (numerical,
    relative error ~1e-9)."""
    a = np.asarray(answers, dtype=float)
    k = a.size
    top = np.full((k, k), -np.inf)
    none = np.zeros(k + 1)
    breaks = np.concatenate([a, [threshold]])
    scale = max(rho_scale, nu_scale)
    slope = 1 / rho_scale + (k + 1) / nu_scale  # each Laplace cdf's log changes at most 1/nu
    for s in range(1 if c == 1 else k):

        def log_f(x: np.ndarray, s: int = s) -> np.ndarray:
            x = np.asarray(x, dtype=float)[:, None]
            below = _laplace_logcdf(x - a[None, s:], nu_scale)
            prefix = np.concatenate([np.zeros((x.shape[0], 1)), np.cumsum(below, axis=1)], axis=1)
            above = np.concatenate(
                [_laplace_logcdf(a[None, s:] - x, nu_scale), np.zeros((x.shape[0], 1))], axis=1
            )
            density = -np.abs(x - threshold) / rho_scale - np.log(2 * rho_scale)
            return density + prefix + above

        values = log_integrals(log_f, breaks, scale, slope)
        top[s, s:] = values[:-1]
        none[s] = values[-1]
    return top, none


def outcome_log_pmf(sets: list[tuple[int, ...]], top: np.ndarray, none: np.ndarray, c: int) -> np.ndarray:
    """ln P(exactly these positions are ⊤): the product of the segments' probabilities, and the
    probability of no further ⊤ when fewer than c were found."""
    out = np.empty(len(sets))
    for index, positions in enumerate(sets):
        start, total = 0, 0.0
        for i in positions:
            total += top[start, i]
            start = i + 1
        out[index] = total + (none[start] if len(positions) < c else 0.0)
    return out


def outcome_errors(sets: list[tuple[int, ...]], answers: np.ndarray, threshold: float, c: int) -> np.ndarray:
    """Per outcome, the smallest alpha for which it is not alpha-accurate (Dwork & Roth 2014,
    Definition 3.9): max over ⊤ of T - q_i and over the ⊥ answered before halting of q_i - T,
    floored at 0."""
    a = np.asarray(answers, dtype=float)
    errors = np.zeros(len(sets))
    for index, positions in enumerate(sets):
        last = positions[-1] if len(positions) == c else a.size - 1
        answered = np.zeros(a.size, dtype=bool)
        answered[: last + 1] = True
        is_top = np.zeros(a.size, dtype=bool)
        is_top[list(positions)] = True
        parts = [threshold - a[is_top], a[answered & ~is_top] - threshold, np.zeros(1)]
        errors[index] = max(float(np.max(p)) if len(p) else 0.0 for p in parts)
    return errors


@register
class SparseVector(CategoricalPureMechanism):
    """Sparse / AboveThreshold (Dwork & Roth 2014, Algorithms 1-2): pure epsilon-DP, exact claim."""

    name: ClassVar[str] = "sparse_vector"
    label: ClassVar[str] = "Sparse vector (AboveThreshold)"
    summary: ClassVar[str] = (
        "Goes through many queries and only says which exceed a threshold, paying only for the ones that do."
    )
    input_type: ClassVar[type] = WorkloadInput
    output_kind: ClassVar[Literal["categorical"]] = "categorical"
    params: ClassVar[tuple[Param, ...]] = (EPSILON, THRESHOLD, MAX_POSITIVES, COUNT_SHARE)
    order: ClassVar[int] = 43
    refresh_threshold: ClassVar[bool] = True
    """Draw a fresh threshold noise after each ⊤ (Algorithm 2)."""

    def noise_scales(
        self, params: Mapping[str, Any], query: QueryInput, denominator: float | np.ndarray
    ) -> tuple[Any, Any]:
        """(threshold noise scale, query noise scale) = (2 c Delta / eps', 4 c Delta / eps') with
        Delta = 1 / denominator and eps' the epsilon left after the row count."""
        per_run = split_epsilon(params, query.relation)[1] / params["c"]
        delta_q = 1.0 / np.asarray(denominator, dtype=float)
        return 2 * delta_q / per_run, 4 * delta_q / per_run

    def _answers(self, query: QueryInput, on: Literal["D", "D'"], denominator: Any = None) -> np.ndarray:
        """Shares of ``denominator`` (default D's size, the value the exact views condition on)."""
        assert isinstance(query, WorkloadInput)
        check_workload(query)
        hist = query.histogram_d if on == "D" else query.histogram_d_prime
        return normalised_answers(query.workload, hist, query.n if denominator is None else denominator)

    def outcome_sets(self, params: Mapping[str, Any], query: QueryInput) -> list[tuple[int, ...]]:
        """The outcomes in index order: the tuples of positions answered ⊤."""
        assert isinstance(query, WorkloadInput)
        return _outcome_sets(query.workload.shape[0], params["c"])

    def _log_pmf(self, params: Mapping[str, Any], query: QueryInput, on: Literal["D", "D'"]) -> np.ndarray:
        assert isinstance(query, WorkloadInput)
        sets = self.outcome_sets(params, query)
        rho, nu = self.noise_scales(params, query, query.n)
        top, none = segment_log_probs(self._answers(query, on), params["threshold"], rho, nu, params["c"])
        return outcome_log_pmf(sets, top, none, params["c"])

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> CategoricalOutput:
        assert isinstance(query, WorkloadInput)
        sets = self.outcome_sets(params, query)
        labels = tuple(
            (TOP + " at " + ", ".join(query.query_labels[i] for i in s)) if s else "no " + TOP for s in sets
        )
        note = (
            "numerical quadrature over the noisy threshold (Dwork & Roth 2014, Algorithm 2), "
            + denominator_note(query.relation, query.n, float(np.sum(query.histogram_d_prime)))
        )
        return categorical_output(
            labels, self._log_pmf(params, query, "D"), self._log_pmf(params, query, "D'"), note
        )

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        """Exact tail of the outcome's error (see :func:`outcome_errors`) beside the bound: the
        outcome is alpha-accurate unless one of at most c threshold noises or k query noises
        exceeds alpha / 2 in magnitude, so P(error >= alpha) <= c e^(-alpha/(2 b_T)) +
        k e^(-alpha/(2 b_q)) (union bound; cf. Dwork & Roth 2014, Theorems 3.24 and 3.26)."""
        assert isinstance(query, WorkloadInput)
        sets = self.outcome_sets(params, query)
        errors = outcome_errors(sets, self._answers(query, "D"), params["threshold"], params["c"])
        k, c, beta = query.workload.shape[0], params["c"], 1.0 - ci_level

        def tail_at(eps: float, alphas: np.ndarray) -> np.ndarray:
            rho, nu = self.noise_scales({**params, "epsilon": eps}, query, query.n)
            return np.minimum(1.0, c * np.exp(-alphas / (2 * rho)) + k * np.exp(-alphas / (2 * nu)))

        def bound_alpha_at(eps: float) -> float:
            scales = self.noise_scales({**params, "epsilon": eps}, query, query.n)
            grid = np.linspace(0, 1, 20001) * 80 * max(scales)
            return float(grid[np.argmax(tail_at(eps, grid) <= beta)])

        def quantile_at(eps: float) -> float:
            pmf = np.exp(self._log_pmf({**params, "epsilon": eps}, query, "D"))
            return error_quantile(pmf, errors, ci_level)

        return selection_accuracy(
            np.exp(self._log_pmf(params, query, "D")),
            errors,
            ci_level=ci_level,
            quantile_at=quantile_at,
            tail_bound=lambda a: tail_at(params["epsilon"], np.asarray(a)),
            bound_alpha_at=bound_alpha_at,
            bound_name="union bound over the noises",
            notes=("error = largest distance to the threshold on the wrong side (fraction of n)",),
            sweep=np.geomspace(0.05, 10.0, 5),
            x_label="α (share of rows)",
        )

    def simulate(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        """Outcome indices (as in :meth:`output_distribution`), from literal runs."""
        sets = self.outcome_sets(params, query)
        codes = _codes(sets)
        order = np.argsort(codes)
        drawn = self.run_codes(params, query, rng, size, on)
        return order[np.searchsorted(codes[order], drawn)].astype(np.int64)

    def run_codes(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        """``size`` independent runs, vectorised; each as a bitmask of the ⊤ positions
        (bit i set when query i was answered ⊤). Needs k <= 62 queries. Each run draws its own
        denominator from the side's own row count, as a release does."""
        denominators = self._denominators(params, query, rng, size, on)
        return _svt_runs(
            self._answers(query, on, denominators[:, None]),
            params,
            self.noise_scales(params, query, denominators),
            self.refresh_threshold,
            rng,
            size,
        )[0]

    def _denominators(
        self, params: Mapping[str, Any], query: QueryInput, rng: np.random.Generator, size: int, on: str
    ) -> np.ndarray:
        assert isinstance(query, WorkloadInput)
        rows = float(np.sum(query.histogram_d if on == "D" else query.histogram_d_prime))
        return noisy_row_counts(rows, params, query.relation, rng, size)

    def run(self, params: Mapping[str, Any], query: QueryInput, rng: np.random.Generator) -> SVTTranscript:
        """One run with its transcript (any number of queries)."""
        assert isinstance(query, WorkloadInput)
        denominators = self._denominators(params, query, rng, 1, "D")
        _, responses = _svt_runs(
            self._answers(query, "D", denominators[:, None]),
            params,
            self.noise_scales(params, query, denominators),
            self.refresh_threshold,
            rng,
            1,
            transcript=True,
        )
        answers = self._answers(query, "D")
        labels = tuple(responses[0])
        return SVTTranscript(
            query.query_labels, labels, answers, float(params["threshold"]), labels.count(TOP)
        )


def _svt_runs(
    answers: np.ndarray,
    params: Mapping[str, Any],
    scales: tuple[Any, Any],
    refresh: bool,
    rng: np.random.Generator,
    size: int,
    transcript: bool = False,
) -> tuple[np.ndarray, list[list[str]]]:
    """Literal runs of Algorithm 2, vectorised over runs: bitmask codes, and the responses when
    ``transcript`` is set. ``answers`` has shape (k,) or (size, k) and the scales are scalars or
    of shape (size,) (one denominator per run)."""
    rho_scale, nu_scale = (np.broadcast_to(np.asarray(s, dtype=float), (size,)) for s in scales)
    answers = np.broadcast_to(np.asarray(answers, dtype=float), (size, np.shape(answers)[-1]))
    c, k = params["c"], answers.shape[1]
    noisy_threshold = params["threshold"] + rng.laplace(scale=rho_scale, size=size)
    positives = np.zeros(size, dtype=np.int64)
    codes = np.zeros(size, dtype=np.int64)
    responses: list[list[str]] = [[] for _ in range(size)] if transcript else []
    for i in range(k):
        active = positives < c
        top = active & (answers[:, i] + rng.laplace(scale=nu_scale, size=size) >= noisy_threshold)
        if i < 62:
            codes[top] |= np.int64(1) << np.int64(i)
        positives += top
        if refresh and top.any():
            noisy_threshold[top] = params["threshold"] + rng.laplace(scale=rho_scale[top])
        for run, record in enumerate(responses):
            record.append(TOP if top[run] else (BOTTOM if active[run] else HALTED))
    return codes, responses
