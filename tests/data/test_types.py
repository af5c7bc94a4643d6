"""Issue 41, "types that do not lie": a file that declares its types is read with them, only
untyped text is inferred, a column the codebook calls a category or an identifier stays text,
days in the common unambiguous spellings read as days (an ambiguous one only in a declared
format), and a comparison whose operand cannot match the column's cells is refused before the
charge, from the column's type alone. On polars eager, polars lazy (streaming) and Spark."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import polars as pl
import pytest

from dpexplorer.cli import main
from dpexplorer.data.answers import true_answer
from dpexplorer.data.codebook import codebook_from_dict, declared_types
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import Declared, load_dataset
from dpexplorer.data.queries import Axis, Count, GroupBy, Histogram, PredicateCount, where
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.release import release_one
from dpexplorer.release.samplers import SeededBitSource

ENGINES = ["eager", "lazy", "spark"]
DAY0 = datetime.date(2012, 1, 1)
DAYS = 1_461  # 2012-01-01 .. 2015-12-31, as seattle-weather.csv
WEATHER = ("drizzle", "rain", "sun", "snow", "fog")


def seattle(path: Path) -> Path:
    """A seattle-weather-like CSV: days written 2012/01/01, words, numbers."""
    lines = ["date,precipitation,weather"]
    for i in range(DAYS):
        day = DAY0 + datetime.timedelta(days=i)
        lines.append(f"{day:%Y/%m/%d},{i % 7 * 0.5},{WEATHER[i % 5]}")
    path.write_text("\n".join(lines) + "\n")
    return path


def opened(path: Path, engine: str, request: pytest.FixtureRequest, declared: Declared | None = None):
    if engine == "spark":
        request.getfixturevalue("spark")
        from dpexplorer.data.engine.spark_engine import open_spark

        return open_spark(path, declared=declared)
    return load_dataset(path, lazy=engine == "lazy", declared=declared)


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


# ---------------------------------------------------------------- days
def test_days_written_with_slashes_are_days_and_release_a_count_covering_the_truth(
    tmp_path, engine, request
) -> None:
    """The acceptance: ``date >= "2015-01-01"`` on days written 2012/01/01 releases a count whose
    interval covers the truth (365 days of 2015); the same condition on a column of words is
    refused before the charge, in one line naming the column: no ledger entry."""
    dataset = opened(seattle(tmp_path / "seattle-weather.csv"), engine, request)
    assert dataset.schema["date"] == pl.Date
    query = PredicateCount(where("date") >= "2015-01-01")
    assert true_answer(dataset, query) == 365
    assert true_answer(dataset, PredicateCount(where("date") >= "2012/01/01")) == DAYS  # any spelling
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        key = dataset.content_fingerprint
        ledger.set_budget(key, 10.0, 0.0, "basic")
        result = release_one(
            dataset,
            query,
            "laplace",
            {"epsilon": 1.0},
            ledger=ledger,
            out_dir=tmp_path / "out",
            bits=SeededBitSource(41),
        )
        ((low, high),) = result.confidence_intervals
        assert low <= 365 <= high
        charged = len(ledger.measurements(key))
        with pytest.raises(DataError) as refused:
            release_one(
                dataset,
                PredicateCount(where("weather") >= "2015-01-01"),
                "laplace",
                {"epsilon": 1.0},
                ledger=ledger,
                out_dir=tmp_path / "out",
            )
        assert len(ledger.measurements(key)) == charged  # nothing charged for the refusal
    message = str(refused.value)
    assert "\n" not in message and "'weather'" in message and "is text, not days" in message


@pytest.mark.parametrize("engine_name", ENGINES)
def test_the_unambiguous_spellings_read_as_days_and_an_ambiguous_one_only_declared(
    tmp_path, engine_name, request
) -> None:
    path = tmp_path / "spellings.csv"
    path.write_text(
        "dot,stamp,slash_first,word\n"
        "2021.03.01,2021-03-01T10:00:00,01/03/2021,a\n"
        "2021.03.02,2021-03-02 23:59,02/03/2021,b\n"
        ",2021-03-03T00:00:00.5Z,13/03/2021,\n"
    )
    dataset = opened(path, engine_name, request)
    schema = dataset.schema
    assert schema["dot"] == pl.Date and schema["stamp"] == pl.Date and schema["slash_first"] == pl.String
    assert any("'slash_first'" in w and "day and the month first" in w for w in dataset.warnings)
    assert true_answer(dataset, PredicateCount(where("stamp") == "2021-03-02")) == 1
    with pytest.raises(DataError, match=r"'slash_first' is text, not days.*--date-format slash_first="):
        true_answer(dataset, PredicateCount(where("slash_first") < "2021-03-05"))
    declared = opened(path, engine_name, request, Declared(formats={"slash_first": "%d/%m/%Y"}.items()))
    assert declared.schema["slash_first"] == pl.Date
    assert true_answer(declared, PredicateCount(where("slash_first") < "2021-03-05")) == 2  # 1 and 2 March
    # the declaration changes no ledger key: the same people, one budget
    assert declared.content_fingerprint == dataset.content_fingerprint


def test_a_codebook_date_format_reads_its_column_as_days(tmp_path) -> None:
    path = tmp_path / "visits.csv"
    path.write_text("visited\n01/03/2021\n03/01/2021\n")
    codebook = codebook_from_dict(
        {"codebook": 1, "columns": {"visited": {"kind": "day", "date_format": {"value": "%m/%d/%Y"}}}}
    )
    dataset = load_dataset(path, declared=declared_types(codebook))
    assert dataset.preview()["visited"].to_list() == [datetime.date(2021, 1, 3), datetime.date(2021, 3, 1)]
    with pytest.raises(DataError, match="date_format"):
        codebook_from_dict(
            {"codebook": 1, "columns": {"v": {"kind": "day", "date_format": {"value": "%b %Y"}}}}
        )


@pytest.mark.parametrize(
    ("condition", "why"),
    [
        (where("precipitation") >= "2015-01-01", "'precipitation' holds numbers, not days"),
        (where("date") == 5, "'date' holds days, and the number 5 is never a day"),
        (where("date").isin(["2015-01-01", "sunny"]), "'date' holds days, and 'sunny' is not one"),
        (where("date") != "rain", "'date' holds days"),
    ],
)
def test_a_comparison_no_cell_of_its_type_can_match_is_refused(tmp_path, condition, why) -> None:
    dataset = load_dataset(seattle(tmp_path / "w.csv"))
    with pytest.raises(DataError, match=why):
        PredicateCount(condition).check(dataset.schema)


# ---------------------------------------------------------------- declared text
def codes(path: Path, rows: int = 2_000) -> Path:
    """A Parquet file whose text column holds digit codes: "02139", "01" and "1" apart."""
    zips = ["02139", "01", "1", "10001"]
    pl.DataFrame({"zip": [zips[i % 4] for i in range(rows)], "n": list(range(rows))}).write_parquet(path)
    return path


def test_a_parquet_text_column_of_digit_codes_stays_text(tmp_path, engine, request) -> None:
    """The file declares text: "02139" stays "02139", and "01" and "1" are two categories
    (before, the loader's numeric share made them 2139.0 and one category 1.0)."""
    dataset = opened(codes(tmp_path / "codes.parquet"), engine, request)
    assert dataset.schema["zip"] == pl.String
    assert sorted(dataset.preview(8)["zip"].unique().to_list()) == ["01", "02139", "1", "10001"]
    assert true_answer(dataset, PredicateCount(where("zip") == "01")) == 500
    assert true_answer(dataset, PredicateCount(where("zip").isin(["1", "02139"]))) == 1_000
    histogram = Histogram(Axis("zip", categories=("02139", "01", "1")))
    assert true_answer(dataset, histogram).tolist() == [500, 500, 500, 500]
    grouped = GroupBy((Axis("zip", categories=("01", "1")),), "count")
    assert true_answer(dataset, grouped).tolist() == [500, 500, 1_000]
    with pytest.raises(DataError, match=r"'n' holds numbers \(the file's declared type\), and 'x'"):
        true_answer(dataset, PredicateCount(where("n") == "x"))


def test_a_column_the_codebook_calls_a_category_stays_text_in_a_csv(tmp_path, engine, request) -> None:
    path = tmp_path / "people.csv"
    path.write_text(
        "zip,age\n" + "".join(f"{z},{30 + i % 5}\n" for i, z in enumerate(["02139", "01", "1"] * 40))
    )
    codebook = codebook_from_dict(
        {
            "codebook": 1,
            "columns": {
                "zip": {"kind": "identifier"},
                "age": {"kind": "number", "bounds": {"value": [0, 120]}},
            },
        }
    )
    plain = opened(path, engine, request)
    assert plain.schema["zip"] == pl.Int64  # untyped text, inferred: numbers
    dataset = opened(path, engine, request, declared_types(codebook))
    assert dataset.schema["zip"] == pl.String and dataset.schema["age"] == pl.Int64
    assert set(dataset.preview(3)["zip"].to_list()) == {"02139", "01", "1"}
    assert true_answer(dataset, PredicateCount(where("zip") == "01")) == 40
    assert true_answer(plain, PredicateCount(where("zip") == "01")) == 80  # 1 and 01 one number
    # the same people keep one budget with or without the codebook
    assert dataset.content_fingerprint == plain.content_fingerprint


def test_a_column_the_codebook_calls_a_day_stays_days_whatever_one_row_spells(
    tmp_path, engine, request
) -> None:
    """Without a declaration one row that spells no day turns the column to text, and a day
    condition on it is refused: whether a plan releases then depends on one person. Declared a
    day column (no format), it reads as days on D and on D' = D + that row, the row's cell
    missing (a note), and the count differs by at most the row."""
    days = [f"2015/0{1 + i % 9}/1{i % 9}" for i in range(180)]
    codebook = codebook_from_dict({"codebook": 1, "columns": {"visited": {"kind": "day"}}})
    condition = PredicateCount(where("visited") >= "2015-03-01")
    answers = []
    for name, cells in (("d", days), ("d_prime", [*days, "not a day"])):
        path = tmp_path / f"{name}.csv"
        path.write_text("visited\n" + "".join(f"{c}\n" for c in cells))
        plain = opened(path, engine, request)
        assert plain.schema["visited"] == (pl.Date if name == "d" else pl.String)  # inferred
        dataset = opened(path, engine, request, declared_types(codebook))
        assert dataset.schema["visited"] == pl.Date
        answers.append(true_answer(dataset, condition))
        if name == "d_prime":
            assert any("values are treated as missing" in n for n in dataset.warnings)
            assert dataset.content_fingerprint == plain.content_fingerprint  # one budget
    assert answers[0] == answers[1] == sum(d >= "2015/03/01" for d in days)


def test_earlier_ledgers_keep_their_budget_for_a_parquet_file_read_as_text(tmp_path) -> None:
    """Older ledgers filed a Parquet file of digit codes under its key as numbers: that key is
    among the dataset's earlier keys, so a release there moves its budget, not a fresh one."""
    path = codes(tmp_path / "codes.parquet", rows=40)
    dataset = load_dataset(path)
    before = load_dataset(path, legacy=True)
    assert before.schema["zip"] == pl.Float64 and before.content_fingerprint != dataset.content_fingerprint
    assert before.content_fingerprint in dataset.earlier_content_fingerprints()
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        ledger.set_budget(before.content_fingerprint, 1.0, 0.0, "basic")
        result = release_one(
            dataset, Count(), "laplace", {"epsilon": 0.5}, ledger=ledger, out_dir=tmp_path / "out"
        )
        assert result.values
        assert ledger.remaining(dataset.content_fingerprint) == pytest.approx(0.5)


def test_the_cli_reads_a_declared_date_format(tmp_path) -> None:
    path = tmp_path / "visits.csv"
    path.write_text("visited\n" + "".join(f"{d:02d}/03/2021\n" for d in range(1, 29)))
    plan = tmp_path / "plan.json"
    condition = {"compare": ">=", "column": "visited", "value": "2021-03-15"}
    query = {"type": "predicate_count", "predicate": condition}
    plan.write_text(json.dumps([{"query": query, "mechanism": "laplace", "parameters": {"epsilon": 1.0}}]))
    args = ["release", str(plan), "--data", str(path), "--out", str(tmp_path / "out")]
    args += ["--ledger", str(tmp_path / "ledger.sqlite"), "--budget-epsilon", "5"]
    assert main(args) == 2  # text: refused before the charge
    assert main([*args, "--date-format", "visited=%d/%m/%Y"]) == 0
    assert main([*args, "--date-format", "visited"]) == 2


def test_a_value_outside_the_codebooks_complete_categories_is_refused() -> None:
    """A comparison with a category that cannot occur under the declared domain is refused
    before anything is read: its count would be a silent empty set."""
    from dpexplorer.data.codebook import complete_query

    codebook = codebook_from_dict(
        {"codebook": 1, "columns": {"weather": {"kind": "category", "categories": {"value": list(WEATHER)}}}}
    )
    inside = {"compare": "in", "column": "weather", "value": ["rain", "sun"]}
    complete_query({"type": "predicate_count", "predicate": inside}, codebook)
    outside = {"not": {"and": [inside, {"compare": "==", "column": "weather", "value": "sunny"}]}}
    with pytest.raises(DataError, match="the value 'sunny' compared with 'weather' cannot occur"):
        complete_query({"type": "predicate_count", "predicate": outside}, codebook)
