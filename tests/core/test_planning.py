"""Tests of dpexplorer.core.planning against independent computation: the Laplace CI half-width
b ln(1/beta) and the Gaussian one sigma z_(1+level)/2 with Balle & Wang's exact delta (from
scipy.stats), basic composition by hand, and the ledger's own exact comparison."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import optimize, stats

from dpexplorer.core import planning as P
from dpexplorer.core.accounting.compose import epsilon_at
from dpexplorer.core.accounting.guarantees import GaussianNoise, LaplaceNoise, PureDP
from dpexplorer.core.errors import DPExplorerError, InvalidParameterError
from dpexplorer.core.mechanisms.base import NumericInput


def _query(sensitivity: float = 1.0) -> NumericInput:
    return NumericInput(
        value_d=np.array([100.0]),
        value_d_prime=np.array([100.0 + sensitivity]),
        sensitivity_l1=sensitivity,
        sensitivity_l2=sensitivity,
        n=1000,
        statistic="count",
    )


def _laplace(
    label: str, epsilon: float, held: bool = False, sensitivity: float = 1.0
) -> P.PlannedMeasurement:
    return P.PlannedMeasurement(label, "laplace", {"epsilon": epsilon}, _query(sensitivity), held=held)


def _gaussian_delta(epsilon: float, mu: float) -> float:
    """Balle & Wang 2018, Theorem 8, written with scipy.stats.norm (independent of the core)."""
    return float(
        stats.norm.cdf(mu / 2 - epsilon / mu) - math.exp(epsilon) * stats.norm.cdf(-mu / 2 - epsilon / mu)
    )


# ------------------------------------------------------------------ solve_epsilon_for_error
@pytest.mark.parametrize(
    ("sensitivity", "level", "target"), [(1.0, 0.95, 10.0), (5.0, 0.9, 3.0), (1.0, 0.99, 0.7)]
)
def test_laplace_epsilon_solved_matches_the_closed_form(
    sensitivity: float, level: float, target: float
) -> None:
    # P(|Lap(b)| > b ln(1/beta)) = beta, b = Delta / eps  =>  eps = Delta ln(1/beta) / target.
    expected = sensitivity * math.log(1 / (1 - level)) / target
    solved = P.solve_epsilon_for_error("laplace", {}, _query(sensitivity), target, level)
    assert solved == pytest.approx(expected, rel=1e-8)
    assert solved >= expected * (1 - 1e-12)  # the smallest epsilon that meets the target, not less


def test_gaussian_epsilon_solved_gives_the_target_sigma() -> None:
    target, level, delta = 8.0, 0.95, 1e-6
    solved = P.solve_epsilon_for_error("gaussian", {"delta": delta}, _query(), target, level)
    sigma = target / stats.norm.ppf((1 + level) / 2)  # the half-width of N(0, sigma^2) at level
    # The analytic Gaussian at the solved epsilon has exactly this sigma: delta(eps) = delta.
    assert _gaussian_delta(solved, 1 / sigma) == pytest.approx(delta, rel=1e-6)


def test_unreachable_target_says_so() -> None:
    with pytest.raises(DPExplorerError, match="cannot be reached"):
        P.solve_epsilon_for_error("laplace", {}, _query(), 1e-4, 0.95)
    with pytest.raises(InvalidParameterError, match="positive"):
        P.solve_epsilon_for_error("laplace", {}, _query(), -1.0, 0.95)


def test_apply_target_writes_the_solved_epsilon() -> None:
    item = P.PlannedMeasurement("c", "laplace", {"epsilon": 1.0}, _query(), target=P.ErrorTarget(10.0, 0.95))
    solved = P.apply_target(item)
    assert solved.params["epsilon"] == pytest.approx(math.log(20) / 10, rel=1e-8)
    assert item.params["epsilon"] == 1.0 and solved.fixed


# ------------------------------------------------------------------ share_budget
def test_share_budget_by_hand_under_basic_composition() -> None:
    # Held 0.5; the others (0.2, 0.3) share 2.0 - 0.5 = 1.5 in the ratio 2 : 3 -> 0.6, 0.9.
    plan = (_laplace("a", 0.5, held=True), _laplace("b", 0.2), _laplace("c", 0.3))
    shared = P.share_budget(plan, 2.0, 1e-6, "basic")
    eps = [item.params["epsilon"] for item in shared]
    assert eps[0] == 0.5
    assert eps[1:] == pytest.approx([0.6, 0.9], rel=1e-7)
    assert sum(eps) <= 2.0
    assert [item.label for item in shared] == ["a", "b", "c"]


def test_share_budget_counts_what_is_released() -> None:
    # 2.0 - 0.4 released - 0.5 held = 1.1 shared 2 : 3 -> 0.44, 0.66.
    plan = (_laplace("a", 0.5, held=True), _laplace("b", 0.2), _laplace("c", 0.3))
    shared = P.share_budget(plan, 2.0, 1e-6, "basic", released=[PureDP(0.4)])
    assert [i.params["epsilon"] for i in shared[1:]] == pytest.approx([0.44, 0.66], rel=1e-7)


def test_shared_plan_is_accepted_by_the_ledgers_exact_comparison() -> None:
    from dpexplorer.release.ledger import total_epsilon

    plan = tuple(_laplace(str(i), 0.1 * (i + 1), sensitivity=3.0) for i in range(5))
    shared = P.share_budget(plan, 1.0, 1e-6, "basic")
    assert total_epsilon(P.plan_guarantees(shared), "basic", 1e-6) <= Fraction(1.0)


def test_held_statistics_that_do_not_fit_are_named() -> None:
    plan = (_laplace("a", 1.5, held=True), _laplace("b", 1.0, held=True), _laplace("c", 0.3))
    with pytest.raises(DPExplorerError, match=r"the held statistics alone use ε = 2\.5 of the budget ε = 2"):
        P.share_budget(plan, 2.0, 1e-6, "basic")


def test_share_gaussians_under_pld_meets_the_budget_exactly() -> None:
    # k Gaussians compose to one Gaussian with mu^2 = sum (Delta / sigma_i)^2 (exact); check the
    # shared plan's delta at the budget epsilon with Balle & Wang's formula from scipy.
    plan = tuple(
        P.PlannedMeasurement(str(i), "gaussian", {"epsilon": e, "delta": 1e-7}, _query())
        for i, e in enumerate((0.3, 0.6, 0.9))
    )
    shared = P.share_budget(plan, 1.5, 1e-6, "pld")
    sigmas = [g.sigma for g in P.plan_guarantees(shared)]  # type: ignore[union-attr]
    mu = math.sqrt(sum(1 / s**2 for s in sigmas))
    assert _gaussian_delta(1.5, mu) <= 1e-6 * (1 + 1e-6)
    assert _gaussian_delta(1.5 * (1 - 1e-4), mu) > 1e-6  # and not far below the budget
    eps = [item.params["epsilon"] for item in shared]
    assert eps[1] / eps[0] == pytest.approx(2.0) and eps[2] / eps[0] == pytest.approx(3.0)


def test_share_when_even_the_largest_epsilons_fit_uses_them() -> None:
    shared = P.share_budget((_laplace("a", 1.0),), 50.0, 1e-6, "basic")
    assert shared[0].params["epsilon"] == pytest.approx(20.0)  # the declared maximum


def test_share_under_a_method_that_does_not_apply_says_why() -> None:
    plan = (_laplace("a", 0.5, held=True), _laplace("b", 0.2), _laplace("c", 0.3))
    with pytest.raises(DPExplorerError, match="optimal"):
        P.share_budget(plan, 2.0, 1e-6, "optimal")


# ------------------------------------------------------------------ budget_report
def test_budget_report_of_three_laplace_statistics() -> None:
    plan = (_laplace("a", 0.5), _laplace("b", 0.2), _laplace("c", 0.25, sensitivity=2.0))
    guarantees = P.plan_guarantees(plan)
    assert guarantees == [LaplaceNoise(2.0, 1.0), LaplaceNoise(5.0, 1.0), LaplaceNoise(8.0, 2.0)]
    released = [PureDP(0.3)]
    report = P.budget_report(guarantees, released, 2.0, 1e-6)
    basic = report.get("basic")
    assert basic.released == pytest.approx(0.3) and basic.total == pytest.approx(1.25)  # by hand
    for row in report.methods:
        if row.total is not None:
            assert row.total == epsilon_at(released + guarantees, row.method, 1e-6)
            assert row.fits == (row.total <= 2.0)
    totals = {r.method: r.total for r in report.methods if r.total is not None}
    assert report.best == min(totals, key=totals.__getitem__)
    assert report.remaining == pytest.approx(2.0 - totals[report.best])
    assert report.fits and "fits" in report.message
    assert report.get("optimal").total is None and report.get("optimal").reason


def test_budget_report_over_budget_says_so() -> None:
    report = P.budget_report([PureDP(1.0)] * 3, [], 1.0, 1e-6)
    assert not report.fits and report.remaining is not None and report.remaining < 0
    assert "does not fit" in report.message


def test_pure_budget_with_delta_zero_allows_only_basic() -> None:
    report = P.budget_report([LaplaceNoise(2.0)], [PureDP(0.25)], 1.0, 0.0)
    assert report.get("basic").total == pytest.approx(0.75)
    assert all(r.total is None for r in report.methods if r.method != "basic")
    gaussian = P.budget_report([GaussianNoise(2.0)], [], 1.0, 0.0)
    assert gaussian.get("basic").total is None and not gaussian.fits


def test_privacy_profiles_are_the_accountants() -> None:
    deltas = np.array([1e-9, 1e-6, 1e-3])
    guarantees = [LaplaceNoise(2.0), LaplaceNoise(4.0)]
    profiles = P.privacy_profiles(guarantees, deltas)
    grid, basic = profiles["basic"]
    assert list(grid) == list(deltas) and basic == pytest.approx([0.75] * 3)
    assert np.all(np.isnan(profiles["optimal"][1]))
    pld_deltas, pld_eps = profiles["pld"]
    assert pld_deltas.size > 5 and np.all(
        (pld_deltas >= 1e-9 * (1 - 1e-6)) & (pld_deltas <= 1e-3 * (1 + 1e-6))
    )
    for d, e in zip(pld_deltas, pld_eps, strict=True):  # each point lies on the accountant's profile
        assert epsilon_at(guarantees, "pld", float(d)) == pytest.approx(e, abs=1e-6)


def test_pld_profile_with_gaussian_noise_matches_the_closed_form() -> None:
    # Two Gaussians of sigma 2 compose to one of sigma sqrt(2): delta(eps) by Balle & Wang.
    deltas, eps = P.privacy_profiles([GaussianNoise(2.0)] * 2, np.array([1e-10, 1e-2]))["pld"]
    for d, e in zip(deltas, eps, strict=True):
        assert _gaussian_delta(float(e), 1 / math.sqrt(2)) == pytest.approx(d, rel=1e-4, abs=1e-15)


def test_planned_measurement_owns_its_params() -> None:
    params = {"epsilon": 0.5}
    item = P.PlannedMeasurement("a", "laplace", params, _query())
    params["epsilon"] = 9.0
    assert item.params["epsilon"] == 0.5
    assert P.claimed_epsilon_delta(item) == (0.5, 0.0)
    assert P.guarantee_epsilon_delta(GaussianNoise(1.0), 1e-6)[1] == 1e-6


def test_released_rows_are_solved_together_as_one_by_one():
    """Issue 18: the budget view's released rows (thousands in a ledger) come from one batched
    solve; each pair is the guarantee's own, to the solver's tolerance."""
    from dpexplorer.core.accounting.guarantees import ZCDP, GaussianNoise, LaplaceNoise
    from dpexplorer.core.planning import guarantee_epsilon_delta, guarantees_epsilon_delta

    items = [GaussianNoise(3.0), LaplaceNoise(2.0), ZCDP(0.1), GaussianNoise(0.5, 2.0)]
    for delta in (1e-6, 0.0):
        together = guarantees_epsilon_delta(items, delta)
        for g, (eps, d) in zip(items, together, strict=True):
            alone = guarantee_epsilon_delta(g, delta)
            assert d == alone[1] and eps == pytest.approx(alone[0], rel=1e-9)


# ------------------------------------------------------------------ k releases (compare mode)
def _gaussian_delta_stable(epsilon: float, mu: float) -> float:
    """Balle & Wang 2018, Theorem 8 with its second term in log space (no overflow at a large
    epsilon): the exact delta(epsilon) of a Gaussian with mu = Delta / sigma."""
    second = math.exp(epsilon + stats.norm.logcdf(-epsilon / mu - mu / 2))
    return float(stats.norm.cdf(-epsilon / mu + mu / 2) - second)


def test_repeated_totals_laplace_basic_adds_and_tight_grows_slower():
    ks = [1, 10, 100, 1000]
    totals = P.repeated_totals(LaplaceNoise(scale=2.0, sensitivity=1.0), ks, 1e-6)
    np.testing.assert_allclose(totals["basic"], [0.5 * k for k in ks], rtol=1e-12)
    assert np.all(totals["pld"] <= totals["basic"] * (1 + 1e-9))
    assert totals["pld"][-1] < 0.6 * totals["basic"][-1]  # ~ sqrt(k) beats k at k = 1000
    # delta = 0: only basic composition of a pure guarantee, k times its epsilon
    pure = P.repeated_totals(PureDP(0.3), [1, 7], 0.0)
    np.testing.assert_allclose(pure["basic"], [0.3, 2.1])
    assert np.all(np.isnan(pure["pld"])) and np.all(np.isnan(pure["advanced"]))


def test_repeated_totals_gaussian_tight_matches_the_composed_gaussian():
    """k Gaussians with mu = Delta / sigma compose to one with mu sqrt(k) (exactly): the tight
    accountant's epsilon is an upper bound on that one's exact epsilon, and close to it."""
    sigma, delta = 4.0, 1e-6
    ks = [1, 10, 100, 1000]
    totals = P.repeated_totals(GaussianNoise(sigma=sigma, sensitivity=1.0), ks, delta, ("basic", "pld"))
    for k, eps in zip(ks, totals["pld"], strict=True):
        mu = math.sqrt(k) / sigma
        exact = optimize.brentq(
            lambda e, mu=mu: _gaussian_delta_stable(e, mu) - delta, 1e-9, 100.0, xtol=1e-12
        )
        assert exact * (1 - 1e-9) <= eps <= exact * 1.01 + 1e-3
    assert totals["pld"][-1] < totals["basic"][-1] / 10


def test_repeated_totals_refuses_bad_counts_and_delta():
    with pytest.raises(InvalidParameterError):
        P.repeated_totals(PureDP(1.0), [0], 1e-6)
    with pytest.raises(InvalidParameterError):
        P.repeated_totals(PureDP(1.0), [1], 1.0)
