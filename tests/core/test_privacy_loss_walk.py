"""The random walk of the privacy loss: the simulated mean and band against the closed forms
(Dwork & Roth 2014, Lemma 3.18 and Theorem 3.20), seeded, with tolerances from the sampling
error."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpexplorer.core import privacy_loss_walk as walk
from dpexplorer.core.errors import InvalidParameterError


@pytest.mark.parametrize("law", ["randomized_response", "laplace"])
@pytest.mark.parametrize("epsilon", [0.1, 0.5, 2.0])
def test_step_mean_is_the_expected_loss(law, epsilon):
    """E[L] by quadrature over the output law, against the closed form."""
    if law == "randomized_response":
        p = math.exp(epsilon) / (1 + math.exp(epsilon))
        exact = p * epsilon - (1 - p) * epsilon
    else:
        b = 1 / epsilon
        z = np.linspace(-60 * b, 60 * b, 2_000_001)
        density = np.exp(-np.abs(z) / b) / (2 * b)
        exact = float(np.sum(density * epsilon * (np.abs(z - 1) - np.abs(z))) * (z[1] - z[0]))
    assert walk.step_mean(epsilon, law) == pytest.approx(exact, rel=1e-6)
    assert walk.step_mean(epsilon, law) <= epsilon * math.expm1(epsilon)  # Lemma 3.18's bound


@pytest.mark.parametrize("law", ["randomized_response", "laplace"])
def test_simulated_mean_and_band_match_the_closed_forms(law):
    eps, t, delta_prime, paths = 0.3, 200, 0.05, 4000
    result = walk.random_walk(eps, t, delta_prime, paths, law, seed=7)
    final = result.paths[:, -1]
    # the mean of S_t: sampling error sd(S_t)/sqrt(paths), sd(S_t) <= eps sqrt(t); 5 sigma
    assert abs(final.mean() - t * walk.step_mean(eps, law)) < 5 * eps * math.sqrt(t) / math.sqrt(paths)
    assert np.allclose(result.mean, result.releases * walk.step_mean(eps, law))
    assert np.allclose(result.mean_bound, result.releases * eps * math.expm1(eps))
    half = eps * np.sqrt(2 * result.releases * math.log(1 / delta_prime))
    assert np.allclose(result.band_high - result.mean, half) and np.allclose(
        result.mean - result.band_low, half
    )
    assert np.allclose(result.advanced, result.mean_bound + half)  # Theorem 3.20's eps'
    assert np.allclose(result.basic, eps * result.releases)
    assert np.all(np.abs(result.paths) <= result.basic * (1 + 1e-12))  # steps bounded by eps
    # Hoeffding: P(outside) <= 2 delta'; binomial sampling error, 5 sigma
    bound = 2 * delta_prime
    assert result.share_outside_band <= bound + 5 * math.sqrt(bound * (1 - bound) / paths)
    assert result.share_above_advanced <= delta_prime + 5 * math.sqrt(delta_prime / paths)


def test_randomized_response_walk_steps_are_plus_or_minus_epsilon_with_the_right_odds():
    eps = 1.0
    result = walk.random_walk(eps, 1, 0.01, 100_000, "randomized_response", seed=3)
    steps = result.paths[:, 0]
    assert set(np.unique(steps)) == {-eps, eps}
    p = math.exp(eps) / (1 + math.exp(eps))
    assert abs(np.mean(steps > 0) - p) < 5 * math.sqrt(p * (1 - p) / steps.size)


def test_bad_inputs_are_refused():
    with pytest.raises(InvalidParameterError):
        walk.random_walk(0.0, 10, 0.01, 10, "laplace", 0)
    with pytest.raises(InvalidParameterError):
        walk.random_walk(0.1, 10, 1.0, 10, "laplace", 0)
    with pytest.raises(InvalidParameterError):
        walk.random_walk(0.1, 10_000, 0.01, 10_000, "laplace", 0)
    with pytest.raises(InvalidParameterError):
        walk.step_mean(0.1, "cauchy")
