"""Global, local and smooth sensitivity of one statistic on one dataset, side by side.

Everything is computed by :mod:`dpexplorer.core.sensitivity` (exact, see its conventions); this
module only gathers, for a plot against the distance k of the smooth-sensitivity definition
(Nissim, Raskhodnikova & Smith 2007, definition 2.1 and proposition 3.4; Dwork & Roth 2014,
chapter 7 for the distance to instability):

* GS, the global sensitivity (the most one person can move the statistic on any data);
* A(k) = max{ LS(D'') : d(D, D'') <= k }, the local sensitivity at distance k; A(0) = LS(D);
* e^{-beta k} A(k), whose maximum over every k >= 0 is the beta-smooth sensitivity S*(D);
* the distance to instability of the median (the rows that can change with the median fixed).

The curve is listed on a grid of k; S*(D) and the k that attains it are exact over ALL k
(the maximiser is found by bisection on the nondecreasing A, not read off the grid)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from dpexplorer.core.errors import InvalidParameterError, NotApplicableError
from dpexplorer.core.mechanisms.base import Relation
from dpexplorer.core.sensitivity import (
    STATISTICS,
    a_function,
    distance_to_instability_median,
    global_sensitivity,
    local_sensitivity,
    smooth_sensitivity,
)

CURVE_POINTS = 400
"""At most this many distances k on the curve (every k when there are fewer)."""
SHOWN_FRACTION = 1e-3
"""The curve runs until e^{-beta k} times the largest A falls below this share of S*(D):
further k cannot matter to the smooth sensitivity, and the plot would be a flat line at 0."""


@dataclass(frozen=True, eq=False)
class SensitivityProfile:
    """The sensitivities of ``statistic`` on one dataset (see the module docstring).

    ``distances``, ``local_at_distance`` (A(k)) and ``smoothed`` (e^{-beta k} A(k)) are empty when
    A(k) is not available for this statistic and relation (``note`` says why).
    ``distance_to_instability`` is None except for the median. ``argmax_k`` is the least k with
    e^{-beta k} A(k) = S*(D)."""

    statistic: str
    relation: Relation
    n: int
    lower: float
    upper: float
    beta: float
    global_sensitivity: float
    local_sensitivity: float
    smooth_sensitivity: float | None
    argmax_k: int | None
    distance_to_instability: int | None
    distances: np.ndarray
    local_at_distance: np.ndarray
    smoothed: np.ndarray
    note: str = ""


def distance_grid(last: int, points: int = CURVE_POINTS) -> np.ndarray:
    """0, ..., last when that is at most ``points`` values, else ``points`` integers spread
    evenly from 0 to ``last`` (both included)."""
    if last + 1 <= points:
        return np.arange(last + 1)
    return np.unique(np.linspace(0, last, points).round().astype(int))


def _last_distance(a_max: float, smooth: float, beta: float, n: int) -> int:
    """The k beyond which e^{-beta k} a_max < SHOWN_FRACTION * S*, capped at n + 1 (where A has
    reached a_max) and at least 10."""
    if beta <= 0 or smooth <= 0 or a_max <= 0:
        return max(10, n + 1)
    reach = math.ceil(math.log(a_max / (SHOWN_FRACTION * smooth)) / beta)
    return int(max(10, min(n + 1, reach)))


def _argmax_reach(a_max: float, smooth: float, beta: float, n: int) -> int:
    """No k beyond this attains S*: e^{-beta k} a_max >= S* needs k <= ln(a_max / S*) / beta;
    and A(n + 1) = a_max already."""
    if beta <= 0 or smooth <= 0:
        return n + 1
    return int(min(n + 1, math.floor(math.log(max(a_max / smooth, 1.0)) / beta) + 1))


def _argmax_k(a: object, beta: float, smooth: float, last: int) -> int:
    """The least k <= last with e^{-beta k} A(k) >= S* (1 - 1e-12), by a scan of the k where A
    jumps: between jumps e^{-beta k} A(k) decreases, so the maximiser is a jump (or 0)."""
    k = 0
    while k <= last:
        value = a(k)  # type: ignore[operator]
        if value * math.exp(-beta * k) >= smooth * (1 - 1e-12):
            return k
        lo, hi = k, last + 1  # next k with A(k) > value: A is nondecreasing, bisect
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if a(mid) > value:  # type: ignore[operator]
                hi = mid
            else:
                lo = mid
        k = hi
    return last


def sensitivity_profile(
    sorted_values: np.ndarray,
    lower: float,
    upper: float,
    statistic: str,
    relation: Relation,
    beta: float,
    *,
    quantile: float = 0.5,
    trim_fraction: float = 0.0,
) -> SensitivityProfile:
    """GS, LS(D), A(k) on a grid of k, e^{-beta k} A(k), S*(D) and, for the median, the distance
    to instability; all exact (:mod:`dpexplorer.core.sensitivity`). ``sorted_values`` is the
    column clipped to [lower, upper], sorted ascending. Statistics other than the median,
    quantile and trimmed mean get GS and LS only (their A(k) is not implemented)."""
    if not (math.isfinite(beta) and beta >= 0):
        raise InvalidParameterError(f"β must be finite and >= 0, got {beta}")
    values = np.asarray(sorted_values, dtype=float)
    n = len(values)
    gs, _ = global_sensitivity(
        statistic, relation, lower=lower, upper=upper, n=max(n, 1), trim_fraction=trim_fraction
    )
    ls = local_sensitivity(
        values, lower, upper, statistic, relation=relation, quantile=quantile, trim_fraction=trim_fraction
    )
    dist = distance_to_instability_median(values, relation=relation) if statistic == "median" and n else None
    empty = np.array([], dtype=float)
    profile = functools.partial(
        SensitivityProfile, statistic=statistic, relation=relation, n=n, lower=lower, upper=upper,
        beta=beta, global_sensitivity=gs, local_sensitivity=ls,
    )  # fmt: skip
    try:
        if statistic not in STATISTICS:
            raise NotApplicableError(
                f"the local sensitivity at distance k is implemented for the median, quantiles and "
                f"the trimmed mean; this is a {statistic.replace('_', ' ')}"
            )
        a, a_max = a_function(values, lower, upper, statistic, relation, quantile, trim_fraction)
    except (NotApplicableError, InvalidParameterError) as exc:
        return profile(
            smooth_sensitivity=None, argmax_k=None, distance_to_instability=dist,
            distances=empty.astype(int), local_at_distance=empty, smoothed=empty, note=str(exc),
        )  # fmt: skip
    smooth = smooth_sensitivity(
        values,
        lower,
        upper,
        beta,
        statistic,
        trim_fraction=trim_fraction,
        relation=relation,
        quantile=quantile,
    )
    last = _last_distance(a_max, smooth, beta, n)
    ks = distance_grid(last)
    local_at = np.array([a(int(k)) for k in ks])
    return profile(
        smooth_sensitivity=smooth,
        argmax_k=_argmax_k(a, beta, smooth, _argmax_reach(a_max, smooth, beta, n)),
        distance_to_instability=dist,
        distances=ks,
        local_at_distance=local_at,
        smoothed=local_at * np.exp(-beta * ks),
    )
