"""Exact release paths of the numeric mechanisms (grid and rounding: :mod:`.exact`).

* Laplace -> discrete Laplace (CKS 2020, Algorithm 2), charged PureDP(Delta_g / scale_g) <= the
  claimed Delta/b: pure DP of the discrete Laplace mechanism on an integer query (CKS 2020,
  Section 2.1; Ghosh, Roughgarden & Sundararajan 2009). The continuous Laplace privacy-loss
  distribution is NOT claimed (the discrete one puts more mass at the extreme loss).
* Gaussian -> discrete Gaussian (CKS 2020, Algorithm 3), charged ZCDP(Delta_g^2 / (2 sigma_g^2))
  <= the claimed rho (CKS 2020, Theorem 4; Theorem 14 for vectors). The continuous Gaussian
  (epsilon, delta) curve is NOT claimed; accountants convert the rho.
* Propose-test-release -> the discrete distance test of :class:`.exact.DistanceTest`, then, on
  passing, discrete Laplace on the grid with the proposed bound as sensitivity; charged the
  mechanism's own (2 epsilon, delta), which the discrete test and release both stay within.
* Dist2Instability (median) -> the same test, then the median itself (no noise), as the
  mechanism defines it; charged the mechanism's (epsilon, delta)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpexplorer.core.accounting.guarantees import ZCDP, GaussianNoise, LaplaceNoise
from dpexplorer.core.mechanisms.base import Mechanism, NumericInput
from dpexplorer.release import samplers
from dpexplorer.release.exact import (
    BOTTOM,
    INTEGER_STATISTICS,
    ORDER_STATISTICS,
    DistanceTest,
    ExactRelease,
    Grid,
    Value,
    discrete_scale,
    finite_fractions,
    laplace_ci_steps,
    make_grid,
)
from dpexplorer.release.rational import ceil_fraction, float_up, floor_log2
from dpexplorer.release.samplers import BitSource

LAPLACE_SAMPLER = "discrete Laplace, Canonne-Kamath-Steinke 2020 Algorithm 2 (exact, integer arithmetic)"
GAUSSIAN_SAMPLER = "discrete Gaussian, Canonne-Kamath-Steinke 2020 Algorithm 3 (exact, integer arithmetic)"


def _labels(query: NumericInput) -> tuple[str, ...]:
    d = query.value_d.size
    if len(query.labels) == d:
        return tuple(query.labels)
    return (query.statistic,) if d == 1 else tuple(f"{query.statistic}[{i}]" for i in range(d))


def _numeric_grid(query: NumericInput, noise: Fraction, sensitivity: Fraction, norm: str) -> Grid:
    """The grid of the true answers: the exact values where the data layer computed them (sums
    and means for a release), else the floats; a float computed by float arithmetic (not an
    integer statistic nor an order statistic, which is a data value) may sit up to its rounding
    error away from the exact answer, so it gets one more step of sensitivity per coordinate
    (:func:`~dpexplorer.release.exact.make_grid`, ``float_error``)."""
    integral = query.statistic in INTEGER_STATISTICS
    if query.exact_values is not None:
        return make_grid(list(query.exact_values), noise, sensitivity, integral, norm)
    values = finite_fractions(query.value_d, "true answer")
    float_error = not integral and query.statistic not in ORDER_STATISTICS
    return make_grid(values, noise, sensitivity, integral, norm, float_error=float_error)


@dataclass(frozen=True)
class _LaplaceOnGrid:
    """Discrete Laplace noise of scale t/s grid steps on ``grid``, t/s chosen so that
    epsilon = Delta_g s / t <= sensitivity / scale (the mechanism's claim)."""

    grid: Grid
    t: int
    s: int

    @classmethod
    def calibrated(cls, grid: Grid, scale: Fraction, sensitivity: Fraction) -> _LaplaceOnGrid:
        t, s = discrete_scale(grid.sensitivity * scale / sensitivity)
        return cls(grid, t, s)

    @property
    def epsilon(self) -> float:
        """Delta_g s / t, rounded up to a float."""
        return float_up(Fraction(self.grid.sensitivity * self.s, self.t))

    def noise(self, bits: BitSource, size: int) -> np.ndarray:
        return samplers.discrete_laplace_array(self.t, self.s, size, bits)

    def ci_halfwidth(self, level: float) -> float:
        """Half-width for the true (unrounded) answer: noise quantile plus the rounding to the
        grid (half a step, none for a count on an integer grid)."""
        return float((laplace_ci_steps(self.t, self.s, level) + self.grid.rounding) * self.grid.spacing)

    def describe(self) -> dict[str, Any]:
        return {
            **self.grid.describe(),
            "discrete_scale_grid_units": f"{self.t}/{self.s}",
            "noise_scale": float(Fraction(self.t, self.s) * self.grid.spacing),
        }


def laplace_release(query: NumericInput, noise: LaplaceNoise, ci_level: float) -> ExactRelease:
    """Discrete Laplace on the grid; charged epsilon <= Delta / b (module docstring)."""
    sensitivity, scale = Fraction(noise.sensitivity), Fraction(noise.scale)
    laplace = _LaplaceOnGrid.calibrated(_numeric_grid(query, scale, sensitivity, "l1"), scale, sensitivity)
    return ExactRelease.pure(
        laplace.epsilon,
        sampler=LAPLACE_SAMPLER,
        labels=_labels(query),
        **laplace.grid.outputs(laplace.noise),
        provenance=laplace.describe(),
        ci_halfwidth=laplace.ci_halfwidth(ci_level),
        ci_at=laplace.ci_halfwidth,
    )


class DiscreteGaussianCurve:
    """delta(epsilon) of the discrete Gaussian mechanism N_Z(0, sigma2) on an integer query of
    sensitivity Delta, by CKS 2020, Theorem 7:
    delta = P[X > eps sigma2 / Delta - Delta / 2] - e^eps P[X > eps sigma2 / Delta + Delta / 2],
    X ~ N_Z(0, sigma2), evaluated as an UPPER bound from bounds [low, high] of each tail:

    * sigma <= MAX_SUMMED_SIGMA: suffix sums of the pmf over |x| <= 40 sigma + ``reach`` (the
      rest weighs < e^-800), summed from the far end in floats (relative error < n 2^-53 <
      1e-10), widened by 1e-9 relative;
    * larger sigma (2^21 at most on a release grid): f(x) = e^(-x^2 / (2 sigma2)) decreases on
      x >= 0, so for a = floor(t) + 1 > 0, I(a) <= sum_(x >= a) f(x) <= f(a) + I(a) with
      I(a) = integral_a^inf f = sigma sqrt(pi/2) erfc(a / (sigma sqrt 2)), and the normaliser
      sum_x f(x) is within 1 of sigma sqrt(2 pi) (f unimodal, at most 1); widened by 1e-12
      relative for the float evaluation. A tail at t < 0 is bounded by [0, 1]."""

    MAX_SUMMED_SIGMA = 10_000.0

    def __init__(self, sensitivity: int, sigma2: float, reach: float) -> None:
        self.sensitivity, self.sigma2, self.sigma = sensitivity, sigma2, math.sqrt(sigma2)
        self.x = self.tails = None
        if self.sigma <= self.MAX_SUMMED_SIGMA:
            half = math.ceil(40 * self.sigma + reach + sensitivity) + 1
            self.x = np.arange(-half, half + 1, dtype=float)
            suffix = np.cumsum(np.exp(-(self.x * self.x) / (2 * sigma2))[::-1])[::-1]
            self.tails = np.append(suffix / suffix[0], 0.0)  # tails[i] = P[X >= x[i]]

    def tail_bounds(self, t: float) -> tuple[float, float]:
        """[low, high] containing P[X > t]."""
        if self.x is not None and self.tails is not None:
            value = float(self.tails[np.searchsorted(self.x, t, side="right")])
            return value * (1 - 1e-9), value * (1 + 1e-9)
        if t < 0:
            return 0.0, 1.0
        a = math.floor(t) + 1
        from scipy import special  # imported on first use: 0.3-0.9 s, which a Laplace release need not pay

        integral = self.sigma * math.sqrt(math.pi / 2) * float(special.erfc(a / (self.sigma * math.sqrt(2))))
        normaliser = self.sigma * math.sqrt(2 * math.pi)
        high = (integral + math.exp(-a * a / (2 * self.sigma2))) / (normaliser - 1)
        return integral / (normaliser + 1) * (1 - 1e-12), high * (1 + 1e-12)

    def delta(self, epsilon: float) -> float:
        """An upper bound of delta(epsilon)."""
        threshold = epsilon * self.sigma2 / self.sensitivity - self.sensitivity / 2
        first = self.tail_bounds(threshold)[1]
        second = self.tail_bounds(threshold + self.sensitivity)[0]
        return min(1.0, max(0.0, first - math.exp(epsilon) * second))


def discrete_gaussian_epsilon(sensitivity: int, sigma2: float, delta: float, upper: float) -> float:
    """The smallest epsilon (to 1e-6 relative, rounded up) in [0, ``upper``] whose
    :class:`DiscreteGaussianCurve` delta is <= ``delta``; ``upper`` (a valid epsilon, e.g. the
    zCDP conversion) if none is smaller. Bisection: delta(epsilon) decreases in epsilon."""
    curve = DiscreteGaussianCurve(sensitivity, sigma2, upper * sigma2 / sensitivity)
    if curve.delta(upper) > delta:
        return upper
    low, high = 0.0, upper
    while high - low > 1e-6 * high:
        middle = (low + high) / 2
        low, high = (low, middle) if curve.delta(middle) <= delta else (middle, high)
    return high


def discrete_gaussian_ci_steps(sigma2: float, level: float) -> int:
    """Smallest integer h >= 0 with P(|X| > h) <= 1 - level for X ~ N_Z(0, sigma2), judged on an
    UPPER bound of the tail (:meth:`DiscreteGaussianCurve.tail_bounds`), so the interval covers
    at least ``level``. The sub-Gaussian bound P(|X| >= h) <= 2 exp(-h^2 / (2 sigma2)) (CKS 2020)
    gives the start of the search; the exact tail is about 1.39 times narrower at 95 %."""
    curve = DiscreteGaussianCurve(1, sigma2, 0.0)
    high = math.ceil(math.sqrt(2 * sigma2 * math.log(2 / (1 - level))))
    low = -1  # P(|X| > -1) = 1 > 1 - level
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if 2 * curve.tail_bounds(middle)[1] <= 1 - level else (middle, high)
    return high


def gaussian_release(
    query: NumericInput, noise: GaussianNoise, delta: float, ci_level: float
) -> ExactRelease:
    """Discrete Gaussian on the grid; charged rho <= Delta^2 / (2 sigma^2). The ``epsilon``
    reported at ``delta``, offered to accountants that take no zCDP (others compose the rho), is
    for one coordinate the exact curve of CKS 2020, Theorem 7 (:func:`discrete_gaussian_epsilon`),
    else rho + 2 sqrt(rho ln(1/delta)) (Bun & Steinke 2016, Proposition 1.3; the factor
    1 + 1e-12 covers the float rounding of the conversion, a few ulps); both are upper bounds."""
    sensitivity, sigma = Fraction(noise.sensitivity), Fraction(noise.sigma)
    grid = _numeric_grid(query, sigma, sensitivity, "l2")
    target = (grid.sensitivity * sigma / sensitivity) ** 2  # >= (sigma/g)^2: keeps rho
    t = math.isqrt(target.numerator // target.denominator) + 1
    q = 2 ** max(0, 20 - floor_log2(target / t))
    p = ceil_fraction(target * q / t)
    sigma2 = Fraction(t * p, q)
    rho = float_up(Fraction(grid.sensitivity**2) / (2 * sigma2))
    epsilon = (rho + 2 * math.sqrt(rho * math.log(1 / delta))) * (1 + 1e-12)
    if len(grid.centres) == 1:  # the exact curve of Theorem 7 is for one coordinate
        epsilon = min(epsilon, discrete_gaussian_epsilon(grid.sensitivity, float(sigma2), delta, epsilon))

    def half_at(level: float) -> float:
        return float((discrete_gaussian_ci_steps(float(sigma2), level) + grid.rounding) * grid.spacing)

    half = half_at(ci_level)
    return ExactRelease(
        guarantee=ZCDP(rho),
        epsilon=epsilon,
        delta=delta,
        approx=(epsilon, delta),
        rho=rho,
        sampler=GAUSSIAN_SAMPLER,
        labels=_labels(query),
        **grid.outputs(lambda bits, size: samplers.discrete_gaussian_array(t, p, q, size, bits)),
        provenance={
            **grid.describe(),
            "sigma2_grid_units": f"{t * p}/{q}",
            "noise_sigma": math.sqrt(float(sigma2)) * float(grid.spacing),
        },
        ci_halfwidth=half,
        ci_at=half_at,
    )


def ptr_release(
    mechanism: Mechanism, params: Mapping[str, Any], query: NumericInput, ci_level: float
) -> ExactRelease:
    """Propose-test-release with the discrete test and the discrete Laplace answer."""
    epsilon, delta = float(params["epsilon"]), float(params["delta"])
    test = DistanceTest.for_parameters(epsilon, delta)
    distance = int(mechanism.distance(params, query, "D"))  # type: ignore[attr-defined]
    bound = Fraction(float(params["bound"]))
    scale = bound / Fraction(epsilon)
    laplace = _LaplaceOnGrid.calibrated(_numeric_grid(query, scale, bound, "l1"), scale, bound)
    answer = laplace.grid.outputs(laplace.noise)["draw"]
    return ExactRelease.approximate(
        mechanism.guarantee(params, query),
        sampler=f"discrete distance test, then {LAPLACE_SAMPLER}",
        labels=_labels(query)[:1],
        draw=test.then(distance, answer),
        provenance={**laplace.describe(), **test.describe()},
        ci_halfwidth=laplace.ci_halfwidth(ci_level),
    )


def d2i_median_release(mechanism: Mechanism, params: Mapping[str, Any], query: NumericInput) -> ExactRelease:
    """Dist2Instability of the median: the discrete test, then the median itself."""
    epsilon, delta = float(params["epsilon"]), float(params["delta"])
    test = DistanceTest.for_parameters(epsilon, delta)
    if query.sorted_values_d is not None and len(query.sorted_values_d) == 0:
        # An empty column has no median and is at distance 0 from one that has: the release
        # answers ⊥ after the charge instead of refusing before it (a refusal would tell).
        draw: Callable[[BitSource], list[Value]] = lambda bits: [BOTTOM]  # noqa: E731
    else:
        distance = int(mechanism.distances(query)[0])  # type: ignore[attr-defined]
        (median,) = finite_fractions(np.atleast_1d(query.value_d)[:1], "median")
        draw = test.then(distance, lambda bits: [float(median)])
    return ExactRelease.approximate(
        mechanism.guarantee(params, query),
        sampler="discrete distance test (CKS 2020 discrete Laplace), then the exact median",
        labels=("median",),
        draw=draw,
        provenance=test.describe(),
    )
