"""The main window's menus: File, Edit (undo and redo), View (teaching mode, comparison,
appearance), Release and Help, with the About box and the recent files.

:class:`WindowMenus` is a mixin of :class:`~dpexplorer.gui.main_window.MainWindow`; each action
calls the window's method for it (opening files, sessions, the release dialog, ...)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QMenu, QMessageBox

from dpexplorer import __version__
from dpexplorer.data.default import ATTRIBUTION, default_dataset_path
from dpexplorer.gui import palette, settings
from dpexplorer.gui.window_release import RELEASE_TIP

if TYPE_CHECKING:
    from dpexplorer.gui.codebook_dialog import CodebookDialog
    from dpexplorer.gui.compare import Comparison
    from dpexplorer.gui.spark_dialog import SparkOpenDialog
    from dpexplorer.gui.undo import UndoHistory
    from dpexplorer.gui.window_parts import WindowParts as _Window
else:
    _Window = object


class WindowMenus(_Window):
    """The menu bar and its actions, for the main window."""

    comparison: Comparison
    history: UndoHistory
    release_action: QAction
    open_dialog: Callable[[], None]
    open_spark_dialog: Callable[[], SparkOpenDialog]
    session_dialog: Callable[..., None]
    set_teaching_mode: Callable[[bool], None]
    open_release_dialog: Callable[[], None]
    open_codebook_dialog: Callable[..., CodebookDialog | None]

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
        save_session_action.triggered.connect(lambda: self.session_dialog(save=True))
        file_menu.addAction(save_session_action)
        load_session_action = QAction("Open Sess&ion…", self, shortcut=QKeySequence("Ctrl+Shift+O"))
        load_session_action.triggered.connect(lambda: self.session_dialog(save=False))
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
        self.codebook_action = QAction("&Codebook…", self, shortcut=QKeySequence("Ctrl+Shift+K"))
        self.codebook_action.setToolTip(
            "The dataset's public description: the bounds, categories and bin edges every release "
            "reads (never the data), each with its origin; open, edit and save it"
        )
        self.codebook_action.triggered.connect(lambda: self.open_codebook_dialog())
        release_menu.addAction(self.codebook_action)
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
