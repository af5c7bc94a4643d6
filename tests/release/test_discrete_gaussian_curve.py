"""The exact (epsilon, delta) curve of the discrete Gaussian (CKS 2020, Theorem 7) that a
Gaussian release offers to the pld / optimal accountants, against brute force."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dpexplorer.core.accounting.guarantees import GaussianNoise
from dpexplorer.core.mechanisms.base import NumericInput
from dpexplorer.release.numeric_paths import (
    DiscreteGaussianCurve,
    discrete_gaussian_epsilon,
    gaussian_release,
)


def brute_delta(epsilon: float, sensitivity: int, sigma2: float) -> mpmath.mpf:
    """sum_x max(0, p(x) - e^eps q(x)), p = N_Z(0, sigma2), q = N_Z(Delta, sigma2), at 60 digits
    (the hockey-stick divergence by definition; no use of Theorem 7)."""
    with mpmath.workdps(60):
        reach = int(40 * math.sqrt(sigma2)) + 2 * sensitivity
        xs = range(-reach, reach + sensitivity + 1)
        weight = [
            mpmath.exp(-(mpmath.mpf(x) ** 2) / (2 * sigma2)) for x in range(-reach - sensitivity, reach + 1)
        ]
        total = mpmath.fsum(weight)
        pmf = dict(zip(range(-reach - sensitivity, reach + 1), weight, strict=True))
        e = mpmath.exp(epsilon)
        return mpmath.fsum(
            max(mpmath.mpf(0), (pmf.get(x, 0) - e * pmf.get(x - sensitivity, 0)) / total) for x in xs
        )


@pytest.mark.parametrize(("sensitivity", "sigma2"), [(1, 4.0), (1, 3.7306**2), (3, 30.0)])
@pytest.mark.parametrize("epsilon", [0.2, 1.0, 2.5])
def test_curve_is_a_tight_upper_bound_of_the_hockey_stick(sensitivity, sigma2, epsilon):
    exact = float(brute_delta(epsilon, sensitivity, sigma2))
    bound = DiscreteGaussianCurve(sensitivity, sigma2, epsilon * sigma2).delta(epsilon)
    assert bound >= exact
    assert bound <= exact * (1 + 1e-6) + 1e-300


def test_integral_bounds_for_large_sigma_enclose_the_summed_tails():
    summed = DiscreteGaussianCurve(1000, 9000.0**2, 1e5)
    bounded = DiscreteGaussianCurve(1000, 9000.0**2, 1e5)
    bounded.x = bounded.tails = None  # force the branch used above MAX_SUMMED_SIGMA
    for t in (0.0, 5_000.0, 20_000.0, 45_000.0):
        low, high = bounded.tail_bounds(t)
        s_low, s_high = summed.tail_bounds(t)
        assert low <= s_high and s_low <= high
        assert high - low <= 2e-3 * high
    for epsilon in (0.1, 0.5, 1.0):
        assert bounded.delta(epsilon) >= summed.delta(epsilon) * (1 - 1e-6)


def test_epsilon_is_the_smallest_within_tolerance_and_never_above_the_conversion():
    sensitivity, sigma2, delta = 1, 3.7306**2, 1e-5
    rho = sensitivity**2 / (2 * sigma2)
    conversion = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    epsilon = discrete_gaussian_epsilon(sensitivity, sigma2, delta, conversion)
    assert epsilon < conversion
    assert float(brute_delta(epsilon, sensitivity, sigma2)) <= delta
    assert float(brute_delta(epsilon * (1 - 1e-5), sensitivity, sigma2)) > delta
    assert discrete_gaussian_epsilon(sensitivity, 0.01, delta, 0.5) == 0.5  # none smaller: the given one


def test_a_count_release_offers_the_tight_epsilon_to_approximate_accountants():
    query = NumericInput(
        statistic="count",
        value_d=np.array([100.0]),
        value_d_prime=np.array([101.0]),
        sensitivity_l1=1.0,
        sensitivity_l2=1.0,
        n=100,
    )
    release = gaussian_release(query, GaussianNoise(sensitivity=1.0, sigma=3.7306), 1e-5, 0.95)
    rho = release.rho
    assert release.approx == (release.epsilon, 1e-5)
    assert release.epsilon < rho + 2 * math.sqrt(rho * math.log(1e5))
    sigma2 = float(Fraction(release.provenance["sigma2_grid_units"]))
    assert release.provenance["grid_spacing"] == 1.0 and sigma2 >= 3.7306**2
    assert float(brute_delta(release.epsilon, 1, sigma2)) <= 1e-5
