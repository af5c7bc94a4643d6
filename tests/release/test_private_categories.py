"""A column's categories estimated privately (issue 40): a count by privately selected keys,
charged to the ledger once before it is drawn; the categories are the keys it released, never
the missing value, and a value held by one person is left out (released with probability at
most delta: here 1e-9)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.data.load import load_dataset
from dpexplorer.release.ledger import BudgetExceededError, Ledger
from dpexplorer.release.private_categories import prepare_categories, release_categories
from dpexplorer.release.release import dataset_key


@pytest.fixture
def dataset(tmp_path: Path):
    pl.DataFrame({"g": ["a"] * 400 + ["b"] * 250 + ["solo"] + [None] * 300}).write_csv(tmp_path / "g.csv")
    return load_dataset(tmp_path / "g.csv")


def test_the_released_keys_are_the_common_values_charged_once(dataset, tmp_path: Path) -> None:
    prepared = prepare_categories(dataset, "g", epsilon=1.0, delta=1e-9)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        key = dataset_key(dataset, ledger)
        ledger.set_budget(key, 2.0, 1e-6, "basic")
        estimated = release_categories(prepared, "g", ledger=ledger, out_dir=tmp_path / "out")
        (row,) = ledger.measurements(key)
    # "a" (400 persons) and "b" (250) pass the threshold (about 41 at epsilon 0.5, delta 1e-9)
    # whatever the Laplace(2) noise; "solo" passes with probability at most 1e-9
    assert sorted(estimated.categories) == ["a", "b"]
    assert row.id == estimated.result.row_id and row.status == "released"
    assert estimated.result.epsilon == pytest.approx(1.0) and estimated.result.delta == pytest.approx(1e-9)
    assert f"ledger row {row.id}" in estimated.citation and "not complete" in estimated.citation


def test_nothing_is_charged_without_budget_room(dataset, tmp_path: Path) -> None:
    prepared = prepare_categories(dataset, "g", epsilon=1.0, delta=1e-9)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        key = dataset_key(dataset, ledger)
        ledger.set_budget(key, 0.5, 1e-6, "basic")
        with pytest.raises(BudgetExceededError):
            release_categories(prepared, "g", ledger=ledger, out_dir=tmp_path / "out")
        assert ledger.measurements(key) == []


@pytest.mark.parametrize(("epsilon", "delta"), [(0.0, 1e-6), (1.0, 0.0), (1.0, 1.5)])
def test_bad_parameters_are_one_line(dataset, epsilon: float, delta: float) -> None:
    with pytest.raises(InvalidParameterError):
        prepare_categories(dataset, "g", epsilon=epsilon, delta=delta)
