"""Grouped sums of a lazily scanned Parquet file from the key columns' dictionary codes
(data/engine/parquet_groups.py): the same cells, counts and clipping counts as the polars path,
the same sums up to the order of addition, and the polars path wherever the shortcut does not
apply (a release's exact sums, row steps, a frame the loader changed, an eager frame)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from dpexplorer.data.engine import POLARS, Filter, GroupedCentredSums, parquet_groups
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import Axis, where

AXES = (Axis("a", categories=("x", "y", "z")), Axis("b", categories=("p", "q")))


def _write(path, rows: int = 20_000, nan: bool = False) -> None:
    """Keys with values outside the categories and missing ones; an integer and a float value
    column with missing values and values beyond the bounds; several row groups."""
    rng = np.random.default_rng(11)
    a = rng.choice(["x", "y", "z", "w", None], rows, p=[0.3, 0.3, 0.2, 0.1, 0.1])
    b = rng.choice(["p", "q", "r", None], rows)
    v = rng.normal(5, 4, rows)
    v[rng.random(rows) < 0.05] = np.nan if nan else 0.0
    frame = pl.DataFrame({"a": a.tolist(), "b": b.tolist(), "v": v, "i": rng.integers(-3, 14, rows)})
    every = pl.int_range(rows)
    missing_v = pl.col("v") if nan else pl.when(every % 13 == 0).then(None).otherwise(pl.col("v"))
    frame = frame.with_columns(
        pl.when(every % 17 == 0).then(None).otherwise(pl.col("i")).alias("i"), missing_v.alias("v")
    )
    frame.write_parquet(path, row_group_size=3_000)


def _polars_path(dataset, request, steps=()):
    original = parquet_groups.grouped_sums
    parquet_groups.grouped_sums = lambda *args: None
    try:
        return POLARS.aggregate(dataset, request, steps)
    finally:
        parquet_groups.grouped_sums = original


@pytest.mark.parametrize("column", ["v", "i"])
@pytest.mark.parametrize("axes", [AXES, AXES[:1]])
@pytest.mark.parametrize(("limit", "batch"), [(parquet_groups.CODES_LIMIT, 1 << 20), (1, 1000)])
def test_the_codes_give_the_polars_paths_answer(tmp_path, column, axes, limit, batch, monkeypatch) -> None:
    """Counted per combination of dictionary codes, or (above the limit) per cell looked up
    first; row groups (3,000 rows) whole, or in slices of a batch's rows."""
    monkeypatch.setattr(parquet_groups, "CODES_LIMIT", limit)
    monkeypatch.setattr(parquet_groups, "BATCH_ROWS", batch)
    _write(tmp_path / "g.parquet")
    dataset = load_dataset(tmp_path / "g.parquet", lazy=True)
    request = GroupedCentredSums(column, 0.0, 10.0, axes)
    assert parquet_groups.grouped_sums(dataset, request, ()) is not None  # the shortcut applies
    coded, expected = POLARS.aggregate(dataset, request), _polars_path(dataset, request)
    assert len(coded) == len(expected) == int(np.prod(request.shape))
    for got, want in zip(coded, expected, strict=True):
        counts = (got.count, got.clipped_low, got.clipped_high)
        assert counts == (want.count, want.clipped_low, want.clipped_high)
        assert got.centred_sum == pytest.approx(want.centred_sum, rel=1e-12, abs=1e-9)
        assert (got.raw_mean is None) == (want.raw_mean is None)
        if got.raw_mean is not None:
            assert got.raw_mean == pytest.approx(want.raw_mean, rel=1e-12)
        assert np.isnan(got.centred_squares) and np.isnan(want.centred_squares)
    assert sum(m.count for m in coded) == 20_000 and coded[-1].count > 0  # "other" x "other" too


def test_the_polars_path_serves_everything_else(tmp_path) -> None:
    _write(tmp_path / "g.parquet")
    _write(tmp_path / "nan.parquet", nan=True)  # the loader turns NaN into missing: a changed frame
    lazy = load_dataset(tmp_path / "g.parquet", lazy=True)
    request = GroupedCentredSums("v", 0.0, 10.0, AXES)
    assert parquet_groups.grouped_sums(lazy, GroupedCentredSums("v", 0.0, 10.0, AXES, exact=True), ()) is None
    assert parquet_groups.grouped_sums(lazy, request, (Filter(where("i") > 3),)) is None
    assert parquet_groups.grouped_sums(load_dataset(tmp_path / "g.parquet", lazy=False), request, ()) is None
    assert parquet_groups.grouped_sums(load_dataset(tmp_path / "nan.parquet", lazy=True), request, ()) is None
    binned = GroupedCentredSums("v", 0.0, 10.0, (Axis("i", edges=(0.0, 5.0, 10.0)),))
    assert parquet_groups.grouped_sums(lazy, binned, ()) is None
