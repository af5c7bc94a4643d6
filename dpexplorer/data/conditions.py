"""Conditions on rows (filters): ``column op value`` comparisons combined with and, or, not.

The per-cell rule. Whether a row satisfies a comparison is decided by that row's own cell and the
query alone, never by the column's type: a CSV column's type is inferred from all its cells, so
a rule that followed it would let one person change the answer on every other row (and a count
under the filter would move by far more than its sensitivity of 1). The compared value is read
first (:func:`reading`):

* a number, ``true``/``false`` (1 / 0) or text that spells one (``"3"``, ``" 4.5 "``) is a
  NUMBER: ``==`` holds for a cell that spells the same number (``3``, ``3.0``, ``03``), and
  ``<``, ``<=``, ``>``, ``>=`` for a cell that spells a number satisfying it, by the rule of
  :mod:`dpexplorer.data.cells`;
* text that is a real day in an unambiguous spelling (``"2021-03-01"``, ``"2021/03/01"``,
  ``"2021.03.01"``: :mod:`dpexplorer.data.days`) is a DAY: ``==`` holds for a cell that is that
  day, an ordered comparison for a cell that is a day satisfying it;
* any other text is TEXT: ``==`` holds for a cell of exactly that text.

On a column whose text is compared AS WRITTEN (``as_written``: a Parquet file's text column, a
text file's column the codebook calls a category, an identifier or text; public, set by the
engine from the dataset's :attr:`~dpexplorer.data.load.Dataset.written_text`), ``==``, ``!=``
and ``in`` read a text value as TEXT whatever it spells: ``"01"`` is not ``"1"``.

``!=`` holds for a cell that holds a value (not missing, not NaN or an infinity) that ``==``
does not hold for; ``in`` for a cell equal to any of the values. Every comparison is false on a
missing cell (``Not`` then makes it true).

Refusals, before anything is charged (issue 41: never a silent empty set). Of the query
itself: a value that is not finite, an ordered comparison with text that is neither a number nor
a day, a column that does not exist. And of a comparison whose operand cannot match any cell of
the column's TYPE (:meth:`Compare.check`): a day against a column that holds no days (text,
numbers, true/false), a number or other text against a day column, text or a number other than
1 / 0 against a true/false column. The type is a public fact (a file's schema, the codebook's
declarations) or, for a text file, the loader's inference, which the schema shows the analyst
anyway; a refusal never asks whether any row matches.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal, TypeAlias

import polars as pl

from dpexplorer.core.checks import check_text, described, items, shown
from dpexplorer.data.cells import cell_date, cell_number, cell_present, cell_text, holds_days, text_value
from dpexplorer.data.days import day_of
from dpexplorer.data.errors import DataError
from dpexplorer.data.validation import QUERY, Scalar, column_name, column_type, fmt, require, require_int64

CompareOp = Literal["==", "!=", "<", "<=", ">", ">=", "in"]
COMPARE_OPS: tuple[str, ...] = ("==", "!=", "<", "<=", ">", ">=", "in")
ORDERED: tuple[str, ...] = ("<", "<=", ">", ">=")
_OP_WORDS = {
    "==": "is",
    "!=": "is not",
    "<": "is below",
    "<=": "is at most",
    ">": "is above",
    ">=": "is at least",
    "in": "is one of",
}
ValueKind = Literal["number", "day", "text"]
Reading: TypeAlias = tuple[ValueKind, float | datetime.date | str]
"""What a compared value (or a declared category) is under the per-cell rule: ("number", a
finite float), ("day", a date) or ("text", the text)."""
MAX_DEPTH = 100
"""A condition nests at most this many levels (a comparison is one, each ``and``, ``or`` or
``not`` around it one more): deeper is refused when it is built or read (DataError), so that
every depth accepted is evaluated, described and stored without exhausting Python's recursion
limit (about 1,000 frames, a few per level in each of those walks) or Spark's, whoever builds it."""
Schema: TypeAlias = Mapping[str, pl.DataType] | Collection[str]
"""The column types an expression is built for; a bare collection of names means types unknown."""


@lru_cache(maxsize=65_536)
def _spelled(text: str) -> float | None:
    """The number ``text`` spells by the rule of :mod:`dpexplorer.data.cells` (infinities and
    NaN kept), None if none: read by the very expression that reads the cells. Cached for more
    values than a query may declare (the window's 10,000 categories, read three times while a
    query is built: with room for 4,096, 9,000 categories missed every time, 27,000 reads)."""
    value = pl.select(text_value(pl.lit(text, dtype=pl.String))).item()
    return None if value is None else float(value)


def _spelled_all(texts: Sequence[str]) -> list[float | None]:
    """:func:`_spelled` of each of ``texts``, all read by one evaluation of the same expression
    (a query may declare a million categories: one evaluation each took minutes)."""
    values = pl.select(text_value(pl.lit(pl.Series(texts, dtype=pl.String)))).to_series()
    return [None if v is None else float(v) for v in values]


def reading(value: Scalar, what: str = "comparison value") -> Reading:
    """``value`` under the per-cell rule (module docstring); DataError for a value that is or
    spells NaN or an infinity (a cell spelling one counts as missing, so it could match nothing);
    DataTypeError for a value that is not text, a number or true/false."""
    return _read(value, _spelled(value) if isinstance(value, str) else None, what)


def readings(values: Sequence[Scalar], what: str = "comparison value") -> tuple[Reading, ...]:
    """:func:`reading` of each of ``values`` (the same readings and refusals), the texts read
    in one pass: time linear in their number."""
    spelled = iter(_spelled_all([v for v in values if isinstance(v, str)]))  # in the texts' order
    return tuple(_read(v, next(spelled) if isinstance(v, str) else None, what) for v in values)


def _read(value: Scalar, number: float | None, what: str) -> Reading:
    """:func:`reading` of ``value``, ``number`` what it spells if it is text (None: nothing).
    Its messages are built only to refuse (a million categories are read at a time)."""
    require_int64(value, what)
    if isinstance(value, bool):
        return "number", float(value)
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise DataError(f"{what} {shown(value)} is not finite")
        return "number", float(value)
    if number is not None:
        if not math.isfinite(number):
            raise DataError(f"{what} {shown(value)} is not a finite number")
        return "number", number
    day = day_of(value)
    return ("text", value) if day is None else ("day", day)


def equal_to(column: str, dtype: pl.DataType | None, readings: Sequence[Reading]) -> pl.Expr:
    """True where the cell of ``column`` equals any of ``readings`` (never null). ``dtype``
    (None: unknown) only picks how each cell is read (:mod:`dpexplorer.data.cells`)."""
    parts = []
    readers = {"number": cell_number, "day": cell_date, "text": cell_text}
    for kind, reader in readers.items():
        wanted = [v for k, v in readings if k == kind]
        if wanted:
            cell = reader(column, dtype)
            parts.append(cell == pl.lit(wanted[0]) if len(wanted) == 1 else cell.is_in(wanted))
    return pl.any_horizontal(parts).fill_null(False)


@dataclass(frozen=True)
class Compare:
    """``column op value``; for ``in``, ``value`` is a tuple. Holds by the per-cell rule (module
    docstring); never true on a missing cell."""

    column: str
    op: CompareOp
    value: Scalar | tuple[Scalar, ...]
    as_written: bool = False
    """``==``, ``!=`` and ``in`` read a text value as text whatever it spells (module
    docstring): set by the engine for a column of declared text, never by a query."""
    depth: ClassVar[int] = 1
    """Levels of nesting (:data:`MAX_DEPTH`): a comparison is one."""

    def __post_init__(self) -> None:
        column_name(self.column, "the compared column")
        require(
            check_text(self.op, "the comparison", QUERY) in COMPARE_OPS,
            f"unknown comparison {shown(self.op)}: use one of {' '.join(COMPARE_OPS)}",
        )
        if self.op == "in":
            values = self.value if isinstance(self.value, tuple | list) else (self.value,)
            require(len(values) > 0, f"'{self.column} in ...' needs at least one value")
            object.__setattr__(self, "value", tuple(values))
        else:
            require(not isinstance(self.value, tuple | list), f"'{self.column} {self.op}' takes one value")
        for v in self.values:
            require_int64(v, "comparison value")
        kind, _ = self.readings[0]
        require(
            self.op not in ORDERED or kind != "text",
            f"'{self.column} {self.op} {shown(self.value)}': {self.op} compares numbers or days "
            "(year-month-day, e.g. 2021-03-01); for text use ==, != or in",
        )

    @property
    def values(self) -> tuple[Scalar, ...]:
        return self.value if isinstance(self.value, tuple) else (self.value,)

    @property
    def readings(self) -> tuple[Reading, ...]:
        """Each compared value under the per-cell rule (:func:`reading`); a text value of an
        equality ``as_written``, as text."""
        if self.as_written and self.op not in ORDERED:
            return tuple(("text", v) if isinstance(v, str) else reading(v) for v in self.values)
        return tuple(reading(v) for v in self.values)

    def expr(self, schema: Schema = ()) -> pl.Expr:
        """The condition as a polars boolean expression (never null). ``schema``, the table's
        column types, only picks how cells are read: the answer on a row is the same whatever
        type the column has (and with no types known)."""
        # a collection of column names (the date columns, the earlier signature): types unknown,
        # every cell read through its text, with the same answers
        dtype = schema.get(self.column) if isinstance(schema, Mapping) else None
        if self.op in ORDERED:
            kind, value = self.readings[0]
            cell = cell_number(self.column, dtype) if kind == "number" else cell_date(self.column, dtype)
            ops = {"<": cell.__lt__, "<=": cell.__le__, ">": cell.__gt__, ">=": cell.__ge__}
            return ops[self.op](pl.lit(value)).fill_null(False)
        equal = equal_to(self.column, dtype, self.readings)
        return cell_present(self.column, dtype) & ~equal if self.op == "!=" else equal

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        """DataError if the column does not exist, or if an operand cannot match any cell of a
        column of its type (:func:`unmatched`): one line naming the column and how it holds
        its values. Nothing about the rows is asked."""
        why = unmatched(self, column_type(schema, self.column))
        if why is not None:
            raise DataError(why)

    def describe(self) -> str:
        shown = ", ".join(fmt(v) for v in self.value) if isinstance(self.value, tuple) else fmt(self.value)
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


SPELLINGS = "2021-03-01, 2021/03/01, 2021.03.01 or ISO with a time"
"""How a day is written to be read without a declared format (:mod:`dpexplorer.data.days`)."""


def holds(dtype: pl.DataType | None) -> str:
    """How a column of ``dtype`` holds its values, in words (for a refusal)."""
    if holds_days(dtype):
        return "holds days"
    if dtype == pl.Boolean:
        return "holds true/false"
    if dtype is not None and dtype.is_numeric():
        return "holds numbers"
    return "is text"


def unmatched(compare: Compare, dtype: pl.DataType | None, typed: bool = False) -> str | None:
    """Why no cell of a column of ``dtype`` can match ``compare``'s operands, from the type alone
    (the column's declared or inferred type: public; never its rows), or None if one may: a
    day against a column that holds none, a number or text against a day column, text or a
    number other than 1 / 0 equal to a true/false column, and with ``typed`` (the file declares
    its types, so a numeric column keeps no text: a Parquet file, a Spark table) text against
    a numeric column. Every operand of ``in`` must be able to match (one that cannot is a
    mistake the release would otherwise hide)."""
    if dtype is None:
        return None
    for given, (kind, _) in zip(compare.values, compare.readings, strict=True):
        why = _cannot_hold(compare, kind, given, dtype, typed)
        if why is not None:
            return f"'{compare.describe()}' can hold on no row: column {compare.column!r} {holds(dtype)}{why}"
    return None


def _cannot_hold(
    compare: Compare, kind: ValueKind, value: Any, dtype: pl.DataType, typed: bool
) -> str | None:
    """The rest of :func:`unmatched`'s line for one operand (``value`` as the query gives it,
    read as ``kind``), or None if it may match a cell."""
    column = compare.column
    if holds_days(dtype):
        if kind == "number":
            return (
                f", and the number {shown(value)} is never a day: compare it with a day written {SPELLINGS}"
            )
        if kind == "text":
            return f", and {value!r} is not one: a day is written {SPELLINGS}"
        return None
    if kind == "day":
        declare = (
            f": if it holds days, declare how they are written (the codebook's date_format, or "
            f"--date-format {column}=%d/%m/%Y); without one, days are read when written {SPELLINGS}"
        )
        return f", not days{declare if dtype == pl.String or isinstance(dtype, pl.Categorical) else ''}"
    equality = compare.op not in ORDERED
    if dtype == pl.Boolean and (kind == "text" or (equality and reading(value)[1] not in (0.0, 1.0))):
        return f", and {shown(value)} is neither (true is 1, false 0)"
    if typed and kind == "text" and dtype.is_numeric():
        return f" (the file's declared type), and {value!r} is not a number"
    return None


@dataclass(frozen=True)
class _Junction:
    """Conditions joined by ``word`` (and / or)."""

    terms: tuple[Predicate, ...]
    word: ClassVar[str] = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "terms", items(self.terms, f"the conditions of '{self.word}'", QUERY))
        require(len(self.terms) >= 1, f"'{self.word}' needs at least one condition")
        for term in self.terms:
            check_predicate(term, f"the conditions of '{self.word}'")
        _nest(self, max(t.depth for t in self.terms))

    @property
    def depth(self) -> int:
        """Levels of nesting, this one included (:data:`MAX_DEPTH`)."""
        return int(self.__dict__["_depth"])

    def expr(self, schema: Schema = ()) -> pl.Expr:
        join = pl.all_horizontal if self.word == "and" else pl.any_horizontal
        return join([t.expr(schema) for t in self.terms])

    def check(self, schema: Mapping[str, pl.DataType]) -> None:
        for t in self.terms:
            t.check(schema)

    def describe(self) -> str:
        return f" {self.word} ".join(_grouped(t) for t in self.terms)

    def to_dict(self) -> dict[str, Any]:
        return {self.word: [t.to_dict() for t in self.terms]}

    __and__ = Compare.__and__
    __or__ = Compare.__or__
    __invert__ = Compare.__invert__


@dataclass(frozen=True)
class And(_Junction):
    """All of ``terms`` hold."""

    word: ClassVar[str] = "and"


@dataclass(frozen=True)
class Or(_Junction):
    """At least one of ``terms`` holds."""

    word: ClassVar[str] = "or"


@dataclass(frozen=True)
class Not:
    """``term`` does not hold (so a row missing the column satisfies ``Not(column == v)``)."""

    term: Predicate

    def __post_init__(self) -> None:
        _nest(self, check_predicate(self.term, "'not'").depth)

    @property
    def depth(self) -> int:
        """Levels of nesting, this one included (:data:`MAX_DEPTH`)."""
        return int(self.__dict__["_depth"])

    def expr(self, schema: Schema = ()) -> pl.Expr:
        return self.term.expr(schema).not_()

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


def check_predicate(term: Any, what: str) -> Predicate:
    """``term`` if it is a condition (:data:`Predicate`); DataTypeError otherwise."""
    if not isinstance(term, Compare | And | Or | Not):
        raise QUERY.wrong_type(f"{what} takes conditions (e.g. where('age') > 40), not {described(term)}")
    return term


def _too_deep() -> DataError:
    return DataError(
        f"the condition is nested more than {MAX_DEPTH} levels deep (each and, or, not is a level): "
        "write it flatter"
    )


def _nest(p: _Junction | Not, inner: int) -> None:
    """Record ``p``'s depth, one more than its deepest term's; DataError past :data:`MAX_DEPTH`."""
    if inner >= MAX_DEPTH:
        raise _too_deep()
    object.__setattr__(p, "_depth", inner + 1)


def combine(p: Predicate, compare: Any, both: Any, either: Any, negate: Any) -> Any:
    """``p`` translated for another engine: ``compare(c)`` for each comparison, joined with
    ``both(a, b)`` / ``either(a, b)`` and ``negate(a)`` (the Spark engine's columns). The terms
    of an ``and`` / ``or`` are joined as a balanced tree, so ``n`` of them nest about log2(n)
    levels deep, not n (an ``or`` of a thousand comparisons overflowed Spark's stack)."""
    if isinstance(p, Compare):
        return compare(p)
    if isinstance(p, Not):
        return negate(combine(p.term, compare, both, either, negate))
    parts = [combine(t, compare, both, either, negate) for t in p.terms]
    join = both if isinstance(p, And) else either
    while len(parts) > 1:  # pairwise: (a . b) . (c . d), the same value (and / or associate)
        paired = [join(a, b) for a, b in zip(parts[::2], parts[1::2], strict=False)]
        parts = paired + parts[len(paired) * 2 :]
    return parts[0]


def date_columns(schema: Mapping[str, pl.DataType]) -> frozenset[str]:
    """The date-typed columns of ``schema``."""
    return frozenset(name for name, dtype in schema.items() if dtype == pl.Date)


def _grouped(p: Predicate) -> str:
    return f"({p.describe()})" if isinstance(p, And | Or) and len(p.terms) > 1 else p.describe()


def where(column: str) -> _ColumnRef:
    """Start a comparison: ``where("age") >= 40``, ``where("race").isin(["A", "B"])``."""
    return _ColumnRef(column)


@dataclass(frozen=True, eq=False)
class _ColumnRef:
    column: str

    def __post_init__(self) -> None:
        column_name(self.column, "where()'s column")

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
        return Compare(self.column, "in", items(values, f"the values {self.column} is one of", QUERY))

    __hash__ = None  # type: ignore[assignment]


def predicate_from_dict(d: Mapping[str, Any]) -> Predicate:
    """Inverse of ``to_dict`` of a predicate; DataError if ``d`` is not one, or nests more
    than :data:`MAX_DEPTH` levels (refused on the way down: a mapping of any depth is read
    without recursing past the limit)."""
    return _from_dict(d, 1)


def _from_dict(d: Mapping[str, Any], depth: int) -> Predicate:
    if depth > MAX_DEPTH:
        raise _too_deep()
    if not isinstance(d, Mapping):  # shown: a short text of a value of any size and depth
        raise DataError(f"a condition must be a mapping, got {shown(d)}")
    if "compare" in d:
        value: Any = d.get("value")  # Compare checks it
        return Compare(d.get("column"), d["compare"], tuple(value) if isinstance(value, list) else value)  # type: ignore[arg-type]
    for key, cls in (("and", And), ("or", Or)):
        if key in d:
            require(isinstance(d[key], list), f"'{key}' needs a list of conditions")
            return cls(tuple(_from_dict(t, depth + 1) for t in d[key]))
    if "not" in d:
        return Not(_from_dict(d["not"], depth + 1))
    raise DataError(f"not a condition: {shown(d)} (expected 'compare', 'and', 'or' or 'not')")
