"""Every query kind gives identical true answers, D' and sensitivities on polars eager, polars
lazy (streaming) and Spark (local[2]), on Adult and on generated data with missing values,
NaN/infinity and values outside the clipping bounds.

Identical means equal, not close: the generated numbers are multiples of 1/4, so every sum is
exact in float64 whatever order an engine adds in. Spark needs pyspark and Java (the ``spark``
extra); outside CI the Spark cases are skipped when pyspark is missing, in CI they never are."""

from __future__ import annotations

import datetime
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from dpexplorer.data.answers import SortedColumn, query_input, true_answer
from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.engine import polars_engine
from dpexplorer.data.load import kind_of_dtype, load_dataset
from dpexplorer.data.queries import (
    ArgMax,
    Axis,
    Count,
    GroupBy,
    Histogram,
    Mean,
    Median,
    PredicateCount,
    PrivacyUnit,
    PrivateKeys,
    Quantile,
    Sum,
    TopK,
    TrimmedMean,
    Variance,
    marginal_workload,
    range_workload,
    where,
)
from dpexplorer.release.ledger import Ledger

if os.environ.get("CI"):
    import pyspark  # noqa: F401  (in CI the Spark cases must run: a missing extra fails here)
else:
    pytest.importorskip("pyspark")

OCCUPATIONS = ("Prof-specialty", "Craft-repair", "Exec-managerial", "Adm-clerical", "Sales")
ADULT = [
    Count(),
    PredicateCount(where("income") == ">50K"),
    PredicateCount(
        (where("sex") == "Female") & ~(where("age") < 30)
        | where("race").isin(["Other", "Asian-Pac-Islander"])
    ),
    PredicateCount(~(where("occupation") == "Sales")),  # occupation has missing values
    Sum("hours_per_week", 0, 99),
    Mean("age", 17, 90),
    Mean("capital_gain", 0, 5_000),
    Median("hours_per_week", 0, 168),
    Quantile("age", 17, 90, 0.9),
    TrimmedMean("education_num", 1, 16, 0.1),
    Histogram(Axis("workclass", categories=("Private", "Self-emp-not-inc", "Local-gov"))),
    Histogram(Axis("age", edges=(17, 30, 45, 60, 91))),
    ArgMax("occupation", OCCUPATIONS),
    TopK("occupation", OCCUPATIONS, 3),
    marginal_workload([Axis("sex", categories=("Male", "Female")), Axis("age", edges=(0, 40, 100))]),
    GroupBy((Axis("sex", categories=("Male", "Female")),), "count"),
    GroupBy(
        (Axis("race", categories=("White", "Black")), Axis("age", edges=(17, 40, 91))),
        "mean",
        "hours_per_week",
        0,
        99,
    ),
    GroupBy((Axis("workclass", categories=("Private", "Local-gov")),), "sum", "capital_gain", 0, 10_000),
]
GENERATED = [
    Count(),
    PredicateCount(where("x") >= 0),
    PredicateCount(~(where("x") >= 0)),  # counts the missing x
    PredicateCount((where("c") == "a") | (where("k") > 3)),
    PredicateCount((where("c") != "a") & (where("b") == True)),  # noqa: E712
    PredicateCount(where("k").isin([1, 2, 9])),
    Sum("x", -2, 3.5),
    Mean("x", -2, 3.5),
    Mean("k", 0, 5),
    Median("x", -2, 3.5),
    Quantile("k", 0, 5, 0.25),
    TrimmedMean("x", -1, 2, 0.2),
    Histogram(Axis("c", categories=("a", "b"))),
    Histogram(Axis("x", edges=(-2, 0, 1.5, 3.5))),
    Histogram(Axis("b", categories=(True,))),
    ArgMax("c", ("a", "b", "z")),
    TopK("k", (0, 1, 2, 3, 4), 2),
    range_workload(Axis("k", edges=(0, 2, 4, 6))),
    Mean("odd name.k", 0, 5),  # a dot and a space in a name: a column, not a path into a struct
    PredicateCount(where("odd name.k") >= 3),
    GroupBy((Axis("c", categories=("a", "b")),), "mean", "x", -2, 3.5),
    GroupBy((Axis("c", categories=("a",)), Axis("k", edges=(0, 3, 8))), "sum", "x", -1, 2),
    GroupBy((Axis("b", categories=(True,)),), "count"),
    GroupBy((Axis("c", categories=("a", "b")),), "quantile", "x", -2, 3.5, q=0.75),
    PredicateCount(where("d") >= "2021-03-01"),  # compared as dates
    PredicateCount(~(where("d") < "2020-06-15") & (where("d") != "2021-03-01")),
    PredicateCount(where("d").isin(["2020-01-05", "2021-12-30"]) | (where("d") <= "2020-01-31")),
    Histogram(Axis("d", categories=("2020-01-05", "2021-12-30", "2021-02-30"))),  # days as text
]
DAY0 = datetime.date(2020, 1, 1)
UNIT = PrivacyUnit("person", max_groups=2, max_rows=3)
BOUNDED = [
    GroupBy((Axis("c", categories=("a", "b")),), "count", unit=UNIT),
    GroupBy((Axis("c", categories=("a", "b")),), "mean", "x", -2, 3.5, unit=UNIT),
]


def generated(path: Path) -> Path:
    """4,000 rows: x with missing, NaN and infinite values and values beyond every bound (all
    multiples of 1/4); k integer with missing values; c text with missing values; b boolean;
    d ISO dates written as text, with missing values (every engine types it as dates)."""
    rng = np.random.default_rng(17)
    n = 4_000
    x = rng.integers(-40, 40, n) / 4.0
    x[rng.random(n) < 0.05] = np.nan
    x[:3] = [np.inf, -np.inf, np.nan]
    frame = pl.DataFrame(
        {
            "x": x,
            "k": pl.Series(rng.integers(0, 8, n)).set(pl.Series(rng.random(n) < 0.1), None),
            "c": pl.Series(rng.choice(["a", "b", "c"], n)).set(pl.Series(rng.random(n) < 0.1), None),
            "b": rng.random(n) < 0.3,
            "d": pl.Series(
                [str(DAY0 + datetime.timedelta(days=int(i))) for i in rng.integers(0, 730, n)]
            ).set(pl.Series(rng.random(n) < 0.1), None),
        }
    )
    frame = frame.with_columns(
        pl.col("k").alias("odd name.k"),
        pl.Series("person", rng.integers(0, 300, n)).set(pl.Series(rng.random(n) < 0.02), None),
    )
    frame.write_parquet(path)
    return path


def generated_csv(path: Path, parquet: Path) -> Path:
    """The generated data as CSV text (NaN and infinities written as text), with two more
    columns: ``when``, days written 2021-3-1 (text to polars, a timestamp to Spark's own
    inference), and ``score``, integers with missing values (empty, or spelled ``NULL``) and 2%
    "unknown" (a numeric column with a note to polars, text to Spark's inference)."""
    rng = np.random.default_rng(18)
    frame = pl.read_parquet(parquet)
    n = frame.height
    days = [DAY0 + datetime.timedelta(days=int(i)) for i in rng.integers(0, 730, n)]
    score = [str(v) for v in rng.integers(0, 100, n)]
    for i in np.flatnonzero(rng.random(n) < 0.02):
        score[i] = "unknown"
    for i in np.flatnonzero(rng.random(n) < 0.05):
        score[i] = None if i % 2 else "NULL"
    frame.with_columns(
        pl.Series("when", [f"{d.year}-{d.month}-{d.day}" for d in days]),
        pl.Series("score", score, dtype=pl.String),
    ).write_csv(path)
    return path


@pytest.fixture(scope="session")  # session: a module fixture restarts when xdist interleaves files
def sources(tmp_path_factory, spark):
    """name -> (eager, lazy, Spark) datasets of the same file."""
    from dpexplorer.data.engine.spark_engine import open_spark

    made = generated(tmp_path_factory.mktemp("parity") / "generated.parquet")
    text = generated_csv(made.with_suffix(".csv"), made)
    out = {}
    for name, path in (("adult", default_dataset_path()), ("generated", made), ("csv", text)):
        out[name] = (load_dataset(path, lazy=False), load_dataset(path, lazy=True), open_spark(path))
    return out


@pytest.fixture(autouse=True)
def _selection(monkeypatch):
    """Polars finds a quantile's order statistics by selection even on these small files (Spark
    slices its sorted column): the two ways must agree."""
    monkeypatch.setattr(polars_engine, "SELECT_ABOVE", 0)
    monkeypatch.setattr(polars_engine, "SELECT_BINS", 256)


def _same(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple) and any(isinstance(x, np.ndarray) for x in a + b):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # per group
    if isinstance(a, np.ndarray | SortedColumn) or isinstance(b, np.ndarray | SortedColumn):
        return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
    # repr: a float's repr is exact, and NaN (squares not summed by group) equals itself there
    return a == b or repr(a) == repr(b)


def _fields(inp) -> dict:
    return {k: v for k, v in vars(inp).items()}


CSV = [  # the generated data read from CSV text: every column kind, typed as polars types it
    Count(),
    PredicateCount(where("d") >= "2021-03-01"),
    PredicateCount((where("b") == True) & (where("when") == "2021-3-1")),  # noqa: E712
    Mean("x", -2, 3.5),
    Quantile("k", 0, 5, 0.25),
    Sum("score", 0, 80),
    Histogram(Axis("when", categories=("2021-3-1", "2020-12-25", "2020-1-5"))),
    GroupBy((Axis("c", categories=("a", "b")),), "mean", "score", 0, 99),
]
CASES = [("adult", q) for q in ADULT] + [("generated", q) for q in GENERATED] + [("csv", q) for q in CSV]


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
@pytest.mark.parametrize(
    ("data", "query"), CASES, ids=[f"{d}-{q.kind}-{i}" for i, (d, q) in enumerate(CASES)]
)
def test_identical_answers_on_every_engine(sources, data, query, relation):
    eager, lazy, spark = sources[data]
    assert eager.n_rows == lazy.n_rows == spark.n_rows
    reference = _fields(query_input(eager, query, relation))
    truth = true_answer(eager, query)
    for other in (lazy, spark):
        fields = _fields(query_input(other, query, relation))
        assert fields.keys() == reference.keys()
        different = [k for k in reference if not _same(reference[k], fields[k])]
        assert not different, {k: (reference[k], fields[k]) for k in different}
        assert _same(np.asarray(true_answer(other, query)), np.asarray(truth))


EXACT = [
    ("adult", Sum("hours_per_week", 0.1, 99.3)),
    ("adult", Mean("capital_gain", 0, 5_000)),
    ("adult", Variance("age", 17.5, 90.1)),
    ("adult", GroupBy((Axis("sex", categories=("Male", "Female")),), "mean", "age", 17.3, 90)),
    ("generated", Sum("x", -2.1, 3.3)),
    ("generated", Mean("x", -2.1, 3.3)),
    ("generated", GroupBy((Axis("c", categories=("a", "b")),), "sum", "x", -0.7, 2.9)),
]


@pytest.mark.parametrize(
    ("data", "query"), EXACT, ids=[f"{d}-{q.kind}-{i}" for i, (d, q) in enumerate(EXACT)]
)
def test_a_release_gets_identical_exact_sums_on_every_engine(sources, data, query):
    """The exact lattice sums a release rounds to its grid (engine/base.py) are the same numbers
    on polars eager, streaming and Spark, with bounds that are not binary fractions."""
    from dataclasses import replace

    def exact_fields(dataset) -> dict:
        # raw_mean (the unclipped mean, shown beside the clipping bias) stays a float mean: with
        # a midpoint that is not a binary fraction the engines' summation orders show in it
        fields = _fields(query_input(dataset, query, "add_remove", exact_sums=True))
        for key in ("moments", "moments_prime"):
            if fields[key] is not None:
                fields[key] = tuple(replace(m, raw_mean=None) for m in fields[key])
        return fields

    eager, lazy, spark = sources[data]
    reference = exact_fields(eager)
    assert reference["exact_values"] is not None or reference["moments"][0].exact_sums is not None
    for other in (lazy, spark):
        fields = exact_fields(other)
        assert not [k for k in reference if not _same(reference[k], fields[k])]


@pytest.mark.parametrize("query", BOUNDED, ids=lambda q: q.statistic)
def test_a_privacy_unit_bounds_identically_on_both_polars_engines(sources, query):
    """The bounding's random choice is seeded in the exploration: eager and streaming polars keep
    the same rows."""
    from dpexplorer.data.grouped import EXPLORATION_SEED

    eager, lazy, _ = sources["generated"]
    reference = _fields(query_input(eager, query, "add_remove", bounding_seed=EXPLORATION_SEED))
    fields = _fields(query_input(lazy, query, "add_remove", bounding_seed=EXPLORATION_SEED))
    assert not [k for k in reference if not _same(reference[k], fields[k])]


LOOSE = PrivacyUnit("person", max_groups=3, max_rows=1_000)  # 3 cells, < 1,000 rows per person


@pytest.mark.parametrize("statistic", ["count", "mean"])
def test_a_privacy_unit_that_binds_nothing_gives_identical_answers_on_every_engine(sources, statistic):
    """Spark bounds with other random keys than polars (xxhash64 of the row's content, not
    polars' hash of its number), so the kept rows are the same only where no bound binds: then
    every field (values, D', the person D' removes, the dropped rows in words) is identical."""
    query = GroupBy((Axis("c", categories=("a", "b")),), statistic, "x", -2, 3.5, unit=LOOSE)
    eager, lazy, spark = sources["generated"]
    reference = _fields(query_input(eager, query, "add_remove", bounding_seed=1))
    for other, seed in ((lazy, 2), (spark, 3)):
        fields = _fields(query_input(other, query, "add_remove", bounding_seed=seed))
        assert not [k for k in reference if not _same(reference[k], fields[k])]


def test_a_count_of_all_rows_with_a_privacy_unit_counts_the_rows_on_every_engine(sources):
    """No keys (one group of all rows) and a unit that binds nothing: the count is the number of
    rows with a person on every engine (polars counted one row: the cell index of no axis was a
    lone literal, which a ``select`` does not stretch to the frame's length)."""
    query = GroupBy((), "count", unit=LOOSE)
    eager, lazy, spark = sources["generated"]
    rows = eager.frame.filter(pl.col("person").is_not_null()).height
    for dataset, seed in ((eager, 1), (lazy, 2), (spark, 3)):
        assert query_input(dataset, query, "add_remove", bounding_seed=seed).value_d.tolist() == [rows]


def _kept_shape(frame: pl.DataFrame, k: int, r: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(kept rows per person and cell, what the rule keeps there: min(r, own rows) in min(k, own
    cells) cells) on the generated data's cells a, b, other."""
    frame = frame.filter(pl.col("person").is_not_null()).with_columns(
        cell=pl.when(pl.col("c").is_in(["a", "b"])).then(pl.col("c")).otherwise(pl.lit("other"))
    )
    per_cell = frame.group_by("person", "cell").len().sort("person", "cell")
    per_person = per_cell.group_by("person").agg(
        pl.len().clip(upper_bound=k).alias("groups"), pl.col("len").max().clip(upper_bound=r).alias("most")
    )
    return per_cell, per_person.sort("person")


def test_spark_bounds_by_the_same_rule_reproducibly(sources):
    """On Spark every person keeps min(k, own groups) groups and at most r rows in each (exactly
    min(r, own rows) there), as on polars, with the same total number of kept persons; the same
    seed keeps the same rows, another seed others."""
    from dpexplorer.data.engine import BoundContributions
    from dpexplorer.data.engine.spark_engine import SparkEngine

    eager, _, spark = sources["generated"]
    step = BoundContributions("person", (Axis("c", categories=("a", "b")),), 2, 3, 11)
    kept = pl.DataFrame(SparkEngine._bound(spark.frame, step).toArrow())
    full_cells, _ = _kept_shape(eager.frame, 2, 3)
    kept_cells, kept_persons = _kept_shape(kept, 2, 3)
    want = full_cells.join(kept_cells, on=["person", "cell"], suffix="_kept")
    assert want.height == kept_cells.height  # kept cells are cells the person has
    assert (want["len_kept"] == want["len"].clip(upper_bound=3)).all()
    _, full_persons = _kept_shape(eager.frame, 2, 3)
    assert kept_persons["groups"].to_list() == full_persons["groups"].to_list()
    again = pl.DataFrame(SparkEngine._bound(spark.frame, step).toArrow())
    other = pl.DataFrame(SparkEngine._bound(spark.frame, replace(step, seed=12)).toArrow())
    order = kept.columns
    assert again.sort(order, nulls_last=True).equals(kept.sort(order, nulls_last=True))
    assert not other.sort(order, nulls_last=True).equals(kept.sort(order, nulls_last=True))


def test_spark_chooses_among_identical_rows_uniformly(tmp_path, spark):
    """3,000 persons with rows x, x, y in one group, one row kept: x (two identical rows) is kept
    for two thirds of them (a content hash alone would give x and y one key each: a half)."""
    from scipy import stats

    from dpexplorer.data.engine import BoundContributions
    from dpexplorer.data.engine.spark_engine import SparkEngine, open_spark

    persons = 3_000
    path = tmp_path / "duplicates.parquet"
    pl.DataFrame(
        {"p": np.repeat(np.arange(persons), 3), "g": ["a"] * (3 * persons), "v": [0, 0, 1] * persons}
    ).write_parquet(path)
    step = BoundContributions("p", (Axis("g", categories=("a",)),), 1, 1, 5)
    kept = pl.DataFrame(SparkEngine._bound(open_spark(path).frame, step).toArrow())
    assert kept.height == persons and kept["p"].n_unique() == persons
    x = int((kept["v"] == 0).sum())
    assert stats.binomtest(x, persons, 2 / 3).pvalue > 1e-4


@pytest.mark.parametrize("statistic", ["mean", "quantile"])
@pytest.mark.parametrize("column", ["c", "k"])
def test_private_keys_find_the_same_candidates_on_every_engine(sources, column, statistic):
    """Keys selected privately (text and integer keys, with missing values): the same candidates,
    persons and statistics (a quantile's sorted values per candidate) on every engine (no
    privacy unit)."""
    query = GroupBy((), statistic, "x", -2, 3.5, private=PrivateKeys((column,), 1.0, 1e-6), q=0.75)
    eager, lazy, spark = sources["generated"]
    reference = _fields(query_input(eager, query, "add_remove"))
    for other in (lazy, spark):
        fields = _fields(query_input(other, query, "add_remove"))
        assert not [k for k in reference if not _same(reference[k], fields[k])]


def test_two_private_key_columns_of_hundreds_of_values_on_every_engine(sources):
    """Private keys over the ISO dates (some 700 values: past JOIN_ABOVE, so Spark finds each row's
    cell by a join, where a chain of tests made a plan too deep) and k, with a privacy unit whose
    bounds keep every row (the same rows on every engine): the same sparse candidates, persons
    and means everywhere."""
    from dpexplorer.data.engine.spark_columns import JOIN_ABOVE

    eager, lazy, spark = sources["generated"]
    assert eager.frame["d"].n_unique() > 20 * JOIN_ABOVE
    unit = PrivacyUnit("person", max_groups=1_000, max_rows=1_000)
    query = GroupBy((), "mean", "x", -2, 3.5, unit, PrivateKeys(("d", "k"), 1.0, 1e-6))
    reference = _fields(query_input(eager, query, "add_remove", bounding_seed=1, exact_sums=True))
    assert len(reference["labels"]) > 2_000
    for other in (lazy, spark):
        fields = _fields(query_input(other, query, "add_remove", bounding_seed=1, exact_sums=True))
        assert not [k for k in reference if not _same(reference[k], fields[k])]


def test_the_generated_data_exercises_missing_and_clipping(sources):
    eager, _, spark = sources["generated"]
    assert spark.warnings == (
        "column 'x': NaN or infinity in 3 rows; those values are treated as missing",
    ) or ("NaN or infinity" in spark.warnings[0])
    x = eager.frame["x"]
    assert x.null_count() > 100 and (x < -2).sum() > 100 and (x > 3.5).sum() > 100
    assert eager.frame["k"].null_count() > 100 and eager.frame["c"].null_count() > 100


def test_a_csv_file_is_one_table_on_every_engine(sources):
    """Spark reads CSV text with the polars loader's schema (issue 17): ISO dates are dates,
    days written 2021-3-1 stay text (Spark's own inference makes them timestamps), a column of
    numbers with a word is numeric with the same note, integers with missing values are
    integers; the same rows and values, hence one content fingerprint (one budget)."""
    eager, lazy, spark = sources["csv"]
    kinds = {"x": pl.Float64, "k": pl.Int64, "c": pl.String, "b": pl.Boolean, "d": pl.Date}
    assert {c: eager.schema[c] for c in kinds} == kinds
    assert eager.schema["when"] == pl.String and eager.schema["score"] == pl.Float64
    assert spark.schema == lazy.schema == eager.schema
    assert [c.kind for c in spark.columns] == [c.kind for c in eager.columns]
    assert spark.warnings == eager.warnings and any("'score'" in w for w in eager.warnings)
    assert spark.preview(50).equals(eager.preview(50))
    assert spark.content_fingerprint == eager.content_fingerprint


def test_spark_reads_a_csv_file_as_the_loader_does(tmp_path, spark):
    """The loader's separator (sniffed semicolons), quotes doubled inside quotes, a line break
    inside quotes, rows with the wrong number of fields and blank lines set aside (and not
    counted), text that polars does not read as a number (1d, 0x10: Java would) made missing,
    infinities made missing, with the loader's notes."""
    from dpexplorer.data.engine.spark_engine import open_spark

    path = tmp_path / "semicolons.csv"
    rows = ['1;"say ""hi""";2021-03-01;1.5', "2;b;2021-3-2;1d", "3;c;;0x10", "4;d;2021-03-04;inf"]
    rows += ["5;e;2021-03-05;1;9", "6;f", "7;g;2021-03-07;1e400", '8;"two\nlines";2021-03-08;-2.5e-1']
    rows += [f"{i};h;2021-03-09;{i}.5" for i in range(9, 70)]  # 95% numbers: v is numeric
    rows.insert(20, "")  # a blank line: no row on either engine
    path.write_text("n;t;day;v\n" + "\n".join(rows) + "\n\n")
    eager, spark_read = load_dataset(path), open_spark(path)
    assert eager.schema == pl.Schema({"n": pl.Int64, "t": pl.String, "day": pl.String, "v": pl.Float64})
    assert spark_read.schema == eager.schema
    assert spark_read.warnings == eager.warnings and len(eager.warnings) == 6
    assert any("column 'day' is read as text: 1 of its 66 values spell no day" in w for w in eager.warnings)
    assert spark_read.preview(100).equals(eager.preview(100))  # the hidden kept text left out
    assert spark_read.n_rows == eager.n_rows == 67 == true_answer(spark_read, Count())
    assert eager.frame["t"][0] == 'say "hi"' and eager.frame["t"][5] == "two\nlines"
    assert eager.frame["v"].head(6).to_list() == [1.5, None, None, None, None, -0.25]


def test_spark_refuses_text_it_cannot_read_as_the_loader_does(tmp_path, spark):
    """Columns separated by runs of spaces, or text that is not UTF-8: the loader converts them
    in memory; Spark would read another table, so it refuses, saying what to do."""
    from dpexplorer.data.engine.spark_engine import open_spark
    from dpexplorer.data.errors import DataError

    spaces = tmp_path / "spaces.txt"
    spaces.write_text("a  b\n1  2\n3  4\n")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("city,n\nK\u00f6ln,1\n".encode("latin-1"))
    for path, rows in ((spaces, 2), (latin, 1)):
        assert load_dataset(path).n_rows == rows
        with pytest.raises(DataError, match="re-save it as UTF-8 CSV"):
            open_spark(path)


DATE_CASES = [
    (where("d") >= "2021-03-01", lambda d: d >= datetime.date(2021, 3, 1)),
    (where("d") < "2020-02-29", lambda d: d < datetime.date(2020, 2, 29)),
    (
        where("d").isin(["2020-01-05", "2021-12-30"]),
        lambda d: d in (DAY0.replace(day=5), datetime.date(2021, 12, 30)),
    ),
]


@pytest.mark.parametrize(("predicate", "brute"), DATE_CASES, ids=["ge", "lt", "in"])
def test_a_date_column_is_compared_as_dates_on_every_engine(sources, predicate, brute):
    """The ISO date column is typed as dates on all three engines, and a comparison counts what
    a brute-force count over Python dates counts (missing dates never match)."""
    datasets = sources["generated"]
    days = [datetime.date.fromisoformat(v) for v in datasets[0].frame["d"].cast(pl.String).drop_nulls()]
    expected = sum(1 for d in days if brute(d))
    assert 0 < expected < len(days) < datasets[0].n_rows
    for dataset in datasets:
        assert dataset.schema["d"] == pl.Date and kind_of_dtype(dataset.schema["d"]) == "date"
        assert true_answer(dataset, PredicateCount(predicate)) == expected


@pytest.mark.parametrize("value", ["2021-3-1", "2021-02-30", "01/03/2021", 20210301])
def test_a_date_compared_with_what_is_not_an_iso_date_on_every_engine(sources, value):
    """Text order is not date order for 2021-3-1 (it sorts after 2021-12-01): an ordered
    comparison with text that is not a real day is refused from the query alone; a number, which
    no day cell can match, from the column's type (issue 41), on every engine."""
    from dpexplorer.data.conditions import Compare
    from dpexplorer.data.errors import DataError

    if isinstance(value, str):
        with pytest.raises(DataError, match=r"compares numbers or days.*2021-03-01"):
            Compare("d", ">=", value)
        return
    for dataset in sources["generated"]:
        with pytest.raises(DataError, match="'d' holds days, and the number 20210301 is never a day"):
            true_answer(dataset, PredicateCount(where("d") >= value))


def test_the_steward_summary_agrees_on_spark(sources):
    """Spark's summary (exact missing counts, ranges, common values; estimated distinct counts)
    against the polars engine's on the same file."""
    from dpexplorer.data.engine import engine_of

    eager, _, spark = sources["generated"]
    ours, theirs = engine_of(eager).summary(eager), engine_of(spark).summary(spark)
    assert theirs.n_rows == ours.n_rows == 4_000
    assert [(c.name, c.kind, c.missing, c.span) for c in theirs.columns] == [
        (c.name, c.kind, c.missing, c.span) for c in ours.columns
    ]
    assert dict((c.name, c.span) for c in ours.columns)["d"] == ("2020-01-01", "2021-12-30")
    for approx, exact in zip(theirs.columns, ours.columns, strict=True):
        assert abs(approx.distinct - exact.distinct) <= 0.1 * exact.distinct + 1
    assert theirs.ranges == ours.ranges
    assert {c: set(v) for c, v in theirs.top_values.items()} == {
        c: set(v) for c, v in ours.top_values.items()
    }
    assert spark.preview(5).equals(eager.preview(5))


def test_spark_and_polars_give_the_same_content_fingerprint(sources, spark, tmp_path):
    """One dataset, one budget, whatever the engine: Adult, the visits fixture, and the visits
    rows shuffled into a Parquet file with the columns in another order, all agree with polars
    (Spark computes it by aggregation); another content gives another fingerprint."""
    from dpexplorer.data.engine.spark_engine import open_spark

    eager, _, on_spark = sources["adult"]
    assert on_spark.content_fingerprint == eager.content_fingerprint
    generated_eager, _, generated_spark = sources["generated"]  # with a column typed as dates
    assert generated_spark.content_fingerprint == generated_eager.content_fingerprint
    visits = Path(__file__).parent.parent / "fixtures" / "visits.csv"
    expected = load_dataset(visits).content_fingerprint
    assert open_spark(visits).content_fingerprint == expected
    frame = pl.read_csv(visits)
    shuffled = tmp_path / "shuffled.parquet"
    frame.sample(fraction=1.0, shuffle=True, seed=20).select(reversed(frame.columns)).write_parquet(shuffled)
    assert open_spark(shuffled).content_fingerprint == expected
    fewer = tmp_path / "fewer.parquet"
    frame.slice(1).write_parquet(fewer)
    assert open_spark(fewer).content_fingerprint == load_dataset(fewer).content_fingerprint != expected


def test_the_fingerprint_by_arrow_batches_equals_the_one_by_python_values(spark, monkeypatch):
    """Spark's narrower types (byte, short, int, float) and booleans, missing values, NaN,
    text and days reach polars by Arrow batches as the same values as by Python values (the
    path kept for other types), in a table of several partitions and a dotted column name; the
    executors hash them by numpy or by the compiled kernels alike."""
    import datetime

    from dpexplorer.data.engine import spark_fingerprint
    from dpexplorer.data.engine.spark_columns import polars_schema

    rows = [
        (
            i % 7,
            i * 100,
            i * 70_000,
            i / 3.0,
            i % 2 == 0,
            None if i % 5 else f"text {i}",
            datetime.date(2020, 1, 1 + i % 28),
        )
        for i in range(300)
    ]
    types = "b byte, s short, i int, f float, t boolean, `a.b` string, d date"
    frame = spark.createDataFrame(rows, types).repartition(3)
    frame = frame.union(spark.createDataFrame([(None, None, None, float("nan"), None, None, None)], types))
    schema = polars_schema(frame)
    assert spark_fingerprint._arrow_ready(frame)
    by_arrow = spark_fingerprint.spark_content_fingerprint(frame, schema)
    # the executors' compiled kernels (from the first cell on here) give the same key
    assert spark_fingerprint.spark_content_fingerprint(frame, schema, kernel_cells=1) == by_arrow
    monkeypatch.setattr(spark_fingerprint, "_arrow_ready", lambda frame: False)
    assert spark_fingerprint.spark_content_fingerprint(frame, schema) == by_arrow
    assert by_arrow != spark_fingerprint.spark_content_fingerprint(frame.limit(300), schema)


def test_release_on_spark_charges_the_file_and_releases(tmp_path, spark, capsys):
    """`dpexplorer release --engine spark`: true answers on Spark, the same fingerprint (the
    content's) in the ledger and the sidecar as the polars path charges, so the two engines
    spend one budget."""
    import json

    from dpexplorer.cli import main

    data = tmp_path / "people.csv"
    data.write_text("age,city\n" + "".join(f"{20 + i % 50},{'abc'[i % 3]}\n" for i in range(300)))
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            [
                {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.5}},
                {
                    "query": {"type": "mean", "column": "age", "lower": 0, "upper": 100},
                    "mechanism": "laplace",
                    "parameters": {"epsilon": 0.5},
                },
            ]
        )
    )
    args = ["release", str(plan), "--data", str(data), "--out", str(tmp_path / "out")]
    args += ["--ledger", str(tmp_path / "ledger.sqlite"), "--budget-epsilon", "2"]
    assert main([*args, "--spark-master", "local[2]"]) == 2
    assert "--spark-master needs --engine spark" in capsys.readouterr().err
    assert main([*args, "--engine", "spark", "--spark-master", "local[2]"]) == 0, capsys.readouterr().err
    sidecars = sorted((tmp_path / "out").glob("*.provenance.json"))
    assert len(sidecars) == 2
    fingerprint = load_dataset(data).content_fingerprint
    with Ledger(tmp_path / "ledger.sqlite") as ledger:  # one dataset, one public id, on both engines
        assert all(json.loads(p.read_text())["dataset_id"] == ledger.public_id(fingerprint) for p in sidecars)
    budget = args[: args.index("--budget-epsilon")]
    assert main(budget) == 0, capsys.readouterr().err  # polars: the second half of the budget
    assert main([*budget, "--engine", "spark", "--spark-master", "local[2]"]) == 3  # none left
    assert "left of its budget" in capsys.readouterr().err


def test_synthetic_data_marginals_are_identical_on_every_engine(sources):
    """MST/AIM's input (issue 30): every candidate marginal of 8 Adult columns counted by each
    engine; with a privacy unit of at most 2 rows per person, every engine keeps the same
    number of rows (sum over persons of min(rows, 2)) and the two polars engines the same rows."""
    from dpexplorer.data.marginals import Marginals, adult_marginals, marginal_input

    eager, lazy, spark = sources["adult"]
    base = marginal_input(eager, adult_marginals(2), bounding_seed=1)
    for other in (lazy, spark):
        built = marginal_input(other, adult_marginals(2), bounding_seed=1)
        assert built.n == base.n and set(built.marginals_d) == set(base.marginals_d)
        for clique, counts in base.marginals_d.items():
            np.testing.assert_array_equal(built.marginals_d[clique], counts)
    bounded = Marginals(
        (Axis("c", categories=("a", "b")), Axis("k", edges=(0, 3, 8))), unit=PrivacyUnit("person", max_rows=2)
    )
    eager, lazy, spark = sources["generated"]
    on = {
        name: marginal_input(d, bounded, bounding_seed=5)
        for name, d in (("e", eager), ("l", lazy), ("s", spark))
    }
    assert on["e"].n == on["l"].n == on["s"].n
    for clique, counts in on["e"].marginals_d.items():
        np.testing.assert_array_equal(on["l"].marginals_d[clique], counts)
        assert int(on["s"].marginals_d[clique].sum()) == int(counts.sum())


def test_a_text_cell_reads_as_the_same_number_on_spark(tmp_path, spark):
    """The one rule of data/cells.py on Spark: a clipped statistic of a text column (a third of
    it words) counts true/FALSE as 1/0, nan, inf and words as missing (at the midpoint), as on
    polars; and a mostly numeric column's 'true' loads as 1 on both."""
    from dpexplorer.data.engine import engine_of
    from dpexplorer.data.engine.base import ClippedMoments
    from dpexplorer.data.engine.spark_engine import open_spark

    cells = ["3", " 4.5 ", "true", "FALSE", "nan", "inf", "-Infinity", "abc", "12", "x1"]
    path = tmp_path / "cells.csv"
    path.write_text("y,z\n" + "".join(f"{c},{i}\n" for i, c in enumerate(cells * 30)), encoding="utf-8")
    numeric = tmp_path / "numeric.csv"
    numeric.write_text("y\n" + "".join(f"{i % 9}\n" for i in range(100)) + "true\n", encoding="utf-8")
    request = ClippedMoments("y", 0.0, 10.0)
    for file in (path, numeric):
        local, remote = load_dataset(file), open_spark(file)
        got, want = engine_of(remote).aggregate(remote, request), engine_of(local).aggregate(local, request)
        assert (got.n, got.total) == (want.n, pytest.approx(want.total))
    moments = engine_of(load_dataset(path)).aggregate(load_dataset(path), request)
    assert moments.total == pytest.approx(30 * (3 + 4.5 + 1 + 0 + 10 + 5 * 5))


def _number_text(path: Path, columns: tuple[str, ...] = ("t", "u", "k", "x")) -> Path:
    """3,000 rows: ``t`` text, mostly numbers 0..599 spelt several ways (3, 3.0, " 3", 03) with
    words, days and missing cells (numbers to the loader, the rest kept as text); ``u`` the same
    with a fifth words (text to the loader); ``k`` the numbers as integers; ``x`` multiples of
    1/4. Only ``columns`` are written."""
    rng = np.random.default_rng(43)
    n = 3_000
    k = rng.integers(0, 600, n)
    spelt = [(str(v), f"{v}.0", f" {v}", f"0{v}")[i % 4] for i, v in enumerate(k)]
    for i in np.flatnonzero(rng.random(n) < 0.05):
        spelt[i] = ("x", "2021-03-01", "", None)[i % 4]
    words = [c if i % 5 else "w" for i, c in enumerate(spelt)]  # a fifth words: a text column
    pl.DataFrame(
        {
            "t": pl.Series(spelt, dtype=pl.String),
            "u": pl.Series(words, dtype=pl.String),
            "k": k,
            "x": rng.integers(-40, 40, n) / 4.0,
        }
    ).select(columns).write_parquet(path)
    return path


NUMBERS = tuple(str(i) for i in range(500))
NUMBER_CATEGORIES = [  # (query, the columns written: without t, which the loader reads as
    # numbers, a Parquet file is scanned as it is written and grouped by its dictionary codes)
    (Histogram(Axis("t", categories=NUMBERS)), ("t",)),
    (Histogram(Axis("k", categories=NUMBERS)), ("k",)),
    (Histogram(Axis("t", categories=(*range(300), 0.25, "x", "2021-03-01", ""))), ("t",)),
    (GroupBy((Axis("u", categories=("1", "2", "3", "w")),), "mean", "x", -2, 3.5), ("u", "x")),
    (GroupBy((Axis("t", categories=NUMBERS[:300]),), "sum", "x", -2, 3.5), ("t", "x")),
    (Histogram(Axis("x", edges=tuple(i / 8 - 10 for i in range(161)))), ("x",)),
]


@pytest.mark.parametrize(
    ("query", "columns"),
    NUMBER_CATEGORIES,
    ids=[f"{q.kind}-{i}" for i, (q, _) in enumerate(NUMBER_CATEGORIES)],
)
def test_categories_that_spell_numbers_match_alike_on_every_engine(tmp_path, spark, query, columns):
    """Issue 43: hundreds of categories that spell numbers (and 160 bins) are looked up, not
    tested one by one, with the same cells on polars eager, streaming (and its Parquet
    dictionary path, which read "3" as the text 3 only) and Spark (which joins)."""
    from dpexplorer.data.engine.spark_engine import open_spark

    path = _number_text(tmp_path / "numbers.parquet", columns)
    eager, lazy, remote = load_dataset(path, lazy=False), load_dataset(path, lazy=True), open_spark(path)
    reference = _fields(query_input(eager, query, "add_remove"))
    for other in (lazy, remote):
        fields = _fields(query_input(other, query, "add_remove"))
        assert not [k for k in reference if not _same(reference[k], fields[k])]


def test_spark_joins_categories_that_spell_numbers(tmp_path, spark):
    """The cell column's plan does not grow with the categories: 20 and 2,000 number categories
    make plans with as many tests (a chain of one test per category made a plan too deep)."""
    from dpexplorer.data.engine.spark_columns import with_cell
    from dpexplorer.data.engine.spark_engine import open_spark

    frame = open_spark(_number_text(tmp_path / "numbers.parquet")).frame

    def tests(n: int) -> int:
        axis = Axis("t", categories=tuple(str(i) for i in range(n)))
        plan = with_cell(frame, (axis,), "cell")._jdf.queryExecution().logical().toString()
        return plan.count("CASE WHEN")

    assert tests(20) == tests(2_000)
