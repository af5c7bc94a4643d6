"""Controls built from Param declarations: the GUI never lays out a mechanism by hand.

A number gets a slider (logarithmic where the declaration says so) beside a text field that
accepts any value in the declared range, even beyond the slider's span; a choice gets a combo
box, a flag a check box. Tooltips are the declaration's help text; an invalid entry is
explained under the control and never reaches the computation."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.params import Param
from dpexplorer.gui import palette

SLIDER_STEPS = 1000


def format_value(param: Param, value: Any) -> str:
    if param.type == "int":
        return str(int(value))
    if param.type == "float":
        return f"{float(value):.4g}"
    return str(value)


def _typed_number(text: str) -> float | str:
    """What was typed, as a float when it reads as one (validation refuses text that does not)."""
    try:
        return float(text.strip())
    except ValueError:
        return text.strip()


class ParamControl(QWidget):
    """One parameter's editor. ``changed`` carries a valid value only."""

    changed = Signal(object)

    def __init__(self, param: Param, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.param = param
        self._value: Any = param.default
        self.setToolTip(_tooltip(param))
        self.error = QLabel()
        self.error.setStyleSheet(f"color: {palette.css(palette.ERROR_TEXT)};")
        self.error.setWordWrap(True)
        self.error.hide()

    def _lay_out(self, *parts: QWidget | QHBoxLayout, error: bool = True) -> None:
        """``parts`` one above the other, then the error line (unless not ``error``), edge to edge."""
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for part in parts:
            if isinstance(part, QWidget):
                layout.addWidget(part)
            else:
                layout.addLayout(part)
        if error:
            layout.addWidget(self.error)

    def _described(self, widget: QWidget, part: str = "") -> None:
        """``widget`` with the control's tooltip and the declaration's accessible name."""
        widget.setToolTip(self.toolTip())
        name_from_declaration(widget, self.param, part)

    def value(self) -> Any:
        return self._value

    def set_value(self, value: Any) -> None:
        """Set without emitting ``changed`` (used when loading a session)."""
        self._value = self.param.validate(value)
        self._show(self._value)

    def _show(self, value: Any) -> None:
        raise NotImplementedError

    def _accept(self, value: Any) -> None:
        try:
            checked = self.param.validate(value)
        except InvalidParameterError as exc:
            self.error.setText(str(exc))
            self.error.show()
            return
        self.error.hide()
        self._show(checked)
        if checked != self._value:
            self._value = checked
            self.changed.emit(checked)


def name_from_declaration(widget: QWidget, param: Param, part: str = "") -> None:
    """The accessible name (the declaration's label, and unit; ``part`` when a parameter has
    two controls) and description (its help text and allowed range) of ``widget``."""
    unit = f" ({param.unit})" if param.unit else ""
    widget.setAccessibleName(f"{param.label}{unit}" + (f", {part}" if part else ""))
    allowed = f" Allowed: {param.range_text()}." if param.type in ("float", "int") else ""
    widget.setAccessibleDescription(f"{param.help}{allowed}")


def _tooltip(param: Param) -> str:
    unit = f" ({param.unit})" if param.unit else ""
    allowed = f"Allowed: {param.range_text()}." if param.type in ("float", "int") else ""
    return f"<b>{param.label}</b>{unit}<br>{param.help}<br><i>{allowed}</i>"


class NumberControl(ParamControl):
    """Slider + text field for a float or int parameter."""

    def __init__(self, param: Param, parent: QWidget | None = None) -> None:
        super().__init__(param, parent)
        self.low, self.high = param.slider_span()
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.field = QLineEdit()
        self.field.setMaximumWidth(90)
        self._described(self.slider, "slider")
        self._described(self.field, "value")
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.slider, 1)
        row.addWidget(self.field)
        self._lay_out(row)
        self._show(param.default)
        self.slider.valueChanged.connect(self._slider_moved)
        self.field.editingFinished.connect(lambda: self._accept(_typed_number(self.field.text())))

    def position_of(self, value: float) -> int:
        """Slider position of ``value`` (clamped to the slider's span)."""
        if self.param.log_scale:
            fraction = (math.log10(max(value, self.low)) - math.log10(self.low)) / (
                math.log10(self.high) - math.log10(self.low)
            )
        else:
            fraction = (value - self.low) / (self.high - self.low)
        return round(min(max(fraction, 0.0), 1.0) * SLIDER_STEPS)

    def value_at(self, position: int) -> float:
        """Parameter value at slider ``position`` (rounded to 3 significant digits)."""
        fraction = position / SLIDER_STEPS
        if self.param.log_scale:
            exponent = math.log10(self.low) + fraction * (math.log10(self.high) - math.log10(self.low))
            value = float(f"{10**exponent:.3g}")
        else:
            value = self.low + fraction * (self.high - self.low)
            value = float(f"{value:.4g}")
        return round(value) if self.param.type == "int" else value

    def _slider_moved(self, position: int) -> None:
        value = self.value_at(position)
        self.field.setText(format_value(self.param, value))
        self._accept(value)

    def _show(self, value: Any) -> None:
        with QSignalBlocker(self.slider):
            self.slider.setValue(self.position_of(float(value)))
        self.field.setText(format_value(self.param, value))


class ChoiceControl(ParamControl):
    def __init__(self, param: Param, parent: QWidget | None = None) -> None:
        super().__init__(param, parent)
        self.combo = QComboBox()
        self.combo.addItems(list(param.choices))
        self._described(self.combo)
        self._lay_out(self.combo)
        self._show(param.default)
        self.combo.currentTextChanged.connect(self._accept)

    def _show(self, value: Any) -> None:
        with QSignalBlocker(self.combo):
            self.combo.setCurrentText(str(value))


class FlagControl(ParamControl):
    def __init__(self, param: Param, parent: QWidget | None = None) -> None:
        super().__init__(param, parent)
        self.box = QCheckBox(param.label)
        self._described(self.box)
        self._lay_out(self.box, error=False)
        self._show(param.default)
        self.box.toggled.connect(self._accept)

    def _show(self, value: Any) -> None:
        with QSignalBlocker(self.box):
            self.box.setChecked(bool(value))


def make_control(param: Param) -> ParamControl:
    if param.type in ("float", "int"):
        return NumberControl(param)
    if param.type == "choice":
        return ChoiceControl(param)
    return FlagControl(param)


class ParamPanel(QWidget):
    """A form of controls for a tuple of declarations; ``changed`` carries all current values."""

    changed = Signal(dict)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.form = QFormLayout(self)
        self.form.setContentsMargins(0, 0, 0, 0)
        self.controls: dict[str, ParamControl] = {}

    def build(self, params: tuple[Param, ...], values: Mapping[str, Any] | None = None) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.controls = {}
        for param in params:
            control = make_control(param)
            if values and param.name in values:
                control.set_value(values[param.name])
            control.changed.connect(lambda _v: self.changed.emit(self.values()))
            self.controls[param.name] = control
            label = QLabel("" if param.type == "bool" else param.label)
            label.setToolTip(control.toolTip())
            self.form.addRow(label, control)

    def values(self) -> dict[str, Any]:
        return {name: control.value() for name, control in self.controls.items()}

    def set_values(self, values: Mapping[str, Any]) -> None:
        for name, value in values.items():
            if name in self.controls:
                self.controls[name].set_value(value)
