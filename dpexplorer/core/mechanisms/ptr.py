"""Propose-test-release and Dist2Instability (seed 003; Dwork & Lei 2009; Dwork & Roth 2014,
section 7.3; Vadhan 2017, section 3.4).

Both test a distance privately: d_hat = d(x) + Lap(1/epsilon) (d has sensitivity 1) and answer
only if d_hat > ln(1/delta)/epsilon, else release "⊥" (no answer).

- Propose-test-release (PTR): d(x) = distance from x to the nearest dataset whose local
  sensitivity exceeds the proposed bound B; on passing, release f(x) + Lap(B/epsilon).
  (2 epsilon, delta)-DP (seed 003, Proposition 3.2).
- Dist2Instability: d(x) = distance from x to the nearest dataset with a neighbour on which f
  changes (median of a column, or mode of categories); on passing, release f(x) itself,
  without noise. (epsilon, delta)-DP (seed 003; Dwork & Roth 2014, Proposition 7.2).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np
from scipy import stats

from dpexplorer.core import accuracy as acc
from dpexplorer.core.accounting.guarantees import ApproxDP
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    CategoricalOutput,
    Curve,
    NumericInput,
    NumericOutput,
    OutputDistribution,
    PointMass,
    QueryInput,
    SelectionInput,
)
from dpexplorer.core.mechanisms.params import DELTA, EPSILON, Param, log_float
from dpexplorer.core.mechanisms.registry import register
from dpexplorer.core.mechanisms.smooth import (
    DataStatisticMechanism,
    check_data_query,
    column_measure,
    resampled,
    sizes_up_to,
)
from dpexplorer.core.sensitivity import (
    NO_SUCH_DISTANCE,
    distance_to_high_sensitivity,
    distance_to_instability_median,
    distance_to_instability_mode,
)


def pass_threshold(epsilon: float, delta: float) -> float:
    """The threshold ln(1/delta)/epsilon the noisy distance must exceed (seed 003)."""
    return float(np.log(1.0 / delta) / epsilon)


def bottom_probability(distance: float, epsilon: float, delta: float) -> float:
    """Exact P[distance + Lap(1/epsilon) <= ln(1/delta)/epsilon], the chance of "⊥"."""
    if distance >= NO_SUCH_DISTANCE:
        return 0.0
    return float(stats.laplace.cdf(pass_threshold(epsilon, delta) - distance, scale=1.0 / epsilon))


TEST_EPSILON = EPSILON.with_note("Spent twice by propose-test-release: once on the test, once on the answer.")

TEST_DELTA = DELTA.with_note("The test answers only if the noisy distance exceeds ln(1/δ)/ε.")

PROPOSED_BOUND = log_float(
    "bound",
    "Proposed sensitivity bound",
    default=1.0,
    slider=(1e-3, 1e3),
    unit="units of the statistic",
    help=(
        "Your guess of how much one person can change the statistic on this data. If the data "
        "are far from any dataset where a person could change it more, the answer gets Laplace "
        "noise of scale bound/ε; otherwise the mechanism answers ⊥ (no answer)."
    ),
)


# ---------------------------------------------------------------- propose-test-release
@register
class ProposeTestRelease(DataStatisticMechanism):
    """PTR for a median, quantile or trimmed mean: (2 epsilon, delta)-DP."""

    name: ClassVar[str] = "ptr"
    label: ClassVar[str] = "Propose-test-release"
    summary: ClassVar[str] = (
        "Propose a bound on one person's influence, test privately that the data are far from "
        "violating it, then answer with Laplace noise scaled to the bound, or ⊥. (2ε, δ)-DP."
    )
    params: ClassVar[tuple[Param, ...]] = (TEST_EPSILON, TEST_DELTA, PROPOSED_BOUND)
    order: ClassVar[int] = 50
    # The accuracy report (DataStatisticMechanism.accuracy) counts "⊥" as an error.
    sweep_step: ClassVar[int] = 3
    halfwidth_caveat: ClassVar[str] = "(inf: ⊥ too likely)"
    accuracy_notes: ClassVar[tuple[str, ...]] = ()

    def distance(self, params: Mapping[str, Any], query: NumericInput, on: Literal["D", "D'"]) -> int:
        """Exact distance to the nearest dataset with local sensitivity above the bound."""
        return column_measure(query, on, distance_to_high_sensitivity, float(params["bound"]))

    def release_scale(self, params: Mapping[str, Any], query: NumericInput, on: Literal["D", "D'"]) -> float:
        """Scale of the Laplace noise of the answer: bound / epsilon (the same on D and D')."""
        return float(params["bound"]) / float(params["epsilon"])

    def noise_scale(self, params: Mapping[str, Any], query: QueryInput) -> float:
        """bound / epsilon."""
        return self.release_scale(params, check_data_query(query, self.label), "D")

    def releases(self, params: Mapping[str, Any], query: QueryInput) -> acc.ReleasePair:
        query = check_data_query(query, self.label)
        eps, delta = float(params["epsilon"]), float(params["delta"])

        def side(on: Literal["D", "D'"]) -> acc.NoisyRelease:
            value = query.value_d if on == "D" else query.value_d_prime
            bottom = bottom_probability(self.distance(params, query, on), eps, delta)
            return acc.NoisyRelease(
                acc.STANDARD_LAPLACE,
                float(np.atleast_1d(value)[0]),
                self.release_scale(params, query, on),
                bottom,
            )

        distances = [self.distance(params, query, on) for on in ("D", "D'")]
        shown = ["∞" if d >= NO_SUCH_DISTANCE else str(d) for d in distances]
        note = (
            "Distance to high sensitivity: {} on D, {} on D'; ".format(*shown)
            + f"threshold {pass_threshold(eps, delta):.3g}."
        )
        return acc.ReleasePair(side("D"), side("D'"), 0, note)

    def guarantee(self, params: Mapping[str, Any], query: QueryInput) -> ApproxDP:
        return ApproxDP(*self.epsilon_delta(params, query))

    def epsilon_delta(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        return 2.0 * float(params["epsilon"]), float(params["delta"])


# ---------------------------------------------------------------- Dist2Instability
class _Dist2Instability(acc.ProfileMechanism):
    """Shared by the median and mode versions: release f(x) exactly or "⊥"; (epsilon, delta)-DP."""

    params: ClassVar[tuple[Param, ...]] = (EPSILON, TEST_DELTA)

    @abstractmethod
    def distances(self, query: QueryInput) -> tuple[int, int]:
        """Exact distances to instability of D and D'."""

    @abstractmethod
    def answers(self, query: QueryInput) -> tuple[int, int, tuple[str, ...]]:
        """Indices of f(D) and f(D') among the outcomes, and the outcome labels (without "⊥")."""

    def bottoms(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        eps, delta = float(params["epsilon"]), float(params["delta"])
        d, d_prime = self.distances(query)
        return bottom_probability(d, eps, delta), bottom_probability(d_prime, eps, delta)

    def pmfs(self, params: Mapping[str, Any], query: QueryInput) -> tuple[np.ndarray, np.ndarray]:
        """Exact pmfs of M(D) and M(D') over the outcomes followed by "⊥"."""
        index_d, index_dp, labels = self.answers(query)
        bottom_d, bottom_dp = self.bottoms(params, query)
        pmf_d, pmf_dp = np.zeros(len(labels) + 1), np.zeros(len(labels) + 1)
        pmf_d[index_d], pmf_d[-1] = 1.0 - bottom_d, bottom_d
        pmf_dp[index_dp], pmf_dp[-1] = 1.0 - bottom_dp, bottom_dp
        return pmf_d, pmf_dp

    def guarantee(self, params: Mapping[str, Any], query: QueryInput) -> ApproxDP:
        return ApproxDP(*self.epsilon_delta(params, query))

    def epsilon_delta(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        return float(params["epsilon"]), float(params["delta"])

    def privacy_profile(
        self, params: Mapping[str, Any], query: QueryInput, epsilons: np.ndarray
    ) -> np.ndarray:
        """Exact delta(eps) on this pair (finite outputs: :func:`acc.discrete_hockey_stick`)."""
        return acc.discrete_hockey_stick(*self.pmfs(params, query), np.asarray(epsilons, dtype=float))

    def _bottom_curve(self, xs: np.ndarray, bottom_at: Any, x_label: str) -> Curve:
        return acc.curve_over(xs, bottom_at, x_label=x_label, y_label="P(⊥, no answer)", name="P(⊥)")

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        """An answer is exact; the only error is "⊥": P(|error| > alpha) = P(⊥) for all alpha."""
        bottom = self.bottoms(params, query)[0]
        alphas = np.linspace(0.0, 1.0, 11)
        tail = Curve(alphas, np.full(alphas.size, bottom), "α", "P(|error| > α)", "exact")
        vs_eps = self._bottom_curve(
            acc.EPSILON_SWEEP, lambda e: self.bottoms({**params, "epsilon": e}, query)[0], "ε"
        )
        return AccuracyReport(
            error_tail=tail,
            error_tail_bound=None,
            ci_level=ci_level,
            ci_halfwidth=0.0 if bottom <= 1.0 - ci_level else float("inf"),
            mse=0.0,
            error_vs_epsilon=(vs_eps,),
            error_vs_n=self.bottom_vs_n(params, query),
            notes=("When it answers, the answer is exact; '⊥' (no answer) counts as an error.",),
        )

    def bottom_vs_n(self, params: Mapping[str, Any], query: QueryInput) -> tuple[Curve, ...]:
        """P(⊥) against n, where the data can be resampled; none by default."""
        return ()

    def _draw(
        self, params: Mapping[str, Any], query: QueryInput, rng: np.random.Generator, size: int, on: str
    ) -> np.ndarray:
        """Outcome indices (-1 for "⊥") of ``size`` runs on D or D'."""
        index_d, index_dp, _ = self.answers(query)
        bottom_d, bottom_dp = self.bottoms(params, query)
        index, bottom = (index_d, bottom_d) if on == "D" else (index_dp, bottom_dp)
        return np.where(rng.random(size) < bottom, -1, index)


@register
class Dist2InstabilityMedian(_Dist2Instability):
    """Release the median exactly when it is far from unstable, else "⊥"."""

    name: ClassVar[str] = "dist2instability"
    label: ClassVar[str] = "Dist2Instability (median)"
    summary: ClassVar[str] = (
        "Releases the exact median when many people would have to change before it could move; "
        "otherwise answers ⊥. (ε, δ)-DP, no noise on the answer."
    )
    input_type: ClassVar[type] = NumericInput
    output_kind: ClassVar[Literal["numeric"]] = "numeric"
    order: ClassVar[int] = 55

    def _query(self, query: QueryInput) -> NumericInput:
        query = check_data_query(query, self.label)
        if query.statistic != "median":
            raise NotApplicableError(f"{self.label} releases a median; this query is a {query.statistic}")
        return query

    def accepts(self, query: QueryInput) -> str | None:
        try:
            self._query(query)
        except NotApplicableError as error:
            return str(error)
        return None

    def distances(self, query: QueryInput) -> tuple[int, int]:
        query = self._query(query)
        return (
            distance_to_instability_median(np.asarray(query.sorted_values_d), relation=query.relation),
            distance_to_instability_median(np.asarray(query.sorted_values_d_prime), relation=query.relation),
        )

    def _values(self, query: QueryInput) -> np.ndarray:
        query = self._query(query)
        return np.unique(
            [float(np.atleast_1d(query.value_d)[0]), float(np.atleast_1d(query.value_d_prime)[0])]
        )

    def answers(self, query: QueryInput) -> tuple[int, int, tuple[str, ...]]:
        query = self._query(query)
        values = self._values(query)
        index_d = int(np.searchsorted(values, float(np.atleast_1d(query.value_d)[0])))
        index_dp = int(np.searchsorted(values, float(np.atleast_1d(query.value_d_prime)[0])))
        return index_d, index_dp, tuple(f"{v:g}" for v in values)

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> NumericOutput:
        pmf_d, pmf_dp = self.pmfs(params, query)
        loss = acc.pmf_privacy_loss(pmf_d, pmf_dp)
        return NumericOutput(
            grid=self._values(query),
            density_d=pmf_d[:-1],
            density_d_prime=pmf_dp[:-1],
            privacy_loss=loss[:-1],
            discrete=True,
            point_masses=(PointMass(acc.BOTTOM, float(pmf_d[-1]), float(pmf_dp[-1])),),
            note="The median itself (no noise) or ⊥; distances to instability {} on D, {} on D'.".format(
                *self.distances(query)
            ),
        )

    def bottom_vs_n(self, params: Mapping[str, Any], query: QueryInput) -> tuple[Curve, ...]:
        """P(⊥) against n for the column resampled to n rows."""
        query = self._query(query)
        eps, delta = float(params["epsilon"]), float(params["delta"])

        def bottom_at(n: float) -> float:
            values = resampled(query, int(n)).sorted_values_d
            distance = distance_to_instability_median(np.asarray(values), relation=query.relation)
            return bottom_probability(distance, eps, delta)

        return (self._bottom_curve(sizes_up_to(query.n), bottom_at, "n (people)"),)

    def simulate(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        indices = self._draw(params, query, rng, size, on)
        values = self._values(query)
        return np.where(indices < 0, np.nan, values[np.maximum(indices, 0)])


@register
class Dist2InstabilityMode(_Dist2Instability):
    """Release the most common category exactly when it is far from unstable, else "⊥"."""

    name: ClassVar[str] = "dist2instability_mode"
    label: ClassVar[str] = "Dist2Instability (most common category)"
    summary: ClassVar[str] = (
        "Releases the most common category when many people would have to change before another "
        "could overtake it; otherwise answers ⊥. (ε, δ)-DP."
    )
    input_type: ClassVar[type] = SelectionInput
    output_kind: ClassVar[Literal["categorical"]] = "categorical"
    order: ClassVar[int] = 56

    def _counts(self, query: QueryInput) -> tuple[SelectionInput, np.ndarray, np.ndarray]:
        if not isinstance(query, SelectionInput):
            raise NotApplicableError(f"{self.label} needs category counts (a SelectionInput query)")
        counts_d, counts_dp = np.asarray(query.scores_d), np.asarray(query.scores_d_prime)
        for counts in (counts_d, counts_dp):
            if np.any(counts < 0) or np.any(counts != np.round(counts)):
                raise NotApplicableError(f"{self.label} needs counts (whole numbers >= 0) as scores")
        return query, counts_d.astype(np.int64), counts_dp.astype(np.int64)

    def distances(self, query: QueryInput) -> tuple[int, int]:
        query, counts_d, counts_dp = self._counts(query)
        return (
            distance_to_instability_mode(counts_d, relation=query.relation),
            distance_to_instability_mode(counts_dp, relation=query.relation),
        )

    def answers(self, query: QueryInput) -> tuple[int, int, tuple[str, ...]]:
        query, counts_d, counts_dp = self._counts(query)
        return int(np.argmax(counts_d)), int(np.argmax(counts_dp)), tuple(query.candidates)

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> OutputDistribution:
        pmf_d, pmf_dp = self.pmfs(params, query)
        labels = (*self.answers(query)[2], acc.BOTTOM)
        return CategoricalOutput(
            labels,
            pmf_d,
            pmf_dp,
            acc.pmf_privacy_loss(pmf_d, pmf_dp),
            note="The mode (first among ties) or ⊥; distances to instability {} on D, {} on D'.".format(
                *self.distances(query)
            ),
        )

    def simulate(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        return self._draw(params, query, rng, size, on)
