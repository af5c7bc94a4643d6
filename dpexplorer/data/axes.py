"""Discretised columns: declared categories or bins (:class:`Axis`), and the queries that count
rows over them (histograms, the most common categories, workloads of counting queries).

A row's cell on an axis depends on its own cell and the declared axis only: a category matches a
cell by the per-cell rule of :mod:`dpexplorer.data.conditions` (as ``column == category``: the
category ``3`` or ``"3"`` matches a cell spelling the number 3, ``"2021-03-01"`` the day, other
text exactly that text), and bins read the column as numbers by :mod:`dpexplorer.data.cells`.
Declared categories and edges are part of the query, never read from the data."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import polars as pl

from dpexplorer.core.checks import check_flag, check_whole, instances, items
from dpexplorer.data.cells import cell_date, cell_number, cell_text, number_key
from dpexplorer.data.conditions import Compare, Reading, ValueKind
from dpexplorer.data.conditions import readings as read_values
from dpexplorer.data.validation import (
    QUERY,
    Scalar,
    check_edges,
    column_name,
    column_type,
    declared_categories,
    declared_edges,
    fmt,
    listed,
    require,
    require_int64,
)

OTHER = "(any other)"
"""The catch-all cell of declared categories: every value none of them matches, missing values
included. Named in parentheses so that it cannot be read as a category of the data (Adult's
race has its own "Other"); until issue 41 it was "other" (:data:`OLD_OTHER`)."""
OLD_OTHER = "other"
"""The catch-all cell's name before issue 41, as released files written then spell it."""
MISSING = "missing"
MAX_CELLS = 1_000_000
"""The most cells one axis may have (its categories and "(any other)", or its bins and "missing"),
and one histogram or marginal: each cell's count, noise and label are held in memory. Checked on
the number declared, before any category is read."""


def check_categories(
    column: str,
    categories: tuple[Scalar, ...],
    exact_text: bool = False,
    as_written: bool = False,
    distinct: bool = True,
) -> tuple[Reading, ...]:
    """The categories' readings under the per-cell rule (:func:`~dpexplorer.data.conditions.reading`;
    none with ``exact_text``; text as text ``as_written``); DataError unless there are 1 to
    ``MAX_CELLS - 1`` of them (refused on their number alone, before any is read), no two
    match the same cells (the same value, or, unless ``exact_text`` or without ``distinct``,
    the same reading: ``3`` and ``"3.0"``) and, unless ``exact_text``, none is :data:`OTHER`
    (its label would be the catch-all's). Time linear in their number."""
    require(len(categories) >= 1, f"declare at least one category of {column!r}")
    require(
        len(categories) < MAX_CELLS,
        f"{column!r} declares {len(categories):,} categories (limit {MAX_CELLS - 1:,}): declare fewer",
    )
    for category in categories:
        require_int64(category, f"a category of {column!r},")
    require(len(set(categories)) == len(categories), f"the categories of {column!r} repeat a value")
    if exact_text:
        return ()
    require(
        OTHER not in categories,
        f"{column!r} declares the category {OTHER!r}, the name of the cell that holds every value "
        "no declared category matches: leave it out (its rows are counted there)",
    )
    read = read_values(categories, f"the category of {column!r}")
    if as_written:  # a declared text column: "01" is not "1"
        read = tuple(("text", c) if isinstance(c, str) else r for c, r in zip(categories, read, strict=True))
    if distinct:
        distinct_readings(column, read)
    return read


def distinct_readings(column: str, read: tuple[Reading, ...]) -> None:
    """DataError if two of the categories' readings are the same (they match the same cells)."""
    require(
        len(set(read)) == len(read),
        f"two categories of {column!r} match the same cells (e.g. 3 and '3.0' are the same number)",
    )


_READERS: dict[ValueKind, Callable[[str, pl.DataType | None], pl.Expr]] = {
    "number": lambda name, dtype: number_key(cell_number(name, dtype)),
    "day": lambda name, dtype: cell_date(name, dtype).cast(pl.String),
    "text": lambda name, dtype: cell_text(name, dtype).cast(pl.String),
}
"""Each kind of category's key in a cell: the text it stands for under the per-cell rule, as
:func:`_category_keys` spells the categories (a number its canonical text, a day its ISO text,
text itself); null for a cell of no such value."""


def _category_keys(read: Sequence[Reading]) -> list[str]:
    """The text each category is matched by (in order; distinct, as the readings are): a number
    its canonical text (:func:`~dpexplorer.data.cells.number_key`, one text per number), a day
    its ISO text, text itself; numbers and days each spelled by one evaluation of the readers'
    own expressions."""
    numbers = [v for k, v in read if k == "number"]
    days = [v for k, v in read if k == "day"]
    spelled = {
        "number": iter(pl.select(number_key(pl.lit(pl.Series(numbers, dtype=pl.Float64)))).to_series()),
        "day": iter(pl.Series(days, dtype=pl.Date).cast(pl.String)),
    }
    return [str(v) if k == "text" else next(spelled[k]) for k, v in read]


@dataclass(frozen=True)
class Axis:
    """A discretised column: declared ``categories`` (plus :data:`OTHER`, which also holds
    missing values) or numeric bin ``edges`` [e0, e1), ..., [e_{k-1}, e_k] (values outside are put in the
    first/last bin; missing values in a "missing" cell). A cell falls in the first category it
    equals by the per-cell rule (module docstring), or, with ``exact_text``, the category that is
    exactly its text as loaded (the keys a private key selection resolved from the values that
    occur, :func:`dpexplorer.data.private_groups.resolve_keys`: internal, never declared)."""

    column: str
    categories: tuple[Scalar, ...] | None = None
    edges: tuple[float, ...] | None = None
    exact_text: bool = False
    as_written: bool = False
    """Text categories match a cell of exactly that text whatever they spell (a column of
    declared text: set by the engine from the dataset, never by a query)."""
    readings: tuple[Reading, ...] = field(init=False, repr=False, compare=False, default=())
    """Each category under the per-cell rule (none with ``exact_text`` or bins): read once."""

    def __post_init__(self) -> None:
        column_name(self.column, "an axis's column")
        check_flag(self.exact_text, "exact_text", QUERY)
        require(
            (self.categories is None) != (self.edges is None),
            f"give {self.column!r} either categories or bin edges (exactly one)",
        )
        if self.categories is not None:
            object.__setattr__(self, "categories", declared_categories(self.column, self.categories))
            # two that read alike are refused by check(), when the column's type is known: on a
            # column of declared text "01" and "1" are two categories
            read = check_categories(self.column, self.categories, self.exact_text, self.as_written, False)
            object.__setattr__(self, "readings", read)
        else:
            object.__setattr__(self, "edges", declared_edges(self.column, self.edges))
            require(
                len(self.edges) <= MAX_CELLS,  # type: ignore[arg-type]
                f"{self.column!r} declares {len(self.edges):,} bin edges (limit {MAX_CELLS:,}): "  # type: ignore[arg-type]
                "declare fewer",
            )
            check_edges(self.column, self.edges)  # type: ignore[arg-type]

    @cached_property
    def labels(self) -> tuple[str, ...]:
        if self.categories is not None:
            return (*(fmt(c) for c in self.categories), OTHER)
        e = self.edges or ()
        return (*(f"[{fmt(a)}, {fmt(b)})" for a, b in itertools.pairwise(e)), MISSING)

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        """DataError if the column does not exist, or if two categories match the same cells
        (:func:`distinct_readings`; read as written on a column of declared text)."""
        column_type(schema, self.column)  # binned: read as numbers (queries.measured_column)
        if self.categories is not None and not self.exact_text:
            distinct_readings(self.column, self.readings)

    @property
    def kinds(self) -> tuple[ValueKind, ...]:
        """The kinds of value the categories are (number, day, text; in that order, each once):
        ``("text",)`` with ``exact_text``, none for bins."""
        if self.exact_text:
            return ("text",)
        present = {kind for kind, _ in self.readings}
        return tuple(kind for kind in _READERS if kind in present)

    @cached_property
    def keys(self) -> tuple[str, ...]:
        """The text each category is matched by (:meth:`index_expr`): its own with ``exact_text``,
        else its canonical spelling (:func:`_category_keys`)."""
        if self.exact_text:
            return tuple(str(c) for c in self.categories or ())
        return tuple(_category_keys(self.readings))

    def index_expr(self, dtype: pl.DataType | None = None) -> pl.Expr:
        """The cell index (0 .. len(labels) - 1) of each row on this axis, in an expression of a
        size independent of the number of categories or bins (a chain of one test per category
        took 35 s and 4.6 GB to plan at 1,000). ``dtype``, the column's type when known, only
        picks how cells are read (:mod:`dpexplorer.data.cells`); bins need the column as numbers
        (the engine's ``as_numbers``).

        Categories: a cell is read as each kind of value the categories hold (a number's
        canonical text, a day's ISO text, its text: :data:`_READERS`), and that key looked up
        among the categories' :attr:`keys` by a cast to an Enum of them (streaming; a
        ``replace_strict`` held the column). A cell equals at most one category by the per-cell
        rule, the one whose key it has (a number spells no day and a text category no number), so
        this is the cell of :func:`~dpexplorer.data.conditions.equal_to`, category by category;
        no match, missing included, is :data:`OTHER`. With ``exact_text``: the cell's text itself."""
        c = pl.col(self.column)
        if self.categories is not None:
            if self.exact_text:
                found = [c.cast(pl.String)]
            else:
                found = [_READERS[kind](self.column, dtype) for kind in self.kinds]
            enum = pl.Enum(self.keys)
            index = pl.coalesce([key.cast(enum, strict=False) for key in found]).to_physical()
            return index.cast(pl.Int64).fill_null(len(self.categories))
        edges = self.edges or ()
        inner = (
            c.cast(pl.Float64).bin_intervals(list(edges[1:-1]), labels=False) if len(edges) > 2 else pl.lit(0)
        )
        return pl.when(c.is_null()).then(pl.lit(len(edges) - 1)).otherwise(inner).cast(pl.Int64)

    def describe(self) -> str:
        if self.categories is not None:
            return f"{self.column} in {{{listed(self.categories)}, {OTHER}}}"
        e = self.edges or (0.0,)
        return f"{self.column} in {len(e) - 1} bins from {fmt(e[0])} to {fmt(e[-1])}"

    def to_dict(self) -> dict[str, Any]:
        if self.categories is not None:
            return {"column": self.column, "categories": list(self.categories)}
        return {"column": self.column, "edges": list(self.edges or ())}


def axis_from_dict(d: Mapping[str, Any]) -> Axis:
    """Inverse of :meth:`Axis.to_dict`; DataError if ``d`` is not one."""
    require(isinstance(d, Mapping) and "column" in d, f"not a column axis: {d!r}")
    cats, edges = d.get("categories"), d.get("edges")
    return Axis(
        str(d["column"]),
        items(cats, "an axis's categories", QUERY) if cats is not None else None,
        items(edges, "an axis's bin edges", QUERY) if edges is not None else None,
    )


@dataclass(frozen=True)
class Histogram:
    """Counts of a categorical column over declared categories plus "(any other)", or of a numeric
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
        column_name(self.column, "ArgMax's column")
        object.__setattr__(self, "categories", declared_categories(self.column, self.categories))
        check_categories(self.column, self.categories)

    @property
    def k(self) -> int:
        return 1

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        column_type(schema, self.column)

    def describe(self) -> str:
        return f"the most common {self.column} among {listed(self.categories)}"

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
        column_name(self.column, "TopK's column")
        object.__setattr__(self, "categories", declared_categories(self.column, self.categories))
        check_categories(self.column, self.categories)
        check_whole(self.k, f"k (of the {len(self.categories)} categories)", 1, len(self.categories), QUERY)

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        column_type(schema, self.column)

    def describe(self) -> str:
        among = listed(self.categories)
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
        object.__setattr__(self, "axes", instances(self.axes, Axis, "a workload's axes", QUERY))
        object.__setattr__(self, "queries", instances(self.queries, CellQuery, "a workload's queries", QUERY))
        require(len(self.axes) >= 1, "a workload needs at least one column")
        require(len({a.column for a in self.axes}) == len(self.axes), "a workload lists a column twice")
        require(len(self.queries) >= 1, "a workload needs at least one query")
        require(
            self.n_cells <= self.max_cells,
            f"the universe has {self.n_cells:,} cells (limit {self.max_cells:,}): use fewer columns or bins",
        )
        sizes = self.shape
        for q in self.queries:
            for a, bins in q.conditions:
                require(
                    0 <= a < len(sizes),
                    f"query {q.label!r} names axis {a}, not one of the {len(sizes)} columns",
                )
                require(
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
    axes = instances(axes, Axis, "the marginals' axes", QUERY)
    queries = []
    for w in items(ways, "ways", QUERY):
        check_whole(w, f"the size of a marginal of the {len(axes)} axes", 1, len(axes), QUERY)
        for combo in itertools.combinations(range(len(axes)), w):
            for cells in itertools.product(*(range(len(axes[a].labels)) for a in combo)):
                label = ", ".join(
                    f"{axes[a].column} {axes[a].labels[c]}" for a, c in zip(combo, cells, strict=True)
                )
                queries.append(CellQuery(label, tuple((a, (c,)) for a, c in zip(combo, cells, strict=True))))
    return Workload(axes, tuple(queries))


def range_workload(axis: Axis) -> Workload:
    """Every range query [bin i .. bin j] (i <= j) over one binned numeric column."""
    require(
        axis.edges is not None,
        f"range queries need a binned numeric column, not categories of {axis.column!r}",
    )
    edges = axis.edges or ()
    k = len(edges) - 1
    queries = [
        CellQuery(f"{axis.column} in [{fmt(edges[i])}, {fmt(edges[j + 1])})", ((0, tuple(range(i, j + 1))),))
        for i in range(k)
        for j in range(i, k)
    ]
    return Workload((axis,), tuple(queries))


def visit_values(value: object, visit: Callable[[object], bool | None]) -> None:
    """Call ``visit`` on ``value`` and on every value inside it (dataclasses searched field by
    field, tuples and lists item by item; an :class:`Axis` is not searched), in order; a value
    for which ``visit`` returns True is not searched. Without recursion: a condition nests
    :data:`~dpexplorer.data.conditions.MAX_DEPTH` levels, a query a few more."""
    stack = [value]
    while stack:
        current = stack.pop()
        if visit(current):
            continue
        if isinstance(current, tuple | list):
            stack.extend(reversed(current))
        elif dataclasses.is_dataclass(current) and not isinstance(current, type | Axis):
            stack.extend(reversed([getattr(current, f.name) for f in dataclasses.fields(current)]))


def _found(values: tuple[object, ...], pick: Callable[[object], str | None]) -> list[str]:
    """The columns ``pick`` names among the values inside ``values`` (:func:`visit_values`),
    each once, in order."""
    found: list[str] = []

    def visit(value: object) -> bool:
        column = pick(value)
        if column is not None:
            found.append(column)
        return column is not None

    visit_values(values, visit)
    return list(dict.fromkeys(found))


def _text_read(value: object) -> str | None:
    if isinstance(value, Compare):  # != asks whether a cell holds a value: a word does
        if value.op == "!=" or any(kind != "number" for kind, _ in value.readings):
            return value.column
    elif isinstance(value, Axis) and not value.exact_text and set(value.kinds) - {"number"}:
        return value.column
    return None


def text_read_columns(*values: object) -> list[str]:
    """The columns that the conditions and declared categories inside ``values`` (requests,
    row steps, queries) compare with a day or text: an engine reads each by its text
    (:meth:`dpexplorer.data.load.Dataset.with_text`). A comparison with numbers needs no text
    (a cell the loader made missing spells no number), but for ``!=``, which holds on a word."""
    return _found(values, _text_read)


def key_columns(*values: object) -> list[str]:
    """The columns of the privately resolved keys inside ``values`` (axes with ``exact_text``):
    an engine reads each as the key its cells stand for (:meth:`dpexplorer.data.load.Dataset.with_keys`)."""
    return _found(values, lambda v: v.column if isinstance(v, Axis) and v.exact_text else None)


def as_written(value: Any, columns: frozenset[str]) -> Any:
    """``value`` (a query, a request, its row steps; a tuple of them) with every comparison and
    categorical axis on one of ``columns`` (declared text: the dataset's
    :attr:`~dpexplorer.data.load.Dataset.written_text`) reading its text values as written
    (``as_written``); the same object where nothing changes."""
    if not columns:
        return value
    if isinstance(value, Compare):
        if value.column in columns and not value.as_written and any(isinstance(v, str) for v in value.values):
            return dataclasses.replace(value, as_written=True)
        return value
    if isinstance(value, Axis):
        written = value.column in columns and value.categories is not None and not value.exact_text
        return dataclasses.replace(value, as_written=True) if written and not value.as_written else value
    if isinstance(value, tuple | list):
        if all(isinstance(v, str | int | float | bool) for v in value):  # categories, edges
            return value
        items = [as_written(v, columns) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else type(value)(items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {
            f.name: new
            for f in dataclasses.fields(value)
            if f.init and (new := as_written(getattr(value, f.name), columns)) is not getattr(value, f.name)
        }
        return dataclasses.replace(value, **changed) if changed else value
    return value
