"""One rule for the number a cell reads as (dpexplorer/data/cells.py), whatever type the loader
inferred for its column. The attacker's neighbours: one added row that turns a column of booleans
into text, one 'nan' in a column of text, a file sorted otherwise. Each must move a clipped
statistic by at most its declared sensitivity, never turn a release into a refusal, and never
change the dataset's identity in the ledger."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from dpexplorer.data.answers import query_input
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict


def _csv(path: Path, header: str, cells: list[str]) -> Path:
    path.write_text(header + "\n" + "".join(c + "\n" for c in cells), encoding="utf-8")
    return path


def _truth(path: Path, query: dict) -> list[float]:
    built = query_input(load_dataset(path), query_from_dict(query), "add_remove", exact_sums=True)
    return [float(v) for v in built.value_d]


FLAGS = ["true" if i % 10 else "false" for i in range(2000)]


@pytest.mark.parametrize("extra", ["1", "abc", "nan", "inf", " 0 "])
def test_a_row_that_changes_the_column_type_moves_a_sum_by_its_sensitivity(
    tmp_path: Path, extra: str
) -> None:
    """D: 2,000 true/false (a Boolean column); D' = D + one row that makes it text or numbers.
    Before the one rule, 'true' read as text was missing (counted at the midpoint): the sum of
    [0, 1] went 1800 -> 1001 for one added row."""
    d = _csv(tmp_path / "d.csv", "flag", FLAGS)
    d_prime = _csv(tmp_path / "d_prime.csv", "flag", [*FLAGS, extra])
    assert load_dataset(d).frame.schema["flag"] == pl.Boolean
    query = {"type": "sum", "column": "flag", "lower": 0, "upper": 1}
    (on_d,), (on_d_prime,) = _truth(d, query), _truth(d_prime, query)
    assert on_d == 1800.0
    assert abs(on_d_prime - on_d) <= 1.0
    histogram = {"type": "histogram", "axis": {"column": "flag", "edges": [0, 0.5, 1.5]}}
    moved = [abs(a - b) for a, b in zip(_truth(d, histogram), _truth(d_prime, histogram), strict=True)]
    assert sum(moved) <= 1.0


def test_nan_text_is_missing_not_a_refusal(tmp_path: Path) -> None:
    """A text column (a third of it words) plus one row 'nan': the mean is computed on both,
    the 'nan' counted as missing (at the midpoint), not NaN (which polars refused, with a count)."""
    cells = [str(i % 60 + 20) if i % 3 else "unknown" for i in range(300)]
    d = _csv(tmp_path / "d.csv", "x", cells)
    d_prime = _csv(tmp_path / "d_prime.csv", "x", [*cells, "nan"])
    query = {"type": "sum", "column": "x", "lower": 0, "upper": 100}
    (on_d,), (on_d_prime,) = _truth(d, query), _truth(d_prime, query)
    assert on_d_prime - on_d == pytest.approx(50.0)  # the midpoint of [0, 100]


def test_the_numeric_share_is_of_every_value_so_row_order_keeps_type_and_identity(tmp_path: Path) -> None:
    """4.5 % words overall, all of them at the file's start: a sample of the first rows reads the
    column as text, the whole file as numbers. Sorted otherwise, the same rows got another type
    and so another ledger key (a fresh budget for the same people)."""
    words = ["abc"] * 900
    numbers = [str(i % 50) for i in range(19_100)]
    first = _csv(tmp_path / "words_first.csv", "x", words + numbers)
    shuffled = words + numbers
    random.Random(1).shuffle(shuffled)
    other = _csv(tmp_path / "shuffled.csv", "x", shuffled)
    a, b = load_dataset(first), load_dataset(other)
    assert a.frame.schema["x"] == b.frame.schema["x"] == pl.Float64
    assert a.content_fingerprint == b.content_fingerprint


def test_true_and_false_in_a_numeric_column_read_as_one_and_zero(tmp_path: Path) -> None:
    """A column of numbers with a few 'true'/'FALSE' cells: the loader's numeric column reads them
    as 1 and 0, as the same cells do in a column read as text and in a Boolean column."""
    path = _csv(tmp_path / "mixed.csv", "x", [*(str(i % 7) for i in range(100)), "true", " FALSE ", "inf"])
    column = load_dataset(path).frame["x"].to_list()
    assert column[-3:] == [1.0, 0.0, None]


def test_a_number_past_the_integers_has_a_key() -> None:
    """A private key selection's key of a number too large for a 64-bit integer (issue 43: the
    whole number's integer cast was evaluated for every cell and raised on 1e20)."""
    from dpexplorer.data.cells import text_key

    keys = pl.select(text_key(pl.lit(pl.Series(["1e20", "3.0", " 3", "abc", "-0"])))).to_series()
    assert keys.to_list() == ["1e+20", "3", "3", "abc", "0"]
