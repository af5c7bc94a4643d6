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

from dpexplorer.core.accounting.guarantees import ZCDP, ApproxDP, GaussianNoise, LaplaceNoise, PureDP
from dpexplorer.core.mechanisms.base import Mechanism, NumericInput
from dpexplorer.release import samplers
from dpexplorer.release.exact import (
    BOTTOM,
    INTEGER_STATISTICS,
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
    values = finite_fractions(query.value_d, "true answer")
    return make_grid(values, noise, sensitivity, query.statistic in INTEGER_STATISTICS, norm)


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
        """Half-width for the true (unrounded) answer: noise quantile plus half a grid step."""
        return float((laplace_ci_steps(self.t, self.s, level) + Fraction(1, 2)) * self.grid.spacing)

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
    return ExactRelease(
        guarantee=PureDP(laplace.epsilon),
        epsilon=laplace.epsilon,
        delta=0.0,
        rho=None,
        sampler=LAPLACE_SAMPLER,
        labels=_labels(query),
        **laplace.grid.outputs(laplace.noise),
        provenance=laplace.describe(),
        ci_halfwidth=laplace.ci_halfwidth(ci_level),
    )


def gaussian_release(
    query: NumericInput, noise: GaussianNoise, delta: float, ci_level: float
) -> ExactRelease:
    """Discrete Gaussian on the grid; charged rho <= Delta^2 / (2 sigma^2). The ``epsilon``
    reported at ``delta`` is rho + 2 sqrt(rho ln(1/delta)), an upper bound (Bun & Steinke 2016,
    Proposition 1.3), offered to accountants that take no zCDP; others compose the rho.
    (The factor 1 + 1e-12 covers the float rounding of the conversion, a few ulps.)"""
    sensitivity, sigma = Fraction(noise.sensitivity), Fraction(noise.sigma)
    grid = _numeric_grid(query, sigma, sensitivity, "l2")
    target = (grid.sensitivity * sigma / sensitivity) ** 2  # >= (sigma/g)^2: keeps rho
    t = math.isqrt(target.numerator // target.denominator) + 1
    q = 2 ** max(0, 20 - floor_log2(target / t))
    p = ceil_fraction(target * q / t)
    sigma2 = Fraction(t * p, q)
    rho = float_up(Fraction(grid.sensitivity**2) / (2 * sigma2))
    epsilon = (rho + 2 * math.sqrt(rho * math.log(1 / delta))) * (1 + 1e-12)
    # the discrete Gaussian is sigma-sub-Gaussian (CKS 2020): P(|X| >= h) <= 2 exp(-h^2 / (2 sigma^2))
    half = (math.sqrt(2 * float(sigma2) * math.log(2 / (1 - ci_level))) + 0.5) * float(grid.spacing)
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
    )


def _tested(
    test: DistanceTest, distance: int, answer: Callable[[BitSource], list[Value]]
) -> Callable[[BitSource], list[Value]]:
    """``draw``: run the test, then ``answer(bits)`` on passing, else ⊥."""

    def draw(bits: BitSource) -> list[Value]:
        return answer(bits) if test.passes(distance, bits) else [BOTTOM]

    return draw


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
    claimed = mechanism.guarantee(params, query)
    assert isinstance(claimed, ApproxDP)
    return ExactRelease(
        guarantee=claimed,
        epsilon=claimed.epsilon,
        delta=claimed.delta,
        rho=None,
        sampler=f"discrete distance test, then {LAPLACE_SAMPLER}",
        labels=_labels(query)[:1],
        draw=_tested(test, distance, answer),
        provenance={**laplace.describe(), **test.describe()},
        ci_halfwidth=laplace.ci_halfwidth(ci_level),
    )


def d2i_median_release(mechanism: Mechanism, params: Mapping[str, Any], query: NumericInput) -> ExactRelease:
    """Dist2Instability of the median: the discrete test, then the median itself."""
    epsilon, delta = float(params["epsilon"]), float(params["delta"])
    test = DistanceTest.for_parameters(epsilon, delta)
    distance = int(mechanism.distances(query)[0])  # type: ignore[attr-defined]
    (median,) = finite_fractions(np.atleast_1d(query.value_d)[:1], "median")
    claimed = mechanism.guarantee(params, query)
    assert isinstance(claimed, ApproxDP)
    return ExactRelease(
        guarantee=claimed,
        epsilon=claimed.epsilon,
        delta=claimed.delta,
        rho=None,
        sampler="discrete distance test (CKS 2020 discrete Laplace), then the exact median",
        labels=("median",),
        draw=_tested(test, distance, lambda bits: [float(median)]),
        provenance=test.describe(),
    )
