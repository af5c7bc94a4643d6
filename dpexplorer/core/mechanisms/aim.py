"""AIM (McKenna, Mullins, Sheldon & Miklau 2022, "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data", Algorithm 1): synthetic records from marginals chosen
adaptively for a workload.

Candidates: the downward closure of the workload, each clique r with weight
w_r = sum over workload cliques s of |r ∩ s|. With rho-zCDP, T rounds planned (T = 16 d unless
declared) and alpha = 0.9 (Delta_1, Delta_2^2: one marginal's sensitivities,
:mod:`dpexplorer.core.marginals`):

1. sigma^2 = T Delta_2^2 / (2 alpha rho), epsilon = sqrt(8 (1 - alpha) rho / T) (rounded down);
   every 1-way marginal measured with sigma^2 (d Delta_2^2 / (2 sigma^2) spent);
2. each round: if what is left is under twice one round's cost, the round takes all of it
   (sigma^2 = Delta_2^2 / (2 alpha left), epsilon = sqrt(8 (1 - alpha) left)) and is the last;
   the candidates whose model would stay under max_model_size x spent / rho (Private-PGM's
   junction-tree size: public, from the cliques already chosen) or that the model already holds;
   the exponential mechanism at epsilon with score w_r (||M_r(D) - M_r(model)||_1 -
   sqrt(2/pi) sigma |cells of r|), sensitivity Delta_1 max w_r; the chosen marginal measured with
   sigma^2; the model refitted (post-processing); if the fit moved that marginal by no more
   than the expected noise, sqrt(2/pi) sigma |cells|, sigma is halved and epsilon doubled
   (budget annealing).

Every step's parameters are functions of public facts and earlier DP outputs, and the loop
stops before the spent zCDP can pass rho (the last round takes exactly what is left, in exact
rationals), so the run is rho-zCDP by adaptive composition under a privacy filter (McKenna et
al. 2022, Theorem 1; Whitehouse, Ramdas, Rogers & Wu 2023 for zCDP filters). Charged:
ZCDP(rho), rho from the declared (epsilon, delta) as for MST (:func:`.mst.rho_for`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.marginals import (
    Clique,
    MarginalInput,
    Measurement,
    Model,
    PrivateSteps,
    Round,
    Transcript,
    choose_estimator,
    downward_closure,
    em_cost,
    fitter,
    gaussian_cost,
    l1_distance,
    model_size_mb,
    sigma2_for,
    sqrt_down,
)
from dpexplorer.core.mechanisms.mst import (
    ESTIMATOR,
    ITERATIONS,
    ROWS,
    SYNTH_DELTA,
    MarginalMechanism,
    check_input,
)
from dpexplorer.core.mechanisms.params import EPSILON, Param, log_float, whole_number
from dpexplorer.core.mechanisms.registry import register
from dpexplorer.core.mechanisms.runs import NO_JOB, Job

ALPHA = Fraction(9, 10)
"""The share of each round's budget spent on measurement (the paper's alpha)."""
ROUND_ITERATIONS = 50
"""Fewest estimation steps of the fit after each round (a fifth of the declared iterations, at
least this many, never more than declared)."""
BIAS = math.sqrt(2 / math.pi)
"""E|Z| / sigma for Z ~ N(0, sigma^2): the expected l1 error per cell of a measurement."""

MAX_MODEL_SIZE = log_float(
    "max_model_size",
    "Largest model (MB)",
    default=80.0,
    low=1.0,
    high=4096.0,
    slider=(1.0, 1024.0),
    help=(
        "AIM only measures marginals whose graphical model stays under this size (it grows "
        "with the budget spent). Larger models can fit more structure but take longer to fit."
    ),
)
PLANNED_ROUNDS = whole_number(
    "rounds",
    "Planned rounds T",
    default=0,
    low=0,
    high=10_000,
    help=(
        "Sets the first rounds' budget (rho / T each); 0 takes 16 × the number of columns. "
        "Rounds whose marginal the model already fits double their budget, so fewer may run."
    ),
)


def weights(workload: tuple[Clique, ...]) -> dict[Clique, int]:
    """Every candidate (the workload's downward closure) with its weight sum_s |r ∩ s|."""
    return {r: sum(len(set(r) & set(s)) for s in workload) for r in downward_closure(workload)}


def aim_steps(
    query: MarginalInput,
    rho: Fraction,
    private: PrivateSteps,
    params: Mapping[str, Any],
    job: Job = NO_JOB,
) -> Transcript:
    """AIM's selections and measurements (module docstring), spending at most ``rho`` exactly.
    The model is refitted after each measurement with the declared estimator."""
    check_input(query)
    d = len(query.columns)
    l2sq, l1 = query.sensitivity_l2_squared, Fraction(query.sensitivity_l1)
    workload = query.workload or tuple((i,) for i in range(d))
    candidates = weights(workload)
    rounds = int(params.get("rounds", 0)) or 16 * d
    if rounds < d:
        raise InvalidParameterError(f"AIM plans at least one round per column: T must be at least {d}")
    estimator = choose_estimator(query.sizes, str(params.get("estimator", "auto")))
    limit = float(params.get("max_model_size", 80.0))
    # the model in the loop only steers the selection (post-processing): a shorter fit, started
    # from the previous one; the final model (after the run) gets every declared iteration
    declared = int(params.get("iterations", 500))
    fit = fitter(query, estimator, min(declared, max(ROUND_ITERATIONS, declared // 5)), job.cancel)

    sigma2 = sigma2_for(ALPHA * rho / rounds, l2sq)
    epsilon = sqrt_down(8 * (1 - ALPHA) * rho / rounds)
    out = Transcript()
    for i in range(d):
        out.measurements.append(Measurement((i,), private.measure(query.counts((i,)), sigma2), sigma2))
        out.rho_spent += gaussian_cost(sigma2, l2sq)
    model: Model = fit(out.measurements, None)
    last = False
    while not last:
        job.checkpoint(float(out.rho_spent / rho))
        left = rho - out.rho_spent
        if left < 2 * (gaussian_cost(sigma2, l2sq) + em_cost(epsilon)):
            sigma2 = sigma2_for(ALPHA * left, l2sq)
            epsilon = sqrt_down(8 * (1 - ALPHA) * left)
            last = True
        out.rho_spent += gaussian_cost(sigma2, l2sq) + em_cost(epsilon)
        measured = [m.clique for m in out.measurements]
        allowed = _small(query, candidates, measured, limit * float(out.rho_spent / rho), estimator)
        sigma = math.sqrt(sigma2)
        scores = [
            candidates[r]
            * (l1_distance(query.counts(r), model.project(r)) - Fraction(BIAS * sigma * query.size(r)))
            for r in allowed
        ]
        sensitivity = l1 * max(candidates[r] for r in allowed)
        chosen = allowed[private.select(scores, epsilon, sensitivity)]
        out.measurements.append(Measurement(chosen, private.measure(query.counts(chosen), sigma2), sigma2))
        out.rounds.append(Round(chosen, float(epsilon), sigma, len(allowed)))
        before = model.project(chosen)
        model = fit(out.measurements, model)
        if float(np.abs(model.project(chosen) - before).sum()) <= BIAS * sigma * query.size(chosen):
            sigma2, epsilon = sigma2 / 4, 2 * epsilon
    assert out.rho_spent <= rho, "AIM spent more than its budget"
    out.model = model
    job.checkpoint(1.0)
    return out


def _small(
    query: MarginalInput,
    candidates: dict[Clique, int],
    measured: list[Clique],
    size_limit: float,
    estimator: str,
) -> list[Clique]:
    """The candidates the model may take on (module docstring): the dense estimator's model is
    the whole table whatever is measured, so every candidate; Private-PGM's junction tree must
    stay under ``size_limit`` MB, unless the clique is already inside a measured one."""
    if estimator == "dense":
        return list(candidates)
    held = set(downward_closure(measured))
    kept = [
        r for r in candidates if r in held or model_size_mb(query, [*measured, r], estimator) <= size_limit
    ]
    return kept or [r for r in candidates if r in held]


@register
class AIM(MarginalMechanism):
    """AIM: rho-zCDP (module docstring)."""

    name: ClassVar[str] = "aim"
    label: ClassVar[str] = "AIM (synthetic data, adaptive marginals for a workload)"
    summary: ClassVar[str] = (
        "A synthetic table from marginals chosen round by round where the model errs most on the "
        "workload, with annealed budgets, fitted with Private-PGM (McKenna et al. 2022)."
    )
    params: ClassVar[tuple[Param, ...]] = (
        EPSILON,
        SYNTH_DELTA,
        PLANNED_ROUNDS,
        MAX_MODEL_SIZE,
        ESTIMATOR,
        ITERATIONS,
        ROWS,
    )
    order: ClassVar[int] = 65

    def steps(
        self, params: Mapping[str, Any], query: MarginalInput, private: PrivateSteps, job: Job = NO_JOB
    ) -> Transcript:
        return aim_steps(query, Fraction(self.rho(params)), private, params, job)
