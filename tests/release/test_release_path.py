"""A release computes what it publishes and nothing else (issue 29): no exploration-only figure
on its path (the worst person's neighbour, the noise the bounds save, the unclipped means), the
same per-group values as the exploration path on the same bounding seed, and a plan of several
statistics identifies its file once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from dpexplorer.data import grouped
from dpexplorer.data import load as load_module
from dpexplorer.data.answers import query_input
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import Axis, GroupBy, PrivacyUnit
from dpexplorer.release import release as release_module
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.plan_run import prepare_plan


def _visits(tmp_path: Path) -> Any:
    rng = np.random.default_rng(4)
    persons = np.repeat(np.arange(300), rng.integers(1, 8, 300))
    pl.DataFrame(
        {
            "p": persons,
            "g": rng.choice(["a", "b", "c"], persons.size),
            "v": np.round(rng.uniform(-5, 15, persons.size), 3),
        }
    ).write_csv(tmp_path / "visits.csv")
    return load_dataset(tmp_path / "visits.csv")


@pytest.mark.parametrize("statistic", ["count", "sum", "mean"])
def test_a_release_by_group_with_a_person_unit_computes_no_exploration_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statistic: str
) -> None:
    dataset = _visits(tmp_path)
    column, low, high = (None, None, None) if statistic == "count" else ("v", 0.0, 10.0)
    query = GroupBy(
        (Axis("g", categories=("a", "b", "c")),), statistic, column, low, high, PrivacyUnit("p", 2, 3)
    )
    explored = query_input(dataset, query, "add_remove", bounding_seed=11)
    assert "persons" in explored.differing_row  # the exploration's figures are there

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("an exploration figure computed on the release path")

    for name in ("_person_neighbour", "_noise_saved", "_raw_means"):
        monkeypatch.setattr(grouped, name, never)
    released = query_input(dataset, query, "add_remove", bounding_seed=11, exact_sums=True)
    np.testing.assert_allclose(released.value_d, explored.value_d, rtol=1e-12, atol=1e-12)
    assert released.sensitivity_l1 == explored.sensitivity_l1
    assert released.sensitivity_l2 == explored.sensitivity_l2
    if statistic == "mean":
        assert [m.count for m in released.moments] == [m.count for m in explored.moments]
    if statistic != "count":
        assert released.exact_values is not None
        np.testing.assert_allclose([float(v) for v in released.exact_values], explored.value_d, atol=1e-9)


def test_a_plan_identifies_its_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three statistics on one file: one content fingerprint, no file SHA-256 and no content-v1
    in a ledger without older keys; every entry filed under the one key."""
    dataset = _visits(tmp_path)
    calls: list[str] = []
    real = load_module.content_fingerprint

    def counted(*args: Any, **kwargs: Any) -> str:
        calls.append("content")
        return real(*args, **kwargs)

    monkeypatch.setattr(load_module, "content_fingerprint", counted)
    monkeypatch.setattr(load_module, "fingerprint_file", lambda p: pytest.fail("file SHA-256 computed"))
    monkeypatch.setattr(release_module, "legacy_keys", lambda d: pytest.fail("older keys computed"))
    entries = [
        {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.5}},
        {
            "query": {"type": "sum", "column": "v", "lower": 0, "upper": 10},
            "mechanism": "laplace",
            "parameters": {"epsilon": 0.5},
        },
        {
            "query": {"type": "mean", "column": "v", "lower": 0, "upper": 10},
            "mechanism": "laplace",
            "parameters": {"epsilon": 0.5},
        },
    ]
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        prepared = prepare_plan(dataset, entries, None, ledger)
    assert calls == ["content"]
    assert {p.fingerprint for p in prepared} == {dataset.content_fingerprint} and not any(
        p.legacy for p in prepared
    )
