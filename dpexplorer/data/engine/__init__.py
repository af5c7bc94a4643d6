"""Engines: the one interface through which the data layer touches rows (DESIGN.md, Engines).

``engine_of(dataset)`` is the engine that evaluates requests on ``dataset``: the dataset's own
``engine`` attribute when it has one (a Spark table), the embedded polars engine otherwise.
The contract is in :mod:`.base`; implementations in :mod:`.polars_engine` and
:mod:`.spark_engine` (pyspark, an extra: imported only when a Spark dataset is opened)."""

from __future__ import annotations

from typing import Any

from dpexplorer.data.engine.base import (
    BoundContributions,
    CellCounts,
    CentredSums,
    ClippedMoments,
    DatasetSummary,
    DistinctCount,
    Engine,
    Filter,
    GroupedCentredSums,
    Moments,
    PersonContributions,
    Request,
    RowCount,
    RowStep,
    SortedClipped,
)
from dpexplorer.data.engine.polars_engine import POLARS, PolarsEngine


def engine_of(dataset: Any) -> Engine:
    """The engine that answers requests on ``dataset``."""
    engine = getattr(dataset, "engine", None)
    return engine if isinstance(engine, Engine) else POLARS


__all__ = [
    "POLARS",
    "BoundContributions",
    "CellCounts",
    "CentredSums",
    "ClippedMoments",
    "DatasetSummary",
    "DistinctCount",
    "Engine",
    "Filter",
    "GroupedCentredSums",
    "Moments",
    "PersonContributions",
    "PolarsEngine",
    "Request",
    "RowCount",
    "RowStep",
    "SortedClipped",
    "engine_of",
]
