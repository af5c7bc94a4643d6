"""Report-noisy-max with Gumbel, exponential (permute-and-flip) and Laplace noise."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpexplorer.core.audit import audit_mechanism
from dpexplorer.core.mechanisms.base import SelectionInput
from dpexplorer.core.mechanisms.exponential import ExponentialMechanism, max_abs_loss
from dpexplorer.core.mechanisms.noisy_max import (
    ReportNoisyMax,
    laplace_noisy_max_log_pmf,
    permute_and_flip_log_pmf,
)

MECH = ReportNoisyMax()
NOISES = ("gumbel", "exponential", "laplace")


def adversarial_input(others: int = 20) -> SelectionInput:
    scores_d = np.array([1.0] + [0.0] * others)
    scores_dp = np.array([0.0] + [1.0] * others)
    return SelectionInput(tuple(f"c{i}" for i in range(others + 1)), scores_d, scores_dp, 1.0, False, 100)


def small_input() -> SelectionInput:
    scores = np.array([3.0, 1.0, 0.0, 2.5, 2.9])
    return SelectionInput(tuple("abcde"), scores, scores + np.array([-1, 1, 0, 1, -1.0]), 1.0, False, 30)


def test_permute_and_flip_matches_enumeration_of_permutations() -> None:
    scores, scale = np.array([3.0, 1.0, 0.0, 2.5, 2.9]), 0.8
    p = np.exp((scores - scores.max()) / scale)
    brute = np.zeros(5)
    orders = list(itertools.permutations(range(5)))
    for order in orders:
        survive = 1.0
        for r in order:  # flip coins in this order; the first heads wins
            brute[r] += survive * p[r] / len(orders)
            survive *= 1 - p[r]
    np.testing.assert_allclose(np.exp(permute_and_flip_log_pmf(scores, scale)), brute, rtol=1e-12)


def test_permute_and_flip_keeps_tiny_probabilities() -> None:
    log_pmf = permute_and_flip_log_pmf(np.array([0.0, -5000.0, -1.0]), 1.0)
    # candidate 1 wins only when placed first, or second behind candidate 2 flipping tails
    expected = -5000.0 + math.log((1 + (1 - math.exp(-1)) / 2) / 3)
    assert log_pmf[1] == pytest.approx(expected, rel=1e-12)


def test_laplace_two_candidates_closed_form() -> None:
    """P(u1 + X1 > u2 + X2) = 1 - exp(-d/b)(1 + d/(2b))/2 for d = u1 - u2 >= 0 (difference of
    two Laplace variables)."""
    for d, b in [(0.0, 1.0), (1.3, 0.7), (10.0, 2.0), (80.0, 1.0)]:
        p_win = 1 - 0.5 * math.exp(-d / b) * (1 + d / (2 * b))
        p_lose = 0.5 * math.exp(-d / b) * (1 + d / (2 * b))
        log_pmf = laplace_noisy_max_log_pmf(np.array([d, 0.0]), b)
        assert np.exp(log_pmf[0]) == pytest.approx(p_win, rel=1e-8)
        assert log_pmf[1] == pytest.approx(math.log(p_lose), rel=1e-8)


def test_laplace_three_candidates_against_grid_integration() -> None:
    scores, b = np.array([0.5, 0.0, -0.7]), 0.9
    x = np.linspace(-40, 40, 400_001)
    law = stats.laplace(scale=b)
    expected = [
        integrate.simpson(
            law.pdf(x - scores[r]) * np.prod([law.cdf(x - scores[j]) for j in range(3) if j != r], axis=0),
            x=x,
        )
        for r in range(3)
    ]
    np.testing.assert_allclose(np.exp(laplace_noisy_max_log_pmf(scores, b)), expected, rtol=1e-6)


def test_gumbel_equals_exponential_mechanism() -> None:
    query, params = small_input(), {"epsilon": 0.9}
    ours = MECH.output_distribution(MECH.validate({**params, "noise": "gumbel"}), query)
    em = ExponentialMechanism()
    theirs = em.output_distribution(em.validate(params), query)
    np.testing.assert_allclose(ours.pmf_d, theirs.pmf_d, rtol=1e-12)


@pytest.mark.parametrize("noise", NOISES)
def test_simulation_matches_exact_pmf(noise: str) -> None:
    query = small_input()
    params = MECH.validate({"epsilon": 1.0, "noise": noise})
    pmf = MECH.output_distribution(params, query).pmf_d
    draws = MECH.simulate(params, query, np.random.default_rng(7), 100_000)
    observed = np.bincount(draws, minlength=pmf.size)
    keep = pmf * draws.size > 5
    _, p_value = stats.chisquare(observed[keep], pmf[keep] / pmf[keep].sum() * observed[keep].sum())
    assert p_value > 1e-3


@pytest.mark.parametrize("noise", NOISES)
def test_privacy_loss_and_accuracy_bound(noise: str) -> None:
    params = MECH.validate({"epsilon": 1.0, "noise": noise})
    query = adversarial_input(40)
    out = MECH.output_distribution(params, query)
    assert max_abs_loss(out) <= 1.0 + 1e-9
    assert MECH.delta_at(params, query, 1.0) <= 1e-12
    report = MECH.accuracy(params, small_input())
    assert report.error_tail_bound is not None
    assert np.all(report.error_tail.y <= report.error_tail_bound.y + 1e-9)


def test_laplace_bound_alpha_inverts_tail_bound() -> None:
    from dpexplorer.core.mechanisms.noisy_max import noisy_max_bound_alpha, noisy_max_tail_bound

    alpha = noisy_max_bound_alpha("laplace", 2.0, 10, 0.05)
    assert noisy_max_tail_bound("laplace", 2.0, 10, np.array([alpha]))[0] == pytest.approx(0.05)


@pytest.mark.parametrize("noise", NOISES)
def test_auditor_accepts_claim(noise: str) -> None:
    result = audit_mechanism(
        MECH,
        {"epsilon": 1.0, "noise": noise},
        adversarial_input(),
        rng=np.random.default_rng(21),
        n_draws=200_000,
    )
    assert result.epsilon_lb <= 1.0


@pytest.mark.parametrize("noise", NOISES)
def test_monotone_counts_use_half_the_noise_within_epsilon(noise: str) -> None:
    """Counts under add/remove: every score moves down by at most 1 (monotone), scale 1/eps."""
    counts = np.array([12.0, 11.0, 11.0, 7.0, 1.0])
    for removed in range(5):
        moved = counts.copy()
        moved[removed] -= 1
        q = SelectionInput(tuple("abcde"), counts, moved, 1.0, True, 42)
        params = MECH.validate({"epsilon": 1.0, "noise": noise})
        assert MECH.scale(params, q) == pytest.approx(1.0)
        assert max_abs_loss(MECH.output_distribution(params, q)) <= 1.0 + 1e-9
