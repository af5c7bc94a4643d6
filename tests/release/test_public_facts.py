"""Every release path publishes only public facts and DP outputs (issue 15, DESIGN "Public facts").

For every registered mechanism and every query kind it accepts, the release is prepared on a
dataset D and on a neighbour D' (add/remove: one row added, n = 64 against 65, so that any use of
1/n that crosses a power of two shows), drawn with the SAME deterministic bit source, and written
through the real pipeline. The two provenance sidecars must then be equal except for what is
itself a DP output: the released values (in the CSV, not compared), the confidence interval's
position (its width must be equal), and the fields a path lists under ``dp_outputs`` (quantities
drawn with noise after the charge, e.g. a noisy row count, and what is computed from them; for a
statistic by privately selected keys, the kept keys and their labels: the key set is itself a DP
output, while the candidate keys, their number and their counts are private, so the neighbour
"a key only in D'" checks that none of them reaches the provenance). A
refusal must not depend on the data either: both sides refuse with the same message, or neither.

New mechanisms and query kinds are covered automatically (the registry and the catalogue below)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.mechanisms import registry
from dpexplorer.data.answers import query_input
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import Query, query_from_dict
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.release import execute, prepare_input
from dpexplorer.release.samplers import SeededBitSource

N = 64
CATEGORIES = ["a", "b", "c", "d"]
EDGES = [0.0, 2.5, 5.0, 7.5, 10.0]

QUERIES: dict[str, dict[str, Any]] = {
    "count": {"type": "count"},
    "predicate_count": {"type": "predicate_count", "predicate": {"compare": ">=", "column": "x", "value": 5}},
    "sum": {"type": "sum", "column": "x", "lower": 0, "upper": 10},
    "mean": {"type": "mean", "column": "x", "lower": 0, "upper": 10},
    "variance": {"type": "variance", "column": "x", "lower": 0, "upper": 10},
    "median": {"type": "quantile", "column": "x", "lower": 0, "upper": 10, "q": 0.5},
    "quantile_0.9": {"type": "quantile", "column": "x", "lower": 0, "upper": 10, "q": 0.9},
    "trimmed_mean": {"type": "trimmed_mean", "column": "x", "lower": 0, "upper": 10, "trim_fraction": 0.1},
    "histogram": {"type": "histogram", "axis": {"column": "c", "categories": CATEGORIES}},
    "binned_histogram": {"type": "histogram", "axis": {"column": "x", "edges": EDGES}},
    "argmax": {"type": "argmax", "column": "c", "categories": CATEGORIES},
    "top_k": {"type": "top_k", "column": "c", "categories": CATEGORIES, "k": 2},
    "mean_by_private_key": {
        "type": "group_by",
        "statistic": "mean",
        "column": "x",
        "lower": 0,
        "upper": 10,
        "keys": [],
        "private_keys": {"columns": ["c"], "epsilon": 1.0, "delta": 1e-3},
    },
    "quantile_by_group": {
        "type": "group_by",
        "keys": [{"column": "c", "categories": CATEGORIES}],
        "statistic": "quantile",
        "column": "x",
        "lower": 0,
        "upper": 10,
        "q": 0.5,
    },
    "quantile_by_private_key": {
        "type": "group_by",
        "statistic": "quantile",
        "column": "x",
        "lower": 0,
        "upper": 10,
        "q": 0.5,
        "keys": [],
        "private_keys": {"columns": ["c"], "epsilon": 1.0, "delta": 1e-3},
    },
    "count_by_private_key": {
        "type": "group_by",
        "statistic": "count",
        "keys": [],
        "private_keys": {"columns": ["c"], "epsilon": 1.0, "delta": 1e-3},
    },
    "workload": {
        "type": "workload",
        "axes": [{"column": "c", "categories": CATEGORIES}],
        "queries": [
            {"label": "c = a", "conditions": [[0, [0]]]},
            {"label": "c = b", "conditions": [[0, [1]]]},
            {"label": "c in {a, b}", "conditions": [[0, [0, 1]]]},
            {"label": "c in {c, d}", "conditions": [[0, [2, 3]]]},
        ],
    },
    "marginals": {
        "type": "marginals",
        "axes": [{"column": "c", "categories": CATEGORIES}, {"column": "x", "edges": EDGES}],
        "ways": 2,
    },
}


def _base() -> pl.DataFrame:
    """n = 64 rows: x with a tie of 8 at the median (5.0) and values at both clipping bounds;
    categories with a two-way tie for the lead (a, b)."""
    rng = np.random.default_rng(7)
    x = np.r_[rng.uniform(0, 4.9, 28), np.full(8, 5.0), rng.uniform(5.1, 10, 26), [0.0, 10.0]]
    c = ["a"] * 20 + ["b"] * 20 + ["c"] * 14 + ["d"] * 10
    return pl.DataFrame({"x": np.round(x, 3), "c": c})


NEIGHBOURS: dict[str, Callable[[pl.DataFrame], pl.DataFrame]] = {
    "one row added": lambda d: pl.concat([d, pl.DataFrame({"x": [3.0], "c": ["c"]})]),
    "row at the clipping bound": lambda d: pl.concat([d, pl.DataFrame({"x": [10.0], "c": ["a"]})]),
    "tie at the median": lambda d: pl.concat([d, pl.DataFrame({"x": [5.0], "c": ["d"]})]),
    "category at its boundary": lambda d: pl.concat([d, pl.DataFrame({"x": [7.0], "c": ["b"]})]),
    "a key only in D'": lambda d: pl.concat([d, pl.DataFrame({"x": [10.0], "c": ["e"]})]),
}

ALLOWED = frozenset({"time", "ledger_row_id", "ledger_path", "dataset_id", "files", "dp_outputs"})
"""Sidecar fields that may differ: bookkeeping, and the path's declared DP outputs."""


def _accepted(mechanism: str, query: Query, dataset: Any) -> bool:
    try:
        return (
            registry.get(mechanism).accepts(query_input(dataset, query, "add_remove", exact_sums=True))
            is None
        )
    except (DPExplorerError, DataError):
        return True  # a refusal is compared too


def load_neighbours(folder: Path, names: tuple[str, ...] = ("D", *NEIGHBOURS)) -> dict[str, Any]:
    """D (``_base``) and each named neighbour written as CSV in ``folder`` and loaded as the CLI
    loads them."""
    base = _base()
    out = {}
    for i, name in enumerate(names):
        path = folder / f"{i}.csv"
        (base if name == "D" else NEIGHBOURS[name](base)).write_csv(path)
        out[name] = load_dataset(path)
    return out


def _cases() -> list[tuple[str, str]]:
    """Every (mechanism, query kind) pair the mechanism accepts, or whose input it refuses (a
    refusal is compared too), on the base dataset."""
    with tempfile.TemporaryDirectory() as folder:
        dataset = load_neighbours(Path(folder), ("D",))["D"]
        return [
            (m.name, name)
            for m in registry.all_mechanisms()
            for name, query in QUERIES.items()
            if _accepted(m.name, query_from_dict(query), dataset)
        ]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return load_neighbours(tmp_path_factory.mktemp("neighbours"))


def _record(dataset: Any, query: Query, mechanism: str, folder: Path) -> dict[str, Any]:
    """The published sidecar of one release (or the refusal), drawn with seed 2024."""
    try:
        built = query_input(dataset, query, "add_remove", exact_sums=True)
        # post-processing off: a clamped interval's width depends on the released value (a DP output)
        prepared = prepare_input(
            built,
            mechanism,
            {},
            fingerprint="ab" * 32,
            query=query.to_dict(),
            post_processing={"clamp_to_range": False, "non_negative": False, "empty_groups": False},
        )
    except (DPExplorerError, DataError) as exc:
        return {"refused": str(exc)}
    with Ledger(folder / "ledger.sqlite") as ledger:
        ledger.set_budget("ab" * 32, 1e6, 0.5, "basic")
        try:
            result = execute(prepared, ledger=ledger, out_dir=folder / "out", bits=SeededBitSource(2024))
        except DPExplorerError as exc:
            return {"refused after charging": str(exc)}
    sidecar = json.loads(result.files["provenance"].read_text(encoding="utf-8"))
    ci = sidecar.pop("confidence_interval")
    if "confidence_intervals" in sidecar["dp_outputs"]:  # computed from DP outputs (noisy parts)
        ci = None
    sidecar["confidence_interval_widths"] = (
        None if ci is None else [None if c is None else round(c[1] - c[0], 9) for c in ci]
    )
    return {k: v for k, v in sidecar.items() if k not in ALLOWED}


@pytest.mark.parametrize(("mechanism", "query_name"), _cases())
def test_release_publishes_only_public_facts(
    mechanism: str, query_name: str, datasets: dict[str, Any], tmp_path: Path
) -> None:
    query = query_from_dict(QUERIES[query_name])
    on_d = _record(datasets["D"], query, mechanism, tmp_path / "D")
    for name in NEIGHBOURS:
        on_dp = _record(datasets[name], query, mechanism, tmp_path / name.replace(" ", "_"))
        differ = {k for k in on_d.keys() | on_dp.keys() if on_d.get(k) != on_dp.get(k)}
        assert not differ, (
            f"{mechanism} on {query_name}, D against D' ({name}): published fields that depend on "
            f"the data: " + "; ".join(f"{k}: {on_d.get(k)!r} vs {on_dp.get(k)!r}" for k in sorted(differ))
        )
