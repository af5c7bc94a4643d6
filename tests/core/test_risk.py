"""Trade-off curves against Neyman-Pearson tests on explicit distributions and known closed
forms (Dong, Roth & Su 2022); posterior bounds against Bayes' rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpexplorer.core.accounting.guarantees import ZCDP, GaussianNoise, LaplaceNoise, PureDP
from dpexplorer.core.accounting.single import gaussian_delta
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.risk import posterior_bound, tradeoff_curve_epsilon_delta, tradeoff_curve_profile

ALPHAS = np.linspace(0.0, 1.0, 201)


def neyman_pearson(p: np.ndarray, q: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """Smallest type II error 1 - E_Q[phi] over tests phi with E_P[phi] <= alpha, for discrete
    P, Q: reject on outcomes in decreasing order of q/p, randomising on the last one."""
    with np.errstate(divide="ignore"):
        ratio = np.where(p > 0, q / np.where(p > 0, p, 1), np.inf)
    order = np.argsort(-ratio, kind="stable")
    cum_p = np.concatenate([[0.0], np.cumsum(p[order])])
    cum_q = np.concatenate([[0.0], np.cumsum(q[order])])
    # the (alpha, power) frontier is the piecewise-linear curve through these points
    power = np.interp(alphas, cum_p, cum_q, right=cum_q[-1])
    zero_alpha_power = cum_q[np.searchsorted(cum_p, 0.0, side="right") - 1]
    return 1 - np.where(alphas == 0, zero_alpha_power, power)


@pytest.mark.parametrize(("eps", "delta"), [(0.5, 0.0), (1.0, 1e-2), (2.0, 0.1)])
def test_epsilon_delta_curve_is_the_dominating_pairs_neyman_pearson_curve(eps, delta):
    e = math.exp(eps)
    p = np.array([delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0])
    q = p[::-1]
    expected = neyman_pearson(p, q, ALPHAS)
    assert tradeoff_curve_epsilon_delta(eps, delta, ALPHAS) == pytest.approx(expected, abs=1e-12)


def gaussian_tradeoff(mu: float, alphas: np.ndarray) -> np.ndarray:
    return stats.norm.cdf(stats.norm.ppf(1 - alphas) - mu)  # Dong, Roth & Su 2022, Eq. (6)


def test_profile_curve_for_gaussians_is_a_tight_lower_bound():
    mu = 2 / 3 * math.sqrt(4)  # four Gaussians of sigma 1.5
    curve = tradeoff_curve_profile([GaussianNoise(1.5)] * 4, ALPHAS)
    exact = gaussian_tradeoff(mu, ALPHAS)
    assert np.all(curve <= exact + 1e-9)
    assert np.max(exact - curve) < 5e-3


def laplace_tradeoff(eps: float, alphas: np.ndarray) -> np.ndarray:
    """Exact trade-off function of Laplace noise (Dong, Roth & Su 2022, Appendix)."""
    low = alphas < math.exp(-eps) / 2
    high = alphas >= 0.5
    middle = math.exp(-eps) / (4 * np.where(low | high, 0.5, alphas))
    return np.where(low, 1 - math.exp(eps) * alphas, np.where(high, math.exp(-eps) * (1 - alphas), middle))


def test_profile_curve_for_laplace_is_below_the_exact_one():
    curve = tradeoff_curve_profile([LaplaceNoise(2.0)], ALPHAS)
    exact = laplace_tradeoff(0.5, ALPHAS)
    assert np.all(curve <= exact + 1e-9)
    assert np.max(exact - curve) < 0.02


def test_profile_curve_for_zcdp_is_below_a_gaussian_with_the_same_rho():
    rho = 0.3
    curve = tradeoff_curve_profile([ZCDP(rho)], ALPHAS)
    assert np.all(curve <= gaussian_tradeoff(math.sqrt(2 * rho), ALPHAS) + 1e-9)
    assert curve[100] > 0.1  # still informative


def test_empty_list_leaves_the_attacker_guessing():
    assert tradeoff_curve_profile([], ALPHAS) == pytest.approx(1 - ALPHAS)


def test_pure_posterior_is_bayes_rule_on_randomized_response():
    eps, prior = 1.2, 0.1
    p_yes, q_yes = math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps))
    bayes = prior * p_yes / (prior * p_yes + (1 - prior) * q_yes)
    assert posterior_bound(eps, 0.0, prior) == pytest.approx(bayes, rel=1e-12)


@pytest.mark.parametrize("failure", [None, 0.05])
def test_approximate_posterior_fails_with_at_most_the_stated_probability(failure):
    """Gaussian mechanism (mu = 1) at its exact (eps, delta): the privacy loss L ~ N(1/2, 1)."""
    eps, prior = 3.0, 0.3
    delta = float(gaussian_delta(eps, 1.0))
    bound = posterior_bound(eps, delta, prior, failure_probability=failure)
    # posterior(L) = prior e^L / (prior e^L + 1 - prior) > bound  <=>  L > threshold
    threshold = math.log(bound / (1 - bound) * (1 - prior) / prior)
    failure_mass = stats.norm(0.5, 1.0).sf(threshold)
    assert failure_mass <= (10 * delta if failure is None else failure) * (1 + 1e-9)
    assert bound < 1


def test_invalid_risk_inputs():
    with pytest.raises(InvalidParameterError):
        posterior_bound(1.0, 0.0, 1.0)
    with pytest.raises(InvalidParameterError):
        posterior_bound(1.0, 1e-3, 0.5, failure_probability=1e-4)
    with pytest.raises(InvalidParameterError):
        tradeoff_curve_epsilon_delta(1.0, 0.0, np.array([1.5]))
    with pytest.raises(InvalidParameterError):
        tradeoff_curve_profile([PureDP(1.0)], np.array([-0.1]))
