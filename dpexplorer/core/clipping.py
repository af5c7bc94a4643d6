"""Where to clip (issue 21, item 2; issue 41, item 2): the error of a clipped statistic released
with the CHOSEN mechanism, split into bias and noise, against the declared bounds [L, U].

Models (:data:`MODELLED`): Laplace and Gaussian in closed form (below); the noisy sum over a noisy
count (``noisy_mean``) by Monte Carlo with :data:`DRAWS` seeded draws of the mechanism's own
output law (:meth:`dpexplorer.core.mechanisms.noisy_mean.RatioLaw.sample`; its exact moments need
a numerical integration per grid point, too slow for a grid), the same draws at every bound pair
(common random numbers, so the curves are smooth). Any other mechanism is modelled as Laplace and
:attr:`ClippingTradeOff.model` says so.

For a release M = f(clip(D, L, U)) + Z with Z ~ Laplace(Delta(L, U) / epsilon) (Dwork & Roth 2014,
Theorem 3.6), the noise has mean 0 and is independent of the data, so the expected squared error
splits EXACTLY:

    E[(M - f(D))^2] = bias(L, U)^2 + Var(Z),   bias(L, U) = f(clip(D, L, U)) - f(D),
    Var(Z) = 2 (Delta(L, U) / epsilon)^2,

(Gaussian: Var(Z) = sigma^2, sigma from the mechanism's calibration) with Delta the global
sensitivity of :func:`dpexplorer.core.sensitivity.global_sensitivity` for the statistic and
relation. The bias needs the true data: the data layer computes it
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
MODELLED = {"laplace": "Laplace", "gaussian": "Gaussian", "noisy_mean": "Noisy sum / noisy count"}
"""Mechanisms the trade-off models as themselves (registry name: label)."""
DRAWS = 2000
"""Monte Carlo draws per bound pair (noisy sum / noisy count): the error's relative standard
error is about sqrt(Var(e^2)) / (sqrt(DRAWS) E[e^2]) / 2, 2-4 % for Laplace-like noise."""
SEED = 41
"""The Monte Carlo seed: the same draws at every bound pair and on every run."""


@dataclass(frozen=True)
class NoiseModel:
    """The mechanism a trade-off models: its registry ``name`` and parameters (``epsilon``;
    ``delta`` and ``calibration`` for Gaussian; ``sum_share`` and the count's l1 sensitivity
    ``count_l1`` (0 when n is public) for noisy sum / noisy count). ``chosen`` is the label of
    the mechanism the user chose, when it is not modelled (modelled as Laplace instead)."""

    name: str = "laplace"
    params: tuple[tuple[str, object], ...] = ()
    chosen: str = ""

    @classmethod
    def of(cls, name: str, label: str, params: dict[str, object]) -> NoiseModel:
        """The model of the chosen mechanism ``name``, Laplace (naming ``label``) when it has none."""
        if name in MODELLED:
            return cls(name, tuple(sorted(params.items())))
        return cls("laplace", tuple(sorted(params.items())), chosen=label or name)

    def describe(self) -> str:
        """Which mechanism the numbers model, and how (for the view's title)."""
        label = MODELLED[self.name]
        if self.chosen:
            return f"modelled as {label} ({self.chosen} is not modelled here)"
        if self.name == "noisy_mean":
            return f"{label}, Monte Carlo ({DRAWS:,} seeded draws)"
        return f"{label}, closed form"

    def param(self, key: str, default: object) -> object:
        return dict(self.params).get(key, default)


def noise_sd(
    statistic: str,
    relation: Relation,
    lower: float,
    upper: float,
    epsilon: float,
    *,
    n: int | None = None,
    trim_fraction: float = 0.0,
    model: NoiseModel | None = None,
) -> float:
    """Standard deviation of the additive noise at bounds [lower, upper], exact: Laplace
    sqrt(2) Delta_1 / epsilon; Gaussian sigma of the mechanism's calibration at Delta_2
    (:meth:`GaussianMechanism.sigma_for`); Delta from ``global_sensitivity``."""
    if statistic not in STATISTICS:
        raise InvalidParameterError(f"no clipping trade-off for {statistic!r}; use one of {STATISTICS}")
    if not epsilon > 0:
        raise InvalidParameterError(f"ε must be positive; got {epsilon}")
    kind = "quantile" if statistic == "median" else statistic
    s1, s2 = global_sensitivity(kind, relation, lower=lower, upper=upper, n=n, trim_fraction=trim_fraction)
    if model is not None and model.name == "gaussian":
        from dpexplorer.core.mechanisms.gaussian import GaussianMechanism

        delta = float(model.param("delta", 1e-6))  # type: ignore[arg-type]
        return GaussianMechanism.sigma_for(epsilon, delta, s2, str(model.param("calibration", "analytic")))
    from dpexplorer.core.mechanisms.laplace import laplace_scale

    return math.sqrt(2.0) * laplace_scale(epsilon, s1)


def ratio_error(
    lower: float, upper: float, clipped_mean: float, n: int, epsilon: float, model: NoiseModel
) -> tuple[float, float]:
    """(E[R] - clipped mean, sd of R) of the noisy sum over a noisy count R at [lower, upper],
    from :data:`DRAWS` draws (seed :data:`SEED`) of the mechanism's own law
    (:class:`~dpexplorer.core.mechanisms.noisy_mean.RatioLaw`, scales from its ``scales``)."""
    from dpexplorer.core.mechanisms.noisy_mean import RatioLaw, scales

    half = (upper - lower) / 2.0
    count_l1 = float(model.param("count_l1", 1.0))  # type: ignore[arg-type]
    sum_l1 = half if count_l1 > 0 else 2.0 * half  # one row moves the centred sum by h (2h replace)
    b1, b2 = scales(epsilon, float(model.param("sum_share", 0.5)), (sum_l1, count_l1))  # type: ignore[arg-type]
    centred = n * (clipped_mean - (lower + upper) / 2.0)
    draws = RatioLaw(lower, upper, centred, n, b1, b2).sample(np.random.default_rng(SEED), DRAWS)
    return float(draws.mean() - clipped_mean), float(draws.std())


@dataclass(frozen=True, eq=False)
class ClippingTradeOff:
    """Bias, noise and root-mean-squared error on the grid ``lows`` x ``highs`` (NaN where
    lower >= upper). ``bias[i, j]`` is at bounds (lows[i], highs[j])."""

    lows: np.ndarray
    highs: np.ndarray
    bias: np.ndarray
    noise: np.ndarray
    model: str = "Laplace, closed form"
    """Which mechanism the numbers model, and how (:meth:`NoiseModel.describe`)."""

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
    model: NoiseModel | None = None,
    value: float | None = None,
) -> ClippingTradeOff:
    """The trade-off on the grid, from the clipping bias the data layer computed (shape (lows,
    highs)), for the mechanism ``model`` (Laplace when None). The noisy sum over a noisy count
    needs the unclipped ``value`` f(D) and ``n``; its bias adds the ratio's and the clamp's to
    the clipping bias (E[R] - f(D)), so bias^2 + noise^2 stays the exact expected squared error
    of the law simulated."""
    lows, highs = np.asarray(lows, dtype=float), np.asarray(highs, dtype=float)
    bias = np.asarray(bias, dtype=float)
    model = model or NoiseModel()
    if bias.shape != (lows.size, highs.size):
        raise InvalidParameterError(f"bias has shape {bias.shape}, expected {(lows.size, highs.size)}")
    ratio = model.name == "noisy_mean"
    if ratio and (statistic != "mean" or value is None or not n):
        raise InvalidParameterError("a noisy sum over a noisy count models a mean; give its value and n")
    noise, total = np.full(bias.shape, np.nan), bias.copy()
    for i, low in enumerate(lows):
        for j, high in enumerate(highs):
            if not low < high:
                continue
            if ratio:
                own, noise[i, j] = ratio_error(low, high, value + bias[i, j], n, epsilon, model)  # type: ignore[arg-type]
                total[i, j] = bias[i, j] + own
            else:
                noise[i, j] = noise_sd(
                    statistic, relation, low, high, epsilon, n=n, trim_fraction=trim_fraction, model=model
                )
    return ClippingTradeOff(lows, highs, np.where(np.isnan(noise), np.nan, total), noise, model.describe())
