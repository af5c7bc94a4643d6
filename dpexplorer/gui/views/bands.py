"""Shaded vertical bands over the whole height of a plot, drawn by Qt alone."""

from __future__ import annotations

from collections.abc import Iterable

import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QBrush, QPainterPath
from PySide6.QtWidgets import QGraphicsPathItem


class Bands(QGraphicsPathItem):
    """Bands x0 ≤ x ≤ x1 from the bottom to the top of ``plot``, as one path of rectangles.

    pyqtgraph's LinearRegionItem does this per band with two InfiniteLines and Python paint and
    bounding-rect code that runs at every view change; a path item is painted by Qt without
    calling Python. The owner calls :meth:`follow_view` when the plot's y range changes."""

    def __init__(self, plot: pg.PlotItem, brush: QBrush) -> None:
        super().__init__()
        self.setBrush(brush)
        self.setPen(pg.mkPen(None))
        self.setZValue(-10)
        self._view = plot.getViewBox()
        self._spans: tuple[tuple[float, float], ...] = ()
        plot.addItem(self)

    @property
    def spans(self) -> tuple[tuple[float, float], ...]:
        return self._spans

    def set_spans(self, spans: Iterable[tuple[float, float]]) -> None:
        self._spans = tuple((float(a), float(b)) for a, b in spans)
        self.follow_view()

    def follow_view(self) -> None:
        """Rebuild the rectangles to the plot's current y range."""
        low, high = self._view.viewRange()[1]
        path = QPainterPath()
        for start, end in self._spans:
            path.addRect(QRectF(start, low, end - start, high - low))
        self.setPath(path)
