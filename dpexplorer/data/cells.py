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
* any other type (a date, ...) -> missing (its text is not a number either).

The same holds for every condition and declared category (:mod:`dpexplorer.data.conditions`):
each is read from the cell alone by the readers below (:func:`cell_number`, :func:`cell_date`,
:func:`cell_text`, :func:`cell_present`). A column's type only picks how a reader computes that
reading, never the reading itself: a cell of a numeric column and the same cell of a text column
read alike, because the loader converts a text column only when no cell loses its text
(:func:`dpexplorer.data.load._numeric_text`)."""

from __future__ import annotations

import polars as pl

from dpexplorer.data.days import text_day


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


def _read_as_text(dtype: pl.DataType | None) -> bool:
    """Whether a column of ``dtype`` is read through its text: text (or its dictionary encoding,
    which the engine may put in its place), or a type no fast path knows (its cast to text is
    what it spells: a number's shortest round-trip form, a day's ISO form, true/false)."""
    return dtype is None or not (dtype.is_numeric() or dtype in (pl.Boolean, pl.Date))


def _none(name: str, dtype: pl.DataType | type[pl.DataType]) -> pl.Expr:
    """Missing on every row of column ``name``, as a column (a bare literal is one value, which
    an aggregate over the rows would count once)."""
    column = pl.col(name)
    return pl.when(column.is_null() & column.is_not_null()).then(pl.lit(None, dtype=dtype))


def cell_number(name: str, dtype: pl.DataType | None) -> pl.Expr:
    """Column ``name`` of type ``dtype`` as numbers (Float64) by the module's rule."""
    column = pl.col(name)
    if dtype == pl.Date:
        return _none(name, pl.Float64)
    if dtype is None or _read_as_text(dtype):
        return text_number(column.cast(pl.String))
    if dtype == pl.Boolean or dtype.is_integer():
        return column.cast(pl.Float64)
    return finite(column.cast(pl.Float64))  # floats and decimals


def cell_date(name: str, dtype: pl.DataType | None) -> pl.Expr:
    """Column ``name`` as days (Date): a day cell is its day, a date-time its day, text that
    spells a real day in an unambiguous spelling (:func:`dpexplorer.data.days.text_day`:
    ``2021-03-01``, ``2021/03/01``, ``2021.03.01``, ISO with a time) that day, anything else
    missing."""
    column = pl.col(name)
    if dtype == pl.Date:
        return column
    if is_datetime(dtype):
        return column.dt.date()
    if not _read_as_text(dtype):  # numbers and booleans spell no day
        return _none(name, pl.Date)
    return text_day(column.cast(pl.String))


def is_datetime(dtype: pl.DataType | None) -> bool:
    """Whether ``dtype`` is a date-time (of any unit and time zone)."""
    return isinstance(dtype, pl.Datetime)


def holds_days(dtype: pl.DataType | None) -> bool:
    """Whether a column of ``dtype`` holds days: a date or a date-time column."""
    return dtype == pl.Date or is_datetime(dtype)


def cell_text(name: str, dtype: pl.DataType | None) -> pl.Expr:
    """Column ``name`` as its text, for equality with text that spells neither a number nor
    anything a number column holds: a numeric or boolean cell's text spells a number, so it never
    equals such text, and is read as missing here."""
    column = pl.col(name)
    if dtype == pl.Date:
        return column.cast(pl.String)
    if not _read_as_text(dtype):
        return _none(name, pl.String)
    # text compares with text as it is, and so does its dictionary encoding (Categorical)
    return column if dtype == pl.String or isinstance(dtype, pl.Categorical) else column.cast(pl.String)


def cell_present(name: str, dtype: pl.DataType | None) -> pl.Expr:
    """Whether each cell of column ``name`` holds a value: not missing, and not spelling NaN or an
    infinity (the loader makes those missing in a numeric column, so they are in a text one)."""
    column = pl.col(name)
    if not _read_as_text(dtype):
        return column.is_not_null()
    value = text_value(column.cast(pl.String))
    return column.is_not_null() & (value.is_null() | value.is_finite())


def number_key(number: pl.Expr) -> pl.Expr:
    """The canonical text of a finite number: a whole number below 2^53 without a decimal
    point, any other its shortest round-trip form; null for null."""
    whole = (number == number.floor()) & (number.abs() < 2.0**53)
    return (
        pl.when(whole)
        .then(number.cast(pl.Int64, strict=False).cast(pl.String))
        .otherwise(number.cast(pl.String))
    )


def text_key(text: pl.Expr) -> pl.Expr:
    """The key each cell of the text expression ``text`` stands for in a group by keys that are
    not declared (a private key selection): a function of the cell alone, so that one person who
    changes a column's inferred type changes no other row's key. A number (``true`` = 1) is its
    canonical text (``3`` for 3, 3.0, 03; a whole number below 2^53 without a decimal point),
    any other text itself, NaN and infinities missing."""
    value = text_value(text)
    return pl.when(value.is_null()).then(text).when(value.is_finite()).then(number_key(value))


def cell_key(name: str, dtype: pl.DataType | None) -> pl.Expr:
    """Column ``name`` as :func:`text_key` reads its cells' text; typed columns without parsing
    (the same keys: a number's key is computed from the number)."""
    column = pl.col(name)
    if dtype == pl.Boolean or (dtype is not None and dtype.is_numeric()):
        return number_key(cell_number(name, dtype))
    if dtype == pl.Date:
        return column.cast(pl.String)
    return text_key(column.cast(pl.String))
