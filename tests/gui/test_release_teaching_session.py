"""Issue 9 in the window: releases through the dialog and the ledger, teaching mode blocks
release, sessions restore every control."""

from __future__ import annotations

import json

import pytest
from conftest import wait_idle

from dpexplorer.gui.main_window import MainWindow
from dpexplorer.gui.teaching import RELEASE_BLOCKED
from dpexplorer.release.ledger import Ledger


@pytest.fixture
def ledger_path(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setattr(MainWindow, "ledger_path", lambda self: path)
    return path


def _open_dialog(qtbot, window, out_dir):
    window.open_release_dialog()
    dialog = window.release_dialog
    dialog.out_dir.setText(str(out_dir))
    qtbot.waitUntil(lambda: dialog.preview is not None, timeout=10_000)
    return dialog


def test_release_within_budget_writes_files_and_charges_the_ledger(qtbot, window, ledger_path, tmp_path):
    out = tmp_path / "out"
    dialog = _open_dialog(qtbot, window, out)
    assert dialog.budget_box.isVisibleTo(dialog), "a dataset without budget asks for one"
    dialog.budget_epsilon.setValue(2.0)
    dialog._set_budget()
    # a budget set re-prices: the preview is None until the new price arrives
    qtbot.waitUntil(
        lambda: dialog.preview is not None and dialog.preview.price.budget is not None, timeout=10_000
    )
    assert dialog.release_button.isEnabled()
    assert "Cost of this release: ε = <b>1</b>" in dialog.cost.text()
    dialog.release_button.click()
    qtbot.waitUntil(lambda: dialog.result is not None, timeout=10_000)
    written = {p.name for p in out.iterdir()}
    assert written == {p.name for p in dialog.result.files.values()}, "only the release's files"
    assert {"csv", "json", "provenance", "report", "report_pdf"} <= set(dialog.result.files)
    report = dialog.result.files["report"].read_text(encoding="utf-8")
    assert all(f"{v:.10g}" in report for v in dialog.result.values), "the report shows the release"
    with Ledger(ledger_path) as ledger:
        rows = ledger.measurements(window.dataset.content_fingerprint)
    assert len(rows) == 1 and rows[0].status == "released" and rows[0].id == dialog.result.row_id
    provenance = json.loads(dialog.result.files["provenance"].read_text())
    assert provenance["ledger_row_id"] == dialog.result.row_id
    assert not [key for key in _keys(provenance) if "true" in key.lower()], "no true answer exported"
    dialog.done(0)


def _keys(value: object) -> list[str]:
    if isinstance(value, dict):
        return [k for k in value] + [k for v in value.values() for k in _keys(v)]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


def test_release_over_budget_is_refused_with_the_ledgers_message_and_nothing_written(
    qtbot, window, ledger_path, tmp_path
):
    with Ledger(ledger_path) as ledger:
        ledger.set_budget(window.dataset.content_fingerprint, 0.5, 1e-6, "basic")
    out = tmp_path / "out"
    dialog = _open_dialog(qtbot, window, out)
    assert not dialog.release_button.isEnabled()
    assert "release refused" in dialog.message.text() and "0.5" in dialog.message.text()
    assert not out.exists() or not any(out.iterdir())
    with Ledger(ledger_path) as ledger:
        assert ledger.measurements(window.dataset.content_fingerprint) == []
    dialog.done(0)


def test_teaching_mode_blocks_release_and_says_why(qtbot, window, ledger_path):
    window.teaching_action.setChecked(True)
    assert not window.release_action.isEnabled()
    assert window.release_action.toolTip() == RELEASE_BLOCKED
    qtbot.waitUntil(lambda: window.teaching_panel.draw is not None, timeout=10_000)
    window.open_release_dialog()
    assert window.last_error == RELEASE_BLOCKED
    assert "hidden" in window.teaching_panel.truth.text()
    window.teaching_panel.reveal.setChecked(True)
    assert "55" in window.teaching_panel.truth.text()
    first = window.teaching_panel.draw.run
    window.teaching_panel.resample.click()
    qtbot.waitUntil(lambda: window.teaching_panel.draw.run == first + 1, timeout=10_000)
    window.teaching_action.setChecked(False)
    assert window.release_action.isEnabled()


def test_session_round_trip_restores_every_control(qtbot, window, tmp_path):
    panel = window.query_panel
    panel.select_kind("median", "hours_per_week")
    panel.lower_bound.setValue(1)
    panel.upper_bound.setValue(99)
    panel.emit_query()
    wait_idle(qtbot, window)
    window.mechanism_panel.params.controls["epsilon"].set_value(0.37)
    window.mechanism_panel.set_values({"epsilon": 0.37})
    window.mechanism_panel.seed.setValue(1234)
    wait_idle(qtbot, window)
    saved = window.current_session()
    path = tmp_path / "s.json"
    window.save_session(path)
    assert json.loads(path.read_text())["query"]["column"] == "hours_per_week"

    other = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(other)
    other.load_session(path)
    qtbot.waitUntil(
        lambda: other.dataset is not None and other.explorer.mechanism is not None, timeout=20_000
    )
    wait_idle(qtbot, other)
    restored = other.current_session()
    assert restored.query_controls == saved.query_controls
    assert restored.query == saved.query
    assert restored.mechanism == saved.mechanism and restored.params == saved.params
    assert restored.seed == 1234
    assert other.last_error is None


def test_session_for_another_dataset_is_refused_and_nothing_applied(qtbot, window, tmp_path):
    """The old code said the file "has changed" and applied the session to it anyway."""
    data = tmp_path / "d.csv"
    data.write_text("x,y\n1,a\n2,b\n3,a\n4,b\n")
    window.open_file(data)
    qtbot.waitUntil(lambda: window.dataset.path == data, timeout=10_000)
    wait_idle(qtbot, window)
    window.save_session(tmp_path / "s.json")
    shown = window.dataset
    data.write_text("x,y\n1,a\n2,b\n3,a\n5,b\n")
    window.load_session(tmp_path / "s.json")
    qtbot.waitUntil(lambda: window.last_error is not None, timeout=10_000)
    assert "another dataset" in window.last_error and "d.csv" in window.last_error
    assert "Nothing of the session was applied" in window.last_error
    wait_idle(qtbot, window)
    assert window.dataset is shown


def test_a_secret_sample_claim_on_the_data_tab_reaches_the_budget_and_the_release(
    qtbot, window, ledger_path, tmp_path
):
    """Issue 18: the Data tab's claim is composed by the budget view, charged amplified by the
    release (Subsampled in the ledger) and recorded in the provenance as the steward's claim."""
    from dpexplorer.core.accounting.guarantees import Subsampled

    with Ledger(ledger_path) as ledger:
        ledger.set_budget(window.dataset.content_fingerprint, 2.0, 1e-6, "basic")
    seen = []
    window.dataset_view.sampling_changed.connect(seen.append)
    window.dataset_view.secret_sample.setChecked(True)
    window.dataset_view.sample_rate.setValue(0.1)
    assert seen[-1] == 0.1 and window.workspace.budget_view.request().sampling_rate == 0.1
    dialog = _open_dialog(qtbot, window, tmp_path / "out")
    assert "secret sample" in dialog.what.text()
    assert dialog.preview.prepared.sampling_rate == 0.1
    assert dialog.preview.price.cost_epsilon < 0.5 * dialog.preview.prepared.exact.epsilon
    dialog.release_button.click()
    qtbot.waitUntil(lambda: dialog.result is not None, timeout=10_000)
    with Ledger(ledger_path) as ledger:
        (row,) = ledger.measurements(window.dataset.content_fingerprint)
    assert isinstance(row.guarantee, Subsampled) and row.guarantee.rate == 0.1
    provenance = json.loads(dialog.result.files["provenance"].read_text())
    claim = provenance["sampling_claim"]
    assert claim["poisson_rate"] == 0.1 and "declared by the steward" in claim["claim"]
    dialog.done(0)
    window.dataset_view.secret_sample.setChecked(False)
    assert seen[-1] is None and window.workspace.budget_view.request().sampling_rate is None
