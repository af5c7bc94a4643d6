"""CurveSet: a plot that once had nothing to show (its range fixed at [0, 1] for the note)
fits its next curves. The render audit found the Accuracy tab's 'How likely is an error larger
than α?' stuck at [0, 1] after a query with no accuracy curves (MST's), its ±270 interval line
and label outside the plot."""

from __future__ import annotations

import numpy as np

from dpexplorer.core.mechanisms.base import Curve
from dpexplorer.gui.views.base import CurveSet, new_plot


def test_curves_after_an_empty_draw_are_in_view(qtbot):
    plot = new_plot("α", "β")
    qtbot.addWidget(plot)
    plot.resize(400, 300)
    plot.show()
    curves = CurveSet(plot)
    curves.draw((), empty="nothing to show")
    alpha = np.linspace(0.0, 1200.0, 50)
    curves.draw((Curve(alpha, np.exp(-alpha / 270), "α", "β", "tail"),))
    qtbot.wait(10)
    (x_low, x_high), (y_low, y_high) = plot.getViewBox().viewRange()
    assert x_low <= 0.0 and x_high >= 1200.0
    assert y_low <= 0.0 and y_high >= 1.0
