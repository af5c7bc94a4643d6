"""The main window: the tabs where the views go, the query and mechanism controls beside them,
the status bar with progress and Cancel, and teaching mode.

Its other concepts are mixins, one module each: the menus (:mod:`.window_menus`), opening data
and showing it once loaded (:mod:`.window_files`), the dataset's ledger identity and the
release dialogs (:mod:`.window_release`), the dataset's codebook (:mod:`.window_codebook`) and
sessions (:mod:`.window_sessions`). Each declares
what it reads from the others; :class:`~dpexplorer.gui.window_parts.WindowParts` is what they
share with the parts plugged into the window (lessons, theory views)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.gui import accessibility, jobs, palette, settings
from dpexplorer.gui.attack_views import AttackViews
from dpexplorer.gui.compare import Comparison
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.dataset_view import DatasetView
from dpexplorer.gui.explorer import Explorer
from dpexplorer.gui.lessons import LessonRunner
from dpexplorer.gui.mechanism_panel import MechanismPanel
from dpexplorer.gui.mechanism_ranking import RANKING_JOB, MechanismRanking
from dpexplorer.gui.query_panel import QueryPanel
from dpexplorer.gui.spark_dialog import LOCAL_MASTER
from dpexplorer.gui.teaching import TeachingPanel
from dpexplorer.gui.theory_views import TheoryViews
from dpexplorer.gui.undo import UndoHistory
from dpexplorer.gui.views.accuracy import AccuracyView
from dpexplorer.gui.views.audit_panel import AuditPanel
from dpexplorer.gui.views.neighbours import NeighboursView
from dpexplorer.gui.window_codebook import WindowCodebook
from dpexplorer.gui.window_files import DATASET_VIEW, PEEK_VIEW, WindowFiles
from dpexplorer.gui.window_menus import WindowMenus
from dpexplorer.gui.window_parts import WindowParts
from dpexplorer.gui.window_release import IDENTITY_VIEW, WindowRelease
from dpexplorer.gui.window_sessions import WindowSessions

if TYPE_CHECKING:
    from dpexplorer.data.load import Dataset
    from dpexplorer.gui.views.clipping import ClippingView
    from dpexplorer.gui.workspace import Workspace

SIDE_PANEL_WIDTH = 480
TEACHING_FONT_SCALE = 1.5
"""Teaching mode's fonts, against the normal ones (the window still fits 1280 x 720)."""
BUSY_INDICATOR_DELAY_MS = 300
"""Work running longer than this shows a progress bar and a Cancel button."""


class MainWindow(WindowMenus, WindowFiles, WindowRelease, WindowCodebook, WindowSessions, WindowParts):
    """Top-level window. ``dataset_loaded`` fires on the main thread once a file is in."""

    dataset_loaded = Signal(object)
    error_shown = Signal(str)
    clipping_view: ClippingView
    """The Where to clip tab, built with the workspace (after the first paint)."""

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
        self._codebook_init()
        central_layout.insertWidget(1, self.observed_banner)  # over the views it concerns
        self.mechanism_panel = MechanismPanel()
        self._build_side_panel()
        self.explorer = Explorer(
            self.compute, self.mechanism_panel, self.neighbours_view, self.accuracy_view, self
        )
        self.query_panel.changed.connect(self.mechanism_panel.follow_query)  # before the explorer's
        self.query_panel.changed.connect(self.explorer.set_query)
        # which mechanism for this query (issue 28): under the picker, every one's expected error
        self.mechanism_ranking = MechanismRanking(self.compute, self.explorer, self.mechanism_panel)
        # its job (every applicable mechanism's error, ~5 ms of Python) waits until the plots'
        # result is painted: sharing the GIL with it slowed a slider move's repaint
        self.compute.set_background(RANKING_JOB)
        # the audit button under the neighbours plot (issue 21): the mechanism on screen
        self.audit_panel = AuditPanel(self.compute)
        self.neighbours_view.body.addWidget(self.audit_panel)
        self.explorer.inputs_changed.connect(self.audit_panel.set_inputs)
        self.explorer.query_ready.connect(lambda _q: self._restore_session_mechanism())
        self.explorer.registry_ready.connect(self._build_workspace)
        self.tabs.currentChanged.connect(lambda _i: self._submit_visible())
        self.dataset_loaded.connect(self._dataset_for_explorer)
        self._build_menus()
        self.theory_views = TheoryViews(self)
        self.attack_views = AttackViews(self)  # the Attacks tab (why DP), before Data
        self.lessons = LessonRunner(self)
        self.history = UndoHistory(self)
        self.comparison = Comparison(self)
        self._build_compare_menu()
        self._build_edit_menu()
        self._build_appearance_menu()
        # named once the event loop runs (while the first file loads on a worker, not before its
        # load starts), and again for what each tab builds when first shown
        QTimer.singleShot(0, self, lambda: accessibility.name_controls(self))
        self.tabs.currentChanged.connect(lambda _i: accessibility.name_controls(self.tabs.currentWidget()))
        if restore_layout:
            self._restore_layout()
        else:
            self.resize(1440, 900)

    def _clipping_context(self, mechanism: object, params: dict, query_input: object, _seed: int) -> None:
        from dpexplorer.gui.views.clipping import CLIPPED_KINDS, clipping_model  # imported with the workspace

        query = self.explorer.query
        if self.dataset is None or getattr(query, "kind", "") not in CLIPPED_KINDS:
            self.clipping_view.clear("Choose a sum, mean, quantile or trimmed mean to see where to clip.")
            return
        epsilon = float(params.get("epsilon", 1.0))
        self.clipping_view.set_context(
            self.dataset,
            query,
            epsilon,
            self.explorer.relation,
            clipping_model(mechanism, params, query_input),
        )

    def _submit_visible(self) -> None:
        self.explorer.submit_visible()
        if self.workspace is not None:
            self.workspace.submit_visible()

    def _build_workspace(self) -> None:
        """The where-to-clip, budget, risk and mechanism-specific views (their modules were
        imported on a worker with the mechanisms, keeping scipy and superqt off the start-up
        path), inserted before the Data tab."""
        if self.workspace is not None:
            return
        from dpexplorer.gui.workspace import Workspace

        self.workspace = Workspace(self.compute, self.tabs, self)
        data_index = self.tabs.indexOf(self.dataset_view)
        # where to clip (issue 21): a tab for clipped statistics, and the private bounds
        self.clipping_view = self.workspace.clipping_view
        self.tabs.insertTab(data_index, self.clipping_view, "Where to clip")
        self.explorer.inputs_changed.connect(self._clipping_context)
        self.clipping_view.private_bounds_requested.connect(self.open_private_bounds_dialog)
        self.tabs.insertTab(data_index + 1, self.workspace.budget_view, "Budget")
        self.tabs.insertTab(data_index + 2, self.workspace.risk_view, "Risk")
        self.workspace.budget_view.add_requested.connect(self.add_current_to_plan)
        self.workspace.budget_view.audit_requested.connect(self.open_plan_audit_dialog)
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

    def cancel_jobs(self) -> None:
        """Esc / Cancel: stop every view's computation. Never a release's: once it charges the
        ledger its outcome must reach the dialog (the dialog has its own Cancel, before that).
        A throttled submission still waiting for its frame is dropped too: else it would start
        the job again a frame after Esc."""
        self._stop_pending_submissions()
        for view in self.compute.pending_views():
            if not view.startswith("release-") and view != IDENTITY_VIEW:
                self.compute.cancel(view)
        self._identify_shown()  # a cancelled load keeps the dataset shown: its identity resumes
        self.statusBar().showMessage("Cancelled.", 3000)

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

    def views_idle(self, identity: bool = True) -> bool:
        """True when no view is computing or waiting for a throttled update, and (``identity``)
        the dataset's ledger identity is not being computed either."""
        busy = self.compute.busy if identity else self._cancellable()
        return (
            not busy
            and not self.explorer.pending
            and not self.theory_views.pending
            and not self.attack_views.pending
        )

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

    def _stop_pending_submissions(self) -> None:
        """Drop every view group's throttled submission that waits for its frame."""
        self.explorer.stop()
        self.theory_views.stop()
        self.attack_views.stop()
        if self.workspace is not None:
            self.workspace.stop()

    def closeEvent(self, event: QCloseEvent) -> None:
        store = settings.settings()
        store.setValue("window/geometry", self.saveGeometry())
        store.setValue("window/state", self.saveState())
        from dpexplorer.gui.views.base import View

        View.explanations_shown = True  # teaching mode ends with its window
        self._stop_pending_submissions()
        self.compute.shutdown()
        super().closeEvent(event)
