"""Large files: which engine reads a file, and a first look at it before any full scan.

A file whose data would take more than a share of the machine's memory (:data:`LAZY_SHARE`, an
eighth by default, configurable) is scanned lazily and streamed by polars; smaller ones are read into memory.
:func:`peek` reads only the schema and the first rows (a Parquet file's metadata and first row
group; a CSV file's first lines), so the window can show them at once while the row count, the
column summaries and the true answers are computed on a worker."""

from __future__ import annotations

import gzip
import io
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from dpexplorer.data.errors import DataError

if TYPE_CHECKING:
    from dpexplorer.data.load import Dataset, Declared

LAZY_SHARE = 0.125
"""Files whose data would take more than this share of physical memory are scanned lazily
(streaming). An eighth: the data in memory is only the start (a query's working copies, the
sorted column of an order statistic, the views' arrays), and the window should stay within
a few GB on a 16-32 GB machine."""
ESTIMATE_ROWS = 10_000
HEAD_LINE_BYTES = 1 << 20
"""At most this much of one line is read for the first look."""
IN_MEMORY = "polars, in memory"
STREAMING = "polars, streaming scan"


def memory_bytes() -> int | None:
    """Physical memory of the machine, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def in_memory_bytes(path: str | os.PathLike[str]) -> int:
    """About how many bytes the file's data takes in memory, erring high: a CSV's size (text is
    no smaller than its values), a Parquet file's row count (from its metadata) times the size
    per row of its first rows (Parquet is compressed: 374 MB on disk hold 3.7 GB of
    Adult-shaped rows; :func:`row_bytes`)."""
    p = Path(path)
    size = p.stat().st_size
    with open(p, "rb") as fh:
        if fh.read(4) != b"PAR1" and p.suffix.lower() not in (".parquet", ".pq"):
            return size
    try:
        scan = pl.scan_parquet(p)
        rows = int(scan.select(pl.len()).collect().item())
        head = scan.head(ESTIMATE_ROWS).collect()
    except (pl.exceptions.PolarsError, OSError):
        return size  # not readable as Parquet: the loader will say why
    return max(size, int(row_bytes(head) * rows))


VIEW_BYTES, INLINE_BYTES = 16, 12
"""polars holds a text (or binary) value as a 16-byte view, its bytes in a shared buffer only
beyond the first 12 (shorter values live in the view)."""


def row_bytes(head: pl.DataFrame) -> float:
    """Bytes per row of ``head``'s columns in memory: a text or binary value's view and its
    bytes beyond :data:`INLINE_BYTES` (polars' ``estimated_size`` counts about 2.8 bytes per
    short text value: a 100M-row file of an integer, a 3-letter text and a float was estimated
    at 1.9 GB and took 3.3 GB), polars' estimate for the other columns (exact for fixed-width
    values), and a validity bit per value."""
    if head.height == 0:
        return 0.0
    total = head.width * head.height / 8
    for column in head.iter_columns():
        if column.dtype in (pl.String, pl.Binary):
            lengths = column.str.len_bytes() if column.dtype == pl.String else column.bin.size()
            total += VIEW_BYTES * head.height + float(lengths.filter(lengths > INLINE_BYTES).sum() or 0)
        else:
            total += column.estimated_size()
    return total / head.height


def should_scan(path: str | os.PathLike[str], share: float = LAZY_SHARE) -> bool:
    """True when the file's data would take more than ``share`` of memory
    (:func:`in_memory_bytes`) and it can be scanned (not gzip)."""
    p = Path(path)
    memory = memory_bytes()
    if memory is None or p.name.lower().endswith(".gz"):
        return False
    try:
        return in_memory_bytes(p) > memory * share
    except OSError:
        return False


def open_file(
    path: str | os.PathLike[str], share: float = LAZY_SHARE, declared: Declared | None = None
) -> Dataset:
    """The file loaded for the polars engine (:func:`dpexplorer.data.load.load_dataset`, with
    the types ``declared``), in memory or, when :func:`should_scan` says it is large (at
    ``share``), scanned lazily and streamed. Imports only the loader (not the engine package):
    the release CLI calls it on a thread from its start, so that polars reads while the rest is
    imported."""
    from dpexplorer.data.load import load_dataset

    return load_dataset(path, lazy=should_scan(path, share), declared=declared)


@dataclass(frozen=True, eq=False)
class Peek:
    """The first look at a file: its size, whether it will be streamed (and by which engine),
    its columns as polars reads them and its first rows (NON-PRIVATE: the steward's view)."""

    path: Path
    size_bytes: int
    lazy: bool
    engine: str
    schema: pl.Schema
    preview: pl.DataFrame


def peek(path: str | os.PathLike[str], rows: int = 200, share: float = LAZY_SHARE) -> Peek:
    """Schema and first ``rows`` rows of a CSV/TSV/Parquet file without reading the rest.
    DataError if polars cannot read even that (loading the file then says why in full)."""
    p = Path(path)
    lazy = should_scan(p, share)
    try:
        head = _head(p, rows)
        size = p.stat().st_size
    except (pl.exceptions.PolarsError, OSError, ValueError, EOFError, zlib.error) as exc:
        # zlib.error: a .csv.gz whose compressed stream is corrupt (gzip raises it, not OSError)
        raise DataError(
            f"{p.name} could not be read: {str(exc).strip().splitlines()[0] or type(exc).__name__}"
        ) from exc
    return Peek(p, size, lazy, STREAMING if lazy else IN_MEMORY, head.schema, head)


def _head(p: Path, rows: int) -> pl.DataFrame:
    with open(p, "rb") as fh:
        magic = fh.read(4)
    if magic == b"PAR1" or p.suffix.lower() in (".parquet", ".pq"):
        return pl.scan_parquet(p).head(rows).collect()
    opener = gzip.open if magic.startswith(b"\x1f\x8b") else open
    with opener(p, "rb") as fh:  # only the header and ``rows`` lines are read (polars would parse ahead)
        lines = [fh.readline(HEAD_LINE_BYTES) for _ in range(rows + 1)]
    if b"\r" in lines[0] and b"\n" not in lines[0]:  # CR alone ends a line (the loader's cr_only)
        lines = [line + b"\n" for line in lines[0].split(b"\r") if line][: rows + 1]
    text = b"".join(lines)
    first = lines[0].decode("utf-8", errors="replace")
    tab = p.name.lower().endswith((".tsv", ".tsv.gz", ".tab"))
    sep = "\t" if tab else max((",", "\t", ";", "|"), key=first.count)  # the loader's rule
    from dpexplorer.data.load import MISSING_TEXT  # as the loader reads them (it is loaded next)

    return pl.read_csv(
        io.BytesIO(text),
        separator=sep,
        infer_schema_length=rows,
        truncate_ragged_lines=True,
        null_values=MISSING_TEXT,
    )
