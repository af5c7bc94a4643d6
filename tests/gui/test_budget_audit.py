"""The Budget tab's "Audit this plan…" (issue 44, deliverable 1): the replay audit of the
window's plan on the open data, in a worker, with Cancel and Esc; nothing charged to the
window's ledger."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from conftest import IDLE_TIMEOUT_MS
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from dpexplorer.core.cancel import CancelToken, checkpoint
from dpexplorer.gui import jobs, plan_audit_dialog
from dpexplorer.gui.main_window import MainWindow

HANG_S = 120.0
"""A held audit gives up waiting for its cancel after this long (a hang guard, not a speed)."""


def _charges(window: MainWindow) -> int:
    path = Path(window.ledger_path())
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0])


def _dialog(qtbot, window: MainWindow) -> plan_audit_dialog.PlanAuditDialog:
    """The plan: the statistic on screen (the default count), then the audit dialog opened."""
    window.add_current_to_plan()
    qtbot.waitUntil(lambda: len(window.workspace.budget_view.plan) == 1, timeout=IDLE_TIMEOUT_MS)
    window.workspace.budget_view.audit_button.click()
    dialog = window.plan_audit_dialog
    assert dialog.isVisible() and len(dialog.entries) == 1
    return dialog


def test_the_plan_is_audited_in_a_worker_and_nothing_is_charged(qtbot, window: MainWindow) -> None:
    before = _charges(window)
    dialog = _dialog(qtbot, window)
    dialog.draws.setValue(0)  # the replay only: the black box is core's, tested there
    dialog.controls.run_button.click()
    assert dialog.controls.running
    qtbot.waitUntil(lambda: dialog.audit is not None, timeout=IDLE_TIMEOUT_MS)
    audit = dialog.audit
    assert audit.passed and len(audit.neighbours) >= 2
    assert dialog.table.rowCount() == 1
    cells = [dialog.table.item(0, c).text() for c in range(dialog.table.columnCount())]
    assert cells[2] == "pass" and cells[-1] == "pass" and cells[4] == "not run", cells
    assert dialog.verdict.text().startswith("Every statistic passed on")
    assert not dialog.controls.running and dialog.controls.run_button.isEnabled()
    assert _charges(window) == before, "the audit charged the window's ledger"


def _held(*_args: object, cancel: CancelToken | None = None, progress=None) -> None:
    """An audit that reports 12 % done and runs until it is cancelled (so Esc surely finds it
    running, on a machine of any speed)."""
    progress(0.12)
    waited = threading.Event()
    for _ in range(int(HANG_S / 0.01)):
        checkpoint(cancel)
        waited.wait(0.01)


def test_cancel_and_escape_stop_the_audit(qtbot, window: MainWindow, monkeypatch) -> None:
    """Cancel returns the controls to rest with the job gone; Esc (the dialog is modal: the
    window's Esc cannot reach it) closes the dialog and stops its job. Nothing is charged."""
    before = _charges(window)
    dialog = _dialog(qtbot, window)
    monkeypatch.setattr(jobs, "plan_audit", _held)

    def started() -> None:
        dialog.controls.run_button.click()
        qtbot.waitUntil(lambda: dialog.controls.progress.value() > 0, timeout=IDLE_TIMEOUT_MS)

    def stopped() -> bool:
        return plan_audit_dialog.JOB not in window.compute.pending_views()

    started()
    dialog.controls.cancel_button.click()
    qtbot.waitUntil(stopped, timeout=IDLE_TIMEOUT_MS)
    assert not dialog.controls.running and dialog.controls.run_button.isEnabled()
    assert not dialog.controls.cancel_button.isEnabled() and not dialog.controls.progress.isVisibleTo(dialog)
    assert dialog.controls.status.text() == dialog.controls.cancelled
    assert dialog.audit is None and dialog.table.rowCount() == 0
    started()
    QTest.keyClick(dialog, Qt.Key.Key_Escape)
    qtbot.waitUntil(stopped, timeout=IDLE_TIMEOUT_MS)
    assert not dialog.isVisible() and dialog.audit is None
    assert _charges(window) == before


def test_a_plan_that_cannot_be_exported_is_named_not_audited(qtbot, window: MainWindow, monkeypatch) -> None:
    shown: list[str] = []
    monkeypatch.setattr(window, "show_error", shown.append)
    monkeypatch.setattr(window.explorer, "query", None)  # nothing on screen and an empty plan
    window.workspace.budget_view.audit_button.click()
    assert shown and shown[0].startswith("Could not audit the plan:")
    assert getattr(window, "plan_audit_dialog", None) is None
