"""Issue 20 in the window: a release that cannot be written is refused in the dialog's message
before anything is charged; one that fails after its charge says what was spent for nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpexplorer.gui.main_window import MainWindow
from dpexplorer.release import release as release_module
from dpexplorer.release.ledger import Ledger


@pytest.fixture
def ledger_path(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setattr(MainWindow, "ledger_path", lambda self: path)
    return path


def _priced_dialog(qtbot, window, ledger_path, out_dir):
    with Ledger(ledger_path) as ledger:
        ledger.set_budget(window.dataset.content_fingerprint, 5.0, 1e-6, "basic")
    window.open_release_dialog()
    dialog = window.release_dialog
    dialog.out_dir.setText(str(out_dir))
    qtbot.waitUntil(lambda: dialog.preview is not None and dialog.release_button.isEnabled(), timeout=20_000)
    return dialog


def _rows(window, ledger_path):
    with Ledger(ledger_path) as ledger:
        return ledger.measurements(window.dataset.content_fingerprint)


def test_unwritable_directory_is_a_message_and_charges_nothing(qtbot, window, ledger_path, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    dialog = _priced_dialog(qtbot, window, ledger_path, blocker / "out")
    dialog.release_button.click()  # used to raise in the slot (mkdir on the main thread)
    qtbot.waitUntil(lambda: "output directory" in dialog.message.text(), timeout=20_000)
    qtbot.waitUntil(lambda: dialog.release_button.isEnabled(), timeout=20_000)  # priced again
    assert "output directory" in dialog.message.text(), "the reason stays on screen"
    assert dialog.result is None and _rows(window, ledger_path) == []
    dialog.done(0)


def test_failure_after_the_charge_says_what_was_spent(qtbot, window, ledger_path, tmp_path, monkeypatch):
    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(release_module, "export_release", full_disk)
    dialog = _priced_dialog(qtbot, window, ledger_path, tmp_path / "out")
    dialog.release_button.click()
    qtbot.waitUntil(lambda: "released nothing" in dialog.message.text(), timeout=20_000)
    assert "charged epsilon" in dialog.message.text()
    (row,) = _rows(window, ledger_path)
    assert row.status == "failed" and "No space left" in (row.note or "")
    assert not list(Path(tmp_path / "out").glob("release-*"))
    dialog.done(0)
