"""The main window: menus, status bar, the Data tab and the tabs where the views go."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QLabel,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from dpexplorer import __version__
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.data.default import ATTRIBUTION, default_dataset_path
from dpexplorer.gui import accessibility, jobs, palette, settings
from dpexplorer.gui.compare import Comparison
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.dataset_view import DatasetView
from dpexplorer.gui.explorer import Explorer
from dpexplorer.gui.lessons import LessonRunner
from dpexplorer.gui.mechanism_panel import MechanismPanel
from dpexplorer.gui.mechanism_ranking import MechanismRanking
from dpexplorer.gui.query_panel import QueryPanel
from dpexplorer.gui.session import Session, load_session, save_session
from dpexplorer.gui.spark_dialog import LOCAL_MASTER, SparkOpenDialog
from dpexplorer.gui.teaching import RELEASE_BLOCKED, TeachingPanel
from dpexplorer.gui.theory_views import TheoryViews
from dpexplorer.gui.undo import UndoHistory
from dpexplorer.gui.views.accuracy import AccuracyView
from dpexplorer.gui.views.audit_panel import AuditPanel
from dpexplorer.gui.views.clipping import CLIPPED_KINDS, ClippingView
from dpexplorer.gui.views.neighbours import NeighboursView
from dpexplorer.gui.window_parts import WindowParts

if TYPE_CHECKING:
    from dpexplorer.data.load import Dataset
    from dpexplorer.gui.workspace import Workspace

OPEN_FILTER = "Data files (*.csv *.tsv *.txt *.gz *.parquet *.pq);;All files (*)"
DATASET_VIEW = "dataset"
PEEK_VIEW = "dataset-peek"
IDENTITY_VIEW = "dataset-identity"
"""The job computing the dataset's content fingerprint (its key in the budget ledger), after the load."""
IDENTITY_PENDING = (
    "The dataset's identity for the budget ledger (its content fingerprint) is being computed: "
    "releases are charged under it, so they wait until it is known."
)
RELEASE_TIP = "Charge the budget ledger, draw exact noise and write the files"
SIDE_PANEL_WIDTH = 480
TEACHING_FONT_SCALE = 1.5
"""Teaching mode's fonts, against the normal ones (the window still fits 1280 x 720)."""
BUSY_INDICATOR_DELAY_MS = 300
"""Work running longer than this shows a progress bar and a Cancel button."""


def peeked_bounds_warning(query: Any, observed: dict[str, tuple[float, float]]) -> str:
    """A warning for the steward when a query's clipping bounds are the column's own observed
    minimum or maximum (as the query panel fills them in): published bounds then reveal the
    data's extremes. Empty when the bounds differ from both (or the query has none)."""
    column, lower, upper = (getattr(query, name, None) for name in ("column", "lower", "upper"))
    if column not in observed or lower is None or upper is None:
        return ""
    low, high = observed[column]
    peeked = [
        f"{name} {value:g}"
        for name, value, seen in (("lower", lower, low), ("upper", upper, high))
        if value == seen
    ]
    if not peeked:
        return ""
    return (
        f"The {' and '.join(peeked)} bound{'s are' if len(peeked) == 2 else ' is'} the observed "
        f"{'extremes' if len(peeked) == 2 else 'extreme'} of {column} in this file (filled in from "
        "the data). The release publishes its bounds, so they would reveal the smallest or largest "
        "value of a real person. Declare bounds known from outside the data, or estimate them "
        "privately (the Where to clip tab, Estimate bounds privately…)."
    )


class MainWindow(WindowParts):
    """Top-level window. ``dataset_loaded`` fires on the main thread once a file is in."""

    dataset_loaded = Signal(object)
    error_shown = Signal(str)
    _pending_plan: object | None  # a plan rebuilt on a worker, kept until the budget view exists
    _pending_session: Session | None  # a session being opened, applied once its dataset is in

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
        self.cancel_button.clicked.connect(self.cancel_jobs)
        # Esc on the window, not on the button: the button is hidden for a job's first 300 ms,
        # and a hidden button's shortcut does nothing
        self.cancel_action = QAction("Cancel computations", self, shortcut=QKeySequence(Qt.Key.Key_Escape))
        self.cancel_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.cancel_action.triggered.connect(self.cancel_jobs)
        self.addAction(self.cancel_action)
        self.cancel_button.hide()
        self._loading: str | None = None  # the file being read, until its load job ends
        self._identified: object | None = None  # the dataset whose ledger identity is known
        self._spark_choice: tuple[str, str] = ("", LOCAL_MASTER)  # the last source and master opened on Spark
        self.engine_label = QLabel()
        self.engine_label.setToolTip(
            "The engine computing true answers: polars in memory, or a streaming scan for files "
            "whose data would take more than an eighth of memory (each answer is cached per query)"
        )
        self.statusBar().addPermanentWidget(self.engine_label)
        self.statusBar().addPermanentWidget(self.progress)
        self._show_busy = QTimer(self, singleShot=True, interval=BUSY_INDICATOR_DELAY_MS)
        self._show_busy.timeout.connect(lambda: self._set_busy_visible(True))
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
        self.dataset_view.sampling_changed.connect(self._sampling_changed)
        self.neighbours_view = NeighboursView()
        self.accuracy_view = AccuracyView()
        self.tabs.addTab(self.neighbours_view, "Neighbouring datasets")
        self.tabs.addTab(self.accuracy_view, "Accuracy")
        self.workspace: Workspace | None = None  # built once the mechanisms are imported
        self.tabs.addTab(self.dataset_view, "Data")
        self.teaching_panel = TeachingPanel()
        self.teaching_panel.hide()
        self.teaching_panel.resample_requested.connect(self.resample)
        self._teaching_runs = 0
        self.plan_queries: dict[str, tuple[dict, str]] = {}
        central = QWidget()
        central_layout = QVBoxLayout(central)
        central_layout.setContentsMargins(0, 0, 0, 0)
        central_layout.addWidget(self.teaching_panel)
        central_layout.addWidget(self.tabs, 1)
        self.setCentralWidget(central)
        self.query_panel = QueryPanel()
        self.mechanism_panel = MechanismPanel()
        self._build_side_panel()
        self.explorer = Explorer(
            self.compute, self.mechanism_panel, self.neighbours_view, self.accuracy_view, self
        )
        self.query_panel.changed.connect(self.mechanism_panel.follow_query)  # before the explorer's
        self.query_panel.changed.connect(self.explorer.set_query)
        # which mechanism for this query (issue 28): under the picker, every one's expected error
        self.mechanism_ranking = MechanismRanking(self.compute, self.explorer, self.mechanism_panel)
        # the audit button under the neighbours plot (issue 21): the mechanism on screen
        self.audit_panel = AuditPanel(self.compute)
        self.neighbours_view.body.addWidget(self.audit_panel)
        self.explorer.inputs_changed.connect(self.audit_panel.set_inputs)
        # where to clip (issue 21): a tab for clipped statistics, and the private bounds
        self.clipping_view = ClippingView(self.compute)
        self.tabs.insertTab(self.tabs.indexOf(self.dataset_view), self.clipping_view, "Where to clip")
        self.explorer.inputs_changed.connect(self._clipping_context)
        self.clipping_view.private_bounds_requested.connect(self.open_private_bounds_dialog)
        self.explorer.query_ready.connect(lambda _q: self._restore_session_mechanism())
        self.explorer.registry_ready.connect(self._build_workspace)
        self.tabs.currentChanged.connect(lambda _i: self._submit_visible())
        self.dataset_loaded.connect(self._dataset_for_explorer)
        self._build_menus()
        self.theory_views = TheoryViews(self)
        self.lessons = LessonRunner(self)
        self.history = UndoHistory(self)
        self.comparison = Comparison(self)
        self._build_compare_menu()
        self._build_edit_menu()
        self._build_appearance_menu()
        accessibility.name_controls(self)  # and again for what each tab builds when first shown
        self.tabs.currentChanged.connect(lambda _i: accessibility.name_controls(self.tabs.currentWidget()))
        if restore_layout:
            self._restore_layout()
        else:
            self.resize(1440, 900)

    def _clipping_context(self, mechanism: object, params: dict, query_input: object, _seed: int) -> None:
        query = self.explorer.query
        if self.dataset is None or getattr(query, "kind", "") not in CLIPPED_KINDS:
            self.clipping_view.clear("Choose a sum, mean, quantile or trimmed mean to see where to clip.")
            return
        epsilon = float(params.get("epsilon", 1.0))
        self.clipping_view.set_context(self.dataset, query, epsilon, self.explorer.relation)

    def open_private_bounds_dialog(self, column: str) -> None:
        """Release DP quantiles of ``column`` as bounds, then put them in the query."""
        query = self.explorer.query
        if self.dataset is None or query is None or not column:
            return
        if not self.identity_known():
            self.show_error(IDENTITY_PENDING)
            return
        from dpexplorer.gui.private_bounds_dialog import PrivateBoundsDialog

        self.private_bounds_dialog = PrivateBoundsDialog(
            self.compute,
            dataset=self.dataset,
            column=column,
            declared=(float(query.lower), float(query.upper)),  # type: ignore[attr-defined]
            ledger_path=self.ledger_path(),
            out_dir=Path.home() / "dpexplorer-releases",
            parent=self,
        )
        self.private_bounds_dialog.bounds_chosen.connect(self._use_bounds)
        self.private_bounds_dialog.finished.connect(lambda _code: self.reload_ledger())
        self.private_bounds_dialog.open()

    def _use_bounds(self, lower: float, upper: float) -> None:
        self.query_panel.lower_bound.setValue(lower)
        self.query_panel.upper_bound.setValue(upper)
        self.query_panel.emit_query()

    def _submit_visible(self) -> None:
        self.explorer.submit_visible()
        if self.workspace is not None:
            self.workspace.submit_visible()

    def _build_workspace(self) -> None:
        """The budget, risk and mechanism-specific views (their modules were imported on a
        worker with the mechanisms, keeping scipy off the start-up path)."""
        if self.workspace is not None:
            return
        from dpexplorer.gui.workspace import Workspace

        self.workspace = Workspace(self.compute, self.tabs, self)
        data_index = self.tabs.indexOf(self.dataset_view)
        self.tabs.insertTab(data_index, self.workspace.budget_view, "Budget")
        self.tabs.insertTab(data_index + 1, self.workspace.risk_view, "Risk")
        self.workspace.budget_view.add_requested.connect(self.add_current_to_plan)
        if self.dataset_view.sampling_rate is not None:
            self.workspace.budget_view.set_sampling_rate(self.dataset_view.sampling_rate)
        self.explorer.inputs_changed.connect(self.workspace.update)
        self.reload_ledger()
        self._apply_pending_plan()
        import gc

        accessibility.name_controls(self)
        gc.freeze()  # everything imported so far is permanent: later collections skip it (latency)

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
        self._side_scroll, self._side_panel = scroll, panel
        self._fit_side_panel()
        # A lesson's panel goes above the controls (LessonRunner inserts it), in this column
        # rather than above the plots: at 1280 x 720 the plots need the height more than the
        # controls do, and the text reads better in a column than in a strip.
        self.side_splitter = QSplitter(Qt.Orientation.Vertical)
        self.side_splitter.setChildrenCollapsible(False)
        self.side_splitter.addWidget(scroll)
        dock = QDockWidget("Query and mechanism", self)
        dock.setObjectName("controls")
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable)
        dock.setWidget(self.side_splitter)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
        self.side_dock = dock

    def scroll_to_mechanism(self) -> None:
        """Scroll the controls so the mechanism's parameters are at the top (a lesson's "try"
        is about them; the lesson has set the query already)."""
        self._side_scroll.verticalScrollBar().setValue(max(self.mechanism_panel.y() - 4, 0))

    def _fit_side_panel(self) -> None:
        """At least 480 px, and as wide as the controls need at the current font: the scroll
        area never scrolls sideways, so anything narrower would clip them."""
        scrollbar = self._side_scroll.verticalScrollBar().sizeHint().width()
        need = self._side_panel.minimumSizeHint().width() + scrollbar
        self._side_scroll.setMinimumWidth(max(SIDE_PANEL_WIDTH, need + 4))

    def _apply_pending_plan(self) -> None:
        plan = getattr(self, "_pending_plan", None)
        if plan is not None and self.workspace is not None:
            self._pending_plan = None
            self.workspace.budget_view.set_plan(plan)

    def _dataset_for_explorer(self, dataset: Dataset) -> None:
        self.explorer.set_dataset(dataset)
        self.reload_ledger()
        summary = {"ranges": self.loaded.ranges, "top_values": self.loaded.top_values}
        self.query_panel.set_dataset(dataset, summary)
        self._fit_side_panel()
        if self._restore_session_query(dataset):
            return
        if dataset.path.resolve() == default_dataset_path().resolve():
            self.query_panel.preset_default_example()
        else:
            self.query_panel.select_kind("count")  # columns of another file: start simple
        self.query_panel.emit_query()

    def cancel_jobs(self) -> None:
        """Esc / Cancel: stop every view's computation. Never a release's: once it charges the
        ledger its outcome must reach the dialog (the dialog has its own Cancel, before that)."""
        for view in self.compute.pending_views():
            if not view.startswith("release-") and view != IDENTITY_VIEW:
                self.compute.cancel(view)
        self._identify_shown()  # a cancelled load keeps the dataset shown: its identity resumes
        self.statusBar().showMessage("Cancelled.", 3000)

    # ------------------------------------------------------------------ menus
    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        open_action = QAction("&Open…", self, shortcut=QKeySequence(QKeySequence.StandardKey.Open))
        open_action.triggered.connect(self.open_dialog)
        file_menu.addAction(open_action)
        spark_action = QAction("Open on &Spark…", self)
        spark_action.setToolTip("A Parquet directory or a table, read and answered by Apache Spark")
        spark_action.triggered.connect(self.open_spark_dialog)
        file_menu.addAction(spark_action)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        default_action = QAction("Open the &Default Dataset (UCI Adult)", self)
        default_action.triggered.connect(lambda: self.open_file(default_dataset_path()))
        file_menu.addAction(default_action)
        file_menu.addSeparator()
        save_session_action = QAction(
            "&Save Session…", self, shortcut=QKeySequence(QKeySequence.StandardKey.Save)
        )
        save_session_action.triggered.connect(self.save_session_dialog)
        file_menu.addAction(save_session_action)
        load_session_action = QAction("Open Sess&ion…", self, shortcut=QKeySequence("Ctrl+Shift+O"))
        load_session_action.triggered.connect(self.load_session_dialog)
        file_menu.addAction(load_session_action)
        from dpexplorer.gui.analysis_files import add_analysis_actions  # Export Analysis, Open Plan

        add_analysis_actions(self, file_menu)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self, shortcut=QKeySequence(QKeySequence.StandardKey.Quit))
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        self.view_menu = self.menuBar().addMenu("&View")
        self.teaching_action = QAction("&Teaching Mode", self, shortcut=QKeySequence("F9"), checkable=True)
        self.teaching_action.setToolTip(
            "Large fonts, one draw at a time, the true value on demand; no releases"
        )
        self.teaching_action.toggled.connect(self.set_teaching_mode)
        self.view_menu.addAction(self.teaching_action)
        release_menu = self.menuBar().addMenu("&Release")
        self.release_action = QAction("&Release This Statistic…", self, shortcut=QKeySequence("Ctrl+R"))
        self.release_action.setToolTip(RELEASE_TIP)
        self.release_action.triggered.connect(self.open_release_dialog)
        release_menu.addAction(self.release_action)
        help_menu = self.menuBar().addMenu("&Help")
        about_action = QAction("&About dpexplorer", self)
        about_action.triggered.connect(self.show_about)
        help_menu.addAction(about_action)

    def _build_appearance_menu(self) -> None:
        """View > Appearance: the system's light or dark, or light, dark, high contrast
        (gui/palette.py); the choice is remembered."""
        menu = self.view_menu.addMenu("&Appearance")
        group = QActionGroup(self)
        chosen = str(settings.settings().value("appearance", "system"))
        chosen = chosen if chosen in palette.APPEARANCES else "system"
        self.appearance_actions: dict[str, QAction] = {}
        for name in palette.APPEARANCES:
            label = "&System" if name == "system" else palette.SCHEMES[name].label
            action = QAction(label, self, checkable=True, checked=name == chosen)
            action.triggered.connect(lambda _=False, n=name: self._appearance_chosen(n))
            group.addAction(action)
            menu.addAction(action)
            self.appearance_actions[name] = action
        self.set_appearance(chosen)

    def _appearance_chosen(self, name: str) -> None:
        settings.settings().setValue("appearance", name)
        self.set_appearance(name)

    def set_appearance(self, name: str) -> None:
        """Show the window (plots, coloured labels, widgets) in ``name``'s colours."""
        palette.set_appearance(name, self)
        self.appearance_actions[name].setChecked(True)

    def _build_compare_menu(self) -> None:
        """View > Pin Mechanism for Comparison / Stop Comparing (gui/compare.py)."""
        self.view_menu.addSeparator()
        pin_keys = QKeySequence("Ctrl+Shift+P")
        self.pin_action = QAction("&Pin Mechanism for Comparison", self, shortcut=pin_keys)
        self.pin_action.setToolTip(
            "Keep this mechanism and its parameters: choose another, and both are drawn on the "
            "neighbouring-datasets and accuracy plots"
        )
        self.pin_action.triggered.connect(self.comparison.pin)
        self.unpin_action = QAction("Stop &Comparing", self)
        self.unpin_action.triggered.connect(self.comparison.stop)
        self.view_menu.addAction(self.pin_action)
        self.view_menu.addAction(self.unpin_action)

    def _build_edit_menu(self) -> None:
        """Edit: undo and redo of the query, mechanism, parameters, plan and dataset (the menu
        names the step, "Undo: ε (epsilon) 1 → 0.5")."""
        edit_menu = QMenu("&Edit", self)
        self.menuBar().insertMenu(self.view_menu.menuAction(), edit_menu)
        self.undo_action = self.history.stack.createUndoAction(self, "Undo:")
        self.undo_action.setShortcuts([QKeySequence("Ctrl+Z")])
        self.redo_action = self.history.stack.createRedoAction(self, "Redo:")
        self.redo_action.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        edit_menu.addAction(self.undo_action)
        edit_menu.addAction(self.redo_action)
        self.edit_menu = edit_menu

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

    # ------------------------------------------------------------------ compute results
    def _on_result(self, view: str, generation: int, result: object) -> None:
        self._refresh_cancel()
        if view == DATASET_VIEW:
            self._loading = None
            self._show_dataset(result)  # type: ignore[arg-type]
        elif view == PEEK_VIEW:
            self._show_peek(result)
        elif view == IDENTITY_VIEW:
            self._show_identity(result)  # type: ignore[arg-type]
        elif view == "teaching":
            self.teaching_panel.show_draw(result)  # type: ignore[arg-type]
        elif view == "plan-rebuild":  # kept until the budget view exists (built with the registry)
            self._pending_plan = result
            self._apply_pending_plan()

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
        self._identify_shown()
        self.dataset_view.show_dataset(dataset)
        self.setWindowTitle(f"dpexplorer — {dataset.path.name}")
        if getattr(dataset, "format", "") != "spark":  # Open Recent reopens files with polars
            settings.add_recent_file(dataset.path)
        self.statusBar().showMessage(f"Loaded {dataset.path.name}: {dataset.n_rows:,} rows", 5000)
        from dpexplorer.data.engine import engine_of

        self.engine_label.setText(engine_of(dataset).label(dataset))
        self.dataset_loaded.emit(dataset)
        self.explorer.load_mechanisms()

    def _on_failure(self, view: str, generation: int, message: str) -> None:
        self._refresh_cancel()
        if view.startswith("release-"):  # the release dialog shows its own messages
            return
        if view == PEEK_VIEW:  # the full load reports the same file's problem properly
            return
        if view == DATASET_VIEW:
            self._loading = None
            self._identify_shown()  # the file shown before stays: its identity resumes
        if view == IDENTITY_VIEW:
            self._identity_failed(message)
            return
        if view in (DATASET_VIEW, "teaching", "plan-rebuild"):
            self.show_error(message)
        else:  # a view's computation: said in the status bar (and in the view), no modal dialog
            self.last_error = message
            self.statusBar().showMessage(f"{view}: {message}")
            self.error_shown.emit(message)

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
        self._refresh_cancel()
        if view == IDENTITY_VIEW and self._loading is None:  # a load's messages come first
            self.statusBar().showMessage(
                f"{self._loaded_text()} Identifying the dataset for the budget ledger… {fraction:.0%}"
            )

    def _on_busy(self, busy: bool) -> None:
        """Progress and Cancel appear once the work has run for a moment: most jobs end within
        a frame, and showing them for each would flicker the status bar (and re-lay it out:
        3 ms of every slider step)."""
        if busy:
            self.progress.setRange(0, 0)  # indeterminate until a job reports its progress
            self._show_busy.start()
        else:
            self._show_busy.stop()
            self._set_busy_visible(False)

    def _set_busy_visible(self, visible: bool) -> None:
        self.progress.setVisible(visible)
        self.cancel_button.setVisible(visible and self._cancellable())

    def _refresh_cancel(self) -> None:
        if self.progress.isVisible():
            self.cancel_button.setVisible(self._cancellable())

    def _cancellable(self) -> bool:
        """Whether Cancel (Esc) has something to stop: not the dataset's identity alone (it is
        no view's computation, and releases need it; closing or opening a file stops it)."""
        return any(view != IDENTITY_VIEW for view in self.compute.pending_views())

    # ------------------------------------------------------------------ teaching mode
    def set_teaching_mode(self, on: bool) -> None:
        from PySide6.QtWidgets import QApplication

        app = QApplication.instance()
        assert isinstance(app, QApplication)  # the window exists: so does the application
        if not hasattr(self, "_normal_font"):
            self._normal_font = app.font()
        if on:
            self._size_before_teaching = self.size()
        font = app.font()
        font.setPointSizeF(self._normal_font.pointSizeF() * (TEACHING_FONT_SCALE if on else 1.0))
        app.setFont(font)
        palette.restyle(self)  # the plots' axis fonts follow the application's
        self.teaching_panel.setVisible(on)
        from dpexplorer.gui.views.base import View

        View.explanations_shown = not on  # and for the views built later
        for view in self.findChildren(View):  # the teacher explains; the plots get the room
            view.explanation.setVisible(not on)
        QTimer.singleShot(0, self._fit_side_panel)  # after the new font has reached the widgets
        if not on and hasattr(self, "_size_before_teaching"):
            self.resize(self._size_before_teaching)  # larger fonts may have grown it: undo
        self._update_release_action()
        blocked = "Teaching mode: Release is disabled (hover the Release menu for why)."
        self.statusBar().showMessage(blocked if on else "Teaching mode off.", 8000)
        if on:
            self.resample()

    def resample(self) -> None:
        explorer = self.explorer
        if explorer.mechanism is None or explorer.query_input is None:
            return
        self._teaching_runs += 1
        params = explorer.mechanism.validate(explorer.params)
        seed = self.mechanism_panel.seed.value()
        self.compute.submit(
            "teaching",
            jobs.teaching_draw,
            explorer.mechanism,
            params,
            explorer.query_input,
            seed,
            self._teaching_runs,
        )

    # ------------------------------------------------------------------ release
    def ledger_path(self) -> Path:
        from dpexplorer.release.ledger import default_ledger_path

        return default_ledger_path()

    def identity_known(self) -> bool:
        """True once the shown dataset's ledger identity (content fingerprint) is computed:
        until then nothing reads or charges the ledger for it (never under another key)."""
        return self.dataset is not None and self._identified is self.dataset

    def _identify_shown(self) -> None:
        """Compute the shown dataset's ledger identity on a worker, unless known or under way."""
        if self.dataset is None or self.identity_known() or IDENTITY_VIEW in self.compute.pending_views():
            return
        self._update_release_action()
        if self.workspace is not None:
            self.workspace.budget_view.set_identity_note(IDENTITY_PENDING)
        self.compute.submit(IDENTITY_VIEW, jobs.identify_dataset, self.dataset)

    def _show_identity(self, result: tuple[object, str]) -> None:
        dataset, _key = result
        if dataset is not self.dataset:
            return  # another file's (opened since)
        self._identified = dataset
        if self.workspace is not None:
            self.workspace.budget_view.set_identity_note(None)
        self._update_release_action()
        self.reload_ledger()
        if self._loading is None:
            self.statusBar().showMessage(f"{self._loaded_text()} Identified for the budget ledger.", 5000)

    def _loaded_text(self) -> str:
        dataset = self.dataset
        return f"Loaded {dataset.path.name}: {dataset.n_rows:,} rows." if dataset is not None else ""

    def _identity_failed(self, message: str) -> None:
        text = f"Could not identify the dataset for the budget ledger: {message}. Releases stay disabled."
        if self.workspace is not None:
            self.workspace.budget_view.set_identity_note(text)
        self.release_action.setToolTip(text)
        self.last_error = text
        self.statusBar().showMessage(text)
        self.error_shown.emit(text)

    def _update_release_action(self) -> None:
        """Release is available outside teaching mode once the dataset's identity is known;
        otherwise disabled, its tooltip saying why."""
        teaching = self.teaching_action.isChecked()
        pending = self.dataset is not None and not self.identity_known()
        self.release_action.setEnabled(not teaching and not pending)
        tip = RELEASE_BLOCKED if teaching else IDENTITY_PENDING if pending else RELEASE_TIP
        self.release_action.setToolTip(tip)

    def open_release_dialog(self) -> None:
        if self.teaching_action.isChecked():
            self.show_error(RELEASE_BLOCKED)
            return
        if self.dataset is not None and not self.identity_known():
            self.show_error(IDENTITY_PENDING)
            return
        explorer = self.explorer
        if self.dataset is None or explorer.query is None or explorer.mechanism is None:
            self.show_error("Choose a query and a mechanism before releasing.")
            return
        from dpexplorer.gui.release_dialog import ReleaseDialog

        out_dir = Path.home() / "dpexplorer-releases"
        self.release_dialog = ReleaseDialog(
            self.compute,
            dataset=self.dataset,
            query=explorer.query,
            mechanism=explorer.mechanism.name,
            params=explorer.mechanism.validate(explorer.params),
            relation=explorer.relation,
            ledger_path=self.ledger_path(),
            out_dir=out_dir,
            warning=peeked_bounds_warning(explorer.query, self.query_panel.ranges),
            sampling_rate=self.dataset_view.sampling_rate,
            parent=self,
        )
        self.release_dialog.finished.connect(lambda _code: self.reload_ledger())
        self.release_dialog.released.connect(self.show_released)
        self.release_dialog.open()

    def show_released(self, released: object) -> None:
        """A release's result card, at the top of the Released tab (made at the first release of
        the session), which the window then shows."""
        from dpexplorer.gui.result_card import ReleasedView

        if getattr(self, "released_view", None) is None:
            self.released_view = ReleasedView()
            self.tabs.insertTab(self.tabs.indexOf(self.dataset_view), self.released_view, "Released")
        self.released_view.add(released)  # type: ignore[arg-type]
        self.tabs.setCurrentWidget(self.released_view)

    def _sampling_changed(self, rate: float | None) -> None:
        """The Data tab's sampling claim: the budget view composes the plan as it would be charged."""
        if self.workspace is not None:
            self.workspace.budget_view.set_sampling_rate(rate)

    def reload_ledger(self) -> None:
        """Show the dataset's budget and released measurements (from the ledger) in the plan,
        once the dataset's identity (its key there) is known; until then the panel says so."""
        if self.dataset is None or self.workspace is None:
            return
        if not self.identity_known():
            self.workspace.budget_view.set_identity_note(IDENTITY_PENDING)
            return
        from dpexplorer.release.ledger import Ledger
        from dpexplorer.release.release import dataset_key

        try:
            with Ledger(self.ledger_path()) as ledger:
                self.workspace.budget_view.load_ledger(ledger, dataset_key(self.dataset, ledger))
        except DPExplorerError as exc:
            self.show_error(f"Could not read the budget ledger: {exc}")

    def add_current_to_plan(self) -> None:
        explorer = self.explorer
        if self.workspace is None:
            return
        if explorer.mechanism is None or explorer.query_input is None or explorer.query is None:
            self.show_error("Choose a query and a mechanism before adding it to the plan.")
            return
        number = len(self.workspace.budget_view.plan) + 1
        label = f"#{number} {explorer.query.describe()}"  # type: ignore[attr-defined]
        params = explorer.mechanism.validate(explorer.params)
        self.plan_queries[label] = (explorer.query.to_dict(), explorer.relation)  # type: ignore[attr-defined]
        self.workspace.budget_view.add_measurement(
            self.workspace.planned(explorer.mechanism, params, explorer.query_input, label)
        )

    # ------------------------------------------------------------------ sessions
    def current_session(self) -> Session:
        explorer = self.explorer
        if self.dataset is None or explorer.query is None or explorer.mechanism is None:
            raise ValueError("nothing to save yet: open a dataset and choose a query")
        return Session(
            dataset_path=str(self.dataset.path.resolve()),
            dataset_fingerprint=self.dataset.fingerprint,
            query_controls=self.query_panel.state(),
            query=explorer.query.to_dict(),  # type: ignore[attr-defined]
            mechanism=explorer.mechanism.name,
            params=explorer.mechanism.validate(explorer.params),
            seed=self.mechanism_panel.seed.value(),
            plan=self._plan_entries(),
            teaching=self.teaching_action.isChecked(),
            tab=self.tabs.tabText(self.tabs.currentIndex()),
            budget=self._budget_entry(),
        )

    def _budget_entry(self) -> dict | None:
        if self.workspace is None:
            return None
        view = self.workspace.budget_view
        return {
            "epsilon": view.budget_epsilon.value(),
            "delta": view._delta() or 0.0,
            "share": view.share.isChecked(),
            "method": str(view.share_method.currentData()),
        }

    def _plan_entries(self) -> list[dict]:
        entries: list[dict] = []
        if self.workspace is None:
            return entries
        for item in self.workspace.budget_view.plan:
            query, relation = self.plan_queries[item.label]
            target = [item.target.halfwidth, item.target.ci_level] if item.target else None
            entries.append(
                {
                    "label": item.label,
                    "mechanism": item.mechanism,
                    "params": item.params,
                    "query": query,
                    "relation": relation,
                    "held": item.held,
                    "target": target,
                }
            )
        return entries

    def save_session_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save session", "session.dpx.json", "Sessions (*.json)")
        if path:
            self.save_session(path)

    def save_session(self, path: str | Path) -> None:
        try:
            save_session(self.current_session(), path)
        except (ValueError, OSError) as exc:
            self.show_error(f"Could not save the session: {exc}")
            return
        self.statusBar().showMessage(f"Session saved to {path}", 5000)

    def load_session_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open session", "", "Sessions (*.json);;All files (*)")
        if path:
            self.load_session(path)

    def load_session(self, path: str | Path) -> None:
        """Open the session's dataset, then restore every control once it is in."""
        try:
            session = load_session(path)
        except DPExplorerError as exc:
            self.show_error(str(exc))
            return
        self._pending_session = session
        self.open_file(session.dataset_path)

    def _restore_session_query(self, dataset: Dataset) -> bool:
        session = getattr(self, "_pending_session", None)
        if session is None:
            return False
        self.teaching_action.setChecked(session.teaching)
        self.mechanism_panel.seed.setValue(session.seed)
        self.plan_queries = {e["label"]: (e["query"], e["relation"]) for e in session.plan}
        self._pending_plan = None
        if session.plan or (self.workspace is not None and self.workspace.budget_view.plan):
            self.compute.submit("plan-rebuild", jobs.rebuild_plan, dataset, session.plan)
        try:
            self.query_panel.set_state(session.query_controls)
        except (KeyError, TypeError, ValueError) as exc:  # validated, but the columns may differ
            self._pending_session = None
            self.show_error(f"Could not restore the session's field “query_controls”: {exc}")
        return True

    def restore_state(self, session: Session) -> None:
        """Bring the window to ``session`` as opening its file would (undo and redo use this):
        the same dataset's controls are restored in place, another dataset is opened first."""
        self._pending_session = session
        shown = self.dataset
        if shown is not None and str(shown.path.resolve()) == session.dataset_path:
            self._restore_session_query(shown)
        else:
            self.open_file(session.dataset_path)

    def _restore_session_mechanism(self) -> None:
        session = getattr(self, "_pending_session", None)
        if session is None or not self.mechanism_panel.mechanisms:
            return  # the registry is not in yet: this runs again when it is
        self._pending_session = None
        try:
            self.mechanism_panel.select(session.mechanism)
        except KeyError as exc:
            self.show_error(f"Could not restore the session's field “mechanism”: {exc.args[0]}")
            return
        self.mechanism_panel.set_values(session.params)
        self._restore_session_budget(session)
        for i in range(self.tabs.count()):
            if session.tab and self.tabs.tabText(i) == session.tab:
                self.tabs.setCurrentIndex(i)
        self.statusBar().showMessage("Session restored.", 5000)

    def _restore_session_budget(self, session: Session) -> None:
        """The session's planning budget, unless the ledger holds one for this dataset (the
        ledger's is what releases are charged against, so it wins)."""
        if session.budget is None or self.workspace is None:
            return
        view = self.workspace.budget_view
        if view._ledger_method is None:
            view.set_budget(session.budget["epsilon"], session.budget["delta"])
        index = view.share_method.findData(session.budget["method"])
        if index >= 0:
            view.share_method.setCurrentIndex(index)
        view.share.setChecked(session.budget["share"])

    def views_idle(self, identity: bool = True) -> bool:
        """True when no view is computing or waiting for a throttled update, and (``identity``)
        the dataset's ledger identity is not being computed either."""
        busy = self.compute.busy if identity else self._cancellable()
        return not busy and not self.explorer.pending and not self.theory_views.pending

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
        from dpexplorer.gui.views.base import View

        View.explanations_shown = True  # teaching mode ends with its window
        self.explorer.stop()
        self.theory_views.stop()
        if self.workspace is not None:
            self.workspace.stop()
        self.compute.shutdown()
        super().closeEvent(event)
