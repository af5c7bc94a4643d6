"""release/analysis_export.py: the window's analysis as a plan, a script and a notebook, from
declared facts only (the end-to-end runs are in tests/gui/test_analysis_files.py)."""

from __future__ import annotations

import json
import sys

import pytest

from dpexplorer.api import Plan
from dpexplorer.release.analysis_export import (
    NOTEBOOK_MISSING,
    Analysis,
    AnalysisExportError,
    Statistic,
    analysis_from_plan,
    export,
    notebook,
    script_text,
    statistic_markdown,
)

HISTOGRAM = {"type": "histogram", "axis": {"column": "race", "categories": ["White", "Black"]}}
PRIVATE_MEAN = {
    "type": "group_by",
    "keys": [],
    "statistic": "mean",
    "column": "age",
    "lower": 17,
    "upper": 90,
    "private_keys": {"columns": ["education"], "epsilon": 0.5, "delta": 1e-6},
}


def _analysis(rate: float | None = None) -> Analysis:
    return Analysis(
        "/data/adult.parquet",
        [
            Statistic(HISTOGRAM, "laplace", {"epsilon": 0.5}, "race"),
            Statistic(PRIVATE_MEAN, "noisy_mean", {"epsilon": 1.0}),
        ],
        sampling_rate=rate,
        budget=(3.0, 1e-5, "basic"),
    )


def test_each_statistic_is_said_in_words() -> None:
    histogram = statistic_markdown(1, Statistic(HISTOGRAM, "laplace", {"epsilon": 0.5}, "race"))
    assert histogram.startswith("### 1. race")
    assert "`race` has 2 declared categories" in histogram
    assert "One row: neighbouring datasets differ by adding or removing one row" in histogram
    assert (
        "Laplace" in histogram and "epsilon = 0.5" in histogram and "**Why.** Adds Laplace noise" in histogram
    )
    private = statistic_markdown(2, Statistic(PRIVATE_MEAN, "noisy_mean", {"epsilon": 1.0}))
    assert "clipped to [17, 90], declared by the steward" in private
    assert "selected privately by a noisy threshold (epsilon 0.5, delta 1e-6" in private


def test_the_plan_script_and_notebook_hold_the_same_plan(tmp_path) -> None:
    analysis = _analysis(rate=0.1)
    plan = json.loads(export(analysis, tmp_path / "a.json", "plan").read_text())
    assert plan == {
        "sampling": {"rate": 0.1},
        "measurements": [
            {"query": HISTOGRAM, "mechanism": "laplace", "parameters": {"epsilon": 0.5}},
            {"query": PRIVATE_MEAN, "mechanism": "noisy_mean", "parameters": {"epsilon": 1.0}},
        ],
    }
    assert analysis_from_plan(analysis.data, plan).plan_json() == plan
    script = script_text(analysis, ledger="/l.sqlite", out="out")
    compile(script, "analysis.py", "exec")
    namespace: dict = {}
    exec(script.split('if __name__ == "__main__":')[0], namespace)  # the settings and the plan only
    rebuilt = Plan.from_json(plan).to_json()  # the queries as query_from_dict rebuilds them
    assert namespace["PLAN"].to_json() == rebuilt
    assert (namespace["DATA"], namespace["LEDGER"], namespace["BUDGET"]) == (
        "/data/adult.parquet",
        "/l.sqlite",
        (3.0, 1e-5, "basic"),
    )
    pytest.importorskip("nbformat")
    book = notebook(analysis)
    kinds = [cell.cell_type for cell in book.cells]
    assert kinds == ["markdown", "code"] + ["markdown", "code"] * 2 + ["markdown", "code"]
    code = "\n".join(c.source for c in book.cells if c.cell_type == "code")
    namespace = {}
    exec(code.split("data = dpx.open_dataset")[0], namespace)
    assert namespace["PLAN"].to_json() == rebuilt


def test_what_a_plan_cannot_say_is_refused(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AnalysisExportError, match="no statistic"):
        Analysis("d.csv", []).plan_json()
    replaced = Analysis("d.csv", [Statistic({"type": "count"}, "laplace", {}, "n", relation="replace")])
    with pytest.raises(
        AnalysisExportError, match="statistic 1 \\(n\\) was explored with neighbours that replace"
    ):
        export(replaced, tmp_path / "p.json", "plan")
    assert not (tmp_path / "p.json").exists()
    with pytest.raises(AnalysisExportError, match="unknown export format"):
        export(_analysis(), tmp_path / "x", "pdf")
    monkeypatch.setitem(sys.modules, "nbformat.v4", None)  # nbformat not installed
    with pytest.raises(AnalysisExportError) as missing:
        notebook(_analysis())
    assert str(missing.value) == NOTEBOOK_MISSING


SYNTHETIC = {
    "type": "marginals",
    "axes": [
        {"column": "sex", "categories": ["F", "M"]},
        {"column": "age", "edges": [17.0, 40.0, 65.0, 90.0]},
    ],
    "ways": 2,
}


def test_a_synthetic_table_stays_synthetic_in_plan_script_and_notebook(tmp_path) -> None:
    """The audit's finding: the export dropped "kind": "synthetic", so the exported script
    released MST's noisy marginals instead of the table the window releases. The plan, the
    script's PLAN and the notebook's entry keep the kind; the plan round-trips with it; a plain
    MST entry (noisy marginals) stays a statistic."""
    params = {"epsilon": 1.0, "delta": 1e-9, "estimator": "dense"}
    analysis = Analysis(
        "/data/adult.parquet",
        [
            Statistic(SYNTHETIC, "mst", params, "table", kind="synthetic"),
            Statistic(SYNTHETIC, "mst", params, "marginals"),
        ],
    )
    plan = json.loads(export(analysis, tmp_path / "a.json", "plan").read_text())
    assert [entry.get("kind") for entry in plan] == ["synthetic", None]
    again = analysis_from_plan(analysis.data, plan)
    assert [s.kind for s in again.statistics] == ["synthetic", "statistic"]
    assert again.plan_json() == plan
    rebuilt = Plan.from_json(plan)
    assert [m.kind for m in rebuilt.measurements] == ["synthetic", "statistic"]
    namespace: dict = {}
    exec(script_text(analysis).split('if __name__ == "__main__":')[0], namespace)
    assert namespace["PLAN"].to_json() == rebuilt.to_json()
    assert "Releases a synthetic table (records drawn from a model" in script_text(analysis)
    pytest.importorskip("nbformat")
    code = "\n".join(c.source for c in notebook(analysis).cells if c.cell_type == "code")
    namespace = {}
    exec(code.split("data = dpx.open_dataset")[0], namespace)
    assert namespace["PLAN"].to_json() == rebuilt.to_json()
