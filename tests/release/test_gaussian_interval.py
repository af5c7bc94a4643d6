"""The discrete Gaussian release's interval (found checking issue 21 item 5: a target error
planned in the budget view was released with an interval 1.39 times wider, the sub-Gaussian
tail bound). The steps are now the smallest h with P(|X| > h) <= 1 - level, on an upper bound
of the exact tail: checked against direct summation, the continuous quantile, and draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpexplorer.release.numeric_paths import discrete_gaussian_ci_steps
from dpexplorer.release.samplers import SeededBitSource, discrete_gaussian_array


def _tail(sigma2: float, h: int) -> float:
    """P(|X| > h) for X ~ N_Z(0, sigma2), by direct summation."""
    x = np.arange(-int(60 * math.sqrt(sigma2)) - 60, int(60 * math.sqrt(sigma2)) + 61)
    w = np.exp(-(x * x) / (2 * sigma2))
    return float(w[np.abs(x) > h].sum() / w.sum())


@pytest.mark.parametrize("sigma2", [0.05, 0.3, 2.0, 17.5, 400.0, 9e6])
@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.999])
def test_steps_are_the_smallest_that_cover(sigma2: float, level: float) -> None:
    h = discrete_gaussian_ci_steps(sigma2, level)
    assert _tail(sigma2, h) <= (1 - level) * (1 + 1e-6)
    if h > 0:
        assert _tail(sigma2, h - 1) > (1 - level) * (1 - 1e-6)


def test_large_sigma_matches_the_continuous_quantile() -> None:
    for sigma in (2e4, 3e5, 2e6):  # beyond the summed range: the erfc bounds
        h = discrete_gaussian_ci_steps(sigma * sigma, 0.95)
        assert abs(h - stats.norm.ppf(0.975) * sigma) <= 2 + 1e-6 * sigma


def test_narrower_than_the_sub_gaussian_bound() -> None:
    sigma2 = 400.0
    bound = math.ceil(math.sqrt(2 * sigma2 * math.log(2 / 0.05)))
    assert discrete_gaussian_ci_steps(sigma2, 0.95) < bound / 1.35


def test_draws_fall_inside_as_often_as_promised() -> None:
    # sigma2 = 17.5 = 4 * 35 / 8 in the sampler's t p / q form (t near sigma: fast acceptance)
    h = discrete_gaussian_ci_steps(17.5, 0.9)
    draws = discrete_gaussian_array(4, 35, 8, 20_000, SeededBitSource(4))
    inside = np.mean(np.abs(draws) <= h)
    expected = 1 - _tail(17.5, h)
    assert expected >= 0.9
    assert abs(inside - expected) <= 5 * math.sqrt(expected * (1 - expected) / draws.size)


@pytest.mark.parametrize("target", [3.0, 10.0, 250.0])
def test_a_planned_target_error_is_what_the_release_publishes(target: float) -> None:
    """Accuracy-first budgeting end to end: the ε the plan solves for a target half-width gives a
    released interval within the target plus the half grid step the release adds for rounding
    the true answer onto its grid (1.39 times the target before)."""
    from dpexplorer.core.mechanisms.base import NumericInput
    from dpexplorer.core.planning import solve_epsilon_for_error
    from dpexplorer.release.release import prepare_input

    count = NumericInput(np.array([5000.0]), np.array([5001.0]), 1.0, 1.0, 5000, "count")
    params = {"delta": 1e-6}
    epsilon = solve_epsilon_for_error("gaussian", params, count, target, 0.95)
    prepared = prepare_input(count, "gaussian", {**params, "epsilon": epsilon}, fingerprint="f", query={})
    spacing = prepared.exact.provenance["grid_spacing"]
    assert target - spacing <= prepared.exact.ci_halfwidth <= target + 0.5 * spacing + 1e-9


@pytest.mark.parametrize(("mechanism", "params"), [("laplace", {}), ("gaussian", {"delta": 1e-6})])
def test_a_count_on_the_integer_grid_needs_no_half_step(mechanism: str, params: dict) -> None:
    """A count lies on its integer grid (no rounding), so its interval is the noise's alone and
    still covers as promised; a mean, rounded onto its grid, keeps the half step."""
    from dpexplorer.core.mechanisms.base import NumericInput
    from dpexplorer.release.release import prepare_input

    count = NumericInput(np.array([5000.0]), np.array([5001.0]), 1.0, 1.0, 5000, "count")
    prepared = prepare_input(count, mechanism, {**params, "epsilon": 0.5}, fingerprint="f", query={})
    exact = prepared.exact
    assert exact.provenance["grid_spacing"] == 1.0
    assert float(exact.ci_halfwidth).is_integer()
    draws = exact.simulate(SeededBitSource(8), 20_000)
    inside = np.mean(np.abs(draws - 5000.0) <= exact.ci_halfwidth)
    assert inside >= 0.95 - 5 * math.sqrt(0.95 * 0.05 / draws.size)

    mean = NumericInput(np.array([38.6]), np.array([38.7]), 36.5, 36.5, 5000, "mean", bounds=(17.0, 90.0))
    prepared = prepare_input(mean, mechanism, {**params, "epsilon": 0.5}, fingerprint="f", query={})
    steps = prepared.exact.ci_halfwidth / prepared.exact.provenance["grid_spacing"]
    assert steps % 1 == 0.5
