"""What the main window offers the parts that plug into it (the lessons, the theory views):
:class:`WindowParts` declares those widgets, signals and actions, and
:class:`~dpexplorer.gui.main_window.MainWindow` implements it. A part depends on this module,
never on main_window, so the arrows point one way: main_window -> lessons -> window_parts
(before, lessons and theory_views named MainWindow, and main_window imported them: a circle)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow, QSplitter, QTabWidget

if TYPE_CHECKING:
    from dpexplorer.data.load import Dataset
    from dpexplorer.gui.compute import ComputeService
    from dpexplorer.gui.dataset_view import DatasetView
    from dpexplorer.gui.explorer import Explorer
    from dpexplorer.gui.mechanism_panel import MechanismPanel
    from dpexplorer.gui.query_panel import QueryPanel
    from dpexplorer.gui.session import Session
    from dpexplorer.gui.views.accuracy import AccuracyView
    from dpexplorer.gui.views.neighbours import NeighboursView
    from dpexplorer.gui.workspace import Workspace


class WindowParts(QMainWindow):
    """The main window as its parts see it: declarations only (the window sets each in its
    ``__init__``; a method here raises until the window overrides it)."""

    dataset_loaded: Signal
    """Emitted with the new dataset once one is open."""

    compute: ComputeService
    explorer: Explorer
    dataset: Dataset | None
    tabs: QTabWidget
    side_splitter: QSplitter
    query_panel: QueryPanel
    mechanism_panel: MechanismPanel
    dataset_view: DatasetView
    neighbours_view: NeighboursView
    accuracy_view: AccuracyView
    workspace: Workspace | None
    """Built once the mechanisms are imported."""
    plan_queries: dict[str, tuple[dict[str, Any], str]]
    """The planned statistics: label -> (query as a dict, relation)."""
    teaching_action: QAction
    _loading: str | None
    """The file being read, until its load job ends (undo waits for it)."""

    def open_file(self, path: str | Path) -> None:
        """Load ``path`` on a worker; the window shows it when done (``dataset_loaded``), or
        explains the error."""
        raise NotImplementedError

    def show_error(self, message: str) -> None:
        """Show ``message`` in the status bar, and in a dialog when interactive; never a
        traceback."""
        raise NotImplementedError

    def scroll_to_mechanism(self) -> None:
        """Scroll the controls so the mechanism's parameters are at the top."""
        raise NotImplementedError

    def add_current_to_plan(self) -> None:
        """Add the current query and mechanism to the budget's plan."""
        raise NotImplementedError

    def current_session(self) -> Session:
        """The window's state as a session file saves it (ValueError before there is one)."""
        raise NotImplementedError

    def restore_state(self, session: Session) -> None:
        """Bring the window to ``session`` as opening its file would (undo and redo use this)."""
        raise NotImplementedError

    def resample(self) -> None:
        """Run the teaching mode's draw again (nothing until a mechanism and a query are set)."""
        raise NotImplementedError
