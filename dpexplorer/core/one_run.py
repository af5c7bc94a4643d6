"""One-run auditing (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training run",
NeurIPS; arXiv:2305.08846) for the mechanisms whose output is a run: synthetic tables (MST, AIM,
MWEM, BLR) and transcripts (PMW). Issue 44, deliverable 2.

The game: m *canaries* (records of the public domain, each in a cell of its own when the domain
has room) are each put in the data independently with probability 1/2 (S_i = 1) or left out
(S_i = 0); the mechanism runs ONCE on D plus the canaries put in; the auditor scores each canary
from the output alone (here: how far the released counts or answers of the canary's cells sit
above their value on D without canaries, which the auditor knows), guesses "in" for the k
highest scores and "out" for the k lowest (r = 2k guesses, abstaining on the rest) and counts
the correct guesses v. Each canary is one neighbour step (add/remove one row), so if the
mechanism is (epsilon, delta)-DP for each of them (Steinke et al., Theorem 5.2, with its p-value
as in their paper's Algorithm / appendix code):

    P[V >= v] <= P[Binomial(r, q) >= v] + 2 m delta max_{1<=i<=v} P[v - i <= Binomial(r, q) < v] / i,
    q = e^epsilon / (1 + e^epsilon)

(the first term alone for pure DP, their Theorem 3.1). An epsilon at which this p-value is below
alpha is rejected at level alpha; :func:`one_run_epsilon` returns the largest rejected epsilon, a
LOWER confidence bound on the true epsilon (level 1 - alpha), by bisection. Several guess counts
k (:data:`GUESS_FRACTIONS` of the canaries, fixed in advance) are tried, Bonferroni-corrected.
Several independent runs with fresh canaries are one mechanism whose every canary is in one run
only, so their guesses pool (``runs``).

A bound from one run is weak (m canaries are m bits of evidence): it finds gross violations,
never proves privacy. :func:`one_run_audit` plays the game on the exploration (seeded noise, no
release): the window's Audit ε button on a synthetic-data or transcript mechanism. The replay
audit (:mod:`dpexplorer.release.replay`) plays it on the exact release path."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpexplorer.core.errors import InvalidParameterError, NotApplicableError
from dpexplorer.core.mechanisms.base import Mechanism, QueryInput, WorkloadInput

GUESS_FRACTIONS = (0.05, 0.1, 0.25, 0.5, 1.0)
"""The guess counts tried: k = this share of the canaries, half guessed in, half out."""
DEFAULT_CANARIES = 64


@dataclass(frozen=True)
class Canaries:
    """``cells[i]`` the canary's cell (per column for marginals: shape (m, columns); an index
    of the universe for a workload: shape (m, 1)); ``included[i]`` whether it was put in."""

    cells: np.ndarray
    included: np.ndarray

    @property
    def count(self) -> int:
        return int(self.included.size)


def draw_canaries(sizes: Sequence[int], m: int, rng: np.random.Generator) -> Canaries:
    """``m`` canaries on the domain of ``sizes`` cells per column: distinct cells while the
    domain has room (uniform without replacement), then again; each included with probability
    1/2, independently of where it is."""
    if m < 1:
        raise InvalidParameterError(f"the one-run audit needs at least one canary, not {m}")
    total = math.prod(int(s) for s in sizes)
    flat = np.concatenate([rng.permutation(total)[: m - k] for k in range(0, m, total)])
    cells = np.stack(np.unravel_index(flat, tuple(int(s) for s in sizes)), axis=1)
    return Canaries(cells, rng.random(m) < 0.5)


# ---------------------------------------------------------------- canaries in the inputs
def workload_with(query: WorkloadInput, canaries: Canaries) -> WorkloadInput:
    """``query`` with the included canaries added to their cells (D' moves with D)."""
    added = np.zeros_like(np.asarray(query.histogram_d))
    np.add.at(added, canaries.cells[canaries.included, 0], 1)
    return replace(
        query,
        histogram_d=np.asarray(query.histogram_d) + added,
        histogram_d_prime=np.asarray(query.histogram_d_prime) + added,
        n=query.n + int(canaries.included.sum()),
    )


def marginals_with(query: Any, canaries: Canaries) -> Any:
    """A :class:`~dpexplorer.core.marginals.MarginalInput` with the included canaries counted in
    every marginal (each canary a record of the domain)."""
    chosen = canaries.cells[canaries.included]
    counts = {}
    for clique, table in query.marginals_d.items():
        added = np.zeros(np.asarray(table).size, dtype=np.asarray(table).dtype)
        if chosen.size:
            index = np.ravel_multi_index(chosen[:, list(clique)].T, [query.sizes[i] for i in clique])
            np.add.at(added, index, 1)
        counts[clique] = np.asarray(table) + added
    return replace(query, marginals_d=counts, n=query.n + int(canaries.included.sum()))


def workload_scores(query: WorkloadInput, answers: np.ndarray, canaries: Canaries) -> np.ndarray:
    """Each canary's score from released answers (fractions of the rows, NaN for ⊥): the sum,
    over the queries counting its cell, of how far the answer is above the answer on D without
    canaries."""
    hist = np.asarray(query.histogram_d, dtype=float)
    workload = np.asarray(query.workload.toarray() if hasattr(query.workload, "toarray") else query.workload)
    truth = workload @ hist / max(float(hist.sum()), 1.0)
    excess = np.nan_to_num(np.asarray(answers, dtype=float) - truth, nan=0.0)
    return np.asarray(workload[:, canaries.cells[:, 0]].T @ excess, dtype=float)


def cell_scores(query: WorkloadInput, values: np.ndarray, canaries: Canaries) -> np.ndarray:
    """Each canary's score from a released synthetic histogram or distribution over the
    universe's cells (BLR, MWEM): its cell's share of the total, less that cell's share of D
    without canaries."""
    hist = np.asarray(query.histogram_d, dtype=float)
    released = np.nan_to_num(np.asarray(values, dtype=float), nan=0.0)
    share = released / max(float(released.sum()), 1e-300)
    return np.asarray((share - hist / max(float(hist.sum()), 1.0))[canaries.cells[:, 0]], dtype=float)


def released_scores(query: WorkloadInput, values: Sequence[Any], canaries: Canaries) -> np.ndarray:
    """The scores from a release's values over a workload: one per cell of the universe (a
    synthetic histogram: :func:`cell_scores`) or one per query (answers, ⊥ as NaN:
    :func:`workload_scores`)."""
    numbers = np.array([v if isinstance(v, int | float) else np.nan for v in values], dtype=float)
    if numbers.size == np.asarray(query.histogram_d).size and numbers.size != len(query.query_labels):
        return cell_scores(query, numbers, canaries)
    return workload_scores(query, numbers, canaries)


def marginal_scores(query: Any, measurements: Sequence[Any], canaries: Canaries) -> np.ndarray:
    """Each canary's score from noisy marginals (``clique``, ``values``, ``sigma2`` each): the
    sum over the measured marginals of the excess of its cell's noisy count over its count on D
    without canaries, weighted by 1 / sigma^2 (the Gaussian log-likelihood ratio's direction)."""
    out = np.zeros(canaries.count)
    for m in measurements:
        clique = tuple(m.clique)
        index = np.ravel_multi_index(canaries.cells[:, list(clique)].T, [query.sizes[i] for i in clique])
        excess = np.asarray(m.values, dtype=float) - np.asarray(query.marginals_d[clique], dtype=float)
        out += excess[index] / float(m.sigma2)
    return out


# ---------------------------------------------------------------- the bound
def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """P[at least v of r guesses right] under (epsilon, delta)-DP with m canaries, an upper
    bound (module docstring; Steinke, Nasr & Jagielski 2023, Theorem 5.2)."""
    from scipy import stats

    if not 0 <= v <= r <= m:
        raise InvalidParameterError("need 0 <= correct <= guesses <= canaries")
    q = 1 / (1 + math.exp(-epsilon))
    beta = float(stats.binom.sf(v - 1, r, q))
    if delta <= 0 or v == 0:
        return min(beta, 1.0)
    below = stats.binom.pmf(np.arange(v - 1, -1, -1), r, q)  # P[B = v - i], i = 1..v
    worst = float(np.max(np.cumsum(below) / np.arange(1, v + 1)))
    return min(beta + worst * delta * 2 * m, 1.0)


def one_run_epsilon(m: int, r: int, v: int, delta: float, alpha: float) -> float:
    """The largest epsilon rejected at level ``alpha`` by v correct guesses of r (m canaries):
    a lower confidence bound on epsilon (0 when none is rejected), to 1e-4."""
    if one_run_p_value(m, r, v, 0.0, delta) > alpha:
        return 0.0
    low, high = 0.0, 1.0
    while one_run_p_value(m, r, v, high, delta) <= alpha and high < 64:
        low, high = high, 2 * high
    while high - low > 1e-4:
        middle = (low + high) / 2
        low, high = (middle, high) if one_run_p_value(m, r, v, middle, delta) <= alpha else (low, middle)
    return low


@dataclass(frozen=True)
class OneRunBound:
    """``epsilon_lb`` a lower confidence bound on epsilon (level ``confidence``) from ``correct``
    right guesses of ``guesses`` among ``canaries`` canaries over ``runs`` runs."""

    epsilon_lb: float
    canaries: int
    guesses: int
    correct: int
    confidence: float
    delta: float
    runs: int = 1


def one_run_bound(
    score: np.ndarray, included: np.ndarray, delta: float, confidence: float = 0.95, runs: int = 1
) -> OneRunBound:
    """The bound from canaries' scores and whether each was put in (module docstring): for each
    guess count of :data:`GUESS_FRACTIONS`, "in" for the highest scores and "out" for the lowest
    (ties broken by the canaries' order, which does not depend on who is in), Bonferroni over
    the counts."""
    score, included = np.asarray(score, dtype=float), np.asarray(included, dtype=bool)
    m = score.size
    if m < 2:
        raise InvalidParameterError("the one-run audit needs at least two canaries")
    order = np.argsort(-score, kind="stable")
    counts = sorted({max(1, int(f * m) // 2) for f in GUESS_FRACTIONS})
    alpha = (1 - confidence) / len(counts)
    best = OneRunBound(0.0, m, 0, 0, confidence, delta, runs)
    for k in counts:
        right = int(included[order[:k]].sum()) + int((~included[order[-k:]]).sum())
        bound = one_run_epsilon(m, 2 * k, right, delta, alpha)
        if bound > best.epsilon_lb or best.guesses == 0:
            best = OneRunBound(bound, m, 2 * k, right, confidence, delta, runs)
    return best


# ---------------------------------------------------------------- the exploration's audit
def audits_in_one_run(mechanism: Mechanism, query: QueryInput) -> bool:
    """Whether :func:`one_run_audit` applies: a run on a workload or on marginals."""
    return (
        mechanism.output_kind in ("synthetic", "transcript")
        and (isinstance(query, WorkloadInput) or hasattr(query, "marginals_d"))
        and hasattr(mechanism, "one_run")
    )


def run_scores(
    mechanism: Mechanism,
    params: Mapping[str, Any],
    query: QueryInput,
    canaries: Canaries,
    rng: np.random.Generator,
) -> np.ndarray:
    """One exploration run (seeded noise) on ``query`` with ``canaries`` put in, and each
    canary's score. A marginal mechanism runs its DP steps only (the model fitted after them is
    post-processing of the measurements, which are scored)."""
    from dpexplorer.core.mechanisms.runs import NO_JOB

    if isinstance(query, WorkloadInput):
        result = mechanism.one_run(params, workload_with(query, canaries), rng, NO_JOB)  # type: ignore[attr-defined]
        answers = getattr(result, "answers", None)
        if answers is None:
            answers = result.synthetic_answers
        return workload_scores(query, answers, canaries)
    from dpexplorer.core.marginals import SeededSteps

    transcript = mechanism.steps(params, marginals_with(query, canaries), SeededSteps(rng))  # type: ignore[attr-defined]
    return marginal_scores(query, transcript.measurements, canaries)


def domain_sizes(query: QueryInput) -> tuple[int, ...]:
    """The canaries' domain: the universe's cells (a workload) or each column's cells."""
    if isinstance(query, WorkloadInput):
        return (int(np.asarray(query.histogram_d).size),)
    return tuple(query.sizes)  # type: ignore[union-attr]


def one_run_audit(
    mechanism: Mechanism,
    params: Mapping[str, Any],
    query: QueryInput,
    *,
    rng: np.random.Generator,
    canaries: int = DEFAULT_CANARIES,
    runs: int = 1,
    confidence: float = 0.95,
    job: Any = None,
) -> OneRunBound:
    """The one-run audit of ``mechanism`` at validated ``params`` on the exploration: ``runs``
    runs, each with ``canaries`` fresh canaries (module docstring), at the delta the mechanism
    claims. NotApplicableError for a mechanism that is not a run on a workload or marginals."""
    if not audits_in_one_run(mechanism, query):
        raise NotApplicableError(f"{mechanism.label} is audited by sampling its outputs, not in one run")
    _, delta = mechanism.epsilon_delta(params, query)
    scores, included = [], []
    for number in range(runs):
        if job is not None:
            job.checkpoint(number / runs)
        drawn = draw_canaries(domain_sizes(query), canaries, rng)
        scores.append(run_scores(mechanism, params, query, drawn, rng))
        included.append(drawn.included)
    return one_run_bound(np.concatenate(scores), np.concatenate(included), float(delta), confidence, runs)
