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


def test_bounds_filled_in_from_the_data_are_flagged_before_a_release() -> None:
    """Issue 15: published bounds equal to the column's observed extremes reveal them; the
    release dialog says so (the check reads the steward-only summary the panel already has)."""
    from dpexplorer.data.queries import Count, Mean
    from dpexplorer.gui.window_release import peeked_bounds_warning

    observed = {"age": (17.0, 90.0)}
    both = peeked_bounds_warning(Mean("age", 17, 90), observed)
    assert "lower 17 and upper 90 bounds are the observed extremes of age" in both
    assert "upper 90 bound is" in peeked_bounds_warning(Mean("age", 0, 90), observed)
    assert peeked_bounds_warning(Mean("age", 0, 120), observed) == ""
    assert peeked_bounds_warning(Count(), observed) == ""


def test_the_release_dialog_shows_the_peeked_bounds_warning(qtbot, window, ledger_path, tmp_path):
    """Bounds the steward types (declared) that are the observed extremes are flagged; Adult's
    shipped bounds (adult.names and the CPS top-code: 17 and 90) are public and are not."""
    window.query_panel.select_kind("mean", "age")
    qtbot.waitUntil(lambda: getattr(window.explorer.query, "column", None) == "age", timeout=20_000)
    dialog = _priced_dialog(qtbot, window, ledger_path, tmp_path / "out")
    assert not dialog.warning.isVisibleTo(dialog)
    dialog.done(0)
    window.set_codebook(window.codebook.with_fact("age", "bounds", None))
    panel = window.query_panel
    panel.lower_bound.setValue(17)
    panel.upper_bound.setValue(90)
    panel.upper_bound.editingFinished.emit()  # typed: declared by the steward
    assert window.codebook.fact("age", "bounds").origin == "declared"
    qtbot.waitUntil(lambda: getattr(window.explorer.query, "upper", None) == 90, timeout=20_000)
    dialog = _priced_dialog(qtbot, window, ledger_path, tmp_path / "out")
    assert dialog.warning.isVisibleTo(dialog) and "observed extremes of age" in dialog.warning.text()
    dialog.done(0)
