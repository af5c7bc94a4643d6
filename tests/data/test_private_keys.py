"""Statistics by privately selected keys without a privacy unit (data/grouped.py): what the
release's threshold counts per candidate, and the neighbour D' the views draw."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from dpexplorer.core.accuracy import shown_coordinate
from dpexplorer.data.answers import query_input
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import GroupBy, PrivateKeys

LOWER, UPPER = -2.0, 10.0


def _data(tmp_path: Path) -> tuple[pl.DataFrame, object]:
    """Four keys of 60, 30, 9 and 1 rows; x in [-5, 15], beyond both bounds."""
    rng = np.random.default_rng(4)
    g = ["a"] * 60 + ["b"] * 30 + ["c"] * 9 + ["d"]
    frame = pl.DataFrame({"g": g, "x": rng.uniform(-5, 15, len(g))})
    frame.write_csv(tmp_path / "keys.csv")
    return frame, load_dataset(tmp_path / "keys.csv")


def _query(statistic: str) -> GroupBy:
    return GroupBy((), statistic, "x", LOWER, UPPER, private=PrivateKeys(("g",), 1.0, 1e-6))


@pytest.mark.parametrize("statistic", ["count", "sum", "mean"])
def test_each_candidate_counts_its_rows_whatever_the_statistic(tmp_path, statistic):
    """The threshold compares a noisy number of persons (rows here) per candidate: a sum's
    values are no counts (a key of one row summing to 9 must not count as 9 rows)."""
    frame, dataset = _data(tmp_path)
    built = query_input(dataset, _query(statistic), "add_remove")
    rows = dict(frame.group_by("g").len().iter_rows())
    assert built.partition is not None
    assert dict(zip((k[0] for k in built.partition.keys), built.partition.persons, strict=True)) == rows


@pytest.mark.parametrize("statistic", ["count", "sum", "mean"])
def test_the_neighbour_changes_the_candidate_it_moves_most(tmp_path, statistic):
    """D' adds one row to the candidate whose statistic it moves most (brute force over the
    candidates and both bounds), so the views draw a coordinate where D and D' differ; it
    used to add it to the cell of missing keys, which holds no row and is no candidate, and
    D' was D on every coordinate shown."""
    frame, dataset = _data(tmp_path)
    built = query_input(dataset, _query(statistic), "add_remove")
    d, d_prime = np.asarray(built.value_d), np.asarray(built.value_d_prime)
    changed = np.flatnonzero(d != d_prime)
    assert changed.size == 1
    i = int(changed[0])
    clipped = frame.with_columns(pl.col("x").clip(LOWER, UPPER))
    groups = {g: clipped.filter(pl.col("g") == g)["x"].to_numpy() for g in ("a", "b", "c", "d")}
    if statistic == "mean":
        moved = {g: max(abs(b - v.mean()) for b in (LOWER, UPPER)) / (len(v) + 1) for g, v in groups.items()}
    else:  # a row (at the bound of larger size) moves every count or sum alike: the smallest group
        moved = {g: 1.0 / len(v) for g, v in groups.items()}
    assert built.labels[i] == f"g = {max(moved, key=moved.__getitem__)}"
    assert built.labels[i] in built.differing_row and "(missing)" not in built.differing_row
    assert shown_coordinate(built)[0] == i
    if statistic == "mean":
        n = len(groups[built.labels[i].removeprefix("g = ")])
        assert built.moments_prime[i].count == built.moments[i].count + 1 == n + 1
    else:
        assert d_prime[i] - d[i] == pytest.approx(1.0 if statistic == "count" else UPPER)


@pytest.mark.parametrize("statistic", ["count", "sum", "mean", "quantile"])
def test_every_mechanism_claims_the_key_selection_too(tmp_path, statistic):
    """By privately selected keys the keys themselves are a DP output (partition selection at
    its declared epsilon and delta): every mechanism that takes such an input states at least
    the selection's (epsilon, delta) on top of its own, in its claim (the views, the audit) and
    in its guarantee (the planner). Laplace and the Gaussian used to claim their own (epsilon,
    delta) alone."""
    from dpexplorer.core.mechanisms import registry
    from dpexplorer.core.planning import guarantee_epsilon_delta

    _, dataset = _data(tmp_path)
    built = query_input(dataset, _query(statistic), "add_remove")
    selection = built.partition
    assert selection is not None
    checked = []
    for mechanism in registry.all_mechanisms():
        if mechanism.accepts(built) is not None:
            continue
        params = mechanism.validate({"epsilon": 0.5})
        plain = dict(params)
        eps, delta = mechanism.epsilon_delta(params, built)
        own_delta = float(plain.get("delta", 0.0))
        assert eps >= 0.5 + selection.epsilon - 1e-12, mechanism.name
        assert delta >= own_delta + selection.delta - 1e-18, mechanism.name
        g_eps, g_delta = guarantee_epsilon_delta(mechanism.guarantee(params, built), delta)
        assert g_eps >= 0.5 + selection.epsilon - 1e-12 and g_delta >= selection.delta, mechanism.name
        checked.append(mechanism.name)
    assert "laplace" in checked and ("noisy_mean" in checked) == (statistic == "mean")
