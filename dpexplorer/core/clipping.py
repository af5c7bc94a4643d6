"""Where to clip (issue 21, item 2): the error of a clipped statistic released with the Laplace
mechanism, split into clipping bias and noise, against the declared bounds [L, U].

For a release M = f(clip(D, L, U)) + Z with Z ~ Laplace(Delta(L, U) / epsilon) (Dwork & Roth 2014,
Theorem 3.6), the noise has mean 0 and is independent of the data, so the expected squared error
splits EXACTLY:

    E[(M - f(D))^2] = bias(L, U)^2 + Var(Z),   bias(L, U) = f(clip(D, L, U)) - f(D),
    Var(Z) = 2 (Delta(L, U) / epsilon)^2,

with Delta the global sensitivity of :func:`dpexplorer.core.sensitivity.global_sensitivity` for
the statistic and relation. The bias needs the true data: the data layer computes it
(``dpexplorer.data.clipping``) and passes it in; nothing here reads data. Using it to choose a
release's bounds would leak the data: the view says so and offers a private estimate instead."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import Relation
from dpexplorer.core.sensitivity import global_sensitivity

STATISTICS = ("sum", "mean", "median", "quantile", "trimmed_mean")


def noise_sd(
    statistic: str,
    relation: Relation,
    lower: float,
    upper: float,
    epsilon: float,
    *,
    n: int | None = None,
    trim_fraction: float = 0.0,
) -> float:
    """Standard deviation sqrt(2) Delta / epsilon of the Laplace noise at bounds [lower, upper]
    (exact for the mechanism; Delta from ``global_sensitivity``)."""
    if statistic not in STATISTICS:
        raise InvalidParameterError(f"no clipping trade-off for {statistic!r}; use one of {STATISTICS}")
    if not epsilon > 0:
        raise InvalidParameterError(f"ε must be positive; got {epsilon}")
    kind = "quantile" if statistic == "median" else statistic
    s1, _ = global_sensitivity(kind, relation, lower=lower, upper=upper, n=n, trim_fraction=trim_fraction)
    return math.sqrt(2.0) * s1 / epsilon


@dataclass(frozen=True, eq=False)
class ClippingTradeOff:
    """Bias, noise and root-mean-squared error on the grid ``lows`` x ``highs`` (NaN where
    lower >= upper). ``bias[i, j]`` is at bounds (lows[i], highs[j])."""

    lows: np.ndarray
    highs: np.ndarray
    bias: np.ndarray
    noise: np.ndarray

    @property
    def rmse(self) -> np.ndarray:
        """sqrt(bias^2 + noise^2): the exact root-mean-squared error (module docstring)."""
        return np.sqrt(self.bias**2 + self.noise**2)

    def best(self) -> tuple[float, float, float]:
        """(lower, upper, rmse) of the grid point with the smallest error; among ties (within
        1e-9 relative, e.g. a lower bound below every value of a sum), the narrowest bounds."""
        rmse = self.rmse
        least = np.nanmin(rmse)
        width = self.highs[None, :] - self.lows[:, None]
        width = np.where(rmse <= least * (1 + 1e-9), width, np.inf)
        i, j = np.unravel_index(np.argmin(width), width.shape)
        return float(self.lows[i]), float(self.highs[j]), float(rmse[i, j])

    def at(self, lower: float, upper: float) -> tuple[int, int]:
        """Indices of the grid point nearest to (lower, upper)."""
        return int(np.abs(self.lows - lower).argmin()), int(np.abs(self.highs - upper).argmin())


def trade_off(
    statistic: str,
    relation: Relation,
    lows: np.ndarray,
    highs: np.ndarray,
    bias: np.ndarray,
    epsilon: float,
    *,
    n: int | None = None,
    trim_fraction: float = 0.0,
) -> ClippingTradeOff:
    """The trade-off on the grid, from the bias the data layer computed (shape (lows, highs))."""
    lows, highs = np.asarray(lows, dtype=float), np.asarray(highs, dtype=float)
    bias = np.asarray(bias, dtype=float)
    if bias.shape != (lows.size, highs.size):
        raise InvalidParameterError(f"bias has shape {bias.shape}, expected {(lows.size, highs.size)}")
    noise = np.full(bias.shape, np.nan)
    for i, low in enumerate(lows):
        for j, high in enumerate(highs):
            if low < high:
                noise[i, j] = noise_sd(
                    statistic, relation, low, high, epsilon, n=n, trim_fraction=trim_fraction
                )
    return ClippingTradeOff(lows, highs, np.where(np.isnan(noise), np.nan, bias), noise)
