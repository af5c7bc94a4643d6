"""Black-box auditing: an empirical LOWER confidence bound on the epsilon of a mechanism.

Given samplers for M(D) and M(D'), :func:`audit` draws ``n_draws`` outputs of each, uses the first
half of the draws to choose a few candidate events S (intervals of numeric outputs, possibly
together with "⊥"; or sets of categorical outcomes), and estimates P[M(D) in S] and P[M(D') in S]
on the held-out second half with exact Clopper-Pearson intervals (``scipy.stats.beta``). For an
(epsilon, delta)-DP mechanism, P[M(D) in S] <= e^epsilon P[M(D') in S] + delta for every S, so

    epsilon_lb = ln((p_lo - delta) / p_hi)

(p_lo a lower confidence bound on the larger probability, p_hi an upper confidence bound on the
smaller) is a lower bound on the true epsilon whenever the intervals hold. The intervals of all
events tested on the held-out half are Bonferroni-corrected, so with probability at least
``confidence`` (over the draws) epsilon_lb <= the mechanism's true epsilon at this delta. The
choice of events on the first half does not affect this (the halves are independent). This is
the standard recipe of Ding et al. 2018 ("Detecting violations of differential privacy") and
Jagielski et al. 2020 ("Auditing differentially private machine learning").

A result of 0 means no event gave evidence of any privacy loss; it never proves privacy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import Mechanism, QueryInput

Sampler = Callable[[np.random.Generator, int], np.ndarray]
"""``sampler(rng, size)`` returns ``size`` independent outputs: floats (NaN = "⊥") or integer
outcome indices (-1 = "⊥")."""

BOTTOM = "⊥"
_N_QUANTILES = 96
_TAIL_LEVELS = np.geomspace(1e-6, 0.02, 12)
_EVENTS_PER_DIRECTION = 2


@dataclass(frozen=True)
class AuditResult:
    """The best event found. ``epsilon_lb`` is a lower confidence bound (level ``confidence`` of
    :func:`audit`) on the epsilon of the mechanism at the audited delta, never an estimate of it.
    ``direction`` is ``"D>D'"`` when the event is likelier under D, else ``"D'>D"``; ``p_lo`` is
    the lower bound on the likelier side's probability, ``p_hi`` the upper bound on the other."""

    epsilon_lb: float
    event: str
    direction: str
    p_hi: float
    p_lo: float
    n_draws: int


@dataclass(frozen=True)
class Event:
    """A candidate event: a membership test and its description."""

    describe: str
    contains: Callable[[np.ndarray], np.ndarray]


# ---------------------------------------------------------------- confidence intervals
def clopper_pearson(successes: np.ndarray, trials: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact one-sided Clopper-Pearson bounds, each holding with probability >= 1 - alpha:
    returns (lower, upper) on the success probability."""
    from scipy import stats  # on first use: 0.5-1 s to import, which the window's start need not pay

    k = np.asarray(successes, dtype=float)
    lower = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1), trials - k + 1), 0.0)
    upper = np.where(k < trials, stats.beta.ppf(1 - alpha, k + 1, np.maximum(trials - k, 1)), 1.0)
    return lower, upper


def wilson(successes: np.ndarray, trials: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score bounds: a cheap closed-form stand-in for Clopper-Pearson, used only to RANK
    candidate events on the selection half (never for the reported bound)."""
    from scipy import stats

    z = float(stats.norm.isf(alpha))
    p = np.asarray(successes, dtype=float) / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 1e-300, 1.0)


def epsilon_bound(p_lo: np.ndarray, p_hi: np.ndarray, delta: float) -> np.ndarray:
    """ln((p_lo - delta) / p_hi), -inf where p_lo <= delta."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_lo > delta, np.log(np.maximum(p_lo - delta, 1e-300) / p_hi), -np.inf)


# ---------------------------------------------------------------- candidate events
def _thresholds(first_d: np.ndarray, first_dp: np.ndarray) -> np.ndarray:
    """Quantiles (bulk and far tails) of the pooled finite selection draws, and the float just
    below each, so that intervals (below(t), t] isolate atoms such as an unnoised release."""
    pooled = np.concatenate([first_d, first_dp])
    pooled = pooled[np.isfinite(pooled)]
    if pooled.size == 0:
        return np.array([-np.inf, np.inf])
    levels = np.concatenate([np.linspace(0, 1, _N_QUANTILES + 1), _TAIL_LEVELS, 1 - _TAIL_LEVELS])
    quantiles = np.quantile(pooled, levels, method="inverted_cdf")
    points = np.concatenate([quantiles, np.nextafter(quantiles, -np.inf)])
    return np.unique(np.concatenate([[-np.inf], points, [np.inf]]))


def _numeric_counts(sample: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, int]:
    """For every interval (edges[i], edges[j]], i < j (flattened), the number of finite draws in
    it; and the number of "⊥" (NaN) draws."""
    finite = np.sort(sample[~np.isnan(sample)])
    cumulative = np.searchsorted(finite, edges, side="right")
    i, j = np.triu_indices(edges.size, k=1)
    return cumulative[j] - cumulative[i], int(sample.size - finite.size)


def _interval_event(low: float, high: float, with_bottom: bool) -> Event:
    text = f"output in ({low:.6g}, {high:.6g}]" + (f" or {BOTTOM}" if with_bottom else "")

    def contains(x: np.ndarray) -> np.ndarray:
        inside = (x > low) & (x <= high)
        return inside | np.isnan(x) if with_bottom else inside

    return Event(text, contains)


def numeric_candidates(
    first_d: np.ndarray, first_dp: np.ndarray
) -> tuple[Callable[[int], Event], np.ndarray, np.ndarray]:
    """Candidate events (intervals, the same with "⊥" added, and "⊥" alone) as a factory from
    index to event, with their selection-half counts under D and D'."""
    edges = _thresholds(first_d, first_dp)
    counts_d, bottom_d = _numeric_counts(first_d, edges)
    counts_dp, bottom_dp = _numeric_counts(first_dp, edges)
    i, j = np.triu_indices(edges.size, k=1)
    n_pairs = i.size

    def event(index: int) -> Event:
        if index == 2 * n_pairs:
            return Event(f"output is {BOTTOM}", np.isnan)
        pair = index % n_pairs
        return _interval_event(edges[i[pair]], edges[j[pair]], index >= n_pairs)

    if bottom_d + bottom_dp == 0:  # no "⊥" seen: the events with "⊥" would only repeat others
        return event, counts_d, counts_dp
    k_d = np.concatenate([counts_d, counts_d + bottom_d, [bottom_d]])
    k_dp = np.concatenate([counts_dp, counts_dp + bottom_dp, [bottom_dp]])
    return event, k_d, k_dp


def _outcome_name(index: int) -> str:
    return BOTTOM if index == -1 else str(index)


def categorical_candidates(
    first_d: np.ndarray, first_dp: np.ndarray
) -> tuple[Callable[[int], Event], np.ndarray, np.ndarray]:
    """Single outcomes, and the sets of the j outcomes most over-represented under D (resp. D')
    on the selection half: the optimal event {o: p_D(o) > e^eps p_D'(o)} is one of these."""
    outcomes = np.unique(np.concatenate([first_d, first_dp]).astype(np.int64))
    n_d = np.bincount(np.searchsorted(outcomes, first_d.astype(np.int64)), minlength=outcomes.size).astype(
        float
    )
    n_dp = np.bincount(np.searchsorted(outcomes, first_dp.astype(np.int64)), minlength=outcomes.size).astype(
        float
    )
    sets: list[np.ndarray] = [np.array([o]) for o in outcomes]
    k_d, k_dp = [n_d], [n_dp]
    for order in (np.argsort(-(n_d + 1) / (n_dp + 1)), np.argsort(-(n_dp + 1) / (n_d + 1))):
        sets += [outcomes[order[: j + 1]] for j in range(1, outcomes.size - 1)]
        k_d.append(np.cumsum(n_d[order])[1 : outcomes.size - 1])  # the j + 1 most over-represented
        k_dp.append(np.cumsum(n_dp[order])[1 : outcomes.size - 1])

    def event(index: int) -> Event:
        members = sets[index]
        text = "outcome in {" + ", ".join(_outcome_name(int(o)) for o in members) + "}"
        return Event(text, lambda x: np.isin(x, members))

    return event, np.concatenate(k_d), np.concatenate(k_dp)


def select_events(
    k_hi_side: np.ndarray, k_lo_side: np.ndarray, trials: int, delta: float, alpha: float
) -> np.ndarray:
    """Indices of the best few events for one direction, ranked by a Wilson-based bound."""
    lower, _ = wilson(k_hi_side, trials, alpha)
    _, upper = wilson(k_lo_side, trials, alpha)
    score = epsilon_bound(lower, upper, delta)
    best = np.argsort(-score)[:_EVENTS_PER_DIRECTION]
    return best[np.isfinite(score[best])]


# ---------------------------------------------------------------- the auditor
def _validate(delta: float, n_draws: int, confidence: float) -> None:
    if not 0 <= delta < 1:
        raise InvalidParameterError(f"delta must be in [0, 1); got {delta}")
    if n_draws < 100:
        raise InvalidParameterError(f"the audit needs at least 100 draws per side; got {n_draws}")
    if not 0 < confidence < 1:
        raise InvalidParameterError(f"confidence must be in (0, 1); got {confidence}")


_CHUNKS = 20


def _draw(
    sampler: Sampler,
    rng: np.random.Generator,
    size: int,
    cancel: CancelToken | None,
    progress: ProgressFn | None,
    span: tuple[float, float],
) -> np.ndarray:
    """``size`` draws in one call, or in chunks with a checkpoint between when the caller can
    cancel or watches progress (``span``: the fraction of the whole audit this covers)."""
    if cancel is None and progress is None:
        return np.asarray(sampler(rng, size))
    parts, done = [], 0
    step = -(-size // _CHUNKS)
    while done < size:
        checkpoint(cancel, progress, span[0] + (span[1] - span[0]) * done / size)
        parts.append(np.asarray(sampler(rng, min(step, size - done))))
        done += parts[-1].size
    return np.concatenate(parts)


def audit(
    sample_d: Sampler,
    sample_d_prime: Sampler,
    delta: float,
    *,
    rng: np.random.Generator,
    n_draws: int = 1_000_000,
    confidence: float = 0.95,
    categorical: bool = False,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> AuditResult:
    """A lower confidence bound on epsilon at ``delta`` from ``n_draws`` outputs per side.

    Guarantee: if the mechanism is (epsilon, delta)-DP on this pair, then
    P[result.epsilon_lb > epsilon] <= 1 - confidence (Clopper-Pearson, Bonferroni over the
    2 x (events per direction) events tested on the held-out half). Lower bound, not estimate.
    With ``cancel`` or ``progress`` the draws are made in chunks, with a checkpoint between."""
    _validate(delta, n_draws, confidence)
    draws_d = _draw(sample_d, rng, n_draws, cancel, progress, (0.0, 0.45))
    draws_dp = _draw(sample_d_prime, rng, n_draws, cancel, progress, (0.45, 0.9))
    checkpoint(cancel, progress, 0.9)
    half = n_draws // 2
    first_d, held_d = draws_d[:half], draws_d[half:]
    first_dp, held_dp = draws_dp[:half], draws_dp[half:]
    if categorical:
        events, k_d, k_dp = categorical_candidates(first_d, first_dp)
    else:
        events, k_d, k_dp = numeric_candidates(first_d.astype(float), first_dp.astype(float))
    n_tests = 2 * _EVENTS_PER_DIRECTION
    alpha = (1 - confidence) / (2 * n_tests)  # two one-sided bounds per tested event
    chosen = [(idx, "D>D'") for idx in select_events(k_d, k_dp, half, delta, alpha)]
    chosen += [(idx, "D'>D") for idx in select_events(k_dp, k_d, half, delta, alpha)]
    trials = draws_d.size - half
    best = AuditResult(0.0, "none", "none", 1.0, 0.0, n_draws)
    for idx, direction in chosen:
        event = events(int(idx))
        k_hi_side = np.count_nonzero(event.contains(held_d if direction == "D>D'" else held_dp))
        k_lo_side = np.count_nonzero(event.contains(held_dp if direction == "D>D'" else held_d))
        p_lo = float(clopper_pearson(np.array([k_hi_side]), trials, alpha)[0][0])
        p_hi = float(clopper_pearson(np.array([k_lo_side]), trials, alpha)[1][0])
        bound = float(epsilon_bound(np.array(p_lo), np.array(p_hi), delta))
        if bound > best.epsilon_lb:
            best = AuditResult(bound, event.describe, direction, p_hi, p_lo, n_draws)
    return best


def mechanism_samplers(
    mechanism: Mechanism, params: Mapping[str, Any], query: QueryInput
) -> tuple[Sampler, Sampler, float]:
    """Samplers of ``mechanism``'s outputs on the query's D and D' (``mechanism.simulate``) and
    the delta it claims (``epsilon_delta``): what every black-box audit of it draws from."""
    values = mechanism.validate(params)
    _, delta = mechanism.epsilon_delta(values, query)

    def sample_d(generator: np.random.Generator, size: int) -> np.ndarray:
        return mechanism.simulate(values, query, generator, size, on="D")

    def sample_d_prime(generator: np.random.Generator, size: int) -> np.ndarray:
        return mechanism.simulate(values, query, generator, size, on="D'")

    return sample_d, sample_d_prime, float(delta)


def audit_mechanism(
    mechanism: Mechanism,
    params: Mapping[str, Any],
    query: QueryInput,
    *,
    rng: np.random.Generator,
    n_draws: int = 1_000_000,
    confidence: float = 0.95,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> AuditResult:
    """:func:`audit` of ``mechanism`` on the query's pair (D, D'), through ``mechanism.simulate``,
    at the delta the mechanism claims (``epsilon_delta``). Compare ``epsilon_lb`` with the
    claimed epsilon: a bound above the claim is evidence (at level ``confidence``) of a bug."""
    sample_d, sample_d_prime, delta = mechanism_samplers(mechanism, params, query)
    return audit(
        sample_d,
        sample_d_prime,
        delta,
        rng=rng,
        n_draws=n_draws,
        confidence=confidence,
        categorical=mechanism.output_kind == "categorical",
        cancel=cancel,
        progress=progress,
    )
