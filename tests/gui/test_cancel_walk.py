"""Issue 41, item 4: Esc means idle, everywhere. Every panel that runs work on request has its
Run / Cancel / progress row (:class:`~dpexplorer.gui.views.run_controls.RunControls`); this
walk finds every one the window makes (none is listed here, so a new panel is walked too),
starts each, presses Esc once and checks that each is back at rest: Run enabled, Cancel off,
no progress bar, no "running" status; a release charging the ledger meanwhile (the private
estimates' dialogs) is not stopped. Before, Esc stopped the synthetic view's curve fits but
left "12 % of the fits done" and its Run button disabled (as the audit panel was in issue 28).

Every job submitted once the window is ready is replaced by one that reports 12 % and waits
for its cancel, so each panel is surely running when Esc comes, on a machine of any speed."""

from __future__ import annotations

import threading

import pytest
from conftest import IDLE_TIMEOUT_MS, wait_idle
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QTabWidget, QWidget

from dpexplorer.core.errors import CancelledError
from dpexplorer.core.mechanisms.runs import Job
from dpexplorer.data.default import default_dataset_path
from dpexplorer.gui import private_bounds_dialog, private_categories_dialog
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.main_window import MainWindow
from dpexplorer.gui.views.run_controls import RunControls

HANG_S = 120.0
"""A held job gives up waiting for its cancel after this long (a hang guard, not a speed)."""


def _held(*_args: object, job: Job) -> None:
    """A job that reports 12 % done and runs until it is cancelled."""
    job.checkpoint(0.12)
    waited = threading.Event()
    for _ in range(int(HANG_S / 0.01)):
        if job.cancel is not None and job.cancel.cancelled:
            raise CancelledError("cancelled")
        waited.wait(0.01)


def _reveal(widget: QWidget) -> None:
    """Show the tab pages ``widget`` lies on (a page's job may start only while it is shown)."""
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QTabWidget):
            for i in range(parent.count()):
                page = parent.widget(i)
                if page is widget or page.isAncestorOf(widget):
                    parent.setCurrentIndex(i)
        parent = parent.parentWidget()


def _at_rest(controls: RunControls) -> list[str]:
    """What is left of a run on ``controls`` (nothing: at rest)."""
    left = []
    if controls.running:
        left.append("still running")
    if controls.cancel_button.isEnabled():
        left.append("Cancel enabled")
    if not controls.run_button.isEnabled():
        left.append("Run disabled")
    if controls.progress.isVisibleTo(controls) or controls.progress.value():
        left.append(f"progress bar at {controls.progress.text()!r}")
    if controls.busy and controls.busy in controls.status.text():
        left.append(f"status {controls.status.text()!r}")
    return left


@pytest.fixture
def made(monkeypatch) -> list[RunControls]:
    """Every RunControls made from now on."""
    made: list[RunControls] = []
    real = RunControls.__init__

    def record(self: RunControls, *args: object, **kwargs: object) -> None:
        real(self, *args, **kwargs)  # type: ignore[arg-type]
        made.append(self)

    monkeypatch.setattr(RunControls, "__init__", record)
    return made


def test_escape_leaves_every_panel_that_runs_work_at_rest(qtbot, made, monkeypatch) -> None:
    window = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(window)
    window.resize(1280, 720)
    window.show()
    window.open_file(default_dataset_path())
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: window.attack_views.tab is not None, timeout=IDLE_TIMEOUT_MS)
    real_submit = ComputeService.submit
    monkeypatch.setattr(
        ComputeService, "submit", lambda self, view, _fn, *a, **k: real_submit(self, view, _held)
    )
    walked = []
    for controls in made:
        before = set(window.compute.pending_views())
        _reveal(controls)  # a page may start its job when shown (the reconstruction attack does)
        controls.set_ready(True)  # whether it may run is its owner's business: here, what Esc leaves
        controls.run_button.click()
        job = controls.job  # the compute service's view the controls were bound to ("" unbound)

        def submitted(job: str = job, before: set[str] = before) -> bool:
            pending = set(window.compute.pending_views())
            return job in pending if job else bool(pending - before)

        qtbot.waitUntil(submitted, timeout=IDLE_TIMEOUT_MS)
        assert controls.running and not controls.run_button.isEnabled(), controls.run_button.text()
        walked.append(controls.run_button.text())
    assert {"Run the curve", "Run BLR", "Run attack", "Audit ε"} <= set(walked)
    charging = (private_bounds_dialog.JOB, private_categories_dialog.JOB)  # releases, in their dialogs
    for job in charging:
        window.compute.submit(job, _held)
    QTest.keyClick(window, Qt.Key.Key_Escape)
    assert set(window.compute.pending_views()) == set(charging), (
        "Esc left a job running, or stopped a release"
    )
    left = {c.run_button.text(): _at_rest(c) for c in made}
    assert not any(left.values()), left
    unbound = [c.run_button.text() for c in made if not c.job]
    assert not unbound, f"runs a job the window's cancel does not reach: {unbound}"
