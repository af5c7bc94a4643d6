"""Private top-k (lecture notes 004, "Private ranking"): the k best candidates, in order.

- Peeling: k exponential mechanisms, each with epsilon / k, each removing its winner. Basic
  composition (Dwork & Roth 2014, Theorem 3.16) gives epsilon-DP.
- One-shot Gumbel: add Gumbel noise of the per-step scale to every score once and report the k
  largest in order. Equal in law to peeling (Durfee & Rogers 2019, Lemma 4.2), so the same
  epsilon; it draws one noise vector instead of k.

The output is the ordered k-tuple; its exact pmf is the product of the sequential softmaxes.
Outcome indices are the tuples' ranks in lexicographic order (``itertools.permutations``).
Usefulness (the lecture on private ranking): a list is alpha-useful when it is sound (no
member scores <= S_k - alpha) and complete (every candidate scoring >= S_k + alpha is in it),
S_k the k-th best score."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from scipy.special import logsumexp

from dpexplorer.core.accuracy import EPSILON_SWEEP
from dpexplorer.core.errors import InvalidParameterError, NotApplicableError
from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    CategoricalOutput,
    QueryInput,
    SelectionInput,
)
from dpexplorer.core.mechanisms.exponential import (
    USE_MONOTONE,
    CategoricalPureMechanism,
    categorical_output,
    check_selection,
    error_quantile,
    selection_accuracy,
    selection_scale,
    standard_gumbel,
    union_bound_alpha,
    union_bound_tail,
)
from dpexplorer.core.mechanisms.params import EPSILON, Param, choice, whole_number
from dpexplorer.core.mechanisms.registry import register

MAX_OUTCOMES = 200_000
"""Largest number of ordered k-tuples whose exact pmf is enumerated."""
MAX_RANKED = 2**62
"""Ordered k-tuples beyond this have no int64 outcome index: :meth:`TopK.simulate` refuses
(the lists themselves come from :meth:`TopK.sample_lists`, at any size)."""

K = whole_number(
    "k",
    "k (how many to report)",
    default=3,
    low=1,
    high=100,
    help=(
        "How many top candidates to report, in order. The budget ε is split evenly over the k "
        "picks, so each pick is noisier when k is larger."
    ),
)

METHOD = choice(
    "method",
    "Method",
    default="peeling",
    choices=("peeling", "gumbel"),
    help=(
        "Peeling runs the exponential mechanism k times, removing each winner; one-shot Gumbel "
        "adds noise once and keeps the k largest. Both give exactly the same output "
        "distribution and the same ε; one-shot is faster."
    ),
)


@dataclass(frozen=True, eq=False)
class Usefulness:
    """Exact probabilities, at each alpha, that the reported list is sound, complete, and
    alpha-useful (both), on D (seed 004's definition)."""

    alphas: np.ndarray
    sound: np.ndarray
    complete: np.ndarray
    useful: np.ndarray


def _how_many(count: int) -> str:
    """A count in words a reader takes in at a glance: 1,234,567 or "about 6.1 × 10^398"."""
    if count < 10**15:
        return f"{count:,}"
    digits = len(str(count)) - 1
    return f"about {count / 10**digits:.2g} × 10^{digits}" if digits < 300 else f"about 10^{digits}"


def ordered_tuples(n: int, k: int) -> np.ndarray:
    """All ordered k-tuples of distinct indices below n, lexicographically, shape (n!/(n-k)!, k)."""
    count = math.perm(n, k)
    if count > MAX_OUTCOMES:
        raise NotApplicableError(
            f"{_how_many(count)} ordered top-{k} lists of {n:,} candidates are too many to list "
            f"exactly (limit {MAX_OUTCOMES:,}); lower k or use fewer candidates for the exact "
            "views (simulation and release have no such limit)"
        )
    return np.array(list(itertools.permutations(range(n), k)), dtype=np.int64).reshape(count, k)


def tuple_rank(tuples: np.ndarray, n: int) -> np.ndarray:
    """The lexicographic rank of each ordered tuple (row) among all ordered k-tuples of range(n)."""
    k = tuples.shape[1]
    rank = np.zeros(tuples.shape[0], dtype=np.int64)
    for i in range(k):
        smaller_before = (tuples[:, :i] < tuples[:, i : i + 1]).sum(axis=1)
        rank += (tuples[:, i] - smaller_before) * math.perm(n - 1 - i, k - 1 - i)
    return rank


def peeling_log_pmf(scores: np.ndarray, scale: float, tuples: np.ndarray) -> np.ndarray:
    """Exact log P(ordered tuple) of k sequential exponential mechanisms with sigma = ``scale``:
    sum_i [u_{r_i}/sigma - logsumexp over the candidates not yet taken]."""
    w = np.asarray(scores, dtype=float) / scale
    remaining = np.ones((tuples.shape[0], w.size))
    rows = np.arange(tuples.shape[0])
    total = np.zeros(tuples.shape[0])
    for step in range(tuples.shape[1]):
        chosen = tuples[:, step]
        total += w[chosen] - logsumexp(np.broadcast_to(w, remaining.shape), b=remaining, axis=1)
        remaining[rows, chosen] = 0.0
    return total


def useful_errors(scores: np.ndarray, tuples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per tuple: the soundness error S_k - min member score and the completeness error
    max non-member score - S_k. The list is alpha-sound iff the first is < alpha, alpha-complete
    iff the second is < alpha."""
    u = np.asarray(scores, dtype=float)
    k = tuples.shape[1]
    s_k = np.sort(u)[::-1][k - 1]
    sound = s_k - u[tuples].min(axis=1)
    outside = np.ones((tuples.shape[0], u.size), dtype=bool)
    outside[np.arange(tuples.shape[0])[:, None], tuples] = False
    best_outside = np.where(outside, u[None, :], -np.inf).max(axis=1)
    return sound, best_outside - s_k


@register
class TopK(CategoricalPureMechanism):
    """The k best candidates in order, by peeling or one-shot Gumbel (equal in law); pure
    epsilon-DP by basic composition of k (epsilon / k)-DP exponential mechanisms."""

    name: ClassVar[str] = "topk"
    label: ClassVar[str] = "Private top-k"
    summary: ClassVar[str] = "Reports the k highest-scoring candidates in order, with noise."
    input_type: ClassVar[type] = SelectionInput
    output_kind: ClassVar[Literal["categorical"]] = "categorical"
    params: ClassVar[tuple[Param, ...]] = (EPSILON, K, METHOD, USE_MONOTONE)
    order: ClassVar[int] = 42

    def step_scale(self, params: Mapping[str, Any], query: SelectionInput) -> float:
        """sigma of each of the k exponential mechanisms (budget epsilon / k each)."""
        monotone = bool(query.monotone and params["use_monotone"])
        return selection_scale(params["epsilon"] / params["k"], query.sensitivity, monotone)

    def _check(self, params: Mapping[str, Any], query: QueryInput) -> SelectionInput:
        assert isinstance(query, SelectionInput)
        check_selection(query)
        if params["k"] > len(query.candidates):
            raise InvalidParameterError(
                f"k = {params['k']} exceeds the {len(query.candidates)} candidates; lower k"
            )
        return query

    def outcomes(self, params: Mapping[str, Any], query: QueryInput) -> np.ndarray:
        """The ordered tuples, row i being outcome index i."""
        query = self._check(params, query)
        return ordered_tuples(len(query.candidates), params["k"])

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> CategoricalOutput:
        query = self._check(params, query)
        tuples = self.outcomes(params, query)
        scale = self.step_scale(params, query)
        labels = tuple(" > ".join(query.candidates[i] for i in row) for row in tuples)
        return categorical_output(
            labels,
            peeling_log_pmf(query.scores_d, scale, tuples),
            peeling_log_pmf(query.scores_d_prime, scale, tuples),
            f"exact; {params['k']} picks with σ = {scale:.6g} each",
        )

    def delta_at(self, params: Mapping[str, Any], query: QueryInput, epsilon: float) -> float:
        """0 exactly at or above the claimed epsilon (pure epsilon-DP, basic composition of k
        exponential mechanisms); below it, the exact hockey-stick sum over the ordered lists."""
        if epsilon >= params["epsilon"]:
            self._check(params, query)
            return 0.0
        return super().delta_at(params, query, epsilon)

    def usefulness(self, params: Mapping[str, Any], query: QueryInput, alphas: np.ndarray) -> Usefulness:
        """Exact P(sound), P(complete), P(alpha-useful) on D at each alpha."""
        query = self._check(params, query)
        tuples = self.outcomes(params, query)
        pmf = np.exp(peeling_log_pmf(query.scores_d, self.step_scale(params, query), tuples))
        sound_err, complete_err = useful_errors(query.scores_d, tuples)
        a = np.asarray(alphas, dtype=float)[:, None]
        sound, complete = sound_err[None, :] < a, complete_err[None, :] < a
        return Usefulness(
            np.asarray(alphas, dtype=float),
            (sound * pmf).sum(axis=1),
            (complete * pmf).sum(axis=1),
            ((sound & complete) * pmf).sum(axis=1),
        )

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        """Error = the smallest alpha for which the list is not alpha-useful, i.e.
        max(S_k - min member, max non-member - S_k, 0). Bound: if every pick is within alpha of
        the best remaining score, the list is alpha-useful, so P(error >= alpha) <=
        k |R| e^(-alpha / sigma_step) (Dwork & Roth 2014, Theorem 3.11, union bound over picks)."""
        query = self._check(params, query)
        tuples = self.outcomes(params, query)
        errors = np.maximum(np.maximum(*useful_errors(query.scores_d, tuples)), 0.0)
        k, count, beta = params["k"], len(query.candidates), 1.0 - ci_level

        def at(eps: float) -> float:
            return self.step_scale({**params, "epsilon": eps}, query)

        def quantile_at(eps: float) -> float:
            return error_quantile(np.exp(peeling_log_pmf(query.scores_d, at(eps), tuples)), errors, ci_level)

        scale = at(params["epsilon"])
        return selection_accuracy(
            np.exp(peeling_log_pmf(query.scores_d, scale, tuples)),
            errors,
            ci_level=ci_level,
            quantile_at=quantile_at,
            tail_bound=lambda a: union_bound_tail(scale, k * count, a),
            bound_alpha_at=lambda e: union_bound_alpha(at(e), k * count, beta),
            bound_name="union bound k|R| e^(−α/σ)",
            notes=("error = smallest α for which the list is not α-useful (sound and complete within α)",),
            sweep=EPSILON_SWEEP[::4],
        )

    def sample_lists(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        """``size`` reported lists, shape (size, k), candidate indices in reported order."""
        query = self._check(params, query)
        scores = np.asarray(query.scores_d if on == "D" else query.scores_d_prime, dtype=float)
        w = scores / self.step_scale(params, query)
        k = params["k"]
        if params["method"] == "gumbel":
            noisy = w + standard_gumbel(rng, (size, w.size))
            return np.argsort(-noisy, axis=1)[:, :k]
        return _peel(w, k, rng, size)

    def simulate(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        """Outcome indices (ranks of the ordered lists, as in :meth:`output_distribution`)."""
        query = self._check(params, query)
        count = math.perm(len(query.candidates), params["k"])
        if count > MAX_RANKED:
            raise NotApplicableError(
                f"the {len(query.candidates):,} candidates have more ordered top-{params['k']} "
                f"lists than an outcome index can number (limit 2^62); the Selection view and a "
                "release draw the lists themselves"
            )
        lists = self.sample_lists(params, query, rng, size, on)
        return tuple_rank(lists, len(query.candidates))


def _peel(w: np.ndarray, k: int, rng: np.random.Generator, size: int) -> np.ndarray:
    """k sequential exponential-mechanism draws over the candidates not yet taken, each by the
    Gumbel-max trick with FRESH noise (an exact exponential-mechanism draw; Dwork & Roth 2014,
    Section 3.4): peeling itself, not the one-shot top-k it equals in law, so the tests can
    compare the two. Taken candidates get -inf."""
    noisy = np.empty((size, w.size))
    out = np.empty((size, k), dtype=np.int64)
    rows = np.arange(size)
    taken = np.zeros((size, w.size), dtype=bool)
    for step in range(k):
        np.add(w[None, :], standard_gumbel(rng, (size, w.size)), out=noisy)
        noisy[taken] = -np.inf
        choice = np.argmax(noisy, axis=1)
        out[:, step] = choice
        taken[rows, choice] = True
    return out
