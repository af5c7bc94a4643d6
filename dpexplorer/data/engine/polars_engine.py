"""The embedded engine: polars, eager on a DataFrame held in memory, lazy and streaming on a
LazyFrame scanned from a file (``Dataset.lazy``; chosen by size in :mod:`dpexplorer.data.load`
and :mod:`dpexplorer.data.engine.scan`). One code path serves both: every request is one
``select`` of aggregate expressions, so a streaming scan never holds more than a chunk of rows,
except :class:`SortedClipped`, which sorts the one clipped column (order statistics need it)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import polars as pl

from dpexplorer.data.engine.base import (
    CellCounts,
    ClippedMoments,
    DatasetSummary,
    Engine,
    Filter,
    Moments,
    RowCount,
    RowStep,
    SortedClipped,
    as_moments,
)
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import Dataset
from dpexplorer.data.queries import Axis

STREAMING = "streaming"


def clipped_expr(request: ClippedMoments | SortedClipped) -> pl.Expr:
    """The column as float, missing values at the midpoint, clipped to [lower, upper]."""
    return (
        pl.col(request.column)
        .cast(pl.Float64)
        .fill_null(request.midpoint)
        .clip(request.lower, request.upper)
        .alias("v")
    )


def cell_index_expr(axes: tuple[Axis, ...], shape: tuple[int, ...]) -> pl.Expr:
    """Row-major cell index of each row over ``axes``."""
    strides = np.cumprod((1, *shape[:0:-1]))[::-1]
    return sum((a.index_expr() * int(s) for a, s in zip(axes, strides, strict=True)), pl.lit(0)).alias("cell")


class PolarsEngine(Engine):
    """polars over a :class:`~dpexplorer.data.load.Dataset` (eager or lazy frame)."""

    STEPS: ClassVar[dict[type, str]] = {Filter: "_filter"}
    REQUESTS: ClassVar[dict[type, str]] = {
        RowCount: "_row_count",
        ClippedMoments: "_moments",
        SortedClipped: "_sorted",
        CellCounts: "_cells",
    }

    def label(self, dataset: Dataset) -> str:
        return "polars, streaming scan" if dataset.lazy else "polars, in memory"

    # ------------------------------------------------------------ evaluation
    def _select(self, dataset: Dataset, steps: tuple[RowStep, ...], *exprs: pl.Expr) -> pl.DataFrame:
        """One ``select`` of ``exprs`` after ``steps``; streaming on a lazy dataset."""
        if not steps:
            return dataset.select(*exprs)
        frame = dataset.frame.lazy()
        for step in steps:
            frame = getattr(self, self.STEPS[type(step)])(frame, step)
        try:
            return frame.select(*exprs).collect(engine=STREAMING if dataset.lazy else "auto")
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise DataError(f"could not evaluate the query on {dataset.path.name}: {exc}") from exc

    @staticmethod
    def _filter(frame: pl.LazyFrame, step: Filter) -> pl.LazyFrame:
        return frame.filter(step.predicate.expr())  # null counts as false

    def _row_count(self, dataset: Dataset, request: RowCount, steps: tuple[RowStep, ...]) -> int:
        if request.where is None and not steps:
            return dataset.n_rows
        expr = pl.len() if request.where is None else request.where.expr().sum()
        return int(self._select(dataset, steps, expr.alias("n"))["n"][0])

    def _moments(self, dataset: Dataset, request: ClippedMoments, steps: tuple[RowStep, ...]) -> Moments:
        v = clipped_expr(request)
        row = self._select(
            dataset, steps, pl.len().alias("n"), v.sum().alias("s"), v.min().alias("lo"), v.max().alias("hi")
        )
        return as_moments(int(row["n"][0]), row["s"][0], row["lo"][0], row["hi"][0])

    def _sorted(self, dataset: Dataset, request: SortedClipped, steps: tuple[RowStep, ...]) -> np.ndarray:
        return self._select(dataset, steps, clipped_expr(request).sort())["v"].to_numpy().astype(float)

    def _cells(self, dataset: Dataset, request: CellCounts, steps: tuple[RowStep, ...]) -> np.ndarray:
        """Counted by ``value_counts`` (a hash aggregation, no sort): one row per non-empty cell."""
        shape = request.shape
        counts = self._select(dataset, steps, cell_index_expr(request.axes, shape).value_counts())
        out = np.zeros(int(np.prod(shape)), dtype=float)
        for item in counts["cell"].to_list():
            out[int(item["cell"])] = float(item["count"])
        return out

    # ------------------------------------------------------------ the steward's view
    def preview(self, dataset: Dataset, rows: int) -> pl.DataFrame:
        return dataset.preview(rows)

    def summary(self, dataset: Dataset, top: int = 16) -> DatasetSummary:
        columns = dataset.columns
        numeric = [c.name for c in columns if c.kind == "numeric"]
        ranges: dict[str, tuple[float, float]] = {}
        if numeric:
            row = dataset.select(
                *(pl.col(c).min().alias(f"{c}_lo") for c in numeric),
                *(pl.col(c).max().alias(f"{c}_hi") for c in numeric),
            )
            ranges = _ranges(numeric, lambda c: (row[f"{c}_lo"][0], row[f"{c}_hi"][0]))
        top_values: dict[str, list[str]] = {}
        for c in (c.name for c in columns if c.kind != "numeric"):
            counts = dataset.select(pl.col(c).drop_nulls().cast(pl.String).value_counts(sort=True).head(top))
            top_values[c] = [str(s[c]) for s in counts[c].to_list()]
        return DatasetSummary(dataset.n_rows, columns, ranges, top_values)


def _ranges(numeric: list[str], bounds: Any) -> dict[str, tuple[float, float]]:
    """Each column's (min, max) where both exist and min < max."""
    out: dict[str, tuple[float, float]] = {}
    for c in numeric:
        low, high = bounds(c)
        if low is not None and high is not None and low < high:
            out[c] = (float(low), float(high))
    return out


POLARS = PolarsEngine()
