"""Large files: the first look (schema and first rows only) and the choice of engine by size."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.engine import POLARS
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import load_dataset
from dpexplorer.data.scan import IN_MEMORY, STREAMING, peek, should_scan


def test_peek_reads_only_the_head(tmp_path: Path):
    p = tmp_path / "big.csv"
    good = "".join(f"{i},x{i % 3}\n" for i in range(300))
    p.write_text("n,c\n" + good + "1,2,3,4,5\n" * 50 + "text,where a number was\n")
    look = peek(p, rows=200)
    assert look.schema == pl.Schema({"n": pl.Int64, "c": pl.String})
    assert look.preview.height == 200 and look.preview["n"][199] == 199
    assert look.size_bytes == p.stat().st_size


def test_peek_of_an_unreadable_file_is_a_data_error(tmp_path: Path):
    p = tmp_path / "x.parquet"
    p.write_bytes(b"PAR1 not really")
    with pytest.raises(DataError, match=r"x\.parquet could not be read"):
        peek(p)


def test_peek_of_parquet_and_the_engine_chosen_by_size(tmp_path: Path):
    adult = default_dataset_path()
    look = peek(adult, rows=5, share=0.25)
    assert look.preview.height == 5 and "age" in look.schema and look.engine == IN_MEMORY and not look.lazy
    tiny_share = 1e-12  # every file is "larger than memory" at this share
    assert should_scan(adult, tiny_share) and peek(adult, 5, tiny_share).engine == STREAMING
    gz = tmp_path / "a.csv.gz"
    gz.write_bytes(b"\x1f\x8b")
    assert not should_scan(gz, tiny_share)  # gzip cannot be scanned lazily


def test_a_streamed_dataset_gets_estimated_distinct_counts_in_one_pass():
    streamed = load_dataset(default_dataset_path(), lazy=True)
    eager = load_dataset(default_dataset_path(), lazy=False)
    summary, exact = POLARS.summary(streamed), POLARS.summary(eager)
    assert streamed.columns is summary.columns  # the window shows the numbers computed here
    assert [c.missing for c in summary.columns] == [c.missing for c in exact.columns]
    for approx, true in zip(summary.columns, exact.columns, strict=True):
        assert abs(approx.distinct - true.distinct) <= 0.15 * true.distinct  # HyperLogLog: 13% off on fnlwgt
    assert summary.ranges == exact.ranges and summary.top_values == exact.top_values
    assert POLARS.label(streamed) == STREAMING and POLARS.label(eager) == IN_MEMORY


def test_a_parquet_file_is_judged_by_its_size_in_memory(tmp_path: Path):
    from dpexplorer.data.scan import in_memory_bytes

    def held(frame: pl.DataFrame) -> int:  # its buffers, text as views (polars' estimated_size is lower)
        return frame.to_arrow(compat_level=pl.CompatLevel.newest()).nbytes

    adult = default_dataset_path()
    in_memory = held(load_dataset(adult, lazy=False).frame)
    assert adult.stat().st_size < in_memory <= in_memory_bytes(adult) < 1.3 * in_memory
    short = pl.DataFrame(  # 3-letter texts (in their views), long texts, bytes, integers, a missing text
        {
            "g": [f"g{i % 50}" for i in range(30_000)],
            "t": [f"a longer text, number {i:05d}" if i % 3 else None for i in range(30_000)],
            "b": [b"0123456789abcdef"] * 30_000,
            "i": range(30_000),
        }
    )
    short.write_parquet(tmp_path / "s.parquet")
    assert held(short) <= in_memory_bytes(tmp_path / "s.parquet") < 1.3 * held(short)
    p = tmp_path / "a.csv"
    p.write_text("x\n1\n")
    assert in_memory_bytes(p) == p.stat().st_size
