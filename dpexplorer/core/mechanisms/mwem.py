"""MWEM (Hardt, Ligett & McSherry 2012, Algorithm 1): the practical synthetic-data mechanism for
a workload of counting queries, where BLR's enumeration is out of reach.

Starting from the uniform distribution A_0 over the universe, for T rounds:
1. select the query the current A answers worst with the exponential mechanism at epsilon'/(2T)
   (utility |q(A) - q(x)|, queries as shares of a denominator n_hat, Delta_u = 1/n_hat:
   sigma = 4 T / (n_hat epsilon'));
2. measure it with Laplace noise at epsilon'/(2T) (scale 2 T / (n_hat epsilon'));
3. multiplicative-weights update A(j) proportional to A(j) exp(q(j) (m - q(A)) / 2), applied
   for every measurement so far, in order (the paper's Section 3.3 enhancement; post-processing).
Release the average of A_1..A_T. The paper takes n as public; here the denominator n_hat is the
public n under replace, and under add/remove (n private) a noisy row count bought with a
declared share of epsilon, epsilon' being the rest (:mod:`dpexplorer.core.row_count`). Pure
epsilon-DP by basic composition of the count and 2T mechanisms at epsilon'/(2T) each (Dwork &
Roth 2014, Theorem 3.16; the paper's Theorem 2.1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from dpexplorer.core.mechanisms.base import QueryInput, WorkloadInput
from dpexplorer.core.mechanisms.exponential import exponential_log_pmf, sample_pmf
from dpexplorer.core.mechanisms.params import EPSILON, Param, whole_number
from dpexplorer.core.mechanisms.pmw import (
    MonteCarloWorkload,
    check_any_workload,
    measured_shares,
    workload_answers,
    workload_row,
)
from dpexplorer.core.mechanisms.registry import register
from dpexplorer.core.mechanisms.runs import NO_JOB, Job
from dpexplorer.core.row_count import COUNT_SHARE, split_epsilon

MC_RUNS = 150
"""Runs per side of the Monte-Carlo views (each run is T rounds of updates)."""

ROUNDS = whole_number(
    "rounds",
    "Rounds T",
    default=10,
    low=1,
    high=1000,
    help=(
        "How many queries MWEM measures to improve its synthetic data. More rounds can fix more "
        "queries, but the budget is split over them, so each measurement is noisier."
    ),
)


@dataclass(frozen=True, eq=False)
class MWEMResult:
    """One release: the synthetic distribution over the cells (sums to 1), its answers, the true
    answers, per-query errors (fractions), and the queries measured in each round."""

    synthetic_distribution: np.ndarray
    synthetic_answers: np.ndarray
    true_answers: np.ndarray
    query_errors: np.ndarray
    max_error: float
    selected: np.ndarray
    measurements: np.ndarray
    seconds: float = 0.0


def mwem_scales(epsilon: float, rounds: int, denominator: float) -> tuple[float, float]:
    """(sigma of the exponential-mechanism selection, Laplace scale of the measurement), each
    mechanism at epsilon / (2T) with Delta = 1 / denominator (``epsilon``: what is left after
    the row count)."""
    per_step = epsilon / (2 * rounds)
    return 2.0 / (denominator * per_step), 1.0 / (denominator * per_step)


def mw_update(workload: Any, current: np.ndarray, selected: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Step 3: the multiplicative-weights update of ``current`` for every measurement so far, in
    order (the paper's enhancement); ``measured`` are noisy answers as fractions. Post-processing:
    it reads only public values."""
    for choice, value in zip(selected, measured, strict=True):
        row = workload_row(workload, int(choice))
        current = current * np.exp(row * (value - row @ current) / 2)
        current /= current.sum()
    return current


def mwem_run(
    workload: Any,
    histogram: np.ndarray,
    params: Mapping[str, Any],
    rng: np.random.Generator,
    relation: str,
    job: Job = NO_JOB,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One run: (released average distribution, true answers as shares of the rows, selected
    queries, measurements). The denominator is drawn first, as a release does."""
    denominator, truth, scaled = measured_shares(workload, histogram, params, relation, rng)
    rounds = params["rounds"]
    sigma, laplace_scale = mwem_scales(split_epsilon(params, relation)[1], rounds, denominator)
    current = np.full(workload.shape[1], 1.0 / workload.shape[1])
    total = np.zeros_like(current)
    selected, measured = np.empty(rounds, dtype=np.int64), np.empty(rounds)
    for t in range(rounds):
        job.checkpoint(t / rounds)
        approx = workload_answers(workload, current)
        choice = int(sample_pmf(np.exp(exponential_log_pmf(np.abs(approx - scaled), sigma)), rng, 1)[0])
        selected[t], measured[t] = choice, scaled[choice] + rng.laplace(scale=laplace_scale)
        current = mw_update(workload, current, selected[: t + 1], measured[: t + 1])
        total += current
    job.checkpoint(1.0)
    return total / rounds, truth, selected, measured


@register
class MWEM(MonteCarloWorkload[MWEMResult]):
    """MWEM: pure epsilon-DP synthetic distribution (exact claim, basic composition)."""

    name: ClassVar[str] = "mwem"
    label: ClassVar[str] = "MWEM synthetic data"
    summary: ClassVar[str] = (
        "Builds a synthetic distribution by repeatedly measuring the query it answers worst "
        "and correcting itself: practical where BLR is too slow."
    )
    output_kind: ClassVar[Literal["synthetic"]] = "synthetic"
    params: ClassVar[tuple[Param, ...]] = (EPSILON, ROUNDS, COUNT_SHARE)
    order: ClassVar[int] = 62
    mc_runs: ClassVar[int] = MC_RUNS
    proof: ClassVar[str] = "basic composition of 2T steps"
    bound_note: ClassVar[str] = "MWEM's proven bound (Theorem 2.2) is not drawn"

    def one_run(
        self, params: Mapping[str, Any], query: QueryInput, rng: np.random.Generator, job: Job
    ) -> MWEMResult:
        """One release on D with its errors against the true answers."""
        assert isinstance(query, WorkloadInput)
        check_any_workload(query)
        released, truth, selected, measured = mwem_run(
            query.workload, query.histogram_d, params, rng, query.relation, job
        )
        answers = workload_answers(query.workload, released)
        errors = np.abs(answers - truth)
        return MWEMResult(released, answers, truth, errors, float(errors.max()), selected, measured)

    def answers(
        self, params: Mapping[str, Any], query: WorkloadInput, histogram: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """The released distribution's answers (the workload as shares of the rows)."""
        return workload_answers(
            query.workload, mwem_run(query.workload, histogram, params, rng, query.relation)[0]
        )
