"""Items that span a whole plot (shaded bands, labelled rules), drawn by Qt alone.

pyqtgraph's LinearRegionItem and InfiniteLine run Python bounding-rect, paint and label code
at every move and view change (an InfiniteLine with its label: about 0.4 ms per move). These
are QGraphicsPathItems whose path the owner rebuilds, in a few lines of Python, when the view
range changes (:meth:`follow_view`); Qt paints them without calling back into Python."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QBrush, QColor, QPainterPath, QPen, QTransform
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPathItem, QGraphicsSimpleTextItem


class Spanning(QGraphicsPathItem):
    """A path over the visible part of a plot, placed along one data ``axis`` (0: x, 1: y)."""

    def __init__(self, plot: pg.PlotItem, axis: int) -> None:
        super().__init__()
        self._view = plot.getViewBox()
        self._axis = axis

    def follow_view(self) -> None:
        """Rebuild the path to the view's current range (called by the owner when it changes)."""
        raise NotImplementedError

    def extent(self) -> tuple[float, float] | None:
        """The span of what is drawn along ``axis``, if anything is."""
        raise NotImplementedError

    def dataBounds(
        self, axis: int, frac: float = 1.0, orthoRange: object = None
    ) -> tuple[float, float] | None:
        """For pyqtgraph's auto-range: :meth:`extent` on its axis, nothing on the other (there
        the item follows the view)."""
        return self.extent() if axis == self._axis else None


class Bands(Spanning):
    """Bands x0 ≤ x ≤ x1 from the bottom to the top of ``plot``, as one path of rectangles."""

    def __init__(self, plot: pg.PlotItem, brush: QBrush) -> None:
        super().__init__(plot, axis=0)
        self.setBrush(brush)
        self.setPen(pg.mkPen(None))
        self.setZValue(-10)
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

    def extent(self) -> tuple[float, float] | None:
        if not self._spans:
            return None
        return min(a for a, _ in self._spans), max(b for _, b in self._spans)


def _anchor_offset(label: QGraphicsSimpleTextItem, anchor: tuple[float, float]) -> QPointF:
    """The pixels that put the point ``anchor`` (fractions of its width and height) of
    ``label`` at its position."""
    size = label.boundingRect()
    return QPointF(-anchor[0] * size.width(), -anchor[1] * size.height())


class Rules(Spanning):
    """Lines across the whole of ``plot``, each with a fixed label: vertical at x = value
    (``vertical``), else horizontal at y = value.

    Each label sits at the fraction ``along`` of the visible length of its line, its point
    ``anchors[i]`` (fractions of the label's width and height, as pyqtgraph's TextItem; default
    its left middle) on the line.
    Labels are plain Qt text items that ignore the view's scaling, so the text never changes
    after construction and moving a line only moves its label."""

    def __init__(
        self,
        plot: pg.PlotItem,
        pen: QPen,
        labels: Sequence[str],
        *,
        vertical: bool,
        along: float,
        anchors: Sequence[tuple[float, float]] | None = None,
    ) -> None:
        super().__init__(plot, axis=0 if vertical else 1)
        self.setPen(pen)
        self._vertical = vertical
        self._along = along
        self._values: tuple[float, ...] = ()
        anchors = anchors or [(0.0, 0.5)] * len(labels)
        self._labels = [
            self._label(text, pen.color(), anchor) for text, anchor in zip(labels, anchors, strict=True)
        ]
        plot.addItem(self)

    def _label(self, text: str, color: QColor, anchor: tuple[float, float]) -> QGraphicsSimpleTextItem:
        label = QGraphicsSimpleTextItem(text, self)
        label.setBrush(color)
        label.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        # pixels, after the view's scaling is ignored; y grows downwards on screen
        offset = _anchor_offset(label, anchor)
        label.setTransform(QTransform.fromTranslate(offset.x(), offset.y()))
        label.setVisible(False)
        return label

    @property
    def values(self) -> tuple[float, ...]:
        return self._values

    def set_values(self, values: Sequence[float]) -> None:
        """One value per label: the lines' positions along the plot's x (vertical) or y axis."""
        if len(values) != len(self._labels):
            raise ValueError(f"{len(self._labels)} rules, {len(values)} values")
        self._values = tuple(float(v) for v in values)
        self.follow_view()

    def _spot(self, value: float, along: float, view_range: list[list[float]]) -> QPointF:
        """Where the label of the line at ``value`` sits, at the fraction ``along`` of it."""
        (left, right), (bottom, top) = view_range
        if self._vertical:
            return QPointF(value, bottom + along * (top - bottom))
        return QPointF(left + along * (right - left), value)

    def follow_view(self) -> None:
        """Rebuild the lines across the current view and move the labels along them."""
        view_range = self._view.viewRange()
        (left, right), (bottom, top) = view_range
        path = QPainterPath()
        for value, label in zip(self._values, self._labels, strict=False):
            if self._vertical:
                start, end = QPointF(value, bottom), QPointF(value, top)
            else:
                start, end = QPointF(left, value), QPointF(right, value)
            path.moveTo(start)
            path.lineTo(end)
            label.setPos(self._spot(value, self._along, view_range))
            label.setVisible(True)
        self.setPath(path)

    def extent(self) -> tuple[float, float] | None:
        return (min(self._values), max(self._values)) if self._values else None

    def place_labels(self, along: float, anchor: tuple[float, float]) -> None:
        """Move every label to the fraction ``along`` of its line, its point ``anchor`` on it
        (as in the constructor); for an owner keeping labels clear of other items."""
        self._along = along
        for label in self._labels:
            offset = _anchor_offset(label, anchor)
            label.setTransform(QTransform.fromTranslate(offset.x(), offset.y()))
        self.follow_view()

    def label_rects_at(self, along: float, anchor: tuple[float, float]) -> list[QRectF]:
        """The rectangles :meth:`label_rects` would give after ``place_labels(along, anchor)``,
        without moving anything: for an owner trying places (each move rebuilt the path)."""
        view_range = self._view.viewRange()
        rects = []
        for value, label in zip(self._values, self._labels, strict=False):
            spot = self.mapToScene(self._spot(value, along, view_range)) + _anchor_offset(label, anchor)
            rects.append(QRectF(spot, label.boundingRect().size()))
        return rects

    def label_width(self) -> float:
        """The widest label's width in pixels."""
        return max((label.boundingRect().width() for label in self._labels), default=0.0)

    def label_rects(self) -> list[QRectF]:
        """The shown labels' rectangles in scene coordinates (pixels of the plot's canvas): the
        label's position on its line, moved by its anchor's offset, at its size on screen."""
        rects = []
        for label in self._labels:
            if label.isVisible():
                offset = label.transform().map(QPointF(0.0, 0.0))
                size = label.boundingRect()
                # the label's position is in this item's (data) coordinates; its offset and size
                # are pixels (it ignores the view's scaling, so its own scenePos is not usable)
                rects.append(QRectF(self.mapToScene(label.pos()) + offset, size.size()))
        return rects
