"""Checks and wording shared by the query values (:mod:`~dpexplorer.data.conditions`,
:mod:`~dpexplorer.data.axes`, :mod:`~dpexplorer.data.queries`): every refusal here depends on the
query and on the column names only (a file's header, public), never on the data's values or on a
type inferred from them."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any, TypeAlias

import polars as pl

from dpexplorer.core.checks import Errors, check_real, check_text, items, shown
from dpexplorer.data.errors import DataError, DataTypeError

Scalar: TypeAlias = str | int | float | bool
"""A value a query declares: a compared value, a category."""

QUERY = Errors(DataError, DataTypeError)
"""The errors of a query's settings (:mod:`dpexplorer.core.checks` with the data layer's errors)."""

LISTED = 8
"""Categories a description names before it gives their number instead."""


def fmt(v: Any) -> str:
    """A declared value as a description shows it (floats in their shortest form)."""
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def require(condition: bool, message: str) -> None:
    """DataError(``message``) unless ``condition``."""
    if not condition:
        raise DataError(message)


def column_name(value: Any, what: str = "a column name") -> str:
    """``value`` if it is a column name (text); DataTypeError otherwise."""
    return check_text(value, what, QUERY)


def column_type(schema: Mapping[str, pl.DataType], name: str) -> pl.DataType:
    """The type of column ``name``; DataError naming the columns when there is none. Only the
    column's existence may decide a refusal: its type is returned for the caller's wording."""
    require(name in schema, f"unknown column {name!r}; the columns are: {', '.join(schema)}")
    return schema[name]


def require_int64(value: Any, what: str) -> None:
    """DataTypeError for a value a query cannot declare (a category, a compared value: text, a
    number or true/false); DataError for a whole number the data engine cannot hold (outside
    64-bit integers)."""
    if not isinstance(value, str | int | float | bool):
        raise DataTypeError(f"{what} {shown(value)} must be text, a number or true/false")
    if isinstance(value, int) and not isinstance(value, bool):
        require(-(2**63) <= value < 2**63, f"{what} {shown(value)} is too large a whole number")


def check_bounds(column: str, lower: float, upper: float) -> None:
    """DataError unless [lower, upper] are finite numbers (not booleans, not text; finite as
    floats) with lower < upper."""
    low = check_real(lower, f"the lower bound of {shown(column)}", QUERY)
    high = check_real(upper, f"the upper bound of {shown(column)}", QUERY)
    require(
        low < high, f"the bounds of {shown(column)} are inverted or empty: lower {low:g} >= upper {high:g}"
    )


def check_quantile(q: Any) -> None:
    """DataError unless ``q`` is a number in (0, 1] (not a boolean)."""
    require(0 < check_real(q, "the quantile", QUERY) <= 1, f"the quantile must be in (0, 1], got {shown(q)}")


def listed(categories: tuple[Scalar, ...]) -> str:
    """The categories for a description: all of a few; of many, the first LISTED and the count."""
    if len(categories) <= LISTED:
        return ", ".join(fmt(c) for c in categories)
    shown = ", ".join(fmt(c) for c in categories[:LISTED])
    return f"{shown}, … ({len(categories):,} categories)"


def declared_categories(column: str, value: Any) -> tuple[Scalar, ...]:
    """The declared categories of ``column`` as a tuple: ``value`` must be a list or tuple
    (each category is checked by :func:`require_int64`)."""
    found = items(value, f"the categories of {shown(column)}", QUERY)
    for category in found:
        require_int64(category, f"a category of {shown(column)},")
    return found


def declared_edges(column: str, value: Any) -> tuple[float, ...]:
    """The declared bin edges of ``column`` as floats: ``value`` must be a list or tuple of
    finite numbers (not text, not booleans); :func:`check_edges` checks their order."""
    found = items(value, f"the bin edges of {shown(column)}", QUERY)
    return tuple(check_real(e, f"a bin edge of {shown(column)}", QUERY) for e in found)


def check_edges(column: str, edges: tuple[float, ...]) -> None:
    """DataError unless ``edges`` are at least two finite, increasing numbers."""
    require(len(edges) >= 2, f"the bins of {column!r} need at least two edges")
    require(all(math.isfinite(e) for e in edges), f"the bin edges of {column!r} must be finite")
    require(all(a < b for a, b in itertools.pairwise(edges)), f"the bin edges of {column!r} must increase")
