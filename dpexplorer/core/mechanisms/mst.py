"""MST (McKenna, Miklau & Sheldon 2021, "Winning the NIST Contest: A scalable and general
approach to differentially private synthetic data", Algorithm 1): synthetic records from a
maximum-spanning-tree of 2-way marginals.

With rho-zCDP split in three equal parts (d columns, Delta_2^2 the squared l2 sensitivity of one
marginal's counts, Delta_1 its l1 sensitivity; :mod:`dpexplorer.core.marginals`):

1. measure every 1-way marginal with Gaussian noise of variance sigma_1^2 = d Delta_2^2 / (2 rho/3)
   (d measurements of Delta_2^2 / (2 sigma_1^2) each: rho/3);
2. select d - 1 edges of a spanning tree, Kruskal-style: in each round, among the pairs joining
   two different components, the exponential mechanism at epsilon = sqrt(8 (rho/3) / (d - 1))
   (rounded down) with score ||M_ij(D) - M_ij(independent model)||_1, sensitivity Delta_1; the
   independent model is the product of the 1-way noisy marginals clipped at 0 and normalised
   (post-processing; the paper's estimate from the 1-way measurements is this product);
3. measure the d - 1 selected 2-way marginals with sigma_2^2 = (d - 1) Delta_2^2 / (2 rho/3).

Total: rho/3 + (d - 1) epsilon^2/8 + rho/3 <= rho (zCDP composition, Bun & Steinke 2016, Lemma
2.3; adaptive choice of the next step from past outputs is allowed there). Charged: ZCDP(rho),
rho the largest with epsilon(rho, delta) <= the declared epsilon (Canonne, Kamath & Steinke 2020,
Proposition 12: :func:`rho_for`). Then Private-PGM estimates a graphical model from the
measurements and records are drawn from it (post-processing). The paper's domain compression
(merging rare 1-way cells) is not done: every declared cell is kept."""

from __future__ import annotations

import dataclasses
import math
from abc import abstractmethod
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, ClassVar, Literal

import numpy as np

from dpexplorer.core.accounting.guarantees import ZCDP
from dpexplorer.core.accounting.single import zcdp_to_epsilon
from dpexplorer.core.errors import InvalidParameterError, NotApplicableError
from dpexplorer.core.marginals import (
    Clique,
    MarginalInput,
    Measurement,
    PrivateSteps,
    Round,
    SeededSteps,
    SyntheticResult,
    Transcript,
    em_cost,
    fitter,
    gaussian_cost,
    l1_distance,
    sigma2_for,
    sqrt_down,
    synthesise,
)
from dpexplorer.core.mechanisms.base import AccuracyReport, OutputDistribution, QueryInput
from dpexplorer.core.mechanisms.params import DELTA, EPSILON, Param, choice, whole_number
from dpexplorer.core.mechanisms.registry import register
from dpexplorer.core.mechanisms.runs import NO_JOB, Job, RunMechanism

SYNTH_DELTA = dataclasses.replace(DELTA, default=1e-9)
ESTIMATOR = choice(
    "estimator",
    "Estimator",
    default="auto",
    choices=("auto", "pgm", "dense"),
    help=(
        "How the model is fitted to the noisy marginals (post-processing: no effect on privacy). "
        "pgm: Private-PGM's graphical model (scales to large tables; compiles JAX code first); "
        "dense: the whole joint table (small domains only, no JAX); auto: dense when it fits."
    ),
)
ITERATIONS = whole_number(
    "iterations",
    "Estimation iterations",
    default=500,
    low=10,
    high=100_000,
    help="Optimisation steps of each model fit: more fit the noisy marginals better and take longer.",
)
ROWS = whole_number(
    "rows",
    "Synthetic rows",
    default=0,
    low=0,
    high=100_000_000,
    help="Records in the synthetic table; 0 takes the model's noisy estimate of the number of rows.",
)


SEARCH_STEPS = 200
"""Bisection steps of :func:`rho_for`: from [0, epsilon] to 1e-9 relative takes under 80 for any
epsilon a mechanism takes (at least MIN_EPSILON) and any delta."""


def rho_for(epsilon: float, delta: float) -> float:
    """The largest rho (to 1e-9 relative, rounded down) whose (epsilon, delta) conversion
    (:func:`~dpexplorer.core.accounting.single.zcdp_to_epsilon`, an upper bound) is at most
    ``epsilon``: rho-zCDP then implies (epsilon, delta)-DP."""
    if not (epsilon > 0 and 0 < delta < 1):
        raise InvalidParameterError("ε must be positive and δ in (0, 1)")
    low, high = 0.0, epsilon
    for _ in range(SEARCH_STEPS):  # bounded: among subnormal floats the gap stopped shrinking
        if high - low <= 1e-9 * high:
            break
        middle = (low + high) / 2
        low, high = (middle, high) if zcdp_to_epsilon(middle, delta) <= epsilon else (low, middle)
    return low


class MarginalMechanism(RunMechanism[SyntheticResult]):
    """What MST and AIM share: (epsilon, delta) declared, rho-zCDP guaranteed and charged; the
    views are the synthetic-data views (no exact output law)."""

    input_type: ClassVar[type] = MarginalInput
    output_kind: ClassVar[Literal["synthetic"]] = "synthetic"

    def rho(self, params: Mapping[str, Any]) -> float:
        return rho_for(float(params["epsilon"]), float(params["delta"]))

    def guarantee(self, params: Mapping[str, Any], query: QueryInput) -> ZCDP:
        """rho-zCDP, rho = :func:`rho_for` (epsilon, delta) (the modules' docstrings prove the
        steps add up to at most rho)."""
        return ZCDP(self.rho(params))

    def epsilon_delta(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        delta = float(params["delta"])
        return zcdp_to_epsilon(self.rho(params), delta), delta

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> OutputDistribution:
        raise NotApplicableError(
            f"{self.label} releases a synthetic table: it has no output law to draw here; see the "
            "synthetic-data views (marginal errors)"
        )

    def proven(self, params: Mapping[str, Any]) -> str:
        return f"ρ-zCDP, ρ = {self.rho(params):.4g}"

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        raise NotApplicableError(f"{self.label}'s accuracy is shown as the workload error of a run")

    def run_error(
        self, params: Mapping[str, Any], query: QueryInput, on: Literal["D", "D'"]
    ) -> Callable[[np.random.Generator], float]:
        """A run's mean workload total-variation distance (each run fits a model; on D whatever
        ``on`` says)."""
        assert isinstance(query, MarginalInput)
        return lambda rng: workload_tvd(query, self.run(params, query, rng))

    @abstractmethod
    def steps(
        self, params: Mapping[str, Any], query: MarginalInput, private: PrivateSteps, job: Job = NO_JOB
    ) -> Transcript:
        """The DP part of a run (selection and measurement) with ``private``'s noise."""

    def one_run(
        self, params: Mapping[str, Any], query: QueryInput, rng: np.random.Generator, job: Job
    ) -> SyntheticResult:
        """One exploration run (seeded noise): transcript, model and records."""
        assert isinstance(query, MarginalInput)
        check_input(query)
        transcript = self.steps(params, query, SeededSteps(rng), job)
        fit = fitter(query, params["estimator"], int(params["iterations"]), job.cancel)
        return synthesise(query, transcript, fit, int(params["rows"]), rng)


def workload_tvd(query: MarginalInput, result: SyntheticResult) -> float:
    """Mean total-variation distance over the workload (exploration: reads the true counts)."""
    from dpexplorer.core.marginals import workload_errors

    errors = workload_errors(query, result.records)
    return float(np.mean(list(errors.values()))) if errors else 0.0


def check_input(query: MarginalInput) -> None:
    """NotApplicableError for an input MST/AIM cannot run on (decided from public facts)."""
    if len(query.columns) < 2:
        raise NotApplicableError("synthetic data over marginals needs at least two columns")
    if query.sensitivity_l1 < 1 or query.sensitivity_l2_squared < 1:
        raise NotApplicableError("the marginals' sensitivities must be at least 1")


def independent_pair(one_way: dict[int, np.ndarray], i: int, j: int) -> np.ndarray:
    """The 2-way counts of the independent model: the noisy 1-way marginals clipped at 0,
    normalised, multiplied, scaled to their mean total (post-processing)."""
    a, b = np.maximum(one_way[i], 0.0), np.maximum(one_way[j], 0.0)
    total = max((float(np.sum(one_way[i])) + float(np.sum(one_way[j]))) / 2, 0.0)
    pa = a / a.sum() if a.sum() > 0 else np.full(a.size, 1.0 / a.size)
    pb = b / b.sum() if b.sum() > 0 else np.full(b.size, 1.0 / b.size)
    return total * np.outer(pa, pb).ravel()


def mst_steps(
    query: MarginalInput,
    rho: Fraction,
    private: PrivateSteps,
    job: Job = NO_JOB,
) -> Transcript:
    """MST's selection and measurements (module docstring) at exactly ``rho`` or less."""
    check_input(query)
    d = len(query.columns)
    l2sq, l1 = query.sensitivity_l2_squared, Fraction(query.sensitivity_l1)
    third = rho / 3
    out = Transcript()
    sigma1 = sigma2_for(third / d, l2sq)
    one_way: dict[int, np.ndarray] = {}
    for i in range(d):
        job.checkpoint(0.3 * i / d)
        one_way[i] = private.measure(query.counts((i,)), sigma1)
        out.measurements.append(Measurement((i,), one_way[i], sigma1))
        out.rho_spent += gaussian_cost(sigma1, l2sq)
    epsilon = sqrt_down(8 * third / (d - 1))
    component = list(range(d))
    chosen: list[Clique] = []
    for r in range(d - 1):
        job.checkpoint(0.3 + 0.4 * r / (d - 1))
        pairs = [(i, j) for i in range(d) for j in range(i + 1, d) if component[i] != component[j]]
        scores = [l1_distance(query.counts(p), independent_pair(one_way, *p)) for p in pairs]
        pick = pairs[private.select(scores, epsilon, l1)]
        out.rho_spent += em_cost(epsilon)
        old, new = component[pick[1]], component[pick[0]]
        component = [new if c == old else c for c in component]
        chosen.append(pick)
    sigma2 = sigma2_for(third / (d - 1), l2sq)
    for k, pair in enumerate(chosen):
        job.checkpoint(0.7 + 0.3 * k / (d - 1))
        out.measurements.append(Measurement(pair, private.measure(query.counts(pair), sigma2), sigma2))
        out.rho_spent += gaussian_cost(sigma2, l2sq)
        out.rounds.append(Round(pair, float(epsilon), math.sqrt(sigma2), d * (d - 1) // 2))
    assert out.rho_spent <= rho, "MST spent more than its budget"
    return out


@register
class MST(MarginalMechanism):
    """MST: rho-zCDP (module docstring)."""

    name: ClassVar[str] = "mst"
    label: ClassVar[str] = "MST (synthetic data, spanning tree of 2-way marginals)"
    summary: ClassVar[str] = (
        "A synthetic table from every 1-way marginal and a private maximum spanning tree of 2-way "
        "marginals, measured with Gaussian noise and fitted with Private-PGM (McKenna et al. 2021)."
    )
    params: ClassVar[tuple[Param, ...]] = (EPSILON, SYNTH_DELTA, ESTIMATOR, ITERATIONS, ROWS)
    order: ClassVar[int] = 64

    def steps(
        self, params: Mapping[str, Any], query: MarginalInput, private: PrivateSteps, job: Job = NO_JOB
    ) -> Transcript:
        return mst_steps(query, Fraction(self.rho(params)), private, job)
