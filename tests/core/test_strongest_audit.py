"""The Audit ε button's two tests (issue 44, deliverable 2): the threshold events of
core.audit and the hockey-stick divergence test of core.hockey_stick, each at half the miss
rate, the larger bound shown with the test that gave it."""

from __future__ import annotations

import numpy as np

from dpexplorer.core import hockey_stick
from dpexplorer.core.hockey_stick import strongest_audit


def _laplace(shift: float, scale: float):
    return lambda rng, size: shift + rng.laplace(0.0, scale, size)


def test_a_sound_laplace_stays_below_its_claim_and_names_its_test() -> None:
    """Laplace(1) on counts 1000 against 1001: epsilon exactly 1. At 95 % both bounds hold, so
    the larger is below 1 (seeded); with 4e5 draws it is well above 0.5 (the tests have power)."""
    bound = strongest_audit(
        _laplace(1000, 1.0), _laplace(1001, 1.0), 0.0, rng=np.random.default_rng(5), n_draws=400_000
    )
    assert 0.5 < bound.epsilon_lb <= 1.0
    assert bound.epsilon_lb == max(bound.threshold.epsilon_lb, bound.divergence.epsilon_lb)
    assert bound.test.startswith(("threshold events", "hockey-stick divergence"))
    assert bound.divergence.n_draws == hockey_stick.DIVERGENCE_DRAWS


def test_noise_for_twice_the_epsilon_is_found() -> None:
    """Noise of scale 1/2 (epsilon 2) claimed as epsilon 1: the bound exceeds 1."""
    bound = strongest_audit(
        _laplace(1000, 0.5), _laplace(1001, 0.5), 0.0, rng=np.random.default_rng(6), n_draws=400_000
    )
    assert bound.epsilon_lb > 1.0


def test_a_scale_that_depends_on_the_data_is_bounded_by_the_divergence_test() -> None:
    """Same centre, noise scale 1 on D and 4 on D' (a data-dependent scale): the quadratic
    score sees it; the larger bound is positive and names the test that gave it."""
    bound = strongest_audit(
        _laplace(0, 1.0), _laplace(0, 4.0), 0.0, rng=np.random.default_rng(7), n_draws=200_000
    )
    assert bound.epsilon_lb > 0.5 and bound.divergence is not None
    chosen = "hockey-stick" if bound.divergence.epsilon_lb > bound.threshold.epsilon_lb else "threshold"
    assert bound.test.startswith(chosen)
