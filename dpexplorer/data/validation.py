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

from dpexplorer.data.errors import DataError

Scalar: TypeAlias = str | int | float | bool
"""A value a query declares: a compared value, a category."""

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


def column_type(schema: Mapping[str, pl.DataType], name: str) -> pl.DataType:
    """The type of column ``name``; DataError naming the columns when there is none. Only the
    column's existence may decide a refusal: its type is returned for the caller's wording."""
    require(name in schema, f"unknown column {name!r}; the columns are: {', '.join(schema)}")
    return schema[name]


def require_int64(value: Any, what: str) -> None:
    """DataError for a whole number the data engine cannot hold (outside 64-bit integers)."""
    if isinstance(value, int) and not isinstance(value, bool):
        require(-(2**63) <= value < 2**63, f"{what} {str(value)[:20]}… is too large a whole number")


def check_bounds(column: str, lower: float, upper: float) -> None:
    """DataError unless [lower, upper] are finite numbers with lower < upper."""
    require(
        isinstance(lower, int | float)
        and isinstance(upper, int | float)
        and math.isfinite(lower)
        and math.isfinite(upper),
        f"the bounds of {column!r} must be finite numbers, got [{lower}, {upper}]",
    )
    require(
        lower < upper, f"the bounds of {column!r} are inverted or empty: lower {lower:g} >= upper {upper:g}"
    )


def check_quantile(q: Any) -> None:
    """DataError unless ``q`` is a number in (0, 1]."""
    require(isinstance(q, int | float) and 0 < q <= 1, f"the quantile must be in (0, 1], got {q}")


def listed(categories: tuple[Scalar, ...]) -> str:
    """The categories for a description: all of a few; of many, the first LISTED and the count."""
    if len(categories) <= LISTED:
        return ", ".join(fmt(c) for c in categories)
    shown = ", ".join(fmt(c) for c in categories[:LISTED])
    return f"{shown}, … ({len(categories):,} categories)"


def check_edges(column: str, edges: tuple[float, ...]) -> None:
    """DataError unless ``edges`` are at least two finite, increasing numbers."""
    require(len(edges) >= 2, f"the bins of {column!r} need at least two edges")
    require(all(math.isfinite(e) for e in edges), f"the bin edges of {column!r} must be finite")
    require(all(a < b for a, b in itertools.pairwise(edges)), f"the bin edges of {column!r} must increase")
