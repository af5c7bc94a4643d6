"""The render audit's checks: structural tests of what a tab shows, offscreen.

Each check takes a widget that is on screen (after its computations are in and painted) and
returns a list of problems in words, empty when the tab reads correctly:

- every plot has data, or the view says why not (a visible message);
- no axis has tick labels that overlap, and every numeric axis of a plot with data shows at
  least two (one label alone gives no scale: pyqtgraph drops the labels that do not fit);
- no label, plot title, axis label or line label is cut off, and every label on a line lies
  inside its plot's view box;
- no number shown is NaN or inf unless the words around it explain it.
"""

from __future__ import annotations

import html
import itertools
import re

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QGraphicsItem,
    QGraphicsSimpleTextItem,
    QLabel,
    QWidget,
)

from dpexplorer.gui.views.spanning import Spanning

RAW_NUMBER = re.compile(r"(?<![\w.])[-+]?(nan|inf)(?![\w])", re.IGNORECASE)
"""'nan', 'inf', '-inf' as printed by Python: a number that went wrong on its way to the screen."""
EXPLAINED = re.compile(r"infinite|undefined|unbounded|no finite|heavy tail|⊥", re.IGNORECASE)
"""Words that explain an infinite value where one is shown."""
TOLERANCE_PX = 1.0


def plain(text: str) -> str:
    """A label's text without markup, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


def _visible(widget: QWidget) -> bool:
    return widget.isVisible() and widget.width() > 0 and widget.height() > 0


def plot_items(root: QWidget) -> list[pg.PlotItem]:
    """The visible PlotItems under ``root`` (in PlotWidgets and GraphicsLayoutWidgets)."""
    found: list[pg.PlotItem] = []
    for view in root.findChildren(pg.GraphicsView):
        if not _visible(view):
            continue
        for item in view.scene().items():
            if isinstance(item, pg.PlotItem) and item.isVisible():
                found.append(item)
    return found


def _has_data(item: pg.GraphicsObject) -> bool:
    if isinstance(item, pg.PlotDataItem | pg.PlotCurveItem | pg.ScatterPlotItem):
        x, _ = item.getData()
        return x is not None and len(x) > 0
    if isinstance(item, pg.BarGraphItem):
        heights = np.atleast_1d(np.asarray(item.opts.get("height", 0.0), dtype=float))
        return bool(np.any(heights != 0))
    if isinstance(item, pg.ImageItem):
        return item.image is not None
    return False


def messages(root: QWidget) -> list[str]:
    """The text of the visible labels under ``root``."""
    return [plain(label.text()) for label in root.findChildren(QLabel) if _visible(label) and label.text()]


COLOURED = re.compile(r"(?<![-\w])color:\s*(rgb|#)")
"""A label's style sheet that colours its text (gui/palette.css writes #rrggbb; rgb(...) before)."""


def _says_why(root: QWidget, plot: pg.PlotItem) -> bool:
    """A sentence inside the plot, or a visible coloured message label (a refusal or error)."""
    for item in plot.items:
        if isinstance(item, pg.TextItem) and item.isVisible() and len(item.toPlainText()) >= 20:
            return True
    for label in root.findChildren(QLabel):
        if _visible(label) and label.text() and COLOURED.search(label.styleSheet()):
            return True
    return False


def empty_plots(root: QWidget) -> list[str]:
    problems = []
    for plot in plot_items(root):
        if not any(_has_data(item) and item.isVisible() for item in plot.items):
            title = plot.titleLabel.text or plot.getAxis("left").labelText or "untitled plot"
            if not _says_why(root, plot):
                problems.append(f"plot “{plain(title)}” has no data and nothing says why")
    return problems


def _text_rects(axis: pg.AxisItem) -> list[tuple[QRectF, str]]:
    image = QImage(4, 4, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    if specs is None:
        return []
    return [(rect, text) for rect, _flags, text in specs[2] if text]


def overlapping_ticks(root: QWidget) -> list[str]:
    problems = []
    for plot in plot_items(root):
        for side in ("left", "bottom"):
            axis = plot.getAxis(side)
            if not axis.isVisible() or not axis.style.get("showValues", True):
                continue
            rects = _text_rects(axis)
            for (a, ta), (b, tb) in itertools.combinations(rects, 2):
                overlap = a.intersected(b)
                if overlap.width() > TOLERANCE_PX and overlap.height() > TOLERANCE_PX:
                    problems.append(f"{side} axis ticks “{ta}” and “{tb}” overlap")
                    break
    return problems


def too_few_ticks(root: QWidget) -> list[str]:
    """Numeric axes (linear or log) of plots with data that show fewer than two tick labels.
    Category axes, whose names a view declares and leaves blank where they would collide
    (outcomes.readable_ticks), are not counted: a long name may fit under no bar."""
    problems = []
    for plot in plot_items(root):
        if not any(_has_data(item) and item.isVisible() for item in plot.items):
            continue
        for side in ("left", "bottom"):
            axis = plot.getAxis(side)
            if not axis.isVisible() or not axis.style.get("showValues", True):
                continue
            if getattr(axis, "_tickLevels", None) is not None and not axis.logMode:
                continue  # a category axis (names declared by the view)
            shown = [text for _rect, text in _text_rects(axis)]
            if len(shown) < 2:
                title = plain(plot.titleLabel.text or axis.labelText or "untitled plot")
                problems.append(f"{side} axis of “{title}” shows {len(shown)} tick label(s): {shown}")
    return problems


def _on_screen(item: QGraphicsItem) -> QRectF:
    """``item``'s rectangle in its view's pixels (right for items that ignore the view's scaling,
    whose scene rectangle is not where they are drawn)."""
    view = item.scene().views()[0]
    return item.deviceTransform(view.viewportTransform()).mapRect(item.boundingRect())


def _line_labels(plot: pg.PlotItem) -> list[tuple[QGraphicsItem, str]]:
    """The visible labels of the plot's lines: InfiniteLine labels and the spanning rules'."""
    found: list[tuple[QGraphicsItem, str]] = []
    for item in plot.items:
        if not item.isVisible():
            continue
        label = getattr(item, "label", None) if isinstance(item, pg.InfiniteLine) else None
        if label is not None and label.isVisible() and label.toPlainText().strip():
            found.append((label, label.toPlainText()))
        if isinstance(item, Spanning):
            for child in item.childItems():
                if isinstance(child, QGraphicsSimpleTextItem) and child.isVisible() and child.text().strip():
                    found.append((child, child.text()))
    return found


def _clipped_graphics(plot: pg.PlotItem) -> list[str]:
    problems = []
    title = plot.titleLabel
    if title.isVisible() and title.text:
        needed = title.item.boundingRect().width()
        if needed > plot.boundingRect().width() + TOLERANCE_PX:
            problems.append(f"plot title “{plain(title.text)}” is wider than its plot")
    for side, along in (("left", "height"), ("bottom", "width")):
        axis = plot.getAxis(side)
        if axis.isVisible() and axis.label.isVisible() and axis.labelText:
            needed = axis.label.boundingRect().width()
            room = getattr(axis.boundingRect(), along)() if side == "bottom" else axis.boundingRect().height()
            if needed > room + TOLERANCE_PX:
                problems.append(f"{side} axis label “{plain(axis.labelText)}” is longer than its axis")
    box = _on_screen(plot.getViewBox())
    for label, text in _line_labels(plot):
        rect = _on_screen(label)
        if not box.adjusted(-2, -2, 2, 2).contains(rect):
            problems.append(f"line label “{text}” runs out of its plot")
    return problems


def clipped_labels(root: QWidget) -> list[str]:
    problems = []
    for label in root.findChildren(QLabel):
        if not _visible(label) or not label.text() or label.wordWrap():
            continue
        if label.parent() is not None and isinstance(label.parent(), QComboBox | QAbstractButton):
            continue
        if label.sizeHint().width() > label.width() + TOLERANCE_PX:
            needed, has = label.sizeHint().width(), label.width()
            problems.append(f"label “{plain(label.text())[:60]}” is cut off ({needed} > {has} px)")
    for plot in plot_items(root):
        problems += _clipped_graphics(plot)
    return problems


def raw_numbers(root: QWidget) -> list[str]:
    problems = []
    texts = messages(root)
    for plot in plot_items(root):
        for side in ("left", "bottom"):
            texts += [text for _rect, text in _text_rects(plot.getAxis(side))]
        for item in plot.items:
            if isinstance(item, pg.InfiniteLine) and getattr(item, "label", None) is not None:
                texts.append(item.label.toPlainText())
            if isinstance(item, pg.TextItem):
                texts.append(item.toPlainText())
    for text in texts:
        if RAW_NUMBER.search(text) and not EXPLAINED.search(text):
            problems.append(f"“{text[:80]}” shows NaN or inf without saying why")
    return problems


def audit(root: QWidget) -> list[str]:
    """Every check on ``root`` (a tab's page), problems first to last."""
    return (
        empty_plots(root)
        + overlapping_ticks(root)
        + too_few_ticks(root)
        + clipped_labels(root)
        + raw_numbers(root)
    )
