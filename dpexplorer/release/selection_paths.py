"""Exact release paths of the selection mechanisms. Scores and epsilon are floats, hence exact
rationals; sigma = c Delta_u / epsilon (c = 1 monotone, 2 otherwise; Dwork & Roth 2014,
Theorem 3.10) is recomputed in rationals, so the sampled law is exactly the mechanism's.

* Exponential mechanism, report-noisy-max with Gumbel noise (the same law; Dwork & Roth 2014,
  Section 3.4): rejection sampling, propose a candidate uniformly, accept with
  Bernoulli(exp(-(u* - u_r) / sigma)) (CKS 2020, Algorithm 1; u* the top score, so the
  acceptance probability is at most 1 and an accepted r has probability exactly proportional
  to exp(u_r / sigma); expected proposals <= number of candidates).
* Report-noisy-max with exponential noise = permute-and-flip (McKenna & Sheldon 2020,
  Algorithm 1): visit the candidates in a uniformly random order (Fisher-Yates with exact
  uniform indices), stop at r with probability exp(-(u* - u_r) / sigma).
* Top-k, both methods (equal in law; Durfee & Rogers 2019, Lemma 4.2): peeling, k exact
  exponential mechanisms with epsilon / k, each over the candidates not yet taken.
* DP quantile over a declared grid (:mod:`dpexplorer.core.mechanisms.dp_quantile`): the same
  exact exponential mechanism over the grid's candidates, its scores (1 - q) L - q G and
  Delta_u = max(q, 1 - q) (or 1 under replace) recomputed in rationals.
* Dist2Instability of the most common category: the discrete distance test
  (:class:`.exact.DistanceTest`), then the mode itself.
Each is charged the mechanism's own guarantee (pure epsilon, or (epsilon, delta) for
Dist2Instability)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import Mechanism, SelectionInput
from dpexplorer.core.mechanisms.dp_quantile import groups_changed, rows_per_group
from dpexplorer.release import samplers
from dpexplorer.release.exact import DistanceTest, ExactRelease, Value, finite_fractions
from dpexplorer.release.samplers import BitSource

Picker = Callable[[list[Fraction], BitSource], int]

EXPONENTIAL_SAMPLER = (
    "exponential mechanism by exact rejection sampling (uniform proposal, CKS 2020 "
    "Bernoulli(exp(-gamma)) acceptance)"
)
PERMUTE_AND_FLIP_SAMPLER = "permute-and-flip (McKenna & Sheldon 2020) with CKS 2020 Bernoulli(exp(-gamma))"


def checked_scores(query: SelectionInput) -> list[Fraction]:
    """The scores on D as exact Fractions; InvalidParameterError if the query is malformed."""
    if not query.candidates or len(query.scores_d) != len(query.candidates):
        raise InvalidParameterError("a selection needs one score per candidate; rebuild the query")
    if not (math.isfinite(query.sensitivity) and query.sensitivity > 0):
        raise InvalidParameterError("the utility's sensitivity must be a positive number")
    return finite_fractions(query.scores_d, "scores")


def sigma(query: SelectionInput, epsilon: float, monotone: bool) -> Fraction:
    """sigma of exp(u / sigma), exactly: c Delta_u / epsilon."""
    return (1 if monotone else 2) * Fraction(query.sensitivity) / Fraction(epsilon)


def gaps(scores: list[Fraction], scale: Fraction) -> list[Fraction]:
    """(u* - u_r) / sigma for every candidate (u* the largest score), exactly."""
    top = max(scores)
    return [(top - u) / scale for u in scores]


def exponential_pick(gap: list[Fraction], bits: BitSource) -> int:
    """Exact exponential mechanism by rejection (module docstring)."""
    while True:
        r = bits.randbelow(len(gap))
        if samplers.bernoulli_exp(gap[r], bits):
            return r


def permute_and_flip_pick(gap: list[Fraction], bits: BitSource) -> int:
    """Exact permute-and-flip (module docstring); the top candidate always stops the scan."""
    order = list(range(len(gap)))
    for i in range(len(order) - 1, 0, -1):
        j = bits.randbelow(i + 1)
        order[i], order[j] = order[j], order[i]
    for r in order:
        if samplers.bernoulli_exp(gap[r], bits):
            return r
    raise AssertionError("unreachable: the top candidate is accepted with probability 1")


def uses_monotone_bound(params: Mapping[str, Any], query: SelectionInput) -> bool:
    """Whether the factor-1 (monotone utility) calibration applies, as the mechanisms decide."""
    return bool(query.monotone and params.get("use_monotone", True))


def selection_release(
    query: SelectionInput, params: Mapping[str, Any], pick: Picker, sampler: str
) -> ExactRelease:
    """One exact selection with ``pick`` (exponential or permute-and-flip); PureDP(epsilon)."""
    epsilon = float(params["epsilon"])
    monotone = uses_monotone_bound(params, query)
    gap = gaps(checked_scores(query), sigma(query, epsilon, monotone))
    return ExactRelease.pure(
        epsilon,
        sampler=sampler,
        labels=("selected",),
        draw=lambda bits: [query.candidates[pick(gap, bits)]],
        provenance={"candidates": list(query.candidates), "monotone_bound_used": monotone},
    )


def topk_release(query: SelectionInput, params: Mapping[str, Any]) -> ExactRelease:
    """Exact peeling: k exponential mechanisms with epsilon / k, winners removed."""
    epsilon, k = float(params["epsilon"]), int(params["k"])
    scores = checked_scores(query)
    if not 1 <= k <= len(scores):
        raise InvalidParameterError(f"k = {k} must be between 1 and the {len(scores)} candidates")
    monotone = uses_monotone_bound(params, query)
    scale = sigma(query, epsilon, monotone) * k  # sigma of each (epsilon / k) step

    def draw(bits: BitSource) -> list[Value]:
        left = list(range(len(scores)))
        chosen: list[Value] = []
        for _ in range(k):
            index = exponential_pick(gaps([scores[i] for i in left], scale), bits)
            chosen.append(query.candidates[left.pop(index)])
        return chosen

    return ExactRelease.pure(
        epsilon,
        sampler=f"peeling: {k} x {EXPONENTIAL_SAMPLER}",
        labels=tuple(f"rank {i + 1}" for i in range(k)),
        draw=draw,
        provenance={"candidates": list(query.candidates), "monotone_bound_used": monotone},
    )


def d2i_mode_release(mechanism: Mechanism, params: Mapping[str, Any], query: SelectionInput) -> ExactRelease:
    """Dist2Instability of the most common category: the discrete test, then the mode."""
    test = DistanceTest.for_parameters(float(params["epsilon"]), float(params["delta"]))
    distance = int(mechanism.distances(query)[0])  # type: ignore[attr-defined]
    mode = query.candidates[int(np.argmax(np.asarray(query.scores_d)))]
    return ExactRelease.approximate(  # the distance test's mode: (epsilon, delta)-DP
        mechanism.guarantee(params, query),
        sampler="discrete distance test (CKS 2020 discrete Laplace), then the exact mode",
        labels=("most common",),
        draw=test.then(distance, lambda bits: [mode]),
        provenance={"candidates": list(query.candidates), **test.describe()},
    )


DP_QUANTILE_SAMPLER = f"{EXPONENTIAL_SAMPLER} over the declared grid"


def dp_quantile_release(
    mechanism: Mechanism, params: Mapping[str, Any], query: Any, level: float
) -> ExactRelease:
    """The DP quantile's exact path: candidates from the declared bounds and bins (public), the
    score of each in rationals, one exact exponential-mechanism draw; PureDP(epsilon). By group
    (``group_values_d``): one draw per declared group, each at epsilon / m in rationals, m the
    groups one neighbour changes (:func:`~dpexplorer.core.mechanisms.dp_quantile.groups_changed`);
    PureDP(epsilon) for the vector (basic composition over those m, parallel over the rest).
    By privately selected keys (one draw per candidate, m = k: public), the number of groups is
    left out of the provenance, and :mod:`.partition_paths` publishes the kept ones only."""
    points = mechanism.points(params, query)  # type: ignore[attr-defined]
    q = Fraction(query.quantile)
    sensitivity = (max(q, 1 - q) if query.relation == "add_remove" else Fraction(1)) * rows_per_group(query)
    epsilon = float(params["epsilon"])
    grouped = query.group_values_d is not None
    split = groups_changed(query) if grouped else 1
    data = query.group_values_d if grouped else (query.sorted_values_d,)
    gaps_by_group = [
        _quantile_gaps(np.asarray(v, dtype=float), points, q, 2 * sensitivity * split / Fraction(epsilon))
        for v in data
    ]
    values = [float(p) for p in points]
    low, high = query.bounds
    labels = tuple(query.labels) if grouped else (f"quantile {float(q):g}",)
    # the exponential mechanism's accuracy (Dwork & Roth 2014, Thm 3.11): with probability >= level
    # the released candidate's score is within (2 Delta / eps') (ln m + ln(1 / (1 - level))) of the
    # best candidate's; the score -|(1 - q) L - q G| is, without ties at the candidate, |L - q n|:
    # the rows below it differ from q n by at most this many more than at the best candidate
    rank_within = float(2 * sensitivity * split / Fraction(epsilon)) * (
        math.log(len(values)) + math.log(1 / (1 - level))
    )
    extra: dict[str, Any] = {"epsilon_per_group": epsilon / split, "groups_one_neighbour_changes": split}
    if query.partition is None:  # by private keys the number of candidate groups is private
        extra["groups"] = len(data)
    return ExactRelease.pure(
        epsilon,
        sampler=DP_QUANTILE_SAMPLER,
        labels=labels,
        draw=lambda bits: [values[exponential_pick(gap, bits)] for gap in gaps_by_group],
        provenance={
            "candidates": f"{len(values)} equally spaced points from {low:g} to {high:g}",
            "bins": int(params["bins"]),
            "score_sensitivity": float(sensitivity),
            "rank_within_rows": math.ceil(rank_within),
            "rank_level": level,
            **(extra if grouped else {}),
        },
    )


def _quantile_gaps(data: np.ndarray, points: np.ndarray, q: Fraction, scale: Fraction) -> Any:
    """The exponential mechanism's exact gaps for one set of sorted values: scores
    -|(1 - q) L(c) - q G(c)| in rationals at each candidate c, over ``scale`` (2 Delta_u / eps)."""
    below = np.searchsorted(data, points, side="left")
    above = data.size - np.searchsorted(data, points, side="right")
    scores = [-abs((1 - q) * int(lo) - q * int(hi)) for lo, hi in zip(below, above, strict=True)]
    return gaps(scores, scale)
