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


@dataclass(frozen=True, eq=False)
class LoadedDataset:
    """A dataset with the steward's prefill: each numeric column's range and each other
    column's most common values (NON-PRIVATE: for the steward's own eyes only)."""

    dataset: Any
    ranges: dict[str, tuple[float, float]]
    top_values: dict[str, list[str]]


def load_dataset(path: str, top: int = 16) -> LoadedDataset:
    """Load ``path`` and compute, off the main thread, everything the Data tab and the query
    builder show about it."""
    import polars as pl

    from dpexplorer.data.load import load_dataset as load

    dataset = load(path)
    columns = dataset.columns  # cached on the dataset: computed here, not on the main thread
    numeric = [c.name for c in columns if c.kind == "numeric"]
    others = [c.name for c in columns if c.kind != "numeric"]
    ranges: dict[str, tuple[float, float]] = {}
    if numeric:
        row = dataset.select(
            *(pl.col(c).min().alias(f"{c}_lo") for c in numeric),
            *(pl.col(c).max().alias(f"{c}_hi") for c in numeric),
        )
        for c in numeric:
            low, high = row[f"{c}_lo"][0], row[f"{c}_hi"][0]
            if low is not None and high is not None and low < high:
                ranges[c] = (float(low), float(high))
    top_values: dict[str, list[str]] = {}
    for c in others:
        counts = dataset.select(pl.col(c).drop_nulls().cast(pl.String).value_counts(sort=True).head(top))
        top_values[c] = [str(s[c]) for s in counts[c].to_list()]
    return LoadedDataset(dataset, ranges, top_values)
