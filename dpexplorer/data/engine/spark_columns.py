"""Query values as Spark columns, for the Spark engine (:mod:`.spark_engine`): the per-cell rule
of :mod:`dpexplorer.data.cells` and :mod:`dpexplorer.data.conditions` (text read as numbers,
days or text), predicates, axes and the row-major cell, the clipped value and the aggregates of
the moment requests, each the same rows and values as the polars engine's expressions."""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce
from typing import Any

import numpy as np
import polars as pl
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dpexplorer.data.cells import is_datetime
from dpexplorer.data.conditions import ORDERED, Reading, ValueKind, combine
from dpexplorer.data.days import DAY_SPELLINGS, STAMP, format_pattern, spark_pattern
from dpexplorer.data.engine.base import (
    CentredSums,
    ClippedMoments,
    GroupedCentredSums,
    GroupedSortedClipped,
    Lattice,
    PersonContributions,
    SortedClipped,
    exact_lattices,
)
from dpexplorer.data.queries import Axis, Compare, Predicate

_TYPES: dict[type, pl.DataType] = {
    T.BooleanType: pl.Boolean(),
    T.ByteType: pl.Int64(),
    T.ShortType: pl.Int64(),
    T.IntegerType: pl.Int64(),
    T.LongType: pl.Int64(),
    T.FloatType: pl.Float64(),
    T.DoubleType: pl.Float64(),
    T.DecimalType: pl.Float64(),
    T.StringType: pl.String(),
    T.DateType: pl.Date(),
    T.TimestampType: pl.Datetime(),
    T.TimestampNTZType: pl.Datetime(),
}


FLOAT_TEXT = r"^[+-]?(([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))$"
"""The text polars parses as a float (no hexadecimal, no Java's 1d or 1f suffixes)."""


def text_number(text: Column) -> Column:
    """A text cell as a number by the rule of :mod:`dpexplorer.data.cells` (the polars engine's):
    ``true``/``false`` 1/0, a decimal number its value, NaN, infinities and anything else missing."""
    number = text_value(text)
    bad = F.isnan(number) | number.isin(float("inf"), float("-inf"))
    return F.when(~bad, number)


def text_value(text: Column) -> Column:
    """As :func:`dpexplorer.data.cells.text_value`: the value a text cell reads as, NaN and
    infinities kept, null where it is neither a number nor true/false."""
    stripped = F.regexp_replace(text, r"^\s+|\s+$", "")
    lowered = F.lower(stripped)
    return (
        F.when(lowered == "true", F.lit(1.0))
        .when(lowered == "false", F.lit(0.0))
        .when(stripped.rlike(FLOAT_TEXT), stripped.try_cast("double"))
    )


def text_day(text: Column, declared: str | None = None) -> Column:
    """As :func:`dpexplorer.data.days.text_day`: the day a text cell spells in an unambiguous
    spelling (or, with ``declared``, in that format), null where none; the same regular
    expressions, then Spark's parser (a day that does not exist is none)."""
    if declared:
        return F.when(text.rlike(format_pattern(declared)), F.try_to_date(text, spark_pattern(declared)))
    days = [F.when(text.rlike(f"^{rx}$"), F.try_to_date(text, pattern)) for _, pattern, rx in DAY_SPELLINGS]
    stamp = F.when(text.rlike(STAMP), F.try_to_date(F.substring(text, 1, 10), "yyyy-MM-dd"))
    return F.coalesce(*days, stamp)


def literal_col(name: str) -> Column:
    """Column ``name`` taken literally (a dot or a space in a name is not a path into a struct)."""
    return F.col("`" + name.replace("`", "``") + "`")


def _textual(dtype: pl.DataType | None) -> bool:
    """As :func:`dpexplorer.data.cells._read_as_text`: a column read through its text."""
    return dtype is None or not (dtype.is_numeric() or dtype in (pl.Boolean, pl.Date))


def _cell(kind: ValueKind, name: str, dtype: pl.DataType | None) -> Column:
    """Column ``name`` read as numbers, days or text by the per-cell rule (the readers of
    :mod:`dpexplorer.data.cells`: ``cell_number``, ``cell_date``, ``cell_text``)."""
    c = literal_col(name)
    if kind == "number":
        if dtype == pl.Date:
            return F.lit(None).cast("double")
        return text_number(c.cast("string")) if _textual(dtype) else c.cast("double")
    if kind == "day":
        if dtype == pl.Date:
            return c
        if is_datetime(dtype):
            return c.cast("date")
        if not _textual(dtype):
            return F.lit(None).cast("date")
        return text_day(c.cast("string"))
    if dtype == pl.Date:
        return F.date_format(c, "yyyy-MM-dd")
    return c.cast("string") if _textual(dtype) else F.lit(None).cast("string")


def _equal_to(name: str, dtype: pl.DataType | None, readings: tuple[Reading, ...]) -> Column:
    """As :func:`dpexplorer.data.conditions.equal_to`: never null."""
    kinds: tuple[ValueKind, ...] = ("number", "day", "text")
    parts = [
        _cell(kind, name, dtype).isin([v for k, v in readings if k == kind])
        for kind in kinds
        if any(k == kind for k, _ in readings)
    ]
    return F.coalesce(reduce(lambda a, b: a | b, parts), F.lit(False))


def _compare(p: Compare, schema: Mapping[str, pl.DataType]) -> Column:
    """One comparison by the per-cell rule of :mod:`dpexplorer.data.conditions` (never null)."""
    dtype = schema.get(p.column)
    if p.op in ORDERED:
        kind, value = p.readings[0]
        cell, v = _cell(kind, p.column, dtype), F.lit(value)
        ops = {"<": cell < v, "<=": cell <= v, ">": cell > v, ">=": cell >= v}
        return F.coalesce(ops[p.op], F.lit(False))
    equal = _equal_to(p.column, dtype, p.readings)
    if p.op != "!=":
        return equal
    present = literal_col(p.column).isNotNull()
    if _textual(dtype):  # a cell spelling NaN or an infinity holds no value (cells.cell_present)
        read = text_value(literal_col(p.column).cast("string"))
        present = present & (read.isNull() | ~(F.isnan(read) | read.isin(float("inf"), float("-inf"))))
    return present & ~equal


def predicate_column(p: Predicate, schema: Mapping[str, pl.DataType]) -> Column:
    """``p`` as a Spark boolean column, never null, by the per-cell rule of
    :mod:`dpexplorer.data.conditions` (as the polars engine): ``schema`` (the polars types of
    the columns) only picks how cells are read."""
    return combine(p, lambda c: _compare(c, schema), lambda a, b: a & b, lambda a, b: a | b, lambda a: ~a)


def polars_schema(frame: DataFrame) -> pl.Schema:
    """The polars type each of ``frame``'s Spark types is read as."""
    return pl.Schema({f.name: _TYPES.get(type(f.dataType), pl.String()) for f in frame.schema.fields})


def axis_column(axis: Axis, dtype: pl.DataType | None = None) -> Column:
    """The cell index of each row on ``axis`` by a chain of one test per category or bin (as
    :meth:`Axis.index_expr`: a category by the per-cell rule, a privately resolved key by the
    cell's text); for at most :data:`JOIN_ABOVE` of them (:func:`with_cell` joins more)."""
    c = literal_col(axis.column)
    if axis.categories is not None:
        out: Column = F.lit(len(axis.categories))
        for i, cat in reversed(list(enumerate(axis.categories))):
            if axis.exact_text:
                hit = F.coalesce(c.cast("string") == F.lit(str(cat)), F.lit(False))
            else:
                hit = _equal_to(axis.column, dtype, (axis.readings[i],))
            out = F.when(hit, F.lit(i)).otherwise(out)
        return out.cast("long")
    edges = axis.edges or ()
    inner: Column = F.lit(0)
    for i, e in enumerate(edges[1:-1], start=1):
        inner = F.when(c >= F.lit(e), F.lit(i)).otherwise(inner)
    return F.when(c.isNull(), F.lit(len(edges) - 1)).otherwise(inner).cast("long")


JOIN_ABOVE = 16
"""An axis of more categories than this is matched by joins (:func:`with_cell`)."""
_KEY_TYPES = {"number": "double", "day": "date", "text": "string"}


def _lookups(axis: Axis, dtype: pl.DataType | None) -> list[tuple[Column, str, list[tuple[Any, int]]]]:
    """(the cell's key, its Spark type, the (key, category index) table) per kind of value the
    categories of ``axis`` hold: as :meth:`Axis.index_expr`, a cell equals at most one category
    by the per-cell rule, the one of its value read as that kind (a number with -0 as 0)."""
    if axis.exact_text:
        keys = [(str(c), i) for i, c in enumerate(axis.categories or ())]
        return [(literal_col(axis.column).cast("string"), "string", keys)]
    out = []
    for kind in axis.kinds:
        cell = _cell(kind, axis.column, dtype)
        if kind == "number":
            cell = F.when(cell == F.lit(0.0), F.lit(0.0)).otherwise(cell)
        pairs: list[tuple[Any, int]] = [
            (v + 0.0 if isinstance(v, float) else v, i)  # -0 as 0
            for i, (k, v) in enumerate(axis.readings)
            if k == kind
        ]
        out.append((cell, _KEY_TYPES[kind], pairs))
    return out


def with_cell(frame: DataFrame, axes: tuple[Axis, ...], name: str) -> DataFrame:
    """``frame`` with the row-major cell index over ``axes`` (0 for no axis: one cell of all
    rows; as polars_engine.cell_index_expr) in column ``name``. An axis of more than JOIN_ABOVE
    categories is matched by a left join per kind of value they hold with a table of (key,
    index), each key once, so every row stays once (:func:`_lookups`): a chain of one test per
    category (:func:`axis_column`) made a plan too deep for Spark at a few hundred categories,
    and privately selected keys have as many as the values that occur (a private number, so it
    must not decide whether a query runs)."""
    shape = tuple(len(a.labels) for a in axes)
    strides = np.cumprod((1, *shape[:0:-1]))[::-1] if shape else ()
    cell: Column = F.lit(0).cast("long")
    joined: list[str] = []
    for j, (axis, stride) in enumerate(zip(axes, strides, strict=True)):
        cats = axis.categories
        dtype = polars_schema(frame).get(axis.column)
        if cats is None or len(cats) <= JOIN_ABOVE:
            cell = cell + axis_column(axis, dtype) * int(stride)
            continue
        found = []
        for n, (key, kind, pairs) in enumerate(_lookups(axis, dtype)):
            k, index = f"__key{j}_{n}", f"__index{j}_{n}"
            table = frame.sparkSession.createDataFrame(pairs, f"`{k}` {kind}, `{index}` long")
            frame = frame.join(table, key == F.col(k), "left").drop(k)  # Spark broadcasts a small table
            found.append(F.col(index))
            joined.append(index)
        cell = cell + F.coalesce(*found, F.lit(len(cats)).cast("long")) * int(stride)
    return frame.withColumn(name, cell).drop(*joined)


def lattice_sum(value: Column, lattice: Lattice) -> Column:
    """polars_engine.lattice_sum in Spark: the same integer per row (IEEE doubles, floor, clamp),
    added exactly as decimal(38, 0)."""
    t = F.floor(value * F.lit(lattice.scale) + F.lit(0.5))
    t = F.least(F.greatest(t, F.lit(lattice.low)), F.lit(lattice.high))
    return F.sum(t.cast("decimal(38,0)"))


def centred_columns(request: CentredSums | GroupedCentredSums) -> tuple[Column, ...]:
    """The aggregates of :class:`CentredSums` (named as polars_engine.centred_exprs)."""
    half = (request.upper - request.lower) / 2.0
    raw = F.coalesce(literal_col(request.column).cast("double"), F.lit(float(request.midpoint)))
    y = clipped_column(request) - F.lit(request.midpoint)
    squares = y * y - F.lit(half * half / 2.0)
    columns = (
        F.count(F.lit(1)).alias("n"),
        F.sum(y).alias("s"),
        *((F.sum(squares).alias("q"),) if request.squares else ()),
        F.sum((raw < F.lit(float(request.lower))).cast("long")).alias("low"),
        F.sum((raw > F.lit(float(request.upper))).cast("long")).alias("high"),
        F.avg(raw).alias("mean"),
    )
    if not request.exact:
        return columns
    _, centred, square = exact_lattices(request)
    columns = (*columns, lattice_sum(y, centred).alias("se"))
    return (*columns, lattice_sum(squares, square).alias("qe")) if request.squares else columns


def moment_columns(request: ClippedMoments) -> tuple[Column, ...]:
    """The aggregates of :class:`ClippedMoments` but the row count (named as
    polars_engine.moment_exprs); with ``exact``, the lattice sum as well."""
    v = clipped_column(request)
    columns = (F.sum(v).alias("total"), F.min(v).alias("lo"), F.max(v).alias("hi"))
    return (*columns, lattice_sum(v, exact_lattices(request)[0]).alias("te")) if request.exact else columns


def clipped_column(
    request: ClippedMoments
    | SortedClipped
    | CentredSums
    | GroupedCentredSums
    | GroupedSortedClipped
    | PersonContributions,
) -> Column:
    """Cast to double, missing at the midpoint, clipped to [lower, upper] (as polars)."""
    v = F.coalesce(literal_col(request.column).cast("double"), F.lit(float(request.midpoint)))
    return F.least(F.greatest(v, F.lit(float(request.lower))), F.lit(float(request.upper)))
