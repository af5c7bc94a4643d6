"""Black-box lower bounds on the hockey-stick divergence of vector and categorical outputs, and a
small search over neighbouring datasets for the largest one (issue 44, deliverable 2).

The hockey-stick divergence of P = M(D) from Q = M(D') at epsilon is

    H_eps(P || Q) = sup_S P(S) - e^eps Q(S)  (>= 0),

and M is (epsilon, delta)-DP on the pair exactly when H_eps <= delta in both directions (Barthe
& Olmedo 2013; Balle, Barthe & Gaboardi 2018, Theorem 1). Every event S bounds it from below:
if p_lo <= P(S) and Q(S) <= q_hi, then

    H_eps >= p_lo - e^eps q_hi          and          epsilon >= ln((p_lo - delta) / q_hi)

(the second whenever M is (epsilon, delta)-DP, as in :mod:`dpexplorer.core.audit`).

:func:`divergence_audit` finds events for outputs that are vectors (a histogram, a transcript of
answers, a vector of means by group; NaN for a value that is not a number such as ⊥) or
categories (any hashable output: a selected category, a tuple of them), the way DP-Auditorium's
testers do (Kong, Munoz Medina, Ribero, Syed 2024, "DP-Auditorium: a large scale library for
auditing differential privacy", IEEE S&P): a few *score functions* are fitted on a first half
of the draws (the selection half) and thresholded into candidate events, and the probabilities of
the few best are estimated on the held-out second half with exact Clopper-Pearson bounds. Scores:

* each coordinate on its own (at most :data:`MAX_COORDINATES`, those whose means differ most on
  the selection half);
* a linear discriminant w . x, w_j = (mean_D - mean_D')_j / pooled variance_j (Fisher's, with a
  diagonal covariance): a shift spread thinly over many coordinates adds up here;
* a quadratic score, the log-likelihood ratio of diagonal Gaussians fitted to each side: noise
  whose scale differs between D and D' (a data-dependent noise scale) shows here;
* when outputs repeat (at most :data:`MAX_OUTCOMES` distinct), the whole output as one outcome,
  with the outcome sets of the categorical auditor (:func:`~dpexplorer.core.audit.categorical_candidates`).

Guarantee (lower bound, not an estimate). The number of events tested on the held-out half is
fixed before it is looked at (:func:`planned_tests`: scores x 2 directions x (events chosen for
epsilon + events chosen for the divergence)); every one-sided Clopper-Pearson bound is taken at
alpha = (1 - confidence) / (2 x that number) (Bonferroni), so with probability at least
``confidence`` over the draws all of them hold together, and then ``epsilon_lb`` <= the true
epsilon at ``delta`` and ``delta_lb`` <= H at ``at_epsilon``, in whichever direction they were
found. Choosing the events on the selection half does not bias this: the halves are independent.

:func:`search_neighbours` audits several neighbours D' of D: each is screened with a few draws
(a ranking only), then the ``keep`` best are audited on fresh draws, each at confidence
1 - (1 - confidence) / keep, so that the largest of their bounds holds at ``confidence``
(a union bound): DP-Auditorium's search over datasets, on a list the caller builds."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpexplorer.core.audit import (
    Event,
    categorical_candidates,
    clopper_pearson,
    epsilon_bound,
    mechanism_samplers,
    numeric_candidates,
    select_events,
    wilson,
)
from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.core.errors import InvalidParameterError

MAX_COORDINATES = 8
"""At most this many coordinates are scored on their own (the ones whose means differ most)."""
MAX_OUTCOMES = 400
"""Outputs are also treated as categories when at most this many distinct ones are drawn."""
EVENTS = 2
"""Events kept per score, direction and criterion (epsilon, divergence) for the held-out half."""

Draws = Callable[[np.random.Generator, int], Sequence[Any]]
"""``draws(rng, size)``: ``size`` independent outputs of the mechanism on one dataset, each a
number, a category, or a sequence of them (one release's values)."""


@dataclass(frozen=True)
class DivergenceBound:
    """What :func:`divergence_audit` found: ``epsilon_lb`` a lower confidence bound on epsilon at
    ``delta`` and ``delta_lb`` one on the hockey-stick divergence at ``at_epsilon`` (both at level
    ``confidence``, jointly), the test and event that gave ``epsilon_lb``, ``direction`` "D>D'"
    when that event is likelier on D. ``tests`` lists every score tried."""

    epsilon_lb: float
    delta_lb: float
    at_epsilon: float
    delta: float
    test: str
    event: str
    direction: str
    confidence: float
    n_draws: int
    tests: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Encoded:
    """Both sides' draws as a float matrix (NaN = not a number), and as outcome codes when
    outputs repeat."""

    numeric_d: np.ndarray | None
    numeric_dp: np.ndarray | None
    codes_d: np.ndarray | None
    codes_dp: np.ndarray | None


def _row(output: Any) -> tuple[Any, ...]:
    """One output as a tuple of its values (a scalar is a 1-tuple)."""
    if isinstance(output, str | bytes) or not hasattr(output, "__len__"):
        return (output,)
    return tuple(np.asarray(output, dtype=object).ravel().tolist())


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        return math.nan
    return float(value)


def encode(draws_d: Sequence[Any], draws_dp: Sequence[Any]) -> _Encoded:
    """The draws of both sides encoded for the scores: the float matrix when every output has
    the same length and holds a number somewhere; codes when few outcomes repeat."""
    rows_d, rows_dp = [_row(o) for o in draws_d], [_row(o) for o in draws_dp]
    index: dict[Hashable, int] = {}
    codes: list[int] | None = []
    for key in rows_d + rows_dp:
        key = tuple(_key(v) for v in key)
        code = index.setdefault(key, len(index))
        if len(index) > MAX_OUTCOMES:
            codes = None
            break
        assert codes is not None
        codes.append(code)
    lengths = {len(r) for r in rows_d + rows_dp}
    numeric_d = numeric_dp = None
    if len(lengths) == 1:
        numeric_d = np.array([[_number(v) for v in r] for r in rows_d], dtype=float)
        numeric_dp = np.array([[_number(v) for v in r] for r in rows_dp], dtype=float)
        if not (np.isfinite(numeric_d).any() or np.isfinite(numeric_dp).any()):
            numeric_d = numeric_dp = None
    if codes is None:
        return _Encoded(numeric_d, numeric_dp, None, None)
    split = len(rows_d)
    return _Encoded(numeric_d, numeric_dp, np.array(codes[:split]), np.array(codes[split:]))


def _key(value: Any) -> Hashable:
    """A hashable stand-in for one value (NaN equal to itself)."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value if isinstance(value, Hashable) else repr(value)


# ---------------------------------------------------------------- score functions
Score = Callable[[np.ndarray], np.ndarray]


def _moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-coordinate mean and variance over the rows with a number there (0 and 1 if none)."""
    finite = np.isfinite(x)
    count = finite.sum(axis=0)
    filled = np.where(finite, x, 0.0)
    mean = np.divide(filled.sum(axis=0), count, out=np.zeros(x.shape[1]), where=count > 0)
    centred = np.where(finite, x - mean, 0.0)
    var = np.divide((centred**2).sum(axis=0), count, out=np.ones(x.shape[1]), where=count > 0)
    return mean, var


def scores(first_d: np.ndarray, first_dp: np.ndarray, coordinates: int = MAX_COORDINATES) -> dict[str, Score]:
    """The score functions fitted on the selection half (module docstring), by name, with at
    most ``coordinates`` coordinates on their own. A row with a value that is not a number
    scores NaN on its coordinate (the events' "⊥")."""
    mean_d, var_d = _moments(first_d)
    mean_dp, var_dp = _moments(first_dp)
    pooled = (var_d + var_dp) / 2
    scale = np.maximum(pooled, 1e-12 * np.maximum(1.0, np.abs(mean_d) + np.abs(mean_dp)) ** 2)
    gap = np.abs(mean_d - mean_dp) / np.sqrt(scale)
    d = first_d.shape[1]
    centre = (mean_d + mean_dp) / 2

    def filled(x: np.ndarray) -> np.ndarray:
        """A value that is not a number as the pooled mean (scores of all coordinates)."""
        return np.where(np.isfinite(x), x, centre)

    out: dict[str, Score] = {}
    for j in np.argsort(-gap, kind="stable")[:coordinates]:
        out[f"coordinate {int(j) + 1}" if d > 1 else "the value"] = _column_score(int(j))
    if d > 1:
        w = (mean_d - mean_dp) / scale
        out["linear score (all coordinates)"] = lambda x: filled(x) @ w
    v_d = np.maximum(var_d, scale * 1e-6)
    v_dp = np.maximum(var_dp, scale * 1e-6)
    if not np.allclose(v_d, v_dp, rtol=1e-9, atol=0.0) or d > 1:

        def quadratic(x: np.ndarray) -> np.ndarray:
            x = filled(x)
            loss = (
                -((x - mean_d) ** 2) / (2 * v_d)
                + ((x - mean_dp) ** 2) / (2 * v_dp)
                - 0.5 * np.log(v_d / v_dp)
            )
            return loss.sum(axis=1)

        out["quadratic score (noise scales)"] = quadratic
    return out


# ---------------------------------------------------------------- the auditor
def planned_tests(encoded: _Encoded, at_epsilon: float | None, quick: bool = False) -> int:
    """How many events the held-out half tests (fixed before it is looked at): per score, 2
    directions x :data:`EVENTS` per criterion (epsilon, and the divergence at ``at_epsilon``)."""
    count = 0
    if encoded.numeric_d is not None:
        d = encoded.numeric_d.shape[1]
        count += 1 + (d > 1) if quick else min(d, MAX_COORDINATES) + (2 if d > 1 else 1)
    if encoded.codes_d is not None:
        count += 1
    criteria = 2 if at_epsilon is not None else 1
    return max(1, count) * 2 * EVENTS * criteria


def _by_divergence(
    k_hi: np.ndarray, k_lo: np.ndarray, trials: int, at_epsilon: float, alpha: float
) -> np.ndarray:
    """The best :data:`EVENTS` candidate events for the divergence at ``at_epsilon``, ranked by
    Wilson bounds on the selection half."""
    lower, _ = wilson(k_hi, trials, alpha)
    _, upper = wilson(k_lo, trials, alpha)
    value = lower - math.exp(at_epsilon) * upper
    best = np.argsort(-value, kind="stable")[:EVENTS]
    return best[value[best] > 0]


@dataclass
class _Best:
    epsilon_lb: float = 0.0
    delta_lb: float = 0.0
    test: str = "none"
    event: str = "none"
    direction: str = "none"
    tests: list[str] = field(default_factory=list)


def _candidates(
    first_d: np.ndarray, first_dp: np.ndarray, categorical: bool
) -> tuple[Callable[[int], Event], np.ndarray, np.ndarray]:
    """The candidate events of one view and their selection-half counts on each side."""
    if categorical:
        return categorical_candidates(first_d, first_dp)
    return numeric_candidates(first_d, first_dp)


def divergence_audit(
    draws_d: Sequence[Any],
    draws_dp: Sequence[Any],
    delta: float,
    *,
    at_epsilon: float | None = None,
    confidence: float = 0.95,
    quick: bool = False,
) -> DivergenceBound:
    """Lower confidence bounds on epsilon at ``delta`` and on the hockey-stick divergence at
    ``at_epsilon`` from ``draws_d`` (outputs of M(D)) and ``draws_dp`` (of M(D')), the same number
    of each, at least 100 (module docstring: guarantee, scores, events). ``at_epsilon`` None: the
    divergence is not bounded (``delta_lb`` 0). ``quick``: the coordinate that differs most,
    the linear score and the outcomes only (a screening: fewer tests, the same guarantee)."""
    n = min(len(draws_d), len(draws_dp))
    if n < 100:
        raise InvalidParameterError(f"the audit needs at least 100 draws per side; got {n}")
    if not 0 <= delta < 1 or not 0 < confidence < 1:
        raise InvalidParameterError("delta must be in [0, 1) and the confidence in (0, 1)")
    encoded = encode(list(draws_d)[:n], list(draws_dp)[:n])
    half = n // 2
    alpha = (1 - confidence) / (2 * planned_tests(encoded, at_epsilon, quick))
    best = _Best()
    views: list[tuple[str, np.ndarray, np.ndarray, bool]] = []
    if encoded.numeric_d is not None and encoded.numeric_dp is not None:
        x_d, x_dp = encoded.numeric_d, encoded.numeric_dp
        chosen = scores(x_d[:half], x_dp[:half], 1 if quick else MAX_COORDINATES)
        for name, score in chosen.items():
            if quick and name.startswith("quadratic"):
                continue
            with np.errstate(all="ignore"):
                views.append((name, score(x_d), score(x_dp), False))
    if encoded.codes_d is not None and encoded.codes_dp is not None:
        views.append(("whole output as one outcome", encoded.codes_d, encoded.codes_dp, True))
    best.tests = [view[0] for view in views]
    for name, on_d, on_dp, categorical in views:
        _test_view(name, on_d, on_dp, categorical, half, delta, at_epsilon, alpha, best)
    return DivergenceBound(
        best.epsilon_lb,
        best.delta_lb,
        at_epsilon if at_epsilon is not None else math.nan,
        delta,
        best.test,
        best.event,
        best.direction,
        confidence,
        n,
        tuple(best.tests),
    )


def _test_view(
    name: str,
    on_d: np.ndarray,
    on_dp: np.ndarray,
    categorical: bool,
    half: int,
    delta: float,
    at_epsilon: float | None,
    alpha: float,
    best: _Best,
) -> None:
    """Choose events of one score on the selection half, test them on the held-out half, and
    keep the largest bounds in ``best``."""
    if not categorical:
        on_d, on_dp = on_d.astype(float), on_dp.astype(float)
        if not (np.isfinite(on_d[:half]).any() or np.isfinite(on_dp[:half]).any()):
            return
    events, k_d, k_dp = _candidates(on_d[:half], on_dp[:half], categorical)
    chosen = [(int(i), "D>D'") for i in select_events(k_d, k_dp, half, delta, alpha)[:EVENTS]]
    chosen += [(int(i), "D'>D") for i in select_events(k_dp, k_d, half, delta, alpha)[:EVENTS]]
    if at_epsilon is not None:
        chosen += [(int(i), "D>D'") for i in _by_divergence(k_d, k_dp, half, at_epsilon, alpha)]
        chosen += [(int(i), "D'>D") for i in _by_divergence(k_dp, k_d, half, at_epsilon, alpha)]
    held_d, held_dp = on_d[half:], on_dp[half:]
    trials = held_d.size
    for index, direction in dict.fromkeys(chosen):
        event = events(index)
        likely, other = (held_d, held_dp) if direction == "D>D'" else (held_dp, held_d)
        p_lo = float(
            clopper_pearson(np.array([np.count_nonzero(event.contains(likely))]), trials, alpha)[0][0]
        )
        q_hi = float(
            clopper_pearson(np.array([np.count_nonzero(event.contains(other))]), trials, alpha)[1][0]
        )
        bound = float(epsilon_bound(np.array(p_lo), np.array(q_hi), delta))
        if bound > best.epsilon_lb:
            best.epsilon_lb, best.test, best.event, best.direction = bound, name, event.describe, direction
        if at_epsilon is not None:
            best.delta_lb = max(best.delta_lb, p_lo - math.exp(at_epsilon) * q_hi)


# ---------------------------------------------------------------- the search over neighbours
@dataclass(frozen=True)
class SearchResult:
    """The largest bound over the neighbours audited on fresh draws (``bound``, on the
    neighbour ``neighbour``), and each neighbour's screening bound (a ranking, not a bound at
    the stated confidence)."""

    bound: DivergenceBound
    neighbour: str
    screened: Mapping[str, float]


def search_neighbours(
    on_d: Draws,
    neighbours: Mapping[str, Draws],
    delta: float,
    *,
    rng: np.random.Generator,
    draws: int = 2_000,
    screen_draws: int = 400,
    keep: int = 1,
    at_epsilon: float | None = None,
    confidence: float = 0.95,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> SearchResult:
    """The neighbour (name -> draws on D') whose outputs tell D (draws ``on_d``) from D' best, and
    a lower confidence bound from it (module docstring). Each is screened on ``screen_draws``
    draws of D' against the same ``screen_draws`` draws of D (:func:`divergence_audit`, quick, at
    confidence 1/2: a ranking only), then the ``keep`` best are audited on ``draws`` fresh draws
    per side, each at 1 - (1 - confidence) / keep: with probability at least ``confidence`` the
    largest epsilon_lb returned is <= the true epsilon on its pair (a union bound; no screening
    draw is reused)."""
    if not neighbours:
        raise InvalidParameterError("the search needs at least one neighbour")
    if draws < 100 or screen_draws < 100 or keep < 1:
        raise InvalidParameterError("the search needs at least 100 draws per side and keep >= 1")
    steps = len(neighbours) + min(keep, len(neighbours))
    screened: dict[str, float] = {}
    if len(neighbours) > keep:  # else every neighbour is audited: nothing to choose
        first = on_d(rng, screen_draws)
        for number, (name, on_dp) in enumerate(neighbours.items()):
            checkpoint(cancel, progress, number / steps)
            found = divergence_audit(first, on_dp(rng, screen_draws), delta, confidence=0.5, quick=True)
            screened[name] = found.epsilon_lb
    ranked = sorted(screened, key=lambda k: -screened[k])[:keep] if screened else list(neighbours)
    level = 1 - (1 - confidence) / len(ranked)
    best: tuple[DivergenceBound, str] | None = None
    for number, name in enumerate(ranked):
        checkpoint(cancel, progress, (len(neighbours) + number) / steps)
        on_dp = neighbours[name]
        found = divergence_audit(
            on_d(rng, draws), on_dp(rng, draws), delta, at_epsilon=at_epsilon, confidence=level
        )
        if best is None or found.epsilon_lb > best[0].epsilon_lb:
            best = (found, name)
    assert best is not None
    checkpoint(cancel, progress, 1.0)
    return SearchResult(best[0], best[1], screened)


def _column_score(j: int) -> Score:
    """The score that reads coordinate ``j`` of each sampled output."""

    def score(x: np.ndarray) -> np.ndarray:
        return x[:, j]

    return score


DIVERGENCE_DRAWS = 200_000
"""Outputs per side the divergence test of :func:`strongest_audit` draws at most (its scores
cost more per draw than the threshold events do)."""


@dataclass(frozen=True)
class StrongestBound:
    """The larger of two lower confidence bounds on epsilon at ``delta`` (:func:`strongest_audit`):
    ``epsilon_lb``, and ``test``, the words for the test that gave it; both results kept."""

    epsilon_lb: float
    test: str
    threshold: Any
    """The threshold auditor's :class:`~dpexplorer.core.audit.AuditResult`."""
    divergence: DivergenceBound | None
    confidence: float


def strongest_audit(
    sample_d: Callable[[np.random.Generator, int], np.ndarray],
    sample_dp: Callable[[np.random.Generator, int], np.ndarray],
    delta: float,
    *,
    rng: np.random.Generator,
    n_draws: int,
    confidence: float = 0.95,
    categorical: bool = False,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> StrongestBound:
    """Two black-box tests on M(D) against M(D') (``sample_*(rng, size)``): the threshold events
    of :func:`dpexplorer.core.audit.audit` on ``n_draws`` outputs per side, and
    :func:`divergence_audit` (its scores: coordinates, linear and quadratic, whole outcomes) on
    fresh draws, at most :data:`DIVERGENCE_DRAWS`. Each runs at confidence 1 - (1 - c) / 2, so the
    larger bound is a lower confidence bound on epsilon at level ``confidence`` (a union bound);
    never an estimate of epsilon."""
    from dpexplorer.core.audit import audit

    each = 1 - (1 - confidence) / 2

    def part(low: float, high: float) -> ProgressFn | None:
        return None if progress is None else (lambda f: progress(low + (high - low) * f))

    threshold = audit(
        sample_d, sample_dp, delta, rng=rng, n_draws=n_draws, confidence=each, categorical=categorical,
        cancel=cancel, progress=part(0.0, 0.7),
    )  # fmt: skip
    size = min(n_draws, DIVERGENCE_DRAWS)
    divergence = None
    if size >= 100:
        checkpoint(cancel, progress, 0.7)
        draws_d, draws_dp = sample_d(rng, size), sample_dp(rng, size)
        checkpoint(cancel, progress, 0.85)
        divergence = divergence_audit(list(draws_d), list(draws_dp), delta, confidence=each)
    checkpoint(cancel, progress, 1.0)
    if divergence is not None and divergence.epsilon_lb > threshold.epsilon_lb:
        words = f"hockey-stick divergence test ({divergence.test}; {divergence.n_draws:,} draws per side)"
        return StrongestBound(divergence.epsilon_lb, words, threshold, divergence, confidence)
    words = f"threshold events on the output ({threshold.n_draws:,} draws per side)"
    return StrongestBound(threshold.epsilon_lb, words, threshold, divergence, confidence)


def strongest_mechanism_audit(
    mechanism: Any,
    params: Mapping[str, Any],
    query: Any,
    *,
    rng: np.random.Generator,
    n_draws: int = 1_000_000,
    confidence: float = 0.95,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> StrongestBound:
    """:func:`strongest_audit` of a registered ``mechanism`` on the query's pair (D, D'), through
    ``mechanism.simulate``, at the delta it claims (as
    :func:`~dpexplorer.core.audit.audit_mechanism`)."""
    sample_d, sample_dp, delta = mechanism_samplers(mechanism, params, query)
    return strongest_audit(
        sample_d,
        sample_dp,
        delta,
        rng=rng,
        n_draws=n_draws,
        confidence=confidence,
        categorical=mechanism.output_kind == "categorical",
        cancel=cancel,
        progress=progress,
    )
