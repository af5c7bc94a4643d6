"""Variance (or standard deviation) of a clipped column from three noisy sums: the row count, the
sum of y = x - c and the sum of y^2 - h^2 / 2 (c the midpoint of [lower, upper], h its half-width,
so each row moves the two sums by at most h and h^2 / 2), each with Laplace noise, epsilon split
equally between them (one third each; two halves when n is public).

Estimator: with n~ = max(noisy count, 1), m~ = S~ / n~ and E~[y^2] = Q~ / n~ + h^2 / 2, the
released variance is E~[y^2] - m~^2 clamped to [0, h^2] (a variance of values in [lower, upper]
lies there: Popoviciu's inequality), the standard deviation its square root, in [0, h]. The
clamp is post-processing, free.

Guarantee: pure epsilon-DP. Under add/remove the three sums have sensitivities 1, h and h^2 / 2
(one row added or removed); under replace n is public and the sums move by at most 2h and h^2;
each part is epsilon_i-DP (Dwork & Roth 2014, Theorem 3.6) and basic composition (Theorem 3.16)
gives the sum of the epsilon_i = epsilon.

No closed form exists for the ratio's law: the views simulate it (Monte Carlo, the number of
draws stated); the privacy profile is that of the three Laplace coordinates between D and D'
(:func:`~.laplace.vector_laplace_delta`, an upper bound), which bounds the released statistic's
(post-processing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np

from dpexplorer.core import accuracy as acc
from dpexplorer.core.accounting.guarantees import PureDP
from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    CentredMoments,
    Curve,
    NumericInput,
    NumericOutput,
    QueryInput,
)
from dpexplorer.core.mechanisms.laplace import LAPLACE_EPSILON, pure_laplace_profile
from dpexplorer.core.mechanisms.params import Param
from dpexplorer.core.mechanisms.registry import register

STATISTICS = ("variance", "std")
DRAWS = 200_000
"""Monte Carlo draws per side for the views."""


def part_sensitivities(lower: float, upper: float, counts_public: bool) -> tuple[float, float, float]:
    """(count, centred sum, centred squares) sensitivities (module docstring)."""
    half = (upper - lower) / 2
    if counts_public:
        return 0.0, 2 * half, half * half
    return 1.0, half, half * half / 2


def part_epsilons(epsilon: float, counts_public: bool) -> tuple[float, float, float]:
    """The equal split: (count, sum, squares); the count gets nothing when n is public."""
    if counts_public:
        return 0.0, epsilon / 2, epsilon / 2
    return epsilon / 3, epsilon / 3, epsilon / 3


def estimate(
    n: np.ndarray, s: np.ndarray, q: np.ndarray, lower: float, upper: float, std: bool
) -> np.ndarray:
    """The released statistic from (noisy) count, centred sum and centred squares."""
    half = (upper - lower) / 2
    m = np.maximum(np.asarray(n, dtype=float), 1.0)
    var = np.clip(np.asarray(q) / m + half * half / 2 - (np.asarray(s) / m) ** 2, 0.0, half * half)
    return np.sqrt(var) if std else var


def _truth(moments: CentredMoments, lower: float, upper: float, std: bool) -> float:
    """The clipped column's population variance (or std) on one dataset."""
    return float(estimate(np.array([moments.count]), np.array([moments.centred_sum]),
                          np.array([moments.centred_squares]), lower, upper, std)[0])  # fmt: skip


@register
class NoisyVarianceMechanism(acc.ProfileMechanism):
    """Variance / standard deviation from three noisy sums (module docstring): pure epsilon-DP."""

    name: ClassVar[str] = "noisy_variance"
    label: ClassVar[str] = "Noisy sums (variance)"
    summary: ClassVar[str] = (
        "A variance or standard deviation from a noisy count, a noisy sum and a noisy sum of "
        "squares (Laplace noise, ε split in three), clamped to what the bounds allow. Pure ε-DP."
    )
    input_type: ClassVar[type] = NumericInput
    output_kind: ClassVar[Literal["numeric"]] = "numeric"
    params: ClassVar[tuple[Param, ...]] = (LAPLACE_EPSILON,)
    order: ClassVar[int] = 13

    def accepts(self, query: QueryInput) -> str | None:
        if (
            isinstance(query, NumericInput)
            and query.statistic in STATISTICS
            and query.moments is not None
            and len(query.moments) == 1
            and query.bounds is not None
        ):
            return None
        return f"{self.label} releases the variance or standard deviation of a clipped column"

    def guarantee(self, params: Mapping[str, Any], query: QueryInput) -> PureDP:
        """PureDP(epsilon): three Laplace parts, basic composition (module docstring)."""
        return PureDP(float(params["epsilon"]))

    def epsilon_delta(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        return float(params["epsilon"]), 0.0

    @staticmethod
    def _scales(epsilon: float, query: NumericInput) -> tuple[float, float, float]:
        lower, upper = query.bounds  # type: ignore[misc]
        public = query.relation == "replace"
        sens, eps = part_sensitivities(lower, upper, public), part_epsilons(epsilon, public)
        return tuple(d / e if e > 0 else 0.0 for d, e in zip(sens, eps, strict=True))  # type: ignore[return-value]

    def _sample(
        self,
        epsilon: float,
        query: NumericInput,
        moments: CentredMoments,
        rng: np.random.Generator,
        size: int,
    ) -> np.ndarray:
        bn, bs, bq = self._scales(epsilon, query)
        lower, upper = query.bounds  # type: ignore[misc]
        n = moments.count + (rng.laplace(0.0, bn, size) if bn > 0 else np.zeros(size))
        s = moments.centred_sum + rng.laplace(0.0, bs, size)
        q = moments.centred_squares + rng.laplace(0.0, bq, size)
        return estimate(n, s, q, lower, upper, query.statistic == "std")

    def simulate(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        assert isinstance(query, NumericInput) and query.moments and query.moments_prime
        moments = query.moments[0] if on == "D" else query.moments_prime[0]
        return self._sample(float(params["epsilon"]), query, moments, rng, size)

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> NumericOutput:
        """Histogram densities of M(D) and M(D') from :data:`DRAWS` simulated outputs each."""
        rng = np.random.default_rng(0)
        on_d = self.simulate(params, query, rng, DRAWS, "D")
        on_dp = self.simulate(params, query, rng, DRAWS, "D'")
        edges = np.histogram_bin_edges(np.concatenate([on_d, on_dp]), bins=200)
        dp = np.histogram(on_d, edges, density=True)[0]
        dq = np.histogram(on_dp, edges, density=True)[0]
        with np.errstate(divide="ignore"):
            loss = acc.privacy_loss(np.log(dp), np.log(dq))
        return NumericOutput(
            (edges[:-1] + edges[1:]) / 2,
            dp,
            dq,
            loss,
            note=f"Monte Carlo: histograms of {DRAWS:,} simulated outputs on each side (no closed form); "
            "the privacy loss shown is estimated, the guarantee is exact.",
        )

    def privacy_profile(
        self, params: Mapping[str, Any], query: QueryInput, epsilons: np.ndarray
    ) -> np.ndarray:
        """delta(eps) of the three Laplace coordinates between D and D' (an upper bound; 0 at
        eps >= epsilon)."""
        assert isinstance(query, NumericInput) and query.moments and query.moments_prime
        m, mp = query.moments[0], query.moments_prime[0]
        scales = self._scales(float(params["epsilon"]), query)
        diffs = (m.count - mp.count, m.centred_sum - mp.centred_sum, m.centred_squares - mp.centred_squares)
        shifts = np.array([d / b for d, b in zip(diffs, scales, strict=True) if b > 0])
        return pure_laplace_profile(epsilons, shifts, float(params["epsilon"]))

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        """Monte Carlo error against the clipped column's variance (or std) on D."""
        assert isinstance(query, NumericInput) and query.moments and query.bounds
        lower, upper = query.bounds
        std = query.statistic == "std"
        truth = _truth(query.moments[0], lower, upper, std)
        rng = np.random.default_rng(1)
        errors = np.abs(self.simulate(params, query, rng, DRAWS) - truth)
        alphas = np.linspace(0.0, max(float(np.quantile(errors, 0.999)), 1e-12), 200)
        tail = np.searchsorted(np.sort(errors), alphas, side="right")
        tail_curve = Curve(
            alphas, 1 - tail / errors.size, "α", "P(|error| > α)", "Monte Carlo", "monte_carlo"
        )

        def halfwidth_at(eps: float) -> float:
            draws = self._sample(eps, query, query.moments[0], np.random.default_rng(2), 20_000)  # type: ignore[index]
            return float(np.quantile(np.abs(draws - truth), ci_level))

        return AccuracyReport(
            error_tail=tail_curve,
            error_tail_bound=None,
            ci_level=ci_level,
            ci_halfwidth=float(np.quantile(errors, ci_level)),
            mse=float(np.mean(errors**2)),
            error_vs_epsilon=(acc.error_vs_epsilon(halfwidth_at, ci_level),),
            notes=(
                f"Monte Carlo over {DRAWS:,} draws; the error is against the clipped column's "
                f"{'standard deviation' if std else 'variance'} on D.",
            ),
        )
