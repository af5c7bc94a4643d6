"""The clipping trade-off (issue 21, item 2) on a column of known distribution: the bias the data
layer computes and the noise of the core against closed forms for Uniform(0, 100), and the
error-minimising bounds against a brute-force search of the closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpexplorer.core.clipping import noise_sd, trade_off
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.data.clipping import bias_grid

N = 10_000
UNIFORM = 100.0 * (np.arange(N) + 0.5) / N
"""The N quantiles of Uniform(0, 100): its empirical law is the uniform one within 1/N."""
LOWS = np.linspace(-10.0, 60.0, 15)
HIGHS = np.linspace(20.0, 120.0, 21)


def clipped_mean(a: float, b: float, low: float, high: float) -> float:
    """E[clip(X, L, U)] for X ~ Uniform(a, b) and L <= U (integrate the three pieces)."""
    lo, hi = min(max(low, a), b), min(max(high, a), b)
    below = low * (lo - a) if low > a else 0.0
    middle = (hi**2 - lo**2) / 2.0
    above = high * (b - hi) if high < b else 0.0
    return (below + middle + above) / (b - a)


def closed_bias(low: float, high: float, a: float = 0.0, b: float = 100.0) -> float:
    return clipped_mean(a, b, low, high) - (a + b) / 2.0


GRID = [(lo, hi) for lo in LOWS for hi in HIGHS if lo < hi]


def test_mean_and_sum_bias_match_the_closed_form() -> None:
    mean = bias_grid(UNIFORM, "mean", LOWS, HIGHS)
    total = bias_grid(UNIFORM, "sum", LOWS, HIGHS)
    for i, lo in enumerate(LOWS):
        for j, hi in enumerate(HIGHS):
            if lo < hi:
                # the empirical law differs from the uniform by at most 1/N in CDF: bias within 100/N
                assert mean[i, j] == pytest.approx(closed_bias(lo, hi), abs=100.0 / N)
                assert total[i, j] == pytest.approx(N * mean[i, j], rel=1e-9, abs=1e-6)


def test_quantile_and_trimmed_mean_bias_match_the_closed_form() -> None:
    median = bias_grid(UNIFORM, "median", LOWS, HIGHS)
    q90 = bias_grid(UNIFORM, "quantile", LOWS, HIGHS, q=0.9)
    trimmed = bias_grid(UNIFORM, "trimmed_mean", LOWS, HIGHS, trim_fraction=0.1)
    for i, lo in enumerate(LOWS):
        for j, hi in enumerate(HIGHS):
            if lo < hi:
                assert median[i, j] == pytest.approx(np.clip(50.0, lo, hi) - 50.0, abs=100.0 / N)
                assert q90[i, j] == pytest.approx(np.clip(90.0, lo, hi) - 90.0, abs=100.0 / N)
                # trimming 10% at each end keeps Uniform(10, 90)
                assert trimmed[i, j] == pytest.approx(closed_bias(lo, hi, 10.0, 90.0), abs=100.0 / N)


def test_bias_is_nan_where_the_bounds_cross() -> None:
    bias = bias_grid(UNIFORM, "mean", np.array([50.0]), np.array([40.0, 60.0]))
    assert np.isnan(bias[0, 0]) and np.isfinite(bias[0, 1])


@pytest.mark.parametrize(
    ("statistic", "relation", "delta"),
    [
        ("sum", "add_remove", lambda lo, hi, n: max(abs(lo), abs(hi))),
        ("sum", "replace", lambda lo, hi, n: hi - lo),
        ("mean", "add_remove", lambda lo, hi, n: (hi - lo) / 2),
        ("mean", "replace", lambda lo, hi, n: (hi - lo) / n),
        ("median", "add_remove", lambda lo, hi, n: hi - lo),
    ],
)
def test_noise_is_the_laplace_standard_deviation(statistic, relation, delta) -> None:
    for lo, hi in [(0.0, 100.0), (-10.0, 30.0), (20.0, 21.0)]:
        expected = math.sqrt(2.0) * delta(lo, hi, N) / 0.5
        assert noise_sd(statistic, relation, lo, hi, 0.5, n=N) == pytest.approx(expected, rel=1e-12)


def test_best_bounds_minimise_the_closed_form_error() -> None:
    epsilon = 0.05  # noise comparable to the bias: the best bounds are strictly inside the data
    tradeoff = trade_off(
        "mean", "replace", LOWS, HIGHS, bias_grid(UNIFORM, "mean", LOWS, HIGHS), epsilon, n=N
    )
    closed = {
        (lo, hi): math.hypot(closed_bias(lo, hi), math.sqrt(2) * (hi - lo) / N / epsilon) for lo, hi in GRID
    }
    low, high, rmse = tradeoff.best()
    best = min(closed, key=closed.get)
    assert (low, high) == best
    assert rmse == pytest.approx(closed[best], abs=100.0 / N)
    i, j = tradeoff.at(low, high)
    assert tradeoff.rmse[i, j] == pytest.approx(math.hypot(tradeoff.bias[i, j], tradeoff.noise[i, j]))
    assert np.isnan(tradeoff.rmse[tradeoff.at(60.0, 20.0)])


def test_refusals() -> None:
    with pytest.raises(InvalidParameterError):
        noise_sd("count", "add_remove", 0.0, 1.0, 1.0)
    with pytest.raises(InvalidParameterError):
        noise_sd("sum", "add_remove", 0.0, 1.0, 0.0)
    with pytest.raises(InvalidParameterError):
        trade_off("sum", "add_remove", LOWS, HIGHS, np.zeros((2, 2)), 1.0)
