"""Controls built from Param declarations: log mapping, validation shown inline, no bad value
ever emitted."""

from __future__ import annotations

import math

import pytest

from dpexplorer.core.mechanisms.params import DELTA, EPSILON, Param
from dpexplorer.gui.param_controls import (
    SLIDER_STEPS,
    ChoiceControl,
    NumberControl,
    ParamPanel,
    make_control,
)


def test_log_slider_spans_the_declared_decades(qtbot):
    control = NumberControl(EPSILON)
    qtbot.addWidget(control)
    low, high = EPSILON.slider_span()
    assert math.isclose(control.value_at(0), low)
    assert math.isclose(control.value_at(SLIDER_STEPS), high)
    middle = control.value_at(SLIDER_STEPS // 2)
    assert math.isclose(middle, math.sqrt(low * high), rel_tol=0.01)


def test_moving_the_slider_emits_the_value_and_updates_the_field(qtbot):
    control = NumberControl(EPSILON)
    qtbot.addWidget(control)
    with qtbot.waitSignal(control.changed) as blocker:
        control.slider.setValue(SLIDER_STEPS)
    assert blocker.args == [EPSILON.slider_span()[1]]
    assert float(control.field.text()) == EPSILON.slider_span()[1]


def test_typed_invalid_value_is_explained_and_not_emitted(qtbot):
    control = NumberControl(DELTA)
    qtbot.addWidget(control)
    control.show()
    emitted: list[object] = []
    control.changed.connect(emitted.append)
    control.field.setText("1.5")
    control.field.editingFinished.emit()
    assert emitted == []
    assert control.error.isVisible() and "δ" in control.error.text()
    assert control.value() == DELTA.default
    control.field.setText("0.001")
    control.field.editingFinished.emit()
    assert emitted == [0.001] and not control.error.isVisible()


def test_typed_value_may_go_beyond_the_slider_span_within_the_range(qtbot):
    control = NumberControl(EPSILON)
    qtbot.addWidget(control)
    control.field.setText("15")
    control.field.editingFinished.emit()
    assert control.value() == 15.0
    assert control.slider.value() == SLIDER_STEPS


def test_panel_builds_one_control_per_declaration_with_help_as_tooltip(qtbot):
    choice = Param("noise", "Noise", "choice", "cauchy", "Which noise.", choices=("cauchy", "t"))
    panel = ParamPanel()
    qtbot.addWidget(panel)
    panel.build((EPSILON, DELTA, choice))
    assert set(panel.controls) == {"epsilon", "delta", "noise"}
    assert EPSILON.help in panel.controls["epsilon"].toolTip()
    assert isinstance(panel.controls["noise"], ChoiceControl)
    assert panel.values() == {"epsilon": 1.0, "delta": 1e-6, "noise": "cauchy"}
    panel.set_values({"epsilon": 0.5, "noise": "t"})
    assert panel.values()["epsilon"] == 0.5 and panel.values()["noise"] == "t"


def test_int_and_bool_declarations(qtbot):
    k = Param("k", "k", "int", 3, "How many.", low=1, high=10)
    flag = Param("monotone", "Monotone", "bool", False, "Is it.")
    int_control, flag_control = make_control(k), make_control(flag)
    qtbot.addWidget(int_control)
    qtbot.addWidget(flag_control)
    int_control.field.setText("2.5")
    int_control.field.editingFinished.emit()
    assert int_control.value() == 3 and "whole number" in int_control.error.text()
    with pytest.raises(ValueError):
        int_control.set_value(11)
