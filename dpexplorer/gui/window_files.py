"""The main window's opening of data: File > Open…, Open on Spark…, a dropped file, and what
the window does with a load job's results (the schema and first rows while the file is read,
then the dataset in every panel).

:class:`WindowFiles` is a mixin of :class:`~dpexplorer.gui.main_window.MainWindow`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QFileDialog, QLabel

from dpexplorer.data.default import default_dataset_path
from dpexplorer.gui import jobs, settings
from dpexplorer.gui.compute import after_paint
from dpexplorer.gui.spark_dialog import SparkOpenDialog
from dpexplorer.gui.window_release import IDENTITY_VIEW

if TYPE_CHECKING:
    from dpexplorer.data.codebook import Codebook
    from dpexplorer.data.load import Dataset
    from dpexplorer.gui.codebook_dialog import CodebookDialog
    from dpexplorer.gui.session import Session
    from dpexplorer.gui.window_parts import WindowParts as _Window
else:
    _Window = object

OPEN_FILTER = "Data files (*.csv *.tsv *.txt *.gz *.parquet *.pq);;All files (*)"
DATASET_VIEW = "dataset"
"""The job loading a file (or opening a source on Spark)."""
PEEK_VIEW = "dataset-peek"
"""The job reading a file's schema and first rows, shown while the whole file loads."""


class WindowFiles(_Window):
    """Open files and sources, and show them once loaded, for the main window."""

    engine_label: QLabel
    loaded: jobs.LoadedDataset
    """The last load job's result: the dataset and its column summary."""
    _identified: object | None
    _pending_session: Session | None
    _spark_choice: tuple[str, str]
    """The last source and master opened on Spark (the dialog starts from them)."""
    _identify_shown: Callable[[], None]
    _update_release_action: Callable[[], None]
    reload_ledger: Callable[[], None]
    _fit_side_panel: Callable[[], None]
    _restore_session_query: Callable[[Dataset], bool]
    codebook_for: Callable[[Dataset], Codebook]
    codebook_dialog: CodebookDialog | None

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a dataset", "", OPEN_FILTER)
        if path:
            self.open_file(path)

    def open_file(self, path: str | Path) -> None:
        """Load ``path`` on a worker; the window shows it when done, or explains the error."""
        self.statusBar().showMessage(f"Loading {Path(path).name}…")
        self._loading = str(Path(path))
        self.compute.cancel(IDENTITY_VIEW)  # the shown file's: the workers go to the new one
        share = settings.lazy_share()
        self.compute.submit(PEEK_VIEW, jobs.peek_dataset, str(path), share)
        self.compute.submit(DATASET_VIEW, jobs.load_dataset, str(path), share=share)

    def open_spark_dialog(self) -> SparkOpenDialog:
        """File > Open on Spark (returned so that tests and screenshots can fill it in)."""
        dialog = SparkOpenDialog(self, *self._spark_choice)
        dialog.accepted.connect(lambda: self.open_spark(dialog.source(), dialog.master()))
        dialog.open()
        return dialog

    def open_spark(self, source: str, master: str) -> None:
        """Open ``source`` on Spark at ``master`` on a worker (progress and Cancel as a file)."""
        self._spark_choice = (source, master)
        self.statusBar().showMessage(f"Starting Spark ({master}) and opening {source}…")
        self._loading = source
        self.compute.cancel(IDENTITY_VIEW)
        self.engine_label.setText(f"Spark, {master}: starting…")
        self.compute.submit(DATASET_VIEW, jobs.open_spark_dataset, source, master)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        urls = [u for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            self.open_file(urls[0].toLocalFile())
            event.acceptProposedAction()

    def _show_peek(self, peek: object) -> None:
        """Schema and first rows while the file is still being read (not once it is in)."""
        if self._loading is None or str(peek.path) != self._loading:  # type: ignore[attr-defined]
            return
        self.dataset_view.show_peek(peek)  # type: ignore[arg-type]
        self.engine_label.setText(f"{peek.engine}: reading…")  # type: ignore[attr-defined]
        self.statusBar().showMessage(f"Loading {peek.path.name} ({peek.engine})…")  # type: ignore[attr-defined]

    def _show_dataset(self, loaded: jobs.LoadedDataset) -> None:
        dataset = loaded.dataset
        session = getattr(self, "_pending_session", None)
        if session is not None and dataset.fingerprint != session.dataset_fingerprint:
            self._pending_session = None
            self.show_error(
                f"This session was saved for another dataset: {dataset.path.name} now has "
                f"fingerprint {dataset.fingerprint[:12]}…, the session's is "
                f"{session.dataset_fingerprint[:12]}…. Nothing of the session was applied, and "
                "the dataset shown is unchanged."
            )
            self.statusBar().showMessage("Session refused: another dataset.")
            self._identify_shown()
            return
        if self.dataset is not None and self.dataset.path != dataset.path:
            self.dataset_view.set_sampling_rate(None)  # a claim about one file, not the next
        self.loaded = loaded
        self.dataset = dataset
        self._identified = None
        self._update_release_action()  # Release waits for the identity, from now
        # the identity and the mechanisms' import run on workers and hold the GIL at times:
        # they start once the window has painted the data
        after_paint(self, self._identify_shown)
        after_paint(self, self.explorer.load_mechanisms)
        self.dataset_view.show_dataset(dataset)
        self.setWindowTitle(f"dpexplorer — {dataset.path.name}")
        if getattr(dataset, "format", "") != "spark":  # Open Recent reopens files with polars
            settings.add_recent_file(dataset.path)
        self.statusBar().showMessage(f"Loaded {dataset.path.name}: {dataset.n_rows:,} rows", 5000)
        from dpexplorer.data.engine import engine_of

        self.engine_label.setText(engine_of(dataset).label(dataset))
        self.dataset_loaded.emit(dataset)

    def _dataset_for_explorer(self, dataset: Dataset) -> None:
        self.explorer.set_dataset(dataset)
        self.reload_ledger()
        summary = {"ranges": self.loaded.ranges, "top_values": self.loaded.top_values}
        self.query_panel.set_dataset(dataset, summary, self.codebook_for(dataset))
        if self.codebook_dialog is not None:  # it described the file shown before
            self.codebook_dialog.close()
        self._fit_side_panel()
        if self._restore_session_query(dataset):
            return
        if dataset.path.resolve() == default_dataset_path().resolve():
            self.query_panel.preset_default_example()
        else:
            self.query_panel.select_kind("count")  # columns of another file: start simple
        self.query_panel.emit_query()
