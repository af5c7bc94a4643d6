"""A differentially private quantile by the exponential mechanism over a declared coarse grid:
the private-bounds helper of issue 21 (estimate clipping bounds without peeking at the data).

Candidates are the ``bins + 1`` equally spaced points c_0 = lower, ..., c_bins = upper of the
DECLARED range (public). The score of c for the q-quantile is

    u(D, c) = -| (1 - q) L(c) - q G(c) |,   L(c) = #{x in D : x < c},  G(c) = #{x in D : x > c},

which is 0 where a q fraction of the data lies below c, and needs no n (private under
add/remove). Adding or removing one row changes L or G (not both) by at most 1, so
Delta_u = max(q, 1 - q); replacing a row moves it from one side to the other, Delta_u = 1.
The exponential mechanism outputs c with probability proportional to exp(eps u(D, c) / (2 Delta_u))
and is eps-DP (McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.10): pure DP, exact.

This is the discrete-candidate form of Smith 2011 ("Privacy-preserving statistical estimation
with optimal convergence rates", STOC, Section 3: the exponential mechanism for quantiles) used by
OpenDP's ``make_private_quantile`` (score ``make_quantile_score_candidates``): the same score,
over candidates instead of the intervals between data points, so that nothing about the data
(its order statistics) decides the outputs' support."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np
from scipy.special import log_softmax

from dpexplorer.core.accounting.guarantees import ApproxDP, PureDP
from dpexplorer.core.accuracy import EPSILON_SWEEP, curve_over, discrete_hockey_stick
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    NumericInput,
    NumericOutput,
    PureEpsilonMechanism,
    QueryInput,
    key_selection_guarantee,
    with_key_selection,
)
from dpexplorer.core.mechanisms.exponential import discrete_accuracy, error_quantile, sample_pmf
from dpexplorer.core.mechanisms.params import EPSILON, Param, whole_number
from dpexplorer.core.mechanisms.registry import register

BINS = whole_number(
    "bins",
    "Grid steps over the declared range",
    default=100,
    low=1,
    high=10_000,
    help=(
        "The candidates are this many equal steps across the declared bounds (plus both ends). "
        "Finer steps give a finer answer but spread the same ε over more candidates: the error "
        "grows with the logarithm of their number. Declare a generous range, it costs little."
    ),
)

QUANTILE_STATISTICS = frozenset({"median", "quantile"})


def groups_changed(query: NumericInput) -> int:
    """How many groups of a quantile by group one neighbour changes: one under add/remove, two
    under replace (a row moved between groups), k' with a privacy unit (a person in up to k'
    groups). Each group's exponential mechanism then runs at epsilon / that number, so the
    vector is epsilon-DP (basic composition over the groups a neighbour touches, parallel
    composition over the rest: McSherry 2009, Theorem 4)."""
    if query.group_contribution is not None:
        return query.group_contribution[0]
    return 1 if query.relation == "add_remove" else 2


def rows_per_group(query: NumericInput) -> int:
    """How many rows one neighbour adds to or removes from a group: r with a privacy unit (each
    moves the counts below and above a candidate by at most one, so the score by at most r times
    :func:`score_sensitivity`), else one."""
    return query.group_contribution[1] if query.group_contribution is not None else 1


def shown_group(query: NumericInput) -> int:
    """The group the views show for a quantile by group: the first whose values differ between
    D and D' (the neighbour changes at most two; the views are those of one group's mechanism)."""
    assert query.group_values_d is not None and query.group_values_d_prime is not None
    pairs = zip(query.group_values_d, query.group_values_d_prime, strict=True)
    return next((g for g, (a, b) in enumerate(pairs) if not np.array_equal(a, b)), 0)


def candidates(bounds: tuple[float, float], bins: int) -> np.ndarray:
    """The ``bins + 1`` equally spaced candidates over the declared bounds (public)."""
    low, high = bounds
    return low + (high - low) * np.arange(bins + 1) / bins


def score_sensitivity(q: float, relation: str) -> float:
    """Delta_u of :func:`scores`: max(q, 1 - q) under add/remove, 1 under replace (module doc)."""
    return max(q, 1.0 - q) if relation == "add_remove" else 1.0


def scores(sorted_values: np.ndarray, points: np.ndarray, q: float) -> np.ndarray:
    """u(D, c) = -|(1 - q) #{x < c} - q #{x > c}| at each candidate c (exact in floats for
    n < 2^52; the release recomputes it in rationals)."""
    below = np.searchsorted(sorted_values, points, side="left")
    above = sorted_values.size - np.searchsorted(sorted_values, points, side="right")
    return -np.abs((1.0 - q) * below - q * above)


@register
class DPQuantile(PureEpsilonMechanism):
    """Exponential mechanism for a quantile over a declared grid (module docstring): eps-DP,
    exact. Outputs are grid points of the declared range."""

    name: ClassVar[str] = "dp_quantile"
    label: ClassVar[str] = "DP quantile (exponential mechanism)"
    summary: ClassVar[str] = (
        "Picks a point of a coarse grid over the declared range, likelier the closer it splits the "
        "data at the quantile: for estimating clipping bounds privately (Smith 2011; OpenDP)."
    )
    input_type: ClassVar[type] = NumericInput
    output_kind: ClassVar[Literal["numeric"]] = "numeric"
    params: ClassVar[tuple[Param, ...]] = (EPSILON, BINS)
    order: ClassVar[int] = 45

    def accepts(self, query: QueryInput) -> str | None:
        if not isinstance(query, NumericInput) or query.statistic not in QUANTILE_STATISTICS:
            return f"{self.label} releases a median or quantile of a column with declared bounds"
        grouped = query.group_values_d is not None and query.group_values_d_prime is not None
        if query.bounds is None or (
            not grouped and (query.sorted_values_d is None or query.sorted_values_d_prime is None)
        ):
            return f"{self.label} needs the column's values and its declared bounds"
        return None

    def _check(self, query: QueryInput) -> NumericInput:
        reason = self.accepts(query)
        if reason is not None:
            raise InvalidParameterError(reason)
        assert isinstance(query, NumericInput)
        return query

    def guarantee(self, params: Mapping[str, Any], query: QueryInput) -> PureDP | ApproxDP:  # type: ignore[override]
        """PureDP(epsilon); by privately selected keys, plus the selection's declared (epsilon,
        delta) (adaptive basic composition: the quantiles are measured on the kept keys, each
        at epsilon / k, as for declared keys)."""
        return key_selection_guarantee(float(params["epsilon"]), query)

    def epsilon_delta(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        return with_key_selection(float(params["epsilon"]), query)

    def points(self, params: Mapping[str, Any], query: QueryInput) -> np.ndarray:
        """The candidates of ``query`` at ``params`` (public: bounds and bins only)."""
        checked = self._check(query)
        assert checked.bounds is not None
        return candidates(checked.bounds, int(params["bins"]))

    def sensitivity(self, query: QueryInput) -> float:
        checked = self._check(query)
        return score_sensitivity(checked.quantile, checked.relation) * rows_per_group(checked)

    def sensitivity_note(self, params: Mapping[str, Any], query: QueryInput) -> tuple[str, str] | None:
        """For a quantile by group, what sets its noise, as (headline, explanation: paragraphs
        split by newlines) for the sensitivity view: each group's own draw at epsilon /
        :func:`groups_changed` with the score's sensitivity, not the quantile's range; with
        private keys, how the groups are chosen. None for one column's quantile (the view shows
        its sensitivity profile)."""
        if self.accepts(query) is not None:
            return None
        checked = self._check(query)
        if checked.group_values_d is None or checked.bounds is None:
            return None
        m, r, epsilon = groups_changed(checked), rows_per_group(checked), float(params["epsilon"])
        low, high = checked.bounds
        who = "one row is added or removed" if r == 1 and m == 1 else "one person is added or removed"
        if checked.relation != "add_remove":
            who = "one row is replaced"
        headline = (
            f"By group: score sensitivity Δu = {self.sensitivity(checked):g} in each group, "
            f"each group drawn at ε / {m} = {epsilon / m:.4g}"
        )
        text = (
            f"The release draws each group's {checked.quantile:g}-quantile on its own: an exponential "
            f"mechanism over the {int(params['bins']) + 1} grid points of [{low:g}, {high:g}], whose score "
            f"(a rank distance) moves by at most {score_sensitivity(checked.quantile, checked.relation):g} "
            f"× {r} row(s) = {self.sensitivity(checked):g} when {who}. That neighbour changes up to {m} "
            f"group(s), so each draw runs at ε / {m} and the groups together are ε-DP (McSherry 2009, "
            f"Theorem 4). A group's quantile itself can move by up to {high - low:g} (the range), "
            "but that does not set the noise: the score's sensitivity does."
        )
        if checked.partition is not None:
            keys = checked.partition
            text += (
                f"\nThe groups are keys selected privately: the candidate groups shown here are a "
                f"private fact; the release keeps those whose number of persons plus discrete Laplace "
                f"noise reaches a threshold (ε_keys = {keys.epsilon:g}, δ = {keys.delta:g}, charged on "
                f"top of ε), and the declared k = {keys.max_keys}, not the number of groups, sets ε / k."
            )
        return headline, text

    def _log_pmfs(
        self, params: Mapping[str, Any], query: QueryInput
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Log-pmfs on D and D'; for a quantile by group, those of the group :func:`shown_group`,
        whose mechanism runs at epsilon / :func:`groups_changed`."""
        checked = self._check(query)
        points = self.points(params, checked)
        epsilon = float(params["epsilon"])
        on = (checked.sorted_values_d, checked.sorted_values_d_prime)
        if checked.group_values_d is not None and checked.group_values_d_prime is not None:
            g = shown_group(checked)
            on = (checked.group_values_d[g], checked.group_values_d_prime[g])
            epsilon /= groups_changed(checked)
        factor = epsilon / (2.0 * self.sensitivity(checked))
        logs = [
            log_softmax(factor * scores(np.asarray(values, dtype=float), points, checked.quantile))
            for values in on
        ]
        return points, logs[0], logs[1]

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> NumericOutput:
        """Exact pmfs of M(D) and M(D') on the candidates, with the privacy loss ln p/p'."""
        points, log_p, log_q = self._log_pmfs(params, query)
        checked = self._check(query)
        if checked.group_values_d is None:
            return NumericOutput(points, np.exp(log_p), np.exp(log_q), log_p - log_q, discrete=True)
        g, m = shown_group(checked), groups_changed(checked)
        note = (
            f"Group {checked.labels[g] if checked.labels else g} (of {len(checked.group_values_d)}), where D "
            f"and D' differ; each group gets its own draw at ε / {m}"
            + (f" (one neighbour changes up to {m} groups)" if m > 1 else "")
            + ", the other groups are the same on D and D'."
        )
        return NumericOutput(
            points, np.exp(log_p), np.exp(log_q), log_p - log_q, discrete=True, coordinate=g, note=note
        )

    def delta_at(self, params: Mapping[str, Any], query: QueryInput, epsilon: float) -> float:
        """Exact hockey-stick divergence of the two pmfs (0 at the claimed epsilon)."""
        out = self.output_distribution(params, query)
        return float(discrete_hockey_stick(out.density_d, out.density_d_prime, np.array([epsilon]))[0])

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        """Exact distribution of |output - the true quantile on D| (the true value from the data
        layer); no bound from the lecture is drawn beside it."""
        checked = self._check(query)
        points, log_p, _ = self._log_pmfs(params, checked)
        shown = shown_group(checked) if checked.group_values_d is not None else 0
        truth = float(checked.value_d[shown])
        errors, pmf = np.abs(points - truth), np.exp(log_p)

        def quantile_at(eps: float) -> float:
            _, log_e, _ = self._log_pmfs({**params, "epsilon": eps}, checked)
            return error_quantile(np.exp(log_e), errors, ci_level)

        y_label = f"|error| not exceeded with {ci_level:.0%} probability"
        return discrete_accuracy(
            pmf,
            errors,
            ci_level,
            x_label="α",
            error_name="|error|",
            curves_vs_epsilon=(
                curve_over(EPSILON_SWEEP, quantile_at, x_label="ε", y_label=y_label, name="exact"),
            ),
            notes=(
                f"{points.size} candidates from {points[0]:g} to {points[-1]:g}",
                *(
                    (
                        f"group {checked.labels[shown] if checked.labels else shown} of "
                        f"{len(checked.group_values_d)}, where D and D' differ; each group's draw "
                        f"runs at ε / {groups_changed(checked)}.",
                    )
                    if checked.group_values_d is not None
                    else ()
                ),
                *((checked.partition.describe(checked.labels),) if checked.partition is not None else ()),
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
        points, log_p, log_q = self._log_pmfs(params, query)
        return points[sample_pmf(np.exp(log_p if on == "D" else log_q), rng, size)]
