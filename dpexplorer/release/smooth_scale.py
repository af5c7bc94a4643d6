"""A provably beta-smooth upper bound on the local sensitivity, as an exact rational.

The smooth-sensitivity mechanisms (Nissim, Raskhodnikova & Smith 2007, "Smooth sensitivity and
sampling", Definition 2.1 and Lemma 2.3; Bun & Steinke 2019, "Average-case averages") are private
for ANY S with (i) S(x) >= LS(x) and (ii) S(x) <= e^beta S(y) for all neighbours x, y. The core's
:func:`~dpexplorer.core.sensitivity.smooth_sensitivity` computes S* = max_k e^(-beta k) A(k) in
floating point (log, exp), whose rounding can break (ii) by an ulp; this module computes instead

    S'(x) = max(G, c * max_{k >= 0} w_k Â_x(k)),   c = 1 + 2^-32,  G = 2^-1000,

exactly (a :class:`~fractions.Fraction`), where

* Â_x(k) is the float the core's A-function returns for A_x(k) = max{LS(z) : d(x, z) <= k} (NRS
  2007, Proposition 3.4; Bun & Steinke 2019, Proposition 3.2). It is A_x(k) after at most two
  IEEE-754 round-to-nearest operations (a subtraction of two data values, then a division by the
  integer n - 2m for the trimmed mean); rounding is monotone, so A_x(k) <= A_y(k + 1) (true for
  neighbours, as d(y, z) <= k + 1) gives Â_x(k) <= Â_y(k + 1), exactly; and Â_x(k) <= Â_max, the
  float of the largest possible A, computed with the same operations;
* w_0 = 1 and w_(k+1) = fl(w_k r) with r >= e^(-beta) / (1 - 2^-53) a float checked with mpmath's
  rigorous interval arithmetic (so w_k / w_(k+1) <= 1 / (r (1 - 2^-53)) <= e^beta: the product of
  two doubles rounds down by a factor at most 1 - 2^-53). The w_k are kept as (mantissa, binary
  exponent) pairs, so they never underflow; products w_k Â are exact rationals.

Then (ii): w_k Â_x(k) <= w_k Â_y(k+1) <= e^beta w_(k+1) Â_y(k+1), so S'(x) <= e^beta S'(y) (the
floor G is the same constant for every dataset). And (i): if Â_x(0) is a normal float, A_x(0) <=
(1 + 2^-53)^2 Â_x(0) <= c Â_x(0); otherwise A_x(0) < 2^-1021 < G. S' >= S* up to the core's
float error, and S' / S* - 1 <= 2^-32 + k* 2^-47 (k* the maximising distance): the price of (i)
and (ii) is negligible. Assumptions: IEEE-754 binary64 with round-to-nearest (CPython floats,
numpy float64), and that the core's A-function computes A(k) exactly up to that rounding (its tests
enumerate every dataset within distance k; ours check (i) and (ii) by brute force).

The maximum over k stops exactly: at the first rise k of Â with c w_k Â_max <= the best term so
far, or at Â(k) = Â_max (every later term is at most the current one). Flat stretches of Â are
skipped by galloping search, so a column with many ties near the median costs O(log n)
evaluations of A (each O(k) under replace, O(n) under add/remove), not one per distance."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import Relation
from dpexplorer.core.sensitivity import a_function
from dpexplorer.release.lazy import context, fraction_bounds

UNIT_ROUNDOFF = Fraction(1, 2**53)
INFLATION = 1 + Fraction(1, 2**32)
"""c: covers the rounding of Â(0) (at most 2^-52 relative) and of the core's own S* (a test
checks S' >= S*)."""
FLOOR = Fraction(1, 2**1000)
"""G: a data-independent floor, above every A(0) that Â(0) could misrepresent (subnormal)."""
WEIGHT_SLACK = 1 + 2.0**-48
MIN_BETA, MAX_BETA = 1e-9, 50.0
"""Range of beta: r < 1 (the weights decrease, which the early stop uses) and r normal."""


def decay_ratio(beta: float) -> float:
    """A float r with r (1 - 2^-53) >= e^(-beta), checked rigorously, and r <= e^(-beta)(1 + 2^-47)."""
    if not MIN_BETA <= beta <= MAX_BETA:  # also refuses NaN
        raise InvalidParameterError(
            f"the smoothing parameter beta must be in [{MIN_BETA}, {MAX_BETA}], got {beta}; "
            "choose a larger or smaller epsilon"
        )
    r = math.exp(-beta) * WEIGHT_SLACK
    ctx = context(120)
    bounds = fraction_bounds(ctx.exp(-ctx.mpf(beta)))
    assert bounds is not None
    while Fraction(r) * (1 - UNIT_ROUNDOFF) < bounds[1]:  # never taken with a sane libm
        r *= WEIGHT_SLACK
    return r


class _Weights:
    """w_0 = 1, w_(k+1) = fl(w_k r) as (mantissa, binary exponent) pairs (module docstring),
    extended on demand."""

    def __init__(self, r: float) -> None:
        self._r = r
        self._pairs = [(1.0, 0)]

    def term(self, k: int, value: float) -> Fraction:
        """c w_k value, exactly."""
        while len(self._pairs) <= k:
            mantissa, exponent = self._pairs[-1]
            scaled, shift = math.frexp(mantissa * self._r)
            self._pairs.append((scaled, exponent + shift))
        mantissa, exponent = self._pairs[k]
        return INFLATION * Fraction(mantissa) * Fraction(value) * Fraction(2) ** exponent


def _next_rise(a: Callable[[int], float], k: int, value: float, limit: int) -> int:
    """The least j > k with a(j) > value = a(k), a nondecreasing: gallop (k+1, k+2, k+4, ...),
    then bisect. ``limit``: a distance at which a certainly exceeds ``value``."""
    step, low = 1, k  # invariant: a(low) == value
    while a(min(k + step, limit)) == value:
        if k + step >= limit:
            raise AssertionError("A(k) did not reach its maximum by k = n + 2; this is a bug")
        low = k + step
        step *= 2
    high = min(k + step, limit)  # a(high) > value
    while high - low > 1:
        middle = (low + high) // 2
        if a(middle) == value:
            low = middle
        else:
            high = middle
    return high


def smooth_upper_bound(
    sorted_values: np.ndarray,
    lower: float,
    upper: float,
    beta: float,
    statistic: str,
    *,
    relation: Relation = "replace",
    quantile: float = 0.5,
    trim_fraction: float = 0.0,
) -> Fraction:
    """S'(x) of the module docstring, exactly: a beta-smooth upper bound on the local sensitivity
    of the median, a quantile or the trimmed mean of the clipped, sorted column ``sorted_values``
    (the conventions of :mod:`dpexplorer.core.sensitivity`). The maximum over k visits only the
    distances where Â rises (Â is nondecreasing: a flat stretch's first term dominates it)."""
    values = np.asarray(sorted_values, dtype=float)
    a, a_max = a_function(values, lower, upper, statistic, relation, quantile, trim_fraction)
    weights = _Weights(decay_ratio(beta))
    best, k, value = FLOOR, 0, a(0)
    while True:
        best = max(best, weights.term(k, value))
        if value == a_max:
            return best
        k = _next_rise(a, k, value, values.size + 2)
        value = a(k)
        if weights.term(k, a_max) <= best:
            return best  # every later term is at most c w_k Â_max
