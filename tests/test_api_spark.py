"""The public API on Spark: a pyspark DataFrame and a table name open as datasets with the same
ledger identity as the same rows in polars, and a plan released through them is charged to
that one dataset. Runs on the Spark worker (tests/conftest.py SPARK_TESTS)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import dpexplorer as dpx

ROWS = {"age": [20 + i % 50 for i in range(200)], "city": ["abc"[i % 3] for i in range(200)]}


def test_a_spark_frame_and_table_are_the_polars_dataset(spark, tmp_path: Path) -> None:
    frame = spark.createDataFrame(list(zip(ROWS["age"], ROWS["city"], strict=True)), "age long, city string")
    in_polars = dpx.open_dataset(pl.DataFrame(ROWS))
    on_spark = dpx.open_dataset(frame)
    assert on_spark.format == "spark"
    assert on_spark.content_fingerprint == in_polars.content_fingerprint
    frame.createOrReplaceTempView("dpx_api_people")
    by_name = dpx.open_dataset("dpx_api_people", engine="spark")
    assert by_name.content_fingerprint == in_polars.content_fingerprint
    mean = dpx.Mean("age", 0, 100)
    polars_view = dpx.explore(in_polars, mean, "laplace", {"epsilon": 1.0})
    spark_view = dpx.explore(by_name, mean, "laplace", {"epsilon": 1.0})
    assert spark_view.accuracy.ci_halfwidth == pytest.approx(polars_view.accuracy.ci_halfwidth, rel=1e-12)
    ledger = tmp_path / "ledger.sqlite"
    dpx.set_budget(in_polars, 1.0, ledger=ledger)
    plan = dpx.Plan([dpx.Measurement(dpx.Count(), "laplace", {"epsilon": 0.25})])
    dpx.release_plan(on_spark, plan, out=tmp_path / "out", ledger=ledger)
    assert dpx.remaining_budget(in_polars, ledger=ledger) == pytest.approx(0.75)
