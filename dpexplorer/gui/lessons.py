"""The lesson runner: the Lessons menu, and a panel above the views that walks a class through a
lesson's steps (Next / Back / Leave, from the keyboard: Page Down, Page Up, Ctrl+L).

A step is applied through the controls a user (or a saved session) would use: the dataset is
opened like File > Open, the query panel gets the step's controls (``QueryPanel.set_state``, as
a session restores them), and once the query is in, the mechanism is picked and its parameters
set in the mechanism panel (``select`` and ``set_values``); then the tab is shown. The window's
own machinery computes the views. Nothing here computes anything."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.data.default import default_dataset_path
from dpexplorer.gui import palette as colours
from dpexplorer.gui.lesson_files import (
    ATTACK_PAGES,
    LESSONS_DIR,
    PAGES,
    Lesson,
    Step,
    check_mechanisms,
    load_lessons,
)
from dpexplorer.gui.window_parts import WindowParts

if TYPE_CHECKING:
    from dpexplorer.data.load import Dataset

NEXT_KEYS = (QKeySequence(Qt.Key.Key_PageDown), QKeySequence("Ctrl+Right"))
BACK_KEYS = (QKeySequence(Qt.Key.Key_PageUp), QKeySequence("Ctrl+Left"))
LEAVE_KEY = QKeySequence("Ctrl+L")
FOLD_KEY = QKeySequence("Ctrl+T")
"""Page Down / Page Up are what a presenter's clicker sends."""


class LessonPanel(QFrame):
    """The current step, in the column left of the plots, above the controls: lesson and step
    title, Back / Next / Leave, then the step's sentences and what to try (a button, or
    Ctrl+T, folds the sentences away for more controls)."""

    LESSON_SHARE = 0.62
    """At most this share of the column's height goes to the lesson; the controls keep the rest."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("lessonPanel")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        # A palette, not a style sheet: a style sheet would keep the panel's text at its size
        # when teaching mode enlarges the application's font.
        palette = self.palette()
        palette.setColor(QPalette.ColorRole.Window, colours.qcolor(colours.LESSON_BACKGROUND))
        self.setPalette(palette)
        self.setAutoFillBackground(True)
        self.heading = QLabel()
        self.heading.setWordWrap(True)
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        # The sentences scroll when the column is short: they never set the window's height.
        self.text_area = QScrollArea()
        self.text_area.setWidget(self.text)
        self.text_area.setWidgetResizable(True)
        self.text_area.setFrameShape(QFrame.Shape.NoFrame)
        self.text_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.text_area.viewport().setAutoFillBackground(False)
        self.text.setAutoFillBackground(False)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet(f"color: {colours.css(colours.ERROR_TEXT)};")
        self.problem.hide()
        self.back = QPushButton("◀ Back")
        self.back.setToolTip("The previous step (Page Up)")
        self.next = QPushButton("Next ▶")
        self.next.setToolTip("The next step (Page Down)")
        self.leave = QPushButton("Leave")
        self.leave.setToolTip("Leave the lesson; the window keeps what it shows (Ctrl+L)")
        self.fold = QPushButton("Hide text")
        self.fold.setCheckable(True)
        self.fold.setToolTip("Fold the step's text away, or show it again (Ctrl+T)")
        self.fold.toggled.connect(self._folded)
        for button in (self.back, self.next, self.leave, self.fold):
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # keys go to the shortcuts, not a button
        buttons = QHBoxLayout()
        buttons.addWidget(self.back)
        buttons.addWidget(self.next)
        buttons.addWidget(self.leave)
        buttons.addStretch(1)
        buttons.addWidget(self.fold)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setSpacing(2)
        layout.addWidget(self.heading)
        layout.addLayout(buttons)
        layout.addWidget(self.text_area, 1)
        layout.addWidget(self.problem)

    def show_step(self, lesson: Lesson, index: int) -> None:
        step = lesson.steps[index]
        self.heading.setText(
            f"{_escape(lesson.title)} · step {index + 1} of {len(lesson.steps)}<br>"
            f"<b>{_escape(step.title)}</b>"
        )
        self.text.setText(
            f"{_escape(step.text)}<br><b>Try:</b> {_escape(step.try_this)}"
            f" <small style='color:{colours.css(colours.MUTED_TEXT)}'>({_escape(lesson.reference)})</small>"
        )
        self.setToolTip(f"{lesson.title}: {lesson.summary}")
        self.back.setEnabled(index > 0)
        self.next.setText("Next ▶" if index + 1 < len(lesson.steps) else "Finish")
        self.problem.hide()

    def show_problem(self, message: str) -> None:
        self.problem.setText(message)
        self.problem.show()

    def _folded(self, folded: bool) -> None:
        self.text_area.setVisible(not folded)
        self.fold.setText("Show text" if folded else "Hide text")

    def natural_height(self, width: int) -> int:
        """The height that shows the heading, the buttons and (unless folded) all the text at
        ``width``, without scrolling."""
        layout = self.layout()
        assert layout is not None  # set in __init__
        frame, inner_margins = self.contentsMargins(), layout.contentsMargins()
        sides = frame.left() + frame.right() + inner_margins.left() + inner_margins.right()
        inner = width - sides
        parts = [self.heading.heightForWidth(inner), self.back.sizeHint().height()]
        if not self.fold.isChecked():
            scrollbar = self.text_area.verticalScrollBar().sizeHint().width()
            parts.append(self.text.heightForWidth(inner - scrollbar))
        if not self.problem.isHidden():
            parts.append(self.problem.heightForWidth(inner))
        vertical = frame.top() + frame.bottom() + inner_margins.top() + inner_margins.bottom()
        return sum(parts) + layout.spacing() * len(parts) + vertical + 4


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class LessonRunner(QObject):
    """Offers the lessons in a menu and runs one. ``step_ready`` fires once a step's dataset,
    query, mechanism, parameters and tab are all set (the views then compute as usual)."""

    step_ready = Signal(int)

    def __init__(self, window: WindowParts, directory: Path = LESSONS_DIR) -> None:
        super().__init__(window)
        self.window = window
        self.directory = directory
        self.lessons, self.problems = load_lessons(directory)
        self.broken: dict[int, str] = {}
        """Lessons whose mechanisms or parameters the registry rejects (index -> why)."""
        self.lesson: Lesson | None = None
        self.index = 0
        self.pending: Step | None = None
        self._phase = ""  # "dataset", "query" or "" while a step is applied
        self._pinned = False  # whether a step pinned the comparison now shown
        self.panel = LessonPanel()
        self.panel.hide()
        window.side_splitter.insertWidget(0, self.panel)  # above the controls, beside the plots
        self.panel.back.clicked.connect(self.back)
        self.panel.next.clicked.connect(self.next)
        self.panel.leave.clicked.connect(self.leave)
        self.panel.fold.toggled.connect(lambda _folded: QTimer.singleShot(0, self.fit_panel))
        window.dataset_loaded.connect(self._dataset_loaded)
        window.explorer.query_ready.connect(self._query_ready)
        window.explorer.registry_ready.connect(self._check_registry)
        window.explorer.inputs_changed.connect(self._inputs_changed)
        self._awaiting_tab: Step | None = None
        self.menu = self._build_menu()

    # ------------------------------------------------------------------ menu
    def _build_menu(self) -> QMenu:
        bar = self.window.menuBar()
        menu = QMenu("&Lessons", bar)
        help_action = next((a for a in bar.actions() if a.text() == "&Help"), None)
        bar.insertMenu(help_action, menu) if help_action else bar.addMenu(menu)
        self.start_actions: list[QAction] = []
        for i, lesson in enumerate(self.lessons):
            action = QAction(f"{i + 1}. {lesson.title}", self.window)
            action.setToolTip(lesson.summary)
            action.setStatusTip(lesson.summary)
            action.triggered.connect(lambda _=False, i=i: self.start(i))
            menu.addAction(action)
            self.start_actions.append(action)
        for problem in self.problems:
            menu.addAction(f"(cannot load) {problem}").setEnabled(False)
        menu.addSeparator()
        self.next_action = self._action(menu, "&Next Step", NEXT_KEYS, self.next)
        self.back_action = self._action(menu, "&Previous Step", BACK_KEYS, self.back)
        self.leave_action = self._action(menu, "&Leave the Lesson", (LEAVE_KEY,), self.leave)
        fold = self.panel.fold.toggle
        self.fold_action = self._action(menu, "&Hide or Show the Step's Text", (FOLD_KEY,), fold)
        menu.setToolTipsVisible(True)
        self._enable_navigation()
        return menu

    def _action(self, menu: QMenu, text: str, keys: tuple[QKeySequence, ...], slot: Any) -> QAction:
        action = QAction(text, self.window)
        action.setShortcuts(list(keys))
        action.triggered.connect(slot)
        menu.addAction(action)
        self.window.addAction(action)  # the keys work with the menu closed
        return action

    def _enable_navigation(self) -> None:
        running = self.lesson is not None
        for action in (self.next_action, self.back_action, self.leave_action, self.fold_action):
            action.setEnabled(running)
        if running:
            self.back_action.setEnabled(self.index > 0)

    def _check_registry(self) -> None:
        """Once the mechanisms are imported: disable the lessons they reject, saying why."""
        mechanisms = self.window.explorer.mechanisms or ()
        for i, lesson in enumerate(self.lessons):
            problem = check_mechanisms(lesson, mechanisms)
            if problem is not None:
                self.broken[i] = problem
                self.start_actions[i].setEnabled(False)
                self.start_actions[i].setToolTip(problem)

    # ------------------------------------------------------------------ navigation
    def start(self, index: int) -> None:
        if index in self.broken:
            self.window.show_error(self.broken[index])
            return
        self.lesson = self.lessons[index]
        self.panel.show()
        self.show_step(0)

    def next(self) -> None:
        if self.lesson is None:
            return
        if self.index + 1 < len(self.lesson.steps):
            self.show_step(self.index + 1)
        else:
            self.leave()

    def back(self) -> None:
        if self.lesson is not None and self.index > 0:
            self.show_step(self.index - 1)

    def leave(self) -> None:
        """Close the panel; the window keeps the last step's state for the class to explore."""
        self.lesson = None
        self.pending = self._awaiting_tab = None
        self._phase = ""
        self.panel.hide()
        self._enable_navigation()
        self.window.statusBar().showMessage("Left the lesson: everything stays as it is.", 5000)

    def show_step(self, index: int) -> None:
        assert self.lesson is not None
        self.index = index
        self.panel.show_step(self.lesson, index)
        self._enable_navigation()
        QTimer.singleShot(0, self.fit_panel)  # once the new text is laid out
        self._apply(self.lesson.steps[index])

    def fit_panel(self) -> None:
        """Give the lesson its natural height in the column, at most LESSON_SHARE of it, and
        scroll the controls to the mechanism's parameters."""
        if self.lesson is None:
            return
        splitter = self.window.side_splitter
        total = sum(splitter.sizes())
        lesson = min(self.panel.natural_height(splitter.width()), int(total * self.panel.LESSON_SHARE))
        splitter.setSizes([lesson, total - lesson])
        QTimer.singleShot(0, self.window.scroll_to_mechanism)  # once the controls have their height

    @property
    def applying(self) -> bool:
        """True while a step waits for its dataset or its query."""
        return self.pending is not None

    # ------------------------------------------------------------------ applying a step
    def _apply(self, step: Step) -> None:
        self.pending, self._awaiting_tab = step, None
        path = step.dataset_path(self.directory) or default_dataset_path()
        current = self.window.dataset
        if current is None or current.path.resolve() != path.resolve():
            self._phase = "dataset"
            self.window.open_file(path)
            return
        self._apply_query(step)

    def _dataset_loaded(self, dataset: Dataset) -> None:
        if self.pending is not None and self._phase == "dataset":
            self._apply_query(self.pending)

    def _apply_query(self, step: Step) -> None:
        panel = self.window.query_panel
        self._phase = "query"
        current = self.window.explorer.mechanism
        if step.tab in ("mechanism", *PAGES) and (current is None or current.name != step.mechanism):
            # the new mechanism's own view appears once it is chosen; meanwhile the data table,
            # not a view the new mechanism may not serve (AIM has no accuracy curves), is shown
            self.window.tabs.setCurrentWidget(self.window.dataset_view)
        panel.set_state(step.query)
        column = step.query["column"]
        if column and panel.form.isRowVisible(panel.column) and panel.column.currentText() != column:
            self._fail(f"This step's query does not fit the data: it has no column {column!r}")
        elif not panel.error.isHidden():
            self._fail(f"This step's query does not fit the data: {panel.error.text()}")

    def _query_ready(self, _query: object) -> None:
        step = self.pending
        mechanisms = self.window.mechanism_panel
        if step is None or self._phase != "query" or not mechanisms.mechanisms:
            return  # not ours, or the registry is not in yet (query_ready fires again then)
        if not self._pin(step):
            return
        try:
            mechanisms.select(step.mechanism)
        except KeyError as exc:
            self._fail(f"This step's mechanism does not apply: {exc.args[0]}")
            return
        mechanism = mechanisms.current()
        assert mechanism is not None
        try:  # (checked when the registry came in, but a lesson may start before that)
            values = mechanism.validate(step.params)
        except DPExplorerError as exc:
            self._fail(f"This step's parameters are not valid: {exc}")
            return
        mechanisms.set_values(values)
        self.pending, self._phase = None, ""
        if step.plan:
            self._fill_plan(step.plan)
        theory = getattr(self.window, "theory_views", None)
        if step.random_walk and theory is not None:
            theory.random_walk_settings(step.random_walk)
        attacks = getattr(self.window, "attack_views", None)
        if step.tab in ATTACK_PAGES and attacks is not None:
            attacks.set_settings(ATTACK_PAGES[step.tab], step.attack)
        # The mechanism's own tab is inserted when the explorer passes the new inputs on (after
        # its throttle); the tab is shown once that is done.
        self._awaiting_tab = step

    def _pin(self, step: Step) -> bool:
        """Pin the step's ``compare`` mechanism (select it, set its parameters, pin it), or end
        a comparison a previous step started; False (and said) when it does not apply."""
        comparison = getattr(self.window, "comparison", None)
        if comparison is None:
            return True
        if step.compare is None:
            if self._pinned:
                comparison.stop()
                self._pinned = False
            return True
        name, params = step.compare
        mechanisms = self.window.mechanism_panel
        try:
            mechanisms.select(name)
        except KeyError as exc:
            self._fail(f"This step's comparison does not apply: {exc.args[0]}")
            return False
        pinned = mechanisms.current()
        assert pinned is not None
        mechanisms.set_values(pinned.validate(params))
        self._pinned = comparison.pin()
        return True

    def _inputs_changed(self, *_args: object) -> None:
        step, self._awaiting_tab = self._awaiting_tab, None
        if step is not None:
            QTimer.singleShot(0, lambda: self._show_tab(step))  # after the workspace's own slot

    def _fill_plan(self, copies: int) -> None:
        window = self.window
        if window.workspace is None:
            return
        window.plan_queries.clear()
        window.workspace.budget_view.set_plan(())
        for _ in range(copies):
            window.add_current_to_plan()

    def tab_widget(self, key: str) -> QWidget | None:
        """The widget of a step's tab key (lesson_files.TABS), if the window has it now (for a
        page of the mechanism's own view, that view)."""
        window = self.window
        workspace = window.workspace
        theory = getattr(window, "theory_views", None)
        widgets: dict[str, QWidget | None] = {
            "neighbours": window.neighbours_view,
            "accuracy": window.accuracy_view,
            "data": window.dataset_view,
            "budget": workspace.budget_view if workspace else None,
            "risk": workspace.risk_view if workspace else None,
            "mechanism": workspace.shown_specific if workspace else None,
            "sensitivity": theory.sensitivity_view if theory else None,
            "random_walk": theory.random_walk_view if theory else None,
            "error_vs_k": theory.error_k_view if theory else None,
        }
        attacks = getattr(window, "attack_views", None)
        if key in ATTACK_PAGES:
            return attacks.tab if attacks is not None else None
        if key in PAGES:
            view = widgets["mechanism"]
            return view if hasattr(view, PAGES[key]) else None
        return widgets.get(key)

    def _show_tab(self, step: Step) -> None:
        if self.lesson is None or self.pending is not None or step is not self.lesson.steps[self.index]:
            return  # left, or another step started meanwhile
        widget = self.tab_widget(step.tab)
        index = self.window.tabs.indexOf(widget) if widget is not None else -1
        if index < 0:
            self._fail(f"This step's tab ({step.tab}) is not available for this mechanism")
        else:
            self.window.tabs.setCurrentIndex(index)
            if step.tab in PAGES:
                widget.pages.setCurrentWidget(getattr(widget, PAGES[step.tab]))  # type: ignore[union-attr]
            if step.tab in ATTACK_PAGES:
                self.window.attack_views.show_page(ATTACK_PAGES[step.tab])  # type: ignore[attr-defined]
        if self.window.teaching_action.isChecked():
            self.window.resample()  # the classroom draw follows the new mechanism
        self.fit_panel()  # the query's controls may have changed height
        self.step_ready.emit(self.index)

    def _fail(self, message: str) -> None:
        self.pending, self._phase = None, ""
        self.panel.show_problem(message)
        self.window.statusBar().showMessage(message)
        self.step_ready.emit(self.index)
