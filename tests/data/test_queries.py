"""Queries: validation messages, plain-English descriptions, JSON round trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import (
    And,
    ArgMax,
    Axis,
    CellQuery,
    Compare,
    Count,
    Histogram,
    Mean,
    Median,
    Not,
    Or,
    PredicateCount,
    Quantile,
    Sum,
    TopK,
    TrimmedMean,
    Workload,
    marginal_workload,
    query_from_dict,
    range_workload,
    where,
)


@pytest.fixture(scope="module")
def schema():
    return load_dataset(default_dataset_path()).schema


AGE = Axis("age", edges=(17, 30, 50, 91))
SEX = Axis("sex", categories=("Male", "Female"))
QUERIES = [
    Count(),
    PredicateCount((where("income") == ">50K") & ~(where("sex") != "Female")),
    PredicateCount(Or((where("age") < 20, where("race").isin(["White", "Black"]), Not(where("age") >= 60)))),
    Sum("capital_gain", 0, 99_999),
    Mean("age", 17, 90),
    Median("hours_per_week", 0, 99),
    Quantile("age", 17, 90, 0.9),
    TrimmedMean("capital_gain", 0, 99_999, 0.05),
    Histogram(SEX),
    Histogram(AGE),
    ArgMax("occupation", ("Prof-specialty", "Craft-repair")),
    TopK("occupation", ("Prof-specialty", "Craft-repair", "Sales"), 2),
    marginal_workload([SEX, AGE]),
    range_workload(AGE),
]


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: q.kind)
def test_round_trip_describe_and_check(query, schema):
    d = json.loads(json.dumps(query.to_dict()))
    assert query_from_dict(d) == query
    text = query.describe()
    assert text and "{" not in text.replace("{Male", "")
    query.check(schema)


def test_descriptions_read_as_english():
    q = PredicateCount((where("income") == ">50K") & ((where("age") >= 40) | (where("sex") == "Female")))
    assert q.describe() == "the number of rows where income is >50K and (age is at least 40 or sex is Female)"
    assert Median("age", 17, 90).describe() == "the median of age, clipped to [17, 90]"
    assert TrimmedMean("age", 0, 100, 0.1).describe() == "the 10%-trimmed mean of age, clipped to [0, 100]"
    assert marginal_workload([SEX, AGE], ways=(1,)).describe().startswith("7 counting queries over 12 cells")
    assert len(range_workload(AGE).queries) == 6


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Mean("age", 90, 17), "inverted"),
        (lambda: Sum("age", 0, float("inf")), "finite"),
        (lambda: Quantile("age", 0, 1, 1.5), "quantile"),
        (lambda: TrimmedMean("age", 0, 1, 0.5), "trimmed fraction"),
        (lambda: Compare("age", "=~", 3), "unknown comparison"),
        (lambda: Compare("age", "in", ()), "at least one value"),
        (lambda: Axis("age"), "either categories or bin edges"),
        (lambda: Axis("age", edges=(3, 2)), "increase"),
        (lambda: Axis("sex", categories=("a", "a")), "repeat"),
        (lambda: TopK("sex", ("a", "b"), 3), r"k \(of the 2 categories\) must be"),
        (lambda: And(()), "at least one"),
        (lambda: Workload((SEX,), (CellQuery("bad", ((0, (7,)),)),)), "outside"),
        (lambda: query_from_dict({"type": "mean", "column": "age"}), "malformed"),
        (lambda: query_from_dict({"type": "eval", "code": "1"}), "unknown query type"),
        (lambda: query_from_dict({"type": "predicate_count", "predicate": {"x": 1}}), "not a condition"),
    ],
)
def test_invalid_queries_raise_data_errors(build, message):
    with pytest.raises(DataError, match=message):
        build()


def test_only_the_column_name_and_type_are_checked_against_the_schema(schema):
    """Issue 32: a comparison applies to any column, each cell read by the per-cell rule
    (tests/data/test_conditions.py); a missing column is refused, and (issue 41) a comparison no
    cell of the column's type can match: a day against numbers."""
    with pytest.raises(DataError, match="unknown column 'agee'"):
        Mean("agee", 0, 1).check(schema)
    for p in (where("age") == "old", where("sex") == 1, where("sex") >= 2):
        PredicateCount(p).check(schema)
    with pytest.raises(DataError, match="'age' holds numbers, not days"):
        PredicateCount(where("age") < "2021-03-01").check(schema)


@pytest.mark.parametrize("value", ["M", "2021-02-30", " "])
def test_an_ordered_comparison_with_text_is_refused_from_the_query_alone(value):
    with pytest.raises(DataError, match="compares numbers or days"):
        Compare("sex", "<", value)


def test_a_statistic_with_bounds_applies_to_a_text_column(schema):
    """Issue 32: the column's inferred type is not a public fact; the engines read it as numbers
    (tests/data/test_measured_columns.py)."""
    Mean("sex", 0, 1).check(schema)
    Histogram(Axis("sex", edges=(0, 1))).check(schema)


scalars = st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b", "3", "2021-03-01"]))
ordered = st.one_of(st.integers(-5, 5), st.sampled_from(["3", "2021-03-01"]))
columns = st.sampled_from(["x", "y"])
compare = st.one_of(
    st.builds(Compare, columns, st.sampled_from(["==", "!="]), scalars),
    st.builds(Compare, columns, st.sampled_from(["<", ">="]), ordered),
)
predicates = st.recursive(
    compare,
    lambda inner: st.one_of(
        st.builds(lambda ts: And(tuple(ts)), st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda ts: Or(tuple(ts)), st.lists(inner, min_size=1, max_size=3)),
        st.builds(Not, inner),
    ),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None)
@given(p=predicates)
def test_predicates_round_trip(p):
    q = PredicateCount(p)
    assert query_from_dict(json.loads(json.dumps(q.to_dict()))) == q
    assert q.describe()
