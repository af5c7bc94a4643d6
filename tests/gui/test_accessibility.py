"""Accessibility (issue 34): every control has an accessible name (parameter controls from
their declarations) and every enabled control is reached by Tab."""

from __future__ import annotations

from conftest import wait_idle
from PySide6.QtWidgets import QApplication

from dpexplorer.gui.accessibility import INPUT_TYPES, controls, plain


def _visit_every_tab(qtbot, window) -> None:
    for i in range(window.tabs.count()):
        window.tabs.setCurrentIndex(i)
        wait_idle(qtbot, window)
    window.tabs.setCurrentIndex(0)
    wait_idle(qtbot, window)


def test_parameter_controls_are_named_from_their_declarations(qtbot, window):
    control = window.mechanism_panel.params.controls["epsilon"]
    assert control.slider.accessibleName() == "ε (epsilon), slider"
    assert control.field.accessibleName() == "ε (epsilon), value"
    assert control.param.help.split(".")[0] in control.field.accessibleDescription()
    window.mechanism_panel.select("gaussian")
    wait_idle(qtbot, window)
    delta = window.mechanism_panel.params.controls["delta"]
    assert delta.field.accessibleName().startswith(delta.param.label)


def test_no_control_in_the_window_is_unnamed(qtbot, window):
    _visit_every_tab(qtbot, window)
    window.query_panel.select_kind("group_mean")  # the group-by controls, shown
    wait_idle(qtbot, window)
    found = controls(window)
    assert len(found) > 40
    unnamed = [
        f"{type(w).__name__} {w.objectName()!r} {plain(w.toolTip())[:40]!r}"
        for w in found
        if not w.accessibleName()
    ]
    assert not unnamed


def _reached(widget, reached) -> bool:
    """Reached itself, or a composite control (a labelled range slider) one of whose parts is:
    its value labels are the slider's handles shown as numbers, moved with the arrow keys."""
    parent = widget.parentWidget()
    composite = parent if isinstance(parent, INPUT_TYPES) else widget
    return any(r is widget or composite.isAncestorOf(r) for r in reached)


def test_tab_reaches_every_enabled_control(qtbot, window):
    for index in range(window.tabs.count()):
        window.tabs.setCurrentIndex(index)
        wait_idle(qtbot, window)
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow)
        window.query_panel.kind.setFocus()
        qtbot.waitUntil(lambda: QApplication.focusWidget() is window.query_panel.kind)
        reached = []
        for _ in range(400):
            window.focusNextChild()
            widget = QApplication.focusWidget()
            if widget is window.query_panel.kind:
                break
            reached.append(widget)
        shown = [w for w in controls(window) if w.isVisible() and w.isEnabled()]
        missed = [
            f"{type(w).__name__} {w.accessibleName()!r}"
            for w in shown
            if w is not window.query_panel.kind and not _reached(w, reached)
        ]
        assert not missed, (window.tabs.tabText(index), missed)
