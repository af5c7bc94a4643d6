"""At the window's narrowest size in teaching mode the neighbouring-datasets view's two plots are
short: each left axis says its short title there ("density", "loss") where the full one would
run past its plot, and the two rotated titles never meet (they read "privacy lossprobability
density" before); at a roomy size they keep their full titles."""

from __future__ import annotations

from conftest import wait_idle
from PySide6.QtCore import QSize


def _titles(view):
    """(text, scene rectangle of the rotated title, the plot's scene rectangle) of both axes."""
    out = []
    for plot in (view.outputs, view.loss):
        label = plot.getAxis("left").label
        out.append(
            (
                plot.getAxis("left").labelText,
                label.mapRectToScene(label.boundingRect()),
                plot.sceneBoundingRect(),
            )
        )
    return out


def test_the_left_axis_titles_fit_their_plots_and_do_not_meet(qtbot, window):
    view = window.explorer.neighbours_view
    window.teaching_action.setChecked(True)
    window.resize(QSize(window.minimumSizeHint().width(), 720))
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: view.loss.getViewBox().height() > 0, timeout=10_000)
    (density, top, top_plot), (loss, bottom, bottom_plot) = _titles(view)
    assert (density, loss) == ("density", "loss"), "the plots are short here"
    assert not top.intersects(bottom), (top, bottom)
    assert top_plot.top() <= top.top() and top.bottom() <= top_plot.bottom()
    assert bottom_plot.top() <= bottom.top() and bottom.bottom() <= bottom_plot.bottom()
    window.teaching_action.setChecked(False)
    window.resize(QSize(1400, 1000))
    qtbot.waitUntil(lambda: view.outputs.getAxis("left").labelText == "probability density", timeout=10_000)
    assert view.loss.getAxis("left").labelText.startswith("privacy loss")


def test_a_selection_keeps_its_own_axis_title_through_a_resize(qtbot, window):
    """The outputs axis of a selection says what its bars are (not a density), at any size."""
    view = window.explorer.neighbours_view
    window.query_panel.select_kind("argmax", "occupation")
    wait_idle(qtbot, window)
    axis = view.outputs.getAxis("left")
    assert axis.labelText == "probability of being selected"
    window.teaching_action.setChecked(True)
    window.resize(QSize(window.minimumSizeHint().width(), 720))
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: view.outputs.getViewBox().height() < 300, timeout=10_000)
    assert axis.labelText in ("probability of being selected", "probability")
    window.teaching_action.setChecked(False)
    window.resize(QSize(1400, 1000))
    qtbot.waitUntil(lambda: axis.labelText == "probability of being selected", timeout=10_000)
