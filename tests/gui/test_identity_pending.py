"""Issue 17: the dataset's content fingerprint (its key in the budget ledger) is computed by its
own job after the load, so the views never wait for it. Until it is known the window says so,
Release is disabled with the reason, and nothing reads or charges the ledger; then the budget
shows under the same key as before. Closing the window stops the job (it polls its token).

The fingerprint is made slow by a monkeypatched row hash (a gate, or a sleep per small batch)."""

from __future__ import annotations

import os
import threading

import pytest

from dpexplorer.data import fingerprints
from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.load import content_fingerprint, load_dataset
from dpexplorer.gui.main_window import MainWindow
from dpexplorer.gui.window_release import IDENTITY_PENDING, IDENTITY_VIEW
from dpexplorer.release.ledger import Ledger

TIMEOUT_MS = 120_000  # a guard against a hang, not a speed test


@pytest.fixture
def ledger_path(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setattr(MainWindow, "ledger_path", lambda self: path)
    return path


def _views_done_but_identity(window: MainWindow) -> bool:
    return (
        window.dataset is not None
        and window.workspace is not None
        and not window.explorer.pending
        and not window.theory_views.pending
        and window.compute.pending_views() == (IDENTITY_VIEW,)
    )


def test_views_finish_before_the_identity_and_release_waits_for_it(qtbot, monkeypatch, ledger_path):
    key = content_fingerprint(load_dataset(default_dataset_path()).frame)  # the key of old
    with Ledger(ledger_path) as ledger:
        ledger.set_budget(key, 3.5, 1e-6, "basic")
    gate = threading.Event()
    real_hash_sum = fingerprints._hash_sum

    def gated(rows):
        gate.wait(TIMEOUT_MS / 1000)
        return real_hash_sum(rows)

    monkeypatch.setattr(fingerprints, "_hash_sum", gated)
    window = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(window)
    window.show()
    window.open_file(default_dataset_path())
    qtbot.waitUntil(lambda: _views_done_but_identity(window), timeout=TIMEOUT_MS)
    assert window.explorer.query is not None and window.neighbours_view.isVisible()
    assert not window.identity_known()
    assert not window.release_action.isEnabled()
    assert window.release_action.toolTip() == IDENTITY_PENDING
    budget_view = window.workspace.budget_view
    assert "being computed" in budget_view.budget_source.text()
    assert budget_view._ledger_method is None, "the ledger is not read before the key is known"
    qtbot.waitUntil(lambda: "Identifying the dataset" in window.statusBar().currentMessage(), timeout=10_000)
    window.open_release_dialog()  # the shortcut, say: refused with the reason, no dialog
    assert window.last_error == IDENTITY_PENDING and not hasattr(window, "release_dialog")
    window.last_error = None
    window.open_private_bounds_dialog("age")  # it charges the ledger too: refused the same way
    assert window.last_error == IDENTITY_PENDING and not hasattr(window, "private_bounds_dialog")
    if os.environ.get("DPX_SHOT_DIR"):  # to look at: python -m pytest ... with DPX_SHOT_DIR set
        window.tabs.setCurrentWidget(budget_view)
        window.grab().save(os.path.join(os.environ["DPX_SHOT_DIR"], "identity-pending.png"))
    gate.set()
    qtbot.waitUntil(window.identity_known, timeout=TIMEOUT_MS)
    assert window.dataset.content_fingerprint == key, "the same ledger key as before"
    assert window.release_action.isEnabled()
    assert budget_view._ledger_method == "basic" and budget_view.budget_epsilon.value() == 3.5
    assert "from the ledger" in budget_view.budget_source.text()
    window.close()


def test_closing_the_window_stops_the_identity_job(qtbot, monkeypatch):
    """The third batch of the hash waits for a gate: closing the window must return while the
    job is still inside it (a window that waited for the job would wait for the gate), and the
    job must stop at its next check of the token, before hashing every row."""
    calls, inside, gate = [], threading.Event(), threading.Event()
    real_hash_sum = fingerprints._hash_sum

    def gated(rows):
        calls.append(rows.height)
        if len(calls) == 3:
            inside.set()
            gate.wait(TIMEOUT_MS / 1000)
            inside.clear()
        return real_hash_sum(rows)

    monkeypatch.setattr(fingerprints, "HASH_BATCH", 500)  # about 65 batches of Adult
    monkeypatch.setattr(fingerprints, "_hash_sum", gated)
    window = MainWindow(interactive=False, restore_layout=False)
    window.show()
    window.open_file(default_dataset_path())
    qtbot.waitUntil(inside.is_set, timeout=TIMEOUT_MS)
    window.close()
    assert inside.is_set(), "closing the window waited for the identity job"
    gate.set()
    assert window.compute.wait_for_workers(TIMEOUT_MS / 1000)
    assert sum(calls) < window.dataset.n_rows, "stopped before hashing every row"


def test_esc_leaves_the_identity_job_running(qtbot, monkeypatch):
    """Esc stops the views; the dataset's identity is not a view (without it no release)."""
    gate = threading.Event()
    real_hash_sum = fingerprints._hash_sum
    monkeypatch.setattr(fingerprints, "_hash_sum", lambda rows: gate.wait(60) and real_hash_sum(rows))
    window = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(window)
    window.show()
    window.open_file(default_dataset_path())
    qtbot.waitUntil(lambda: IDENTITY_VIEW in window.compute.pending_views(), timeout=TIMEOUT_MS)
    window.cancel_jobs()
    assert IDENTITY_VIEW in window.compute.pending_views()
    gate.set()
    qtbot.waitUntil(window.identity_known, timeout=TIMEOUT_MS)
    window.close()
