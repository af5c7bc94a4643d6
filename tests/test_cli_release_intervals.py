"""Every release has an interval, in one CSV shape, rounded by the one rule (issue 28): one CLI
run releases every statistic with every mechanism that releases it, on a small file; each CSV is
``[keys,] label, value, ci_low, ci_high, interval``, every number released lies in its interval,
and no number in the CSV or on the CLI line has more digits than its interval supports
(dpexplorer/release/presentation.py)."""

from __future__ import annotations

import csv
import json
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from dpexplorer.cli import main
from dpexplorer.release.presentation import EMPTY, rounding_unit

CITIES = ["a", "b", "c", "d"]  # "d" has no rows: an empty declared group
AGE = {"column": "age", "lower": 17, "upper": 90}
BY_CITY = {"type": "group_by", "keys": [{"column": "city", "categories": CITIES}]}
WORKLOAD = {
    "type": "workload",
    "axes": [{"column": "city", "categories": CITIES}],
    "queries": [
        {"label": "city a", "conditions": [[0, [0]]]},
        {"label": "city b or c", "conditions": [[0, [1, 2]]]},
    ],
}
DP = {"epsilon": 1.0, "delta": 1e-6}
E = {"epsilon": 1.0}
ENTRIES = [
    ({"type": "count"}, "laplace", E),
    ({"type": "count"}, "gaussian", DP),
    ({"type": "predicate_count", "predicate": {"compare": ">=", "column": "age", "value": 40}}, "laplace", E),
    ({"type": "sum", **AGE}, "laplace", E),
    ({"type": "sum", **AGE}, "gaussian", DP),
    ({"type": "mean", **AGE}, "laplace", E),
    ({"type": "mean", **AGE}, "gaussian", DP),
    ({"type": "mean", **AGE}, "noisy_mean", E),
    ({"type": "variance", **AGE}, "laplace", E),
    ({"type": "variance", **AGE}, "noisy_variance", E),
    ({"type": "quantile", **AGE, "q": 0.5}, "laplace", E),
    ({"type": "quantile", **AGE, "q": 0.5}, "ptr", {**DP, "bound": 1.0}),
    ({"type": "quantile", **AGE, "q": 0.5}, "dist2instability", DP),
    ({"type": "quantile", **AGE, "q": 0.5}, "smooth_cauchy", E),
    ({"type": "quantile", **AGE, "q": 0.5}, "smooth_student_t", E),
    ({"type": "quantile", **AGE, "q": 0.5}, "smooth_lln", E),
    ({"type": "quantile", **AGE, "q": 0.5}, "dp_quantile", E),
    ({"type": "quantile", **AGE, "q": 0.9}, "dp_quantile", E),
    ({"type": "trimmed_mean", **AGE, "trim_fraction": 0.1}, "laplace", E),
    ({"type": "histogram", "axis": {"column": "city", "categories": CITIES}}, "laplace", E),
    ({"type": "histogram", "axis": {"column": "city", "categories": CITIES}}, "gaussian", DP),
    ({**BY_CITY, "statistic": "count"}, "laplace", E),
    ({**BY_CITY, "statistic": "sum", **AGE}, "gaussian", DP),
    ({**BY_CITY, "statistic": "mean", **AGE}, "laplace", E),
    ({**BY_CITY, "statistic": "mean", **AGE}, "noisy_mean", E),
    ({**BY_CITY, "statistic": "quantile", **AGE, "q": 0.5}, "dp_quantile", E),
    ({"type": "argmax", "column": "city", "categories": CITIES}, "exponential", E),
    ({"type": "argmax", "column": "city", "categories": CITIES}, "noisy_max", E),
    ({"type": "top_k", "column": "city", "categories": CITIES, "k": 2}, "topk", E),
    (WORKLOAD, "pmw", E),
    (WORKLOAD, "mwem", {"epsilon": 1.0, "rounds": 2}),
    (WORKLOAD, "blr", {"epsilon": 1.0, "alpha": 0.9}),
    (WORKLOAD, "sparse_vector", {"epsilon": 1.0, "threshold": 0.1}),
]


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """One CLI run of every entry: (output folder, stdout lines)."""
    folder = tmp_path_factory.mktemp("intervals")
    rng = np.random.default_rng(28)
    rows = ["age,city"] + [f"{rng.integers(17, 91)},{'abc'[rng.integers(0, 3)]}" for _ in range(300)]
    (folder / "d.csv").write_text("\n".join(rows) + "\n")
    plan = [{"query": q, "mechanism": m, "parameters": p} for q, m, p in ENTRIES]
    (folder / "plan.json").write_text(json.dumps(plan))
    out = folder / "out"
    args = ["release", str(folder / "plan.json"), "--data", str(folder / "d.csv"), "--out", str(out)]
    args += ["--ledger", str(folder / "l.sqlite"), "--budget-epsilon", "100", "--budget-delta", "1e-3"]
    import contextlib
    import io

    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(args) == 0
    return out, text.getvalue().splitlines()


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def _allowed(low: float, high: float, integral: bool) -> int:
    unit = rounding_unit(low, high, integral=integral)
    return 6 if unit is None else max(0, -unit.as_tuple().exponent)  # type: ignore[operator]


def _entries(out: Path) -> list[tuple[dict, list[dict[str, str]], list[dict]]]:
    """(provenance, CSV rows, JSON values) of every release, in ledger order."""
    found = []
    for provenance in sorted(out.glob("*.provenance.json")):
        sidecar = json.loads(provenance.read_text())
        stem = provenance.name.removesuffix(".provenance.json")
        with open(out / f"{stem}.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
        values = json.loads((out / f"{stem}.json").read_text())["values"]
        found.append((sidecar, rows, values))
    return found


def test_every_release_is_written(released) -> None:
    out, lines = released
    assert len(list(out.glob("*.provenance.json"))) == len(ENTRIES)
    assert sum(line.startswith("[") for line in lines) == len(ENTRIES)


@pytest.mark.parametrize("number", range(len(ENTRIES)), ids=[f"{q['type']}-{m}" for q, m, _ in ENTRIES])
def test_csv_has_an_interval_holding_each_number_rounded_by_the_rule(released, number: int) -> None:
    out, _ = released
    sidecar, rows, values = _entries(out)[number]
    query, mechanism, _ = ENTRIES[number]
    assert sidecar["mechanism"] == mechanism and sidecar["query"]["type"] == query["type"]
    assert list(rows[0])[-5:] in (
        ["label", "value", "ci_low", "ci_high", "interval"],
        ["value", "ci_low", "ci_high", "interval", "rank_within_rows"],
    )
    assert len(rows) == len(values)
    counts = sidecar.get("statistic") in ("count", "predicate_count", "histogram")
    for row, full in zip(rows, values, strict=True):
        if not isinstance(full["value"], float | int) or full["value"] == EMPTY:
            assert row["ci_low"] == row["ci_high"] == ""  # a category, ⊥ or an empty group
            continue
        # every number has an interval, and it holds the value, in the CSV and at full precision
        assert full["ci_low"] is not None, (mechanism, row)
        assert full["ci_low"] <= full["value"] <= full["ci_high"]
        assert Decimal(row["ci_low"]) <= Decimal(row["value"]) <= Decimal(row["ci_high"])
        assert Decimal(row["ci_low"]) <= Decimal(full["ci_low"]) and Decimal(row["ci_high"]) >= Decimal(
            full["ci_high"]
        )  # outward
        integral = (counts and not row["label"].endswith("(noisy)")) or row["label"] == "count (noisy)"
        allowed = _allowed(full["ci_low"], full["ci_high"], integral)
        for cell in ("value", "ci_low", "ci_high"):
            assert _decimals(row[cell]) <= allowed, (mechanism, cell, row, full)


def test_cli_lines_carry_no_more_digits_than_the_intervals_support(released) -> None:
    out, lines = released
    entries = _entries(out)
    shown = [line for line in lines if line.startswith("[")]
    pattern = re.compile(r"= (-?[\d.]+) \[(-?[\d.]+), (-?[\d.]+)\]")
    checked = 0
    for line, (_sidecar, _rows, values) in zip(shown, entries, strict=True):
        numbers = [v for v in values if isinstance(v["value"], float | int) and v["ci_low"] is not None]
        found = pattern.findall(line)
        assert len(found) == min(len(numbers), 20), line
        for (value, low, high), full in zip(found, numbers, strict=False):
            allowed = _allowed(full["ci_low"], full["ci_high"], integral=True) if "." not in value else None
            if allowed is None:
                allowed = _allowed(full["ci_low"], full["ci_high"], integral=False)
            assert max(_decimals(value), _decimals(low), _decimals(high)) <= allowed, line
            assert Decimal(low) <= Decimal(value) <= Decimal(high)
            checked += 1
    assert checked > 40
    assert "epsilon left for this dataset:" in lines[-1] and _decimals(lines[-1].rsplit(" ", 1)[1]) <= 3
