"""A view: a title bar with a Save button over one or more pyqtgraph plots."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from dpexplorer.core.mechanisms.base import Curve
from dpexplorer.gui.plot_export import SAVE_FILTER, save_plot

pg.setConfigOptions(antialias=True, background="w", foreground="k")

BLUE = (31, 119, 180)
ORANGE = (255, 127, 14)
RED = (214, 39, 40)
GREY = (120, 120, 120)
PURPLE = (148, 103, 189)
GREEN = (44, 160, 44)
PALETTE = (BLUE, ORANGE, GREEN, PURPLE, RED, GREY)
_LINE_STYLES = {
    "exact": Qt.PenStyle.SolidLine,
    "bound": Qt.PenStyle.DashLine,
    "monte_carlo": Qt.PenStyle.DotLine,
}


class View(QWidget):
    """Base of the views: a header (title, explanation, Save…) and a body of plots.

    Subclasses fill ``self.body`` and keep ``self.columns`` (the CSV of what is drawn)."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.columns: dict[str, Sequence[object]] = {}
        self.title = QLabel(f"<b>{title}</b>")
        self.explanation = QLabel()
        self.explanation.setWordWrap(True)
        self.save_button = QPushButton("Save plot…")
        self.save_button.setToolTip("Save this view as PNG or SVG, or its data as CSV")
        self.save_button.clicked.connect(self._save_dialog)
        header = QHBoxLayout()
        header.addWidget(self.title)
        header.addStretch(1)
        header.addWidget(self.save_button)
        self.body = QVBoxLayout()
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.explanation)
        layout.addLayout(self.body, 1)
        self.generation = 0
        self._pending: object | None = None

    @staticmethod
    def set_text(label: QLabel, text: str) -> None:
        """``label.setText(text)`` unless it already shows it: a new rich text re-lays out the
        window (about 10 ms a frame while a slider moves)."""
        if label.text() != text:
            label.setText(text)

    def deliver(self, result: object) -> None:
        """Draw ``result`` now if the view is on screen, else when it is next shown: a hidden
        tab costs the main thread nothing while sliders move."""
        if self.isVisible():
            self._pending = None
            self.show_result(result)  # type: ignore[attr-defined]
        else:
            self._pending = result

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._pending is not None:
            result, self._pending = self._pending, None
            self.show_result(result)  # type: ignore[attr-defined]

    def plot_area(self) -> QWidget:
        """The widget whose picture is saved (the plots without the header)."""
        return self

    def save(self, path: str | Path) -> Path:
        return save_plot(self.plot_area(), self.columns, path)

    def _save_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save plot", "", SAVE_FILTER)
        if path:
            self.save(path)


def new_plot(x_label: str, y_label: str, title: str = "", grid: bool = True) -> pg.PlotWidget:
    """A plot with axis labels and a legend; ``grid=False`` for plots redrawn at every slider
    step (grid lines are a third of a plot's paint time)."""
    plot = pg.PlotWidget(title=title or None)
    plot.setLabel("bottom", x_label)
    plot.setLabel("left", y_label)
    if grid:
        plot.showGrid(x=True, y=True, alpha=0.2)
    plot.addLegend(offset=(-10, 10))
    return plot


def draw_curves(
    plot: pg.PlotWidget, curves: Sequence[Curve], *, log_x: bool = False, log_y: bool = False
) -> None:
    """Draw named curves (exact solid, bounds dashed, Monte-Carlo dotted); the axes are named
    after the first curve."""
    plot.setLogMode(x=log_x, y=log_y)
    if curves:
        scale = " (log scale)"
        plot.setLabel("bottom", curves[0].x_label + (scale if log_x else ""))
        plot.setLabel("left", curves[0].y_label + (scale if log_y else ""))
    for i, curve in enumerate(curves):
        x = np.asarray(curve.x, dtype=float)
        y = np.asarray(curve.y, dtype=float)
        pen = pg.mkPen(PALETTE[i % len(PALETTE)], width=2, style=_LINE_STYLES[curve.kind])
        plot.plot(x, y, pen=pen, name=f"{curve.name} ({curve.kind.replace('_', ' ')})")


def curve_columns(curves: Sequence[Curve]) -> dict[str, Sequence[object]]:
    columns: dict[str, Sequence[object]] = {}
    for curve in curves:
        columns[f"{curve.name}: {curve.x_label}"] = list(np.asarray(curve.x, dtype=float))
        columns[f"{curve.name}: {curve.y_label}"] = list(np.asarray(curve.y, dtype=float))
    return columns
