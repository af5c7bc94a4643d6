"""A file streamed rather than read into memory: the first look at once, the engine named in
the status bar, and a late first look never overwriting the loaded dataset."""

from __future__ import annotations

from conftest import wait_idle

from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.scan import STREAMING, peek
from dpexplorer.gui import settings
from dpexplorer.gui.main_window import MainWindow


def test_streamed_file_names_its_engine_and_shows_the_first_look(qtbot, monkeypatch):
    monkeypatch.setattr(settings, "lazy_share", lambda: 1e-12)  # every file counts as large
    win = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(win)
    win.show()
    path = default_dataset_path()
    win.open_file(path)
    look = peek(path, share=1e-12)
    win._show_peek(look)  # as if the first look arrived before the load: shown at once
    title = win.dataset_view.title.text()
    assert "reading it (polars, streaming scan)" in title and "15 columns" in title
    assert win.dataset_view.schema.item(0, 3).text() == "…"
    assert win.dataset_view.preview_model.rowCount() == 200
    wait_idle(qtbot, win)
    assert win.dataset.lazy and win.engine_label.text() == STREAMING
    loaded_title = win.dataset_view.title.text()
    assert "48,842 rows" in loaded_title and "distinct counts are estimates" in loaded_title
    win._show_peek(look)  # a first look arriving after the load is ignored
    assert win.dataset_view.title.text() == loaded_title


def test_loading_reports_progress_and_stops_when_cancelled():
    import pytest

    from dpexplorer.core.cancel import CancelToken
    from dpexplorer.core.errors import CancelledError
    from dpexplorer.gui import jobs

    seen: list[float] = []
    loaded = jobs.load_dataset(str(default_dataset_path()), progress=seen.append)
    assert seen == [1 / 3, 2 / 3, 1.0] and loaded.dataset.n_rows == 48_842
    token = CancelToken()
    token.cancel()
    with pytest.raises(CancelledError):
        jobs.load_dataset(str(default_dataset_path()), cancel=token)


def test_a_parquet_directory_opens_on_spark_from_the_window(spark, qtbot, tmp_path):
    """File > Open on Spark: the dialog's source and master, the load on a worker, the engine in
    the status bar, true answers from the Spark engine (the same as polars'), and no entry in
    Open Recent (which reopens files with polars)."""
    from PySide6.QtWidgets import QDialogButtonBox

    from dpexplorer.data.answers import true_answer
    from dpexplorer.data.load import load_dataset
    from dpexplorer.data.queries import Median

    directory = tmp_path / "adult.parquet"
    directory.mkdir()
    adult = load_dataset(default_dataset_path()).frame.head(3_000)
    adult.head(1_500).write_parquet(directory / "part-0.parquet")
    adult.tail(1_500).write_parquet(directory / "part-1.parquet")
    recent = settings.recent_files()
    win = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(win)
    win.show()
    dialog = win.open_spark_dialog()
    open_button = dialog.buttons.button(QDialogButtonBox.StandardButton.Open)
    assert not open_button.isEnabled()  # no source yet
    dialog.source_edit.setText(str(directory))
    dialog.master_edit.setText("local[2]")
    open_button.click()
    assert "Starting Spark (local[2])" in win.statusBar().currentMessage()
    wait_idle(qtbot, win)
    assert win.engine_label.text() == "Spark, local[2]"
    assert win.dataset.n_rows == 3_000 and "3,000 rows" in win.dataset_view.title.text()
    assert "Read and answered by Spark" in win.dataset_view.title.text()
    query = Median("age", 17, 90)
    assert true_answer(win.dataset, query) == float(adult["age"].clip(17, 90).sort()[1_499])
    assert settings.recent_files() == recent
    # every value of a text column, as a file lists them (the category lists, "all categories")
    countries = adult["native_country"].drop_nulls().unique()
    assert countries.len() > 16 and set(win.loaded.top_values["native_country"]) == set(countries)
