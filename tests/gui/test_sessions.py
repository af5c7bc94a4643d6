"""Sessions restore everything the user set, and refuse, naming the field, what they cannot."""

from __future__ import annotations

import json
import re

import pytest
from conftest import wait_idle

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.gui.main_window import MainWindow
from dpexplorer.gui.session import load_session


def _reopen(qtbot, path) -> MainWindow:
    other = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(other)
    other.show()
    other.load_session(path)
    qtbot.waitUntil(
        lambda: (
            other.dataset is not None
            and other.explorer.mechanism is not None
            and other.workspace is not None
            and getattr(other, "_pending_session", None) is None
        ),
        timeout=30_000,
    )
    wait_idle(qtbot, other)
    return other


def test_a_session_restores_plan_budget_tab_teaching_and_every_control(qtbot, window, tmp_path):
    """The old code reopened a two-entry plan with none, and saved neither budget nor tab."""
    budget = window.workspace.budget_view
    budget.add_requested.emit()
    window.query_panel.select_kind("mean", "age")
    wait_idle(qtbot, window)
    window.mechanism_panel.select("gaussian")
    window.mechanism_panel.set_values({"epsilon": 0.5})
    window.mechanism_panel.seed.setValue(4321)
    wait_idle(qtbot, window)
    budget.add_requested.emit()
    budget.budget_epsilon.setValue(2.5)
    budget.share.setChecked(True)
    window.tabs.setCurrentIndex(window.tabs.indexOf(window.workspace.risk_view))
    wait_idle(qtbot, window)
    saved = window.current_session()
    assert len(saved.plan) == 2 and saved.tab == "Risk"
    path = tmp_path / "s.json"
    window.save_session(path)

    other = _reopen(qtbot, path)
    qtbot.waitUntil(lambda: len(other.workspace.budget_view.plan) == 2, timeout=30_000)
    restored = other.current_session()
    assert other.last_error is None
    assert restored.plan == saved.plan
    assert restored.budget == saved.budget
    assert restored.tab == "Risk"
    for field in ("query_controls", "query", "mechanism", "params", "seed", "teaching"):
        assert getattr(restored, field) == getattr(saved, field), field


def _saved(window, tmp_path) -> dict:
    path = tmp_path / "good.json"
    window.save_session(path)
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("params", {"epsilon": 1e9}, "params"),
        ("seed", 10**30, "seed"),
        ("seed", "12", "seed"),
        ("params", [1, 2], "params"),
        ("query", [], "query"),
        ("query_controls", {"kind": "count"}, "query_controls.column"),
        ("plan", {"label": "x"}, "plan"),
        ("plan", [{"label": "x", "mechanism": "laplace", "params": {"epsilon": -1}}], "plan[0].params"),
        ("mechanism", "no-such", "mechanism"),
        ("teaching", "yes", "teaching"),
        ("budget", {"epsilon": 0, "delta": 0, "share": False, "method": "pld"}, "budget.epsilon"),
        ("dataset_fingerprint", 7, "dataset_fingerprint"),
    ],
)
def test_a_wrong_field_is_refused_by_name_and_nothing_changes(qtbot, window, tmp_path, field, value, named):
    """The old code raised in Qt slots and silently kept the old values."""
    payload = _saved(window, tmp_path)
    payload[field] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(payload))
    with pytest.raises(DPExplorerError, match=re.escape(f"“{named}”")):
        load_session(path)
    before = window.current_session()
    window.load_session(path)
    assert window.last_error is not None and f"“{named}”" in window.last_error
    wait_idle(qtbot, window)
    assert window.current_session() == before


def test_a_session_whose_codebook_is_malformed_is_refused_by_name(qtbot, window, tmp_path):
    """The session keeps the dataset's codebook (issue 40); a bad one is named, never applied."""
    payload = _saved(window, tmp_path)
    assert payload["query_controls"]["codebook"]["columns"]["age"]["bounds"]["origin"] == "shipped"
    payload["query_controls"]["codebook"]["columns"]["age"]["bounds"]["value"] = [90, 17]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(payload))
    with pytest.raises(DPExplorerError, match=r"“query_controls\.codebook”.*bounds are inverted"):
        load_session(path)
