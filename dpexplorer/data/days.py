"""How a text cell spells a day: the one rule of the loader's day columns, of a day comparison's
operand and of a day cell read through its text (issue 41, "types that do not lie").

Unambiguous spellings, read as days without being declared (year first, two-digit month and
day, the same separator twice, and a real day: 2021-02-30 is none):

* ``2021-03-01``, ``2021/03/01``, ``2021.03.01``;
* ISO 8601 with a time of day, read as its day: ``2021-03-01T10:00``, ``2021-03-01 10:00:00``,
  ``2021-03-01T10:00:00.25Z`` (hours 00-23, minutes and seconds 00-59, a fraction of a second
  and a trailing ``Z`` allowed; other time-zone offsets are not read).

Any other spelling is text. ``01/03/2021`` is 1 March or 3 January depending on who wrote it:
it reads as a day only under a declared format (:func:`check_format`: the codebook's
``date_format`` of a day column, or ``dpexplorer release --date-format COLUMN=FORMAT``), which
may use ``%d``, ``%m`` and ``%Y`` between separators. The polars expressions here and the Spark
columns of :mod:`dpexplorer.data.engine.spark_columns` read every cell alike (both check the
spelling by one regular expression, then the day by the engine's parser)."""

from __future__ import annotations

import datetime
import re

import polars as pl

from dpexplorer.core.checks import shown
from dpexplorer.data.errors import DataError

ISO_FORMAT = "%Y-%m-%d"
DAY_SPELLINGS: tuple[tuple[str, str, str], ...] = (
    ("%Y-%m-%d", "yyyy-MM-dd", r"[0-9]{4}-[0-9]{2}-[0-9]{2}"),
    ("%Y/%m/%d", "yyyy/MM/dd", r"[0-9]{4}/[0-9]{2}/[0-9]{2}"),
    ("%Y.%m.%d", "yyyy.MM.dd", r"[0-9]{4}[.][0-9]{2}[.][0-9]{2}"),
)
"""(polars format, Spark pattern, the spelling's regular expression) of each unambiguous day."""
TIME_OF_DAY = r"[T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9]([.][0-9]{1,9})?)?Z?"
"""What may follow an ISO day: a time of day (read as its day)."""
STAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}" + TIME_OF_DAY + "$"
AMBIGUOUS = r"^[0-9]{1,2}([/.-])[0-9]{1,2}[/.-][0-9]{4}$"
"""Day and month first (``01/03/2021``): which is which is not said; a format must be declared."""
FORMAT_DIRECTIVES = {"%d": ("d", "[0-9]{1,2}"), "%m": ("M", "[0-9]{1,2}"), "%Y": ("yyyy", "[0-9]{4}")}
"""The directives a declared format may use: (Spark pattern letter, the field's expression)."""
_SEPARATORS = frozenset("/-. ,")
_DAY_RE = re.compile("|".join(f"^{rx}$" for _, _, rx in DAY_SPELLINGS))
_STAMP_RE = re.compile(STAMP)


DECLARED_DAY = ""
"""The format of a column a codebook declares a day column without a ``date_format``: read as
days in the unambiguous spellings whatever its cells hold (a cell that spells none is missing),
so that one row cannot turn the column to text and a release into a refusal."""


def text_day(text: pl.Expr, declared: str | None = None) -> pl.Expr:
    """The day each cell of the text expression ``text`` spells (Date; null where none): an
    unambiguous spelling (module docstring), or with ``declared``, a format of
    :func:`check_format`, that spelling alone (:data:`DECLARED_DAY` and None: the unambiguous ones)."""
    if declared:
        return pl.when(text.str.contains(format_pattern(declared))).then(
            text.str.to_date(declared, strict=False)
        )
    days = [
        pl.when(text.str.contains(f"^{rx}$")).then(text.str.to_date(fmt, strict=False))
        for fmt, _, rx in DAY_SPELLINGS
    ]
    stamp = pl.when(text.str.contains(STAMP)).then(
        text.str.slice(0, 10).str.to_date(ISO_FORMAT, strict=False)
    )
    return pl.coalesce(*days, stamp)


def day_of(value: str) -> datetime.date | None:
    """The day the text ``value`` spells in an unambiguous day spelling without a time (the
    operand of a day comparison: ``2021-03-01``, ``2021/03/01``, ``2021.03.01``), else None."""
    if not _DAY_RE.fullmatch(value):
        return None
    try:
        return datetime.date(int(value[:4]), int(value[5:7]), int(value[8:10]))
    except ValueError:
        return None


def is_stamp(value: str) -> bool:
    """Whether ``value`` is an ISO day with a time of day (which a comparison does not read)."""
    return bool(_STAMP_RE.fullmatch(value))


def check_format(value: object, what: str = "a date format") -> str:
    """``value`` if it is a day format both engines read alike: ``%d``, ``%m`` and ``%Y`` once
    each, between separators (``/``, ``-``, ``.``, a space or a comma), e.g. ``%d/%m/%Y`` or
    ``%m/%d/%Y``; DataError naming ``what`` otherwise."""
    if not isinstance(value, str) or not value:
        raise DataError(f"{what} must be non-empty text such as %d/%m/%Y, not {shown(value)}")
    parts = re.split(r"(%[a-zA-Z%])", value)
    directives = [p for p in parts if p.startswith("%")]
    others = "".join(p for p in parts if not p.startswith("%"))
    between = parts[2:-2:2]  # what separates the three directives: a separator each
    if sorted(directives) != sorted(FORMAT_DIRECTIVES) or not set(others) <= _SEPARATORS or not all(between):
        raise DataError(
            f"{what} {shown(value)} is not one dpexplorer reads: use %d, %m and %Y once each, "
            "between separators (/ - . space comma), e.g. %d/%m/%Y or %m/%d/%Y"
        )
    return value


def format_pattern(declared: str) -> str:
    """The regular expression of text spelled in the declared format (one or two digits for a
    day or a month, four for a year)."""
    pieces = re.split(r"(%[dmY])", declared)
    # a separator as a character class: no escapes, which the engines' regex flavours differ on
    fields = (
        FORMAT_DIRECTIVES[p][1] if p in FORMAT_DIRECTIVES else "".join(f"[{c}]" for c in p) for p in pieces
    )
    return "^" + "".join(fields) + "$"


def spark_pattern(declared: str) -> str:
    """The declared format as a Spark datetime pattern (separators quoted)."""
    pieces = re.split(r"(%[dmY])", declared)
    return "".join(FORMAT_DIRECTIVES[p][0] if p in FORMAT_DIRECTIVES else f"'{p}'" for p in pieces if p)
