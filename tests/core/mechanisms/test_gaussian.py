"""Gaussian mechanism: classical and analytic calibration, exact delta, views and sampler,
checked against independent computations (scipy.integrate.quad of the hockey-stick integral,
scipy.stats)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from dpexplorer.core import accuracy as acc
from dpexplorer.core.accounting.guarantees import GaussianNoise
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import NumericInput
from dpexplorer.core.mechanisms.gaussian import (
    GaussianMechanism,
    gaussian_delta,
    gaussian_sigma_analytic,
    gaussian_sigma_classical,
)

MECH = GaussianMechanism()


def quad_delta(sigma: float, shift: float, eps: float) -> float:
    """Independent: integral of max(0, phi_sigma(x) - e^eps phi_sigma(x - shift)) by quad. The
    integrand is positive exactly left of x* = shift/2 - eps sigma^2/shift, so integrate there."""
    x_star = shift / 2 - eps * sigma**2 / shift

    def integrand(x: float) -> float:
        return stats.norm.pdf(x, 0, sigma) - np.exp(eps) * stats.norm.pdf(x, shift, sigma)

    return integrate.quad(integrand, -np.inf, x_star, epsabs=1e-15, epsrel=1e-12)[0]


def test_analytic_sigma_reference_value():
    """sigma = 3.7306 for (1, 1e-5), sensitivity 1. Checked independently: quad_delta (numerical
    integration of the hockey-stick divergence, no use of the closed form) at 3.73055 is above
    1e-5 and at 3.73065 below it, so the exact root rounds to 3.7306."""
    sigma = gaussian_sigma_analytic(1.0, 1e-5, 1.0)
    assert round(sigma, 4) == 3.7306
    assert quad_delta(3.73055, 1.0, 1.0) > 1e-5 > quad_delta(3.73065, 1.0, 1.0)
    assert quad_delta(sigma, 1.0, 1.0) == pytest.approx(1e-5, rel=1e-6)


@pytest.mark.parametrize(("sigma", "shift", "eps"), [(1.0, 1.0, 0.5), (2.0, 1.0, 0.1), (0.7, 2.0, 3.0)])
def test_exact_delta_matches_quadrature(sigma, shift, eps):
    assert gaussian_delta(eps, shift / sigma) == pytest.approx(
        quad_delta(sigma, shift, eps), rel=1e-7, abs=1e-14
    )


def test_classical_sigma_formula_and_dominance():
    assert gaussian_sigma_classical(0.5, 1e-6, 2.0) == pytest.approx(np.sqrt(2 * np.log(1.25e6)) * 4.0)
    for eps in (0.1, 0.5, 0.9):
        classical = gaussian_sigma_classical(eps, 1e-6, 1.0)
        assert gaussian_sigma_analytic(eps, 1e-6, 1.0) < classical
        assert gaussian_delta(eps, 1.0 / classical) <= 1e-6  # the classical one is private (eps < 1)


def test_analytic_sigma_scales_with_sensitivity_and_is_not_below_root():
    sigma = gaussian_sigma_analytic(2.0, 1e-8, 3.0)
    assert sigma == pytest.approx(3.0 * gaussian_sigma_analytic(2.0, 1e-8, 1.0), rel=1e-10)
    assert gaussian_delta(2.0, 3.0 / sigma) <= 1e-8


@pytest.mark.parametrize(("eps", "delta", "sens"), [(0, 1e-5, 1), (1, 0, 1), (1, 1, 1), (1, 1e-5, -1)])
def test_bad_inputs_raise(eps, delta, sens):
    with pytest.raises(InvalidParameterError):
        gaussian_sigma_analytic(eps, delta, sens)
    with pytest.raises(InvalidParameterError):
        gaussian_sigma_classical(eps, delta, sens)


def test_mechanism_claims_and_views():
    mech = registry.get("gaussian")
    params = mech.validate({"epsilon": 1.0, "delta": 1e-5})
    query = NumericInput(np.array([3.0]), np.array([4.0]), 1.0, 1.0, 100, "count")
    assert mech.guarantee(params, query) == GaussianNoise(pytest.approx(3.7306, abs=1e-4), 1.0)
    assert mech.delta_at(params, query, 1.0) == pytest.approx(1e-5, rel=1e-9)
    out = mech.output_distribution(params, query)
    assert np.trapezoid(out.density_d_prime, out.grid) == pytest.approx(1.0, abs=1e-4)
    sigma = mech.noise_scale(params, query)
    expected_loss = ((out.grid - 4.0) ** 2 - (out.grid - 3.0) ** 2) / (2 * sigma**2)
    assert out.privacy_loss == pytest.approx(expected_loss, abs=1e-9)
    classical = mech.validate({"epsilon": 0.5, "calibration": "classical"})
    assert mech.noise_scale(classical, query) == pytest.approx(gaussian_sigma_classical(0.5, 1e-6, 1.0))


def test_generic_integrator_agrees_with_closed_form():
    p = acc.NoisyRelease(stats.norm(), 0.0, 1.5)
    q = acc.NoisyRelease(stats.norm(), 1.0, 1.5)
    epsilons = np.array([0.0, 0.3, 1.0])
    assert acc.hockey_stick(p, q, epsilons) == pytest.approx(gaussian_delta(epsilons, 1 / 1.5), abs=1e-10)


def test_vector_delta_uses_l2_distance():
    query = NumericInput(np.array([0.0, 0.0]), np.array([0.6, 0.8]), 1.4, 1.0, 10, "histogram")
    params = MECH.validate({"epsilon": 1.0, "delta": 1e-5})
    sigma = MECH.noise_scale(params, query)
    assert MECH.delta_at(params, query, 1.0) == pytest.approx(quad_delta(sigma, 1.0, 1.0), rel=1e-6)


def test_accuracy_against_scipy():
    params = MECH.validate({"epsilon": 1.0, "delta": 1e-5})
    query = NumericInput(np.array([3.0]), np.array([4.0]), 1.0, 1.0, 100, "mean")
    report = MECH.accuracy(params, query, ci_level=0.95)
    sigma = MECH.noise_scale(params, query)
    assert report.ci_halfwidth == pytest.approx(stats.norm.ppf(0.975) * sigma, rel=1e-9)
    assert report.mse == pytest.approx(sigma**2)
    alphas = report.error_tail.x[1:]
    assert np.all(report.error_tail_bound.y[1:] >= report.error_tail.y[1:] - 1e-15)
    assert report.error_tail.y[1:] == pytest.approx(2 * stats.norm.sf(alphas, scale=sigma), abs=1e-12)
    n_curve = report.error_vs_n[0]
    assert n_curve.y == pytest.approx(report.ci_halfwidth * 100 / n_curve.x)  # a mean: error ~ 1/n


def test_sampler_passes_ks():
    params = MECH.validate({"epsilon": 1.0, "delta": 1e-5})
    query = NumericInput(np.array([3.0]), np.array([4.0]), 1.0, 1.0, 100, "count")
    draws = MECH.simulate(params, query, np.random.default_rng(3), 20_000)
    sigma = MECH.noise_scale(params, query)
    assert stats.kstest(draws, stats.norm(3.0, sigma).cdf).pvalue > 0.001
