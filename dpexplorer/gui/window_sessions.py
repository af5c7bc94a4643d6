"""The main window's sessions: the window's state as a session file (File > Save Session…),
opening one (its dataset first, then every control once the data and the mechanisms are in),
and restoring a state in place for undo and redo.

:class:`WindowSessions` is a mixin of :class:`~dpexplorer.gui.main_window.MainWindow`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QFileDialog

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.gui import jobs
from dpexplorer.gui.session import Session, load_session, save_session

if TYPE_CHECKING:
    from dpexplorer.data.load import Dataset
    from dpexplorer.gui.window_parts import WindowParts as _Window
else:
    _Window = object

SESSION_FILTER = "Sessions (*.json);;All files (*)"


class WindowSessions(_Window):
    """Save, open and restore sessions, for the main window."""

    _pending_plan: object | None
    """A plan rebuilt on a worker, kept until the budget view exists."""
    _pending_session: Session | None
    """A session being opened, applied once its dataset is in."""

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

    def session_dialog(self, *, save: bool) -> None:
        """File > Save Session… (``save``) or Open Session…: ask for the file, then save or open it."""
        if save:
            path, _ = QFileDialog.getSaveFileName(self, "Save session", "session.dpx.json", SESSION_FILTER)
        else:
            path, _ = QFileDialog.getOpenFileName(self, "Open session", "", SESSION_FILTER)
        if path:
            (self.save_session if save else self.load_session)(path)

    def save_session(self, path: str | Path) -> None:
        try:
            save_session(self.current_session(), path)
        except (ValueError, OSError) as exc:
            self.show_error(f"Could not save the session: {exc}")
            return
        self.statusBar().showMessage(f"Session saved to {path}", 5000)

    def load_session(self, path: str | Path) -> None:
        """Open the session's dataset, then restore every control once it is in."""
        try:
            session = load_session(path)
        except DPExplorerError as exc:
            self.show_error(str(exc))
            return
        self._pending_session = session
        self.open_file(session.dataset_path)

    def _apply_pending_plan(self) -> None:
        plan = getattr(self, "_pending_plan", None)
        if plan is not None and self.workspace is not None:
            self._pending_plan = None
            self.workspace.budget_view.set_plan(plan)

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
