"""How a text file is laid out, read before it is parsed: its format (by magic bytes and name),
its head, its encoding (UTF-8, else Windows-1252 or Latin-1, transcoded in memory), its separator
(sniffed from the first lines) and header, and the rows with the wrong number of fields (set
aside by the loader, :mod:`dpexplorer.data.load`). Every problem is a :class:`DataError`."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import polars as pl

from dpexplorer.data.errors import DataError, first_line

Format = Literal["csv", "csv.gz", "parquet"]

HEAD_BYTES = 1 << 16
CHUNK_BYTES = 1 << 20
SEPARATORS = (",", "\t", ";", "|")
WHITESPACE = " "
"""Separator value meaning "any run of spaces or tabs" (such files are turned into CSV first)."""
SEPARATOR_NAMES = {",": "commas", "\t": "tabs", ";": "semicolons", "|": "pipes", WHITESPACE: "whitespace"}
ENCODING_NAMES = {"cp1252": "Windows-1252 (cp1252)", "latin-1": "Latin-1 (ISO-8859-1)"}
SNIFF_LINES = 20
"""Lines (header included) the delimiter is sniffed from."""


# ---------------------------------------------------------------- file kind, head, header
def format_of(path: Path, magic: bytes) -> Format:
    name = path.name.lower()
    if magic.startswith(b"\x1f\x8b") or name.endswith(".gz"):
        return "csv.gz"
    if magic.startswith(b"PAR1") or name.endswith((".parquet", ".pq")):
        return "parquet"
    return "csv"


Source = Path | bytes
"""Where text is read from: the file, or its text already decoded and re-encoded as UTF-8 CSV in
memory (a file in another encoding, or delimited by whitespace)."""


def open_text_bytes(src: Source, fmt: Format) -> io.BytesIO | gzip.GzipFile | io.BufferedReader:
    if isinstance(src, bytes):
        return io.BytesIO(src)
    return gzip.open(src, "rb") if fmt == "csv.gz" else open(src, "rb")


def read_head(path: Path, fmt: Format) -> bytes:
    try:
        with open_text_bytes(path, fmt) as fh:
            return fh.read(HEAD_BYTES)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"{path.name} could not be read as {fmt} (is it corrupt?): {exc}") from exc


def check_binary(path: Path, head: bytes) -> None:
    """DataError for binary content (NUL bytes) in the first 64 KiB."""
    if b"\x00" in head:
        raise DataError(
            f"{path.name} looks like a binary file (it contains NUL bytes), not CSV/TSV text: "
            "export the data as CSV or Parquet"
        )


def is_utf8(head: bytes) -> bool:
    """Whether the head (cut at its last full line when it is the 64 KiB head) is UTF-8."""
    cut = head if len(head) < HEAD_BYTES else head[: head.rfind(b"\n") + 1]
    try:
        cut.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def cr_only(head: bytes) -> bool:
    """Whether the lines of a file whose head is ``head`` end with a carriage return alone
    (classic Mac OS): a CR and no LF in the head. Python's csv module and polars split lines
    at LF only, so such a file read as it is was one line."""
    return b"\r" in head and b"\n" not in head


def transcoded(path: Path, fmt: Format, sep: str, notes: list[str], cr: bool = False) -> bytes:
    """The whole file as UTF-8 CSV text in memory: decoded as UTF-8, else as Windows-1252 (else
    Latin-1, which decodes any byte), with a note; whitespace-delimited lines turned into CSV;
    with ``cr`` (:func:`cr_only`), each carriage return made a line feed."""
    try:
        with open_text_bytes(path, fmt) as fh:
            raw = fh.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"{path.name} could not be read as {fmt} (is it corrupt?): {exc}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        encoding = "cp1252"
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            encoding, text = "latin-1", raw.decode("latin-1")
        notes.append(
            f"read as {ENCODING_NAMES[encoding]} text: the file is not UTF-8 (first at line {line:,}); "
            "re-save it as UTF-8 if a name or category looks wrong"
        )
    if cr:
        text = text.replace("\r", "\n")
    if sep == WHITESPACE:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerows(line.split() for line in text.splitlines() if line.strip())
        text = buffer.getvalue()
    if "\x00" in text:
        raise DataError(
            f"{path.name} contains NUL bytes, which CSV text never holds: "
            "export the data again as CSV or Parquet"
        )
    return text.encode("utf-8")


def _not_utf8(path: Path, data: bytes, pos: int, line_offset: int = 0) -> DataError:
    line = line_offset + data.count(b"\n", 0, pos) + 1
    return DataError(
        f"{path.name}, line {line:,}: byte 0x{data[pos]:02x} is not UTF-8 text: "
        "re-save the file with UTF-8 encoding"
    )


def scan_utf8(path: Path, fmt: Format) -> DataError:
    """Find the first line with bytes that are not UTF-8 (streamed)."""
    decoder_lines = 0
    with open_text_bytes(path, fmt) as fh:
        carry = b""
        while chunk := fh.read(CHUNK_BYTES):
            data = carry + chunk
            cut = data.rfind(b"\n") + 1 or len(data)
            try:
                data[:cut].decode("utf-8")
            except UnicodeDecodeError as exc:
                return _not_utf8(path, data, exc.start, decoder_lines)
            decoder_lines += data.count(b"\n", 0, cut)
            carry = data[cut:]
        with contextlib.suppress(UnicodeDecodeError):
            carry.decode("utf-8")
            return DataError(f"{path.name} could not be decoded as UTF-8 text: re-save it as UTF-8")
        return _not_utf8(path, carry, 0, decoder_lines)


def fields(line: str, sep: str) -> int:
    """Number of fields of one line split at ``sep`` (quotes respected)."""
    if sep == WHITESPACE:
        return len(line.split())
    return len(next(csv.reader([line], delimiter=sep), []))


def sniff_separator(lines: list[str]) -> str:
    """The delimiter of CSV text from its first lines: among comma, tab, semicolon and pipe, the
    one that splits the header into the most fields with as many fields on (nearly) every
    following line; else the one most frequent in the header; else whitespace when it splits
    every line into the same number (> 1) of fields and the data holds numbers; else comma (one
    column)."""
    header, body = lines[0], [line for line in lines[1:SNIFF_LINES] if line.strip()]

    def consistent(sep: str) -> bool:
        width = fields(header, sep)
        agree = sum(fields(line, sep) == width for line in body)
        return width > 1 and agree >= max(1, (len(body) * 9) // 10) if body else width > 1

    fitting = [sep for sep in SEPARATORS if consistent(sep)]
    if fitting:
        return max(fitting, key=lambda sep: fields(header, sep))
    counted = max(SEPARATORS, key=header.count)
    if header.count(counted):
        return counted
    numbers = any(_is_number(field) for line in body for field in line.split())
    # a number in the data: "first name" over rows "John Smith" stays one column of text
    return WHITESPACE if consistent(WHITESPACE) and numbers else ","


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def header(path: Path, head: bytes) -> tuple[str, list[str], bool]:
    """(separator, column names, whether any data line follows the header)."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    if len(head) >= HEAD_BYTES:  # the last line may be cut
        text = text[: text.rfind("\n") + 1]
    first, _, rest = text.partition("\n")
    if not first.strip():
        raise DataError(f"{path.name}: line 1 (the header) is blank: put the column names on the first line")
    name = path.name.lower()
    lines = [line.rstrip("\r") for line in text.splitlines()]
    sep = "\t" if name.endswith((".tsv", ".tsv.gz", ".tab")) else sniff_separator(lines)
    first = first.rstrip("\r")
    names = first.split() if sep == WHITESPACE else next(csv.reader([first], delimiter=sep))
    for i, col in enumerate(names, start=1):
        if not col.strip():
            raise DataError(f"{path.name}, line 1: column {i} has a blank name: give every column a name")
    seen: dict[str, int] = {}
    for i, col in enumerate(names, start=1):
        if col in seen:
            raise DataError(
                f"{path.name}, line 1: columns {seen[col]} and {i} are both named {col!r}: "
                "give every column a different name"
            )
        seen[col] = i
    return sep, names, bool(rest.strip()) or len(head) >= HEAD_BYTES


# ---------------------------------------------------------------- ragged rows
def _field_counts(src: Source, fmt: Format, sep: str) -> Iterator[tuple[int, int]]:
    """(line number, number of fields) of every data record (streamed with the csv module)."""
    with open_text_bytes(src, fmt) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        reader = csv.reader(text, delimiter=sep)
        next(reader, None)
        for record in reader:
            yield reader.line_num, len(record)


def ragged_rows(
    path: Path, fmt: Format, sep: str, expected: int, src: Source | None = None
) -> tuple[list[int], list[str], list[int]]:
    """Row indices (0-based, as polars numbers its rows) with the wrong number of fields, up to
    3 examples, and the indices of blank lines. Polars reads a blank line as a row of missing
    values; it holds no record (Python's csv, pandas and Spark skip it), except in a file of
    one column, where it is how a missing value is written (polars writes it so)."""
    bad: list[int] = []
    blank: list[int] = []
    examples: list[str] = []
    try:
        for row, (line, count) in enumerate(_field_counts(path if src is None else src, fmt, sep)):
            if count == 0:
                if expected > 1:
                    blank.append(row)
            elif count != expected:
                bad.append(row)
                if len(examples) < 3:
                    examples.append(f"line {line:,}: {count} fields, expected {expected}")
    except (OSError, csv.Error, UnicodeDecodeError, EOFError, zlib.error) as exc:
        raise DataError(f"{path.name} could not be checked for ragged rows: {first_line(exc)}") from exc
    return bad, examples, blank


def set_aside_note(bad: list[int], examples: list[str], blank: list[int], notes: list[str]) -> list[int]:
    """Notes on the rows set aside (wrong number of fields; blank lines); their indices."""
    if bad:
        notes.append(f"{rows_text(len(bad))} set aside: wrong number of fields ({'; '.join(examples)})")
    if blank:
        notes.append(f"{len(blank):,} blank line{'' if len(blank) == 1 else 's'} skipped (no record)")
    return sorted(bad + blank)


def set_aside(frame: pl.DataFrame | pl.LazyFrame, rows: list[int]) -> pl.DataFrame | pl.LazyFrame:
    """``frame`` without the rows at these 0-based indices."""
    if not rows:
        return frame
    return frame.with_row_index("__row").filter(~pl.col("__row").is_in(rows)).drop("__row")


def rows_text(n: int) -> str:
    return f"{n:,} row" + ("" if n == 1 else "s")
