"""The query panel's small widgets: combo boxes that keep their text readable at teaching mode's
font, a condition ``[not] column op value`` for counting the rows that match, and the set-up of a
number box declared in one call."""

from __future__ import annotations

from typing import Any, TypeVar

from PySide6.QtCore import QEvent, QSize
from PySide6.QtGui import QFocusEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLineEdit,
    QSpinBox,
    QStyle,
    QStyleOptionComboBox,
    QWidget,
)

from dpexplorer.data import queries as q

OPS = ("==", "!=", "<", "<=", ">", ">=")
VALUE_WIDTH_TEXT = "YYYY-MM-DD"
"""A condition's value field is at least this wide (the date hint), at the current font."""
SHORT_COMBO_CHARACTERS = 12
"""Characters a long combo (statistic, groups, privacy unit, column) shows at least: narrower
than its longest item, whose text it then elides (its list shows every item whole), so that
teaching mode's font does not push the controls past the side panel at 1280 x 720."""


class WholeCombo(QComboBox):
    """A combo box never narrower than its longest item at its current font (never elided).
    QComboBox's own minimum stays the one of its first show: after teaching mode enlarged the
    font, '==' showed as '=:' and 'add or remove one person' lost its last letters."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model().rowsInserted.connect(self._fit)
        self.model().rowsRemoved.connect(self._fit)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit()

    def _fit(self) -> None:
        metrics = self.fontMetrics()
        text = max((metrics.horizontalAdvance(self.itemText(i)) for i in range(self.count())), default=0)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        size = self.style().sizeFromContents(
            QStyle.ContentsType.CT_ComboBox, option, QSize(text, metrics.height()), self
        )
        self.setMinimumWidth(size.width())


def shortened(combo: QComboBox, characters: int = SHORT_COMBO_CHARACTERS) -> QComboBox:
    """``combo``, asking for room for ``characters`` characters rather than its longest item."""
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(characters)
    return combo


def typed_value(text: str) -> Any:
    """A condition's value on a numeric column: the number ``text`` reads as (an int when it has
    no decimal point), else the text itself."""
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() and "." not in text else value


class HeadFirstLineEdit(QLineEdit):
    """A line edit that, when not being edited, shows the start of a value too long for it: a
    value set by the program (a default, a session, a lesson) or left by the person reads
    'Amer-Indian-Es', not 'dian-Eskimo' (QLineEdit keeps the cursor, and so the view, at the
    end)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.textChanged.connect(self._home_unless_editing)

    def _home_unless_editing(self) -> None:
        if not self.hasFocus():
            self.setCursorPosition(0)

    def focusOutEvent(self, event: QFocusEvent) -> None:
        super().focusOutEvent(event)
        self.setCursorPosition(0)


class ConditionRow(QWidget):
    """``[not] column op value`` for the predicate builder. The operator is never elided (at
    teaching mode's font in a narrow panel '==' showed as '=:') and the value field is at least
    as wide as a date at the current font; the column's name gives way first."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.negate = QCheckBox("not")
        self.column = shortened(QComboBox(), 8)
        self.op = WholeCombo()
        self.op.addItems(OPS)
        self.value = HeadFirstLineEdit()
        for widget, name in ((self.negate, "Condition: not"), (self.column, "Condition column")):
            widget.setAccessibleName(name)
        self.op.setAccessibleName("Condition operator")
        self.value.setAccessibleName("Condition value")
        self._fit_value()
        self.kinds: dict[str, str] = {}
        self.column.currentTextChanged.connect(self._hint)
        self._hint()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for w, stretch in ((self.negate, 0), (self.column, 1), (self.op, 0), (self.value, 2)):
            layout.addWidget(w, stretch)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.FontChange:  # teaching mode enlarges the font
            self._fit_value()
        super().changeEvent(event)

    def _fit_value(self) -> None:
        margins = self.value.textMargins()
        frame = 2 * self.value.style().pixelMetric(self.value.style().PixelMetric.PM_DefaultFrameWidth)
        text = self.value.fontMetrics().horizontalAdvance(VALUE_WIDTH_TEXT)
        # + 8: QLineEdit's own 2 px inner margin on each side, and a little air
        self.value.setMinimumWidth(text + margins.left() + margins.right() + frame + 8)

    def set_columns(self, kinds: dict[str, str]) -> None:
        """Offer the columns of ``kinds`` (name -> kind), without emitting a change."""
        self.kinds = kinds
        self.column.blockSignals(True)
        self.column.clear()
        self.column.addItems(list(kinds))
        self.column.blockSignals(False)
        self._hint()

    def _hint(self) -> None:
        """A date column is compared as dates, written year-month-day: say so in the field."""
        if self.kinds.get(self.column.currentText()) == "date":
            self.value.setPlaceholderText("YYYY-MM-DD")
            self.value.setToolTip("A date written year-month-day, e.g. 2021-03-01 (compared as dates)")
        else:
            self.value.setPlaceholderText("value")
            self.value.setToolTip("A number, or text compared as is (no quotes needed)")

    def predicate(self, kinds: dict[str, str]) -> q.Predicate | None:
        text = self.value.text().strip()
        if not text:
            return None
        column = self.column.currentText()
        value = typed_value(text) if kinds.get(column) == "numeric" else text
        pred: q.Predicate = q.Compare(column, self.op.currentText(), value)  # type: ignore[arg-type]
        return q.Not(pred) if self.negate.isChecked() else pred


Box = TypeVar("Box", QSpinBox, QDoubleSpinBox)


def number_box(
    box: Box,
    low: float,
    high: float,
    value: float | None = None,
    *,
    step: float | None = None,
    tooltip: str = "",
) -> Box:
    """``box`` with its range [low, high], then its value, step and tooltip when given."""
    box.setRange(low, high)  # type: ignore[arg-type]  # ints for a QSpinBox
    if step is not None:
        box.setSingleStep(step)  # type: ignore[arg-type]
    if value is not None:
        box.setValue(value)  # type: ignore[arg-type]
    if tooltip:
        box.setToolTip(tooltip)
    return box


def control_value(widget: QWidget, *, by_data: bool = False) -> Any:
    """A control's value as a session saves it: a combo's text (its item's key, as text, when
    ``by_data``), a line's text, a number box's number."""
    if isinstance(widget, QComboBox):
        return str(widget.currentData()) if by_data else widget.currentText()
    if isinstance(widget, QLineEdit):
        return widget.text()
    assert isinstance(widget, QSpinBox | QDoubleSpinBox)
    return widget.value()


def set_control_value(widget: QWidget, value: Any, *, by_data: bool = False) -> None:
    """Show ``value`` (as :func:`control_value` gave it) in ``widget``; a combo keeps its item
    when no item has that key."""
    if isinstance(widget, QComboBox):
        if not by_data:
            widget.setCurrentText(value)
        elif (index := widget.findData(value)) >= 0:
            widget.setCurrentIndex(index)
    elif isinstance(widget, QLineEdit):
        widget.setText(value)
    else:
        assert isinstance(widget, QSpinBox | QDoubleSpinBox)
        widget.setValue(value)
