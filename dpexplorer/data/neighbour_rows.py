"""Neighbouring datasets as files, for the replay audit of a plan (issue 44): D and, for every
entry of the plan, the neighbours D' that stress it, each written in the format D was read from
so that the release path reads it as it read D.

What is built (every neighbour adds or removes ONE person: one row, or with a privacy unit one
identifier with all its rows):

* n against n + 1 and n - 1: one row (person) added, a copy of an existing row with a new
  identifier; one removed, the last of D as reordered below;
* per clipped column (sum, mean, variance, quantile, trimmed mean, a statistic by group): a row
  at the lower bound, at the upper bound, and far beyond the upper bound (clipping must hold it
  at the bound); a quantile also a tie at its value on D;
* per axis, key or candidate column: a row in a category no declaration names (a key only in D'
  for private keys, a value beyond the bins of a binned axis); the views' worst case of a
  histogram (a row in its least common category) and of a selection (a row for the runner-up);
* a predicate count: a row where the predicate holds (a copy of one of D's);
* a privacy unit: a new person with many rows (3 r + 1 rows at the upper bound of the clipped
  column, r the declared rows per person) and one in more groups than it may touch.

D is reordered (a permutation: the same dataset) so that the person removed comes last: the
privacy unit's random choice of rows keys each row by its position among the rows with an
identifier, so only then does removing a person leave everyone else's chosen rows as they were
(the replay compares D and D' with the same seed). The person removed is the one with the most
rows under the first unit column; without a unit, the row with the largest value of the first
clipped column (the removal that moves a sum or a mean most), else the last row.

Exploration, not release: the neighbours are built from the true data (a value of D, its
quantile, its commonest categories) for the steward's audit only; nothing here is published."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dpexplorer.data.errors import DataError
from dpexplorer.data.fingerprints import KEPT, visible

NEW_TEXT = "dpx-audit: new category"
"""The text of a category no declaration names (a new key, a new category)."""
POSITION = "__dpx_audit_position__"


@dataclass(frozen=True)
class Neighbour:
    """One neighbour of D: ``rows`` added (each the template row with these values, and a fresh
    value in every unit column: one new person), or the last ``remove`` rows removed.
    ``units``: the relations it is a neighbour under, by privacy-unit column (None: one row is
    one person). A row added with new identifiers is one under every relation; a person of
    several rows, added or removed, only under their unit."""

    name: str
    rows: tuple[Mapping[str, Any], ...] = ()
    remove: int = 0
    units: frozenset[str | None] | None = None
    """None: under every relation."""
    stresses: frozenset[int] | None = None
    """The queries (by index) it was built for; None: every query (n + 1, n - 1)."""

    def applies(self, unit: str | None) -> bool:
        """Whether this is a neighbour for a query whose privacy unit is ``unit``."""
        return self.units is None or unit in self.units


@dataclass(frozen=True)
class _Facets:
    """What a query reads that a neighbour can stress."""

    clipped: list[tuple[str, float, float, float | None]] = field(default_factory=list)
    axes: list[tuple[str, tuple[Any, ...] | None, tuple[float, ...] | None, str]] = field(
        default_factory=list
    )
    predicates: list[Any] = field(default_factory=list)
    units: list[Any] = field(default_factory=list)


def _facets(queries: Sequence[Any]) -> _Facets:
    """The clipped columns, axes (column, categories, edges, role), predicates and units of the
    queries (classes of :mod:`dpexplorer.data.queries`)."""
    found = _Facets()
    for query in queries:
        kind = getattr(query, "kind", "")
        column, lower, upper = (getattr(query, a, None) for a in ("column", "lower", "upper"))
        if isinstance(column, str) and lower is not None and upper is not None:
            q = getattr(query, "q", None) if kind in ("quantile", "median", "group_by") else None
            if kind == "group_by" and query.statistic != "quantile":
                q = None
            found.clipped.append((column, float(lower), float(upper), q))
        axis = getattr(query, "axis", None)
        axes = [axis] if axis is not None else []
        axes += list(getattr(query, "axes", ()) or ())
        axes += list(getattr(query, "keys", ()) or ())
        for a in axes:
            found.axes.append((a.column, a.categories, a.edges, kind))
        if kind in ("argmax", "top_k"):
            found.axes.append((query.column, tuple(query.categories), None, kind))
        private = getattr(query, "private", None)
        for name in getattr(private, "columns", ()) if private is not None else ():
            found.axes.append((name, None, None, "private keys"))
        if getattr(query, "predicate", None) is not None:
            found.predicates.append(query.predicate)
        if getattr(query, "unit", None) is not None:
            found.units.append(query.unit)
    return found


def table_of(dataset: Any) -> pl.DataFrame:
    """D as one eager frame of its visible columns, a number column's kept text put back (so
    that the file written reads as the file D came from did)."""
    frame = dataset.frame
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    kept = set(dataset.kept_text)
    columns = [
        pl.coalesce(pl.col(c).cast(pl.String), pl.col(KEPT + c)).alias(c) if c in kept else pl.col(c)
        for c in visible(frame.columns)
    ]
    return frame.select(columns)


def reordered(table: pl.DataFrame, queries: Sequence[Any]) -> tuple[pl.DataFrame, int]:
    """(D with the person to remove moved last, how many rows that person has): module
    docstring."""
    facets = _facets(queries)
    n = table.height
    if n == 0:
        raise DataError("the dataset has no rows to build neighbours from")
    numbered = table.with_row_index(POSITION)
    if facets.units:
        unit = facets.units[0].column
        sizes = numbered.group_by(unit).agg(pl.len().alias("n"), pl.col(POSITION).min().alias("at"))
        chosen = sizes.filter(pl.col(unit).is_not_null()).sort(["n", "at"], descending=[True, False]).head(1)
        if chosen.height:
            person = chosen[unit][0]
            tail = numbered[unit] == person
            return _moved(numbered, tail), int(tail.sum())
    for column, _, _, _ in facets.clipped:
        if column in table.columns and table.schema[column].is_numeric() and table[column].drop_nulls().len():
            at = int(numbered.filter(pl.col(column).is_not_null()).sort(column, descending=True)[POSITION][0])
            return _moved(numbered, numbered[POSITION] == at), 1
    return table, 1


def _moved(numbered: pl.DataFrame, tail: pl.Series) -> pl.DataFrame:
    return pl.concat([numbered.filter(~tail), numbered.filter(tail)]).drop(POSITION)


# ---------------------------------------------------------------- the catalogue
def _fresh(table: pl.DataFrame, column: str) -> Any:
    """A value of ``column`` no row holds: the largest number plus one, or a new text."""
    if table.schema[column].is_numeric():
        top: Any = table[column].drop_nulls().max()
        return (
            (int(top) if top is not None else 0) + 1
            if table.schema[column].is_integer()
            else float(top or 0) + 1
        )
    return NEW_TEXT


def _typed(table: pl.DataFrame, column: str, value: float) -> Any:
    """``value`` as the column holds numbers (a whole number in an integer column)."""
    return round(value) if table.schema[column].is_integer() else float(value)


def _clipped(
    table: pl.DataFrame, column: str, lower: float, upper: float, q: float | None
) -> list[Neighbour]:
    if column not in table.columns or not table.schema[column].is_numeric():
        return []
    far = upper + (upper - lower) + 1
    out = [
        Neighbour(
            f"a row at the lower bound of {column} ({lower:g})", ({column: _typed(table, column, lower)},)
        ),
        Neighbour(
            f"a row at the upper bound of {column} ({upper:g})", ({column: _typed(table, column, upper)},)
        ),
        Neighbour(
            f"a row far beyond the upper bound of {column} ({far:g})", ({column: _typed(table, column, far)},)
        ),
    ]
    values = table[column].drop_nulls().cast(pl.Float64).clip(lower, upper)
    if q is not None and values.len():
        at: Any = values.quantile(q, "lower")
        word = "median" if q == 0.5 else f"{q:g}-quantile"
        out.append(
            Neighbour(f"a tie at the {word} of {column}", ({column: _typed(table, column, float(at))},))
        )
    return out


def _counts(table: pl.DataFrame, column: str, categories: Sequence[Any]) -> list[int]:
    text = table[column].cast(pl.String)
    return [int((text == str(c)).sum()) for c in categories]


def _axis(table: pl.DataFrame, column: str, categories: Any, edges: Any, role: str) -> list[Neighbour]:
    if column not in table.columns:
        return []
    out = []
    if edges:
        beyond = float(edges[-1]) + (float(edges[-1]) - float(edges[0])) + 1
        if table.schema[column].is_numeric():
            out.append(
                Neighbour(f"a row beyond the bins of {column}", ({column: _typed(table, column, beyond)},))
            )
        return out
    what = "a key only in D'" if role == "private keys" else "a row in a new category"
    out.append(Neighbour(f"{what} of {column}", ({column: _fresh(table, column)},)))
    if categories and len(categories) > 1 and table.schema[column] == pl.String:
        counts = _counts(table, column, categories)
        if role == "histogram":
            rare = categories[counts.index(min(counts))]
            out.append(Neighbour(f"a row in the least common category of {column}", ({column: str(rare)},)))
        if role in ("argmax", "top_k"):
            order = sorted(range(len(counts)), key=lambda i: -counts[i])
            out.append(
                Neighbour(f"a row for the runner-up of {column}", ({column: str(categories[order[1]])},))
            )
    return out


def _unit(
    table: pl.DataFrame, unit: Any, clipped: list[tuple[str, float, float, float | None]], axes: list[Any]
) -> list[Neighbour]:
    """A new person with many rows at the upper bound, and one in more groups than allowed."""
    many = 3 * int(unit.max_rows) + 1
    values: dict[str, Any] = {}
    for column, _, upper, _ in clipped[:1]:
        if column in table.columns and table.schema[column].is_numeric():
            values[column] = _typed(table, column, upper)
    only = frozenset({unit.column})
    rows = tuple(dict(values) for _ in range(many))
    out = [Neighbour(f"a new person with {many} rows under {unit.column}", rows, units=only)]
    keys = [a for a in axes if a[3] == "group_by" and a[0] in table.columns and a[1]]
    if keys:
        column, categories = keys[0][0], keys[0][1]
        groups = list(categories)[: int(unit.max_groups) + 2]
        rows = tuple({**values, column: str(g) if table.schema[column] == pl.String else g} for g in groups)
        if len(rows) > int(unit.max_groups):
            name = f"a new person in {len(rows)} groups of {column} under {unit.column}"
            out.append(Neighbour(name, rows, units=only))
    return out


def neighbours_for(table: pl.DataFrame, queries: Sequence[Any], removed: int = 1) -> list[Neighbour]:
    """The neighbours that stress ``queries`` (module docstring), each once, in a fixed order.
    ``table``: D as :func:`reordered` left it, its last ``removed`` rows one person under the
    first privacy unit (one row without one)."""
    units = unit_columns(queries)
    with_ids = f" with a new {', '.join(units)}" if units else ""
    found = [
        Neighbour(f"one row added (n + 1: a copy of a row{with_ids})", ({},)),
        Neighbour("one row removed (n - 1)", remove=1, units=frozenset({None})),
    ]
    if units:
        only = frozenset({units[0]} | ({None} if removed == 1 else set()))
        name = f"one person removed (all rows of the person with the most rows under {units[0]})"
        found.append(Neighbour(name, remove=removed, units=only))
    for index, query in enumerate(queries):
        own = _facets([query])
        made: list[Neighbour] = []
        for column, lower, upper, q in own.clipped:
            made += _clipped(table, column, lower, upper, q)
        for column, categories, edges, role in own.axes:
            made += _axis(table, column, categories, edges, role)
        for predicate in own.predicates:
            match = table.filter(predicate.expr(table.schema)).head(1)
            if match.height:
                made.append(Neighbour("a row where the predicate holds", (match.row(0, named=True),)))
        for each in own.units:
            made += _unit(table, each, own.clipped, own.axes)
        found += [dataclasses.replace(n, stresses=frozenset({index})) for n in made]
    return _merged(found)


def _merged(found: Sequence[Neighbour]) -> list[Neighbour]:
    """Each neighbour once (the same rows added or removed: one dataset, its names joined), in
    order of first appearance, stressing every query any of its copies was built for."""
    merged: dict[Any, Neighbour] = {}
    for n in found:
        key = (n.remove, n.units, tuple(tuple(sorted(r.items(), key=str)) for r in n.rows))
        seen = merged.get(key)
        if seen is not None:
            stresses = None if seen.stresses is None or n.stresses is None else seen.stresses | n.stresses
            name = seen.name if n.name in seen.name.split(" / ") else f"{seen.name} / {n.name}"
            n = dataclasses.replace(seen, name=name, stresses=stresses)
        merged[key] = n
    return list(merged.values())


# ---------------------------------------------------------------- the files
def neighbour_table(table: pl.DataFrame, neighbour: Neighbour, units: Sequence[str]) -> pl.DataFrame:
    """D' as a frame: ``table`` (D, reordered) with the neighbour's rows added at the end (a new
    person: a fresh value in each of the ``units`` columns), or its last rows removed. DataError
    when a row cannot hold a value in its column's type (the neighbour is then not built)."""
    if neighbour.remove:
        return table.head(table.height - neighbour.remove)
    template = table.row(0, named=True)
    fresh = {u: _fresh(table, u) for u in units if u in table.columns}
    rows = [{**template, **fresh, **values} for values in neighbour.rows]
    added = pl.DataFrame(rows, schema=table.schema, strict=False)
    for column in {c for values in neighbour.rows for c in values}:
        if added[column].null_count() > sum(values.get(column, 0) is None for values in neighbour.rows):
            raise DataError(f"{neighbour.name}: {column} cannot hold the value")
    return pl.concat([table, added])


def write_like(table: pl.DataFrame, path: Path, parquet: bool) -> Path:
    """``table`` written to ``path`` as Parquet or CSV (the format D was read from)."""
    if parquet:
        table.write_parquet(path)
    else:
        table.write_csv(path)
    return path


def is_parquet(dataset: Any) -> bool:
    """Whether D was read from Parquet (its neighbours are written so)."""
    return str(getattr(dataset, "format", "")) == "parquet"


def unit_columns(queries: Sequence[Any]) -> list[str]:
    """Every privacy unit's column, in order."""
    return list(dict.fromkeys(u.column for u in _facets(queries).units))
