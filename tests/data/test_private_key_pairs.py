"""Two privately selected key columns (issue 16): the candidates are the combinations that occur
after bounding, found without building the cross product of the values of each column (3,000 x
3,000 values: 9M cells, of which 6,000 occur), with the statistics a brute force gives; and a
person who brings new combinations (and new values that shift every other value's index) changes
nothing that a release publishes or refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from dpexplorer.data import aggregates, grouped, private_groups
from dpexplorer.data.answers import query_input
from dpexplorer.data.engine import CellCounts, GroupedCentredSums, GroupedSortedClipped
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import GroupBy, PrivacyUnit, PrivateKeys
from tests.release.test_public_facts import _record

VALUES = 3_000
GROUPED = (CellCounts, GroupedCentredSums, GroupedSortedClipped)


def _pairs(values: int) -> pl.DataFrame:
    """Person i has two rows, (a_i, b_i) and (a_i, b_i+1): each column has ``values`` values, and
    2 x ``values`` of their values**2 combinations occur; x spreads over [0, 10]."""
    i = np.arange(values)
    return pl.DataFrame(
        {
            "p": np.repeat(i, 2),
            "a": np.char.add("a", np.repeat(i, 2).astype(str)),
            "b": np.char.add("b", np.c_[i, (i + 1) % values].ravel().astype(str)),
            "x": np.linspace(0, 10, 2 * values),
        }
    )


def _query(statistic: str, unit: PrivacyUnit | None, delta: float = 1e-6) -> GroupBy:
    """``statistic`` of x in [0, 10] (or a count) by privately selected pairs of (a, b)."""
    column = None if statistic == "count" else "x"
    low, high = (None, None) if statistic == "count" else (0.0, 10.0)
    return GroupBy((), statistic, column, low, high, unit, PrivateKeys(("a", "b"), 1.0, delta), q=0.5)


@pytest.mark.parametrize(("statistic", "unit"), [("count", False), ("mean", True), ("quantile", True)])
def test_two_key_columns_of_thousands_of_values_are_found_sparsely(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statistic: str, unit: bool
) -> None:
    """Every grouped request is sparse (none asks for the 9M cells of the cross product), each
    answer holds the 6,000 combinations that occur, and the candidates, their persons and
    their statistics are the brute force's."""
    frame = _pairs(VALUES)
    frame.write_csv(tmp_path / "pairs.csv")
    dataset = load_dataset(tmp_path / "pairs.csv")
    seen: list[Any] = []
    real = aggregates.aggregate

    def spy(data: Any, request: Any, steps: Any = ()) -> Any:
        if isinstance(request, GROUPED):
            assert request.sparse, f"{type(request).__name__} over the whole cross product"
            seen.append(request)
        out = real(data, request, steps)
        if isinstance(request, GROUPED):
            assert len(out[0]) <= frame.height
        return out

    for module in (grouped, private_groups):  # every grouped request is asked from these two
        monkeypatch.setattr(module, "aggregate", spy)
    # the unit keeps every row: each person has 2 cells, 1 row in each
    query = _query(statistic, PrivacyUnit("p", 2, 1) if unit else None)
    built = query_input(dataset, query, "add_remove", bounding_seed=1, exact_sums=True)
    assert seen
    truth = frame.group_by("a", "b").agg(
        pl.col("p").n_unique().alias("persons"),
        pl.len().alias("count"),
        pl.col("x").mean().alias("mean"),
        pl.col("x").first().alias("quantile"),  # one row per combination: its median
    )
    expected = {(a, b): row for a, b, *row in truth.iter_rows()}
    assert built.partition is not None
    keys = built.partition.keys
    assert len(keys) == 2 * VALUES and set(keys) == set(expected)
    assert built.labels[0] == f"a = {keys[0][0]}, b = {keys[0][1]}"
    assert [expected[k][0] for k in keys] == list(built.partition.persons)
    column = {"count": 1, "mean": 2, "quantile": 3}[statistic]
    np.testing.assert_allclose(built.value_d, [expected[k][column] for k in keys], atol=1e-9)
    assert built.sensitivity_l1 > 0 and "9,000,000" not in built.differing_row


def _neighbours(tmp_path: Path) -> tuple[Any, Any]:
    """D: 40 persons over two key columns; D' adds one person with k = 2 combinations and r = 2
    rows in each, whose values are new in both columns and sort first (every other value's
    index shifts), one of them at the clipping bound."""
    rng = np.random.default_rng(5)
    persons = np.repeat(np.arange(40), 3)
    base = pl.DataFrame(
        {
            "p": np.char.add("p", persons.astype(str)),
            "a": rng.choice(["m", "n", "o"], persons.size),
            "b": rng.choice(["u", "v"], persons.size),
            "x": np.round(rng.uniform(0, 10, persons.size), 2),
        }
    )
    new = pl.DataFrame(
        {"p": ["pz"] * 4, "a": ["0", "0", "1", "1"], "b": ["0", "0", "v", "v"], "x": [10.0] * 4}
    )
    out = []
    for name, frame in (("d", base), ("d_prime", pl.concat([base, new]))):
        frame.write_csv(tmp_path / f"{name}.csv")
        out.append(load_dataset(tmp_path / f"{name}.csv"))
    return out[0], out[1]


@pytest.mark.parametrize(
    ("statistic", "mechanism"), [("count", "laplace"), ("mean", "noisy_mean"), ("quantile", "dp_quantile")]
)
def test_a_person_bringing_new_combinations_changes_nothing_published(
    tmp_path: Path, statistic: str, mechanism: str
) -> None:
    """The attacker's neighbour: the sensitivities, the released provenance (but its DP
    outputs) and any refusal are the same on D and D' (6 candidates against 8)."""
    on_d, on_d_prime = _neighbours(tmp_path)
    query = _query(statistic, PrivacyUnit("p", 2, 2), delta=1e-3)
    built = [
        query_input(d, query, "add_remove", bounding_seed=3, exact_sums=True) for d in (on_d, on_d_prime)
    ]
    assert len(built[1].labels) == len(built[0].labels) + 2
    for field in ("sensitivity_l1", "sensitivity_l2", "moment_sensitivities", "group_contribution"):
        assert getattr(built[0], field) == getattr(built[1], field), field
    records = [_record(d, query, mechanism, tmp_path / name) for d, name in ((on_d, "D"), (on_d_prime, "Dp"))]
    assert "refused" not in records[0]
    # interval_kinds and confidence_interval_widths: one per released value, as many as the kept
    # keys (a DP output); what may not differ is each value's kind and width
    for field in ("interval_kinds", "confidence_interval_widths"):
        per_value = [set(r.pop(field, None) or ()) for r in records]
        assert per_value[0] == per_value[1], field
    assert records[0] == records[1]


@pytest.mark.parametrize("statistic", ["count", "mean", "quantile"])
def test_no_candidate_after_bounding_is_not_an_error(tmp_path: Path, statistic: str) -> None:
    """Every identifier missing: no row survives the bounding, so no candidate; the input is
    built (D' = D) and the release publishes no key, as for any other data."""
    frame = pl.DataFrame(
        {"p": [None, None], "a": ["x", "y"], "b": [None, "w"], "x": [1.0, 2.0]},
        schema={"p": pl.String, "a": pl.String, "b": pl.String, "x": pl.Float64},
    )
    frame.write_csv(tmp_path / "empty.csv")
    query = _query(statistic, PrivacyUnit("p", 2, 1), delta=1e-3)
    built = query_input(load_dataset(tmp_path / "empty.csv"), query, "add_remove", bounding_seed=1)
    assert built.labels == () and built.partition is not None and built.partition.persons == ()
    assert built.differing_row.startswith("D' = D (no ")
    mechanism = {"count": "laplace", "mean": "noisy_mean", "quantile": "dp_quantile"}[statistic]
    record = _record(load_dataset(tmp_path / "empty.csv"), query, mechanism, tmp_path / "out")
    assert "refused" not in record, record


def test_missing_values_in_either_column_make_their_own_combinations(tmp_path: Path) -> None:
    """Bounds that drop nothing: each candidate (a missing value in a column: "(missing)") has
    the distinct persons of a brute-force group-by over both columns, nulls kept as a key."""
    rng = np.random.default_rng(11)
    n = 400
    frame = pl.DataFrame(
        {
            "p": np.char.add("p", rng.integers(0, 80, n).astype(str)),
            "a": pl.Series(rng.choice(["x", "y", "z"], n)).set(pl.Series(rng.random(n) < 0.2), None),
            "b": pl.Series(rng.integers(0, 30, n)).set(pl.Series(rng.random(n) < 0.2), None),
            "x": rng.uniform(0, 10, n),
        }
    )
    frame.write_csv(tmp_path / "missing.csv")
    query = GroupBy(
        (), "count", unit=PrivacyUnit("p", 1_000, 1_000), private=PrivateKeys(("a", "b"), 1.0, 1e-6)
    )
    built = query_input(load_dataset(tmp_path / "missing.csv"), query, "add_remove", bounding_seed=1)
    truth = frame.group_by("a", "b").agg(pl.col("p").n_unique().alias("persons"), pl.len().alias("rows"))
    name = {None: "(missing)"}
    expected = {(name.get(a, a), name.get(b, str(b))): (p, r) for a, b, p, r in truth.iter_rows()}
    assert built.partition is not None
    got = dict(
        zip(built.partition.keys, zip(built.partition.persons, built.value_d, strict=True), strict=True)
    )
    assert got == expected and any("(missing)" in k for k in got)
