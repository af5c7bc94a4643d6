"""Smooth-sensitivity mechanisms (Cauchy, Student's t, Laplace-log-normal): noise laws against
independent quadrature and scipy.stats, guarantees checked numerically on worst-case
configurations, views and samplers."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy import integrate, special, stats

from dpexplorer.core.accounting.guarantees import ZCDP, PureDP
from dpexplorer.core.accuracy import HOCKEY_STICK_POINTS, _own_grid
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import NumericInput
from dpexplorer.core.mechanisms.smooth import (
    LaplaceLogNormal,
    SmoothCauchy,
    SmoothLaplaceLogNormal,
    SmoothStudentT,
    student_t_epsilon,
    zcdp_to_approx,
)
from dpexplorer.core.sensitivity import quantile_of_sorted, smooth_sensitivity

CAUCHY, STUDENT, LLN = SmoothCauchy(), SmoothStudentT(), SmoothLaplaceLogNormal()


def median_query(n: int = 301, seed: int = 0) -> NumericInput:
    """A clipped column and its neighbour with the largest value replaced by the lower bound."""
    rng = np.random.default_rng(seed)
    x = np.sort(np.clip(rng.normal(40, 13, n), 17, 90))
    x_prime = np.sort(np.r_[x[:-1], 17.0])
    return NumericInput(
        np.array([quantile_of_sorted(x, 0.5, 17)]),
        np.array([quantile_of_sorted(x_prime, 0.5, 17)]),
        73.0,
        73.0,
        n,
        "median",
        relation="replace",
        bounds=(17.0, 90.0),
        sorted_values_d=x,
        sorted_values_d_prime=x_prime,
    )


def test_registered():
    names = {m.name for m in registry.all_mechanisms()}
    assert {"smooth_cauchy", "smooth_student_t", "smooth_lln"} <= names


# ---------------------------------------------------------------- the Laplace-log-normal law
@pytest.mark.parametrize("sigma", [0.3, 1.0])
def test_lln_density_and_tail_match_quadrature(sigma):
    """Independent: p(z) = integral over y of phi(y) Lap(z; scale e^{sigma y}) dy by quad."""
    law = LaplaceLogNormal(sigma)
    for z in (0.0, 0.7, -2.5, 15.0):
        density = integrate.quad(
            lambda y, z=z: stats.norm.pdf(y) * stats.laplace.pdf(z, scale=np.exp(sigma * y)),
            -12,
            12,
            limit=200,
        )[0]
        tail = integrate.quad(
            lambda y, z=z: stats.norm.pdf(y) * stats.laplace.sf(z, scale=np.exp(sigma * y)),
            -12,
            12,
            limit=200,
        )[0]
        assert law.pdf(np.array(z)) == pytest.approx(density, rel=1e-7)
        assert law.sf(np.array(z)) == pytest.approx(tail, rel=1e-7)
    assert law.isf(1e-6) == pytest.approx(-law.ppf(1e-6))
    assert law.sf(np.array(law.isf(1e-6))) == pytest.approx(1e-6, rel=1e-8)
    assert law.var() == pytest.approx(stats.laplace.var() * stats.lognorm(2 * sigma).mean())


def test_lln_sampler_passes_ks():
    law = LaplaceLogNormal(0.5)
    draws = law.rvs(size=10_000, random_state=np.random.default_rng(11))
    assert stats.kstest(draws, law.cdf).pvalue > 0.001


# ---------------------------------------------------------------- the guarantees, numerically
@pytest.mark.parametrize("dof", [1, 3, 10])
def test_student_t_claim_bounds_the_worst_privacy_loss(dof):
    """Worst configuration: shift s*c (|f(D)-f(D')| = S(D)) and scale ratio e^{+-t}; the sup of
    |ln p/q| from scipy's t densities on a wide grid must not exceed the claimed epsilon."""
    mech = SmoothStudentT()
    params = mech.validate({"epsilon": 1.0, "dof": dof})
    t, s = mech.smoothing(params)
    claim = student_t_epsilon(t, s, dof)
    assert claim == pytest.approx(1.0)
    x = np.concatenate(
        [np.linspace(-50, 50, 200_001), np.geomspace(50, 1e8, 2000), -np.geomspace(50, 1e8, 2000)]
    )
    worst = 0.0
    for ratio in (np.exp(t), np.exp(-t)):
        for shift in (s, -s):
            loss = stats.t.logpdf(x, dof) - stats.t.logpdf(x, dof, loc=shift, scale=ratio)
            worst = max(worst, np.max(np.abs(loss)))
    assert 0.5 * claim < worst <= claim


def test_lln_claim_bounds_renyi_divergence_on_worst_configuration():
    """zCDP: D_alpha(M(D) || M(D')) <= rho * alpha. Numerically on shift s*c, scale ratio e^t."""
    params = LLN.validate({"epsilon": 1.0, "sigma": 0.5})
    t, s = LLN.smoothing(params)
    rho = LLN.guarantee(params, median_query()).rho
    law = LaplaceLogNormal(0.5)
    x = np.linspace(-200, 200, 8_001)
    log_p = law.logpdf(x)
    for ratio, shift in [(np.exp(t), s), (np.exp(-t), s)]:
        log_q = law.logpdf((x - shift) / ratio) - np.log(ratio)
        for alpha in (1.5, 2.0, 4.0):
            integrand = np.exp(alpha * log_p + (1 - alpha) * log_q)
            divergence = np.log(np.trapezoid(integrand, x)) / (alpha - 1)
            assert divergence <= rho * alpha


def test_guarantee_types():
    query = median_query()
    assert CAUCHY.guarantee(CAUCHY.validate({"epsilon": 0.5}), query) == PureDP(pytest.approx(0.5))
    assert CAUCHY.smoothing({"epsilon": 1.0}) == (0.25, 0.5)  # 2t + s = 1 (t ~ T(1))
    lln = LLN.guarantee(LLN.validate({"epsilon": 0.8}), query)
    assert isinstance(lln, ZCDP) and lln.rho == pytest.approx(0.32)
    eps, delta = LLN.epsilon_delta(LLN.validate({"epsilon": 0.8, "delta": 1e-6}), query)
    assert delta == 1e-6 and eps == pytest.approx(zcdp_to_approx(0.32, 1e-6))


# ---------------------------------------------------------------- views on a real pair
def test_releases_use_the_smooth_sensitivity_of_each_side():
    query = median_query()
    params = STUDENT.validate({"epsilon": 1.0, "dof": 3})
    t, s = STUDENT.smoothing(params)
    pair = STUDENT.releases(params, query)
    for release, values in ((pair.d, query.sorted_values_d), (pair.d_prime, query.sorted_values_d_prime)):
        assert release.scale == pytest.approx(smooth_sensitivity(values, 17, 90, t, "median") / s)
    assert pair.d.loc == query.value_d[0] and pair.d_prime.loc == query.value_d_prime[0]


def test_privacy_loss_and_delta_against_scipy_and_quadrature():
    query = median_query(seed=3)
    params = CAUCHY.validate({"epsilon": 1.0})
    pair = CAUCHY.releases(params, query)
    out = CAUCHY.output_distribution(params, query)
    expected = stats.cauchy.logpdf(out.grid, pair.d.loc, pair.d.scale) - stats.cauchy.logpdf(
        out.grid, pair.d_prime.loc, pair.d_prime.scale
    )
    assert out.privacy_loss == pytest.approx(expected, abs=1e-9)
    assert np.max(np.abs(out.privacy_loss)) <= 1.0
    assert CAUCHY.delta_at(params, query, 1.0) == 0.0
    p = stats.cauchy(pair.d.loc, pair.d.scale)
    q = stats.cauchy(pair.d_prime.loc, pair.d_prime.scale)
    for eps in (0.0, 0.02):
        quad = max(
            integrate.quad(
                lambda x, a=a, b=b, e=eps: max(0.0, a.pdf(x) - np.exp(e) * b.pdf(x)),
                -np.inf,
                np.inf,
                epsabs=1e-13,
                limit=500,
            )[0]
            for a, b in ((p, q), (q, p))
        )
        assert CAUCHY.delta_at(params, query, eps) == pytest.approx(quad, abs=1e-8)


def test_lln_pair_has_zero_delta_at_the_converted_epsilon():
    query = median_query()
    params = LLN.validate({"epsilon": 1.0, "delta": 1e-6})
    eps, delta = LLN.epsilon_delta(params, query)
    assert LLN.delta_at(params, query, eps) <= delta


def test_accuracy_against_scipy():
    query = median_query()
    params = STUDENT.validate({"epsilon": 1.0, "dof": 5})
    report = STUDENT.accuracy(params, query, ci_level=0.9)
    scale = STUDENT.noise_scale(params, query)
    assert report.ci_halfwidth == pytest.approx(stats.t.ppf(0.95, 5) * scale, rel=1e-8)
    assert report.mse == pytest.approx(stats.t.var(5) * scale**2)
    assert CAUCHY.accuracy(CAUCHY.validate({}), query).mse == np.inf
    assert report.error_vs_epsilon[0].y[0] > report.error_vs_epsilon[0].y[-1]
    assert report.error_vs_n[0].x[-1] == query.n


def test_rejects_queries_without_data():
    count = NumericInput(np.array([3.0]), np.array([4.0]), 1.0, 1.0, 10, "count")
    assert "median" in CAUCHY.accepts(count)
    with pytest.raises(NotApplicableError):
        CAUCHY.releases(CAUCHY.validate({}), count)
    assert CAUCHY.accepts(median_query()) is None


@pytest.mark.parametrize("mech", [CAUCHY, STUDENT])
def test_samplers_pass_ks(mech):
    query = median_query()
    params = mech.validate({})
    pair = mech.releases(params, query)
    draws = mech.simulate(params, query, np.random.default_rng(5), 20_000, on="D'")
    law = stats.t(mech.dof(params), pair.d_prime.loc, pair.d_prime.scale)
    assert stats.kstest(draws, law.cdf).pvalue > 0.001


def test_heavily_tied_median_keeps_exact_views():
    """Integer data with thousands of ties: S_t is ~1e-36, far below float resolution at the
    value. The views switch to offsets from f(D); delta and the CI stay exact (scale-free)."""
    rng = np.random.default_rng(1)
    x = np.sort(np.clip(np.round(rng.normal(40, 13, 40_001)), 17, 90))
    x_prime = np.sort(np.r_[x[:-1], 17.0])
    query = NumericInput(
        np.array([quantile_of_sorted(x, 0.5, 17)]),
        np.array([quantile_of_sorted(x_prime, 0.5, 17)]),
        73.0,
        73.0,
        x.size,
        "median",
        relation="replace",
        bounds=(17.0, 90.0),
        sorted_values_d=x,
        sorted_values_d_prime=x_prime,
    )
    params = STUDENT.validate({"epsilon": 1.0, "dof": 3})
    pair = STUDENT.releases(params, query)
    assert pair.d.scale < 1e-20
    out = STUDENT.output_distribution(params, query)
    assert "x = (output − " in out.note and out.grid.size > 1000
    # issue 28: read as "Grid = (output − 37) / 1.65e-120"; now the value as a value, the scale named
    assert re.search(r"x = \(output − \d+(\.\d+)?\) ÷ \d(\.\d+)?e-\d+\.", out.note), out.note
    assert "its scale, " in out.note and "equals" in out.note
    assert (out.origin, out.unit) == (pair.d.loc, pair.d.scale)  # in noise scales of M(D)
    assert np.trapezoid(out.density_d, out.grid) == pytest.approx(1.0, abs=1e-3)
    z = np.array([-3.0, 0.0, 0.5, 4.0])  # densities per noise scale: the standard t on D
    np.testing.assert_allclose(np.interp(z, out.grid, out.density_d), stats.t.pdf(z, 3), rtol=1e-3)
    assert out.to_grid(pair.d.loc) == 0.0
    ratio = pair.d_prime.scale / pair.d.scale  # same location: the loss at 0 is ln of the ratio
    assert STUDENT.delta_at(params, query, 0.0) == pytest.approx(
        integrate.quad(
            lambda z: max(0.0, stats.t.pdf(z, 3) - stats.t.pdf(z, 3, scale=ratio)), -np.inf, np.inf
        )[0],
        abs=1e-8,
    )
    report = STUDENT.accuracy(params, query)
    assert report.ci_halfwidth == pytest.approx(stats.t.ppf(0.975, 3) * pair.d.scale, rel=1e-8)


def test_trimmed_mean_release():
    rng = np.random.default_rng(2)
    x = np.sort(rng.uniform(0, 10, 200))
    x_prime = np.sort(np.r_[x[1:], 10.0])
    trimmed = [float(np.mean(v[20:180])) for v in (x, x_prime)]
    query = NumericInput(
        np.array([trimmed[0]]),
        np.array([trimmed[1]]),
        10 / 160,
        10 / 160,
        200,
        "trimmed_mean",
        relation="replace",
        bounds=(0.0, 10.0),
        sorted_values_d=x,
        sorted_values_d_prime=x_prime,
        trim_fraction=0.1,
    )
    params = STUDENT.validate({"epsilon": 1.0, "dof": 3})
    t, s = STUDENT.smoothing(params)
    expected = smooth_sensitivity(x, 0, 10, t, "trimmed_mean", trim_fraction=0.1) / s
    assert STUDENT.noise_scale(params, query) == pytest.approx(expected)
    assert STUDENT.delta_at(params, query, 1.0) == 0.0
    add_remove = NumericInput(**{**query.__dict__, "relation": "add_remove"})
    assert "replace" in STUDENT.accepts(add_remove)


@pytest.mark.parametrize("sigma", [0.05, 0.5, 2.0])
def test_lln_sum_over_the_nodes_that_matter_equals_the_full_sum(sigma):
    """Leaving out the nodes far below each row's largest term changes nothing visible."""
    law = LaplaceLogNormal(sigma)
    nodes, log_weights = law.nodes
    rng = np.random.default_rng(3)
    z = np.concatenate([rng.normal(0, 5, 2000), rng.uniform(-300, 300, 500), np.linspace(-1e3, 1e3, 801)])
    z = np.concatenate([z, -z[:700]])  # repeated |z|, as a symmetric grid has: each mapped back
    shift = -sigma * nodes
    for extra in (0.0, 1.0):
        terms = log_weights + extra * shift - np.abs(z)[:, None] * np.exp(shift)
        full = special.logsumexp(terms, axis=1) - np.log(2)
        np.testing.assert_allclose(law._log_mix(z, extra), full, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("sigma", [0.05, 0.15, 0.37, 0.5, 1.0, 2.0])
def test_lln_quadrature_step_leaves_ln_density_and_tail_exact_to_rounding(sigma):
    """The law's trapezoid step (larger for small sigma) against one four times finer over a
    wider y range, out to ten times the 1e-16 quantile. A step 1.9 times the law's (sigma h =
    0.15) misses by up to 8e-10 at sigma = 0.37; this allows 1e-12 on ln p and ln P(Z > z)."""
    from dpexplorer.core.mechanisms.smooth import log_mixture, quadrature_nodes

    law = LaplaceLogNormal(sigma)
    nodes = law.nodes[0]
    fine = quadrature_nodes(sigma, (nodes[1] - nodes[0]) / 4, limit=30.0)
    far = 10 * law.isf(1e-16)
    z = np.concatenate([np.linspace(0, 10, 300), np.geomspace(10, far, 300)])
    for extra in (0.0, 1.0):  # the tail, then the density
        np.testing.assert_allclose(
            law._log_mix(z, extra), log_mixture(z, sigma, extra, fine), rtol=0, atol=1e-12
        )


def test_the_view_and_delta_share_one_evaluation_of_the_lln_densities(monkeypatch):
    """The drawn densities are part of the hockey-stick grid of the same pair, so showing a
    pair and its delta integrates the Laplace-log-normal density once; each law's density on
    its own points is the cached standard one, so at a new epsilon only the cross terms (each
    side at the other's points) are integrated. What is drawn is the exact density."""
    evaluated: list[int] = []
    original = LaplaceLogNormal.logpdf

    def counting(self, z):
        evaluated.append(np.size(z))
        return original(self, z)

    monkeypatch.setattr(LaplaceLogNormal, "logpdf", counting)
    query = median_query(seed=5)
    for epsilon in (0.77, 0.91):  # sigma 0.43: a law no other test caches
        evaluated.clear()
        params = LLN.validate({"epsilon": epsilon, "sigma": 0.43})
        out = LLN.output_distribution(params, query)
        LLN.delta_at(params, query, 0.3)
        large = [size for size in evaluated if size > 100]
        pair = LLN.releases(params, query)
        np.testing.assert_allclose(out.density_d, pair.d.pdf(out.grid), rtol=1e-12)
        np.testing.assert_allclose(out.density_d_prime, pair.d_prime.pdf(out.grid), rtol=1e-12)
        assert 900 < out.grid.size < 1500
    half = HOCKEY_STICK_POINTS // 2 + 1
    assert large == [half, half]  # the second epsilon: the two cross terms only
    own = _own_grid(LaplaceLogNormal(0.43))[0]
    assert own.size == half and np.array_equal(own, -own[::-1])  # symmetric: |z| comes in pairs
