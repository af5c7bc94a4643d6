"""Issue 40 in the window: a CSV opened with no codebook has no bound or category filled from
the data; Release names each undeclared fact and charges nothing; once the facts are declared
(in the Codebook dialog, or typed in the query panel) it releases and the provenance lists each
fact's origin. An exported analysis states each fact's origin as the codebook records it, and
one with an undeclared fact is refused. The codebook dialog opens and saves files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from PySide6.QtWidgets import QAbstractSpinBox, QLineEdit

from dpexplorer.data.codebook import EMPTY, Codebook, ColumnFacts, Fact, load_codebook, save_codebook
from dpexplorer.gui.main_window import MainWindow
from dpexplorer.release.analysis_export import AnalysisExportError
from dpexplorer.release.ledger import Ledger
from tests.gui.conftest import IDLE_TIMEOUT_MS, wait_idle

EXTREME, UNIQUE = 987654.25, "Zzyzx"


@pytest.fixture
def people(tmp_path: Path) -> Path:
    rng = np.random.default_rng(7)
    rows = 400
    income = np.round(rng.uniform(1000, 4990, rows), 2)
    income[-1] = EXTREME
    city = rng.choice(["Ames", "Boise", "Cary"], rows)
    city[-1] = UNIQUE
    path = tmp_path / "people.csv"
    pl.DataFrame({"city": city, "income": income}).write_csv(path)
    return path


@pytest.fixture
def window(qtbot, people: Path, tmp_path: Path, monkeypatch):
    ledger_path = tmp_path / "ledger.sqlite"
    monkeypatch.setattr(MainWindow, "ledger_path", lambda self: ledger_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # the releases' default folder
    win = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(win)
    win.show()
    win.open_file(people)
    wait_idle(qtbot, win)
    qtbot.waitUntil(lambda: win.identity_known(), timeout=IDLE_TIMEOUT_MS)
    return win


def _data_values(path: Path) -> set[str]:
    """Every value of the file and its columns' extremes, as text the controls could hold."""
    frame = pl.read_csv(path)
    values = {str(v) for v in frame["city"].unique()}
    income = frame["income"]
    values |= {f"{income.min():g}", f"{income.max():g}", f"{income.min():.3f}", f"{income.max():.3f}"}
    return values


def _fact_controls(window: MainWindow) -> list[str]:
    """The text of every line and number box of the query panel (conditions aside: typed)."""
    panel = window.query_panel
    typed = {row.value for row in panel.conditions}
    widgets = [*panel.findChildren(QLineEdit), *panel.findChildren(QAbstractSpinBox)]
    return [w.text() for w in widgets if w not in typed and w.isVisibleTo(panel)]


def _comments(script: Path) -> str:
    """A script's text with its comment lines joined (the words wrap at 94 characters)."""
    return re.sub(r"\s*\n#\s*", " ", script.read_text(encoding="utf-8"))


def _ledger_rows(window: MainWindow) -> list:
    with Ledger(window.ledger_path()) as ledger:
        return ledger.measurements(window.dataset.content_fingerprint)


def test_a_csv_without_a_codebook_is_explored_refused_then_declared_and_released(
    qtbot, window: MainWindow, people: Path
) -> None:
    panel = window.query_panel
    values = _data_values(people)
    for kind, column in (
        ("mean", "income"),
        ("histogram", "city"),
        ("top_k", "city"),
        ("group_sum", "income"),
    ):
        panel.select_kind(kind, column)
        wait_idle(qtbot, window)
        held = [text for text in _fact_controls(window) if any(v and v in text for v in values)]
        assert not held, (kind, held)  # no bound or category control holds a value of the data
        assert panel.codebook == EMPTY
        assert window.observed_banner.isVisibleTo(window) and "observed: not public" in panel.facts.text()
    assert panel.categories.placeholderText().startswith("not declared")

    panel.select_kind("mean", "income")
    wait_idle(qtbot, window)
    assert (panel.lower_bound.text(), panel.upper_bound.text()) == ("not declared", "not declared")
    assert "observed: not public" in window.observed_banner.text().lower()
    window.open_release_dialog()
    dialog = window.release_dialog
    assert dialog.refused == ("the bounds of income",)
    assert "not declared: the bounds of income" in dialog.message.text() and "Nothing was charged" in (
        dialog.message.text()
    )
    assert not dialog.release_button.isEnabled() and dialog.preview is None
    dialog.done(0)
    assert _ledger_rows(window) == []  # nothing charged (no budget was even needed)

    # declared in the codebook dialog, with a citation: the panel shows it, the release goes ahead
    panel.facts.buttons[("income", "bounds")][0].click()  # "Declare…" under the query
    codebook = window.codebook_dialog
    assert codebook is not None and codebook.selected_column() == "income"
    codebook.fields["bounds"].setText("0, 1000000")
    codebook.citation.setText("the survey's top-code")
    codebook.declare()
    wait_idle(qtbot, window)
    assert (panel.lower_bound.value(), panel.upper_bound.value()) == (0.0, 1_000_000.0)
    assert not panel.observed and not window.observed_banner.isVisibleTo(window)
    with Ledger(window.ledger_path()) as ledger:
        ledger.set_budget(window.dataset.content_fingerprint, 2.0, 1e-6, "basic")
    window.open_release_dialog()
    dialog = window.release_dialog
    assert dialog.refused == ()
    qtbot.waitUntil(lambda: dialog.release_button.isEnabled(), timeout=IDLE_TIMEOUT_MS)
    dialog.release_button.click()
    qtbot.waitUntil(lambda: dialog.result is not None, timeout=IDLE_TIMEOUT_MS)
    provenance = json.loads(Path(dialog.result.files["provenance"]).read_text())
    (fact,) = provenance["fact_origins"]
    assert (fact["column"], fact["fact"], fact["value"]) == ("income", "bounds", [0.0, 1_000_000.0])
    assert (fact["origin"], fact["citation"]) == ("declared", "the survey's top-code")
    assert provenance["codebook"]["sha256"] == window.codebook.digest()
    dialog.done(0)
    assert len(_ledger_rows(window)) == 1


def test_categories_typed_in_the_panel_are_declared_and_released_with_their_origin(
    qtbot, window: MainWindow
) -> None:
    panel = window.query_panel
    panel.select_kind("top_k", "city")
    panel.categories.setText("Ames, Boise, Cary")
    panel.categories.editingFinished.emit()  # as when the steward leaves the field
    wait_idle(qtbot, window)
    fact = window.codebook.fact("city", "categories")
    assert fact is not None and (fact.value, fact.origin, fact.complete) == (
        ("Ames", "Boise", "Cary"),
        "declared",
        False,
    )
    assert window.blockers(window.explorer.query) == [] and not panel.observed
    assert "declared by the steward" in panel.facts.text()
    dialog = window.open_codebook_dialog("city")
    assert "3: Ames, Boise, Cary · declared" in dialog.table.item(0, 3).text()  # the table follows


def test_the_exported_notebook_states_each_origin_and_an_undeclared_fact_is_refused(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    nbformat = pytest.importorskip("nbformat")
    from dpexplorer.gui.analysis_files import export_analysis

    panel = window.query_panel
    panel.select_kind("histogram", "city")
    wait_idle(qtbot, window)
    with pytest.raises(
        AnalysisExportError, match="uses the categories of city, not declared in the codebook"
    ):
        export_analysis(window, tmp_path / "refused.ipynb", "notebook")
    assert not (tmp_path / "refused.ipynb").exists()
    window.set_codebook(
        Codebook(
            {
                "city": ColumnFacts(
                    "city",
                    "category",
                    categories=Fact(("Ames", "Boise", "Cary"), "declared", "the site list"),
                ),
                "income": ColumnFacts(
                    "income", "number", bounds=Fact((0.0, 5000.0), "estimated", "DP quantiles", 7)
                ),
            }
        )
    )
    wait_idle(qtbot, window)
    path = export_analysis(window, tmp_path / "analysis.ipynb", "notebook")
    book = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    (words,) = [c.source for c in book.cells if c.cell_type == "markdown" and c.source.startswith("### ")]
    assert (
        "declared by the steward in the dataset's codebook (public, not read from the data: the site list)"
        in words
    )
    panel.select_kind("mean", "income")
    wait_idle(qtbot, window)
    path = export_analysis(window, tmp_path / "mean.py", "script")
    assert "estimated privately (charged to the ledger, row 7)" in _comments(path)


def test_adult_s_shipped_codebook_is_loaded_and_its_origins_exported(
    qtbot, tmp_path: Path, monkeypatch
) -> None:
    from dpexplorer.data.default import default_dataset_path
    from dpexplorer.gui.analysis_files import export_analysis

    monkeypatch.setattr(MainWindow, "ledger_path", lambda self: tmp_path / "ledger.sqlite")
    window = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(window)
    window.show()
    window.open_file(default_dataset_path())
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: window.identity_known(), timeout=IDLE_TIMEOUT_MS)
    window.query_panel.select_kind("mean", "age")
    wait_idle(qtbot, window)
    assert window.codebook.fact("age", "bounds").origin == "shipped"
    assert window.blockers(window.explorer.query) == [] and window.codebook_mismatch() == ""
    text = _comments(export_analysis(window, tmp_path / "mean.py", "script"))
    assert "clipped to [17, 90], shipped with dpexplorer in the dataset's codebook" in text


def test_the_codebook_dialog_saves_opens_and_refuses_another_dataset_s(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    dialog = window.open_codebook_dialog("income")
    dialog.fields["bounds"].setText("0, 5000")
    dialog.fields["edges"].setText("0, 1000, 5000")
    dialog.declare()
    assert window.codebook.fact("income", "edges").value == (0.0, 1000.0, 5000.0)
    assert dialog.save_file(tmp_path / "people.codebook.json")
    saved = load_codebook(tmp_path / "people.codebook.json")
    assert saved.dataset == window.dataset.content_fingerprint  # tied to the dataset's identity
    assert saved.fact("income", "bounds").value == (0.0, 5000.0)

    window.set_codebook(EMPTY)
    assert dialog.codebook == EMPTY and dialog.table.item(1, 2).text() == "not declared"
    assert dialog.open_file(tmp_path / "people.codebook.json")
    assert window.codebook.fact("income", "bounds").origin == "declared"
    assert "income" not in str(window.query_panel.observed)

    other = tmp_path / "other.json"
    save_codebook(Codebook({}, dataset="0" * 32), other)
    assert not dialog.open_file(other) and "describes another dataset" in dialog.message.text()
    bad = tmp_path / "bad.json"
    bad.write_text('{"codebook": 1, "columns": {"income": {"kind": "number", "bounds": {"value": [5, 1]}}}}')
    assert not dialog.open_file(bad) and "bounds are inverted" in dialog.message.text()
    dialog.fields["bounds"].setText("ten, 20")
    dialog.declare()
    assert "numbers separated by commas" in dialog.message.text()
    assert window.codebook.fact("income", "bounds").value == (0.0, 5000.0)  # nothing changed


def test_a_session_keeps_the_codebook(qtbot, window: MainWindow) -> None:
    panel = window.query_panel
    panel.select_kind("mean", "income")
    panel.lower_bound.setValue(0)
    panel.upper_bound.setValue(9000)
    panel.upper_bound.editingFinished.emit()
    wait_idle(qtbot, window)
    state = panel.state()
    window.set_codebook(EMPTY)
    assert panel.lower_bound.text() == "not declared"
    panel.set_state(state)
    assert window.query_panel.codebook.fact("income", "bounds").value == (0.0, 9000.0)
    assert panel.build().to_dict()["upper"] == 9000.0 and not panel.observed


def test_estimate_privately_puts_the_selected_categories_in_the_codebook(qtbot, window: MainWindow) -> None:
    panel = window.query_panel
    panel.select_kind("histogram", "city")
    wait_idle(qtbot, window)
    _, estimate = panel.facts.buttons[("city", "categories")]
    assert estimate.isEnabled()
    with Ledger(window.ledger_path()) as ledger:
        ledger.set_budget(window.dataset.content_fingerprint, 2.0, 1e-6, "basic")
    estimate.click()
    dialog = window.private_categories_dialog
    dialog.delta.setCurrentText("1e-9")
    dialog.release_button.click()
    qtbot.waitUntil(lambda: dialog.result is not None, timeout=IDLE_TIMEOUT_MS)
    (row,) = _ledger_rows(window)  # charged first, once
    dialog.use_button.click()
    fact = window.codebook.fact("city", "categories")
    # about 133 persons in each city pass the threshold; the one in "Zzyzx" with probability <= 1e-9
    assert sorted(fact.value) == ["Ames", "Boise", "Cary"] and UNIQUE not in fact.value
    assert (fact.origin, fact.ledger_id, fact.complete) == ("estimated", row.id, False)
    wait_idle(qtbot, window)
    assert not panel.observed and window.blockers(window.explorer.query) == []
    assert f"estimated privately, ledger row {row.id}" in panel.facts.text()
