"""Laplace mechanism: calibration, exact delta, views and sampler, each checked against an
independent computation (scipy.integrate, scipy.stats)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from dpexplorer.core.accounting.guarantees import LaplaceNoise
from dpexplorer.core.errors import InvalidParameterError, NotApplicableError
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import NumericInput, SelectionInput
from dpexplorer.core.mechanisms.laplace import (
    LaplaceMechanism,
    laplace_delta,
    laplace_scale,
    vector_laplace_delta,
)

MECH = LaplaceMechanism()


def scalar_query(d: float = 10.0, d_prime: float = 11.0, sensitivity: float = 1.0) -> NumericInput:
    return NumericInput(np.array([d]), np.array([d_prime]), sensitivity, sensitivity, 100, "count")


def hockey_stick_quad(p: stats.rv_continuous, q: stats.rv_continuous, eps: float) -> float:
    """delta(eps) by adaptive quadrature of max(0, p - e^eps q), both directions."""

    def one_way(a: object, b: object) -> float:
        integrand = lambda x: max(0.0, a.pdf(x) - np.exp(eps) * b.pdf(x))  # noqa: E731
        points = sorted({float(a.mean()), float(b.mean())})
        return integrate.quad(integrand, -60, 60, points=points, limit=400, epsabs=1e-13)[0]

    return max(one_way(p, q), one_way(q, p))


def test_registered_with_declared_params():
    mech = registry.get("laplace")
    assert isinstance(mech, LaplaceMechanism)
    assert [p.name for p in mech.params] == ["epsilon"]
    assert mech.validate({})["epsilon"] == 1.0


def test_scale_is_sensitivity_over_epsilon():
    assert laplace_scale(0.5, 2.0) == pytest.approx(4.0)
    with pytest.raises(InvalidParameterError):
        laplace_scale(0.0, 1.0)
    with pytest.raises(InvalidParameterError, match="sensitivity"):
        laplace_scale(1.0, 0.0)


def test_guarantee_and_claim():
    params = MECH.validate({"epsilon": 0.5})
    query = scalar_query(sensitivity=3.0)
    assert MECH.guarantee(params, query) == LaplaceNoise(6.0, 3.0)
    assert MECH.epsilon_delta(params, query) == (pytest.approx(0.5), 0.0)
    assert MECH.noise_scale(params, query) == pytest.approx(6.0)


@pytest.mark.parametrize(("eps", "shift"), [(0.0, 1.0), (0.3, 1.0), (0.9, 1.0), (0.5, 2.5)])
def test_closed_form_delta_matches_quadrature(eps, shift):
    expected = hockey_stick_quad(stats.laplace(0, 1), stats.laplace(shift, 1), eps)
    assert laplace_delta(eps, shift) == pytest.approx(expected, abs=1e-9)


def test_mechanism_is_pure_dp_on_the_pair():
    params = MECH.validate({"epsilon": 0.7})
    assert MECH.delta_at(params, scalar_query(), 0.7) == 0.0
    assert MECH.delta_at(params, scalar_query(), 0.2) > 0.0


def test_generic_integrator_agrees_with_closed_form():
    from dpexplorer.core import accuracy as acc

    pair = MECH.releases(MECH.validate({"epsilon": 1.3}), scalar_query())
    epsilons = np.array([0.0, 0.4, 1.0, 1.29])
    assert acc.hockey_stick(pair.d, pair.d_prime, epsilons) == pytest.approx(
        laplace_delta(epsilons, 1.3), abs=1e-10
    )


def test_vector_delta_is_a_tight_upper_bound_of_2d_integration():
    """Two differing coordinates: compare with the hockey-stick integral over a 2-D grid."""
    shifts = np.array([0.6, 0.9])
    x = np.linspace(-25, 25, 2501)
    step = x[1] - x[0]
    xx, yy = np.meshgrid(x, x, indexing="ij")
    p = stats.laplace.pdf(xx) * stats.laplace.pdf(yy)
    q = stats.laplace.pdf(xx - shifts[0]) * stats.laplace.pdf(yy - shifts[1])
    for eps in (0.0, 0.5, 1.2):
        grid_delta = np.sum(np.maximum(0.0, p - np.exp(eps) * q)) * step * step
        bound = float(vector_laplace_delta(eps, shifts)[0])
        assert bound == pytest.approx(grid_delta, abs=2e-3)
        assert bound >= grid_delta - 1e-3
    assert vector_laplace_delta(1.5, shifts)[0] == 0.0  # the l1 shift is 1.5 = epsilon


def test_output_distribution_views():
    params = MECH.validate({"epsilon": 1.0})
    out = MECH.output_distribution(params, scalar_query())
    assert np.trapezoid(out.density_d, out.grid) == pytest.approx(1.0, abs=1e-4)
    assert out.density_d == pytest.approx(stats.laplace.pdf(out.grid, 10.0, 1.0))
    assert np.nanmax(np.abs(out.privacy_loss)) == pytest.approx(1.0)
    assert stats.laplace.cdf(out.grid[0], 10, 1) < 1e-9 and stats.laplace.sf(out.grid[-1], 11, 1) < 1e-9


def test_vector_view_shows_the_most_different_coordinate():
    query = NumericInput(np.array([1.0, 5.0, 2.0]), np.array([1.0, 4.0, 2.5]), 1.5, 1.2, 50, "histogram")
    out = MECH.output_distribution(MECH.validate({}), query)
    assert out.coordinate == 1 and "Coordinate 1" in out.note


def test_accuracy_against_scipy():
    params = MECH.validate({"epsilon": 0.5})
    report = MECH.accuracy(params, scalar_query(), ci_level=0.9)
    b = 2.0
    assert report.ci_halfwidth == pytest.approx(stats.laplace.ppf(0.95, scale=b))
    assert report.mse == pytest.approx(stats.laplace.var(scale=b))  # 2 b^2 (seed 002)
    alphas = report.error_tail.x
    assert report.error_tail.y == pytest.approx(2 * stats.laplace.sf(alphas, scale=b), abs=1e-12)
    assert report.error_tail_bound.y == pytest.approx(report.error_tail.y, abs=1e-12)  # exact for Laplace
    curve = report.error_vs_epsilon[0]
    assert curve.y == pytest.approx(np.log(10) / curve.x)


def test_rejects_selection_queries():
    query = SelectionInput(("a", "b"), np.zeros(2), np.zeros(2), 1.0, True, 10)
    with pytest.raises(NotApplicableError):
        MECH.output_distribution(MECH.validate({}), query)


def test_sampler_passes_ks():
    params = MECH.validate({"epsilon": 0.8})
    draws = MECH.simulate(params, scalar_query(), np.random.default_rng(7), 20_000, on="D'")
    assert stats.kstest(draws, stats.laplace(11.0, 1.25).cdf).pvalue > 0.001
