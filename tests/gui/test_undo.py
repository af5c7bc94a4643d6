"""Undo and redo (issue 34): every change to the query, the mechanism, its parameters, the
seed, the plan and the dataset is one step, named in the Edit menu, and undo brings back the
exact state before it."""

from __future__ import annotations

import random
import time

from conftest import IDLE_TIMEOUT_MS, wait_idle

from dpexplorer.gui import undo
from dpexplorer.gui.undo import MERGE_SECONDS, UNDO_LIMIT, recorded


def settle(qtbot, window) -> None:
    """Wait until the window is idle and the history has recorded (or applied) the change."""
    qtbot.waitUntil(lambda: window.views_idle() and window.history.idle, timeout=IDLE_TIMEOUT_MS)
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: window.history.idle, timeout=IDLE_TIMEOUT_MS)


def test_undo_and_redo_of_epsilon_mechanism_and_query_name_the_change(qtbot, window):
    history = window.history
    settle(qtbot, window)
    assert history.stack.undoLimit() == UNDO_LIMIT
    assert history.stack.count() == 0 and not window.undo_action.isEnabled()
    start = window.current_session()

    window.mechanism_panel.set_values({"epsilon": 0.5})
    settle(qtbot, window)
    assert window.undo_action.text() == "Undo: ε (epsilon) 1 → 0.5"
    after_epsilon = window.current_session()

    window.mechanism_panel.select("gaussian")
    settle(qtbot, window)
    assert window.undo_action.text() == "Undo: mechanism Laplace → Gaussian"
    after_mechanism = window.current_session()

    window.query_panel.select_kind("mean", "age")
    settle(qtbot, window)
    assert window.undo_action.text().startswith("Undo: query predicate_count → mean")
    after_query = window.current_session()
    assert history.stack.count() == 3

    for expected in (after_mechanism, after_epsilon, start):
        window.undo_action.trigger()
        settle(qtbot, window)
        assert recorded(window.current_session()) == recorded(expected)
    assert window.explorer.mechanism.name == start.mechanism
    assert window.mechanism_panel.values()["epsilon"] == 1.0
    assert not window.undo_action.isEnabled()
    assert window.redo_action.text() == "Redo: ε (epsilon) 1 → 0.5"

    for expected in (after_epsilon, after_mechanism, after_query):
        window.redo_action.trigger()
        settle(qtbot, window)
        assert recorded(window.current_session()) == recorded(expected)
    assert window.explorer.query.to_dict() == after_query.query
    assert history.stack.count() == 3  # applying a step recorded nothing new


def test_a_slider_drag_is_one_step(qtbot, window):
    settle(qtbot, window)
    slider = window.mechanism_panel.params.controls["epsilon"].slider
    for position in range(slider.value(), slider.value() - 200, -20):
        slider.setValue(position)
        qtbot.wait(60)
    settle(qtbot, window)
    slider.setValue(slider.value() - 50)  # a pause shorter than the merge window: same step
    settle(qtbot, window)
    assert window.history.stack.count() == 1
    assert window.undo_action.text().startswith("Undo: ε (epsilon) 1 → ")
    window.undo_action.trigger()
    settle(qtbot, window)
    assert window.mechanism_panel.values()["epsilon"] == 1.0


class _Clock:
    """The history's clock (``undo.time``), moved on by hand: a step recorded after
    ``offset += 1.6`` is 1.6 s later for the merge rule, as after waiting 1.6 s, without the wait."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.offset


def test_undo_restores_the_exact_state_after_ten_random_edits(qtbot, window, monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(undo, "time", clock)
    rng = random.Random(34)
    settle(qtbot, window)
    states = [window.current_session()]

    def epsilon():
        window.mechanism_panel.set_values({"epsilon": rng.choice([0.1, 0.3, 2.0, 5.0])})

    def seed():
        window.mechanism_panel.seed.setValue(rng.randrange(1, 10_000))

    def kind():
        window.query_panel.select_kind(rng.choice(["count", "mean", "sum"]), "age")

    def bound():
        window.query_panel.upper_bound.setValue(rng.choice([60.0, 70.0, 80.0]))
        window.query_panel.emit_query()

    def plan():
        window.workspace.budget_view.add_requested.emit()

    edits = [epsilon, seed, kind, bound, plan]
    for _ in range(10):
        rng.choice(edits)()
        settle(qtbot, window)
        clock.offset += MERGE_SECONDS + 0.1  # beyond the merge window: every edit its own step
        shown = window.current_session()
        if recorded(shown) != recorded(states[-1]):
            states.append(shown)
    assert window.history.stack.count() == len(states) - 1 >= 6
    for expected in reversed(states[:-1]):
        window.undo_action.trigger()
        settle(qtbot, window)
        assert recorded(window.current_session()) == recorded(expected)
    assert window.last_error is None


def test_undo_of_opening_another_file_reopens_the_first_with_its_state(qtbot, window, tmp_path):
    settle(qtbot, window)
    window.mechanism_panel.set_values({"epsilon": 0.25})
    settle(qtbot, window)
    before = window.current_session()
    other = tmp_path / "small.csv"
    other.write_text("age,group\n" + "".join(f"{20 + i % 50},{'ab'[i % 2]}\n" for i in range(200)))
    window.open_file(other)
    qtbot.waitUntil(lambda: window.dataset is not None and window.dataset.path == other, timeout=60_000)
    settle(qtbot, window)
    assert window.undo_action.text().startswith("Undo: dataset ")
    assert window.undo_action.text().endswith("→ small.csv")
    window.undo_action.trigger()
    qtbot.waitUntil(lambda: window.dataset.path != other, timeout=60_000)
    settle(qtbot, window)
    assert recorded(window.current_session()) == recorded(before)
    assert window.mechanism_panel.values()["epsilon"] == 0.25
    window.redo_action.trigger()
    qtbot.waitUntil(lambda: window.dataset.path == other, timeout=60_000)
    settle(qtbot, window)
    assert window.last_error is None
