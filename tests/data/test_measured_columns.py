"""Issue 32: a statistic's applicability is decided by the query, never by the values. A CSV
column whose cells are all empty is inferred as text, one value makes it numeric: a mean of it
was refused ("holds text") on the first file and released on the second. Now a statistic with
declared bounds measures any column as numbers (a cell that is not a number is missing, counted
at the declared midpoint as every missing value is), on every engine."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from dpexplorer.cli import main
from dpexplorer.data.engine import engine_of
from dpexplorer.data.engine.base import ClippedMoments, OrderWindow
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict

MEAN_Y = {"type": "mean", "column": "y", "lower": 0, "upper": 10}


def _csv(tmp_path: Path, name: str, ys: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("x,y\n" + "".join(f"{i},{y}\n" for i, y in enumerate(ys)))
    return path


@pytest.mark.parametrize(
    "ys",
    [["", "", ""], ["", "", "4"], ["abc", "def", "4"], ["1", "2", "3"], ["2021-01-01", "2021-01-02", ""]],
    ids=["all empty", "one value", "mostly text", "numbers", "dates"],
)
def test_a_mean_applies_whatever_the_values(tmp_path: Path, capsys, ys: list[str]) -> None:
    data = _csv(tmp_path, "d.csv", ys)
    dataset = load_dataset(data)
    query_from_dict(MEAN_Y).check(dataset.schema)  # no refusal, whatever type was inferred
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"query": MEAN_Y, "mechanism": "laplace", "parameters": {"epsilon": 0.5}}]))
    args = ["release", str(plan), "--data", str(data), "--out", str(tmp_path / "out")]
    assert main([*args, "--ledger", str(tmp_path / "l.sqlite"), "--budget-epsilon", "1"]) == 0, (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("lazy", [False, True])
def test_text_is_measured_as_numbers_and_the_rest_as_missing(tmp_path: Path, lazy: bool) -> None:
    """y = abc, ' 4 ', '', 7.5: read as missing, 4, missing, 7.5; missing counts at the midpoint
    (5): the moments equal those of the numeric column with the same missing cells."""
    text = load_dataset(_csv(tmp_path, "t.csv", ["abc", " 4 ", "", "7.5", "zz"]), lazy=lazy)
    numbers = load_dataset(_csv(tmp_path, "n.csv", ["", "4", "", "7.5", ""]), lazy=lazy)
    assert text.schema["y"] == pl.String and numbers.schema["y"].is_float()
    request = ClippedMoments("y", 0.0, 10.0)
    got, want = engine_of(text).aggregate(text, request), engine_of(numbers).aggregate(numbers, request)
    assert got == want
    assert (got.n, got.total) == (5, 5 + 4 + 5 + 7.5 + 5)
    window = OrderWindow("y", 0.0, 10.0, 0.5)
    got_window, want_window = (
        engine_of(text).aggregate(text, window),
        engine_of(numbers).aggregate(numbers, window),
    )
    assert repr(got_window) == repr(want_window) and "values=array([4. , 5. , 5. , 5. , 7.5])" in repr(
        got_window
    )


def test_a_date_column_is_missing_as_a_number(tmp_path: Path) -> None:
    dates = load_dataset(_csv(tmp_path, "d.csv", ["2021-01-01", "2021-01-02"]))
    assert dates.schema["y"] == pl.Date
    moments = engine_of(dates).aggregate(dates, ClippedMoments("y", 0.0, 10.0))
    assert (moments.n, moments.total) == (2, 10.0)  # both at the midpoint 5, not days since 1970


def test_the_dataset_itself_is_unchanged(tmp_path: Path) -> None:
    text = load_dataset(_csv(tmp_path, "t.csv", ["abc", "4"]))
    before = text.content_fingerprint
    engine_of(text).aggregate(text, ClippedMoments("y", 0.0, 10.0))
    assert text.schema["y"] == pl.String and text.content_fingerprint == before


def test_a_binned_histogram_reads_text_as_numbers(tmp_path: Path) -> None:
    """Bins by declared edges on a column inferred as text: numbers fall in their bins, the rest
    in the missing cell, as on the numeric column with the same missing cells."""
    from dpexplorer.data.engine.base import CellCounts
    from dpexplorer.data.queries import Axis

    text = load_dataset(_csv(tmp_path, "t.csv", ["abc", "1", "", "7.5", "zz", "3"]))
    numbers = load_dataset(_csv(tmp_path, "n.csv", ["", "1", "", "7.5", "", "3"]))
    axis = Axis("y", edges=(0.0, 2.0, 10.0))
    request = CellCounts((axis,))
    counts = engine_of(text).aggregate(text, request)
    assert counts.tolist() == engine_of(numbers).aggregate(numbers, request).tolist() == [1.0, 2.0, 3.0]
