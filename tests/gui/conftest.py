"""Fixtures for driving the main window as a user would."""

from __future__ import annotations

import pytest

from dpexplorer.data.default import default_dataset_path
from dpexplorer.gui.main_window import MainWindow

IDLE_TIMEOUT_MS = 120_000  # a guard against a hang, not a speed test: loaded CI machines are slow


def wait_idle(qtbot, window: MainWindow) -> None:
    qtbot.waitUntil(lambda: window.dataset is not None and window.views_idle(), timeout=IDLE_TIMEOUT_MS)


@pytest.fixture
def window(qtbot):
    win = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(win)
    win.show()
    win.open_file(default_dataset_path())
    wait_idle(qtbot, win)
    return win
