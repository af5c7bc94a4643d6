"""The embedded engine: polars, eager on a DataFrame held in memory, lazy and streaming on a
LazyFrame scanned from a file (``Dataset.lazy``; chosen by size in :mod:`dpexplorer.data.load`
and :mod:`dpexplorer.data.scan`). One code path serves both: every request is one
``select`` of aggregate expressions, so a streaming scan never holds more than a chunk of rows,
except :class:`SortedClipped`, which sorts the one clipped column (order statistics need it)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

import numpy as np
import polars as pl

from dpexplorer.core.mechanisms.base import CentredMoments
from dpexplorer.core.neighbours import SortedWindow
from dpexplorer.core.sensitivity import window_ranks
from dpexplorer.data import scan
from dpexplorer.data.engine import parquet_groups
from dpexplorer.data.engine.base import (
    BoundContributions,
    CellCounts,
    CentredSums,
    ClippedMoments,
    DatasetSummary,
    DistinctCount,
    DistinctValues,
    Engine,
    Filter,
    GroupedCentredSums,
    GroupedSortedClipped,
    Lattice,
    MeanParts,
    Moments,
    OrderWindow,
    PersonContributions,
    RowCount,
    RowStep,
    SortedClipped,
    Window,
    as_moments,
    by_cell,
    exact_lattices,
    window_answer,
)
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import ColumnInfo, Dataset, date_span_exprs, kind_of_dtype, span
from dpexplorer.data.queries import Axis

STREAMING: Final = "streaming"


def clipped_expr(
    request: ClippedMoments
    | CentredSums
    | GroupedCentredSums
    | SortedClipped
    | GroupedSortedClipped
    | PersonContributions
    | OrderWindow,
) -> pl.Expr:
    """The column as float, missing values at the midpoint, clipped to [lower, upper]."""
    return (
        pl.col(request.column)
        .cast(pl.Float64)
        .fill_null(request.midpoint)
        .clip(request.lower, request.upper)
        .alias("v")
    )


def cell_index_expr(
    axes: tuple[Axis, ...], shape: tuple[int, ...], schema: Mapping[str, pl.DataType] | None = None
) -> pl.Expr:
    """Row-major cell index of each row over ``axes`` (0 for no axis: one cell of all rows, a
    column of zeros as long as the frame: a lone literal is one value in a ``select``, so its
    ``value_counts`` counted 1 row), each axis's by :meth:`Axis.index_expr`, of a size independent
    of its number of categories. ``schema``, the frame's column types when known, only picks how
    cells are read (a numeric column's numbers without their text: 9x less CPU for 14 number
    categories on 2M rows); the cells are the same without it."""
    if not axes:
        return pl.repeat(0, pl.len(), dtype=pl.Int64).alias("cell")
    types = schema or {}
    strides = np.cumprod((1, *shape[:0:-1]))[::-1]
    parts = (a.index_expr(types.get(a.column)) * int(s) for a, s in zip(axes, strides, strict=True))
    return sum(parts, pl.lit(0)).alias("cell")


def empty_moments(request: CentredSums | GroupedCentredSums) -> CentredMoments:
    """The moments of no rows (an empty cell), with exact zero sums for an exact request (the
    squares as the request's rows have them: :func:`centred_moments`)."""
    squares = (0.0, Fraction(0)) if request.squares else (math.nan, None)
    return CentredMoments(0, 0.0, squares[0], exact_sums=(Fraction(0), squares[1]) if request.exact else None)


def lattice_sum(value: pl.Expr, lattice: Lattice) -> pl.Expr:
    """The exact sum of t = clamp(floor(value * 2^-j + 1/2), low, high) over the rows (base.py,
    exact requests): the float steps are exact (|t| < 2^52), the integers added in 128 bits."""
    t = (value * lattice.scale + 0.5).floor().clip(float(lattice.low), float(lattice.high))
    return t.cast(pl.Int64).cast(pl.Int128).sum()


RAW, CLIPPED = "__raw", "__v"
"""The per-row columns the moment aggregates read (:func:`value_columns`)."""


def value_columns(request: ClippedMoments | CentredSums | GroupedCentredSums) -> tuple[pl.Expr, pl.Expr]:
    """The column as float with missing values at the midpoint (``RAW``) and that clipped to
    [lower, upper] (``CLIPPED``), each computed once per row: the streaming engine evaluates
    every aggregate's input expression afresh, so a mean's nine aggregates over one
    ``with_columns`` took 1.3 s against 2.8 s over their own expressions (100M rows)."""
    raw = pl.col(request.column).cast(pl.Float64).fill_null(request.midpoint)
    return raw.alias(RAW), raw.clip(request.lower, request.upper).alias(CLIPPED)


def moment_exprs(request: ClippedMoments) -> list[pl.Expr]:
    """The aggregates of :class:`ClippedMoments` but the row count "n" (named for
    :func:`moments_from`), over :func:`value_columns`; with ``exact``, the lattice sum as well."""
    v = pl.col(CLIPPED)
    exprs = [v.sum().alias("total"), v.min().alias("lo"), v.max().alias("hi")]
    if request.exact:
        exprs.append(lattice_sum(v, exact_lattices(request)[0]).alias("te"))
    return exprs


def moments_from(row: dict[str, Any], request: ClippedMoments) -> Moments:
    """A :class:`Moments` from one row holding "n" and :func:`moment_exprs`."""
    exact = exact_lattices(request)[0].value(int(row["te"] or 0)) if request.exact else None
    return as_moments(int(row["n"]), row["total"], row["lo"], row["hi"], exact)


def centred_exprs(request: CentredSums | GroupedCentredSums) -> tuple[pl.Expr, ...]:
    """The aggregates of :class:`CentredSums` as polars expressions over :func:`value_columns`
    (named for :func:`centred_moments`; the squares only if the request has them); with
    ``exact``, the sums on their lattices as well."""
    half = (request.upper - request.lower) / 2.0
    raw = pl.col(RAW)
    y = pl.col(CLIPPED) - request.midpoint
    squares = y * y - half * half / 2.0
    exprs = (
        pl.len().alias("n"),
        y.sum().alias("s"),
        *((squares.sum().alias("q"),) if request.squares else ()),
        (raw < request.lower).sum().alias("low"),
        (raw > request.upper).sum().alias("high"),
        raw.mean().alias("mean"),
    )
    if not request.exact:
        return exprs
    _, centred, square = exact_lattices(request)
    exprs = (*exprs, lattice_sum(y, centred).alias("se"))
    return (*exprs, lattice_sum(squares, square).alias("qe")) if request.squares else exprs


def centred_moments(row: dict[str, Any], request: CentredSums | GroupedCentredSums) -> CentredMoments:
    """A :class:`CentredMoments` from one row of :func:`centred_exprs` (or of the Spark engine's
    columns of the same names). With ``exact``, the float sums are the exact ones, rounded.
    Without the request's squares, their sum is NaN (exact: None)."""
    n = int(row["n"])
    floats = (float(row["s"] or 0.0), float(row["q"] or 0.0) if request.squares else math.nan)
    exact = None
    if request.exact:
        _, centred, square = exact_lattices(request)
        exact_squares = square.value(int(row["qe"] or 0)) if request.squares else None
        exact = (centred.value(int(row["se"] or 0)), exact_squares)
        floats = (float(exact[0]), math.nan if exact_squares is None else float(exact_squares))
    return CentredMoments(
        count=n,
        centred_sum=floats[0],
        centred_squares=floats[1],
        clipped_low=int(row["low"] or 0),
        clipped_high=int(row["high"] or 0),
        raw_mean=float(row["mean"]) if n and row["mean"] is not None else None,
        exact_sums=exact,
    )


class PolarsEngine(Engine):
    """polars over a :class:`~dpexplorer.data.load.Dataset` (eager or lazy frame)."""

    def label(self, dataset: Dataset) -> str:
        return scan.STREAMING if dataset.lazy else scan.IN_MEMORY

    # ------------------------------------------------------------ evaluation
    def _select(
        self, dataset: Dataset, steps: tuple[RowStep, ...], *exprs: pl.Expr, columns: tuple[pl.Expr, ...] = ()
    ) -> pl.DataFrame:
        """One ``select`` of ``exprs`` after ``steps`` and the per-row ``columns`` they read;
        streaming on a lazy dataset."""
        if not steps and not columns:
            return dataset.select(*exprs)
        return _collect(dataset, self._rows(dataset, steps).with_columns(*columns).select(*exprs))

    def _rows(self, dataset: Dataset, steps: tuple[RowStep, ...]) -> pl.LazyFrame:
        """The dataset's rows after ``steps``, lazily."""
        frame = dataset.frame.lazy()
        for step in steps:
            frame = getattr(self, self.STEPS[type(step)])(frame, step)
        return frame

    @staticmethod
    def _filter(frame: pl.LazyFrame, step: Filter) -> pl.LazyFrame:
        # null counts as false
        return frame.filter(step.predicate.expr(frame.collect_schema()))

    @staticmethod
    def _bound(frame: pl.LazyFrame, step: BoundContributions) -> pl.LazyFrame:
        """Contribution bounding (:class:`BoundContributions`): groups per person first (a random
        key per (person, group), the k smallest within the person), then rows per kept group (a
        random key per row, the r smallest within (person, group); ties by row order, as an
        ordinal rank). The random keys are a seeded hash of the row number (among the rows with an
        id) or of (person, group); the two 63-bit seeds are :meth:`BoundContributions.hash_seeds`.
        The ids and keys are collected and the choice made on them in numpy (:func:`_kept_rows`),
        in parts of at most about :data:`BOUND_PART_ROWS` rows (:func:`_choose_in_parts`); the
        frame is then filtered by the kept row numbers (the other columns are never held)."""
        seeds = step.hash_seeds()
        frame = frame.filter(pl.col(step.unit).is_not_null())
        cell = cell_index_expr(step.keys, step.shape, frame.collect_schema()).alias("__cell")
        # a random 64-bit key per (person, group); its ties are broken by the group's cell index
        # (as on Spark), never by truncating the key: a cell index is private with private keys,
        # and a key shortened to make room for it would tie often enough to show
        pair = pl.struct(pl.col(step.unit), cell).hash(seeds[0]).alias("__pair")
        keys = (pl.col(step.unit), pair, cell.cast(pl.Int32) if math.prod(step.shape) < 2**31 else cell)
        try:  # collected here, when the plan is built: the evaluation's errors are DataErrors too
            n = int(frame.select(pl.len()).collect(engine=STREAMING).item())
            mask = np.zeros(n, dtype=bool)
            if n > BOUND_PART_ROWS:
                _choose_in_parts(frame, keys, step, seeds[1], mask)
            elif n:
                _choose(frame.select(*keys).collect(engine=STREAMING), np.arange(n), step, seeds[1], mask)
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise DataError(f"could not bound the contributions per {step.unit!r}: {exc}") from exc
        # by row number, so the mask meets its rows whatever the chunking of the frame (a Python
        # lookup per batch streams; a literal mask gathered by row number was 2.5x slower)
        kept = pl.col("__row").map_batches(
            lambda rows: pl.Series(mask[rows.to_numpy()]), return_dtype=pl.Boolean, is_elementwise=True
        )
        return frame.with_row_index("__row").filter(kept).drop("__row") if n else frame

    def _distinct(self, dataset: Dataset, request: DistinctCount, steps: tuple[RowStep, ...]) -> int:
        return int(
            self._select(dataset, steps, pl.col(request.column).drop_nulls().n_unique().alias("n"))["n"][0]
        )

    def _values(
        self, dataset: Dataset, request: DistinctValues, steps: tuple[RowStep, ...]
    ) -> tuple[str, ...]:
        values = pl.col(request.column).drop_nulls().cast(pl.String).unique().sort()
        return tuple(self._select(dataset, steps, values)[request.column].to_list())

    def _persons(
        self, dataset: Dataset, request: PersonContributions, steps: tuple[RowStep, ...]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
        frame = self._rows(dataset, steps)
        y = clipped_expr(request) - request.midpoint if request.column else pl.lit(0.0)
        grouped = (
            frame.filter(pl.col(request.unit).is_not_null())
            .group_by(
                pl.col(request.unit).cast(pl.String).alias("__id"),
                cell_index_expr(request.axes, request.shape, dataset.schema),
            )
            .agg(pl.len().alias("n"), y.sum().alias("s"))
        )
        rows = _collect(dataset, grouped)
        ids = rows["__id"]
        codes = (ids.rank("dense").to_numpy() - 1).astype(np.int64)  # index into the sorted names
        names = ids.unique().sort().to_list()
        return codes, rows["cell"].to_numpy(), rows["n"].to_numpy().astype(float), rows["s"].to_numpy(), names

    def _row_count(self, dataset: Dataset, request: RowCount, steps: tuple[RowStep, ...]) -> int:
        if request.where is None and not steps:
            return dataset.n_rows
        expr = pl.len() if request.where is None else request.where.expr(dataset.schema).sum()
        return int(self._select(dataset, steps, expr.alias("n"))["n"][0])

    def _moments(self, dataset: Dataset, request: ClippedMoments, steps: tuple[RowStep, ...]) -> Moments:
        exprs = (pl.len().alias("n"), *moment_exprs(request))
        row = self._select(dataset, steps, *exprs, columns=value_columns(request)).row(0, named=True)
        return moments_from(row, request)

    def _centred(self, dataset: Dataset, request: CentredSums, steps: tuple[RowStep, ...]) -> CentredMoments:
        row = self._select(dataset, steps, *centred_exprs(request), columns=value_columns(request))
        return centred_moments(row.row(0, named=True), request)

    def _mean_parts(
        self, dataset: Dataset, request: MeanParts, steps: tuple[RowStep, ...]
    ) -> tuple[Moments, CentredMoments]:
        """One ``select`` of both requests' expressions (the same expressions, one scan)."""
        moments, centred = request.parts
        exprs = (*centred_exprs(centred), *moment_exprs(moments))
        row = self._select(dataset, steps, *exprs, columns=value_columns(centred)).row(0, named=True)
        return moments_from(row, moments), centred_moments(row, centred)

    def _grouped_centred(
        self, dataset: Dataset, request: GroupedCentredSums, steps: tuple[RowStep, ...]
    ) -> tuple[CentredMoments, ...]:
        """One hash aggregation over the cell index (no sort); empty cells filled in here."""
        coded = parquet_groups.grouped_sums(dataset, request, steps)  # dictionary codes, if it applies
        if coded is not None:
            answers = [centred_moments(row, request) for row in coded]
            return by_cell(request, [row["cell"] for row in coded], answers, empty_moments(request))
        frame = self._rows(dataset, steps).with_columns(
            cell_index_expr(request.axes, request.shape, dataset.schema), *value_columns(request)
        )
        rows = _collect(dataset, frame.group_by("cell").agg(*centred_exprs(request)))
        answers = [centred_moments(row, request) for row in rows.iter_rows(named=True)]
        return by_cell(request, rows["cell"].to_numpy(), answers, empty_moments(request))

    def _grouped_sorted(
        self, dataset: Dataset, request: GroupedSortedClipped, steps: tuple[RowStep, ...]
    ) -> tuple[np.ndarray, ...]:
        """One hash aggregation over the cell index, each cell's clipped values sorted there."""
        frame = self._rows(dataset, steps)
        grouped = frame.group_by(cell_index_expr(request.axes, request.shape, dataset.schema)).agg(
            clipped_expr(request).sort()
        )
        rows = _collect(dataset, grouped)
        answers = [np.asarray(values, dtype=float) for values in rows["v"].to_list()]
        return by_cell(request, rows["cell"].to_numpy(), answers, np.zeros(0))

    def _sorted(self, dataset: Dataset, request: SortedClipped, steps: tuple[RowStep, ...]) -> np.ndarray:
        return np.asarray(
            self._select(dataset, steps, clipped_expr(request).sort())["v"].to_numpy(), dtype=float
        )

    def _window(self, dataset: Dataset, request: OrderWindow, steps: tuple[RowStep, ...]) -> Window:
        """By selection on a large column (two streaming passes, no sort of the column): rows per
        fine bin of [lower, upper], then a sort of the rows of the bins that hold the window's
        ranks. The bin index is a nondecreasing function of the value (rounded subtraction and
        multiplication by a positive constant are monotone), so the rows of earlier bins are
        exactly the smaller order statistics: the window is the slice of the sorted column, the
        same floats. Selection is for a large Parquet file scanned lazily, whose column is not to
        be held; elsewhere the column is held once and partitioned (:func:`_partitioned`): a
        frame in memory holds its rows anyway, a small column costs little, and a text file
        would be parsed twice by the two passes."""
        v = clipped_expr(request)
        streamed = dataset.lazy and dataset.format == "parquet" and dataset.n_rows > SELECT_ABOVE
        if not streamed or not request.upper > request.lower:
            return _partitioned(self._select(dataset, steps, v)["v"].to_numpy(writable=True), request)
        scale = SELECT_BINS / (request.upper - request.lower)
        cell = ((v - request.lower) * scale).floor().cast(pl.Int64).clip(0, SELECT_BINS - 1).alias("bin")
        frame = self._rows(dataset, steps)
        # one pass: rows per non-empty bin (a hash count) and the column's ends
        row = _collect(
            dataset, frame.select(cell.value_counts().alias("c"), v.min().alias("lo"), v.max().alias("hi"))
        )
        bins = row["c"].struct.unnest().sort("bin") if row.height else pl.DataFrame({"bin": [], "count": []})
        counts = bins["count"].to_numpy().astype(np.int64)
        n = int(counts.sum())
        if n == 0:
            return window_answer(np.empty(0), request)
        first, last = window_ranks(n, request.q, request.radius)
        cumulative = np.cumsum(counts)
        i, j = (int(k) for k in np.searchsorted(cumulative, [first, last], side="left"))
        below = int(cumulative[i] - counts[i])  # rows in the bins before bin i: the smaller ranks
        held = frame.select(v, cell).filter(
            pl.col("bin").is_between(int(bins["bin"][i]), int(bins["bin"][j]))
        )
        values = _collect(dataset, held.select(pl.col("v").sort()))["v"].to_numpy()
        window = SortedWindow(n, first - 1, np.array(values[first - 1 - below : last - below], dtype=float))
        window.values.flags.writeable = False
        return Window(window, float(row["lo"][0]), float(row["hi"][0]))

    def _cells(self, dataset: Dataset, request: CellCounts, steps: tuple[RowStep, ...]) -> np.ndarray:
        """Counted by ``value_counts`` (a hash aggregation, no sort): one row per non-empty cell."""
        cell = cell_index_expr(request.axes, request.shape, dataset.schema)
        counts = self._select(dataset, steps, cell.value_counts())
        cells = counts["cell"].struct.unnest()
        return by_cell(request, cells["cell"].to_numpy(), cells["count"].to_list(), 0.0)

    # ------------------------------------------------------------ the steward's view
    def preview(self, dataset: Dataset, rows: int) -> pl.DataFrame:
        return dataset.preview(rows)

    def summary(self, dataset: Dataset, top: int = 16) -> DatasetSummary:
        """On a streamed file the distinct counts are HyperLogLog estimates (an exact count
        would hold every distinct value of every column in memory at once); they prime the
        dataset's ``columns``, so the window shows the same numbers."""
        if dataset.lazy and "columns" not in vars(dataset):
            vars(dataset)["columns"] = self._approximate_columns(dataset)
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
            top_values[c] = self._top_values(dataset, c, top)
        return DatasetSummary(dataset.n_rows, columns, ranges, top_values)

    @staticmethod
    def _top_values(dataset: Dataset, column: str, top: int) -> list[str]:
        """The ``top`` commonest non-missing values (ties by value), by a hash aggregation: a
        streamed file keeps one count per distinct value, never the column."""
        counts = (
            dataset.frame.lazy()
            .filter(pl.col(column).is_not_null())
            .group_by(column)
            .agg(pl.len().alias("__n"))
            .sort(["__n", column], descending=[True, False])
            .head(top)
        )
        try:
            frame = counts.collect(engine=STREAMING if dataset.lazy else "auto")
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise DataError(f"could not summarise {column!r} of {dataset.path.name}: {exc}") from exc
        return [str(v) for v in frame[column].to_list()]

    @staticmethod
    def _approximate_columns(dataset: Dataset) -> tuple[ColumnInfo, ...]:
        """ColumnInfo per column in one streaming pass: exact missing counts, estimated distinct."""
        schema = dataset.schema
        names = list(schema.names())
        row = dataset.select(
            *(pl.col(c).null_count().alias(f"m{i}") for i, c in enumerate(names)),
            *(pl.col(c).drop_nulls().approx_n_unique().alias(f"d{i}") for i, c in enumerate(names)),
            *date_span_exprs(schema),
        )
        return tuple(
            ColumnInfo(
                c,
                kind_of_dtype(schema[c]),
                str(schema[c]),
                int(row[f"m{i}"][0]),
                int(row[f"d{i}"][0]),
                span(row, c),
            )
            for i, c in enumerate(names)
        )


SMALL_GROUP_BOUND = 16
"""Up to this many groups per person, the groups are chosen by successive minima of the pair
keys over each person (k passes, no sort); above it, by a sort of (person, pair key). At k = 6
on 10M shuffled rows the minima took 4.1 s against 13.4 s for the sort (11.2 s for the former
window path; 2 loaded cores), and each further minimum costs about a sixth of that."""
_NO_KEY = np.uint64(2**64 - 1)


@dataclass(frozen=True)
class _Persons:
    """Each row's person as an integer code in [0, count); ``starts``: where each person's run
    begins when the rows are sorted by person (then codes are run numbers), else None."""

    codes: np.ndarray
    count: int
    starts: np.ndarray | None


BOUND_PART_ROWS = 1 << 22
"""The contribution bounding holds the keys of at most about this many rows at once (some 80
bytes a row with the choice's arrays and the engine's buffers): more rows are chosen in parts
(:func:`_choose_in_parts`), 10M rows in 3, 100M in 24."""
_PART_SEED = 0x9E3779B97F4A7C15
"""The hash that puts a person in a part: fixed, not secret (it does not change the rows kept)."""
_BUCKETS = 256


def _choose_in_parts(
    frame: pl.LazyFrame, keys: tuple[pl.Expr, ...], step: BoundContributions, row_seed: int, mask: np.ndarray
) -> None:
    """:func:`_choose` on parts of the persons: a hash of the id puts each person in one of 256
    buckets, and each part, some consecutive buckets, is collected in a streaming pass of its
    own (the filter on the bucket is pushed into the file's scan, so only the part's rows of
    the group columns are decoded). The choice for a person depends only on the person's rows
    and their row numbers, so the rows kept are the same in any number of parts. A first pass
    keeps each row's bucket and the low byte of its pair key (2 bytes a row): a part's row
    numbers are the positions of its buckets, and each row's pair key must match its byte (the
    engine returned the part's rows in row order; else DataError: nothing is bounded amiss)."""
    unit, pair = keys[0], keys[1]
    bucket = unit.hash(_PART_SEED) % _BUCKETS
    tags = frame.select(bucket.cast(pl.UInt8).alias("b"), (pair % 256).cast(pl.UInt8).alias("c"))
    tagged = tags.collect(engine=STREAMING)
    buckets, checks = tagged["b"].to_numpy(), tagged["c"].to_numpy()
    del tagged
    parts = min(-(-mask.size // BOUND_PART_ROWS), _BUCKETS)
    for part in range(parts):
        low, high = part * _BUCKETS // parts, (part + 1) * _BUCKETS // parts
        numbers = np.flatnonzero((buckets >= low) & (buckets < high))
        rows = frame.filter(bucket.is_between(low, high - 1)).select(*keys).collect(engine=STREAMING)
        if rows.height != numbers.size or np.any(
            (rows["__pair"].to_numpy() % 256).astype(np.uint8) != checks[numbers]
        ):
            raise DataError(
                f"could not bound the contributions per {step.unit!r}: the rows were read out of order"
            )
        _choose(rows, numbers, step, row_seed, mask)


def _choose(
    keys: pl.DataFrame, numbers: np.ndarray, step: BoundContributions, row_seed: int, mask: np.ndarray
) -> None:
    """Set ``mask`` at the row numbers kept (:func:`_kept_rows`) among ``keys``: every row of
    some persons (their id, pair key and cell), in row order, ``numbers`` their row numbers."""
    if keys.height == 0:
        return
    people = _person_runs(keys.to_series(0))
    pairs = (keys["__pair"].to_numpy(), keys["__cell"].to_numpy())
    del keys  # (the ids are no longer needed: the codes name the persons)
    index = pl.get_index_type()

    def row_keys(rows: np.ndarray) -> np.ndarray:
        # the same values as pl.col("__row").hash(seed) of with_row_index on those rows
        return pl.Series(numbers[rows]).cast(index).hash(row_seed).to_numpy()

    mask[numbers[_kept_rows(people, pairs, step.max_groups, step.max_rows, row_keys)]] = True


def _person_runs(person: pl.Series) -> _Persons:
    """Integer codes of the persons (no nulls): run numbers when the column is sorted (an
    export sorted by person: no hashing, no sort), the offset from the smallest id for integers
    in a range at most a few times the rows (a direct index), else a dense rank (a sort). Any of
    the three is a one-to-one naming of the persons, so the choice below is the same rows."""
    n = len(person)
    index = np.int32 if 4 * n + 1024 < 2**31 else np.int64  # the codes fit: half the bytes to move
    if person.is_sorted():
        if person.dtype.is_integer():
            values = person.to_numpy()
            new = np.flatnonzero(values[1:] != values[:-1]) + 1
        else:  # polars' equality: one run for all NaN of a float column, as its grouping has
            new = (person.slice(1) != person.slice(0, n - 1)).arg_true().to_numpy().astype(np.int64) + 1
        runs = np.zeros(n, dtype=index)
        runs[new] = 1
        return _Persons(np.cumsum(runs, dtype=index), new.size + 1, np.concatenate(([0], new)))
    if person.dtype.is_integer():
        values = person.to_numpy()
        low, high = int(values.min()), int(values.max())
        if high - low < 4 * n + 1024:
            return _Persons((values - values.dtype.type(low)).astype(index), high - low + 1, None)
    codes = person.rank("dense").to_numpy().astype(index) - 1
    return _Persons(codes, int(codes.max()) + 1 if n else 0, None)


def _smallest_by_person(people: _Persons, values: np.ndarray) -> np.ndarray:
    """Each person's smallest value (reduceat over runs, or an unbuffered minimum)."""
    if people.starts is not None:
        return np.minimum.reduceat(values, people.starts)
    smallest = np.full(people.count, _NO_KEY)
    np.minimum.at(smallest, people.codes, values)
    return smallest


def _per_row(people: _Persons, per_person: np.ndarray) -> np.ndarray:
    """A value per person spread to each of the person's rows."""
    return np.take(per_person, people.codes)  # (faster than np.repeat over runs at 10M rows)


def _group_ranks(
    people: _Persons, pairs: tuple[np.ndarray, np.ndarray], k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The rows of each person's k groups with the smallest (pair key, cell) -- ``pairs`` holds
    the two per row: the 64-bit key, the cell breaking its ties, so exactly min(k, groups)
    groups of each person are kept -- and each such row's group's rank among them (0 =
    smallest). For small k, by successive minima of the keys alone (:func:`_minima_ranks`),
    checked for ties among the groups kept (a tie has chance about 2^-64 per pair of groups of a
    person); with a tie, or above ``SMALL_GROUP_BOUND``, by a sort (:func:`_sorted_ranks`)."""
    if k <= SMALL_GROUP_BOUND:
        rows, rank = _minima_ranks(people, pairs[0], k)
        if not _tied(people, rows, rank, pairs[1][rows], k):
            return rows, rank
    return _sorted_ranks(people, pairs, k)


def _minima_ranks(people: _Persons, pair: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_group_ranks` by the keys alone: the j-th smallest key is the smallest above the
    (j-1)-th (k passes, no sort); a row is kept when its key is at most the k-th smallest (2^64 - 1
    when the person has fewer groups: then every row is kept), and its rank is the number of
    smaller minima. Exact when no two of the groups kept share a key (:func:`_tied`)."""
    minima = [_smallest_by_person(people, pair)]
    for _ in range(1, k):
        above = np.where(pair > _per_row(people, minima[-1]), pair, _NO_KEY)
        minima.append(_smallest_by_person(people, above))
    rows = np.flatnonzero(pair <= _per_row(people, minima[-1]))
    codes, keys = people.codes[rows], pair[rows]
    rank = np.zeros(rows.size, dtype=np.int64)
    for smaller in minima[:-1]:
        rank += keys > smaller[codes]
    return rows, rank


def _tied(people: _Persons, rows: np.ndarray, rank: np.ndarray, cells: np.ndarray, k: int) -> bool:
    """Whether two cells of one person share a (person, rank) of :func:`_minima_ranks` (their
    keys tie): each pair's slot of a table holds one of its cells, which every row must match."""
    slots, size = _pair_slots(people, rows, rank, k)
    table = np.empty(size, dtype=cells.dtype)
    table[slots] = cells
    return bool(np.any(table[slots] != cells))


def _pair_slots(people: _Persons, rows: np.ndarray, rank: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """A slot per (person, rank) of the rows kept, and the number of slots: person * k + rank in
    a table of person * k entries, or, when that would be more than about two entries per row
    (many groups per person, or ids spread over a wide range), the pairs numbered by a sort."""
    pairs = people.codes[rows].astype(np.int64) * k + rank
    if people.count * k <= 2 * rows.size + 1024:
        return pairs, people.count * k
    unique, inverse = np.unique(pairs, return_inverse=True)
    return inverse.reshape(-1), unique.size


def _sorted_ranks(
    people: _Persons, pairs: tuple[np.ndarray, np.ndarray], k: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_group_ranks` by a sort of (person, pair key, cell): the dense rank of a row's
    (key, cell) within its person."""
    pair, cell = pairs
    order = np.lexsort((cell, pair, people.codes))
    codes, keys, cells = people.codes[order], pair[order], cell[order]
    new_person = np.concatenate(([True], codes[1:] != codes[:-1]))
    new_group = new_person | np.concatenate(([True], (keys[1:] != keys[:-1]) | (cells[1:] != cells[:-1])))
    within = _since_run_start(new_person, new_group)  # the dense rank within the person
    chosen = within < k
    return order[chosen], within[chosen]


def _kept_rows(
    people: _Persons,
    pairs: tuple[np.ndarray, np.ndarray],
    k: int,
    r: int,
    row_keys: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    """The row numbers kept: in each of the k groups of a person with the smallest (pair key,
    cell) (:func:`_group_ranks`), the r rows with the smallest row keys (ties by row number).
    The (person, group) pair is then a slot of :func:`_pair_slots`: a group with at most r rows
    keeps them all, and only the rows of fuller groups are sorted (by slot, then row key)."""
    rows, rank = _group_ranks(people, pairs, k)
    slots, size = _pair_slots(people, rows, rank, k)
    full = np.bincount(slots, minlength=size)[slots] > r
    kept, crowded = rows[~full], rows[full]
    if crowded.size:
        crowded_pairs = slots[full]
        order = np.lexsort((row_keys(crowded), crowded_pairs))  # stable: ties by row number
        sorted_pairs = crowded_pairs[order]
        first = np.concatenate(([True], sorted_pairs[1:] != sorted_pairs[:-1]))
        within = _since_run_start(first, np.ones(order.size, dtype=np.int64))  # the ordinal rank
        kept = np.concatenate((kept, crowded[order[within < r]]))
    return kept


def _since_run_start(new_run: np.ndarray, step: np.ndarray) -> np.ndarray:
    """For sorted rows in runs (``new_run`` true where one begins): the sum of ``step`` since
    the run's first row, that row's own step left out (ones: the position in the run; the flags
    of a new group: the dense rank of the row's group in the run)."""
    total = np.cumsum(step)
    return total - total[np.flatnonzero(new_run)][np.cumsum(new_run) - 1]


def _partitioned(values: np.ndarray, request: OrderWindow) -> Window:
    """:class:`Window` of a column held in memory, unsorted: one in-place partition at the
    window's ranks and the ends puts exactly those order statistics in place (np.partition:
    every kth element is the one a full sort would put there), so the slice between the first
    and last rank is the sorted column's slice, the same floats, in O(n). Parsing a 100M-row CSV
    twice for the selection (one pass to count rows per bin, one to keep the bins that hold the
    ranks) took 1.5 times polars' own median of the file; once, with this, about as long."""
    n = values.size
    if n == 0:
        return window_answer(values, request)
    first, last = window_ranks(n, request.q, request.radius)
    values.partition(np.unique(np.r_[0, np.arange(first - 1, last), n - 1]))
    window = SortedWindow(n, first - 1, np.array(values[first - 1 : last], dtype=float))
    window.values.flags.writeable = False
    return Window(window, float(values[0]), float(values[n - 1]))


SELECT_ABOVE = 1 << 21
"""Columns of a streamed Parquet file of more rows than this find an :class:`OrderWindow` by
selection; smaller ones are held and partitioned (about as fast at this size)."""
SELECT_BINS = 1 << 16
"""Bins of the selection's first pass: at most a few thousand rows per bin on 100M rows spread
over the bounds (ties and a narrow spread make a bin larger, never the answer different)."""


def _collect(dataset: Dataset, frame: pl.LazyFrame) -> pl.DataFrame:
    """``frame`` collected (streaming on a lazy dataset); a polars or I/O error as DataError."""
    try:
        return frame.collect(engine=STREAMING if dataset.lazy else "auto")
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise DataError(f"could not evaluate the query on {dataset.path.name}: {exc}") from exc


def _ranges(numeric: list[str], bounds: Any) -> dict[str, tuple[float, float]]:
    """Each column's (min, max) where both exist and min < max."""
    out: dict[str, tuple[float, float]] = {}
    for c in numeric:
        low, high = bounds(c)
        if low is not None and high is not None and low < high:
            out[c] = (float(low), float(high))
    return out


POLARS = PolarsEngine()
