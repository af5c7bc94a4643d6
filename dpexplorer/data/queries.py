"""Queries as immutable values, built through this API (user text is never evaluated).

Every query has ``describe()`` (plain English), ``to_dict()`` (JSON-safe; :func:`query_from_dict`
rebuilds it, for release plans and saved sessions) and ``check(schema)`` (DataError naming the
column or setting at fault). Declared settings (bounds, categories, bin edges) are part of the
query and never read from the data: a query's form must not depend on the private data. Whether
a query applies is decided from the query and the column names only, never from a column's type:
a CSV's types are inferred from its values, so they are private (issue 32).

This module holds the statistics (counts, clipped statistics, statistics by group, synthetic
data); conditions are in :mod:`~dpexplorer.data.conditions`, categories and bins in
:mod:`~dpexplorer.data.axes` (both re-exported here, where most callers import them).

Missing values: a comparison is false on a missing value; numeric statistics count a missing
value as the midpoint (lower + upper) / 2 of the declared bounds (a fixed in-range value, so every
sensitivity below stays exact); a categorical histogram counts it under "(any other)"."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

import polars as pl

from dpexplorer.core.checks import (
    check_flag,
    check_real,
    check_text,
    check_whole,
    described,
    instances,
    items,
    shown,
)
from dpexplorer.core.marginals import candidate_cliques
from dpexplorer.data.axes import (
    MAX_CELLS,
    MISSING,
    OTHER,
    ArgMax,
    Axis,
    CellQuery,
    Histogram,
    TopK,
    Workload,
    axis_from_dict,
    marginal_workload,
    range_workload,
)
from dpexplorer.data.conditions import (
    COMPARE_OPS,
    And,
    Compare,
    CompareOp,
    Not,
    Or,
    Predicate,
    check_predicate,
    date_columns,
    predicate_from_dict,
    where,
)
from dpexplorer.data.errors import DataError
from dpexplorer.data.validation import (
    QUERY,
    Scalar,
    check_bounds,
    check_quantile,
    column_name,
    column_type,
    fmt,
    require,
)


def measured_column(schema: Mapping[str, pl.DataType], name: str) -> None:
    """The column a statistic with declared bounds measures: it must exist, and that is all.
    Whether it holds numbers is not asked: a CSV's column types are inferred from its values
    (an all-empty column reads as text, one value makes it numeric), so a refusal on them would
    depend on the data. The engines read such a column as numbers whatever its type, a cell that
    is not a number being missing (counted at the declared midpoint like any missing value):
    :meth:`dpexplorer.data.engine.base.Engine.aggregate`."""
    column_type(schema, name)


def axis_items(value: Any, what: str) -> tuple[Axis, ...]:
    """``value``'s items, each an :class:`Axis`; DataTypeError otherwise."""
    return instances(value, Axis, what, QUERY)


def optional(value: Any, kind: type, what: str) -> None:
    """DataTypeError unless ``value`` is None or a ``kind``."""
    if value is not None and not isinstance(value, kind):
        raise QUERY.wrong_type(f"{what} must be a {kind.__name__} or None, not {described(value)}")


# ---------------------------------------------------------------- queries
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

    def __post_init__(self) -> None:
        check_predicate(self.predicate, "a predicate count")

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
    setting: ClassVar[str] = ""
    """The name of the statistic's own setting after the bounds (``std``, ``q``,
    ``trim_fraction``), written by :meth:`to_dict` and checked by :meth:`check_setting`."""

    def __post_init__(self) -> None:
        column_name(self.column, f"{type(self).__name__}'s column")
        check_bounds(self.column, self.lower, self.upper)
        self.check_setting()

    def check_setting(self) -> None:
        """DataError for a setting out of its range (none by default)."""

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        measured_column(schema, self.column)

    def describe(self) -> str:
        return f"the {self.noun} of {self.column}, clipped to [{fmt(self.lower)}, {fmt(self.upper)}]"

    def to_dict(self) -> dict[str, Any]:
        out = {"type": self.kind, "column": self.column, "lower": self.lower, "upper": self.upper}
        return {**out, self.setting: getattr(self, self.setting)} if self.setting else out


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
    setting: ClassVar[str] = "std"

    def check_setting(self) -> None:
        check_flag(self.std, "std (the standard deviation rather than the variance)", QUERY)

    @property
    def statistic(self) -> str:
        return "std" if self.std else "variance"

    @property
    def noun(self) -> str:  # type: ignore[override]
        return "standard deviation" if self.std else "variance"


@dataclass(frozen=True)
class Quantile(_ClippedColumn):
    """The q-quantile: the order statistic of rank max(1, ceil(q n)) (q = 0.5: lower median)."""

    q: float = 0.5
    kind = "quantile"
    setting: ClassVar[str] = "q"

    def check_setting(self) -> None:
        check_quantile(self.q)

    @property
    def statistic(self) -> str:
        return "median" if self.q == 0.5 else "quantile"

    @property
    def noun(self) -> str:  # type: ignore[override]
        return "median" if self.q == 0.5 else f"{self.q:g}-quantile"


def Median(column: str, lower: float, upper: float) -> Quantile:
    """The median: ``Quantile(column, lower, upper, q=0.5)``."""
    return Quantile(column, lower, upper, 0.5)


@dataclass(frozen=True)
class TrimmedMean(_ClippedColumn):
    """Mean after dropping floor(trim_fraction n) values at each end (Bun & Steinke 2019)."""

    trim_fraction: float = 0.1
    kind = "trimmed_mean"
    setting: ClassVar[str] = "trim_fraction"

    def check_setting(self) -> None:
        fraction = check_real(self.trim_fraction, "the trimmed fraction", QUERY)
        require(
            0 <= fraction < 0.5, f"the trimmed fraction must be in [0, 0.5), got {shown(self.trim_fraction)}"
        )

    @property
    def noun(self) -> str:  # type: ignore[override]
        return f"{self.trim_fraction:.0%}-trimmed mean"


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
        column_name(self.column, "the privacy unit's column")
        for name in ("max_groups", "max_rows"):
            check_whole(getattr(self, name), f"{name.replace('_', ' ')} per person", 1, 10_000, QUERY)

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        column_type(schema, self.column)

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
        columns = items(self.columns, "the private key columns", QUERY)
        object.__setattr__(self, "columns", tuple(column_name(c, "a private key column") for c in columns))
        require(1 <= len(self.columns) <= 2, "select private keys over one or two columns")
        require(len(set(self.columns)) == len(self.columns), "the private key columns repeat a column")
        epsilon = check_real(self.epsilon, "the key selection's epsilon", QUERY)
        require(epsilon > 0, f"the key selection's epsilon must be positive, got {shown(self.epsilon)}")
        delta = check_real(self.delta, "the key selection's delta", QUERY)
        require(0 < delta < 1, f"the key selection's delta must be in (0, 1), got {shown(self.delta)}")

    def describe(self) -> str:
        return (
            f"keys of {' and '.join(self.columns)} selected privately (noisy threshold, "
            f"epsilon {fmt(self.epsilon)}, delta {self.delta:g})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class GroupBy:
    """A statistic (``count``, or ``sum`` / ``mean`` / ``quantile`` of ``column`` clipped to
    [lower, upper]) in every group of up to two declared key axes (:class:`Axis`: categories plus
    "(any other)", or bins; no axis: one group of all rows). The keys are declared, so public: every
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
        object.__setattr__(self, "keys", axis_items(self.keys, "the group keys"))
        optional(self.unit, PrivacyUnit, "the privacy unit")
        optional(self.private, PrivateKeys, "the private keys")
        require(len(self.keys) <= 2, "group by one or two columns (or none, with a privacy unit)")
        require(
            len(self.keys) >= 1 or self.unit is not None or self.private is not None,
            "group by one or two columns",
        )
        require(len({a.column for a in self.keys}) == len(self.keys), "the group columns repeat a column")
        require(
            check_text(self.statistic, "the statistic by group", QUERY) in GROUPED_STATISTICS,
            f"unknown statistic by group {shown(self.statistic)}: use {', '.join(GROUPED_STATISTICS)}",
        )
        if self.column is not None:
            column_name(self.column, "the measured column")
        if self.statistic != "count":
            require(self.column is not None, f"the {self.statistic} by group needs a column")
            check_bounds(str(self.column), self.lower, self.upper)  # type: ignore[arg-type]
        if self.statistic == "quantile":
            check_quantile(self.q)
        if self.private is not None:
            # resolved keys (the values that occur) are private: no refusal may depend on them
            require(
                not self.keys or tuple(a.column for a in self.keys) == self.private.columns,
                "declare keys or select them privately, not both",
            )
            return
        n_groups = math.prod(len(a.labels) for a in self.keys)
        require(
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
            column_type(schema, c)
        if self.column is not None:
            measured_column(schema, self.column)
            require(self.column not in self.key_columns, f"{self.column!r} is both a key and measured")
        if self.unit is not None:
            self.unit.check(schema)
            require(
                self.unit.column not in set(self.key_columns) | {self.column},
                f"the privacy unit {self.unit.column!r} cannot also be a key or the measured column",
            )

    def describe(self) -> str:
        what = "the number of rows"
        if self.statistic != "count":
            name = f"{fmt(self.q)}-quantile" if self.statistic == "quantile" else self.statistic
            what = f"the {name} of {self.column} clipped to [{fmt(self.lower)}, {fmt(self.upper)}]"
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
MAX_MARGINAL_CELLS = MAX_CELLS
"""Largest marginal (cells) MST or AIM may measure: its counts are held in memory, and its noise
and score computed cell by cell."""
MAX_COUNTED_CELLS = 10 * MAX_MARGINAL_CELLS
"""The most cells all the marginals MST and AIM may measure (:func:`candidate_cliques`: every
column, every pair, the workload's marginals and theirs) hold together: each is counted and held
(80 MB of counts), and MST scores every pair in each of its rounds."""


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
        object.__setattr__(self, "axes", axis_items(self.axes, "the synthetic data's columns"))
        cliques = items(self.workload, "the workload", QUERY)
        object.__setattr__(
            self,
            "workload",
            tuple(
                tuple(column_name(c, "a workload column") for c in items(cl, "a workload marginal", QUERY))
                for cl in cliques
            ),
        )
        optional(self.unit, PrivacyUnit, "the privacy unit")
        names = [a.column for a in self.axes]
        require(2 <= len(names) <= MAX_COLUMNS, f"choose 2 to {MAX_COLUMNS} columns for synthetic data")
        require(len(set(names)) == len(names), "the synthetic data's columns repeat a column")
        check_whole(self.ways, "the workload's marginals' size (ways)", 1, min(3, len(names)), QUERY)
        for clique in self.workload:
            require(len(clique) >= 1, "a workload marginal names no column")
            require(len(set(clique)) == len(clique), f"the marginal {clique} repeats a column")
            for c in clique:
                require(c in names, f"the workload names {c!r}, which is not among the chosen columns")
        self._check_size()
        if self.unit is not None:
            require(self.unit.column not in names, "the privacy unit cannot also be a synthetic column")

    def _check_size(self) -> None:
        """DataError unless every marginal MST or AIM may measure (:func:`candidate_cliques`: the
        workload's, every column's and every pair's, all counted before either runs) has at most
        :data:`MAX_MARGINAL_CELLS` cells and all at most :data:`MAX_COUNTED_CELLS` together:
        decided from the declared domain alone, before anything is counted."""
        names, sizes, workload = self.columns, self.sizes, set(self.cliques())
        total = 0
        for clique in candidate_cliques(len(names), sorted(workload)):
            cells = math.prod(sizes[i] for i in clique)
            which = "marginal" if clique in workload else "marginal (every column and pair is counted)"
            require(
                cells <= MAX_MARGINAL_CELLS,
                f"the {which} {' × '.join(names[i] for i in clique)} has {cells:,} cells "
                f"(limit {MAX_MARGINAL_CELLS:,}): use fewer bins or categories",
            )
            total += cells
        require(
            total <= MAX_COUNTED_CELLS,
            f"the marginals MST and AIM may measure (every column, every pair and the workload's) "
            f"have {total:,} cells together (limit {MAX_COUNTED_CELLS:,}): use fewer columns, bins "
            "or categories",
        )

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
            tuple(axis_from_dict(a) for a in d["axes"]),
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


def query_from_dict(d: Mapping[str, Any]) -> Query:
    """Rebuild a query from ``to_dict()`` output (JSON-safe); DataError if ``d`` is not one."""
    require(isinstance(d, Mapping), f"a query must be a mapping, got {type(d).__name__}")
    kind = d.get("type")
    try:
        return _from_dict(kind, d)
    except DataError:
        raise
    except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
        what = kind if isinstance(kind, str) and kind else "query"
        raise DataError(f"the saved {what[:40]} is incomplete or malformed: {exc}") from exc


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
        return Histogram(axis_from_dict(d["axis"]))
    if kind == "argmax":
        return ArgMax(d["column"], items(d["categories"], "the categories", QUERY))
    if kind == "top_k":
        return TopK(d["column"], items(d["categories"], "the categories", QUERY), d["k"])
    if kind == "workload":
        axes = tuple(axis_from_dict(a) for a in d["axes"])
        queries = tuple(
            CellQuery(q["label"], tuple((a, tuple(b)) for a, b in q["conditions"])) for q in d["queries"]
        )
        return Workload(axes, queries)
    if kind == "group_by":
        keys = tuple(axis_from_dict(a) for a in d["keys"])
        unit = d.get("unit")
        if unit is not None:
            unit = PrivacyUnit(str(unit["column"]), unit.get("max_groups", 1), unit.get("max_rows", 1))
        private = d.get("private_keys")
        if private is not None:
            private = PrivateKeys(private["columns"], private["epsilon"], private["delta"])
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
    raise DataError(f"unknown query type {shown(kind)}")


__all__ = [
    "COMPARE_OPS",
    "MISSING",
    "OTHER",
    "And",
    "ArgMax",
    "Axis",
    "CellQuery",
    "Compare",
    "CompareOp",
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
    "Scalar",
    "Sum",
    "TopK",
    "TrimmedMean",
    "Variance",
    "Workload",
    "date_columns",
    "marginal_workload",
    "predicate_from_dict",
    "query_from_dict",
    "range_workload",
    "where",
]
