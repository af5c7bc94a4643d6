"""Shared release/accuracy machinery, checked against independent computations (quadrature,
brute-force enumeration over events, scipy.stats)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import integrate, stats

from dpexplorer.core import accuracy as acc

CAUCHY = acc.NoisyRelease(stats.t(1), 0.5, 2.0)
WITH_BOTTOM = acc.NoisyRelease(stats.laplace(), 1.0, 0.5, bottom=0.2)


def test_mass_matches_quadrature_of_pdf():
    for release in (CAUCHY, WITH_BOTTOM):
        for low, high in [(-3.0, 0.2), (0.9, 1.7), (5.0, 40.0)]:
            expected = integrate.quad(release.pdf, low, high, points=[release.loc], epsabs=1e-13)[0]
            assert release.mass(low, high) == pytest.approx(expected, rel=1e-8, abs=1e-13)


def test_output_grid_holds_all_but_a_tiny_mass():
    other = acc.NoisyRelease(stats.t(1), 3.0, 1.0)
    grid = acc.output_grid([CAUCHY, other])
    assert np.all(np.diff(grid) > 0)
    for release in (CAUCHY, other):
        assert release.mass(grid[0], grid[-1]) >= 1 - 3e-10


def test_hockey_stick_with_point_masses_matches_quadrature():
    p = acc.NoisyRelease(stats.laplace(), 0.0, 1.0, bottom=0.3)
    q = acc.NoisyRelease(stats.laplace(), 0.7, 1.5, bottom=0.1)
    for eps in (0.0, 0.4, 1.0):
        forward = integrate.quad(
            lambda x, e=eps: max(0.0, p.pdf(x) - np.exp(e) * q.pdf(x)),
            -80,
            80,
            points=[0, 0.7],
            limit=500,
            epsabs=1e-14,
            epsrel=1e-12,
        )[0] + max(0.0, 0.3 - np.exp(eps) * 0.1)
        backward = integrate.quad(
            lambda x, e=eps: max(0.0, q.pdf(x) - np.exp(e) * p.pdf(x)),
            -80,
            80,
            points=[0, 0.7],
            limit=500,
            epsabs=1e-14,
            epsrel=1e-12,
        )[0] + max(0.0, 0.1 - np.exp(eps) * 0.3)
        assert acc.hockey_stick(p, q, np.array([eps]))[0] == pytest.approx(max(forward, backward), abs=1e-9)


def test_discrete_hockey_stick_is_the_sup_over_all_events():
    """Brute force: sup over every subset S of P(S) - e^eps Q(S), both directions."""
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
    for eps in (0.0, 0.3, 1.1):
        best = 0.0
        for r in range(6):
            for subset in itertools.combinations(range(5), r):
                s = list(subset)
                best = max(best, p[s].sum() - np.exp(eps) * q[s].sum(), q[s].sum() - np.exp(eps) * p[s].sum())
        assert acc.discrete_hockey_stick(p, q, np.array([eps]))[0] == pytest.approx(best, abs=1e-12)


def test_error_tail_ci_and_mse():
    release = acc.NoisyRelease(stats.norm(), 2.0, 3.0)
    alphas = np.array([0.0, 1.0, 5.0])
    assert acc.error_tail(release, 2.0, alphas) == pytest.approx(2 * stats.norm.sf(alphas, scale=3.0))
    assert acc.ci_halfwidth(release, 2.0, 0.9) == pytest.approx(stats.norm.ppf(0.95, scale=3.0), rel=1e-9)
    assert acc.mean_squared_error(release, 2.0) == pytest.approx(9.0)
    assert acc.mean_squared_error(CAUCHY, 0.5) == np.inf
    # "⊥" counts as an error: with P(⊥) = 0.2, a 90% interval cannot exist
    assert acc.ci_halfwidth(WITH_BOTTOM, 1.0, 0.9) == np.inf
    assert acc.error_tail(WITH_BOTTOM, 1.0, np.array([100.0]))[0] == pytest.approx(0.2)


def test_sampler_with_bottom():
    draws = WITH_BOTTOM.sample(np.random.default_rng(1), 50_000)
    bottoms = np.isnan(draws).sum()
    assert stats.binomtest(int(bottoms), draws.size, 0.2).pvalue > 0.001
    assert stats.kstest(draws[~np.isnan(draws)], stats.laplace(1.0, 0.5).cdf).pvalue > 0.001


def test_error_vs_n_scaling():
    mean_curve = acc.error_vs_n(1000, "mean", 2.0, 0.95)
    assert mean_curve.y == pytest.approx(2.0 * 1000 / mean_curve.x)
    count_curve = acc.error_vs_n(1000, "count", 2.0, 0.95)
    assert count_curve.y == pytest.approx(2.0 / count_curve.x)


def test_release_accuracy_report():
    report = acc.release_accuracy(
        WITH_BOTTOM, 1.0, 0.5, bound=lambda a: np.exp(-a / 0.5), bound_name="Laplace"
    )
    assert report.error_tail.y[0] == 1.0 and report.error_tail_bound.kind == "bound"
    assert any("⊥" in note for note in report.notes)
