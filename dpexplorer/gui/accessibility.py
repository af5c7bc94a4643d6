"""Accessible names and descriptions for the window's controls, and what counts as one.

A screen reader announces a control by its accessible name. Controls built from a parameter
declaration are named from it (gui/param_controls.py: the declaration's label, its help text as
the description). Every other control is named here from what a sighted user reads beside it:
its own text (a button, a check box), the label of its row in a form, or its tooltip; its
description is its tooltip's text. :func:`name_controls` never overwrites a name set on purpose.

Guarantee: after :func:`name_controls` (root), every visible :data:`INPUT_TYPES` widget under
``root`` has a non-empty accessible name (tests/gui/test_accessibility.py walks the window).
"""

from __future__ import annotations

import html
import re

from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QScrollBar,
    QTabBar,
    QWidget,
)

INPUT_TYPES = (
    QAbstractButton,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QLineEdit,
    QAbstractItemView,
    QTabBar,
)
"""The widgets a user operates (and that a screen reader must name)."""

_TAGS = re.compile(r"<[^>]+>")


def plain(text: str) -> str:
    """Rich text as one line of plain text (tags dropped, entities decoded, spaces collapsed)."""
    text = re.sub(r"<br\s*/?>", " ", text, flags=re.IGNORECASE)
    return " ".join(html.unescape(_TAGS.sub("", text)).split())


def _first_sentence(text: str, limit: int = 60) -> str:
    sentence = re.split(r"(?<=[.:;])\s", text, maxsplit=1)[0].rstrip(".:;")
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def _form_label(widget: QWidget) -> str:
    """The text of the label beside ``widget`` (or beside the row holding it) in a form."""
    child: QWidget | None = widget
    while child is not None:
        parent = child.parentWidget()
        layout = parent.layout() if parent is not None else None
        if isinstance(layout, QFormLayout):
            label = layout.labelForField(child)
            if isinstance(label, QLabel) and plain(label.text()):
                return plain(label.text()).rstrip(":")
        if isinstance(parent, QGroupBox) or parent is None or parent.isWindow():
            return ""
        child = parent
    return ""


def _buddy_label(widget: QWidget) -> str:
    for label in (widget.parentWidget() or widget).findChildren(QLabel):
        if label.buddy() is widget and plain(label.text()):
            return plain(label.text()).replace("&", "").rstrip(":")
    return ""


def name_for(widget: QWidget) -> str:
    """A name from what is shown with ``widget``: its text, its form label, its tooltip."""
    if isinstance(widget, QAbstractButton) and plain(widget.text()).replace("&", ""):
        return plain(widget.text()).replace("&", "")
    label = _buddy_label(widget) or _form_label(widget)
    if label:
        return label
    tip = plain(widget.toolTip())
    if tip:
        return _first_sentence(tip)
    if isinstance(widget, QLineEdit) and widget.placeholderText():
        return widget.placeholderText()
    if isinstance(widget, QTabBar):
        return "Views"
    return ""


def _owner_name(widget: QWidget) -> str:
    """For a part of a composite control (a labelled range slider's slider and value fields):
    the composite's name, and which part."""
    part = "value" if isinstance(widget, (QAbstractSpinBox, QLineEdit)) else "slider"
    parent = widget.parentWidget()
    for _ in range(2):
        if parent is None:
            return ""
        owner = parent.accessibleName() or name_for(parent)
        if owner:
            return f"{owner}, {part}"
        parent = parent.parentWidget()
    return ""


def internal(widget: QWidget) -> bool:
    """A part of another control (a spin box's text field, a combo box's list, a tab bar's
    scroll arrows, a scroll bar, a dock's title buttons): named and reached through its owner."""
    if isinstance(widget, QScrollBar) or widget.objectName().startswith("qt_"):
        return True
    parent = widget.parentWidget()
    for _ in range(3):
        if parent is None:
            return False
        if isinstance(parent, (QAbstractSpinBox, QComboBox, QTabBar, QScrollBar, QAbstractItemView)):
            return True
        parent = parent.parentWidget()
    return False


def controls(root: QWidget) -> list[QWidget]:
    """The input controls under ``root`` (their parts excluded)."""
    window = root.window()  # not a popup's (a combo box's list is a window of its own)
    return [
        w
        for w in root.findChildren(QWidget)
        if isinstance(w, INPUT_TYPES) and w.window() is window and not internal(w)
    ]


def name_controls(root: QWidget) -> list[QWidget]:
    """Give every input control under ``root`` that has none an accessible name and
    description; returns those still without a name (nothing to name them from)."""
    unnamed = []
    for widget in controls(root):
        if not widget.accessibleName():
            name = name_for(widget) or _owner_name(widget)
            if name:
                widget.setAccessibleName(name)
            else:
                unnamed.append(widget)
        if not widget.accessibleDescription():
            tip = plain(widget.toolTip())
            if tip and tip != widget.accessibleName():
                widget.setAccessibleDescription(tip)
    return unnamed
