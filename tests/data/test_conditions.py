"""Issue 32: a condition or a declared category holds on a row by that row's own cell and the
query alone (dpexplorer/data/conditions.py), whatever type the loader inferred for the column
from all its cells. Before, one added person who turned a column of numbers into text (or dates
into text, or true/false into numbers) changed the answer on every other row: a histogram over
{abc, 3, other} went [5, 10, 84] -> [0, 0, 100] when a 100th row made the column numeric.

Issue 41 refuses, before the charge, a comparison no cell of the column's type can match (a day
against a column of numbers or text, a number against a day column): a silent empty set was
worse. A refusal is decided by the schema alone (here the loader's inference, which the schema
shows); an answer, when given, still by each row's own cell."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from dpexplorer.data.answers import true_answer
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import Axis, Compare, Histogram, Or, PredicateCount, where

CONDITIONS = [
    where("x") == "abc",
    where("x") == 3,
    where("x") == "3.0",
    where("x") != 3,
    where("x") > 4.5,
    where("x") <= "2",
    where("x") == True,  # noqa: E712 (a comparison value, not a test)
    where("x").isin(["abc", 7, "2021-03-01"]),
    where("x") >= "2021-01-01",
    ~(where("x") == "2021-03-01"),
    (where("x") < 5) | (where("x") == "x"),
]
AXES = [
    Axis("x", categories=("abc", "3", "other text")),
    Axis("x", categories=(3, 7.0, True)),
    Axis("x", categories=("2021-03-01", 0, "x")),
]


def _answers(path: Path) -> list[float]:
    """Each condition's count and each axis's counts, NaN where the query is refused; a refusal
    only ever by the schema (the query's check, before any row is read)."""
    dataset = load_dataset(path)
    out = []
    for p in CONDITIONS:
        try:
            PredicateCount(p).check(dataset.schema)
        except DataError:
            out.append(float("nan"))
            continue
        out.append(float(true_answer(dataset, PredicateCount(p))))
    for axis in AXES:
        out.extend(np.asarray(true_answer(dataset, Histogram(axis)), dtype=float)[:-1])
    return out


def _csv(path: Path, cells: list[str]) -> Path:
    """A CSV of column x holding ``cells`` and a row number (a blank line in a file of one
    column is a missing value to polars, no record to Spark)."""
    path.write_text("x,i\n" + "".join(f"{c},{i}\n" for i, c in enumerate(cells)), encoding="utf-8")
    return path


NEIGHBOURS = {
    # base cells, the added person's cell: each addition changes the loader's type of x
    "numbers, one word": ([str(i % 10) for i in range(15)], "abc"),
    "numbers with true, one word": ([*(str(i % 10) for i in range(10)), "true", "FALSE"], "x"),
    "true/false, one number": (["true", "false", "TRUE"] * 10, "2"),
    "days, one word": ([f"2021-0{1 + i % 9}-01" for i in range(30)], "x"),
    "days, one number": ([f"2021-03-0{1 + i % 9}" for i in range(30)], "7"),
    "text, one missing": (["abc", "3", "3.0", " 7 ", "inf", "2021-03-01"] * 5, ""),
}


@pytest.mark.parametrize("case", NEIGHBOURS, ids=list(NEIGHBOURS))
def test_one_added_person_moves_each_count_by_at_most_one(tmp_path, case) -> None:
    cells, added = NEIGHBOURS[case]
    before = load_dataset(_csv(tmp_path / "a.csv", cells)).schema["x"]
    after = load_dataset(_csv(tmp_path / "b.csv", [*cells, added])).schema["x"]
    assert before != after or added == "", "the case must flip the column's type"
    a, b = _answers(tmp_path / "a.csv"), _answers(tmp_path / "b.csv")
    answered = ~(np.isnan(a) | np.isnan(b))
    moved = np.abs(np.subtract(a, b))[answered]
    assert moved.max() <= 1, dict(zip(map(str, range(len(a))), zip(a, b, strict=True), strict=True))
    assert answered[len(CONDITIONS) :].all()  # the axes: a category that matches no cell counts 0


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_at_the_numeric_share_a_words_text_is_kept(tmp_path, lazy) -> None:
    """The 95% boundary: 94 numbers and 5 words are text, one more number makes the column
    numeric and the words missing to the loader (before: ``x == "abc"`` went 5 -> 0, the
    histogram above 31 counts). The words keep their text for conditions and categories, while
    the table the ledger key reads is unchanged: the same key as with the words left empty."""
    cells = [*(str(i % 10) for i in range(94)), *["abc"] * 5]
    for n, rows in enumerate((cells, [*cells, "1"])):
        dataset = load_dataset(_csv(tmp_path / f"{n}.csv", rows), lazy=lazy)
        assert true_answer(dataset, PredicateCount(where("x") == "abc")) == 5
        assert true_answer(dataset, PredicateCount(where("x") != 3)) == sum(c != "3" for c in rows)
        assert list(true_answer(dataset, Histogram(AXES[0]))[:2]) == [5, 10]
    assert dataset.schema["x"] == pl.Float64 and dataset.kept_text == ("x",)
    assert dataset.schema.names() == ["x", "i"] and dataset.preview(3).columns == ["x", "i"]
    blank = load_dataset(_csv(tmp_path / "blank.csv", [*(c if c != "abc" else "" for c in cells), "1"]))
    assert dataset.content_fingerprint == blank.content_fingerprint
    assert dataset.columns[0].missing == 5


def test_the_per_cell_rule_on_one_text_column(tmp_path) -> None:
    """What each comparison holds for, cell by cell (module docstring of conditions.py)."""
    cells = ["3", " 3 ", "3.0", "03", "abc", "ABC", "true", "2021-03-01", "2021-3-1", "inf", ""]
    dataset = load_dataset(_csv(tmp_path / "c.csv", [*cells, "x"]))
    expected = {
        where("x") == 3: 4,  # 3, " 3 ", 3.0, 03
        where("x") == "3": 4,
        where("x") == "abc": 1,  # the text exactly
        where("x") == True: 1,  # noqa: E712
        where("x") < 3: 1,  # true (1)
        where("x") != 3: 6,  # present cells but the four (inf and empty are missing)
    }
    for predicate, count in expected.items():
        assert true_answer(dataset, PredicateCount(predicate)) == count, predicate.describe()
    for predicate in (where("x") == "2021-03-01", where("x") < "2021-12-31"):  # a text column: no days
        with pytest.raises(DataError, match="'x' is text, not days"):
            true_answer(dataset, PredicateCount(predicate))


def test_refusals_come_from_the_query_and_the_column_type_alone(tmp_path) -> None:
    """A query is refused (an ordered comparison with a word) before any table is seen, or for
    the column's type (a day against a column that holds none, a number or a word against a day
    column, a word against true/false); nothing else is refused on any of these columns."""
    files = {
        "numbers": ["1", "2"],
        "text": ["a", "2"],
        "days": ["2021-03-01", "2021-03-02"],
        "booleans": ["true", "false"],
    }
    refused = {  # the indices of CONDITIONS each column's type refuses
        "numbers": {7, 8, 9},
        "text": {7, 8, 9},
        "days": set(range(len(CONDITIONS))) - {8, 9},
        "booleans": {0, 1, 2, 3, 7, 8, 9, 10},
    }
    for name, cells in files.items():
        schema = load_dataset(_csv(tmp_path / f"{name}.csv", cells)).schema
        for i, predicate in enumerate(CONDITIONS):
            if i in refused[name]:
                with pytest.raises(DataError, match="can hold on no row"):
                    PredicateCount(predicate).check(schema)
            else:
                PredicateCount(predicate).check(schema)
        for axis in AXES:
            Histogram(axis).check(schema)
    with pytest.raises(DataError, match="compares numbers or days"):
        Compare("x", ">", "abc")
    with pytest.raises(DataError, match="not a finite number"):
        Compare("x", "==", "NaN")
    with pytest.raises(DataError, match="match the same cells"):  # but as written: two categories
        Histogram(Axis("x", categories=(3, "3.0"))).check(schema)


def test_spark_holds_each_condition_on_the_same_rows(tmp_path, spark) -> None:
    """The per-cell rule on Spark equals polars, on a text column, a numeric one and one of 95%
    numbers with words (kept text): every condition's count in one Spark job per file, and the
    three axes' cells in one more."""
    from pyspark.sql import functions as F

    from dpexplorer.data.axes import text_read_columns
    from dpexplorer.data.engine import engine_of
    from dpexplorer.data.engine.base import CellCounts, RowCount
    from dpexplorer.data.engine.spark_columns import polars_schema, predicate_column
    from dpexplorer.data.engine.spark_engine import open_spark

    cells = ["3", " 3 ", "3.0", "abc", "true", "2021-03-01", "2021-3-1", "inf", "", "7", "x"]
    kept = [*(str(i % 10) for i in range(60)), "abc", "2021-03-01", "x"]  # numeric, words kept
    numbers = ["3", "7", "4.5", "true", ""] * 3
    cells_request = CellCounts(tuple(AXES))
    for path in (
        _csv(tmp_path / "t.csv", cells * 3),
        _csv(tmp_path / "n.csv", numbers),
        _csv(tmp_path / "k.csv", kept),
    ):
        local, remote = load_dataset(path), open_spark(path)
        texted = remote.with_text(text_read_columns(CONDITIONS))
        schema = polars_schema(texted.frame)
        hits = [
            F.sum(predicate_column(p, schema).cast("long")).alias(f"c{i}") for i, p in enumerate(CONDITIONS)
        ]
        row = texted.frame.agg(*hits).collect()[0]
        ours = [engine_of(local).aggregate(local, RowCount(p)) for p in CONDITIONS]
        assert [int(row[f"c{i}"] or 0) for i in range(len(CONDITIONS))] == ours, path.name
        np.testing.assert_array_equal(
            engine_of(remote).aggregate(remote, cells_request),
            engine_of(local).aggregate(local, cells_request),
        )


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_the_first_rows_settle_only_a_column_of_words(tmp_path, lazy) -> None:
    """The loader reads the first tenth of the rows first and settles there only a column that
    already holds more words than 5% of all its values (load._not_surely_text): words first at
    exactly 5% still make a numeric column, one word more a text one, as in any other order."""
    n = 200_000
    for words, kind in ((n // 20, pl.Float64), (n // 20 + 1, pl.String)):
        cells = ["w"] * words + [str(i % 7) for i in range(n - words)]
        path = tmp_path / f"{words}.csv"
        path.write_text("x\n" + "\n".join(cells) + "\n", encoding="utf-8")
        assert load_dataset(path, lazy=lazy).schema["x"] == kind


def test_private_keys_stand_for_the_cells_alone(tmp_path, spark) -> None:
    """Keys that are not declared (a private key selection) are each cell's own key: before, 94
    numbers and 5 words gave the keys 0, 1, 2, abc and one more number 0.0, 1.0, 2.0 (every
    row's label changed, the words fell into the missing key). Spark reads the same keys."""
    from dpexplorer.data.engine import engine_of
    from dpexplorer.data.engine.base import CellCounts, DistinctValues
    from dpexplorer.data.engine.spark_engine import open_spark

    cells = [*(str(i % 3) for i in range(94)), *["abc"] * 5, "03", " 2 "]
    counts = []
    for n, rows in enumerate((cells, [*cells, "1"])):
        local = load_dataset(_csv(tmp_path / f"{n}.csv", rows))
        keys = engine_of(local).aggregate(local, DistinctValues("x"))
        assert keys == ("0", "1", "2", "3", "abc")
        request = CellCounts((Axis("x", keys, exact_text=True),))
        counts.append(engine_of(local).aggregate(local, request))
    assert np.abs(counts[1] - counts[0]).sum() == 1
    remote = open_spark(tmp_path / "1.csv")
    assert engine_of(remote).aggregate(remote, DistinctValues("x")) == keys
    np.testing.assert_array_equal(engine_of(remote).aggregate(remote, request), counts[1])


def _unit_csv(path: Path, ids: list[str]) -> Path:
    path.write_text("id,g\n" + "".join(f"{i},a\n" for i in ids), encoding="utf-8")
    return path


@pytest.mark.parametrize("lazy", [False, True])
def test_a_privacy_unit_is_read_by_its_own_cells(tmp_path, lazy) -> None:
    """The persons of a privacy unit are the keys their cells stand for (a number its value:
    "01" and "1" are one person; other text itself), whatever type the loader gave the column:
    94 numeric ids and 5 word ids load as text; one added id makes the column numeric (95 %),
    where the words were missing and their persons dropped, moving a bounded count by 5."""
    from dpexplorer.data.queries import GroupBy, PrivacyUnit

    ids = [*(str(i) for i in range(1, 94)), "01", "abc", "abd", "abe", "abf", "abg"]
    query = GroupBy((Axis("g", categories=("a",)),), unit=PrivacyUnit("id", max_groups=1, max_rows=1))
    a = load_dataset(_unit_csv(tmp_path / "a.csv", ids), lazy=lazy)
    b = load_dataset(_unit_csv(tmp_path / "b.csv", [*ids, "95"]), lazy=lazy)
    assert a.schema["id"] != b.schema["id"], "the case must flip the column's type"
    before, after = (float(true_answer(d, query)[0]) for d in (a, b))
    assert before == 98  # 93 numbers, "01" the same person as "1", five words
    assert after - before == 1


# ---------------------------------------------------------------- nesting (issue 43)
def _nested(levels: int) -> object:
    """A condition ``levels`` deep: not / and / or in turn around ``x == 3``."""
    from dpexplorer.data.conditions import And, Not, Or

    p: object = where("x") == 3
    for level in range(levels - 1):
        p = (Not(p), And((p, where("x") < 40)), Or((p, where("x") == "abc")))[level % 3]  # type: ignore[arg-type]
    return p


def test_the_deepest_condition_accepted_is_read_described_and_evaluated(tmp_path) -> None:
    """MAX_DEPTH levels: built, read back from its dict, described and counted on polars; one
    more is refused where it is built and where it is read (a DataError, never RecursionError),
    and so is a mapping nested 100,000 levels deep."""
    from dpexplorer.data.conditions import MAX_DEPTH, Not, predicate_from_dict

    deepest = _nested(MAX_DEPTH)
    assert deepest.depth == MAX_DEPTH
    assert predicate_from_dict(deepest.to_dict()) == deepest
    assert deepest.describe().count("not ") == len([i for i in range(MAX_DEPTH - 1) if i % 3 == 0])
    dataset = load_dataset(_csv(tmp_path / "t.csv", ["3", "7", "abc", "", "3"]))
    brute = sum(_holds(deepest, cell) for cell in ["3", "7", "abc", "", "3"])
    assert true_answer(dataset, PredicateCount(deepest)) == brute
    with pytest.raises(DataError, match=f"more than {MAX_DEPTH} levels"):
        Not(deepest)
    with pytest.raises(DataError, match=f"more than {MAX_DEPTH} levels"):
        predicate_from_dict({"not": deepest.to_dict()})
    huge: dict = {"compare": "==", "column": "x", "value": 3}
    for _ in range(100_000):
        huge = {"not": huge}
    with pytest.raises(DataError, match=f"more than {MAX_DEPTH} levels"):
        predicate_from_dict(huge)


def _holds(p: object, cell: str) -> bool:
    """``p`` on one cell of x, by hand (the three kinds of node _nested builds)."""
    from dpexplorer.data.conditions import And, Compare, Not

    if isinstance(p, Compare):
        number = float(cell) if cell.replace(".", "").isdigit() else None
        if p.op == "==":
            return number == p.value if isinstance(p.value, int) else cell == p.value
        return number is not None and number < p.value  # "<" on numbers
    if isinstance(p, Not):
        return not _holds(p.term, cell)
    results = [_holds(t, cell) for t in p.terms]  # type: ignore[attr-defined]
    return all(results) if isinstance(p, And) else any(results)


def test_the_terms_of_a_wide_or_are_joined_as_a_balanced_tree() -> None:
    """An ``or`` of 1,024 comparisons becomes a tree 11 levels deep for another engine, not a
    chain of 1,024 (which overflowed Spark's stack at 1,500)."""
    from dpexplorer.data.conditions import combine

    wide = Or(tuple(where("x") == i for i in range(1024)))

    def depth(p: object) -> int:
        return combine(
            p, lambda c: 1, lambda a, b: 1 + max(a, b), lambda a, b: 1 + max(a, b), lambda a: 1 + a
        )

    assert depth(wide) == 11
    joined = combine(wide, lambda c: {c.value}, set.union, set.union, lambda a: a)
    assert joined == set(range(1024))


def test_spark_evaluates_the_deepest_condition_as_polars(tmp_path, spark) -> None:
    """The deepest condition the reader accepts, and a wide ``or``, count the same rows on
    Spark as on polars."""
    from dpexplorer.data.conditions import MAX_DEPTH
    from dpexplorer.data.engine import engine_of
    from dpexplorer.data.engine.base import RowCount
    from dpexplorer.data.engine.spark_engine import open_spark

    path = _csv(tmp_path / "t.csv", [str(i % 50) for i in range(200)] + ["abc"])
    local, remote = load_dataset(path), open_spark(path)
    for p in (_nested(MAX_DEPTH), Or(tuple(where("x") == i for i in range(0, 60, 3)))):
        assert engine_of(remote).aggregate(remote, RowCount(p)) == engine_of(local).aggregate(
            local, RowCount(p)
        )
