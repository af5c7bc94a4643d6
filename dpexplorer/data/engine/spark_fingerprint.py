"""The content fingerprint of a Spark table: the same ``content-v2`` key as
:func:`dpexplorer.data.load.content_fingerprint` of the same data read by polars, so that one
dataset has one budget in the ledger whatever engine reads it.

It is one pass on the executors: each partition's rows reach Python as Arrow record batches
(``mapInArrow``; no row becomes a Python object), each batch becomes a polars frame typed by
the table's polars schema and is hashed by :func:`dpexplorer.data.identity.batch_sums`, the
very code the polars path runs (its compiled kernels from a partition of
:data:`~dpexplorer.data.fingerprints.KERNEL_CELLS` cells on), so the two cannot drift apart;
each partition sends back three numbers (rows and the two 64-bit lane sums), added modulo 2^64
on the driver. A sum is order-independent: partitioning, row order and the number of executors
do not change it.

Arrow carries the types of :data:`ARROW_TYPES` as polars reads them (integers widened to 64
bits, a float to a double exactly as Python's float does, text, days, booleans); a table with
any other column type (decimals, timestamps, ...) is hashed from Python values instead
(``rdd.mapPartitions``, :data:`CHUNK_ROWS` rows a frame, as before Arrow), which reproduces the
polars reading of those values. The executors need polars and numpy; Arrow batches also
pandas (pyspark's map functions check for it), so without pandas the Python values serve."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

import polars as pl

from dpexplorer.data.fingerprints import KERNEL_CELLS
from dpexplorer.data.identity import Sums, batch_sums, digest
from dpexplorer.data.identity_scheme import MASK64

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

CHUNK_ROWS = 50_000
"""Rows read into one polars frame on an executor (from Python values)."""
ARROW_TYPES = (
    *("BooleanType", "ByteType", "ShortType", "IntegerType", "LongType"),
    *("FloatType", "DoubleType", "StringType", "DateType"),
)
"""Spark types whose Arrow form polars reads as the same values as from Python's."""
SUMS = "n long, a long, b long"


def _signed(x: int) -> int:
    """A 64-bit lane sum as a Spark long (two's complement)."""
    return x - (1 << 64) if x >= 1 << 63 else x


def _chunk_sums(schema: pl.Schema) -> Any:
    """The function each partition runs on Python values: (rows, lane A sum, lane B sum) per
    chunk of rows."""

    def sums(rows: Iterable[Any]) -> Iterator[tuple[int, int, int]]:
        rows = iter(rows)
        while chunk := [tuple(row) for row in islice(rows, CHUNK_ROWS)]:
            part = batch_sums(pl.DataFrame(chunk, schema=schema, orient="row"))
            yield part.n, part.a, part.b

    return sums


def _arrow_sums(schema: pl.Schema, kernel_cells: int) -> Any:
    """The function each partition runs on Arrow batches: one batch of one row, the
    partition's (rows, lane A sum, lane B sum) with the sums as signed longs; the compiled
    kernels hash a partition's batches from ``kernel_cells`` cells on (numpy before)."""

    def sums(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        total = Sums()
        for batch in batches:
            if batch.num_rows:
                frame = pl.DataFrame(pl.from_arrow(batch))
                frame.columns = list(schema.names())  # (the batch's are positional)
                load = (total.n + frame.height) * frame.width >= kernel_cells
                total.add(batch_sums(frame.cast(schema), load=load))
        yield pa.RecordBatch.from_pydict(
            {"n": [total.n], "a": [_signed(total.a)], "b": [_signed(total.b)]},
            schema=pa.schema([("n", pa.int64()), ("a", pa.int64()), ("b", pa.int64())]),
        )

    return sums


def _arrow_ready(frame: DataFrame) -> bool:
    """Whether every column's type goes by Arrow (:data:`ARROW_TYPES`) and pandas is there."""
    if any(type(f.dataType).__name__ not in ARROW_TYPES for f in frame.schema.fields):
        return False
    return importlib.util.find_spec("pandas") is not None  # pyspark's mapInArrow requires it


def spark_content_fingerprint(frame: DataFrame, schema: pl.Schema, kernel_cells: int = KERNEL_CELLS) -> str:
    """:func:`~dpexplorer.data.load.content_fingerprint` of ``frame``, whose columns are read as
    ``schema`` (the polars types of :attr:`SparkDataset.schema`), computed on Spark (by Arrow
    batches, the compiled kernels hashing a partition from ``kernel_cells`` cells on)."""
    total = Sums()
    if _arrow_ready(frame):
        # positional names: mapInArrow reads a name with a dot as a path into a struct
        positional = frame.toDF(*(f"_{i}" for i in range(len(frame.columns))))
        for row in positional.mapInArrow(_arrow_sums(schema, kernel_cells), SUMS).collect():
            total.add(Sums(int(row["n"]), int(row["a"]) & MASK64, int(row["b"]) & MASK64))
    else:
        for n, a, b in frame.rdd.mapPartitions(_chunk_sums(schema)).collect():
            total.add(Sums(n, a, b))
    return digest(schema, total.n, (total.a, total.b))
