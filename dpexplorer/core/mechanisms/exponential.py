"""The exponential mechanism (McSherry & Talwar 2007), and the selection helpers the other
selection mechanisms (report-noisy-max, top-k, sparse vector) share.

Seed 000, Theorem 12.4 (Dwork & Roth 2014, Theorem 3.10): outputting r with probability
proportional to exp(u(D, r) / sigma) is epsilon-DP with epsilon = 2 Delta_u / sigma. When the
utility is monotone (every score moves in the same direction between neighbours) the
normaliser moves with the score and sigma = Delta_u / epsilon suffices (Dwork & Roth 2014,
remark after Theorem 3.10; McSherry & Talwar 2007). Accuracy (Dwork & Roth 2014, Theorem 3.11;
seed 002's "most popular exam day"): P[u(D, M(D)) <= OPT - sigma (ln|R| + t)] <= e^-t."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

import numpy as np

from dpexplorer.core.accuracy import EPSILON_SWEEP, curve_over, discrete_hockey_stick
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    CategoricalOutput,
    Curve,
    PureEpsilonMechanism,
    QueryInput,
    SelectionInput,
)
from dpexplorer.core.mechanisms.params import EPSILON, Param
from dpexplorer.core.mechanisms.registry import register

USE_MONOTONE = Param(
    name="use_monotone",
    label="Use the monotone bound",
    type="bool",
    default=True,
    help=(
        "When every score can only move in one direction between two neighbouring datasets "
        "(e.g. counts when one person is added), the mechanism may use half the noise for the "
        "same ε. Has no effect when the scores are not monotone."
    ),
)


# ---------------------------------------------------------------- shared selection helpers
def check_selection(query: SelectionInput) -> None:
    """Raise :class:`InvalidParameterError` unless the scores are usable: same non-zero length
    as the candidates, finite, and a positive finite sensitivity."""
    count = len(query.candidates)
    d, dp = np.asarray(query.scores_d), np.asarray(query.scores_d_prime)
    if count == 0 or d.shape != (count,) or dp.shape != (count,):
        raise InvalidParameterError(
            f"a selection needs one score per candidate on D and D' ({count} candidates, "
            f"scores of shape {d.shape} and {dp.shape}); rebuild the query"
        )
    if not (np.all(np.isfinite(d)) and np.all(np.isfinite(dp))):
        raise InvalidParameterError("the scores contain NaN or infinity; clean the column first")
    if not (np.isfinite(query.sensitivity) and query.sensitivity > 0):
        raise InvalidParameterError(
            f"the utility's sensitivity must be a positive number; got {query.sensitivity}"
        )


def selection_scale(epsilon: float, sensitivity: float, monotone: bool) -> float:
    """sigma of exp(u / sigma) (equivalently the Gumbel / exponential / Laplace noise scale of
    report-noisy-max) that makes one selection epsilon-DP: 2 Delta_u / epsilon in general,
    Delta_u / epsilon for a monotone utility (Dwork & Roth 2014, Theorem 3.10 and remark)."""
    return (1.0 if monotone else 2.0) * sensitivity / epsilon


def categorical_output(
    labels: tuple[str, ...], log_p: np.ndarray, log_q: np.ndarray, note: str = ""
) -> CategoricalOutput:
    """A :class:`CategoricalOutput` from log-pmfs; the loss is ln p/q computed in logs, so it is
    exact even where the probabilities underflow."""
    with np.errstate(invalid="ignore"):
        loss = np.asarray(log_p) - np.asarray(log_q)
    return CategoricalOutput(labels, np.exp(log_p), np.exp(log_q), loss, note)


def categorical_delta(pmf_p: np.ndarray, pmf_q: np.ndarray, epsilon: float) -> float:
    """Exact hockey-stick divergence of two pmfs, the larger direction:
    max(sum (p - e^eps q)_+, sum (q - e^eps p)_+)."""
    return float(discrete_hockey_stick(pmf_p, pmf_q, np.array([epsilon]))[0])


class CategoricalPureMechanism(PureEpsilonMechanism):
    """A pure epsilon-DP mechanism with finitely many outputs (its ``output_distribution`` is a
    :class:`CategoricalOutput`: the exponential mechanism, report-noisy-max, top-k, sparse
    vector): delta(epsilon) is the exact hockey-stick sum over its output pmfs on D and D'."""

    def delta_at(self, params: Mapping[str, Any], query: QueryInput, epsilon: float) -> float:
        out = self.output_distribution(params, query)
        assert isinstance(out, CategoricalOutput)
        return categorical_delta(out.pmf_d, out.pmf_d_prime, epsilon)


class NoisyArgmaxMechanism(CategoricalPureMechanism):
    """A selection that reports the candidate whose noisy score is highest (the exponential
    mechanism by the Gumbel-max trick, report-noisy-max): one noise scale for every candidate,
    Delta_u / epsilon for monotone scores when the user allows it, else 2 Delta_u / epsilon."""

    def scale(self, params: Mapping[str, Any], query: SelectionInput) -> float:
        """The noise scale: sigma of exp(u / sigma), b of report-noisy-max."""
        monotone = bool(query.monotone and params["use_monotone"])
        return selection_scale(params["epsilon"], query.sensitivity, monotone)

    @abstractmethod
    def noisy_scores(
        self, params: Mapping[str, Any], scores: np.ndarray, scale: float, rng: np.random.Generator, size: int
    ) -> np.ndarray:
        """``size`` rows of noisy ``scores`` whose argmax has this mechanism's law exactly."""

    def simulate(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        """Candidate indices: the argmax of each row of :meth:`noisy_scores`, drawn literally."""
        assert isinstance(query, SelectionInput)
        check_selection(query)
        scores = np.asarray(query.scores_d if on == "D" else query.scores_d_prime, dtype=float)
        noisy = self.noisy_scores(params, scores, self.scale(params, query), rng, size)
        return np.argmax(noisy, axis=1).astype(np.int64)


def max_abs_loss(output: CategoricalOutput) -> float:
    """max over outcomes of |ln p_D(o)/p_D'(o)| (exact; the smallest epsilon for delta = 0)."""
    return float(np.nanmax(np.abs(output.privacy_loss)))


def sample_pmf(pmf: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` exact draws of outcome indices from ``pmf`` (inverse CDF)."""
    cumulative = np.cumsum(pmf)
    draws = np.searchsorted(cumulative, rng.random(size) * cumulative[-1], side="right")
    return np.minimum(draws, pmf.size - 1).astype(np.int64)


def error_tail(pmf: np.ndarray, errors: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """P(error > alpha) at each alpha, exact, for a discrete error taking ``errors`` w.p. ``pmf``."""
    order = np.argsort(errors)
    sorted_errors, mass = errors[order], pmf[order]
    above = np.concatenate([np.cumsum(mass[::-1])[::-1], [0.0]])
    return np.clip(above[np.searchsorted(sorted_errors, alphas, side="right")], 0.0, 1.0)


def error_quantile(pmf: np.ndarray, errors: np.ndarray, level: float) -> float:
    """The smallest alpha with P(error <= alpha) >= level (exact)."""
    order = np.argsort(errors)
    cumulative = np.cumsum(pmf[order])
    index = min(int(np.searchsorted(cumulative, level - 1e-12)), errors.size - 1)
    return float(errors[order][index])


def union_bound_alpha(scale: float, n_outcomes: int, beta: float) -> float:
    """The seed's bound: with probability >= 1 - beta the error is below
    sigma (ln|R| + ln(1/beta)) (Dwork & Roth 2014, Theorem 3.11; upper bound)."""
    return scale * (np.log(n_outcomes) + np.log(1.0 / beta))


def union_bound_tail(scale: float, n_outcomes: int, alphas: np.ndarray) -> np.ndarray:
    """min(1, |R| exp(-alpha / sigma)) >= P(error >= alpha) (upper bound, Theorem 3.11)."""
    return np.minimum(1.0, n_outcomes * np.exp(-np.asarray(alphas) / scale))


def selection_accuracy(
    pmf: np.ndarray,
    errors: np.ndarray,
    *,
    ci_level: float,
    quantile_at: Callable[[float], float],
    tail_bound: Callable[[np.ndarray], np.ndarray],
    bound_alpha_at: Callable[[float], float],
    bound_name: str,
    notes: tuple[str, ...] = (),
    sweep: np.ndarray = EPSILON_SWEEP,
    x_label: str = "α (score below the best)",
) -> AccuracyReport:
    """The AccuracyReport of a selection whose error OPT - u(chosen) is ``errors`` w.p. ``pmf``:
    the exact tail with ``tail_bound(alphas)`` (an upper bound on P(error >= alpha)) beside it,
    the CI (exact quantile), the MSE, and the quantile at ``ci_level`` against epsilon (exact,
    ``quantile_at(eps)``) beside the bound's alpha at beta = 1 - ci_level (``bound_alpha_at(eps)``)."""
    y_label = f"{ci_level:.0%}-sure error bound"
    exact_curve = curve_over(sweep, quantile_at, x_label="ε", y_label=y_label, name="exact quantile")
    bound_curve = curve_over(
        EPSILON_SWEEP, bound_alpha_at, x_label="ε", y_label=y_label, name=bound_name, kind="bound"
    )
    return discrete_accuracy(
        pmf,
        errors,
        ci_level,
        x_label=x_label,
        error_name="error",
        curves_vs_epsilon=(exact_curve, bound_curve),
        tail_bound=tail_bound,
        bound_name=bound_name,
        notes=notes,
    )


def discrete_accuracy(
    pmf: np.ndarray,
    errors: np.ndarray,
    ci_level: float,
    *,
    x_label: str,
    error_name: str,
    curves_vs_epsilon: tuple[Curve, ...],
    tail_bound: Callable[[np.ndarray], np.ndarray] | None = None,
    bound_name: str = "",
    notes: tuple[str, ...] = (),
) -> AccuracyReport:
    """The AccuracyReport of an error that is ``errors`` w.p. ``pmf``, exactly: its tail
    P(error > alpha) on 200 alphas past the largest error, the CI (the ``ci_level`` quantile),
    the MSE; ``tail_bound(alphas)`` (an upper bound on P(error >= alpha)) beside the tail when
    given. ``error_name`` names the error in the tail's axis label ("error", "|error|")."""
    alphas = np.linspace(0.0, float(errors.max()) * 1.05 + 1e-12, 200)
    tail = Curve(alphas, error_tail(pmf, errors, alphas), x_label, f"P({error_name} > α)", "exact tail")
    bound = None
    if tail_bound is not None:
        bound = Curve(alphas, tail_bound(alphas), x_label, f"P({error_name} ≥ α)", bound_name, "bound")
    return AccuracyReport(
        error_tail=tail,
        error_tail_bound=bound,
        ci_level=ci_level,
        ci_halfwidth=error_quantile(pmf, errors, ci_level),
        mse=float(np.sum(pmf * errors**2)),
        error_vs_epsilon=curves_vs_epsilon,
        notes=notes,
    )


# ---------------------------------------------------------------- the mechanism
def score_selection_accuracy(
    query: QueryInput,
    epsilon: float,
    scale_at: Callable[[float], float],
    log_pmf: Callable[[np.ndarray, float], np.ndarray],
    *,
    ci_level: float,
    tail_bound: Callable[[float, int, np.ndarray], np.ndarray],
    bound_alpha: Callable[[float, int, float], float],
    bound_name: str,
    notes: tuple[str, ...],
    sweep_log_pmf: Callable[[np.ndarray, float], np.ndarray] | None = None,
) -> AccuracyReport:
    """:func:`selection_accuracy` of a mechanism that reports one candidate by its score on D
    (the exponential mechanism, report-noisy-max): reporting candidate i errs by OPT - u_i, with
    the law ``log_pmf(scores, scale)`` at the scale ``scale_at(epsilon)``; beside it
    ``tail_bound(scale, candidates, alphas)`` and, against epsilon, the exact quantile (from
    ``sweep_log_pmf``, default ``log_pmf``) and ``bound_alpha(scale, candidates, beta)``."""
    assert isinstance(query, SelectionInput)
    check_selection(query)
    scores = np.asarray(query.scores_d, dtype=float)
    errors = scores.max() - scores
    sweep = sweep_log_pmf or log_pmf

    def quantile_at(eps: float) -> float:
        return error_quantile(np.exp(sweep(scores, scale_at(eps))), errors, ci_level)

    scale, count, beta = scale_at(epsilon), scores.size, 1.0 - ci_level
    return selection_accuracy(
        np.exp(log_pmf(scores, scale)),
        errors,
        ci_level=ci_level,
        quantile_at=quantile_at,
        tail_bound=lambda a: tail_bound(scale, count, a),
        bound_alpha_at=lambda e: bound_alpha(scale_at(e), count, beta),
        bound_name=bound_name,
        notes=notes,
    )


def exponential_log_pmf(scores: np.ndarray, scale: float) -> np.ndarray:
    """log P(r) = u_r / sigma - logsumexp(u / sigma): the exponential mechanism's exact pmf in
    logs (seed 000, Section 12.3)."""
    from scipy.special import log_softmax  # on first use: scipy.special is not needed at start-up

    return log_softmax(np.asarray(scores, dtype=float) / scale)


def standard_gumbel(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Standard Gumbel draws as -ln E, E ~ Exp(1): the same law as ``rng.gumbel`` with one
    logarithm instead of two (3x faster on 1.6e6 draws)."""
    draws = rng.standard_exponential(size=shape)
    np.log(draws, out=draws)
    return np.negative(draws, out=draws)


@register
class ExponentialMechanism(NoisyArgmaxMechanism):
    """Select a candidate with probability proportional to exp(epsilon u / (2 Delta_u)), or
    exp(epsilon u / Delta_u) for a monotone utility. Pure epsilon-DP (exact claim)."""

    name: ClassVar[str] = "exponential"
    label: ClassVar[str] = "Exponential mechanism"
    summary: ClassVar[str] = (
        "Picks one candidate, favouring high scores exponentially: the best is likeliest, "
        "but close runners-up win often."
    )
    input_type: ClassVar[type] = SelectionInput
    output_kind: ClassVar[Literal["categorical"]] = "categorical"
    params: ClassVar[tuple[Param, ...]] = (EPSILON, USE_MONOTONE)
    order: ClassVar[int] = 40

    def log_pmfs(self, params: Mapping[str, Any], query: SelectionInput) -> tuple[np.ndarray, np.ndarray]:
        """Exact log selection probabilities on D and on D'."""
        check_selection(query)
        scale = self.scale(params, query)
        return (exponential_log_pmf(query.scores_d, scale), exponential_log_pmf(query.scores_d_prime, scale))

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> CategoricalOutput:
        assert isinstance(query, SelectionInput)
        log_p, log_q = self.log_pmfs(params, query)
        note = f"exact; σ = {self.scale(params, query):.6g}"
        return categorical_output(query.candidates, log_p, log_q, note)

    def delta_at(self, params: Mapping[str, Any], query: QueryInput, epsilon: float) -> float:
        """0 exactly at or above the claimed epsilon (Dwork & Roth 2014, Theorem 3.10: pure
        epsilon-DP; the float sum would leave ~1e-42 of rounding); below it, the exact
        hockey-stick sum over the candidates."""
        if epsilon >= params["epsilon"]:
            check_selection(query)  # type: ignore[arg-type]
            return 0.0
        return super().delta_at(params, query, epsilon)

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        assert isinstance(query, SelectionInput)
        return score_selection_accuracy(
            query,
            params["epsilon"],
            lambda eps: self.scale({**params, "epsilon": eps}, query),
            exponential_log_pmf,
            ci_level=ci_level,
            tail_bound=union_bound_tail,
            bound_alpha=union_bound_alpha,
            bound_name="union bound |R| e^(−α/σ)",
            notes=("error = OPT − u(chosen), exact; bound: Dwork & Roth 2014, Theorem 3.11",),
        )

    def noisy_scores(
        self, params: Mapping[str, Any], scores: np.ndarray, scale: float, rng: np.random.Generator, size: int
    ) -> np.ndarray:
        """The Gumbel-max trick: argmax(u / sigma + Gumbel) has the exponential mechanism's law."""
        return scores / scale + standard_gumbel(rng, (size, scores.size))


# ---------------------------------------------------------------- example inputs
def pricing_input(bids: np.ndarray, prices: np.ndarray) -> SelectionInput:
    """The digital-goods auction of seed 004 (McSherry & Talwar 2007): candidates are prices,
    u(D, p) = p * #{bids >= p} (revenue). Delta_u = max price; the worst-case neighbour D'
    removes the highest bid, which lowers every affected revenue, so the utility is monotone."""
    bids = np.asarray(bids, dtype=float)
    prices = np.asarray(prices, dtype=float)
    if bids.size == 0 or prices.size == 0:
        raise InvalidParameterError("the auction needs at least one bid and one price")
    if not (np.all(np.isfinite(bids)) and np.all(np.isfinite(prices)) and np.all(prices > 0)):
        raise InvalidParameterError("bids must be finite and prices finite and positive")
    sorted_bids = np.sort(bids)

    def revenue(sorted_values: np.ndarray) -> np.ndarray:
        buyers = sorted_values.size - np.searchsorted(sorted_values, prices, side="left")
        return prices * buyers

    return SelectionInput(
        candidates=tuple(f"{p:g}" for p in prices),
        scores_d=revenue(sorted_bids),
        scores_d_prime=revenue(sorted_bids[:-1]),
        sensitivity=float(prices.max()),
        monotone=True,
        n=int(bids.size),
        statistic="pricing",
        relation="add_remove",
        differing_row=f"the highest bid ({sorted_bids[-1]:g}) removed",
    )


def counts_input(
    labels: tuple[str, ...], counts: np.ndarray, relation: Literal["add_remove", "replace"] = "add_remove"
) -> SelectionInput:
    """ "Most common category" with u = count (Delta_u = 1). Worst-case neighbour: add/remove
    takes one person out of the leader (monotone); replace moves one person from the leader to
    the runner-up (not monotone)."""
    counts = np.asarray(counts, dtype=float)
    order = np.argsort(-counts, kind="stable")
    moved = counts.copy()
    moved[order[0]] -= 1
    if relation == "replace" and counts.size > 1:
        moved[order[1]] += 1
    row = f"one person of {labels[order[0]]}" + (
        " removed" if relation == "add_remove" else f" recorded as {labels[order[1]]}"
    )
    return SelectionInput(
        candidates=tuple(labels),
        scores_d=counts,
        scores_d_prime=moved,
        sensitivity=1.0,
        monotone=relation == "add_remove",
        n=int(counts.sum()),
        statistic="argmax",
        relation=relation,
        differing_row=row,
    )
