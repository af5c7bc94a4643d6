"""Queries as immutable values, built through this API (user text is never evaluated).

Every query has ``describe()`` (plain English), ``to_dict()`` (JSON-safe; :func:`query_from_dict`
rebuilds it, for release plans and saved sessions) and ``check(schema)`` (DataError naming the
column or setting at fault). Declared settings (bounds, categories, bin edges) are part of the
query and never read from the data: a query's form must not depend on the private data.

Missing values: a comparison is false on a missing value; numeric statistics count a missing
value as the midpoint (lower + upper) / 2 of the declared bounds (a fixed in-range value, so every
sensitivity below stays exact); a categorical histogram counts it under "other"."""

from __future__ import annotations

import datetime
import itertools
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import polars as pl

from dpexplorer.data.errors import DataError

Scalar: TypeAlias = str | int | float | bool
CompareOp = Literal["==", "!=", "<", "<=", ">", ">=", "in"]
COMPARE_OPS: tuple[str, ...] = ("==", "!=", "<", "<=", ">", ">=", "in")
_OP_WORDS = {
    "==": "is",
    "!=": "is not",
    "<": "is below",
    "<=": "is at most",
    ">": "is above",
    ">=": "is at least",
    "in": "is one of",
}
OTHER = "other"
MISSING = "missing"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise DataError(message)


def _column(schema: Mapping[str, pl.DataType], name: str) -> pl.DataType:
    _require(name in schema, f"unknown column {name!r}; the columns are: {', '.join(schema)}")
    return schema[name]


def _as_date(column: str, v: Any) -> datetime.date:
    """``v``, a value a date column is compared with, as a date: DataError naming the column
    unless it is text that is exactly a real ISO date (what the column's own values are)."""
    try:
        if isinstance(v, str) and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", v):
            return datetime.date.fromisoformat(v)
    except ValueError:
        pass
    raise DataError(
        f"column {column!r} holds dates, but is compared with {v!r}, which is not a date: "
        "write it as year-month-day, e.g. 2021-03-01"
    )


def _measured_column(schema: Mapping[str, pl.DataType], name: str) -> None:
    """The column a statistic with declared bounds measures: it must exist, and that is all.
    Whether it holds numbers is not asked: a CSV's column types are inferred from its values
    (an all-empty column reads as text, one value makes it numeric), so a refusal on them would
    depend on the data. The engines read such a column as numbers whatever its type, a cell that
    is not a number being missing (counted at the declared midpoint like any missing value):
    :meth:`dpexplorer.data.engine.base.Engine.aggregate`."""
    _column(schema, name)


# ---------------------------------------------------------------- predicates
@dataclass(frozen=True)
class Compare:
    """``column op value``; for ``in``, ``value`` is a tuple. Not true on a missing value: the
    expression is null there, which counts as false (``Not`` maps it to false first)."""

    column: str
    op: CompareOp
    value: Scalar | tuple[Scalar, ...]

    def __post_init__(self) -> None:
        _require(
            self.op in COMPARE_OPS, f"unknown comparison {self.op!r}: use one of {' '.join(COMPARE_OPS)}"
        )
        if self.op == "in":
            values = self.value if isinstance(self.value, tuple | list) else (self.value,)
            _require(len(values) > 0, f"'{self.column} in ...' needs at least one value")
            object.__setattr__(self, "value", tuple(values))
        else:
            _require(not isinstance(self.value, tuple | list), f"'{self.column} {self.op}' takes one value")
        values = self.value if isinstance(self.value, tuple) else (self.value,)
        for v in values:
            _require(isinstance(v, Scalar), f"comparison value {v!r} must be text, a number or true/false")
            _require(
                not (isinstance(v, float) and not math.isfinite(v)), f"comparison value {v} is not finite"
            )
            _require_int64(v, "comparison value")

    def literals(self, dates: Collection[str] = ()) -> list[Any]:
        """The compared values, as dates when the column is one of ``dates`` (the date-typed
        columns of the table: a date column is compared as dates, not as text)."""
        values = list(self.value) if isinstance(self.value, tuple) else [self.value]
        return [_as_date(self.column, v) for v in values] if self.column in dates else values

    def expr(self, dates: Collection[str] = ()) -> pl.Expr:
        """The condition as a polars expression; ``dates`` names the date-typed columns."""
        c = pl.col(self.column)
        values = self.literals(dates)
        if self.op == "in":
            return c.is_in(pl.Series(values).implode()) if self.column in dates else c.is_in(values)
        ops = {"==": c.__eq__, "!=": c.__ne__, "<": c.__lt__, "<=": c.__le__, ">": c.__gt__, ">=": c.__ge__}
        return ops[self.op](pl.lit(values[0]))

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        dtype = _column(schema, self.column)
        values = self.value if isinstance(self.value, tuple) else (self.value,)
        if dtype == pl.Date:  # every comparison applies, to values that are dates
            self.literals((self.column,))
            return
        numeric = dtype.is_numeric()
        for v in values:
            is_num = isinstance(v, int | float) and not isinstance(v, bool)
            _require(
                is_num == numeric or (dtype == pl.Boolean and isinstance(v, bool)),
                f"column {self.column!r} is {dtype} but is compared with {v!r}: "
                + (
                    "compare it with a number"
                    if numeric
                    else "put the value in quotes (compare it with text)"
                ),
            )
        _require(
            numeric or self.op in ("==", "!=", "in"),
            f"column {self.column!r} holds text: only ==, != and in apply to it, not {self.op}",
        )

    def describe(self) -> str:
        shown = ", ".join(_fmt(v) for v in self.value) if isinstance(self.value, tuple) else _fmt(self.value)
        return f"{self.column} {_OP_WORDS[self.op]} {shown}"

    def to_dict(self) -> dict[str, Any]:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"compare": self.op, "column": self.column, "value": value}

    def __and__(self, other: Predicate) -> And:
        return And((self, other))

    def __or__(self, other: Predicate) -> Or:
        return Or((self, other))

    def __invert__(self) -> Not:
        return Not(self)


@dataclass(frozen=True)
class And:
    """All of ``terms`` hold."""

    terms: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "terms", tuple(self.terms))
        _require(len(self.terms) >= 1, "'and' needs at least one condition")

    def expr(self, dates: Collection[str] = ()) -> pl.Expr:
        return pl.all_horizontal([t.expr(dates) for t in self.terms])

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        for t in self.terms:
            t.check(schema)

    def describe(self) -> str:
        return " and ".join(_grouped(t) for t in self.terms)

    def to_dict(self) -> dict[str, Any]:
        return {"and": [t.to_dict() for t in self.terms]}

    __and__ = Compare.__and__
    __or__ = Compare.__or__
    __invert__ = Compare.__invert__


@dataclass(frozen=True)
class Or:
    """At least one of ``terms`` holds."""

    terms: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "terms", tuple(self.terms))
        _require(len(self.terms) >= 1, "'or' needs at least one condition")

    def expr(self, dates: Collection[str] = ()) -> pl.Expr:
        return pl.any_horizontal([t.expr(dates) for t in self.terms])

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        for t in self.terms:
            t.check(schema)

    def describe(self) -> str:
        return " or ".join(_grouped(t) for t in self.terms)

    def to_dict(self) -> dict[str, Any]:
        return {"or": [t.to_dict() for t in self.terms]}

    __and__ = Compare.__and__
    __or__ = Compare.__or__
    __invert__ = Compare.__invert__


@dataclass(frozen=True)
class Not:
    """``term`` does not hold (so a row missing the column satisfies ``Not(column == v)``)."""

    term: Predicate

    def expr(self, dates: Collection[str] = ()) -> pl.Expr:
        return self.term.expr(dates).fill_null(False).not_()

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        self.term.check(schema)

    def describe(self) -> str:
        return f"not {_grouped(self.term)}"

    def to_dict(self) -> dict[str, Any]:
        return {"not": self.term.to_dict()}

    __and__ = Compare.__and__
    __or__ = Compare.__or__
    __invert__ = Compare.__invert__


Predicate: TypeAlias = Compare | And | Or | Not


def date_columns(schema: Mapping[str, pl.DataType]) -> frozenset[str]:
    """The date-typed columns of ``schema`` (what :meth:`Compare.expr` compares as dates)."""
    return frozenset(name for name, dtype in schema.items() if dtype == pl.Date)


def _grouped(p: Predicate) -> str:
    return f"({p.describe()})" if isinstance(p, And | Or) and len(p.terms) > 1 else p.describe()


def where(column: str) -> _ColumnRef:
    """Start a comparison: ``where("age") >= 40``, ``where("race").isin(["A", "B"])``."""
    return _ColumnRef(column)


@dataclass(frozen=True, eq=False)
class _ColumnRef:
    column: str

    def __eq__(self, v: object) -> Compare:  # type: ignore[override]
        return Compare(self.column, "==", v)  # type: ignore[arg-type]

    def __ne__(self, v: object) -> Compare:  # type: ignore[override]
        return Compare(self.column, "!=", v)  # type: ignore[arg-type]

    def __lt__(self, v: Scalar) -> Compare:
        return Compare(self.column, "<", v)

    def __le__(self, v: Scalar) -> Compare:
        return Compare(self.column, "<=", v)

    def __gt__(self, v: Scalar) -> Compare:
        return Compare(self.column, ">", v)

    def __ge__(self, v: Scalar) -> Compare:
        return Compare(self.column, ">=", v)

    def isin(self, values: Sequence[Scalar]) -> Compare:
        return Compare(self.column, "in", tuple(values))

    __hash__ = None  # type: ignore[assignment]


def predicate_from_dict(d: Mapping[str, Any]) -> Predicate:
    """Inverse of ``to_dict`` of a predicate; DataError if ``d`` is not one."""
    _require(isinstance(d, Mapping), f"a condition must be a mapping, got {d!r}")
    if "compare" in d:
        value: Any = d.get("value")  # Compare checks it
        return Compare(str(d.get("column")), d["compare"], tuple(value) if isinstance(value, list) else value)
    for key, cls in (("and", And), ("or", Or)):
        if key in d:
            _require(isinstance(d[key], list), f"'{key}' needs a list of conditions")
            return cls(tuple(predicate_from_dict(t) for t in d[key]))
    if "not" in d:
        return Not(predicate_from_dict(d["not"]))
    raise DataError(f"not a condition: {d!r} (expected 'compare', 'and', 'or' or 'not')")


# ---------------------------------------------------------------- queries
def _check_bounds(column: str, lower: float, upper: float) -> None:
    _require(
        isinstance(lower, int | float)
        and isinstance(upper, int | float)
        and math.isfinite(lower)
        and math.isfinite(upper),
        f"the bounds of {column!r} must be finite numbers, got [{lower}, {upper}]",
    )
    _require(
        lower < upper, f"the bounds of {column!r} are inverted or empty: lower {lower:g} >= upper {upper:g}"
    )


@dataclass(frozen=True)
class Count:
    """The number of rows."""

    kind = "count"

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        """Always applicable."""

    def describe(self) -> str:
        return "the number of rows"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind}


@dataclass(frozen=True)
class PredicateCount:
    """The number of rows satisfying ``predicate``."""

    predicate: Predicate
    kind = "predicate_count"

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        self.predicate.check(schema)

    def describe(self) -> str:
        return f"the number of rows where {self.predicate.describe()}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "predicate": self.predicate.to_dict()}


@dataclass(frozen=True)
class _ClippedColumn:
    """A statistic of ``column`` clipped to the declared [lower, upper]."""

    column: str
    lower: float
    upper: float
    kind = ""
    noun = ""

    def __post_init__(self) -> None:
        _check_bounds(self.column, self.lower, self.upper)

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        _measured_column(schema, self.column)

    def describe(self) -> str:
        return f"the {self.noun} of {self.column}, clipped to [{_fmt(self.lower)}, {_fmt(self.upper)}]"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "column": self.column, "lower": self.lower, "upper": self.upper}


@dataclass(frozen=True)
class Sum(_ClippedColumn):
    kind = "sum"
    noun = "sum"


@dataclass(frozen=True)
class Mean(_ClippedColumn):
    kind = "mean"
    noun = "mean"


@dataclass(frozen=True)
class Variance(_ClippedColumn):
    """The population variance (``std``: the standard deviation) of the clipped column."""

    std: bool = False
    kind = "variance"

    @property
    def statistic(self) -> str:
        return "std" if self.std else "variance"

    @property
    def noun(self) -> str:  # type: ignore[override]
        return "standard deviation" if self.std else "variance"

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "std": self.std}


@dataclass(frozen=True)
class Quantile(_ClippedColumn):
    """The q-quantile: the order statistic of rank max(1, ceil(q n)) (q = 0.5: lower median)."""

    q: float = 0.5
    kind = "quantile"

    def __post_init__(self) -> None:
        super().__post_init__()
        _require(
            isinstance(self.q, int | float) and 0 < self.q <= 1,
            f"the quantile must be in (0, 1], got {self.q}",
        )

    @property
    def statistic(self) -> str:
        return "median" if self.q == 0.5 else "quantile"

    @property
    def noun(self) -> str:  # type: ignore[override]
        return "median" if self.q == 0.5 else f"{self.q:g}-quantile"

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "q": self.q}


def Median(column: str, lower: float, upper: float) -> Quantile:
    """The median: ``Quantile(column, lower, upper, q=0.5)``."""
    return Quantile(column, lower, upper, 0.5)


@dataclass(frozen=True)
class TrimmedMean(_ClippedColumn):
    """Mean after dropping floor(trim_fraction n) values at each end (Bun & Steinke 2019)."""

    trim_fraction: float = 0.1
    kind = "trimmed_mean"

    def __post_init__(self) -> None:
        super().__post_init__()
        _require(
            isinstance(self.trim_fraction, int | float) and 0 <= self.trim_fraction < 0.5,
            f"the trimmed fraction must be in [0, 0.5), got {self.trim_fraction}",
        )

    @property
    def noun(self) -> str:  # type: ignore[override]
        return f"{self.trim_fraction:.0%}-trimmed mean"

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "trim_fraction": self.trim_fraction}


def _require_int64(value: Any, what: str) -> None:
    """DataError for a whole number the data engine cannot hold (outside 64-bit integers)."""
    if isinstance(value, int) and not isinstance(value, bool):
        _require(-(2**63) <= value < 2**63, f"{what} {str(value)[:20]}… is too large a whole number")


LISTED = 8
"""Categories a description names before it gives their number instead."""


def _listed(categories: tuple[Scalar, ...]) -> str:
    """The categories for a description: all of a few; of many, the first LISTED and the count."""
    if len(categories) <= LISTED:
        return ", ".join(_fmt(c) for c in categories)
    shown = ", ".join(_fmt(c) for c in categories[:LISTED])
    return f"{shown}, … ({len(categories):,} categories)"


def _check_categories(column: str, categories: tuple[Scalar, ...]) -> None:
    _require(len(categories) >= 1, f"declare at least one category of {column!r}")
    for category in categories:
        _require_int64(category, f"a category of {column!r},")
    _require(len(set(categories)) == len(categories), f"the categories of {column!r} repeat a value")


def _check_edges(column: str, edges: tuple[float, ...]) -> None:
    _require(len(edges) >= 2, f"the bins of {column!r} need at least two edges")
    _require(all(math.isfinite(e) for e in edges), f"the bin edges of {column!r} must be finite")
    _require(all(a < b for a, b in itertools.pairwise(edges)), f"the bin edges of {column!r} must increase")


@dataclass(frozen=True)
class Axis:
    """A discretised column: declared ``categories`` (plus "other", which also holds missing
    values) or numeric bin ``edges`` [e0, e1), ..., [e_{k-1}, e_k] (values outside are put in the
    first/last bin; missing values in a "missing" cell)."""

    column: str
    categories: tuple[Scalar, ...] | None = None
    edges: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        _require(
            (self.categories is None) != (self.edges is None),
            f"give {self.column!r} either categories or bin edges (exactly one)",
        )
        if self.categories is not None:
            object.__setattr__(self, "categories", tuple(self.categories))
            _check_categories(self.column, self.categories)
        else:
            object.__setattr__(self, "edges", tuple(float(e) for e in self.edges))  # type: ignore[union-attr]
            _check_edges(self.column, self.edges)  # type: ignore[arg-type]

    @property
    def labels(self) -> tuple[str, ...]:
        if self.categories is not None:
            return (*(_fmt(c) for c in self.categories), OTHER)
        e = self.edges or ()
        return (*(f"[{_fmt(a)}, {_fmt(b)})" for a, b in itertools.pairwise(e)), MISSING)

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        _column(schema, self.column)  # binned by declared edges: read as numbers (_measured_column)

    def index_expr(self) -> pl.Expr:
        """The cell index (0 .. len(labels) - 1) of each row on this axis."""
        c = pl.col(self.column)
        if self.categories is not None:
            out: pl.Expr = pl.lit(len(self.categories))
            for i, cat in reversed(list(enumerate(self.categories))):
                out = pl.when(c == pl.lit(cat)).then(pl.lit(i)).otherwise(out)
            return out.cast(pl.Int64)
        edges = self.edges or ()
        inner = pl.lit(0)
        for i, e in enumerate(edges[1:-1], start=1):
            inner = pl.when(c >= e).then(pl.lit(i)).otherwise(inner)
        return pl.when(c.is_null()).then(pl.lit(len(edges) - 1)).otherwise(inner).cast(pl.Int64)

    def describe(self) -> str:
        if self.categories is not None:
            return f"{self.column} in {{{_listed(self.categories)}, other}}"
        e = self.edges or (0.0,)
        return f"{self.column} in {len(e) - 1} bins from {_fmt(e[0])} to {_fmt(e[-1])}"

    def to_dict(self) -> dict[str, Any]:
        if self.categories is not None:
            return {"column": self.column, "categories": list(self.categories)}
        return {"column": self.column, "edges": list(self.edges or ())}


@dataclass(frozen=True)
class Histogram:
    """Counts of a categorical column over declared categories plus "other", or of a numeric
    column over bins (see :class:`Axis`). Vector-valued: one count per cell."""

    axis: Axis
    kind = "histogram"

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        self.axis.check(schema)

    @property
    def labels(self) -> tuple[str, ...]:
        return self.axis.labels

    def describe(self) -> str:
        return f"the number of rows in each cell of {self.axis.describe()}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "axis": self.axis.to_dict()}


@dataclass(frozen=True)
class ArgMax:
    """The most common of the declared ``categories`` of ``column`` (counts as scores)."""

    column: str
    categories: tuple[Scalar, ...]
    kind = "argmax"

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", tuple(self.categories))
        _check_categories(self.column, self.categories)

    @property
    def k(self) -> int:
        return 1

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        _column(schema, self.column)

    def describe(self) -> str:
        return f"the most common {self.column} among {_listed(self.categories)}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "column": self.column, "categories": list(self.categories)}


@dataclass(frozen=True)
class TopK:
    """The ``k`` most common of the declared ``categories`` of ``column``."""

    column: str
    categories: tuple[Scalar, ...]
    k: int = 3
    kind = "top_k"

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", tuple(self.categories))
        _check_categories(self.column, self.categories)
        _require(
            isinstance(self.k, int) and 1 <= self.k <= len(self.categories),
            f"k must be between 1 and the {len(self.categories)} categories, got {self.k}",
        )

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        _column(schema, self.column)

    def describe(self) -> str:
        among = _listed(self.categories)
        return f"the {self.k} most common values of {self.column} among {among}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "column": self.column, "categories": list(self.categories), "k": self.k}


@dataclass(frozen=True)
class CellQuery:
    """A counting query over the universe: rows whose cell on axis ``a`` is in ``bins[a]`` for
    every listed axis (unlisted axes: any cell). ``conditions`` = ((axis index, bins), ...)."""

    label: str
    conditions: tuple[tuple[int, tuple[int, ...]], ...]

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "conditions", tuple((int(a), tuple(int(b) for b in bins)) for a, bins in self.conditions)
        )


@dataclass(frozen=True)
class Workload:
    """k counting queries over the discretised universe of ``axes`` (all cell combinations; the
    data is then a histogram over the universe, for BLR and PMW)."""

    axes: tuple[Axis, ...]
    queries: tuple[CellQuery, ...]
    kind = "workload"
    max_cells = 100_000

    def __post_init__(self) -> None:
        object.__setattr__(self, "axes", tuple(self.axes))
        object.__setattr__(self, "queries", tuple(self.queries))
        _require(len(self.axes) >= 1, "a workload needs at least one column")
        _require(len({a.column for a in self.axes}) == len(self.axes), "a workload lists a column twice")
        _require(len(self.queries) >= 1, "a workload needs at least one query")
        _require(
            self.n_cells <= self.max_cells,
            f"the universe has {self.n_cells:,} cells (limit {self.max_cells:,}): use fewer columns or bins",
        )
        sizes = self.shape
        for q in self.queries:
            for a, bins in q.conditions:
                _require(
                    0 <= a < len(sizes),
                    f"query {q.label!r} names axis {a}, not one of the {len(sizes)} columns",
                )
                _require(
                    all(0 <= b < sizes[a] for b in bins), f"query {q.label!r} names a cell outside axis {a}"
                )

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.labels) for a in self.axes)

    @property
    def n_cells(self) -> int:
        return math.prod(self.shape)

    def cell_labels(self) -> tuple[str, ...]:
        names = [
            [f"{a.column} {lab}" if a.edges is not None else f"{a.column} = {lab}" for lab in a.labels]
            for a in self.axes
        ]
        return tuple(", ".join(combo) for combo in itertools.product(*names))

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        for a in self.axes:
            a.check(schema)

    def describe(self) -> str:
        axes = "; ".join(a.describe() for a in self.axes)
        return f"{len(self.queries)} counting queries over {self.n_cells:,} cells ({axes})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "axes": [a.to_dict() for a in self.axes],
            "queries": [
                {"label": q.label, "conditions": [[a, list(b)] for a, b in q.conditions]}
                for q in self.queries
            ],
        }


def marginal_workload(axes: Sequence[Axis], ways: Sequence[int] = (1, 2)) -> Workload:
    """Every cell of every ``ways``-way marginal of ``axes`` as a counting query (default: all
    1- and 2-way marginals)."""
    axes = tuple(axes)
    queries = []
    for w in ways:
        _require(1 <= w <= len(axes), f"a {w}-way marginal needs at least {w} columns")
        for combo in itertools.combinations(range(len(axes)), w):
            for cells in itertools.product(*(range(len(axes[a].labels)) for a in combo)):
                label = ", ".join(
                    f"{axes[a].column} {axes[a].labels[c]}" for a, c in zip(combo, cells, strict=True)
                )
                queries.append(CellQuery(label, tuple((a, (c,)) for a, c in zip(combo, cells, strict=True))))
    return Workload(axes, tuple(queries))


def range_workload(axis: Axis) -> Workload:
    """Every range query [bin i .. bin j] (i <= j) over one binned numeric column."""
    _require(
        axis.edges is not None,
        f"range queries need a binned numeric column, not categories of {axis.column!r}",
    )
    edges = axis.edges or ()
    k = len(edges) - 1
    queries = [
        CellQuery(
            f"{axis.column} in [{_fmt(edges[i])}, {_fmt(edges[j + 1])})", ((0, tuple(range(i, j + 1))),)
        )
        for i in range(k)
        for j in range(i, k)
    ]
    return Workload((axis,), tuple(queries))


# ---------------------------------------------------------------- statistics by group
GROUPED_STATISTICS = ("count", "sum", "mean", "quantile")


@dataclass(frozen=True)
class PrivacyUnit:
    """The privacy unit: rows sharing a value of ``column`` belong to one person (or household,
    patient...). Each person's contribution is bounded before the statistic: at most
    ``max_groups`` groups per person and ``max_rows`` rows per person in each group, chosen
    uniformly at random among the person's groups and rows. The neighbouring relation becomes
    "add or remove one person with all their rows"."""

    column: str
    max_groups: int = 1
    max_rows: int = 1

    def __post_init__(self) -> None:
        for name in ("max_groups", "max_rows"):
            value = getattr(self, name)
            _require(
                isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 10_000,
                f"{name.replace('_', ' ')} per person must be a whole number from 1 to 10,000, got {value!r}",
            )

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        _column(schema, self.column)

    def describe(self) -> str:
        return (
            f"each person ({self.column}) contributing at most {self.max_rows} row(s) to each of at most "
            f"{self.max_groups} group(s)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "max_groups": self.max_groups, "max_rows": self.max_rows}


@dataclass(frozen=True)
class PrivateKeys:
    """Group keys that are NOT declared: the values of ``columns`` that occur in the data are
    private, so the groups released are chosen by a noisy threshold on each candidate key's
    number of persons (partition selection, :mod:`dpexplorer.core.partition_selection`), at a
    cost of (``epsilon``, ``delta``) charged on top of the statistic's. Only the kept keys are
    released; the set of kept keys is itself a DP output."""

    columns: tuple[str, ...]
    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(str(c) for c in self.columns))
        _require(1 <= len(self.columns) <= 2, "select private keys over one or two columns")
        _require(len(set(self.columns)) == len(self.columns), "the private key columns repeat a column")
        _require(
            isinstance(self.epsilon, int | float) and 0 < self.epsilon < math.inf,
            f"the key selection's epsilon must be positive, got {self.epsilon!r}",
        )
        _require(
            isinstance(self.delta, int | float) and 0 < self.delta < 1,
            f"the key selection's delta must be in (0, 1), got {self.delta!r}",
        )

    def describe(self) -> str:
        return (
            f"keys of {' and '.join(self.columns)} selected privately (noisy threshold, "
            f"epsilon {_fmt(self.epsilon)}, delta {self.delta:g})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class GroupBy:
    """A statistic (``count``, or ``sum`` / ``mean`` / ``quantile`` of ``column`` clipped to
    [lower, upper]) in every group of up to two declared key axes (:class:`Axis`: categories plus
    "other", or bins; no axis: one group of all rows). The keys are declared, so public: every
    group is released, empty or not. One row lies in exactly one group, so the groups compose in
    parallel (McSherry 2009, Theorem 4). With a :class:`PrivacyUnit`, each person's rows are
    bounded first."""

    keys: tuple[Axis, ...]
    statistic: str = "count"
    column: str | None = None
    lower: float | None = None
    upper: float | None = None
    unit: PrivacyUnit | None = None
    private: PrivateKeys | None = None
    """Keys selected privately (``keys`` then empty: the data layer resolves them internally to
    the values that occur, a private fact never published)."""
    q: float = 0.5
    """The quantile of the ``quantile`` statistic: in each group, the order statistic of rank
    max(1, ceil(q n)) of the clipped values (as :class:`Quantile`; an empty group: ``lower``)."""
    kind = "group_by"
    max_groups = 10_000

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", tuple(self.keys))
        _require(len(self.keys) <= 2, "group by one or two columns (or none, with a privacy unit)")
        _require(
            len(self.keys) >= 1 or self.unit is not None or self.private is not None,
            "group by one or two columns",
        )
        _require(len({a.column for a in self.keys}) == len(self.keys), "the group columns repeat a column")
        _require(
            self.statistic in GROUPED_STATISTICS,
            f"unknown statistic by group {self.statistic!r}: use {', '.join(GROUPED_STATISTICS)}",
        )
        if self.statistic != "count":
            _require(self.column is not None, f"the {self.statistic} by group needs a column")
            _check_bounds(str(self.column), self.lower, self.upper)  # type: ignore[arg-type]
        if self.statistic == "quantile":
            _require(
                isinstance(self.q, int | float) and 0 < self.q <= 1,
                f"the quantile must be in (0, 1], got {self.q}",
            )
        if self.private is not None:
            # resolved keys (the values that occur) are private: no refusal may depend on them
            _require(
                not self.keys or tuple(a.column for a in self.keys) == self.private.columns,
                "declare keys or select them privately, not both",
            )
            return
        n_groups = math.prod(len(a.labels) for a in self.keys)
        _require(
            n_groups <= self.max_groups, f"{n_groups:,} groups (limit {self.max_groups:,}): use fewer keys"
        )

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.labels) for a in self.keys)

    @property
    def labels(self) -> tuple[str, ...]:
        """One label per group, row-major over the keys, e.g. "sex = Female, race = White"."""
        if not self.keys:
            return ("all rows",)
        names = [[f"{a.column} = {lab}" for lab in a.labels] for a in self.keys]
        return tuple(", ".join(combo) for combo in itertools.product(*names))

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The grouping columns, declared or private."""
        if self.private is not None:
            return self.private.columns
        return tuple(a.column for a in self.keys)

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        for a in self.keys:
            a.check(schema)
        for c in self.private.columns if self.private is not None else ():
            _column(schema, c)
        if self.column is not None:
            _measured_column(schema, self.column)
            _require(self.column not in self.key_columns, f"{self.column!r} is both a key and measured")
        if self.unit is not None:
            self.unit.check(schema)
            _require(
                self.unit.column not in set(self.key_columns) | {self.column},
                f"the privacy unit {self.unit.column!r} cannot also be a key or the measured column",
            )

    def describe(self) -> str:
        what = "the number of rows"
        if self.statistic != "count":
            name = f"{_fmt(self.q)}-quantile" if self.statistic == "quantile" else self.statistic
            what = f"the {name} of {self.column} clipped to [{_fmt(self.lower)}, {_fmt(self.upper)}]"
        # a binned key says its bins (a histogram by group: the count by a group and bins)
        by = " and ".join(a.column if a.edges is None else a.describe() for a in self.keys)
        out = f"{what} in each of the {len(self.labels):,} groups of {by} (keys declared, public)"
        if self.private is not None:
            out = f"{what} in each group of {self.private.describe()}"
        elif not self.keys:
            out = f"{what} over all rows"
        return out + (f", {self.unit.describe()}" if self.unit is not None else "")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.kind,
            "keys_origin": "declared (public)",
            "keys": [a.to_dict() for a in self.keys],
            "statistic": self.statistic,
        }
        if self.private is not None:
            out["keys_origin"] = "selected privately (noisy threshold)"
            out["keys"] = []
            out["private_keys"] = self.private.to_dict()
        if self.statistic != "count":
            out.update({"column": self.column, "lower": self.lower, "upper": self.upper})
        if self.statistic == "quantile":
            out["q"] = self.q
        if self.unit is not None:
            out["unit"] = self.unit.to_dict()
        return out


# ---------------------------------------------------------------- synthetic data over marginals
MAX_COLUMNS = 16
MAX_MARGINAL_CELLS = 1_000_000
"""Largest marginal (cells) a workload may name: its counts are held in memory."""


@dataclass(frozen=True)
class Marginals:
    """Synthetic data over ``axes``: the workload is ``workload`` (cliques of column names), or,
    when empty, every ``ways``-way marginal of the columns. With ``unit``, each person keeps at
    most ``unit.max_rows`` rows (``max_groups`` is ignored: the whole table is one group)."""

    axes: tuple[Axis, ...]
    workload: tuple[tuple[str, ...], ...] = ()
    ways: int = 2
    unit: PrivacyUnit | None = None
    kind = "marginals"

    def __post_init__(self) -> None:
        object.__setattr__(self, "axes", tuple(self.axes))
        object.__setattr__(self, "workload", tuple(tuple(str(c) for c in cl) for cl in self.workload))
        names = [a.column for a in self.axes]
        _require(2 <= len(names) <= MAX_COLUMNS, f"choose 2 to {MAX_COLUMNS} columns for synthetic data")
        _require(len(set(names)) == len(names), "the synthetic data's columns repeat a column")
        _require(
            isinstance(self.ways, int) and 1 <= self.ways <= min(3, len(names)),
            f"the workload's marginals are 1-, 2- or 3-way (at most the {len(names)} columns), "
            f"got {self.ways!r}",
        )
        for clique in self.workload:
            _require(len(clique) >= 1, "a workload marginal names no column")
            _require(len(set(clique)) == len(clique), f"the marginal {clique} repeats a column")
            for c in clique:
                _require(c in names, f"the workload names {c!r}, which is not among the chosen columns")
        for chosen in self.cliques():
            cells = math.prod(self.sizes[i] for i in chosen)
            _require(
                cells <= MAX_MARGINAL_CELLS,
                f"the marginal {' × '.join(names[i] for i in chosen)} has {cells:,} cells "
                f"(limit {MAX_MARGINAL_CELLS:,}): use fewer bins or categories",
            )
        if self.unit is not None:
            _require(self.unit.column not in names, "the privacy unit cannot also be a synthetic column")

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(a.column for a in self.axes)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(a.labels) for a in self.axes)

    def cliques(self) -> tuple[tuple[int, ...], ...]:
        """The workload as sorted column-index tuples."""
        if not self.workload:
            return tuple(itertools.combinations(range(len(self.axes)), self.ways))
        index = {c: i for i, c in enumerate(self.columns)}
        return tuple(sorted({tuple(sorted(index[c] for c in cl)) for cl in self.workload}))

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        for a in self.axes:
            a.check(schema)
        if self.unit is not None:
            self.unit.check(schema)

    def describe(self) -> str:
        cols = "; ".join(a.describe() for a in self.axes)
        who = f", {self.unit.describe()}" if self.unit is not None else ""
        marginals = len(self.cliques())
        return f"a synthetic table over {len(self.axes)} columns ({cols}), {marginals} marginals{who}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind, "axes": [a.to_dict() for a in self.axes], "ways": self.ways}
        if self.workload:
            out["workload"] = [list(cl) for cl in self.workload]
        if self.unit is not None:
            out["unit"] = self.unit.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Marginals:
        unit = d.get("unit")
        return cls(
            tuple(_axis_from_dict(a) for a in d["axes"]),
            tuple(tuple(cl) for cl in d.get("workload", ())),
            int(d.get("ways", 2)),
            None
            if unit is None
            else PrivacyUnit(
                str(unit["column"]), int(unit.get("max_groups", 1)), int(unit.get("max_rows", 1))
            ),
        )


Query: TypeAlias = (
    Count
    | PredicateCount
    | Sum
    | Mean
    | Variance
    | Quantile
    | TrimmedMean
    | Histogram
    | ArgMax
    | TopK
    | Workload
    | GroupBy
    | Marginals
)


def _axis_from_dict(d: Mapping[str, Any]) -> Axis:
    _require(isinstance(d, Mapping) and "column" in d, f"not a column axis: {d!r}")
    cats, edges = d.get("categories"), d.get("edges")
    return Axis(
        str(d["column"]),
        tuple(cats) if cats is not None else None,
        tuple(edges) if edges is not None else None,
    )


def query_from_dict(d: Mapping[str, Any]) -> Query:
    """Rebuild a query from ``to_dict()`` output (JSON-safe); DataError if ``d`` is not one."""
    _require(isinstance(d, Mapping), f"a query must be a mapping, got {type(d).__name__}")
    kind = d.get("type")
    try:
        return _from_dict(kind, d)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"the saved {kind or 'query'} is incomplete or malformed: {exc}") from exc


def _from_dict(kind: Any, d: Mapping[str, Any]) -> Query:
    if kind == "count":
        return Count()
    if kind == "predicate_count":
        return PredicateCount(predicate_from_dict(d["predicate"]))
    clipped: dict[str, type[Sum] | type[Mean]] = {"sum": Sum, "mean": Mean}
    if kind in clipped:
        return clipped[kind](d["column"], d["lower"], d["upper"])
    if kind == "variance":
        return Variance(d["column"], d["lower"], d["upper"], bool(d.get("std", False)))
    if kind == "quantile":
        return Quantile(d["column"], d["lower"], d["upper"], d.get("q", 0.5))
    if kind == "trimmed_mean":
        return TrimmedMean(d["column"], d["lower"], d["upper"], d["trim_fraction"])
    if kind == "histogram":
        return Histogram(_axis_from_dict(d["axis"]))
    if kind == "argmax":
        return ArgMax(d["column"], tuple(d["categories"]))
    if kind == "top_k":
        return TopK(d["column"], tuple(d["categories"]), d["k"])
    if kind == "workload":
        axes = tuple(_axis_from_dict(a) for a in d["axes"])
        queries = tuple(
            CellQuery(q["label"], tuple((a, tuple(b)) for a, b in q["conditions"])) for q in d["queries"]
        )
        return Workload(axes, queries)
    if kind == "group_by":
        keys = tuple(_axis_from_dict(a) for a in d["keys"])
        unit = d.get("unit")
        if unit is not None:
            unit = PrivacyUnit(str(unit["column"]), unit.get("max_groups", 1), unit.get("max_rows", 1))
        private = d.get("private_keys")
        if private is not None:
            private = PrivateKeys(tuple(private["columns"]), private["epsilon"], private["delta"])
        return GroupBy(
            keys,
            d.get("statistic", "count"),
            d.get("column"),
            d.get("lower"),
            d.get("upper"),
            unit,
            private,
            d.get("q", 0.5),
        )
    if kind == "marginals":  # synthetic data over marginals (MST, AIM)
        return Marginals.from_dict(d)
    raise DataError(f"unknown query type {kind!r}")


__all__ = [
    "And",
    "ArgMax",
    "Axis",
    "CellQuery",
    "Compare",
    "Count",
    "GroupBy",
    "Histogram",
    "Mean",
    "Median",
    "Not",
    "Or",
    "Predicate",
    "PredicateCount",
    "PrivacyUnit",
    "PrivateKeys",
    "Quantile",
    "Query",
    "Sum",
    "TopK",
    "TrimmedMean",
    "Variance",
    "Workload",
    "marginal_workload",
    "predicate_from_dict",
    "query_from_dict",
    "range_workload",
    "where",
]
