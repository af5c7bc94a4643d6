"""The engine contract: the one interface through which ``dpexplorer.data`` touches rows.

An engine evaluates an *aggregate request* (a frozen, hashable value: the cache key of its
answer) on a *dataset reference*, after an optional chain of *row steps*, and returns only the
aggregate: a few numbers, a vector of counts, or, for order statistics alone, the sorted clipped
column. Everything else (the worst-case neighbour D', sensitivities, noise, accounting, ledger,
export) runs in the app on those aggregates, never in the engine.

Requests (what comes back):

* :class:`RowCount` -- rows (satisfying ``where``, if given): an int. Never sorts.
* :class:`ClippedMoments` -- (n, sum, min, max) of a column clipped to [lower, upper], missing
  values counted at the midpoint: a :class:`Moments`. Never sorts; enough for the exact
  worst-case neighbour of a sum or mean (dpexplorer.core.neighbours: only the smallest and
  largest rows and the bounds are candidates).
* :class:`SortedClipped` -- the clipped column sorted ascending (float64 array of n values):
  what the order statistics (median, quantile, trimmed mean) and the data-dependent mechanisms
  (smooth sensitivity, PTR) need. The one request that sorts and holds the column in memory.
* :class:`CellCounts` -- rows per cell of the universe of ``axes`` (row-major): a float array.

Row steps (applied in order before the aggregate): :class:`Filter` keeps the rows satisfying a
predicate. Contribution bounding per privacy unit and grouping are further steps/requests of the
same shape (see /work/notes/engine.md and :class:`Engine`).

Semantics every engine must share (tests/data/test_engine_parity.py checks them on every
engine): a comparison is false on a missing value, ``Not`` counts it (queries.py); a missing
numeric value counts as the midpoint of the declared bounds; clipping is to the closed interval
[lower, upper]; NaN and infinities were made missing when the data was read."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

import numpy as np
import polars as pl

from dpexplorer.data.load import ColumnInfo
from dpexplorer.data.queries import Axis, Predicate


# ---------------------------------------------------------------- row steps
@dataclass(frozen=True)
class Filter:
    """Keep the rows where ``predicate`` holds (a missing value makes a comparison false)."""

    predicate: Predicate


RowStep: TypeAlias = Filter


# ---------------------------------------------------------------- aggregate requests
@dataclass(frozen=True)
class RowCount:
    """The number of rows, or of rows where ``where`` holds. Returns an int."""

    where: Predicate | None = None


@dataclass(frozen=True)
class _Clipped:
    column: str
    lower: float
    upper: float

    @property
    def midpoint(self) -> float:
        """The value a missing entry counts as (queries.py: a fixed in-range value)."""
        return (self.lower + self.upper) / 2.0


@dataclass(frozen=True)
class ClippedMoments(_Clipped):
    """n, sum, min and max of the column clipped to [lower, upper] (missing: the midpoint).
    Returns :class:`Moments`."""


@dataclass(frozen=True)
class SortedClipped(_Clipped):
    """The column clipped to [lower, upper] (missing: the midpoint), sorted ascending, as a
    float64 numpy array. O(n) memory and one sort: only order statistics ask for it."""


@dataclass(frozen=True)
class CellCounts:
    """Rows per cell of the universe of ``axes`` (row-major over their label counts; an
    :class:`~dpexplorer.data.queries.Axis` has an "other"/"missing" cell, so every row lands in
    exactly one cell). Returns a float64 array of length prod(shape)."""

    axes: tuple[Axis, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.labels) for a in self.axes)


Request: TypeAlias = RowCount | ClippedMoments | SortedClipped | CellCounts


@dataclass(frozen=True)
class Moments:
    """Aggregates of a clipped column: row count, sum, smallest and largest value (both
    ``None`` when n = 0). Exact up to the engine's float summation order for ``total``."""

    n: int
    total: float
    smallest: float | None
    largest: float | None


@dataclass(frozen=True, eq=False)
class DatasetSummary:
    """NON-PRIVATE facts for the data steward's own eyes (never released): row count, one
    :class:`~dpexplorer.data.load.ColumnInfo` per column, each numeric column's observed range
    (only when min < max) and each other column's most common values."""

    n_rows: int
    columns: tuple[ColumnInfo, ...]
    ranges: dict[str, tuple[float, float]]
    top_values: dict[str, list[str]]


# ---------------------------------------------------------------- the interface
class Engine(ABC):
    """Evaluates requests on a dataset reference; returns only aggregates.

    An implementation maps each row-step type and each request type to one method, in the
    class-level tables ``STEPS`` and ``REQUESTS`` (type -> method name). Adding an operation
    (e.g. bounding each privacy unit's contribution, or a per-group aggregate) is: a frozen
    dataclass here, one method per engine registered in its tables, and a case in the parity
    test. :meth:`aggregate` refuses any type an engine has not registered (TypeError), so a
    missing implementation fails loudly instead of computing something else."""

    STEPS: ClassVar[dict[type, str]] = {}
    REQUESTS: ClassVar[dict[type, str]] = {}

    @abstractmethod
    def label(self, dataset: Any) -> str:
        """How the status bar names this engine on ``dataset``, e.g. "polars (streaming)"."""

    @abstractmethod
    def summary(self, dataset: Any, top: int = 16) -> DatasetSummary:
        """The steward's NON-PRIVATE summary of ``dataset`` (see :class:`DatasetSummary`)."""

    @abstractmethod
    def preview(self, dataset: Any, rows: int) -> pl.DataFrame:
        """The first ``rows`` rows as a polars DataFrame (NON-PRIVATE: the steward's view)."""

    def aggregate(self, dataset: Any, request: Request, steps: tuple[RowStep, ...] = ()) -> Any:
        """The answer of ``request`` on ``dataset`` after ``steps`` (see the module docstring
        for each request's return type). DataError if the engine cannot evaluate it."""
        for step in steps:
            self._method(self.STEPS, step)
        return self._method(self.REQUESTS, request)(dataset, request, steps)

    def _method(self, table: dict[type, str], operation: object) -> Any:
        name = table.get(type(operation))
        if name is None:
            raise TypeError(f"{type(self).__name__} does not implement {type(operation).__name__}")
        return getattr(self, name)


def as_moments(n: int, total: float | None, smallest: float | None, largest: float | None) -> Moments:
    """A :class:`Moments` from an engine's raw row (sum is None on no rows in some engines)."""
    if n == 0:
        return Moments(0, 0.0, None, None)
    return Moments(int(n), float(total or 0.0), float(smallest), float(largest))  # type: ignore[arg-type]


def sorted_array(values: Any) -> np.ndarray:
    """``values`` as a float64 array (already sorted by the engine)."""
    return np.asarray(values, dtype=float)
