"""Propose-test-release and Dist2Instability: the chance of "⊥", the output laws, the exact
delta against the claims, and the samplers (KS, binomial, chi-square)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from dpexplorer.core.accounting.guarantees import ApproxDP
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import CategoricalOutput, NumericInput, SelectionInput
from dpexplorer.core.mechanisms.ptr import (
    Dist2InstabilityMedian,
    Dist2InstabilityMode,
    ProposeTestRelease,
    bottom_probability,
    pass_threshold,
)
from dpexplorer.core.sensitivity import NO_SUCH_DISTANCE, quantile_of_sorted

PTR, D2I, D2I_MODE = ProposeTestRelease(), Dist2InstabilityMedian(), Dist2InstabilityMode()


def column_query(
    x: np.ndarray, x_prime: np.ndarray, statistic: str = "median", **extra: float
) -> NumericInput:
    x, x_prime = np.sort(x), np.sort(x_prime)
    return NumericInput(
        np.array([quantile_of_sorted(x, 0.5, -5)]),
        np.array([quantile_of_sorted(x_prime, 0.5, -5)]),
        10.0,
        10.0,
        x.size,
        statistic,
        relation="replace",
        bounds=(-5.0, 5.0),
        sorted_values_d=x,
        sorted_values_d_prime=x_prime,
        **extra,
    )


def tied_query() -> NumericInput:
    """Median 0 with local sensitivity 0 on D and 1 on D' (one 0 replaced by -1)."""
    x = np.r_[-np.ones(40), np.zeros(3), np.ones(40)]
    x_prime = np.r_[-np.ones(41), np.zeros(2), np.ones(40)]
    return column_query(x, x_prime)


def borderline_query(seed: int = 0) -> NumericInput:
    """A spread column whose distance to high sensitivity sits near the test threshold."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(-1, 1, 61), 1)
    x_prime = x.copy()
    x_prime[np.argmax(x)] = -1.0
    return column_query(x, x_prime)


def test_registered():
    names = {m.name for m in registry.all_mechanisms()}
    assert {"ptr", "dist2instability", "dist2instability_mode"} <= names


def test_bottom_probability_matches_integral_of_the_laplace_density():
    eps, delta = 0.5, 1e-4
    threshold = pass_threshold(eps, delta)
    assert threshold == pytest.approx(np.log(1e4) / 0.5)
    for distance in (0, 5, 18, 40):
        law = stats.laplace(distance, 1 / eps)
        expected = (
            integrate.quad(law.pdf, -np.inf, distance)[0] + integrate.quad(law.pdf, distance, threshold)[0]
        )
        assert bottom_probability(distance, eps, delta) == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert bottom_probability(NO_SUCH_DISTANCE, eps, delta) == 0.0
    # a dataset at distance 0 passes the test with probability delta / 2 only
    assert 1 - bottom_probability(0, eps, delta) == pytest.approx(delta / 2)


def test_ptr_claims_and_views():
    query = tied_query()
    params = PTR.validate({"epsilon": 1.0, "delta": 1e-5, "bound": 2.0})
    assert PTR.guarantee(params, query) == ApproxDP(2.0, 1e-5)
    assert PTR.noise_scale(params, query) == 2.0
    out = PTR.output_distribution(params, query)
    (bottom,) = out.point_masses
    assert bottom.label == "⊥" and bottom.mass_d == pytest.approx(bottom_probability(41, 1.0, 1e-5))
    assert np.trapezoid(out.density_d, out.grid) == pytest.approx(1 - bottom.mass_d, abs=1e-4)
    assert out.density_d == pytest.approx((1 - bottom.mass_d) * stats.laplace.pdf(out.grid, 0.0, 2.0))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ptr_delta_within_claim_on_borderline_pairs(seed):
    query = borderline_query(seed)
    for bound in (0.05, 0.1, 0.3):
        params = PTR.validate({"epsilon": 1.0, "delta": 1e-3, "bound": bound})
        distances = (PTR.distance(params, query, "D"), PTR.distance(params, query, "D'"))
        assert abs(distances[0] - distances[1]) <= 1
        assert PTR.delta_at(params, query, 2.0) <= 1e-3


def test_ptr_trimmed_mean_and_accuracy():
    rng = np.random.default_rng(4)
    x = rng.uniform(-2, 2, 200)
    x_prime = np.r_[x[:-1], 5.0]
    query = column_query(x, x_prime, "trimmed_mean", trim_fraction=0.1)
    params = PTR.validate({"epsilon": 1.0, "delta": 1e-6, "bound": 0.1})
    report = PTR.accuracy(params, query, ci_level=0.9)
    bottom = PTR.releases(params, query).d.bottom
    if bottom < 0.1:
        assert report.ci_halfwidth >= stats.laplace.ppf(0.95, scale=0.1)
    assert report.error_tail.y[-1] >= bottom
    assert len(report.error_vs_n) == 1


def test_ptr_sampler():
    query = borderline_query(1)
    params = PTR.validate({"epsilon": 1.0, "delta": 1e-3, "bound": 0.1})
    release = PTR.releases(params, query).d
    draws = PTR.simulate(params, query, np.random.default_rng(2), 20_000)
    answered = draws[~np.isnan(draws)]
    assert stats.binomtest(draws.size - answered.size, draws.size, release.bottom).pvalue > 0.001
    assert stats.kstest(answered, stats.laplace(release.loc, 0.1).cdf).pvalue > 0.001


def test_ptr_rejects_counts():
    count = NumericInput(np.array([3.0]), np.array([4.0]), 1.0, 1.0, 10, "count")
    assert PTR.accepts(count) is not None
    with pytest.raises(NotApplicableError):
        PTR.releases(PTR.validate({}), count)


# ---------------------------------------------------------------- Dist2Instability
def test_dist2instability_median_views_and_delta():
    query = column_query(np.r_[np.zeros(10), np.ones(9)], np.r_[np.zeros(9), np.ones(10)])
    params = D2I.validate({"epsilon": 1.0, "delta": 1e-2})
    out = D2I.output_distribution(params, query)
    d, _ = D2I.distances(query)
    assert out.discrete and out.point_masses[0].label == "⊥"
    assert out.point_masses[0].mass_d == pytest.approx(bottom_probability(d, 1.0, 1e-2))
    assert out.density_d.sum() + out.point_masses[0].mass_d == pytest.approx(1.0)
    assert D2I.delta_at(params, query, 1.0) <= 1e-2
    assert D2I.guarantee(params, query) == ApproxDP(1.0, 1e-2)
    report = D2I.accuracy(params, query)
    assert report.error_tail.y == pytest.approx(out.point_masses[0].mass_d)
    assert report.mse == 0.0 and len(report.error_vs_n) == 1


def test_dist2instability_median_sampler_chi_square():
    query = column_query(np.r_[np.zeros(30), np.ones(29)], np.r_[np.zeros(29), np.ones(30)])
    params = D2I.validate({"epsilon": 0.5, "delta": 1e-2})
    pmf_d, _ = D2I.pmfs(params, query)
    draws = D2I.simulate(params, query, np.random.default_rng(9), 20_000)
    observed = np.array([np.count_nonzero(draws == v) for v in D2I.output_distribution(params, query).grid])
    observed = np.r_[observed, np.isnan(draws).sum()]
    keep = pmf_d > 0
    assert stats.chisquare(observed[keep], pmf_d[keep] * draws.size).pvalue > 0.001


def selection(counts: list[int], counts_prime: list[int]) -> SelectionInput:
    return SelectionInput(
        ("a", "b", "c"), np.array(counts), np.array(counts_prime), 1.0, False, sum(counts), relation="replace"
    )


def test_dist2instability_mode():
    query = selection([30, 20, 5], [29, 21, 5])
    params = D2I_MODE.validate({"epsilon": 1.0, "delta": 1e-3})
    out = D2I_MODE.output_distribution(params, query)
    assert isinstance(out, CategoricalOutput) and out.labels == ("a", "b", "c", "⊥")
    # replace: moving 5 rows from "a" to "b" reaches (25, 25, 5), whose neighbour (24, 26, 5) has
    # mode "b"; from D' (29, 21, 5), 4 moves reach (25, 25, 5)
    assert D2I_MODE.distances(query) == (5, 4)
    assert out.pmf_d[-1] == pytest.approx(bottom_probability(5, 1.0, 1e-3))
    assert D2I_MODE.delta_at(params, query, 1.0) <= 1e-3
    draws = D2I_MODE.simulate(params, query, np.random.default_rng(1), 20_000)
    assert set(np.unique(draws)) <= {-1, 0}
    assert stats.binomtest(int(np.sum(draws == -1)), draws.size, out.pmf_d[-1]).pvalue > 0.001
    with pytest.raises(NotApplicableError):
        D2I_MODE.pmfs(params, SelectionInput(("a", "b"), np.array([0.5, 1]), np.array([0.5, 1]), 1, False, 2))
