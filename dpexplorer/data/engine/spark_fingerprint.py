"""The content fingerprint of a Spark table: the same ``content-v2`` key as
:func:`dpexplorer.data.load.content_fingerprint` of the same data read by polars, so that one
dataset has one budget in the ledger whatever engine reads it.

It is one aggregation on the executors: each partition's rows are read into polars frames of
:data:`CHUNK_ROWS` rows (typed by the table's polars schema) and hashed by
:func:`dpexplorer.data.identity.batch_sums`, the very code the polars path runs, so the two
cannot drift apart; each chunk sends back three numbers (rows and the two 64-bit lane sums),
added modulo 2^64 on the driver. A sum is order-independent: partitioning, row order and the
number of executors do not change it. The executors need polars and numpy; the rows travel as
Python values (an RDD), not Arrow, which in pyspark 4 would need pandas too."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

import polars as pl

from dpexplorer.data.identity import Sums, batch_sums, digest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

CHUNK_ROWS = 50_000
"""Rows read into one polars frame on an executor."""


def _chunk_sums(schema: pl.Schema) -> Any:
    """The function each partition runs: (rows, lane A sum, lane B sum) per chunk of rows."""

    def sums(rows: Iterable[Any]) -> Iterator[tuple[int, int, int]]:
        rows = iter(rows)
        while chunk := [tuple(row) for row in islice(rows, CHUNK_ROWS)]:
            part = batch_sums(pl.DataFrame(chunk, schema=schema, orient="row"))
            yield part.n, part.a, part.b

    return sums


def spark_content_fingerprint(frame: DataFrame, schema: pl.Schema) -> str:
    """:func:`~dpexplorer.data.load.content_fingerprint` of ``frame``, whose columns are read as
    ``schema`` (the polars types of :attr:`SparkDataset.schema`), computed on Spark."""
    total = Sums()
    for n, a, b in frame.rdd.mapPartitions(_chunk_sums(schema)).collect():
        total.add(Sums(n, a, b))
    return digest(schema, total.n, (total.a, total.b))
