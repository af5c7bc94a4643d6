"""How one cell of text reads as a number: the single rule behind every place a column of text
becomes numbers (the loader's numeric columns, :func:`dpexplorer.data.load._numeric_text`, and a
clipped statistic's column of any type, :meth:`dpexplorer.data.engine.base.Engine.as_numbers`).

Why one rule, cell by cell. A CSV column's type is inferred from its values, so adding or removing
one person may turn a column of booleans or numbers into text. If the number a cell becomes
depended on that type, one person could move every other row's contribution and the declared
sensitivity would not hold. Under this rule a cell's number is a function of the cell alone:

* text, blanks around it ignored: ``true`` / ``false`` (any case) -> 1 / 0; a decimal number
  -> its value; NaN and infinities -> missing; anything else -> missing;
* a boolean -> 1 / 0; an integer -> its value; a float -> its value, NaN and infinities missing;
* any other type (a date, ...) -> missing (its text is not a number either)."""

from __future__ import annotations

import polars as pl


def text_value(text: pl.Expr) -> pl.Expr:
    """The value each cell of the text expression ``text`` reads as, infinities and NaN kept:
    Float64, null where the cell is neither a number nor ``true``/``false``. Whether a cell is a
    number at all (the loader's numeric share counts ``inf`` as one) is ``text_value(...)
    .is_not_null()``."""
    stripped = text.str.strip_chars()
    lowered = stripped.str.to_lowercase()
    return (
        pl.when(lowered == "true")
        .then(pl.lit(1.0))
        .when(lowered == "false")
        .then(pl.lit(0.0))
        .otherwise(stripped.cast(pl.Float64, strict=False))
    )


def text_number(text: pl.Expr) -> pl.Expr:
    """The number each cell of the text expression ``text`` reads as (module docstring): Float64,
    null where the cell is not a finite number, ``true`` or ``false``."""
    return finite(text_value(text))


def finite(number: pl.Expr) -> pl.Expr:
    """``number`` with NaN and infinities made missing."""
    return pl.when(number.is_finite()).then(number).otherwise(pl.lit(None, dtype=pl.Float64))


def cell_number(name: str, dtype: pl.DataType) -> pl.Expr:
    """Column ``name`` of type ``dtype`` as numbers (Float64) by the module's rule."""
    column = pl.col(name)
    if dtype == pl.String:
        return text_number(column)
    if dtype == pl.Boolean or dtype.is_integer():
        return column.cast(pl.Float64)
    if dtype.is_float():
        return finite(column.cast(pl.Float64))
    return pl.lit(None, dtype=pl.Float64)
