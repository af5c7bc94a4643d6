"""The fingerprints of a loaded dataset: the SHA-256 of its file's bytes, and its identity in the
ledger, the content fingerprint of the parsed table (scheme ``content-v2``, with the earlier
``content-v1`` kept to find what older ledgers filed under it). Both read only the table the
loader publishes to the data layer: the hidden columns of kept text (:data:`KEPT`) are left
out, so keeping them changes no ledger key."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

import polars as pl

from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.data.errors import DataError, first_line
from dpexplorer.data.sniff import CHUNK_BYTES

if TYPE_CHECKING:
    from dpexplorer.data.identity import ColumnPrint, Sums

Kind = Literal["numeric", "categorical", "boolean", "date"]

KEPT = "\x1fkept text of "
"""Prefix of a hidden column: ``KEPT + name`` holds the text of the cells of column ``name`` that
the loader made missing when it read the column as numbers (:func:`_numeric_text`), null
elsewhere. Conditions and categories read it (:meth:`Dataset.with_text`); nothing else sees it:
not the schema, the summaries, the preview nor the fingerprints (the ledger key is unchanged)."""


def visible(names: Iterable[str]) -> list[str]:
    """``names`` without the hidden kept-text columns (:data:`KEPT`)."""
    return [n for n in names if not n.startswith(KEPT)]


def kind_of_dtype(dtype: pl.DataType) -> Kind:
    """numeric for integer/float/decimal types, boolean for Boolean, date for Date, categorical
    otherwise."""
    if dtype.is_numeric():
        return "numeric"
    if dtype == pl.Date:
        return "date"
    return "boolean" if dtype == pl.Boolean else "categorical"


def fingerprint_file(path: str | os.PathLike[str]) -> str:
    """SHA-256 hex digest of the file's bytes, read in 1 MiB chunks (constant memory)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(CHUNK_BYTES):
                digest.update(chunk)
    except OSError as exc:
        raise DataError(f"could not read {path} to fingerprint it: {exc.strerror or exc}") from exc
    return digest.hexdigest()


HASH_BATCH = 1 << 20
"""Rows hashed between two polls of the cancel token (0.01-0.1 s of hashing)."""

HASH_THREADS = 2
"""Threads hashing batches at once (numpy and the kernels release the GIL; the key does not
depend on it)."""

KERNEL_CELLS = 2_000_000
"""From this many cells (rows times columns) the fingerprint loads the compiled kernels if it
can (:func:`dpexplorer.data.identity.kernels`): their load, 0.03 s of CPU a process from their
cached machine code, is what numpy takes for about a million cells (0.04 s of CPU); once
loaded (or preloaded), they hash tables of any size."""


def _streamed(frame: pl.LazyFrame) -> Iterable[pl.DataFrame]:
    """``frame`` in batches where this polars can, else whole; evaluated while iterated (so a
    caller's ``try`` around its loop catches the errors of reading)."""
    if hasattr(frame, "collect_batches"):
        yield from frame.collect_batches()
    else:
        yield frame.collect(engine="streaming")


def content_fingerprint(
    frame: pl.DataFrame | pl.LazyFrame,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
    n_rows: int | None = None,
) -> str:
    """The dataset's identity in the ledger (scheme ``content-v2``,
    :mod:`dpexplorer.data.identity`): 32 hex digits from the column names and kinds and a
    128-bit multiset hash of the rows' canonical form, independent of file format, line endings,
    quoting, how a missing value is spelled (empty, ``""``, ``NA``, ``null``, ``N/A``...: the
    loader's ``MISSING_TEXT``), column order and row order,
    while any changed, added or removed row or column changes it. Vectorised on the columns'
    buffers: compiled kernels (llvmlite), about 0.004 s per million rows of three columns on two
    threads, for a table of :data:`KERNEL_CELLS` cells or more or once loaded; numpy otherwise,
    about 0.09 s per million such rows. A lazy frame is streamed in batches. The Spark engine
    adds the same per-batch sums (:mod:`~dpexplorer.data.engine.spark_fingerprint`).

    Polls ``cancel`` (or the thread's ambient token, :func:`dpexplorer.core.cancel.checkpoint`)
    between batches of :data:`HASH_BATCH` rows and reports the fraction of ``n_rows`` handed to
    the hashing threads (at most two batches each ahead of those hashed) to ``progress``."""
    from dpexplorer.data.identity import digest, kernels

    frame = _without_kept(frame)
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    # a lazy frame streamed in batches where this polars can
    batches = _streamed(frame) if isinstance(frame, pl.LazyFrame) else _chunk_slices(frame)
    known = n_rows if n_rows is not None else frame.height if isinstance(frame, pl.DataFrame) else 0
    width, submitted = max(len(schema), 1), 0
    try:
        with _Pool(HASH_THREADS) as pool:
            for batch in batches:
                for offset in range(0, batch.height, HASH_BATCH):
                    checkpoint(cancel, progress, submitted / n_rows if n_rows else None)
                    rows = batch.slice(offset, HASH_BATCH)
                    submitted += rows.height
                    if max(known, submitted) * width >= KERNEL_CELLS:
                        kernels()  # loaded now (or their preload awaited) if they are not
                    pool.submit(rows)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise DataError(f"could not read the data to fingerprint it: {first_line(exc)}") from exc
    done = pool.done
    return digest(schema, done.n, (done.a, done.b))


def _chunk_slices(frame: pl.DataFrame) -> Iterable[pl.DataFrame]:
    """``frame`` in slices along its chunks when every column has the same ones (a read file's
    usually do), else of :data:`HASH_BATCH` rows: a slice within a chunk reaches numpy and Arrow
    without a copy."""
    lengths = {tuple(frame[c].chunk_lengths()) for c in frame.columns}
    if len(lengths) != 1:
        yield from (frame.slice(i, HASH_BATCH) for i in range(0, frame.height, HASH_BATCH))
        return
    start = 0
    for length in lengths.pop():
        yield frame.slice(start, length)
        start += length


class _Pool:
    """Batches hashed by ``threads`` worker threads (:func:`_hash_sum`), at most two each
    waiting (a streamed file is not read ahead of its hashing); :attr:`done` their total once
    the ``with`` block ends, waiting for every batch; a worker's error is raised there."""

    def __init__(self, threads: int) -> None:
        from concurrent.futures import Future, ThreadPoolExecutor

        from dpexplorer.data.identity import Sums

        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="fingerprint")
        self.pending: list[Future[Sums]] = []
        self.limit = 2 * threads
        self.done = Sums()

    def submit(self, rows: pl.DataFrame) -> None:
        self.pending.append(self.executor.submit(_hash_sum, rows))
        while len(self.pending) > self.limit:
            self.done.add(self.pending.pop(0).result())

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if error is None:
                for future in self.pending:
                    self.done.add(future.result())
        finally:
            for future in self.pending:
                future.cancel()
            self.executor.shutdown(wait=True)


def _without_kept(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """``frame`` without the hidden kept-text columns: the identity reads the loaded values."""
    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    shown = visible(names)
    return frame if len(shown) == len(names) else frame.select(shown)


def _hash_sum(rows: pl.DataFrame) -> Sums:
    """The lane sums of a batch of rows, on one thread (:func:`dpexplorer.data.identity.batch_sums`:
    by the compiled kernels if they are loaded, else numpy)."""
    from dpexplorer.data.identity import batch_sums

    return batch_sums(rows)


def column_fingerprints(
    frame: pl.DataFrame | pl.LazyFrame, cancel: CancelToken | None = None
) -> dict[str, ColumnPrint]:
    """Per column, the fingerprint of the multiset of its cells (:func:`~dpexplorer.data.identity.
    column_print`): the same cell hashes as :func:`content_fingerprint`, summed per column, so
    that a renamed column, a column kept in a projection or moved elsewhere has the same one, and
    whether the column is constant. The ledger keeps them beside the table's key to find the same
    people under another table. A lazy frame is streamed in batches; cancellable between them;
    the compiled kernels serve once loaded (as for the content fingerprint)."""
    from dpexplorer.data.identity import CellSums, Sums, cell_sums, column_print, kernels

    frame = _without_kept(frame)
    batches = _streamed(frame) if isinstance(frame, pl.LazyFrame) else _chunk_slices(frame)
    totals: dict[str, CellSums] = {}
    try:
        for batch in batches:
            for offset in range(0, batch.height, HASH_BATCH):
                checkpoint(cancel)
                rows = batch.slice(offset, HASH_BATCH)
                compiled = kernels() if rows.height * rows.width >= KERNEL_CELLS else kernels(wait=False)
                for name, cells in cell_sums(rows, compiled).items():
                    totals.setdefault(name, CellSums(Sums())).add(cells)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise DataError(f"could not read the data to fingerprint it: {first_line(exc)}") from exc
    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    return {name: column_print(totals.get(name, CellSums(Sums()))) for name in names}


CONTENT_V1 = "content-v1"
"""The ledger key's earlier scheme (one Python SHA-256 per row): kept only to find what older
ledgers filed under it (:func:`content_fingerprint_v1`)."""


def _canonical_v1(name: str, dtype: pl.DataType) -> pl.Expr:
    expr = pl.col(name)
    if dtype.is_numeric():
        expr = expr.cast(pl.Float64)
    expr = expr.cast(pl.String)
    return (expr.str.len_bytes().cast(pl.String) + ":" + expr).fill_null("-")


def content_fingerprint_v1(frame: pl.DataFrame | pl.LazyFrame, cancel: CancelToken | None = None) -> str:
    """The content-v1 key (64 hex digits): SHA-256 of the names and kinds, then the sum modulo
    2^256 of every row's SHA-256 over its canonical text (numbers as Float64 text, length-
    prefixed, missing as ``-``). About 4 s per million rows: computed only to move an older
    ledger's entries to the content-v2 key (:meth:`dpexplorer.release.ledger.Ledger.identify`)."""
    frame = _without_kept(frame)
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    names = sorted(schema.names())
    text = pl.concat_str([_canonical_v1(c, schema[c]) for c in names], separator=",").alias("r")
    batches: Iterable[pl.DataFrame]
    if isinstance(frame, pl.LazyFrame):  # streamed: a large file's text is never held whole
        rows = frame.select(text)
        batches = _streamed(rows)
    else:  # a slice at a time (the whole text at once would double the memory)
        batches = (frame.slice(i, 50_000).select(text) for i in range(0, frame.height, 50_000))
    total = 0
    try:
        for batch in batches:
            checkpoint(cancel)
            total += sum(
                int.from_bytes(hashlib.sha256(t.encode("utf-8")).digest(), "big") for t in batch["r"]
            )
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise DataError(f"could not read the data to fingerprint it: {first_line(exc)}") from exc
    kinds = {c: "categorical" if schema[c] == pl.Date else kind_of_dtype(schema[c]) for c in names}
    header = "\x1e".join(f"{len(c)}:{c}:{kinds[c]}" for c in names)
    digest = hashlib.sha256(f"{CONTENT_V1}\x1d{header}\x1d".encode())
    digest.update((total % (1 << 256)).to_bytes(32, "big"))
    return digest.hexdigest()
