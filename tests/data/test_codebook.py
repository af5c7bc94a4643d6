"""The codebook (dpexplorer/data/codebook.py): its file format, the facts a query uses and their
origins, filling a query in from it, and Adult's shipped codebook against Adult's documentation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dpexplorer.data.codebook import (
    EMPTY,
    Codebook,
    ColumnFacts,
    Fact,
    Unit,
    codebook_from_dict,
    complete_query,
    facts_used,
    load_codebook,
    missing,
    save_codebook,
    schema_path,
    shipped_codebook,
    shipped_codebook_path,
    undeclared,
)
from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.errors import DataError


def _book() -> Codebook:
    return Codebook(
        {
            "age": ColumnFacts(
                "age",
                "number",
                bounds=Fact((0, 100), "declared", "the survey's form"),
                edges=Fact((0, 50, 100), "declared"),
            ),
            "sex": ColumnFacts("sex", "category", categories=Fact(("F", "M"), "shipped", "docs")),
            "city": ColumnFacts("city", "category", categories=Fact(("Paris",), "declared", complete=False)),
            "income": ColumnFacts("income", "number", bounds=Fact((0, 1e6), "estimated", ledger_id=7)),
        },
        rows=Fact(1000, "declared"),
        dataset="abc",
        citation="a test",
    )


def _file(**overrides: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "codebook": 1,
        "columns": {"age": {"kind": "number", "bounds": {"value": [0, 100], "origin": "declared"}}},
    }
    d.update(overrides)
    return d


# ---------------------------------------------------------------- the file format
def test_a_codebook_survives_its_file(tmp_path: Path) -> None:
    book = _book()
    path = tmp_path / "book.json"
    save_codebook(book, path)
    again = load_codebook(path)
    assert again == book
    assert list(again.columns) == ["age", "sex", "city", "income"]  # insertion order kept
    assert again.fact("income", "bounds") == Fact((0.0, 1e6), "estimated", ledger_id=7)
    assert again.fact("city", "categories").complete is False  # type: ignore[union-attr]
    assert json.loads(path.read_text())["columns"]["age"]["bounds"]["value"] == [0, 100]
    assert not [p for p in tmp_path.iterdir() if p.name != "book.json"]  # no temporary left


def test_save_replaces_a_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "book.json"
    path.write_text("old content that is not a codebook")
    save_codebook(EMPTY, path)
    assert load_codebook(path) == EMPTY


def test_origin_defaults_to_declared_in_a_hand_written_file() -> None:
    book = codebook_from_dict(
        {"codebook": 1, "columns": {"age": {"kind": "number", "bounds": {"value": [1, 2]}}}}
    )
    assert book.fact("age", "bounds") == Fact((1.0, 2.0), "declared")


BAD_FILES = [
    (_file(codebook=2), "must be 1"),
    ({"columns": {}}, '"codebook" must be 1'),
    (_file(columns={"age": {"kind": "numeric"}}), "column 'age': kind must be one of number, category"),
    (_file(columns={"age": {"bounds": {"value": [0, 1]}}}), "column 'age': no kind"),
    (
        _file(columns={"age": {"kind": "number", "bounds": {"value": [90, 17]}}}),
        "column 'age': bounds: bounds are inverted or empty: lower 90 >= upper 17",
    ),
    (
        _file(columns={"age": {"kind": "number", "bounds": {"value": [0, float("inf")]}}}),
        "column 'age': bounds: bounds must be two finite numbers",
    ),
    (
        _file(columns={"sex": {"kind": "category", "categories": {"value": ["F", "M", "F"]}}}),
        "column 'sex': categories: categories repeat 'F'",
    ),
    (
        _file(columns={"sex": {"kind": "category", "bounds": {"value": [0, 1]}}}),
        "column 'sex': a category column has no bounds",
    ),
    (
        _file(columns={"age": {"kind": "number", "bounds": {"value": [0, 1], "units": "years"}}}),
        "column 'age': bounds: unknown field 'units'",
    ),
    (_file(colour="red"), "codebook: unknown field 'colour'"),
    (_file(columns={"age": {"kind": "number", "range": [0, 1]}}), "column 'age': unknown field 'range'"),
    (
        _file(columns={"age": {"kind": "number", "bounds": {"value": [0, 1], "origin": "estimated"}}}),
        "column 'age': bounds: an estimated fact needs the ledger_id",
    ),
    (
        _file(columns={"age": {"kind": "number", "bounds": {"value": [0, 1], "origin": "guessed"}}}),
        "column 'age': bounds: origin must be one of declared, estimated, shipped",
    ),
    (
        _file(columns={"age": {"kind": "number", "edges": {"value": [0, 5, 3]}}}),
        "column 'age': edges: edges must increase",
    ),
    (
        _file(columns={"age": {"kind": "number", "bounds": {"value": [0, 1], "complete": True}}}),
        "column 'age': bounds: unknown field 'complete'",
    ),
    (_file(unit={"column": "pid", "max_rows": 0}), "unit: the unit's max_rows must be a whole number"),
    (_file(rows={"value": -3}), "rows: rows must be a whole number >= 0"),
    (_file(columns=[]), "columns must be an object, got a list"),
    ([1, 2], "a codebook must be an object, got a list"),
]


@pytest.mark.parametrize(("content", "message"), BAD_FILES, ids=[m for _, m in BAD_FILES])
def test_a_bad_file_is_refused_in_one_line_naming_the_field(
    tmp_path: Path, content: Any, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    with pytest.raises(DataError) as info:
        load_codebook(path)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"the codebook {path}: ")
    assert message in text


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"{not json", "is not valid JSON"), (b"\xff\xfe\x00", "is not UTF-8 text"), (b"", "is not valid JSON")],
)
def test_a_file_that_is_not_json_is_refused_in_one_line(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "book.json"
    path.write_bytes(data)
    with pytest.raises(DataError, match=message) as info:
        load_codebook(path)
    assert "\n" not in str(info.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"cannot read the codebook .*nowhere\.json"):
        load_codebook(tmp_path / "nowhere.json")


# ---------------------------------------------------------------- building codebooks
def test_with_fact_and_with_column_return_new_codebooks() -> None:
    book = EMPTY.with_fact("age", "bounds", Fact((1, 2), "declared"))
    assert EMPTY.columns == {}
    assert book.column("age") == ColumnFacts("age", "number", bounds=Fact((1.0, 2.0), "declared"))
    book = book.with_fact("race", "categories", Fact(("a", "b"), "declared"))
    assert book.column("race").kind == "category"  # type: ignore[union-attr]
    assert book.with_fact("age", "bounds", None).fact("age", "bounds") is None
    assert book.with_fact("", "rows", Fact(10, "declared")).rows == Fact(10, "declared")
    replaced = book.with_column(ColumnFacts("age", "number"))
    assert list(replaced.columns) == ["age", "race"] and replaced.fact("age", "bounds") is None
    with pytest.raises(DataError, match="a category column has no bounds"):
        book.with_fact("race", "bounds", Fact((0, 1), "declared"))
    with pytest.raises(DataError, match="unknown fact 'range'"):
        book.with_fact("age", "range", Fact((0, 1), "declared"))


# ---------------------------------------------------------------- a query and the codebook
def test_complete_query_takes_missing_facts_from_the_codebook() -> None:
    book = _book()
    assert complete_query({"type": "mean", "column": "age"}, book) == {
        "type": "mean",
        "column": "age",
        "lower": 0.0,
        "upper": 100.0,
    }
    assert complete_query({"type": "mean", "column": "age", "lower": 10}, book)["upper"] == 100.0
    top = complete_query({"type": "top_k", "column": "sex", "k": 1}, book)
    assert top["categories"] == ["F", "M"]
    hist = complete_query({"type": "histogram", "axis": {"column": "age"}}, book)
    assert hist["axis"] == {"column": "age", "edges": [0.0, 50.0, 100.0]}  # declared edges first
    grouped = complete_query(
        {"type": "group_by", "keys": [{"column": "sex"}], "statistic": "sum", "column": "income"}, book
    )
    assert grouped["keys"] == [{"column": "sex", "categories": ["F", "M"]}]
    assert (grouped["lower"], grouped["upper"]) == (0.0, 1e6)
    query = {"type": "mean", "column": "age"}
    complete_query(query, book)
    assert query == {"type": "mean", "column": "age"}  # the input is not changed


def test_a_fact_neither_holds_stays_missing_and_is_named() -> None:
    book = _book()
    query = {"type": "histogram", "axis": {"column": "zip"}}
    assert complete_query(query, book) == query
    assert missing(query, book) == ["the categories or bin edges of zip"]
    assert missing({"type": "sum", "column": "zip"}, book) == ["the bounds of zip"]
    assert missing({"type": "sum", "column": "age"}, book) == []
    assert missing({"type": "count"}, book) == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            {"type": "mean", "column": "age", "lower": -5, "upper": 100},
            "the bounds of 'age' [-5, 100] contradict the codebook's [0, 100] (declared)",
        ),
        (
            {"type": "quantile", "column": "age", "upper": 120},
            "the bounds of 'age' [0, 120] contradict the codebook's [0, 100]",
        ),
        (
            {"type": "histogram", "axis": {"column": "sex", "categories": ["F", "X"]}},
            "the category 'X' of 'sex' contradicts the codebook, whose complete list is 'F', 'M'",
        ),
        (
            {"type": "top_k", "column": "sex", "categories": ["M", "Other"], "k": 1},
            "the category 'Other' of 'sex' contradicts",
        ),
    ],
)
def test_a_query_that_contradicts_the_codebook_is_refused_naming_both(
    query: dict[str, Any], message: str
) -> None:
    with pytest.raises(DataError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        complete_query(query, _book())


def test_clipping_within_the_bounds_and_an_incomplete_list_are_the_querys_choice() -> None:
    book = _book()
    assert complete_query({"type": "mean", "column": "age", "lower": 20, "upper": 60}, book)["lower"] == 20
    cats = complete_query({"type": "histogram", "axis": {"column": "city", "categories": ["Lyon"]}}, book)
    assert cats["axis"]["categories"] == ["Lyon"]
    subset = complete_query({"type": "histogram", "axis": {"column": "sex", "categories": ["F"]}}, book)
    assert subset["axis"]["categories"] == ["F"]


def test_the_unit_is_filled_in_checked_and_refused_where_it_cannot_be_bounded() -> None:
    book = dataclass_replace_unit(_book(), Unit("pid", max_rows=3, max_groups=2))
    grouped = complete_query({"type": "group_by", "keys": [{"column": "sex"}]}, book)
    assert grouped["unit"] == {"column": "pid", "max_groups": 2, "max_rows": 3}
    with pytest.raises(DataError, match="the privacy unit 'hid' contradicts the codebook's 'pid'"):
        complete_query({"type": "group_by", "keys": [], "unit": {"column": "hid"}}, book)
    with pytest.raises(DataError, match="a mean cannot bound each person's rows"):
        complete_query({"type": "mean", "column": "age"}, book)
    one_row_each = dataclass_replace_unit(_book(), Unit("pid", max_rows=1, max_groups=None))
    assert "unit" not in complete_query({"type": "mean", "column": "age"}, one_row_each)


def dataclass_replace_unit(book: Codebook, unit: Unit) -> Codebook:
    import dataclasses

    return dataclasses.replace(book, unit=unit)


def test_facts_used_give_each_facts_origin() -> None:
    book = _book()
    used = facts_used({"type": "mean", "column": "income"}, book)
    assert [(u.column, u.field, u.value, u.origin, u.ledger_id) for u in used] == [
        ("income", "bounds", (0.0, 1e6), "estimated", 7)
    ]
    shipped = facts_used({"type": "histogram", "axis": {"column": "sex", "categories": ["F", "M"]}}, book)
    assert [(u.value, u.origin, u.citation) for u in shipped] == [(("F", "M"), "shipped", "docs")]
    # the query's own value, not the codebook's: the codebook does not declare it
    clipped = facts_used({"type": "mean", "column": "age", "lower": 20, "upper": 60}, book)
    assert [(u.value, u.origin) for u in clipped] == [((20, 60), None)]
    assert undeclared({"type": "mean", "column": "age", "lower": 20, "upper": 60}, book) == [
        "the bounds of age"
    ]
    assert undeclared({"type": "mean", "column": "age", "lower": 0, "upper": 100}, book) == []
    assert undeclared({"type": "histogram", "axis": {"column": "zip", "categories": ["1"]}}, book) == [
        "the categories of zip"
    ]


def test_equal_bins_between_declared_bounds_take_the_bounds_origin() -> None:
    book = _book()
    even = facts_used(
        {"type": "histogram", "axis": {"column": "income", "edges": [0, 250e3, 500e3, 750e3, 1e6]}}, book
    )
    assert [(u.field, u.origin, u.ledger_id) for u in even] == [("edges", "estimated", 7)]
    # bins ending at an observed maximum are not declared by the bounds
    uneven = {"type": "histogram", "axis": {"column": "income", "edges": [0, 4993.4]}}
    assert undeclared(uneven, book) == ["the bin edges of income"]


# ---------------------------------------------------------------- Adult's shipped codebook
@pytest.fixture(scope="module")
def adult() -> pl.DataFrame:
    return pl.read_parquet(default_dataset_path())


def test_the_shipped_codebook_is_found_for_the_bundled_dataset_only(tmp_path: Path) -> None:
    assert shipped_codebook(default_dataset_path()) == load_codebook(shipped_codebook_path())
    assert shipped_codebook(str(default_dataset_path())) is not None
    assert shipped_codebook("adult") is not None
    copy = tmp_path / "adult.parquet"
    copy.write_bytes(default_dataset_path().read_bytes())
    assert shipped_codebook(copy) is None  # decided from the path, never from contents
    assert shipped_codebook(tmp_path / "other.csv") is None


def test_the_shipped_codebook_follows_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(schema_path().read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(json.loads(shipped_codebook_path().read_text()), schema)


def test_the_schema_refuses_what_the_hand_written_checks_refuse() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(schema_path().read_text())
    validator = jsonschema.Draft202012Validator(schema)
    refused = [c for c, _ in BAD_FILES if not validator.is_valid(c)]
    # the schema cannot say lower < upper, increasing edges or finite numbers: only those pass it
    passed = [m for c, m in BAD_FILES if validator.is_valid(c)]
    assert all(("inverted" in m or "increase" in m or "finite" in m) for m in passed), passed
    assert len(refused) >= len(BAD_FILES) - 3


def test_the_shipped_codebook_describes_every_column_of_adult(adult: pl.DataFrame) -> None:
    book = load_codebook(shipped_codebook_path())
    assert list(book.columns) == adult.columns
    assert book.rows is not None and book.rows.value == adult.height  # adult.names: 48842 instances
    for name, facts in book.columns.items():
        for field_name, fact in facts.facts():
            assert fact.origin == "shipped", (name, field_name)
            assert fact.citation, (name, field_name)


def test_the_shipped_categories_cover_adults_values(adult: pl.DataFrame) -> None:
    """A test of the shipped file against the public documentation it copies: every value in
    the bundled extract is among adult.names' categories (spelt the same), and none is unused."""
    book = load_codebook(shipped_codebook_path())
    for name, facts in book.columns.items():
        if facts.categories is None:
            continue
        assert facts.categories.complete
        occurring = set(adult[name].drop_nulls().unique().to_list())
        assert occurring <= set(facts.categories.value), (name, occurring - set(facts.categories.value))
        assert set(facts.categories.value) <= occurring, name


def test_the_shipped_bounds_hold_adults_values(adult: pl.DataFrame) -> None:
    book = load_codebook(shipped_codebook_path())
    for name, facts in book.columns.items():
        if facts.kind == "number" and facts.bounds is not None:
            lo, hi = facts.bounds.value
            column = adult[name]
            assert column.null_count() == 0
            assert lo <= column.min() and column.max() <= hi, name
    assert book.fact("fnlwgt", "bounds") is None and book.column("fnlwgt").note  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "query",
    [
        {"type": "group_by", "keys": 5},
        {"type": "argmax", "column": "sex", "categories": 7},
        {"type": "histogram", "axis": {"column": "age", "edges": "x"}},
        {"type": "histogram", "axis": {"column": "sex", "categories": 7}},
        {"type": "histogram", "axis": "sex"},
        {"type": "mean", "column": 3},
    ],
)
def test_a_malformed_query_is_left_for_query_from_dict_to_refuse(query: dict[str, Any]) -> None:
    """The codebook's functions neither crash on nor misname a malformed query: it comes back
    as it was, every fact it holds counts as held, and query_from_dict says what is wrong."""
    from dpexplorer.data.queries import query_from_dict

    assert complete_query(query, _book()) == query
    assert missing(query, _book()) == []
    with pytest.raises(DataError):
        query_from_dict(query)


def test_categories_given_as_text_are_checked_as_query_from_dict_reads_them() -> None:
    # query_from_dict reads "FZ" as the categories ("F", "Z"): the codebook checks the same
    with pytest.raises(DataError, match="the category 'Z' of 'sex' contradicts"):
        complete_query({"type": "argmax", "column": "sex", "categories": "FZ"}, _book())
