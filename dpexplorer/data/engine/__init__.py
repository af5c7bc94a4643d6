"""Engines: the one interface through which the data layer touches rows (DESIGN.md, Engines).

``engine_of(dataset)`` is the engine that evaluates requests on ``dataset``: the dataset's own
``engine`` attribute when it has one (a Spark table), the embedded polars engine otherwise.
The contract is in :mod:`.base`; implementations in :mod:`.polars_engine` and
:mod:`.spark_engine` (pyspark, an extra: imported only when a Spark dataset is opened)."""

from __future__ import annotations

import os
from typing import Any

from dpexplorer.data.engine import base
from dpexplorer.data.engine.base import *  # noqa: F403  (the contract's names: base.__all__)
from dpexplorer.data.engine.base import Engine
from dpexplorer.data.engine.polars_engine import POLARS, PolarsEngine
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import Declared

ENGINES = ("polars", "spark")
SPARK_MISSING = 'the Spark engine needs pyspark and a Java runtime: pip install "dpexplorer[spark]"'


def engine_of(dataset: Any) -> Engine:
    """The engine that answers requests on ``dataset``."""
    engine = getattr(dataset, "engine", None)
    return engine if isinstance(engine, Engine) else POLARS


def open_dataset(
    source: str | os.PathLike[str],
    engine: str = "polars",
    *,
    spark_master: str | None = None,
    declared: Declared | None = None,
) -> Any:
    """Open ``source`` for ``engine``: "polars" loads a file (:func:`dpexplorer.data.scan.open_file`:
    streamed when it is large); "spark" opens a Parquet/CSV path or a table name on Spark
    (``spark_master``: ``local[*]`` by default, or ``spark://host:port``). DataError otherwise.
    ``declared``: the public facts its types are read with (:class:`dpexplorer.data.load.Declared`:
    a codebook's text columns and day formats)."""
    if engine == "polars":
        from dpexplorer.data.scan import open_file

        return open_file(source, declared=declared)
    if engine != "spark":
        raise DataError(f"unknown engine {engine!r}: use {' or '.join(ENGINES)}")
    try:
        from dpexplorer.data.engine.spark_engine import open_spark
    except ImportError as exc:
        raise DataError(f"{SPARK_MISSING} ({exc})") from exc
    return open_spark(source, spark_master, declared)


__all__ = ["ENGINES", "POLARS", "PolarsEngine", "engine_of", "open_dataset"]
__all__ += base.__all__
