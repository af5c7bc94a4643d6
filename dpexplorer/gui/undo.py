"""Undo and redo of what the user set: the dataset, the query, the mechanism and its
parameters, the simulation seed, the plan and the planning budget.

The history records *states*, not widget events: a state is the window's :class:`Session`
(what a session file saves), taken once the window has settled after a change (the query's
answers, the plan's totals and a newly opened file are in). Undo and redo apply a recorded
state through :meth:`MainWindow.restore_state`, the path that opens a session file, so a
state comes back exactly as a saved session would (the tab shown and teaching mode are the
window's, not the history's: they are kept as they are).

Guarantees:
- one step per settled change; changes of the same single field (a slider dragged, a spin box
  stepped) less than :data:`MERGE_SECONDS` apart merge into one step (``QUndoCommand.mergeWith``);
- each step is named after what it changed ("ε (epsilon) 1 → 0.5"), so the Edit menu says
  "Undo: ε (epsilon) 1 → 0.5";
- at most :data:`UNDO_LIMIT` steps are kept (each holds two small JSON-like states), so memory
  stays flat however long the window is used;
- applying a step records nothing new: the history waits until the window has settled on the
  applied state and takes that as its current state.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QUndoCommand, QUndoStack

from dpexplorer.gui.session import Session

if TYPE_CHECKING:
    from dpexplorer.gui.window_parts import WindowParts

UNDO_LIMIT = 200
"""Steps kept; the oldest are dropped beyond it."""
SETTLE_MS = 250
"""A state is recorded once no change has arrived for this long and no job it depends on runs."""
MERGE_SECONDS = 1.5
"""Changes of the same field closer together than this are one step (a slider drag)."""
SETTLING_JOBS = frozenset({"dataset", "dataset-peek", "query", "registry", "plan-rebuild", "budget"})
"""The compute jobs whose results are part of the recorded state (the query's answers decide
which mechanism is shown; the budget job solves the plan's shares)."""
_MERGE_ID = 34
UNDONE_FIELDS = ("dataset_path", "query_controls", "mechanism", "params", "seed", "plan", "budget")
"""The fields of a :class:`Session` that the history records and restores."""

_CONTROL_NAMES = {
    "kind": "query",
    "column": "column",
    "column2": "second column",
    "lower": "lower bound",
    "upper": "upper bound",
    "q": "quantile",
    "trim_fraction": "trim fraction",
    "k": "k",
    "bins": "bins",
    "categories": "categories",
    "joiner": "conditions joined by",
    "conditions": "conditions",
    "relation": "neighbouring relation",
    "group1": "group by",
    "group2": "second group",
    "group_categories": "group categories",
    "unit": "privacy unit",
    "max_groups": "groups per person",
    "max_rows": "rows per group",
    "key_origin": "keys",
    "key_epsilon": "keys' ε",
    "key_delta": "keys' δ",
}


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "…"
    text = str(value)
    return text if len(text) <= 24 else text[:23] + "…"


def _param_label(mechanism: str, name: str) -> str:
    from dpexplorer.core.mechanisms.registry import get

    try:
        for param in get(mechanism).params:
            if param.name == name:
                return param.label
    except KeyError:
        pass
    return name


def _mechanism_label(name: str) -> str:
    from dpexplorer.core.mechanisms.registry import get

    try:
        return get(name).label
    except KeyError:
        return name


def _changed_keys(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return [key for key in dict.fromkeys([*before, *after]) if before.get(key) != after.get(key)]


def describe(before: Session, after: Session) -> str:
    """A short name for the change from ``before`` to ``after`` ("ε (epsilon) 1 → 0.5")."""
    parts: list[str] = []
    if before.dataset_path != after.dataset_path:
        old, new = (
            p.replace("\\", "/").rsplit("/", 1)[-1] for p in (before.dataset_path, after.dataset_path)
        )
        return f"dataset {old} → {new}"
    controls = _changed_keys(before.query_controls, after.query_controls)
    if "kind" in controls:
        parts.append(f"query {before.query_controls['kind']} → {after.query_controls['kind']}")
    else:
        for key in controls:
            was, now = before.query_controls.get(key), after.query_controls.get(key)
            name = _CONTROL_NAMES.get(key, key)
            parts.append(name if isinstance(now, list) else f"{name} {_short(was)} → {_short(now)}")
    if before.mechanism != after.mechanism:
        parts.append(f"mechanism {_mechanism_label(before.mechanism)} → {_mechanism_label(after.mechanism)}")
    else:
        for key in _changed_keys(before.params, after.params):
            label = _param_label(after.mechanism, key)
            parts.append(f"{label} {_short(before.params.get(key))} → {_short(after.params.get(key))}")
    if before.seed != after.seed:
        parts.append(f"seed {before.seed} → {after.seed}")
    if before.plan != after.plan:
        added = len(after.plan) - len(before.plan)
        parts.append(
            f"add {after.plan[-1]['label']} to the plan"
            if added == 1 and after.plan[:-1] == before.plan
            else "remove from the plan"
            if added < 0
            else "the plan"
        )
    if before.budget != after.budget:
        old_b, new_b = before.budget or {}, after.budget or {}
        keys = _changed_keys(old_b, new_b)
        parts.append(
            f"budget ε {_short(old_b.get('epsilon'))} → {_short(new_b.get('epsilon'))}"
            if keys == ["epsilon"]
            else "the budget"
        )
    if not parts:
        return "no change"
    return parts[0] if len(parts) == 1 else f"{parts[0]} and {len(parts) - 1} more"


def _merge_key(before: Session, after: Session) -> tuple[Any, ...] | None:
    """What a step changed when it changed one field only (steps with equal keys may merge)."""
    differs = [name for name in UNDONE_FIELDS if getattr(before, name) != getattr(after, name)]
    if differs == ["params"]:
        keys = _changed_keys(before.params, after.params)
        return ("params", after.mechanism, *keys) if len(keys) == 1 else None
    if differs == ["query_controls"]:
        keys = _changed_keys(before.query_controls, after.query_controls)
        return ("query", *keys) if len(keys) == 1 and keys[0] != "kind" else None
    if differs == ["seed"]:
        return ("seed",)
    if differs == ["budget"]:
        return ("budget",)
    return None


def recorded(session: Session) -> tuple[Any, ...]:
    """The part of a session the history compares and restores."""
    return tuple(getattr(session, name) for name in UNDONE_FIELDS)


class StateChange(QUndoCommand):
    """One step: the window's state before and after a change."""

    def __init__(self, history: UndoHistory, before: Session, after: Session) -> None:
        super().__init__(describe(before, after))
        self.history = history
        self.before, self.after = before, after
        self.key = _merge_key(before, after)
        self.stamp = time.monotonic()
        self._done = True  # pushed after the change happened: the first redo does nothing

    def id(self) -> int:
        return _MERGE_ID if self.key is not None else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, StateChange) or other.key != self.key:
            return False
        if other.stamp - self.stamp > MERGE_SECONDS:
            return False
        self.after, self.stamp = other.after, other.stamp
        self.setText(describe(self.before, self.after))
        if recorded(self.before) == recorded(self.after):
            self.setObsolete(True)  # dragged back to where it started: no step
        return True

    def redo(self) -> None:
        if self._done:
            self._done = False
            return
        self.history.apply(self.after, f"Redone: {self.text()}")

    def undo(self) -> None:
        self.history.apply(self.before, f"Undone: {self.text()}")


class UndoHistory(QObject):
    """Watches the window and records a step each time its state settles on a new value."""

    def __init__(self, window: WindowParts) -> None:
        super().__init__(window)
        self.window = window
        self.stack = QUndoStack(self)
        self.stack.setUndoLimit(UNDO_LIMIT)
        self.current: Session | None = None
        self._applying = False
        self._message = ""
        self._timer = QTimer(self, singleShot=True, interval=SETTLE_MS)
        self._timer.timeout.connect(self._settle)
        window.query_panel.changed.connect(self.touch)
        window.mechanism_panel.changed.connect(self.touch)
        window.mechanism_panel.seed.valueChanged.connect(self.touch)
        window.dataset_loaded.connect(self.touch)
        window.explorer.query_ready.connect(self.touch)
        window.explorer.registry_ready.connect(self._watch_workspace)

    def _watch_workspace(self) -> None:
        workspace = self.window.workspace
        if workspace is not None:
            workspace.budget_view.plan_changed.connect(self.touch)
            workspace.budget_view.job_requested.connect(self.touch)

    def touch(self, *_args: object) -> None:
        """Something may have changed: look again once the window has settled."""
        self._timer.start()

    @property
    def idle(self) -> bool:
        """True when nothing waits to be recorded or applied."""
        return not self._timer.isActive() and not self._applying and self._settled()

    def _settled(self) -> bool:
        window = self.window
        if window._loading is not None or window.explorer.pending:
            return False
        return not SETTLING_JOBS.intersection(window.compute.pending_views())

    def _snapshot(self) -> Session | None:
        try:
            return self.window.current_session()
        except (ValueError, KeyError):
            return None  # nothing to record yet (no dataset, query or mechanism)

    def _settle(self) -> None:
        if not self._settled():
            self._timer.start()
            return
        state = self._snapshot()
        if state is None:
            return
        if self._applying:
            self._applying = False
            self.window.statusBar().showMessage(self._message, 5000)
        elif self.current is not None and recorded(state) != recorded(self.current):
            self.stack.push(StateChange(self, self.current, state))
        self.current = state

    def apply(self, state: Session, message: str = "") -> None:
        """Bring the window to ``state`` (undo, redo): its tab and teaching mode stay;
        ``message`` goes to the status bar once the window is there."""
        window = self.window
        shown = self._snapshot()
        if shown is not None:
            state = replace(state, teaching=shown.teaching, tab=shown.tab)
        self._applying = True
        self._message = message
        window.restore_state(state)
        self._timer.start()
