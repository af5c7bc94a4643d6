"""The functions the window submits to the compute service. Each calls the core (or data
layer) and bundles what one view draws; none does privacy math of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    Mechanism,
    NumericInput,
    NumericOutput,
    OutputDistribution,
    QueryInput,
)

DRAWS = 100_000


@dataclass(frozen=True, eq=False)
class NeighboursResult:
    """What the neighbouring-datasets view draws."""

    mechanism: str
    output: OutputDistribution
    epsilon: float
    delta_claim: float
    delta_exact: float
    differing_row: str
    params: dict[str, Any]
    true_d: float | None = None
    true_d_prime: float | None = None


@dataclass(frozen=True, eq=False)
class DrawsResult:
    draws_d: np.ndarray
    draws_d_prime: np.ndarray
    size: int


@dataclass(frozen=True, eq=False)
class AccuracyResult:
    mechanism: str
    report: AccuracyReport
    epsilon: float
    params: dict[str, Any]


def neighbours(mechanism: Mechanism, params: dict[str, Any], query: QueryInput) -> NeighboursResult:
    """Output distributions of M(D), M(D') and the exact delta at the claimed epsilon."""
    epsilon, delta_claim = mechanism.epsilon_delta(params, query)
    output = mechanism.output_distribution(params, query)
    true_d = true_d_prime = None
    if isinstance(query, NumericInput) and isinstance(output, NumericOutput):
        true_d = float(np.atleast_1d(query.value_d)[output.coordinate])
        true_d_prime = float(np.atleast_1d(query.value_d_prime)[output.coordinate])
    return NeighboursResult(
        mechanism=mechanism.label,
        output=output,
        epsilon=epsilon,
        delta_claim=delta_claim,
        delta_exact=mechanism.delta_at(params, query, epsilon),
        differing_row=getattr(query, "differing_row", ""),
        params=dict(params),
        true_d=true_d,
        true_d_prime=true_d_prime,
    )


def draws(
    mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int, size: int = DRAWS
) -> DrawsResult:
    """``size`` simulated outputs on D and on D' (exploration RNG, never used for release)."""
    rng = np.random.default_rng(seed)
    return DrawsResult(
        draws_d=mechanism.simulate(params, query, rng, size, on="D"),
        draws_d_prime=mechanism.simulate(params, query, rng, size, on="D'"),
        size=size,
    )


def accuracy(
    mechanism: Mechanism, params: dict[str, Any], query: QueryInput, ci_level: float
) -> AccuracyResult:
    epsilon, _ = mechanism.epsilon_delta(params, query)
    return AccuracyResult(
        mechanism=mechanism.label,
        report=mechanism.accuracy(params, query, ci_level=ci_level),
        epsilon=epsilon,
        params=dict(params),
    )
