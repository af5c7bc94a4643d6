"""Grouped sums of a Parquet file by text categories, from the key columns' dictionary codes.

duckdb groups a Parquet text column about 1.5x faster than polars' plain ``group_by`` does
(issue 17's scale benchmark: 100M rows, 14 occupations): polars decodes every string, then
hashes it. The column is stored dictionary-encoded, so its codes say the group already: read
with pyarrow's ``read_dictionary`` a row group at a time, the rows are summed per dictionary
code by ``np.bincount`` and a row group's few distinct strings mapped to cells once. On the
benchmark's 100M rows (medians of 5, interleaved, fresh processes) this takes 1.30 s on two
threads against polars' plain group-by 1.70 s and duckdb's 1.22 s (the polars path with the
app's aggregates: 2.4-2.8 s).

Used by :class:`~dpexplorer.data.engine.polars_engine.PolarsEngine` for an exploration's
:class:`~dpexplorer.data.engine.base.GroupedCentredSums` only (:func:`grouped_sums`: not exact,
no row steps, a lazily scanned Parquet file that the loader did not transform, every axis text
categories over a text column, a numeric value column); everything else, and every release
(exact sums), takes the polars path. Same cells and counts; the float sums are added in another
order (exploration only)."""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from dpexplorer.data.engine.base import GroupedCentredSums, RowStep

AGGREGATES = ("n", "s", "low", "high", "excess")
"""Per cell: rows, sum of the clipped value minus the midpoint, rows below and above the bounds,
and what clipping took off those rows (the unclipped value minus the clipped one, summed: the
unclipped sum is then s + n * midpoint + excess, without a third pass over every row)."""


def grouped_sums(dataset: Any, request: GroupedCentredSums, steps: tuple[RowStep, ...]) -> list[dict] | None:
    """The rows of :func:`~dpexplorer.data.engine.polars_engine.centred_moments` ("cell", "n",
    "s", "low", "high", "mean"), one per non-empty cell, or None when this path does not apply
    (module docstring) or pyarrow is not installed."""
    if not _applies(dataset, request, steps):
        return None
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return None
    groups = list(range(pq.ParquetFile(dataset.path).metadata.num_row_groups))
    threads = max(1, min(os.cpu_count() or 1, 4, len(groups)))
    shares = [groups[i::threads] for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        parts = list(pool.map(lambda share: _sums(dataset.path, request, share), shares))
    totals = sum(parts[1:], parts[0]) if parts else np.zeros((len(AGGREGATES), int(np.prod(request.shape))))
    unclipped = totals[1] + totals[0] * request.midpoint + totals[4]
    return [
        {
            "cell": int(cell),
            "n": int(totals[0, cell]),
            "s": float(totals[1, cell]),
            "low": int(totals[2, cell]),
            "high": int(totals[3, cell]),
            "mean": float(unclipped[cell] / totals[0, cell]),
        }
        for cell in np.flatnonzero(totals[0] > 0)
    ]


def _applies(dataset: Any, request: GroupedCentredSums, steps: tuple[RowStep, ...]) -> bool:
    if steps or request.exact or not dataset.lazy or dataset.format != "parquet" or not request.axes:
        return False
    schema = dataset.schema
    # a dictionary value is looked up as it is written: right for text and days (a day cell is
    # exactly its ISO text), not for a number ("3" also matches "3.0" and " 3")
    text_axes = all(
        a.categories is not None
        and all(isinstance(c, str) for c in a.categories)
        and "number" not in a.kinds
        and schema.get(a.column) == pl.String
        for a in request.axes
    )
    value = schema.get(request.column)
    numeric = value is not None and (value.is_integer() or value.is_float())
    # the loader adds no step to a clean Parquet scan (NaN as missing, text made numeric, dates):
    # the file's own columns are then the dataset's
    plain = dataset.frame.explain(optimized=False) == pl.scan_parquet(dataset.path).explain(optimized=False)
    return text_axes and numeric and plain


def _sums(path: Any, request: GroupedCentredSums, groups: list[int]) -> np.ndarray:
    """:data:`AGGREGATES` per cell over the row groups ``groups`` (one thread's share), read a
    row group at a time with ``pre_buffer`` off. Measured on the benchmark's file (one thread,
    then two): batches that span row groups are concatenated by pyarrow (2.2 s against 1.4 s);
    the dataset API's fragments decode in 1.6 s of CPU and 1.0 s on two threads, these in 1.3 s
    and 0.66 s; pre-buffering faults in new pages on every call."""
    import pyarrow.parquet as pq

    keys = [a.column for a in request.axes]
    file = pq.ParquetFile(path, read_dictionary=keys, pre_buffer=False)
    out = np.zeros((len(AGGREGATES), int(np.prod(request.shape))))
    scratch = _Scratch.allocate(BATCH_ROWS)
    for group in groups:
        table = file.read_row_group(group, columns=[*keys, request.column], use_threads=False)
        for batch in table.to_batches(max_chunksize=BATCH_ROWS):
            _add_batch(out, batch, request, scratch.rows(batch.num_rows))
    return out


BATCH_ROWS = 1 << 20
"""Rows of a batch at most (a row group of more rows is summed a slice at a time)."""


CODES_LIMIT = 1 << 16
"""Up to this many combinations of the key columns' dictionary entries in a batch, its rows are
counted per combination (their codes, no per-row lookup) and the counts mapped to cells after;
above, each row's cell is looked up first."""


@dataclass(frozen=True)
class _Scratch:
    """A thread's per-row work arrays, allocated once (:meth:`allocate`): a fresh array per
    batch made the C allocator hand pages back and fault them in again, batch after batch
    (287,000 page faults on the benchmark's file, against about 5,000 with the arrays kept)."""

    codes: np.ndarray
    centred: np.ndarray
    outside: np.ndarray

    @classmethod
    def allocate(cls, rows: int) -> _Scratch:
        return cls(np.empty(rows, dtype=np.intp), np.empty(rows), np.empty(rows, dtype=bool))

    def rows(self, n: int) -> _Scratch:
        """Views of the first ``n`` rows of each array."""
        return _Scratch(self.codes[:n], self.centred[:n], self.outside[:n])


def _add_batch(out: np.ndarray, batch: Any, request: GroupedCentredSums, scratch: _Scratch) -> None:
    """Adds one record batch's :data:`AGGREGATES` to ``out``: bincounts of the rows and of the
    centred clipped values, and of the (few) rows outside the bounds apart, over each row's
    combination of key codes (:func:`_codes`), then added to the cells of those combinations."""
    import pyarrow as pa

    cell_of = _codes(batch, request, scratch.codes)
    codes, size = scratch.codes, cell_of.size
    value = batch.column(len(request.axes)).cast(pa.float64(), safe=False).fill_null(request.midpoint)
    raw = value.to_numpy(zero_copy_only=False)  # (no nulls left: a view of arrow's buffer)
    centred = np.clip(raw, request.lower, request.upper, out=scratch.centred)
    centred -= request.midpoint
    per_code = np.zeros((len(AGGREGATES), size))
    per_code[0] = np.bincount(codes, minlength=size)
    per_code[1] = np.bincount(codes, weights=centred, minlength=size)
    for row, compare, bound in ((2, np.less, request.lower), (3, np.greater, request.upper)):
        rows = np.flatnonzero(compare(raw, bound, out=scratch.outside))
        per_code[row] = np.bincount(codes[rows], minlength=size)
        per_code[4] += np.bincount(codes[rows], weights=raw[rows] - bound, minlength=size)
    for row in range(len(AGGREGATES)):
        out[row] += np.bincount(cell_of, weights=per_code[row], minlength=out.shape[1])


def _codes(batch: Any, request: GroupedCentredSums, codes: np.ndarray) -> np.ndarray:
    """Writes each row's combination of the key columns' dictionary codes (a missing key: one
    code past the dictionary) to ``codes`` and returns the cell of each combination; when there
    are more than :data:`CODES_LIMIT` combinations, writes each row's cell and returns the
    identity instead."""
    import pyarrow as pa

    digits, tables = [], []
    for j, axis in enumerate(request.axes):
        column = batch.column(j)
        if not pa.types.is_dictionary(column.type):  # (a column the file does not dictionary-encode)
            column = column.dictionary_encode()
        lookup = _positions(axis.categories)
        other = len(lookup)
        tables.append(np.array([lookup.get(v, other) for v in column.dictionary.to_pylist()] + [other]))
        indices = column.indices.fill_null(len(column.dictionary)) if column.null_count else column.indices
        digits.append(indices.to_numpy(zero_copy_only=False))
    strides = np.cumprod((1, *request.shape[:0:-1]))[::-1]
    combined = int(np.prod([t.size for t in tables])) <= CODES_LIMIT
    cell_of = np.zeros(1, dtype=np.intp)
    codes[:] = 0
    for table, digit, stride in zip(tables, digits, strides, strict=True):
        if combined:  # combinations numbered with this axis's code as the last digit
            cell_of = np.add.outer(cell_of, table * int(stride)).reshape(-1)
            codes *= table.size
            codes += digit
        else:
            codes += np.take(table * int(stride), digit)
    return cell_of if combined else np.arange(int(np.prod(request.shape)))


@functools.lru_cache(maxsize=8)
def _positions(categories: tuple[str, ...]) -> dict[str, int]:
    """Each category's index on its axis, built once per category list, not once per batch
    (a list may hold 10,000 categories; a file, hundreds of batches). Read only."""
    return {c: i for i, c in enumerate(categories)}
