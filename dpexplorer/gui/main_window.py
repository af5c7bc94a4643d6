"""The main window: menus, status bar, the Data tab and the tabs where the views go."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from dpexplorer import __version__
from dpexplorer.data.default import ATTRIBUTION, default_dataset_path
from dpexplorer.gui import jobs, settings
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.dataset_view import DatasetView
from dpexplorer.gui.explorer import Explorer
from dpexplorer.gui.mechanism_panel import MechanismPanel
from dpexplorer.gui.query_panel import QueryPanel
from dpexplorer.gui.views.accuracy import AccuracyView
from dpexplorer.gui.views.neighbours import NeighboursView

if TYPE_CHECKING:
    from dpexplorer.data.load import Dataset

OPEN_FILTER = "Data files (*.csv *.tsv *.txt *.gz *.parquet *.pq);;All files (*)"
DATASET_VIEW = "dataset"


class MainWindow(QMainWindow):
    """Top-level window. ``dataset_loaded`` fires on the main thread once a file is in."""

    dataset_loaded = Signal(object)
    error_shown = Signal(str)

    def __init__(self, *, interactive: bool = True, restore_layout: bool = True) -> None:
        super().__init__()
        self.interactive = interactive
        self.dataset: Dataset | None = None
        self.last_error: str | None = None
        self.compute = ComputeService(self)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(180)
        self.progress.setRange(0, 0)
        self.progress.hide()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the computations that are running (Esc)")
        self.cancel_button.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        self.cancel_button.clicked.connect(self.cancel_jobs)
        self.cancel_button.hide()
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.cancel_button)
        self.compute.finished.connect(self._on_result)
        self.compute.failed.connect(self._on_failure)
        self.compute.progress.connect(self._on_progress)
        self.compute.busy_changed.connect(self._on_busy)
        self.setWindowTitle("dpexplorer")
        self.setAcceptDrops(True)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.dataset_view = DatasetView()
        self.neighbours_view = NeighboursView()
        self.accuracy_view = AccuracyView()
        self.tabs.addTab(self.neighbours_view, "Neighbouring datasets")
        self.tabs.addTab(self.accuracy_view, "Accuracy")
        self.tabs.addTab(self.dataset_view, "Data")
        self.setCentralWidget(self.tabs)
        self.query_panel = QueryPanel()
        self.mechanism_panel = MechanismPanel()
        self._build_side_panel()
        self.explorer = Explorer(
            self.compute, self.mechanism_panel, self.neighbours_view, self.accuracy_view, self
        )
        self.query_panel.changed.connect(self.explorer.set_query)
        self.dataset_loaded.connect(self._dataset_for_explorer)
        self._build_menus()
        if restore_layout:
            self._restore_layout()
        else:
            self.resize(1440, 900)

    def _build_side_panel(self) -> None:
        panel = QWidget()
        layout = QVBoxLayout(panel)
        layout.addWidget(self.query_panel)
        layout.addWidget(self.mechanism_panel)
        layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(panel)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(480)
        dock = QDockWidget("Query and mechanism", self)
        dock.setObjectName("controls")
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable)
        dock.setWidget(scroll)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)

    def _dataset_for_explorer(self, dataset: Dataset) -> None:
        summary = {"ranges": self.loaded.ranges, "top_values": self.loaded.top_values}
        self.query_panel.set_dataset(dataset, summary)
        if dataset.path.resolve() == default_dataset_path().resolve():
            self.query_panel.preset_default_example()
        self.explorer.set_dataset(dataset)
        self.query_panel.emit_query()

    def cancel_jobs(self) -> None:
        for view in self.compute.pending_views():
            self.compute.cancel(view)
        self.statusBar().showMessage("Cancelled.", 3000)

    # ------------------------------------------------------------------ menus
    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        open_action = QAction("&Open…", self, shortcut=QKeySequence.StandardKey.Open)
        open_action.triggered.connect(self.open_dialog)
        file_menu.addAction(open_action)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        default_action = QAction("Open the &Default Dataset (UCI Adult)", self)
        default_action.triggered.connect(lambda: self.open_file(default_dataset_path()))
        file_menu.addAction(default_action)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self, shortcut=QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        self.view_menu = self.menuBar().addMenu("&View")
        help_menu = self.menuBar().addMenu("&Help")
        about_action = QAction("&About dpexplorer", self)
        about_action.triggered.connect(self.show_about)
        help_menu.addAction(about_action)

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = settings.recent_files()
        if not files:
            self.recent_menu.addAction("(no recent files)").setEnabled(False)
        for path in files:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _=False, p=path: self.open_file(p))

    def about_text(self) -> str:
        return (
            f"<h3>dpexplorer {__version__}</h3>"
            "<p>Explore differential privacy on your own data: see a mechanism's outputs on "
            "neighbouring datasets, its accuracy and your privacy budget, then release "
            "statistics through exact, floating-point-safe samplers.</p>"
            f"<p><b>Default dataset.</b> {ATTRIBUTION}</p>"
        )

    def show_about(self) -> None:
        box = QMessageBox(QMessageBox.Icon.Information, "About dpexplorer", self.about_text(), parent=self)
        box.setTextFormat(Qt.TextFormat.RichText)
        box.open()

    # ------------------------------------------------------------------ opening files
    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a dataset", "", OPEN_FILTER)
        if path:
            self.open_file(path)

    def open_file(self, path: str | Path) -> None:
        """Load ``path`` on a worker; the window shows it when done, or explains the error."""
        self.statusBar().showMessage(f"Loading {Path(path).name}…")
        self.compute.submit(DATASET_VIEW, jobs.load_dataset, str(path))

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        urls = [u for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            self.open_file(urls[0].toLocalFile())
            event.acceptProposedAction()

    # ------------------------------------------------------------------ compute results
    def _on_result(self, view: str, generation: int, result: object) -> None:
        if view == DATASET_VIEW:
            self._show_dataset(result)  # type: ignore[arg-type]

    def _show_dataset(self, loaded: jobs.LoadedDataset) -> None:
        dataset = loaded.dataset
        self.loaded = loaded
        self.dataset = dataset
        self.dataset_view.show_dataset(dataset)
        self.setWindowTitle(f"dpexplorer — {dataset.path.name}")
        settings.add_recent_file(dataset.path)
        self.statusBar().showMessage(f"Loaded {dataset.path.name}: {dataset.n_rows:,} rows", 5000)
        self.dataset_loaded.emit(dataset)

    def _on_failure(self, view: str, generation: int, message: str) -> None:
        self.show_error(message)

    def show_error(self, message: str) -> None:
        """Status bar always; a dialog too when interactive. Never a traceback."""
        self.last_error = message
        self.statusBar().showMessage(message)
        self.error_shown.emit(message)
        if self.interactive:
            box = QMessageBox(QMessageBox.Icon.Warning, "dpexplorer", message, parent=self)
            box.open()

    def _on_progress(self, view: str, fraction: float) -> None:
        self.progress.setRange(0, 1000)
        self.progress.setValue(int(fraction * 1000))

    def _on_busy(self, busy: bool) -> None:
        self.progress.setRange(0, 0)
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)

    def views_idle(self) -> bool:
        """True when no view is computing or waiting for a throttled update."""
        return not self.compute.busy and not self.explorer.pending

    # ------------------------------------------------------------------ layout
    def _restore_layout(self) -> None:
        store = settings.settings()
        geometry = store.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1280, 800)
        state = store.value("window/state")
        if state is not None:
            self.restoreState(state)

    def closeEvent(self, event: QCloseEvent) -> None:
        store = settings.settings()
        store.setValue("window/geometry", self.saveGeometry())
        store.setValue("window/state", self.saveState())
        self.explorer.stop()
        self.compute.shutdown()
        super().closeEvent(event)
