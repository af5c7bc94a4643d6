"""The clipping bias of a statistic on the TRUE data, for the clipping trade-off view (issue 21):
bias(L, U) = f(clip(D, L, U)) - f(D) on a grid of bounds, exactly, from the sorted column and its
cumulative sums (O(n log n + grid)); rows come through the engine. This is not private: it is
for exploration, and ``dpexplorer.core.clipping`` combines it with the noise."""

from __future__ import annotations

import numpy as np

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.sensitivity import quantile_rank, trim_count
from dpexplorer.data.engine import Filter, SortedClipped
from dpexplorer.data.load import Dataset
from dpexplorer.data.queries import Compare

WIDE = 1e300
"""Bounds that clip nothing (finite, as the engine's requests require)."""


def column_values(dataset: Dataset, column: str) -> np.ndarray:
    """The column's non-missing values as floats, sorted, unclipped: the engine's sorted column
    (dpexplorer.data.engine.SortedClipped) after a filter that drops missing values (a comparison
    is false on them)."""
    from dpexplorer.data.aggregates import aggregate

    present = Filter(Compare(column, ">=", -WIDE))
    return aggregate(dataset, SortedClipped(column, -WIDE, WIDE), (present,))


def _clipped_sums(x: np.ndarray, lows: np.ndarray, highs: np.ndarray) -> np.ndarray:
    """sum(clip(x, L, U)) for every (L, U) of the grid (NaN where L > U); x sorted."""
    cumulative = np.concatenate(([0.0], np.cumsum(x)))
    below = np.searchsorted(x, lows, side="left")  # #x < L
    upto = np.searchsorted(x, highs, side="right")  # #x <= U
    lo, hi = below[:, None], upto[None, :]
    middle = np.where(hi > lo, cumulative[np.maximum(hi, lo)] - cumulative[lo], 0.0)
    sums = lows[:, None] * lo + middle + highs[None, :] * (x.size - np.maximum(hi, lo))
    return np.where(lows[:, None] <= highs[None, :], sums, np.nan)


def bias_grid(
    sorted_values: np.ndarray,
    statistic: str,
    lows: np.ndarray,
    highs: np.ndarray,
    *,
    q: float = 0.5,
    trim_fraction: float = 0.0,
) -> np.ndarray:
    """f(clip(x, L, U)) - f(x) at every (lows[i], highs[j]), exact, under the conventions of
    ``dpexplorer.core.sensitivity`` (lower quantile x_r, r = ceil(q n); m = floor(t n) trimmed)."""
    x = np.asarray(sorted_values, dtype=float)
    lows, highs = np.asarray(lows, dtype=float), np.asarray(highs, dtype=float)
    n = x.size
    if n == 0:
        raise InvalidParameterError("the column has no values to clip")
    if statistic == "sum":
        return _clipped_sums(x, lows, highs) - x.sum()
    if statistic == "mean":
        return (_clipped_sums(x, lows, highs) - x.sum()) / n
    if statistic in ("median", "quantile"):
        value = x[quantile_rank(n, 0.5 if statistic == "median" else q) - 1]
        clipped = np.clip(value, lows[:, None], highs[None, :])  # clipping commutes with order
        return np.where(lows[:, None] <= highs[None, :], clipped - value, np.nan)
    if statistic == "trimmed_mean":
        m = trim_count(n, trim_fraction)
        kept = x[m : n - m]  # the kept ranks are the same after clipping (monotone map)
        return (_clipped_sums(kept, lows, highs) - kept.sum()) / kept.size
    raise InvalidParameterError(f"no clipping bias for {statistic!r}")


def clipping_bias(
    dataset: Dataset,
    column: str,
    statistic: str,
    lows: np.ndarray,
    highs: np.ndarray,
    *,
    q: float = 0.5,
    trim_fraction: float = 0.0,
) -> tuple[np.ndarray, int]:
    """(bias grid, n) of ``statistic`` of ``column`` on ``dataset`` (missing values left out)."""
    values = column_values(dataset, column)
    return bias_grid(values, statistic, lows, highs, q=q, trim_fraction=trim_fraction), values.size
