"""Statistics by group: the answers against a direct computation, the declared sensitivities
against brute force over every neighbour of small datasets, the neighbour the views name, and
the query's round trip."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from dpexplorer.data.answers import query_input, true_answer
from dpexplorer.data.grouped import sensitivities
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import Axis, GroupBy, query_from_dict

LOW, HIGH = -1.0, 3.0
GROUPS = ("a", "b")
AXIS = Axis("g", categories=GROUPS)  # cells a, b, other


def _stat(rows: list[tuple[str, float]], statistic: str) -> np.ndarray:
    """The statistic per cell (a, b, other) computed directly from (group, value) rows."""
    out = []
    mid = (LOW + HIGH) / 2
    for cell in (*GROUPS, None):
        values = [min(max(v, LOW), HIGH) for g, v in rows if (g == cell if cell else g not in GROUPS)]
        if statistic == "count":
            out.append(len(values))
        elif statistic == "sum":
            out.append(sum(values))
        else:
            out.append(sum(values) / len(values) if values else mid)
    return np.array(out, dtype=float)


def _centred(rows: list[tuple[str, float]]) -> np.ndarray:
    mid = (LOW + HIGH) / 2
    sums = _stat(rows, "sum") - mid * _stat(rows, "count")
    return np.concatenate([sums, _stat(rows, "count")])


def _neighbours(rows: list[tuple[str, float]], relation: str):
    """Every neighbour with values on a grid spanning beyond the bounds and every group."""
    candidates = [(g, v) for g in ("a", "b", "z") for v in (-3.0, -1.0, 0.0, 0.5, 3.0, 5.0)]
    if relation == "add_remove":
        yield from ([*rows, c] for c in candidates)
        yield from (rows[:i] + rows[i + 1 :] for i in range(len(rows)))
    else:
        for i, c in itertools.product(range(len(rows)), candidates):
            yield [*rows[:i], c, *rows[i + 1 :]]


DATASETS = [
    [("a", 0.0), ("a", 2.0), ("b", -1.0)],
    [("a", 3.0)],
    [("b", 5.0), ("b", -4.0), ("z", 1.0), ("a", -1.0)],
]


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
@pytest.mark.parametrize("statistic", ["count", "sum", "mean"])
def test_sensitivities_against_brute_force(statistic: str, relation: str) -> None:
    """The declared (l1, l2) is an upper bound over every neighbour of every small dataset, and
    is reached by one of them (so it is the global sensitivity)."""
    query = GroupBy((AXIS,), statistic, None if statistic == "count" else "v", LOW, HIGH)
    l1, l2 = sensitivities(query, relation)  # type: ignore[arg-type]
    worst1 = worst2 = 0.0
    for rows in DATASETS:
        base = _stat(rows, statistic)
        for other in _neighbours(rows, relation):
            diff = _stat(other, statistic) - base
            worst1, worst2 = max(worst1, np.abs(diff).sum()), max(worst2, float(np.sqrt((diff**2).sum())))
    assert worst1 <= l1 + 1e-12 and worst2 <= l2 + 1e-12
    assert worst1 == pytest.approx(l1) and worst2 == pytest.approx(l2)


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_centred_sum_and_count_sensitivities_against_brute_force(relation: str, tmp_path) -> None:
    half = (HIGH - LOW) / 2
    expected = (half, 1.0) if relation == "add_remove" else (2 * half, 2.0)
    worst_s = worst_n = 0.0
    for rows in DATASETS:
        base = _centred(rows)
        for other in _neighbours(rows, relation):
            diff = _centred(other) - base
            worst_s, worst_n = max(worst_s, np.abs(diff[:3]).sum()), max(worst_n, np.abs(diff[3:]).sum())
    assert (worst_s, worst_n) == pytest.approx(expected)
    path = tmp_path / "d.csv"
    pl.DataFrame({"g": ["a", "b"], "v": [0.0, 1.0]}).write_csv(path)
    query = query_input(load_dataset(path), GroupBy((AXIS,), "mean", "v", LOW, HIGH), relation)
    assert query.moment_sensitivities == expected


@pytest.mark.parametrize("statistic", ["count", "sum", "mean"])
def test_answers_and_neighbour_match_a_direct_computation(statistic: str, tmp_path) -> None:
    rows = DATASETS[2] + [("a", 2.5), (None, 7.0)]
    path = tmp_path / "d.csv"
    pl.DataFrame({"g": [g for g, _ in rows], "v": [v for _, v in rows]}).write_csv(path)
    dataset = load_dataset(path)
    query = GroupBy((AXIS,), statistic, None if statistic == "count" else "v", LOW, HIGH)
    expected = _stat([(g or "missing", v) for g, v in rows], statistic)
    assert np.allclose(true_answer(dataset, query), expected)
    for relation in ("add_remove", "replace"):
        inp = query_input(dataset, query, relation)
        assert np.allclose(inp.value_d, expected)
        assert inp.labels == ("g = a", "g = b", "g = (any other)")
        changed = np.flatnonzero(inp.value_d != inp.value_d_prime)
        assert 1 <= changed.size <= (1 if relation == "add_remove" else 2)
        assert np.abs(inp.value_d - inp.value_d_prime).sum() <= inp.sensitivity_l1 + 1e-12
        assert "group (g = " in inp.differing_row


def test_two_keys_label_every_cell_and_round_trip() -> None:
    query = GroupBy((AXIS, Axis("h", categories=(1, 2))), "mean", "v", 0, 10)
    assert len(query.labels) == 9 and query.labels[0] == "g = a, h = 1"
    assert query_from_dict(query.to_dict()) == query
    with pytest.raises(Exception, match="one or two"):
        GroupBy((), "count")
    with pytest.raises(Exception, match="needs a column"):
        GroupBy((AXIS,), "sum")
    assert math.isfinite(sensitivities(query, "replace")[0])


def test_grouped_sums_agree_eager_and_streaming(tmp_path) -> None:
    """The engine's per-group centred sums: an in-memory frame and a streaming scan agree, and
    empty groups come back as zero rows."""
    from dpexplorer.data.engine import POLARS, GroupedCentredSums

    rng = np.random.default_rng(0)
    path = tmp_path / "d.csv"
    pl.DataFrame({"g": rng.choice(["a", "z"], 500), "v": rng.normal(1, 3, 500)}).write_csv(path)
    request = GroupedCentredSums("v", LOW, HIGH, (AXIS,))
    eager = POLARS.aggregate(load_dataset(path, lazy=False), request)
    lazy = POLARS.aggregate(load_dataset(path, lazy=True), request)
    assert eager[1].count == 0 and eager[0].count + eager[2].count == 500
    for e, z in zip(eager, lazy, strict=True):
        assert e.count == z.count and e.clipped_low == z.clipped_low
        assert e.centred_sum == pytest.approx(z.centred_sum, abs=1e-9)
        # no statistic by group reads the squares: not summed, and never mistaken for zero
        assert np.isnan(e.centred_squares) and np.isnan(z.centred_squares)
    exact = POLARS.aggregate(load_dataset(path, lazy=True), replace(request, exact=True))
    assert all(m.exact_sums is not None and m.exact_sums[1] is None for m in exact)
    assert [m.exact_sums[0] for m in exact][1] == 0
