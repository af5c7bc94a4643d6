"""Load CSV, TSV, gzip-compressed CSV and Parquet files through polars into a :class:`Dataset`.

Every problem with a file ends as a :class:`DataError` saying what and where, or as a warning on
the dataset that counts the rows or values set aside and says why; nothing else escapes
:func:`load_dataset`. Kept import-light (polars and the standard library): the default dataset
loads on the app's start-up path.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import re
import zlib
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from dpexplorer.core.cancel import CancelToken, ProgressFn
from dpexplorer.data.cells import cell_key, text_key, text_value
from dpexplorer.data.days import AMBIGUOUS, DECLARED_DAY, check_format, text_day
from dpexplorer.data.errors import DataError, first_line
from dpexplorer.data.fingerprints import (
    HASH_BATCH,
    KEPT,
    Kind,
    column_fingerprints,
    content_fingerprint,
    content_fingerprint_v1,
    fingerprint_file,
    kind_of_dtype,
    visible,
)
from dpexplorer.data.sniff import (
    SEPARATOR_NAMES,
    WHITESPACE,
    Format,
    Source,
    check_binary,
    cr_only,
    fields,
    format_of,
    header,
    is_utf8,
    ragged_rows,
    read_head,
    rows_text,
    scan_utf8,
    set_aside,
    set_aside_note,
    transcoded,
)

if TYPE_CHECKING:
    from dpexplorer.data.identity import ColumnPrint

__all__ = [  # the loader's public names; the fingerprints' are re-exported for their callers
    "HASH_BATCH",
    "KEPT",
    "MISSING_TEXT",
    "ColumnInfo",
    "Dataset",
    "Kind",
    "TextLayout",
    "content_fingerprint",
    "content_fingerprint_v1",
    "date_span_exprs",
    "fingerprint_file",
    "kind_of_dtype",
    "load_dataset",
    "span",
    "text_layout",
    "visible",
]

INFER_ROWS = 10_000
SAMPLE_ROWS = 10_000
NUMERIC_SHARE = 0.95
"""A text column is read as numeric when at least this share of its values are numbers."""
MISSING_TEXT = [
    "", "NA", "N/A", "n/a", "#N/A", "#N/A N/A", "#NA", "<NA>", "NULL", "null", "None",
    "NaN", "-NaN", "nan", "-nan", "1.#IND", "-1.#IND", "1.#QNAN", "-1.#QNAN",
]  # fmt: skip
"""Fields of a CSV file read as missing values, quoted or not, exactly as written (no other case,
no spaces): pandas' default list (``pandas._libs.parsers.STR_NA_VALUES``), which SQL, R, Excel
and Python exports write: empty (``""`` is how a writer that quotes every field spells it),
``NA`` (R; also Namibia's country code: a column of such codes needs another spelling, or
Parquet), ``NULL`` / ``null`` (SQL, JSON), ``None`` (Python's ``str(None)``; also an answer
some surveys record: recode it, e.g. as ``none``, to keep it a category), ``N/A``, ``#N/A``
(Excel), ``NaN`` and Windows' ``1.#IND`` spellings of a missing number. So the same table gets
one ledger identity however its missing cells are spelled (DESIGN.md, "Dataset identity")."""
MISSING_TEXT_V1 = ["", "NA"]
"""The spellings read as missing before :data:`MISSING_TEXT` (dpexplorer up to 2026-12): a file
holding any other spelling had another content key then, which the ledger still finds
(:meth:`Dataset.earlier_content_fingerprint`)."""
ISO_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
"""A text column becomes a date column only when every value it holds is exactly this (and a real
date): its text is then the date's own ISO text, so nothing about the data changes but its type."""


@dataclass(frozen=True)
class Declared:
    """Public facts a file is read with (a codebook's, a command line's; never the data's):
    ``text``, the columns that hold text whatever their cells spell (a codebook's category,
    identifier and text columns: read as written, leading zeros and all; a text file's only, a
    Parquet file declares its own types); ``formats``, (column, format) of each day column
    written in a declared format (:func:`dpexplorer.data.days.check_format`, e.g. ``%d/%m/%Y``)."""

    text: frozenset[str] = frozenset()
    formats: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", frozenset(self.text))
        object.__setattr__(self, "formats", tuple(sorted(dict(self.formats).items())))
        for column, fmt in self.formats:
            if fmt != DECLARED_DAY:
                check_format(fmt, f"the date format of {column!r}")


@dataclass(frozen=True)
class Reading:
    """How the loader read a file's types (public: decided from the file's schema and the
    declarations, or, for a text file's columns, by the loader's inference). ``written``: the
    text columns compared as written (a Parquet file's text columns, a text file's declared
    text columns: ``"01"`` is not ``"1"``); ``formats``: the declared formats it read day columns
    by; ``retyped``: the declarations may have changed a column's type (the ledger key is then
    that of the file read without them); ``legacy``: the rules of before may have read a column
    otherwise (older ledgers may hold the key of that reading)."""

    written: frozenset[str] = frozenset()
    formats: tuple[tuple[str, str], ...] = ()
    retyped: bool = False
    legacy: bool = False


@dataclass(frozen=True)
class ColumnInfo:
    """NON-PRIVATE summary of one column, for the data steward's eyes only: ``missing`` and
    ``distinct`` are exact counts on the real data, never to be shown to anyone else or released.

    ``kind`` is how the app treats the column; ``dtype`` the polars type it was read as;
    ``span`` a date column's first and last day (ISO text), None otherwise or when all missing."""

    name: str
    kind: Kind
    dtype: str
    missing: int
    distinct: int
    span: tuple[str, str] | None = None


@dataclass(frozen=True, eq=False)
class Dataset:
    """A loaded file: immutable. ``frame`` is a polars DataFrame, or a LazyFrame (``lazy``) for a
    file too large for memory, which still answers queries by streaming.

    ``warnings`` say which rows or values were set aside and why, each with its count.
    ``columns`` (NON-PRIVATE summaries, for the steward only), ``fingerprint`` (SHA-256 of the
    file's bytes) and ``content_fingerprint`` (of the parsed table, the dataset's identity in the
    ledger) are computed on first use; both fingerprints check the file is unchanged."""

    path: Path
    frame: pl.DataFrame | pl.LazyFrame
    n_rows: int
    warnings: tuple[str, ...]
    format: Format = "csv"
    _stamp: tuple[int, int] = field(default=(0, 0), repr=False)
    _missing: tuple[int, ...] = field(default=(), repr=False)
    _respelled: bool = field(default=False, repr=False)
    _encoded: dict[str, pl.Series] = field(default_factory=dict, repr=False)
    _texts: dict[str, pl.Series] = field(default_factory=dict, repr=False)
    _keys: dict[str, pl.Series] = field(default_factory=dict, repr=False)
    _reading: Reading = field(default=Reading(), repr=False)

    @property
    def reading(self) -> Reading:
        """How the loader read the file's types (:class:`Reading`; public)."""
        return self._reading

    @property
    def written_text(self) -> frozenset[str]:
        """The text columns whose cells compare as written (:attr:`Reading.written`: a Parquet
        file's text columns, a text file's declared text columns): public, from the file's schema
        and the declarations."""
        return self._reading.written

    @property
    def types_declared(self) -> bool:
        """Whether the file declares its columns' types (Parquet): a numeric column then holds
        numbers only, never kept text (:attr:`kept_text`)."""
        return self.format == "parquet"

    @property
    def day_formats(self) -> dict[str, str]:
        """The declared format each day column read by one was written in (column -> format)."""
        return dict(self._reading.formats)

    def _keyed(self) -> Dataset:
        """The dataset whose content keys this one in the ledger: itself, or, when declarations
        may have changed a column's type (:attr:`Reading.retyped`), the same file read without
        them, so that a codebook never gives the same people a second budget. Loaded once."""
        if not self._reading.retyped:
            return self
        if "_undeclared" not in self.__dict__:  # frozen: no setattr
            plain = load_dataset(self.path, lazy=self.lazy)
            if plain._stamp != self._stamp:
                raise DataError(f"{self.path} changed since it was loaded: load it again before releasing")
            self.__dict__["_undeclared"] = plain
        return self.__dict__["_undeclared"]

    @property
    def lazy(self) -> bool:
        """True when ``frame`` is a LazyFrame (the file is scanned, not held in memory)."""
        return isinstance(self.frame, pl.LazyFrame)

    @property
    def schema(self) -> pl.Schema:
        """Column names and polars types (cheap); the hidden kept-text columns left out."""
        schema = self.frame.collect_schema() if isinstance(self.frame, pl.LazyFrame) else self.frame.schema
        if not any(n.startswith(KEPT) for n in schema):
            return schema
        return pl.Schema({n: schema[n] for n in visible(schema)})

    @property
    def kept_text(self) -> tuple[str, ...]:
        """The columns read as numbers whose cells that are not numbers keep their text in a
        hidden column (:data:`KEPT`): the loader made those cells missing."""
        names = self.frame.collect_schema().names() if self.lazy else self.frame.columns
        return tuple(n[len(KEPT) :] for n in names if n.startswith(KEPT))

    def with_text(self, columns: Iterable[str]) -> Dataset:
        """This dataset with each of ``columns`` that has kept text (:attr:`kept_text`) read as
        text again: a number cell as its number's text, any other cell as the text it held. A
        condition or category then holds on each such cell as on the file's text column
        (:mod:`dpexplorer.data.conditions`), whatever type the other cells made the column."""
        kept = set(self.kept_text)
        wanted = [c for c in dict.fromkeys(columns) if c in kept]
        if not wanted:
            return self
        text = [pl.coalesce(pl.col(c).cast(pl.String), pl.col(KEPT + c)).alias(c) for c in wanted]
        frame = self.frame
        if isinstance(frame, pl.DataFrame):  # each column's text once, dictionary-encoded
            missing = [e for c, e in zip(wanted, text, strict=True) if c not in self._texts]
            self._texts.update(
                {s.name: s.cast(pl.Categorical) for s in frame.select(missing)} if missing else {}
            )
            return dataclasses.replace(
                self, frame=frame.with_columns(self._texts[c] for c in wanted), _encoded={}
            )
        return dataclasses.replace(self, frame=frame.with_columns(text), _encoded={})

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(self.schema.names())

    def kind_of(self, name: str) -> Kind:
        """The kind of column ``name``; DataError naming the columns if there is no such column."""
        schema = self.schema
        if name not in schema:
            raise DataError(
                f"{self.path.name} has no column {name!r}; its columns are: {', '.join(schema.names())}"
            )
        return kind_of_dtype(schema[name])

    @cached_property
    def columns(self) -> tuple[ColumnInfo, ...]:
        """NON-PRIVATE per-column summary (kind, polars type, missing, distinct), steward only."""
        names = self.column_names
        distinct = _collect(
            self.frame.select(
                *(pl.col(c).drop_nulls().n_unique() for c in names), *date_span_exprs(self.schema)
            )
        )
        return tuple(
            ColumnInfo(
                c,
                self.kind_of(c),
                str(self.schema[c]),
                self._missing[i],
                int(distinct[c][0]),
                span(distinct, c),
            )
            for i, c in enumerate(names)
        )

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 hex of the file's bytes, streamed. DataError if the file changed since loading."""
        if _stamp(self.path) != self._stamp:
            raise DataError(f"{self.path} changed since it was loaded: load it again before releasing")
        return fingerprint_file(self.path)

    @cached_property
    def content_fingerprint(self) -> str:
        """The dataset's identity: :func:`content_fingerprint` of the parsed table (the same for
        the same data as CSV with any line endings, .csv.gz or Parquet, in any row order).
        DataError if the file changed since loading."""
        if _stamp(self.path) != self._stamp:
            raise DataError(f"{self.path} changed since it was loaded: load it again before releasing")
        keyed = self._keyed()
        return content_fingerprint(self.frame) if keyed is self else keyed.content_fingerprint

    @cached_property
    def column_prints(self) -> dict[str, ColumnPrint]:
        """Per column, the fingerprint of the multiset of its cells and whether it is constant
        (:func:`~dpexplorer.data.fingerprints.column_fingerprints`): the ledger keeps them to find
        these people under another table (renamed, projected, a constant column added).
        DataError if the file changed since loading."""
        if _stamp(self.path) != self._stamp:
            raise DataError(f"{self.path} changed since it was loaded: load it again before releasing")
        keyed = self._keyed()
        return column_fingerprints(self.frame) if keyed is self else keyed.column_prints

    def earlier_content_fingerprint(self) -> str | None:
        """The first of :meth:`earlier_content_fingerprints`, None if there is none."""
        return next(iter(self.earlier_content_fingerprints()), None)

    def earlier_content_fingerprints(self) -> tuple[str, ...]:
        """The content fingerprints older ledgers may hold this file under, where they differ
        from :attr:`content_fingerprint`: read when only :data:`MISSING_TEXT_V1` was read as
        missing (a field spells a missing value otherwise: ``null``, ``N/A``, ...), and read by
        the type rules of before issue 41 (:meth:`read_before`). Each is computed by loading the
        file again that way, once per dataset and ledger
        (:func:`dpexplorer.release.release.dataset_key`), so a ledger that filed it then keeps
        its budget."""
        keyed = self._keyed()
        if keyed is not self:
            return keyed.earlier_content_fingerprints()
        if "_earlier" not in self.__dict__:  # computed once (frozen: no setattr)
            earlier = [self.read_before()] if self._reading.legacy else []
            if self._respelled:
                earlier.append(
                    load_dataset(self.path, lazy=self.lazy, missing_text=MISSING_TEXT_V1, legacy=True)
                )
            keys: list[str] = []
            for dataset in earlier:
                if dataset._stamp != self._stamp:
                    raise DataError(
                        f"{self.path} changed since it was loaded: load it again before releasing"
                    )
                key = dataset.content_fingerprint
                if key != self.content_fingerprint and key not in keys:
                    keys.append(key)
            self.__dict__["_earlier"] = tuple(keys)
        return self.__dict__["_earlier"]

    def read_before(self) -> Dataset:
        """This file read by the type rules of before issue 41 (``load_dataset(legacy=True)``:
        numbers inferred in a Parquet file's text too, ISO days only, nothing declared), as
        older ledgers keyed it; itself where those rules read it alike. Loaded once."""
        keyed = self._keyed()
        if keyed is not self:
            return keyed.read_before()
        if not self._reading.legacy:
            return self
        if "_before" not in self.__dict__:  # frozen: no setattr
            self.__dict__["_before"] = load_dataset(self.path, lazy=self.lazy, legacy=True)
        return self.__dict__["_before"]

    def identify(self, cancel: CancelToken | None = None, progress: ProgressFn | None = None) -> str:
        """:attr:`content_fingerprint` (the same value), computed cancellably with progress and
        then cached: the window computes it on a worker after the load, off its critical path."""
        if "content_fingerprint" not in self.__dict__:
            if _stamp(self.path) != self._stamp:
                raise DataError(f"{self.path} changed since it was loaded: load it again before releasing")
            keyed = self._keyed()
            frame, n_rows = keyed.frame, keyed.n_rows
            value = content_fingerprint(frame, cancel, progress, n_rows)
            self.__dict__["content_fingerprint"] = value  # what cached_property stores (frozen: no setattr)
        return self.content_fingerprint

    def select(self, *exprs: pl.Expr) -> pl.DataFrame:
        """``frame.select(*exprs)``, collected (streaming when lazy); DataError if it fails
        (e.g. a lazily scanned file that was moved or holds a value of the wrong type)."""
        try:
            return _collect(self._query_frame(exprs).select(*exprs))
        except pl.exceptions.PolarsError as exc:
            raise DataError(f"could not evaluate the query on {self.path.name}: {_first_line(exc)}") from exc

    def _query_frame(self, exprs: tuple[pl.Expr, ...]) -> pl.DataFrame | pl.LazyFrame:
        """The frame with the text columns the expressions read dictionary-encoded (polars
        Categorical; same values, comparisons several times faster). Each column is encoded
        once, on first use, and cached; lazy frames are used as they are."""
        frame = self.frame
        if isinstance(frame, pl.LazyFrame):
            return frame
        names = {n for e in exprs for n in e.meta.root_names()}
        for n in names:
            if n not in self._encoded and frame.schema.get(n) == pl.String:
                self._encoded[n] = frame[n].cast(pl.Categorical)
        use = [self._encoded[n] for n in names if n in self._encoded]
        return frame.with_columns(use) if use else frame

    def with_keys(self, columns: Iterable[str]) -> Dataset:
        """This dataset with each of ``columns`` as the key each cell stands for
        (:func:`dpexplorer.data.cells.text_key`, kept text included): how a private key
        selection reads its key columns, whatever type the loader inferred for them. Held in
        memory: each column's keys computed once, dictionary-encoded."""
        kept, schema = set(self.kept_text), self.schema
        keys = {}
        for c in (c for c in dict.fromkeys(columns) if c in schema):
            key = cell_key(c, schema[c]).alias(c)
            if c in kept:  # the loader's words: their own text
                key = pl.coalesce(key, text_key(pl.col(KEPT + c))).alias(c)
            keys[c] = key
        if not keys:
            return self
        frame = self.frame
        if isinstance(frame, pl.DataFrame):
            missing = [e for c, e in keys.items() if c not in self._keys]
            if missing:
                self._keys.update({s.name: s.cast(pl.Categorical) for s in frame.select(missing)})
            return dataclasses.replace(
                self, frame=frame.with_columns(self._keys[c] for c in keys), _encoded={}
            )
        return dataclasses.replace(self, frame=frame.with_columns(keys.values()), _encoded={})

    def preview(self, n: int = 200) -> pl.DataFrame:
        """The first ``n`` rows (NON-PRIVATE: the steward's own view of the data)."""
        return _collect(self.frame.head(n).select(self.column_names))


def date_span_exprs(schema: pl.Schema) -> list[pl.Expr]:
    """The first and last day of each date column, for :func:`span` (named apart from columns)."""
    dates = [c for c, t in schema.items() if t == pl.Date]
    return [
        e for c in dates for e in (pl.col(c).min().alias(f"\x1f<{c}"), pl.col(c).max().alias(f"\x1f>{c}"))
    ]


def span(row: pl.DataFrame | dict, column: str) -> tuple[str, str] | None:
    """A date column's (first, last) day as ISO text from a row holding :func:`date_span_exprs`
    (a one-row frame or a dict); None for another column or an all-missing one."""
    keys = (f"\x1f<{column}", f"\x1f>{column}")
    if isinstance(row, pl.DataFrame):
        found = [row.get_column(k, default=None) for k in keys]
        low, high = (None if v is None else v[0] for v in found)
    else:
        low, high = (row.get(k) for k in keys)
    return None if low is None or high is None else (str(low), str(high))


def _collect(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    if isinstance(frame, pl.LazyFrame):
        try:
            return frame.collect(engine="streaming")
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise DataError(f"could not read the data: {_first_line(exc)}") from exc
    return frame


def _aggregate(frame: pl.DataFrame | pl.LazyFrame, exprs: Iterable[pl.Expr]) -> pl.DataFrame:
    """The one-row ``select`` of ``exprs`` on ``frame``, by polars' streaming engine also for a
    frame in memory: it splits the rows among the cores, where an eager ``select`` of one
    column's aggregate runs on one (the NUL check on a 10M-row text column: 0.036 s against
    0.068 s)."""
    return _collect(frame.lazy().select(exprs))


_first_line = first_line


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError as exc:
        raise DataError(
            f"{path} can no longer be read ({exc.strerror or exc}): was it moved or deleted?"
        ) from exc
    return st.st_size, st.st_mtime_ns


# ---------------------------------------------------------------- reading
_PARSE_ERROR = re.compile(r"could not parse `(.*?)` as dtype `?(\w+)`? at column '(.*?)'")


def _scan(
    path: Path,
    fmt: Format,
    sep: str,
    overrides: dict[str, pl.DataType],
    truncate: bool,
    missing: list[str] = MISSING_TEXT,
) -> pl.LazyFrame:
    if fmt == "parquet":
        return pl.scan_parquet(path)
    return pl.scan_csv(
        path,
        separator=sep,
        infer_schema_length=INFER_ROWS,
        schema_overrides=overrides or None,
        truncate_ragged_lines=truncate,
        encoding="utf8",
        null_values=missing,
    )


class _NotUtf8(Exception):
    """Polars found bytes that are not UTF-8 past the head: read the file transcoded instead."""


def _read(
    path: Path,
    fmt: Format,
    sep: str,
    lazy: bool,
    notes: list[str],
    src: bytes | None = None,
    missing: list[str] = MISSING_TEXT,
    text: Collection[str] = (),
) -> tuple[pl.DataFrame | pl.LazyFrame, list[int], dict[str, int]]:
    """Parse the file, or ``src`` (UTF-8 CSV in memory) when given (or check it parses,
    streaming, when lazy), reading ``missing`` as missing. Columns where text turns up after
    schema inference are re-read as text (then made numeric by :func:`_numeric_text`). Returns
    the frame, the row indices of rows with too many fields, to set aside, and the count of each
    spelling of :data:`MISSING_TEXT` that ``missing`` lacks found as a whole text field
    (:func:`_respelled`, counted in the lazy parse's own pass). _NotUtf8 when the file needs
    transcoding. The columns named in ``text`` (declared text) are read as text as written."""
    overrides: dict[str, pl.DataType] = {c: pl.String() for c in text}
    truncate = False
    too_many: list[int] = []
    for _ in range(64):
        try:
            if lazy:
                lf = _scan(path, fmt, sep, overrides, truncate, missing)
                if fmt == "parquet":  # typed columns: nothing to parse (the counts pass reads it)
                    return lf, too_many, {}
                # one streaming pass that parses every field; a bare pl.len() on a CSV scan takes
                # polars' row-count shortcut, which holds the whole file in memory (3.3 GB peak
                # on a 3.2 GB file), where this pass holds a chunk
                spellings = _respelled_exprs(lf.collect_schema(), missing)
                counts = lf.select(pl.len().alias("__n"), pl.all().null_count(), *spellings)
                return lf, too_many, _respelled(counts.collect(engine="streaming"), missing)
            if fmt == "parquet":
                return pl.read_parquet(path), too_many, {}
            frame = pl.read_csv(
                io.BytesIO(src) if isinstance(src, bytes) else path,
                separator=sep,
                infer_schema_length=INFER_ROWS,
                schema_overrides=overrides or None,
                truncate_ragged_lines=truncate,
                null_values=missing,
            )
            return frame, too_many, _respelled(frame.select(_respelled_exprs(frame.schema, missing)), missing)
        except pl.exceptions.PolarsError as exc:
            message = str(exc)
            parse = _PARSE_ERROR.search(message)
            if parse and parse.group(3) not in overrides:
                overrides[parse.group(3)] = pl.String()
            elif "more fields than defined" in message and not truncate:
                truncate = True
                expected = (
                    len(_scan(path, fmt, sep, overrides, truncate).collect_schema()) if src is None else 0
                )
                if src is not None:
                    expected = fields(src[: src.find(b"\n")].decode("utf-8").lstrip("\ufeff"), sep)
                too_many = set_aside_note(*ragged_rows(path, fmt, sep, expected, src), notes)
            elif "utf-8" in message.lower() or "utf8" in message.lower():
                if not lazy and src is None:
                    raise _NotUtf8 from exc
                raise scan_utf8(path, fmt) from exc
            else:
                raise DataError(f"{path.name} could not be read as {fmt}: {_first_line(exc)}") from exc
        except OSError as exc:
            raise DataError(
                f"{path.name} could not be read ({exc.strerror or exc}): was it moved or deleted?"
            ) from exc
    raise DataError(f"{path.name}: too many columns with unexpected text to read it")  # pragma: no cover


def _respelled_exprs(schema: pl.Schema, missing: list[str]) -> list[pl.Expr]:
    """Per text column, the count of its fields spelled as one of :data:`MISSING_TEXT` that
    ``missing`` lacks, and per float column its NaNs (polars parses ``NaN`` and ``-NaN`` as
    numbers: 2^53 + 1 beside one was read as a float), named ``\x1f<column>``; none when
    ``missing`` has them all. Any other such field can only be text: a column of numbers
    holding one was read as text."""
    others = [m for m in MISSING_TEXT if m not in missing]
    if not others:
        return []
    texts = [pl.col(c).is_in(others) for c, t in schema.items() if t == pl.String]
    nans = [pl.col(c).is_nan() for c, t in schema.items() if t.is_float()]
    return [e.sum().alias(f"\x1f{e.meta.output_name()}") for e in (*texts, *nans)]


def _respelled(counts: pl.DataFrame, missing: list[str]) -> dict[str, int]:
    """The text columns :func:`_respelled_exprs` found such fields in, with their counts."""
    found = {n[1:]: int(counts[n][0] or 0) for n in counts.columns if n.startswith("\x1f")}
    return {c: n for c, n in found.items() if n}


def _spellings(
    frame: pl.DataFrame | pl.LazyFrame, columns: Iterable[str], missing: list[str]
) -> dict[str, int]:
    """How many fields of ``columns`` are each spelling of :data:`MISSING_TEXT` not in
    ``missing`` (for the note; one pass, only when :func:`_respelled` found some). A float
    column's NaNs count as ``NaN or -NaN`` (polars parsed either)."""
    others = [m for m in MISSING_TEXT if m not in missing]
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    cells: list[tuple[str, pl.Expr]] = []
    for c in columns:
        if schema[c].is_float():
            cells.append(("NaN or -NaN", pl.col(c).is_nan()))
        else:
            cells += [(m, pl.col(c) == m) for m in others]
    counts = _aggregate(frame, (e.sum().alias(str(i)) for i, (_, e) in enumerate(cells)))
    found: dict[str, int] = {}
    for i, (m, _) in enumerate(cells):
        found[m] = found.get(m, 0) + int(counts[str(i)][0] or 0)
    return {m: n for m, n in found.items() if n}


def _numeric_text(
    frame: pl.DataFrame | pl.LazyFrame, notes: list[str], skip: Collection[str] = ()
) -> pl.DataFrame | pl.LazyFrame:
    """Text columns whose values are (almost all: :data:`NUMERIC_SHARE`) numbers become Float64,
    each cell by :func:`dpexplorer.data.cells.text_value` (``true``/``false`` 1/0; text that is
    not a number missing, counted in a warning, its text kept for conditions in a hidden column,
    :data:`KEPT`; NaN and infinities then made missing by :func:`_non_finite`, as
    :func:`dpexplorer.data.cells.text_number` reads them).

    The share is of ALL the column's values, not of a sample of the first rows: a sample makes
    the type depend on the rows' order, and the type is part of the dataset's identity in the
    ledger (the same people sorted otherwise would get a fresh budget). A first pass over the
    first :data:`PREFIX_SHARE` of the rows settles, exactly, every column that already holds
    more values that are not numbers than the share allows in all its rows (a column of words);
    one pass over all rows reads the others. Only for untyped text (CSV, TSV), never the columns
    in ``skip`` (declared text)."""
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    texts = [name for name, dtype in schema.items() if dtype == pl.String and name not in skip]
    if not texts:
        return frame
    texts = _not_surely_text(frame, texts)
    if not texts:
        return frame
    present = [pl.col(c).is_not_null().sum().alias(f"{c}\x00n") for c in texts]
    numbers = [text_value(pl.col(c)).is_not_null().sum().alias(f"{c}\x00num") for c in texts]
    example = [
        pl.col(c).filter(pl.col(c).is_not_null() & text_value(pl.col(c)).is_null()).first().alias(f"{c}\x00v")
        for c in texts
    ]
    counts = _collect(frame.select(*present, *numbers, *example))
    converted, kept = [], []
    for name in texts:
        n, num = int(counts[f"{name}\x00n"][0]), int(counts[f"{name}\x00num"][0])
        if n == 0 or num < NUMERIC_SHARE * n:
            continue
        converted.append(name)
        if n > num:
            kept.append(name)
            example_value = counts[name + "\x00v"][0]
            notes.append(
                f"column {name!r}: text that is not a number (e.g. {example_value!r}) in "
                f"{rows_text(n - num)} of this numeric column; those values are treated as missing "
                "by statistics (a condition still reads their text)"
            )
    if not converted:
        return frame
    # the text of the cells made missing, kept for conditions and categories (KEPT)
    frame = frame.with_columns(
        pl.when(text_value(pl.col(c)).is_null()).then(pl.col(c)).alias(KEPT + c) for c in kept
    )
    # infinities stay for _non_finite, which makes them missing with its own note
    return frame.with_columns(text_value(pl.col(c)).alias(c) for c in converted)


PREFIX_SHARE = 0.1
"""The share of the rows :func:`_not_surely_text` reads first (at least :data:`SAMPLE_ROWS`)."""


def _not_surely_text(frame: pl.DataFrame | pl.LazyFrame, texts: list[str]) -> list[str]:
    """The text columns that may still hold :data:`NUMERIC_SHARE` numbers: a column with more
    values that are not numbers in its first rows than ``(1 - NUMERIC_SHARE)`` of its values
    cannot, whatever its other rows hold (so the answer does not depend on the rows' order)."""
    present = _aggregate(frame, (pl.col(c).is_not_null().sum() for c in texts))
    rows = max(SAMPLE_ROWS, int(PREFIX_SHARE * max(int(present[c][0]) for c in texts)))
    head = frame.head(rows)
    # each distinct value read once, weighted by its rows: the same count as reading every row
    # (a column of 50 words over 1M rows: 12 ms against 110 ms, and less on unique values too)
    words = {
        c: int(
            _collect(
                head.group_by(c)
                .len(f"{c}\x00rows")
                .select(
                    pl.col(f"{c}\x00rows")
                    .filter(pl.col(c).is_not_null() & text_value(pl.col(c)).is_null())
                    .sum()
                )
            ).item()
        )
        for c in texts
    }
    # integers: words > (1 - share) n, with a margin of one value against rounding
    return [c for c in texts if words[c] <= (1 - NUMERIC_SHARE) * int(present[c][0]) + 1]


def _iso_dates(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """Text columns whose every non-missing value is an exact ISO date (:data:`ISO_DATE`, a real
    day: 2021-02-30 is not) become Date. The check reads every value (a sample first, to skip
    the other text columns cheaply); anything else, 2021-3-1 or 01/03/2021 included, stays text."""
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    candidates = []
    for name, dtype in schema.items():
        if dtype != pl.String or name.startswith(KEPT):
            continue
        sample = _collect(frame.select(pl.col(name).head(SAMPLE_ROWS)))[name].drop_nulls()
        if not sample.is_empty() and sample.str.contains(ISO_DATE).all():
            candidates.append(name)
    if not candidates:
        return frame
    found = _collect(frame.select(_every_value_a_date(c) for c in candidates))
    dates = [c for c in candidates if found[c][0]]
    return frame.with_columns(pl.col(c).str.to_date("%Y-%m-%d") for c in dates) if dates else frame


def _every_value_a_date(name: str) -> pl.Expr:
    """True when each non-missing value of text column ``name`` reads back as itself after
    parsing as a date (so no value that is not exactly ISO, and no impossible day)."""
    text = pl.col(name)
    parsed = text.str.to_date("%Y-%m-%d", strict=False).cast(pl.String)
    same = (parsed == text).fill_null(False) & text.str.contains(ISO_DATE)
    return (text.is_null() | same).all().alias(name)


@dataclass(frozen=True)
class _DaysRead:
    """What :func:`_days` did: the declared format of each column it read by one, and whether
    the rules of before (ISO days only) would have left a column it made days as text."""

    formats: tuple[tuple[str, str], ...] = ()
    legacy: bool = False


def _days(
    frame: pl.DataFrame | pl.LazyFrame, notes: list[str], declared: Declared, skip: Collection[str] = ()
) -> tuple[pl.DataFrame | pl.LazyFrame, _DaysRead]:
    """Text columns of days become Date columns (:mod:`dpexplorer.data.days`): a column whose
    every non-missing value is a real day in an unambiguous spelling (``2021-03-01``,
    ``2021/03/01``, ``2021.03.01``, ISO with a time, read as its day), or a column with a declared
    format whose values are days in it (the others missing, counted in a note). Any other column
    stays text; one whose first values are mostly days, or day and month first (``01/03/2021``,
    ambiguous without a format), gets a note saying why it is not read as days. A sample of the
    first rows skips the other text columns cheaply; the decision reads every value. The columns
    in ``skip`` (declared text) stay text."""
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    formats = dict(declared.formats)
    texts = [n for n, t in schema.items() if t == pl.String and n not in skip and n in visible([n])]
    if not texts:
        return frame, _DaysRead()
    sample = _collect(frame.select(pl.col(c).head(SAMPLE_ROWS) for c in texts))
    candidates: list[str] = []
    for name in texts:
        values = sample[name].drop_nulls()
        if name in formats:
            candidates.append(name)
        elif not values.is_empty():
            days = pl.select(text_day(pl.lit(values)).is_not_null().mean()).item()
            if days >= NUMERIC_SHARE:
                candidates.append(name)
            elif pl.select(pl.lit(values).str.contains(AMBIGUOUS).mean()).item() >= NUMERIC_SHARE:
                notes.append(
                    f"column {name!r} looks like days written with the day and the month first "
                    "(NN/NN/YYYY), which reads as either; it is read as text: declare its format "
                    f"(the codebook's date_format, or --date-format {name}=%d/%m/%Y) to read it as days"
                )
    if not candidates:
        return frame, _DaysRead()
    counts = _aggregate(
        frame,
        (
            e
            for c in candidates
            for e in (
                pl.col(c).is_not_null().sum().alias(f"{c}\x00n"),
                text_day(pl.col(c), formats.get(c)).is_not_null().sum().alias(f"{c}\x00days"),
                _every_value_a_date(c).alias(f"{c}\x00iso"),
                pl.col(c).filter(text_day(pl.col(c), formats.get(c)).is_null()).first().alias(f"{c}\x00v"),
            )
        ),
    )
    dates, used, legacy = [], [], False
    for c in candidates:
        n, days, example = int(counts[f"{c}\x00n"][0]), int(counts[f"{c}\x00days"][0]), counts[f"{c}\x00v"][0]
        if (n and days == n) or (c in formats and (days or formats[c] == DECLARED_DAY)):
            dates.append(c)
            legacy = legacy or not counts[f"{c}\x00iso"][0]
            if c in formats:
                used.append((c, formats[c]))
            if n > days:
                notes.append(
                    f"column {c!r}: {n - days:,} of its {n:,} values spell no day "
                    f"{_spelled(formats[c])} (e.g. {example!r}); those values are treated as missing"
                )
        elif c in formats and n:
            notes.append(
                f"column {c!r}: no value spells a day in its declared format {formats[c]} "
                f"(e.g. {example!r}); the column is read as text"
            )
        elif n and days >= NUMERIC_SHARE * n:
            notes.append(
                f"column {c!r} is read as text: {n - days:,} of its {n:,} values spell no day (e.g. "
                f"{example!r}; a day is written 2021-03-01, 2021/03/01 or 2021.03.01), the others "
                "days; a comparison with a day on it is refused"
            )
    if not dates:
        return frame, _DaysRead()
    frame = frame.with_columns(text_day(pl.col(c), formats.get(c)).alias(c) for c in dates)
    return frame, _DaysRead(tuple(used), legacy)


def _spelled(declared: str) -> str:
    """How a declared day column is written, in words."""
    if declared == DECLARED_DAY:
        return "in an unambiguous spelling (2021-03-01, 2021/03/01, 2021.03.01) of its declared day column"
    return f"in its declared format {declared}"


def _text_may_differ(frame: pl.DataFrame | pl.LazyFrame, columns: list[str]) -> bool:
    """Whether the declared text ``columns`` may have been read otherwise without their
    declaration (as numbers by :func:`_numeric_text`, as days by :func:`_days`): then the
    dataset's ledger key is that other reading's (:meth:`Dataset.content_fingerprint`). False
    only when each surely stays text: more values in its first rows that are not numbers than
    the numeric share allows (:func:`_not_surely_text`), and a first value that is no day."""
    if not columns:
        return False
    if _not_surely_text(frame, columns):
        return True
    first = _collect(frame.select(text_day(pl.col(c).drop_nulls().first()).is_not_null() for c in columns))
    return any(first.row(0))


def _non_finite(frame: pl.DataFrame | pl.LazyFrame, notes: list[str]) -> pl.DataFrame | pl.LazyFrame:
    """NaN and +-infinity in float columns become missing, counted in a warning."""
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    floats = [c for c, t in schema.items() if t.is_float()]
    if not floats:
        return frame
    counts = _aggregate(frame, ((pl.col(c).is_nan() | pl.col(c).is_infinite()).sum() for c in floats))
    for c in floats:
        n_bad = int(counts[c][0])
        if n_bad:
            notes.append(
                f"column {c!r}: NaN or infinity in {rows_text(n_bad)}; those values are treated as missing"
            )
    fix = [
        pl.when(pl.col(c).is_finite()).then(pl.col(c)).otherwise(None).alias(c)
        for c in floats
        if int(counts[c][0])
    ]
    return frame.with_columns(fix) if fix else frame


def _short_rows(
    path: Path,
    fmt: Format,
    sep: str,
    frame: pl.DataFrame | pl.LazyFrame,
    notes: list[str],
    src: Source | None = None,
) -> list[int]:
    """Rows with too few fields (polars fills them with missing values) and blank lines, to set
    aside. Only searched for when the last column has missing values (a short row or a blank
    line always leaves it empty)."""
    names = frame.collect_schema().names()
    if fmt == "parquet" or int(_collect(frame.select(pl.col(names[-1]).null_count()))[names[-1]][0]) == 0:
        return []
    return set_aside_note(*ragged_rows(path, fmt, sep, len(names), src), notes)


@dataclass(frozen=True)
class TextLayout:
    """How :func:`load_dataset` reads a file: its format, and for text its separator (sniffed
    from the first lines, :data:`WHITESPACE` for runs of spaces), whether its head is UTF-8 and
    whether a data line follows the header. ``stamp`` is the file's (size, mtime) before it was
    sniffed: :func:`load_dataset` reuses the layout only while the stamp is unchanged."""

    fmt: Format
    sep: str
    utf8: bool
    has_rows: bool
    stamp: tuple[int, int]
    cr: bool = False
    """Lines end with a carriage return alone (classic Mac OS): read converted in memory."""


def text_layout(path: str | os.PathLike[str]) -> TextLayout:
    """The layout :func:`load_dataset` reads ``path`` with (the header is sniffed here). Another
    engine reading the same file reads it the same way, and passes the layout on to
    ``load_dataset(..., layout=)`` so that the header is sniffed once per open (spark_engine)."""
    path = Path(path)
    stamp = _stamp(path)
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise DataError(f"{path.name} could not be read ({exc.strerror or exc})") from exc
    fmt = format_of(path, magic)
    if fmt == "parquet":
        return TextLayout(fmt, ",", True, True, stamp)
    head = read_head(path, fmt)
    check_binary(path, head)
    cr = cr_only(head)
    if cr:
        head = head.replace(b"\r", b"\n")
    utf8 = is_utf8(head)
    sep, _, has_rows = header(path, head)
    return TextLayout(fmt, sep, utf8, has_rows, stamp, cr)


def _default_lazy(path: Path, fmt: Format) -> bool:
    """Scan lazily when the file is larger than a quarter of the machine's memory."""
    if fmt == "csv.gz":
        return False
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return False
    return path.stat().st_size > memory // 4


def load_dataset(
    path: str | os.PathLike[str],
    *,
    lazy: bool | None = None,
    layout: TextLayout | None = None,
    missing_text: list[str] | None = None,
    declared: Declared | None = None,
    legacy: bool = False,
) -> Dataset:
    """Load a CSV, TSV, .csv.gz or Parquet file. ``lazy=None`` scans lazily only files larger
    than a quarter of memory (gzip files are always read eagerly). ``layout``: the file's
    :func:`text_layout` when the caller has it already (sniffed again if the file has changed).
    A CSV field spelled as one of :data:`MISSING_TEXT` is missing (``missing_text``: other
    spellings, for :meth:`Dataset.earlier_content_fingerprints` only).

    Types (issue 41): a Parquet file is read with the types it declares; only a text file's
    columns are inferred (:func:`_numeric_text`: mostly numbers become numbers). ``declared``
    (a codebook's, a command line's: public) keeps its text columns text, leading zeros and all,
    and reads its day columns in their declared formats. In any file, a text column whose every
    value is a day in an unambiguous spelling becomes a day column (:func:`_days`). ``legacy``:
    the rules of before (numbers inferred in every format, ISO days only, nothing declared), for
    the ledger keys older ledgers hold (:meth:`Dataset.earlier_content_fingerprints`) only.

    Guarantees: returns a Dataset with at least one row and one column, or raises DataError
    (never another exception). Rows or values set aside are counted in ``warnings``: rows with
    the wrong number of fields (set aside), text in a numeric column and NaN/infinity (the value
    becomes missing), all-missing columns (kept, flagged). Schema: see :func:`kind_of_dtype`."""
    try:
        return _load(Path(path), lazy, layout, missing_text, None if legacy else declared or Declared())
    except DataError:
        raise
    except (
        OSError,
        ValueError,
        UnicodeError,
        EOFError,
        csv.Error,
        zlib.error,
        pl.exceptions.PolarsError,
    ) as exc:
        raise DataError(f"{Path(path).name} could not be read: {_first_line(exc)}") from exc


def _load(
    path: Path,
    lazy: bool | None,
    layout: TextLayout | None,
    missing_text: list[str] | None,
    declared: Declared | None,
) -> Dataset:
    """:func:`load_dataset`; ``declared`` None: by the rules of before (``legacy``)."""
    if not path.exists():
        raise DataError(f"{path} does not exist: check the path")
    if not path.is_file():
        raise DataError(f"{path} is not a file: choose a CSV, TSV, .csv.gz or Parquet file")
    stamp = _stamp(path)
    if stamp[0] == 0:
        raise DataError(f"{path.name} is empty (0 bytes): choose a file with a header and rows")
    if layout is None or layout.stamp != stamp:
        layout = text_layout(path)
    # the layout's stamp, taken before the sniff: _finish refuses a file changed since then
    fmt, sep, stamp = layout.fmt, layout.sep, layout.stamp
    notes: list[str] = []
    if fmt != "parquet":
        if not layout.has_rows:
            raise DataError(f"{path.name} has a header but no data rows: nothing to analyse")
        if sep != "," and not path.name.lower().endswith((".tsv", ".tsv.gz", ".tab")):
            notes.append(f"columns are separated by {SEPARATOR_NAMES[sep]} (detected from the first lines)")
    lazy = _default_lazy(path, fmt) if lazy is None else lazy
    if lazy and fmt == "csv.gz":
        raise DataError(f"{path.name} is gzip-compressed and cannot be scanned lazily: decompress it first")
    text = declared.text if declared is not None and fmt != "parquet" else frozenset()
    frame, src, sep, too_many, respelled = _parse_missing(path, layout, lazy, notes, missing_text, text)
    frame = set_aside(frame, too_many or _short_rows(path, fmt, sep, frame, notes, src))
    frame = _clean_columns(path, frame, notes)
    if declared is None:  # legacy: the rules of before
        frame = _non_finite(_iso_dates(_numeric_text(frame, notes)), notes)
        return _finish(path, fmt, frame, notes, stamp, respelled)
    if fmt != "parquet":  # only untyped text is inferred
        frame = _numeric_text(frame, notes, skip=text)
    frame, read = _days(frame, notes, declared, skip=text)
    frame = _non_finite(frame, notes)
    schema = frame.collect_schema()
    strings = frozenset(c for c in visible(schema) if schema[c] == pl.String)
    written = strings if fmt == "parquet" else strings & text
    retyped = bool(read.formats) or _text_may_differ(frame, sorted(written & text))
    reading = Reading(
        written, read.formats, retyped, legacy=(fmt == "parquet" and bool(strings)) or read.legacy
    )
    return _finish(path, fmt, frame, notes, stamp, respelled, reading)


def _parse_missing(
    path: Path,
    layout: TextLayout,
    lazy: bool,
    notes: list[str],
    missing_text: list[str] | None,
    text: Collection[str] = (),
) -> tuple[pl.DataFrame | pl.LazyFrame, Source | None, str, list[int], bool]:
    """:func:`_parse` reading :data:`MISSING_TEXT` as missing (or ``missing_text``), and
    whether a field spelled a missing value as :data:`MISSING_TEXT_V1` does not. The file is
    parsed with the earlier spellings first, which counts the others in the same pass, and
    parsed again with them all only when one was found (with a note): a column of numbers
    and ``N/A`` must be typed by polars' inference as a column of numbers and empty fields is,
    or its key would differ (an integer beyond 2^53 read as a float)."""
    first: list[str] = []
    earlier = missing_text or MISSING_TEXT_V1
    frame, src, csv_sep, too_many, found = _parse(path, layout, lazy, first, earlier, text)
    if missing_text is not None or not found:
        notes += first
        return frame, src, csv_sep, too_many, False
    spelled = ", ".join(f"{m!r} ({n:,})" for m, n in _spellings(frame, found, earlier).items())
    frame, src, csv_sep, too_many, _ = _parse(path, layout, lazy, notes, MISSING_TEXT, text)
    notes.append(f"fields spelled {spelled} are read as missing values (pandas' default spellings)")
    return frame, src, csv_sep, too_many, True


def _parse(
    path: Path,
    layout: TextLayout,
    lazy: bool,
    notes: list[str],
    missing: list[str],
    text: Collection[str] = (),
) -> tuple[pl.DataFrame | pl.LazyFrame, Source | None, str, list[int], dict[str, int]]:
    """The parsed frame, read from the file, or from its text transcoded in memory when it is
    not UTF-8, is delimited by whitespace or ends its lines with CR alone (eagerly: such files
    must fit in memory); with :func:`_read`'s count of the other spellings of a missing value."""
    fmt, sep = layout.fmt, layout.sep
    if layout.utf8 and sep != WHITESPACE and not layout.cr:
        try:
            frame, too_many, found = _read(path, fmt, sep, lazy, notes, missing=missing, text=text)
            return frame, None, sep, too_many, found
        except _NotUtf8:
            pass
    if lazy and layout.cr:
        raise DataError(
            f"{path.name} ends its lines with a carriage return alone (classic Mac OS) and is too "
            "large to convert in memory: re-save it with LF or CRLF line endings"
        )
    if lazy:
        raise DataError(f"{path.name} is too large to read as text that is not UTF-8: re-save it as UTF-8")
    src = transcoded(path, fmt, sep, notes, layout.cr)
    csv_sep = "," if sep == WHITESPACE else sep
    frame, too_many, found = _read(path, fmt, csv_sep, False, notes, src, missing, text)
    return frame, src, csv_sep, too_many, found


def _clean_columns(
    path: Path, frame: pl.DataFrame | pl.LazyFrame, notes: list[str]
) -> pl.DataFrame | pl.LazyFrame:
    """Names in single quotes lose them; columns of lists or structs (no query reads them) are
    left out, with a note; text holding NUL bytes (a binary or corrupt export) is refused."""
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    nested = [c for c, t in schema.items() if t.is_nested() or t == pl.Object]
    if nested:
        if len(nested) == len(schema):
            raise DataError(f"{path.name}: every column holds lists or structs, which no query can read")
        notes.append(
            f"column(s) {', '.join(map(repr, nested))} hold lists or structs, which no query can read; "
            "left out"
        )
        frame = frame.drop(nested)
    names = [c for c in schema.names() if c not in nested]
    quoted = {c: c[1:-1] for c in names if len(c) > 2 and c[0] == c[-1] == "'"}
    if quoted and len(set(names) - set(quoted) | set(quoted.values())) == len(names):
        frame = frame.rename(quoted)
    texts = [c for c in names if schema[c] == pl.String]
    if texts:
        found = _aggregate(
            # on the bytes: the same answer (a NUL is one 0x00 byte in UTF-8, never inside another
            # character), twice as fast as str.contains on 10M short values
            frame,
            (pl.col(quoted.get(c, c)).cast(pl.Binary).bin.contains(b"\x00").any() for c in texts),
        )
        bad = [c for c in found.columns if found[c][0]]
        if bad:
            raise DataError(
                f"{path.name}: column {bad[0]!r} holds NUL bytes, which CSV text never holds: "
                "export the data again as CSV or Parquet"
            )
    return frame


def _finish(
    path: Path,
    fmt: Format,
    frame: pl.DataFrame | pl.LazyFrame,
    notes: list[str],
    stamp: tuple[int, int],
    respelled: bool = False,
    reading: Reading | None = None,
) -> Dataset:
    stats = _collect(
        frame.select(
            pl.len().alias("__n"), *(pl.col(c).null_count() for c in visible(frame.collect_schema()))
        )
    )
    n_rows = int(stats["__n"][0])
    names = [c for c in stats.columns if c != "__n"]
    if not names:
        raise DataError(f"{path.name} has no columns")
    if n_rows == 0:
        raise DataError(f"{path.name} has no usable data rows" + (f" ({'; '.join(notes)})" if notes else ""))
    missing = tuple(int(stats[c][0]) for c in names)
    for c, m in zip(names, missing, strict=True):
        if m == n_rows:
            notes.append(
                f"column {c!r}: all {n_rows:,} rows are missing (a statistic of it counts each at its "
                "declared midpoint)"
            )
    if _stamp(path) != stamp:
        raise DataError(f"{path.name} changed while it was being read: load it again")
    return Dataset(
        path, frame, n_rows, tuple(notes), fmt, stamp, missing, respelled, _reading=reading or Reading()
    )
