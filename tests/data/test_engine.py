"""The engine contract (dpexplorer.data.engine): what comes back, what is asked for, caching."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpexplorer.core.neighbours import worst_case_neighbour
from dpexplorer.core.sensitivity import statistic_function, window_of_sorted
from dpexplorer.data import aggregates, answers
from dpexplorer.data.answers import query_input, true_answer
from dpexplorer.data.engine import (
    POLARS,
    CellCounts,
    ClippedMoments,
    Filter,
    MeanParts,
    Moments,
    OrderWindow,
    PolarsEngine,
    RowCount,
    SortedClipped,
    polars_engine,
)
from dpexplorer.data.engine.base import Engine
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import Axis, Count, Histogram, Mean, Median, PredicateCount, Sum, where


@pytest.fixture
def small(tmp_path: Path):
    p = tmp_path / "s.csv"
    p.write_text("x,c\n1,a\n,b\n3,\n9,a\n-2,b\n")
    return load_dataset(p)


def test_requests_return_aggregates(small):
    assert POLARS.aggregate(small, RowCount()) == 5
    assert POLARS.aggregate(small, RowCount(where("c") == "a")) == 2
    # missing -> midpoint 2; 9 -> 4; -2 -> 0
    assert POLARS.aggregate(small, ClippedMoments("x", 0, 4)) == Moments(5, 1 + 2 + 3 + 4 + 0, 0.0, 4.0)
    assert list(POLARS.aggregate(small, SortedClipped("x", 0, 4))) == [0, 1, 2, 3, 4]
    cells = POLARS.aggregate(
        small, CellCounts((Axis("c", categories=("a", "b")), Axis("x", edges=(0, 2, 10))))
    )
    # c=a: x 1 -> bin 0, 9 -> bin 1; c=b: missing x -> "missing", -2 -> bin 0; other: 3 -> bin 1
    assert list(cells) == [1, 1, 0, 1, 0, 1, 0, 1, 0]


def test_filter_step_agrees_with_a_predicate(small):
    rich = where("x") >= 1
    assert (
        POLARS.aggregate(small, RowCount(), (Filter(rich),)) == POLARS.aggregate(small, RowCount(rich)) == 3
    )
    assert POLARS.aggregate(small, ClippedMoments("x", 0, 4), (Filter(rich),)) == Moments(3, 8.0, 1.0, 4.0)
    empty = POLARS.aggregate(small, ClippedMoments("x", 0, 4), (Filter(where("x") > 100),))
    assert empty == Moments(0, 0.0, None, None)


def test_an_unregistered_operation_is_refused(small):
    class Nothing:
        pass

    with pytest.raises(TypeError, match="does not implement Nothing"):
        POLARS.aggregate(small, Nothing())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="does not implement Nothing"):
        POLARS.aggregate(small, RowCount(), (Nothing(),))  # type: ignore[arg-type]


class Recording(PolarsEngine):
    """The polars engine, noting every request it evaluates."""

    def __init__(self) -> None:
        self.asked: list[object] = []

    def aggregate(self, dataset, request, steps=()):
        self.asked.append(request)
        return super().aggregate(dataset, request, steps)


@pytest.fixture
def recorded(small, monkeypatch):
    engine = Recording()
    monkeypatch.setattr(aggregates, "engine_of", lambda dataset: engine)
    return engine


def test_sums_and_means_never_ask_for_the_sorted_column(small, recorded):
    for relation in ("add_remove", "replace"):
        for query in (Sum("x", 0, 4), Mean("x", 0, 4)):
            inp = query_input(small, query, relation)
            assert inp.sorted_values_d is None and inp.n == 5
    assert not any(isinstance(r, SortedClipped) for r in recorded.asked)
    inp = query_input(small, Median("x", 0, 4))
    assert isinstance(recorded.asked[-1], OrderWindow)  # the true answers select, never sort
    assert not any(isinstance(r, SortedClipped) for r in recorded.asked) and len(inp.sorted_values_d) == 5
    assert list(np.asarray(inp.sorted_values_d)) == [0, 1, 2, 3, 4]  # read by a mechanism: sorted
    assert isinstance(recorded.asked[-1], SortedClipped)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("lazy", [False, True])
def test_the_window_found_by_selection_is_the_slice_of_the_sorted_column(tmp_path, monkeypatch, lazy, fmt):
    """Selection on: ties (values on a 1/8 grid, many per bin), missing values at the midpoint,
    values beyond both bounds, a filter, quantiles at both ends; few bins so that a window spans
    several. Only a lazily scanned Parquet file selects; a frame in memory and a CSV hold the
    column once and partition it at the ranks: the same slice either way."""
    rng = np.random.default_rng(3)
    x = rng.integers(-90, 90, 6_000) / 8.0
    x[rng.random(x.size) < 0.1] = np.nan
    path = tmp_path / f"w.{fmt}"
    frame = pl.DataFrame({"x": x, "k": rng.integers(0, 3, x.size)}).with_columns(pl.col("x").fill_nan(None))
    frame.write_parquet(path) if fmt == "parquet" else frame.write_csv(path)
    dataset = load_dataset(path, lazy=lazy)
    monkeypatch.setattr(polars_engine, "SELECT_ABOVE", 0)
    monkeypatch.setattr(polars_engine, "SELECT_BINS", 64)
    nothing = POLARS.aggregate(dataset, OrderWindow("x", -5.0, 7.5), (Filter(where("k") > 5),))
    assert (nothing.window.n, len(nothing.window.values), nothing.ends) == (0, 0, None)
    for steps in ((), (Filter(where("k") == 1),)):
        for q, radius in ((0.5, 2), (0.001, 2), (1.0, 2), (0.37, 40)):
            request = OrderWindow("x", -5.0, 7.5, q, radius)
            found = POLARS.aggregate(dataset, request, steps)
            column = POLARS.aggregate(dataset, SortedClipped("x", -5.0, 7.5), steps)
            expected = window_of_sorted(column, q, radius)
            assert (found.window.n, found.window.start) == (expected.n, expected.start)
            assert np.array_equal(found.window.values, expected.values)
            assert (found.smallest, found.largest) == (column[0], column[-1])


def test_a_mean_reads_the_data_once_for_both_its_aggregates(small, recorded):
    query_input(small, Mean("x", 0, 4))
    assert recorded.asked == [MeanParts("x", 0, 4)]  # then both parts come from the cache
    both = POLARS.aggregate(small, MeanParts("x", -1, 3), (Filter(where("c") == "a"),))
    parts = MeanParts("x", -1, 3).parts
    assert both == tuple(POLARS.aggregate(small, p, (Filter(where("c") == "a"),)) for p in parts)
    assert both[0] == Moments(2, 4.0, 1.0, 3.0) and both[1].count == 2
    exact = MeanParts("x", -1, 3, exact=True)
    assert POLARS.aggregate(small, exact) == tuple(POLARS.aggregate(small, p) for p in exact.parts)
    assert POLARS.aggregate(small, exact)[0].exact_total == 1 + 1 + 3 + 3 - 1  # missing at the midpoint 1


def test_answers_are_cached_per_query(small, recorded):
    q = PredicateCount(where("c") == "b")
    for relation in ("add_remove", "replace", "add_remove"):
        query_input(small, q, relation)
        true_answer(small, q)
    true_answer(small, Histogram(Axis("c", categories=("a",))))
    true_answer(small, Histogram(Axis("c", categories=("a",))))
    query_input(small, Count())
    expected = {RowCount(q.predicate), RowCount(), CellCounts((Axis("c", categories=("a",)),))}
    assert len(recorded.asked) == 3 and set(recorded.asked) == expected  # each evaluated once
    cached = answers.cell_counts(small, (Axis("c", categories=("a",)),))
    with pytest.raises(ValueError):
        cached[0] = 99  # a cached answer cannot be altered by whoever reads it


@settings(max_examples=60, deadline=None)
@given(
    x=st.lists(st.integers(-5, 15), min_size=0, max_size=8),
    relation=st.sampled_from(["add_remove", "replace"]),
    kind=st.sampled_from(["sum", "mean"]),
)
def test_the_neighbour_from_aggregates_is_the_neighbour_from_the_sorted_column(x, relation, kind):
    """Same change and same f(D') as core.neighbours.worst_case_neighbour on the sorted column."""
    lower, upper = 0.0, 10.0
    values = np.sort(np.clip(np.array(x, dtype=float), lower, upper))
    m = Moments(len(values), float(values.sum()), *((values[0], values[-1]) if len(values) else (None, None)))
    query = (Sum if kind == "sum" else Mean)("x", lower, upper)
    change, f_prime = answers._moment_neighbour(m, query, relation)
    expected = worst_case_neighbour(values, lower, upper, statistic_function(kind, lower, upper), relation)
    assert change == expected[0]
    assert f_prime == pytest.approx(expected[1], abs=1e-12)


def test_the_engine_is_an_abstract_contract():
    with pytest.raises(TypeError):
        Engine()  # type: ignore[abstract]
    assert POLARS.label(load_dataset_small_lazy()) == "polars, streaming scan"


def load_dataset_small_lazy():
    from dpexplorer.data.default import default_dataset_path

    return load_dataset(default_dataset_path(), lazy=True)


def test_the_cache_drops_the_oldest_arrays_past_its_byte_budget(small, recorded, monkeypatch):
    monkeypatch.setattr(aggregates, "CACHE_BYTES", 50)  # room for one 5-value column (40 bytes)
    first, second = SortedClipped("x", 0, 4), SortedClipped("x", 0, 3)
    aggregates.aggregate(small, first)
    aggregates.aggregate(small, second)
    aggregates.aggregate(small, second)
    assert len(recorded.asked) == 2  # the second is still cached ...
    aggregates.aggregate(small, first)
    assert len(recorded.asked) == 3  # ... the first was dropped to make room for it
