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


@pytest.fixture(scope="module")
def adult_with_summary():
    """Adult, the steward's summary of it and its shipped codebook, as the window hands them to
    the query panel (``QueryPanel.set_dataset(*adult_with_summary)``)."""
    from dpexplorer.data.codebook import shipped_codebook
    from dpexplorer.data.engine import POLARS
    from dpexplorer.data.load import load_dataset

    dataset = load_dataset(default_dataset_path())
    summary = POLARS.summary(dataset)
    codebook = shipped_codebook(default_dataset_path())
    return dataset, {"ranges": summary.ranges, "top_values": summary.top_values}, codebook


@pytest.hookimpl(trylast=True)  # after -m / -k have deselected what they will
def pytest_collection_modifyitems(config, items):
    """The render audit's sample is a subset of the full audit: when a run selects both (CI runs
    everything), the sample is left out so that its 20-30 s are not spent twice."""
    names = {item.originalname for item in items}  # the full audit is parametrized
    if {"test_render_audit_on_a_sample", "test_render_audit_everything"} <= names:
        sample = [item for item in items if item.name == "test_render_audit_on_a_sample"]
        config.hook.pytest_deselected(items=sample)
        items[:] = [item for item in items if item.name != "test_render_audit_on_a_sample"]
