"""Issue 31's acceptance: a plan opened into the window is its budget plan, priced as the CLI
charges it; the window's analysis (three statistics, one a count by group with a privacy unit)
exported as a plan, a script and a notebook, all three run (the CLI, the project's Python,
nbclient) and release the same statistics with the same guarantees into one ledger; no exported
file holds a true answer of the data."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from dpexplorer.cli import main
from dpexplorer.core.planning import guarantee_epsilon_delta
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict
from dpexplorer.gui.analysis_files import export_analysis, import_plan, window_analysis
from dpexplorer.gui.main_window import MainWindow
from dpexplorer.release.ledger import Ledger, guarantee_to_dict
from tests.gui.conftest import IDLE_TIMEOUT_MS, wait_idle

BUDGET_DELTA = 1e-6
PLAN = [
    {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.3}},
    {
        "query": {"type": "mean", "column": "age", "lower": 0, "upper": 100},
        "mechanism": "laplace",
        "parameters": {"epsilon": 0.4},
    },
    {
        "query": {
            "type": "group_by",
            "keys": [{"column": "sex", "categories": ["F", "M"]}],
            "statistic": "count",
            "unit": {"column": "pid", "max_groups": 1, "max_rows": 2},
        },
        "mechanism": "laplace",
        "parameters": {"epsilon": 0.3},
    },
]


@pytest.fixture
def people(tmp_path: Path) -> Path:
    """347 rows of 174 people (two rows each, one person one row), so that no true answer is a
    number the exported files hold for another reason."""
    path = tmp_path / "people.csv"
    rows = ["pid,sex,age"] + [
        f"{i // 2},{'F' if (i // 2) % 3 == 0 else 'M'},{18 + (i * 7) % 61}" for i in range(347)
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture
def window(qtbot, people: Path, tmp_path: Path):
    win = MainWindow(interactive=False, restore_layout=False)
    win.ledger_path = lambda: tmp_path / "ledger.sqlite"  # type: ignore[method-assign]
    qtbot.addWidget(win)
    win.show()
    win.open_file(people)
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: win.workspace is not None and win.identity_known(), timeout=IDLE_TIMEOUT_MS)
    return win


def _true_answers(people: Path) -> list[str]:
    frame = pl.read_csv(people)
    mean = frame["age"].mean()
    counts = frame.group_by("sex").len()["len"].to_list()
    return [str(frame.height), f"{mean:.6g}", f"{mean:.4f}", repr(mean), *map(str, counts)]


def _held_answers(text: str, answers: list[str], known: list[str]) -> list[str]:
    for path in known:  # the data's and the ledger's paths (pytest's folders hold numbers)
        text = text.replace(path, "")
    return [a for a in answers if re.search(rf"(?<![\d.]){re.escape(a)}(?![\d])", text)]


def _charged(people: Path, ledger: Path) -> list:
    key = load_dataset(people).content_fingerprint
    with Ledger(ledger) as book:
        return book.measurements(key)


def test_a_plan_opened_in_the_window_exports_as_plan_script_and_notebook(
    qtbot, window: MainWindow, people: Path, tmp_path: Path
) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    ledger = tmp_path / "ledger.sqlite"
    given = tmp_path / "given.json"
    given.write_text(json.dumps(PLAN))
    assert import_plan(window, given)
    view = window.workspace.budget_view
    qtbot.waitUntil(
        lambda: (
            len(view.plan) == 3 and getattr(view, "result", None) is not None and len(view.result.rows) == 3
        ),
        timeout=IDLE_TIMEOUT_MS,
    )
    wait_idle(qtbot, window)

    analysis = window_analysis(window)
    assert [(s.query, s.mechanism, s.parameters["epsilon"]) for s in analysis.statistics] == [
        (query_from_dict(e["query"]).to_dict(), e["mechanism"], e["parameters"]["epsilon"]) for e in PLAN
    ]
    files = {
        kind: export_analysis(window, tmp_path / f"analysis{suffix}", kind)
        for kind, suffix in (("plan", ".json"), ("script", ".py"), ("notebook", ".ipynb"))
    }
    texts = {kind: path.read_text(encoding="utf-8") for kind, path in files.items()}
    answers = _true_answers(people)
    bites = _held_answers(f"count = {answers[0]}, mean {answers[1]}", answers, [])
    assert {answers[0], answers[1]} <= set(bites)  # the check finds an answer when it is there
    for kind, text in texts.items():
        assert not _held_answers(text, answers, [str(people.resolve()), str(ledger)]), kind
    assert json.loads(texts["plan"]) == json.loads(json.dumps(analysis.plan_json()))
    book = nbformat.reads(texts["notebook"], as_version=4)
    words = [c.source for c in book.cells if c.cell_type == "markdown" and c.source.startswith("### ")]
    assert len(words) == 3
    assert "One person, identified by the column `pid`" in words[2] and "at most 2 row(s)" in words[2]
    assert "clipped to [0, 100]" in words[1] and "Laplace" in words[1]

    # 1. the plan through the CLI (which sets the budget), 2. the script, 3. the notebook
    command = ["release", str(files["plan"]), "--data", str(people), "--out", str(tmp_path / "cli")]
    assert main([*command, "--ledger", str(ledger), "--budget-epsilon", "5", "--budget-delta", "1e-6"]) == 0
    cli_charges = _charged(people, ledger)
    for row, measurement in zip(view.result.rows, cli_charges, strict=True):
        # the Budget tab priced each entry as the CLI then charged it (exploration sums: a hair above)
        charged = guarantee_epsilon_delta(measurement.guarantee, BUDGET_DELTA)[0]
        assert row.charged == pytest.approx(charged, rel=1e-6) and row.charged >= charged * (1 - 1e-12)
    script = subprocess.run(
        [sys.executable, str(files["script"])], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert script.returncode == 0, script.stderr
    assert script.stdout.count("provenance.json") == 3
    notebook = nbformat.read(files["notebook"], as_version=4)
    nbclient.NotebookClient(  # generous timeouts: a loaded CI machine starts a kernel slowly
        notebook,
        timeout=300,
        startup_timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    measurements = _charged(people, ledger)
    assert len(measurements) == 9 and all(m.status == "released" for m in measurements)
    runs = [measurements[0:3], measurements[3:6], measurements[6:9]]
    for run in runs[1:]:  # the same statistics, the same guarantees, in the same order
        for first, again in zip(runs[0], run, strict=True):
            assert (again.query, again.mechanism, again.parameters) == (
                first.query,
                first.mechanism,
                first.parameters,
            )
            assert guarantee_to_dict(again.guarantee) == guarantee_to_dict(first.guarantee)
    folders = {Path(m.export_path).parent.name for m in measurements}
    assert folders == {"cli", "released"}  # the script and the notebook write to OUT = "released"
    with Ledger(ledger) as book_:
        left = book_.remaining(measurements[0].fingerprint)
    # three runs of a plan whose epsilons add up to 1.0 (each exact path charges eps' <= eps)
    assert 5 - 3 * 1.0 <= left < 5 - 3 * 0.99


def test_a_bad_plan_is_refused_and_the_budget_plan_kept(qtbot, window: MainWindow, tmp_path: Path) -> None:
    view = window.workspace.budget_view
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps([PLAN[0], {"query": {"type": "mean", "column": "age"}, "mechanism": "laplace"}])
    )
    assert not import_plan(window, bad)
    assert window.last_error.startswith("Could not open the plan: plan entry 2: ")
    assert view.plan == ()
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps([{"query": {"type": "count"}, "mechanism": "no-such"}]))
    assert not import_plan(window, unknown)
    assert "plan entry 1: unknown mechanism 'no-such'" in window.last_error


def test_the_file_menu_s_dialogs_export_and_open(
    qtbot, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """File > Export Analysis As… (the format from the chosen filter, its suffix added) and
    File > Open Plan as Budget Plan…, with the file dialogs answered."""
    from PySide6.QtWidgets import QFileDialog

    given = tmp_path / "given.json"
    given.write_text(json.dumps(PLAN[:2]))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(given), ""))
    window.import_plan_action.trigger()
    view = window.workspace.budget_view
    qtbot.waitUntil(lambda: len(view.plan) == 2, timeout=IDLE_TIMEOUT_MS)
    assert window.tabs.currentWidget() is view
    chosen = (str(tmp_path / "mine"), "Python script using the dpexplorer API (*.py)")
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: chosen)
    window.export_analysis_action.trigger()
    script = (tmp_path / "mine.py").read_text(encoding="utf-8")
    assert "import dpexplorer as dpx" in script and script.count("'mechanism': 'laplace'") == 2
    assert "Analysis exported to" in window.statusBar().currentMessage()


def test_each_planned_statistic_is_explorable(qtbot, window: MainWindow, tmp_path: Path) -> None:
    """Double-clicking a planned statistic's name in the Budget tab puts its query in the query
    panel (controls that build the same query) and its mechanism and parameters in the
    mechanism panel, so every view explores it."""
    given = tmp_path / "given.json"
    given.write_text(json.dumps(PLAN))
    assert import_plan(window, given)
    view = window.workspace.budget_view
    qtbot.waitUntil(lambda: len(view.plan) == 3, timeout=IDLE_TIMEOUT_MS)
    for row in (2, 1, 0):
        view.table.cellDoubleClicked.emit(row, 0)
        expected = query_from_dict(PLAN[row]["query"]).to_dict()
        qtbot.waitUntil(
            lambda expected=expected: (
                window.explorer.query is not None
                and window.explorer.query.to_dict() == expected
                and window.mechanism_panel.current() is not None
                and window.explorer.params.get("epsilon") == PLAN[row]["parameters"]["epsilon"]  # noqa: B023
            ),
            timeout=IDLE_TIMEOUT_MS,
        )
        assert window.query_panel.build().to_dict() == expected  # the panel shows it
        assert window.mechanism_panel.current().name == "laplace"
        assert "query panel cannot show" not in window.statusBar().currentMessage()
    # a condition the panel has no control for ('in'): the views explore it as planned
    among = {"type": "predicate_count", "predicate": {"compare": "in", "column": "sex", "value": ["F"]}}
    given.write_text(json.dumps([{"query": among, "mechanism": "laplace", "parameters": {"epsilon": 0.7}}]))
    assert import_plan(window, given)
    qtbot.waitUntil(lambda: len(view.plan) == 1, timeout=IDLE_TIMEOUT_MS)
    view.table.cellDoubleClicked.emit(0, 0)
    assert "query panel cannot show" in window.statusBar().currentMessage()
    qtbot.waitUntil(
        lambda: (
            window.explorer.query.to_dict() == query_from_dict(among).to_dict()
            and window.explorer.params.get("epsilon") == 0.7
        ),
        timeout=IDLE_TIMEOUT_MS,
    )


def test_a_synthetic_table_of_the_window_exports_as_kind_synthetic(tmp_path: Path) -> None:
    """What the window releases for MST or AIM on a marginals query is a table: its export is a
    synthetic entry (it was a plain one: the script released noisy marginals). An entry opened
    from a plan keeps the plan's kind (a plain MST entry stays noisy marginals)."""
    from types import SimpleNamespace

    from dpexplorer.data.codebook import EMPTY
    from dpexplorer.gui.analysis_files import entry_kind

    marginals = {
        "type": "marginals",
        "axes": [
            {"column": "sex", "categories": ["F", "M"]},
            {"column": "income", "categories": ["<=50K", ">50K"]},
        ],
        "ways": 2,
    }
    params = {"epsilon": 1.0, "delta": 1e-9}
    items = [
        SimpleNamespace(label=f"#{n} m", mechanism=m, params=params) for n, m in ((1, "mst"), (2, "aim"))
    ]
    items.append(SimpleNamespace(label="#3 n", mechanism="laplace", params={"epsilon": 1.0}))
    view = SimpleNamespace(plan=items, _delta=lambda: 1e-6, budget_epsilon=SimpleNamespace(value=lambda: 1.0))
    stub = SimpleNamespace(
        dataset=SimpleNamespace(path=tmp_path / "d.csv"),
        workspace=SimpleNamespace(budget_view=view),
        plan_queries={"#1 m": (marginals, "add_remove"), "#2 m": (marginals, "add_remove")},
        explorer=None,
        dataset_view=SimpleNamespace(sampling_rate=None),
        # every fact declared (the plan's categories): this test is about the entries' kinds
        codebook=EMPTY,
        codebook_mismatch=lambda: None,
        blockers=lambda query: [],
    )
    stub.plan_queries["#3 n"] = ({"type": "count"}, "add_remove")
    kinds = [s.kind for s in window_analysis(stub).statistics]
    assert kinds == ["synthetic", "synthetic", "statistic"]
    assert [e.get("kind") for e in window_analysis(stub).plan_json()] == ["synthetic", "synthetic", None]
    stub.plan_kinds = {"#1 m": (marginals, "mst", "statistic")}  # opened from a plan without a kind
    assert [s.kind for s in window_analysis(stub).statistics] == ["statistic", "synthetic", "statistic"]
    stub.plan_kinds = {"#1 m": ({"type": "count"}, "mst", "statistic")}  # a stale row: not that entry
    assert window_analysis(stub).statistics[0].kind == "synthetic"
    assert entry_kind(marginals, "laplace") == "statistic"
