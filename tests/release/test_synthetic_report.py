"""A synthetic table (MST, AIM) as Parquet, and its section of the release report (issue 30,
item 4): the records file written atomically like the CSV, the plan entry's ``format``, the
report rebuilt from the ledger and the provenance with its quality table of DP facts (each
marginal's size, sigma and the zCDP it took, adding up to what the run spent), never crashing.
Small data and the dense estimator (no JAX)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.data.load import load_dataset
from dpexplorer.data.marginals import marginal_input
from dpexplorer.data.queries import Axis, Marginals, PrivacyUnit
from dpexplorer.release.charge import execute
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.report import render_html
from dpexplorer.release.report_model import SYNTHETIC, marginal_rows
from dpexplorer.release.report_run import report_of_run
from dpexplorer.release.samplers import SeededBitSource
from dpexplorer.release.synthetic_tables import prepare_table, table_formats

AXES = (
    Axis("c", categories=("a", "b", "c")),
    Axis("x", edges=(0.0, 5.0, 10.0)),
    Axis("k", categories=("u", "v")),
)
PARAMS = {"epsilon": 2.0, "estimator": "dense", "iterations": 100}
KEY = "f" * 32


def _frame(n: int = 600, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    c = rng.choice(["a", "b", "c", "z"], n, p=[0.5, 0.3, 0.15, 0.05])
    x = np.where(c == "a", rng.uniform(0, 5, n), rng.uniform(0, 10, n))
    k = np.where(rng.random(n) < 0.7, "u", "v")
    return pl.DataFrame({"c": c, "x": x, "k": k})


@pytest.fixture
def dataset(tmp_path: Path) -> Any:
    path = tmp_path / "d.csv"
    _frame().write_csv(path)
    return load_dataset(path)


def _release(dataset: Any, tmp_path: Path, mechanism: str, formats: Any) -> tuple[Any, Path]:
    built = marginal_input(dataset, Marginals(AXES, ways=2), bounding_seed=3)
    prepared = prepare_table(
        built, mechanism, PARAMS, fingerprint=KEY, query=Marginals(AXES).to_dict(), formats=formats
    )
    ledger_path = tmp_path / "ledger.sqlite"
    with Ledger(ledger_path) as ledger:
        if ledger.budget(KEY) is None:
            ledger.set_budget(KEY, 10.0, 1e-6, "zcdp")
        result = execute(prepared, ledger=ledger, out_dir=tmp_path / "out", bits=SeededBitSource(5))
    return result, ledger_path


def test_the_records_are_written_as_parquet_equal_to_the_csv(dataset: Any, tmp_path: Path) -> None:
    result, _ = _release(dataset, tmp_path, "mst", ["parquet", "csv"])
    assert set(result.files) == {"csv", "parquet", "json", "provenance"}
    parquet, csv = pl.read_parquet(result.files["parquet"]), pl.read_csv(result.files["csv"])
    assert parquet.columns == ["c", "x", "k"] and len(parquet) == result.rows > 0
    assert parquet.equals(csv.cast(parquet.schema))  # type: ignore[arg-type]
    sidecar = json.loads(result.files["provenance"].read_text(encoding="utf-8"))
    assert sidecar["files"]["parquet"] == result.files["parquet"].name
    assert not [p for p in result.files["parquet"].parent.iterdir() if p.name.startswith(".")]


def test_parquet_alone_writes_no_csv_and_a_bad_format_is_refused_before_any_charge(
    dataset: Any, tmp_path: Path
) -> None:
    result, ledger_path = _release(dataset, tmp_path, "aim", "parquet")
    assert "csv" not in result.files and not list(result.files["parquet"].parent.glob("*.csv"))
    assert len(pl.read_parquet(result.files["parquet"])) == result.rows
    assert table_formats(None) == ("csv",) and table_formats(["parquet", "csv"]) == ("csv", "parquet")
    for bad in ("xlsx", [], ["csv", "feather"], 3):
        with pytest.raises(InvalidParameterError, match="format must be"):
            _release(dataset, tmp_path, "mst", bad)
    with Ledger(ledger_path) as ledger:
        assert len(ledger.measurements(KEY)) == 1


@pytest.mark.parametrize("mechanism", ["mst", "aim"])
def test_the_report_of_a_synthetic_table_lists_its_marginals_and_their_budget(
    dataset: Any, tmp_path: Path, mechanism: str
) -> None:
    """Rebuilt from the ledger and the provenance: one row per measured marginal, its cells
    the product of its domain sizes, its measurement's rho 1 / (2 sigma^2) (Delta_2^2 = 1 under
    add/remove), each selection's epsilon^2 / 8; they add up to the rho the run spent, at most
    the rho charged."""
    result, ledger_path = _release(dataset, tmp_path, mechanism, None)
    sidecar = json.loads(result.files["provenance"].read_text(encoding="utf-8"))
    with Ledger(ledger_path) as ledger:
        report = report_of_run(ledger, result.row_id)
    (item,) = report.items
    assert item.statistic.startswith(SYNTHETIC)
    assert [list(r.marginal) for r in item.marginals] == result.selected
    sizes = {"c": 4, "x": 3, "k": 3}  # declared categories + "other"; bins + "missing"
    for row, measured in zip(item.marginals, sidecar["dp_outputs"]["measured"], strict=True):
        assert row.cells == math.prod(sizes[c] for c in row.marginal)
        assert row.rho_measure == pytest.approx(1 / (2 * measured["sigma"] ** 2))
    rounds = sidecar["dp_outputs"]["rounds"]
    selections = [r.rho_select for r in item.marginals if r.rho_select is not None]
    assert selections == pytest.approx([r["epsilon"] ** 2 / 8 for r in rounds]) and selections
    total = sum(r.rho_measure + (r.rho_select or 0.0) for r in item.marginals)
    assert total == pytest.approx(sidecar["dp_outputs"]["rho_spent"], rel=1e-9)
    assert total <= sidecar["rho"] * (1 + 1e-12)
    page = render_html(report)
    assert "Quality: the measured marginals" in page and "needs the true data" in page
    assert page.count("<tr>") >= len(item.marginals) + 1
    assert f"{len(item.marginals)} marginal(s) measured" in page


def test_a_provenance_with_missing_or_odd_dp_outputs_still_renders() -> None:
    grid = {"cells": {"a": ["x", "y"]}, "marginal_sensitivity_l2_squared": 2}
    outputs = {
        "measured": [{"marginal": ["a"], "sigma": 2.0}, {"marginal": ["a", "b"], "sigma": "?"}, 7],
        "rounds": [{"marginal": ["z"], "epsilon": 1.0}],
    }
    (row,) = marginal_rows(grid, outputs)
    assert row.cells == 2 and row.rho_measure == pytest.approx(2 / 8) and row.rho_select is None
    assert marginal_rows({}, {}) == ()


def test_a_plan_with_format_parquet_and_report_writes_both_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dpexplorer release --report` on a plan with a synthetic entry of format parquet beside a
    count: the Parquet file, no CSV of records, and a report (HTML and PDF) whose synthetic
    section holds the quality table; `dpexplorer report` regenerates it; `format` on a statistic
    entry is refused."""
    from dpexplorer.cli import main

    data = tmp_path / "d.csv"
    _frame().write_csv(data)
    synthetic = {
        "kind": "synthetic",
        "format": "parquet",
        "query": Marginals(AXES).to_dict(),
        "mechanism": "aim",
        "parameters": PARAMS,
    }
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"query": {"type": "count"}, "mechanism": "laplace"}, synthetic]))
    out, ledger_path = tmp_path / "out", tmp_path / "ledger.sqlite"
    base = ["release", str(plan), "--data", str(data), "--out", str(out), "--ledger", str(ledger_path)]
    assert main([*base, "--budget-epsilon", "4", "--budget-delta", "1e-6", "--report"]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err, captured.err
    (parquet,) = out.glob("*-aim-synthetic.parquet")
    assert not list(out.glob("*-aim-synthetic.csv")) and len(pl.read_parquet(parquet)) > 0
    (page,) = out.glob("report-*.html")
    text = page.read_text(encoding="utf-8")
    assert "Quality: the measured marginals" in text and "ρ measurement" in text
    assert next(out.glob("report-*.pdf")).stat().st_size > 0
    assert main(["report", "--ledger", str(ledger_path), "--row", "2", "--out", str(tmp_path / "r")]) == 0
    regenerated = next((tmp_path / "r").glob("report-*.html")).read_text(encoding="utf-8")
    assert "Quality: the measured marginals" in regenerated
    plan.write_text(json.dumps([{"query": {"type": "count"}, "mechanism": "laplace", "format": "csv"}]))
    assert main(base) == 2
    assert "format is for a synthetic table" in capsys.readouterr().err


def test_the_provenance_lists_domain_workload_selection_estimator_and_seed_policy(tmp_path: Path) -> None:
    """Issue 30, item 4: domain, bins, workload, the marginals selected (the exponential
    mechanism's picks, each one measured), rho, the estimator and its settings, the seed policy
    (with the privacy unit's column and bound)."""
    frame = _frame().with_columns(pl.Series("person", np.repeat(np.arange(200), 3)))
    path = tmp_path / "p.csv"
    frame.write_csv(path)
    query = Marginals(AXES, workload=(("c", "x"), ("x", "k")), unit=PrivacyUnit("person", max_rows=2))
    built = marginal_input(load_dataset(path), query, bounding_seed=4)
    prepared = prepare_table(built, "aim", PARAMS, fingerprint=KEY, query=query.to_dict())
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        ledger.set_budget(KEY, 10.0, 1e-6, "zcdp")
        result = execute(prepared, ledger=ledger, out_dir=tmp_path / "out", bits=SeededBitSource(6))
    sidecar = json.loads(result.files["provenance"].read_text(encoding="utf-8"))
    grid = sidecar["discretisation"]
    assert grid["cells"]["x"] == ["[0, 5)", "[5, 10)", "missing"] and grid["cells"]["c"][-1] == "(any other)"
    assert [b["column"] for b in grid["bins"]] == ["c", "x", "k"]
    assert grid["workload"] == [["c", "x"], ["x", "k"]] and grid["rho"] == sidecar["rho"]
    assert grid["rows_per_person"] == 2 and grid["marginal_sensitivity_l2_squared"] == 4
    outputs = sidecar["dp_outputs"]
    assert outputs["selected"] == [r["marginal"] for r in outputs["rounds"]] and outputs["selected"]
    measured = [m["marginal"] for m in outputs["measured"]]
    assert measured[len(measured) - len(outputs["selected"]) :] == outputs["selected"]
    settings = sidecar["estimator_settings"]
    assert (settings["requested"], settings["resolved"], settings["iterations"]) == ("dense", "dense", 100)
    assert settings["in_loop_iterations"] == 50  # min(100, max(50, 100 // 5))
    assert settings["rows"] == 0 and "estimated total" in settings["rows_rule"]
    policy = sidecar["seed_policy"]
    assert (
        "never seeded" in policy["selection_and_measurement"]
        and "seeded-" in policy["selection_and_measurement"]
    )
    assert (
        "PCG64" in policy["records"] and "person" in policy["privacy_unit"] and "2" in policy["privacy_unit"]
    )


def test_the_report_built_at_release_time_equals_the_rebuilt_one(dataset: Any, tmp_path: Path) -> None:
    """build_report from the TableRelease and TableResult (the release's own objects) shows the
    same quality table as report_of_run from the files."""
    from dpexplorer.release.report_model import build_report

    built = marginal_input(dataset, Marginals(AXES, ways=2), bounding_seed=3)
    prepared = prepare_table(built, "aim", PARAMS, fingerprint=KEY, query=Marginals(AXES).to_dict())
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        ledger.set_budget(KEY, 10.0, 1e-6, "zcdp")
        result = execute(prepared, ledger=ledger, out_dir=tmp_path / "out", bits=SeededBitSource(7))
        live = build_report(
            dataset="d", fingerprint=KEY, released=[(prepared, result)], ledger=ledger, before=[]
        )
        rebuilt = report_of_run(ledger, result.row_id)
    assert live.items[0].marginals == rebuilt.items[0].marginals and live.items[0].marginals
    assert live.items[0].sampler == rebuilt.items[0].sampler != ""
    assert "Quality: the measured marginals" in render_html(live)
