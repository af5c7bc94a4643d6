"""The workload error of synthetic data over marginals against the budget: MST and AIM beside
two baselines at the same rho-zCDP (EXPLORATION ONLY: every error reads the true marginals, and
all noise comes from a seeded numpy generator, never a release).

The error of a method on a workload is the mean over the workload's marginals of the
total-variation distance between the true marginal and the method's, both normalised
(:func:`~dpexplorer.core.marginals.tvd`). The four methods, each at rho = the largest zCDP
whose (epsilon, delta) conversion is at most the declared epsilon
(:func:`~dpexplorer.core.mechanisms.mst.rho_for`, as MST and AIM are charged):

* ``direct``: every workload marginal measured with Gaussian noise, rho split evenly
  (sigma^2 = |W| Delta_2^2 / (2 rho): |W| measurements of Delta_2^2 / (2 sigma^2) each, rho in
  all by zCDP composition, Bun & Steinke 2016), negative counts clipped to 0 before normalising
  (post-processing);
* ``independent``: every 1-way marginal measured the same way with rho split over the d columns,
  each workload marginal taken as the product of the clipped, normalised noisy 1-way marginals
  (the independent-columns baseline);
* ``mst`` and ``aim``: one run of the mechanism (its own accounting), its synthetic records'
  marginals compared.

The same generator seeds every method at every epsilon (``seed``), so a curve is reproducible."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.marginals import (
    MarginalInput,
    Transcript,
    em_cost,
    gaussian_cost,
    tvd,
    workload_errors,
)
from dpexplorer.core.mechanisms.runs import NO_JOB, Job

METHODS = ("mst", "aim", "direct", "independent")
"""The methods of a curve, in the order they are drawn."""
METHOD_LABELS = {
    "mst": "MST",
    "aim": "AIM",
    "direct": "each marginal with Gaussian noise",
    "independent": "independent columns",
}
DEFAULT_EPSILONS = (0.1, 0.3, 1.0, 3.0)
"""Few points: each costs one MST and one AIM fit (seconds each on Adult's default columns)."""


def _clipped_share(noisy: np.ndarray) -> np.ndarray:
    """Noisy counts clipped at 0 and normalised (uniform when nothing is left)."""
    kept = np.maximum(noisy, 0.0)
    total = float(kept.sum())
    return kept / total if total > 0 else np.full(kept.size, 1.0 / kept.size)


def direct_errors(query: MarginalInput, rho: float, rng: np.random.Generator) -> np.ndarray:
    """The TVD of each workload marginal released directly with Gaussian noise (module
    docstring), in workload order."""
    workload = query.workload
    sigma = math.sqrt(len(workload) * query.sensitivity_l2_squared / (2 * rho))
    return np.array(
        [
            tvd(query.counts(c), _clipped_share(query.counts(c) + rng.normal(0, sigma, query.size(c))))
            for c in workload
        ]
    )


def independent_errors(query: MarginalInput, rho: float, rng: np.random.Generator) -> np.ndarray:
    """The TVD of each workload marginal under the independent-columns model of noisy 1-way
    marginals (module docstring), in workload order."""
    d = len(query.columns)
    sigma = math.sqrt(d * query.sensitivity_l2_squared / (2 * rho))
    shares = [_clipped_share(query.counts((i,)) + rng.normal(0, sigma, query.sizes[i])) for i in range(d)]
    errors = []
    for clique in query.workload:
        product = shares[clique[0]]
        for i in clique[1:]:
            product = np.multiply.outer(product, shares[i])
        errors.append(tvd(query.counts(clique), product.ravel()))
    return np.array(errors)


@dataclass(frozen=True, eq=False)
class ErrorCurve:
    """Mean workload TVD of each method (``errors[method][k]`` at ``epsilons[k]``), the rho of
    each epsilon, and the seconds each method took in all."""

    epsilons: tuple[float, ...]
    delta: float
    rhos: tuple[float, ...]
    errors: dict[str, np.ndarray]
    seconds: dict[str, float]
    workload: tuple[str, ...]
    seed: int
    estimator: str


def error_curve(
    query: MarginalInput,
    params: Mapping[str, Any],
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    seed: int = 0,
    *,
    methods: Sequence[str] = METHODS,
    job: Job = NO_JOB,
) -> ErrorCurve:
    """The mean workload TVD of ``methods`` at each epsilon (module docstring). ``params`` are
    MST's and AIM's settings (delta, estimator, iterations, rows, AIM's rounds and model size:
    whichever each declares); epsilon is replaced by each point's. Cancellable (``job``) between
    fits and inside them; its progress counts fits done."""
    from dpexplorer.core.mechanisms.mst import MarginalMechanism, check_input, rho_for
    from dpexplorer.core.mechanisms.registry import get

    check_input(query)
    points = tuple(sorted({float(e) for e in epsilons}))
    if not points or not all(e > 0 and math.isfinite(e) for e in points):
        raise InvalidParameterError("the curve needs one or more positive, finite ε")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise InvalidParameterError(f"unknown method {unknown[0]!r}; known: {', '.join(METHODS)}")
    delta = float(params.get("delta", 1e-9))
    rhos = tuple(rho_for(e, delta) for e in points)
    errors = {m: np.full(len(points), np.nan) for m in methods}
    seconds = dict.fromkeys(methods, 0.0)
    fits = [m for m in methods if m in ("mst", "aim")]
    steps, done = max(len(points) * len(fits), 1), 0
    for k, (epsilon, rho) in enumerate(zip(points, rhos, strict=True)):
        for method in methods:
            job.checkpoint(done / steps)
            rng = np.random.default_rng([seed, k, METHODS.index(method)])
            start = time.perf_counter()
            if method == "direct":
                errors[method][k] = float(np.mean(direct_errors(query, rho, rng)))
            elif method == "independent":
                errors[method][k] = float(np.mean(independent_errors(query, rho, rng)))
            else:
                mechanism = get(method)
                assert isinstance(mechanism, MarginalMechanism)
                declared = {p.name for p in mechanism.params}
                chosen = {k2: v for k2, v in params.items() if k2 in declared}
                run_params = mechanism.validate({**chosen, "epsilon": epsilon, "delta": delta})
                result = mechanism.run(run_params, query, rng, cancel=job.cancel)
                errors[method][k] = float(np.mean(list(workload_errors(query, result.records).values())))
                done += 1
            seconds[method] += time.perf_counter() - start
    job.checkpoint(1.0)
    return ErrorCurve(
        epsilons=points,
        delta=delta,
        rhos=rhos,
        errors=errors,
        seconds=seconds,
        workload=tuple(query.name(c) for c in query.workload),
        seed=seed,
        estimator=str(params.get("estimator", "auto")),
    )


@dataclass(frozen=True)
class RoundCost:
    """One selection round as a run's record shows it: the marginal measured, the selection's
    epsilon, the measurement's sigma, the zCDP the round spent (exponential mechanism plus
    Gaussian measurement) and among how many candidates it chose."""

    marginal: str
    epsilon: float
    sigma: float
    rho: float
    candidates: int


def round_costs(query: MarginalInput, transcript: Transcript) -> tuple[list[RoundCost], float]:
    """Each round of ``transcript`` with its zCDP (epsilon^2 / 8 + Delta_2^2 / (2 sigma^2),
    from the round's measurement: the measurements after the d 1-way ones, in order), and the
    zCDP of the 1-way measurements that precede the rounds. Read from the record only."""
    l2sq = query.sensitivity_l2_squared
    d = len(query.columns)
    first, later = transcript.measurements[:d], transcript.measurements[d:]
    if len(later) != len(transcript.rounds):
        raise InvalidParameterError("the run's record has not one measurement per round")
    out = []
    for r, m in zip(transcript.rounds, later, strict=True):
        cost = em_cost(Fraction(r.epsilon)) + gaussian_cost(m.sigma2, l2sq)
        out.append(RoundCost(query.name(r.clique), r.epsilon, r.sigma, float(cost), r.candidates))
    return out, float(sum((gaussian_cost(m.sigma2, l2sq) for m in first), Fraction(0)))
