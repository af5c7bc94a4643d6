"""A view: a title bar with a Save button over one or more pyqtgraph plots."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QBoxLayout,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.core.mechanisms.base import Curve
from dpexplorer.gui import palette
from dpexplorer.gui.plot_export import SAVE_FILTER, Column, save_plot
from dpexplorer.gui.views.live_text import LiveText

if TYPE_CHECKING:
    from dpexplorer.gui.views.run_controls import RunControls

pg.setConfigOptions(
    antialias=True,
    background=palette.colour(palette.PLOT_BACKGROUND),
    foreground=palette.colour(palette.PLOT_FOREGROUND),
)

# colour roles (gui/palette.py resolves them in the appearance in force)
BLUE = palette.D
ORANGE = palette.D_PRIME
RED = palette.ALERT
GREY = palette.NEUTRAL
PURPLE = palette.ACCENT
GREEN = palette.GOOD
PALETTE = palette.SERIES
_LINE_STYLES = {
    "exact": Qt.PenStyle.SolidLine,
    "bound": Qt.PenStyle.DashLine,
    "monte_carlo": Qt.PenStyle.DotLine,
}


class View(QWidget):
    """Base of the views: a header (title, explanation, Save…) and a body of plots.

    Subclasses fill ``self.body`` and keep ``self.columns`` (the CSV of what is drawn)."""

    explanations_shown = True
    """False in teaching mode (the teacher explains; the plots get the room): set by the window,
    applied by every view when it is built and when it is shown."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.columns: dict[str, Column] = {}
        self.title = QLabel(f"<b>{title}</b>")
        self.title.setWordWrap(True)  # wraps in a narrow window (teaching fonts) rather than widen it
        self.explanation = QLabel()
        self.explanation.setWordWrap(True)
        self.save_button = QPushButton("Save plot…")
        self.save_button.setToolTip("Save this view as PNG or SVG, or its data as CSV")
        self.save_button.clicked.connect(self._save_dialog)
        header = QHBoxLayout()
        header.addWidget(self.title, 1)
        header.addWidget(self.save_button)
        self.body = QVBoxLayout()
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.explanation)
        layout.addLayout(self.body, 1)
        self.explanation.setVisible(View.explanations_shown)
        self.generation = 0
        self._pending: object | None = None

    @staticmethod
    def set_text(label: QLabel | LiveText, text: str) -> None:
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
        # a view outside the window when teaching mode changed (a mechanism's own view waiting
        # for its tab) follows it when shown
        self.explanation.setVisible(View.explanations_shown)
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


def error_label() -> QLabel:
    """A red, word-wrapped, selectable label for messages from the core (shown as they are)."""
    label = QLabel()
    label.setWordWrap(True)
    label.setStyleSheet(f"color: {palette.css(RED)}")
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.hide()
    return label


def clear_and_show_error(view: Any, message: str, *plots: pg.PlotWidget) -> None:
    """A view's job failed: forget its result, clear its plots, summary and CSV, and show the
    core's message as it is (``view`` has ``result``, ``summary``, ``columns`` and ``error``)."""
    view.result = None
    for plot in plots:
        plot.clear()
        for side in ("left", "bottom"):  # the candidates' names belonged to the previous result
            plot.getAxis(side).setTicks(None)
    view.summary.clear()
    view.explanation.clear()  # it described the previous result's mechanism
    view.columns = {}
    view.error.setText(message)
    view.error.show()


def rich_label() -> LiveText:
    """A word-wrapped rich-text line for a view's summary (it changes with every slider step)."""
    return LiveText()


class ResultView(View):
    """A view of one job's result: an error line (the core's message, shown as it is when the
    job fails) and a summary in words above its plots. :meth:`show_error` forgets the result
    and clears the plots, summary, explanation and CSV; :meth:`start_result` readies them for a
    new result. ``explanation``: the header's text, when it does not change with the result."""

    def __init__(self, title: str, parent: QWidget | None = None, *, explanation: str = "") -> None:
        super().__init__(title, parent)
        if explanation:
            self.explanation.setText(explanation)
        self.error = error_label()
        self.summary = rich_label()
        self.result: Any = None
        self.result_plots: tuple[pg.PlotWidget, ...] = ()
        """The plots a failure or a new result clears (:meth:`place_plots` sets them)."""

    def place_plots(self, *plots: tuple[pg.PlotWidget, int], beside: bool = True) -> QBoxLayout:
        """The error line, the summary, then ``plots`` (each with its stretch) side by side, or
        one above the other when not ``beside``; returns the plots' layout."""
        self.body.addWidget(self.error)
        self.body.addWidget(self.summary)
        layout: QBoxLayout = QHBoxLayout() if beside else QVBoxLayout()
        for plot, stretch in plots:
            layout.addWidget(plot, stretch)
        self.body.addLayout(layout, 1)
        self.result_plots = tuple(plot for plot, _ in plots)
        return layout

    def show_error(self, message: str) -> None:
        """The job failed: see :func:`clear_and_show_error`."""
        clear_and_show_error(self, message, *self.result_plots)

    def start_result(self, result: object) -> None:
        """Keep ``result``, hide the last error and clear the plots, to draw ``result``."""
        self.result = result
        self.error.hide()
        for plot in self.result_plots:
            plot.clear()


class RunnerView(ResultView):
    """A result view that also runs a long job on request (gui/workspace.py's ``RUN_JOBS``).

    It emits :attr:`run_requested` when the user presses Run and :attr:`cancel_requested` on
    Cancel (already back to idle: a cancelled job reports nothing). The workspace binds its
    :attr:`controls` to the job (:meth:`~dpexplorer.gui.views.run_controls.RunControls.bind`:
    the job's progress and its cancellation by anyone, Esc included, reach them there) and
    answers with :meth:`run_started` (busy), then the job's result to ``show_result`` or its
    failure to :meth:`run_failed` (the message shown as it is, back to idle);
    :meth:`set_progress` (0 to 1) and :meth:`run_cancelled` (idle, nothing new shown) are for a
    caller that runs the job without binding. Subclasses implement the four and set
    :attr:`controls`."""

    run_requested = Signal()
    cancel_requested = Signal()
    controls: RunControls
    run_started: Callable[[], None]
    run_cancelled: Callable[[], None]
    run_failed: Callable[[str], None]
    set_progress: Callable[[float], None]


def dashed_line(
    color: tuple[int, int, int],
    label: str,
    position: float,
    *,
    pos: float = 0.0,
    angle: float = 90,
    width: int = 1,
    fill: object = None,
    side: int | None = None,
    anchor: tuple[float, float] | None = None,
) -> pg.InfiniteLine:
    """A dashed line at ``pos`` (vertical unless ``angle`` = 0) in ``color``, its ``label`` at
    ``position`` (0..1) along it; ``fill`` a background behind the label, ``side`` 0 or 1 puts
    the label right or left of a vertical line; ``anchor`` is the point of the label (fractions
    of its width and height) placed there, e.g. (1, 1) to keep it left of and above a point near
    a horizontal line's right end."""
    options: dict[str, object] = {"position": position, "color": palette.colour(color)}
    if fill is not None:
        options["fill"] = fill
    if side is not None:
        options["anchors"] = [(side, 0.5), (side, 0.5)]
    if anchor is not None:
        options["anchors"] = [anchor, anchor]
    pen = palette.pen(color, width, Qt.PenStyle.DashLine)
    return pg.InfiniteLine(pos=pos, angle=angle, pen=pen, label=label, labelOpts=options)


def marker_line(
    plot: pg.PlotWidget | pg.PlotItem,
    x: float,
    colour: tuple[int, int, int],
    label: str,
    position: float,
    side: int = 0,
    *,
    opacity: int = 210,
) -> None:
    """A thick dashed vertical line at ``x`` on ``plot``, its label at ``position`` (0..1) up
    the line, right of it (``side`` 0) or left (1), on the plot's background (``opacity``/255)."""
    fill = palette.colour(palette.PLOT_BACKGROUND, opacity)
    plot.addItem(dashed_line(colour, label, position, pos=x, width=2, fill=fill, side=side))


def keep_line_labels_inside(plot: pg.PlotWidget | pg.PlotItem) -> None:
    """Put each vertical line's label on the side of its line where it fits in the plot (right
    by default, left near the right edge), and slide each horizontal line's label along it until
    it is inside: a label past the edge is clipped. Call after the plot's range is set."""
    item = plot.getPlotItem() if isinstance(plot, pg.PlotWidget) else plot
    view = item.getViewBox()
    (low, high), _ = view.viewRange()
    per_unit = view.width() / (high - low) if high > low else 0.0
    for line in item.items:
        label = getattr(line, "label", None) if isinstance(line, pg.InfiniteLine) else None
        if label is None or per_unit <= 0:
            continue
        if line.angle % 180 == 0:  # horizontal: slide the label along its line until it fits
            share = label.boundingRect().width() / max(view.width(), 1.0)
            if share < 1.0:
                label.setPosition(min(max(label.orthoPos, share / 2 + 0.01), 0.99 - share / 2))
            continue
        if line.angle % 180 != 90:
            continue
        width = label.boundingRect().width() / per_unit
        x = float(line.value())
        right = x + width <= high or (high - x) >= (x - low)
        vertical = label.anchors[0][1] if label.anchors else 0.5
        label.anchors = [(0 if right else 1, vertical)] * 2
        label.updatePosition()


def new_plot(x_label: str, y_label: str, title: str = "") -> pg.PlotWidget:
    """A plot widget with axis labels, a grid and a legend (see :func:`configure_plot`)."""
    plot = pg.PlotWidget(title=title or None)
    configure_plot(plot.getPlotItem(), x_label, y_label)
    return plot


def configure_plot(plot: pg.PlotItem, x_label: str, y_label: str, *, live: bool = False) -> pg.PlotItem:
    """Axis labels and a legend. ``live`` plots are redrawn at every slider step: no grid
    (grid lines were a third of a plot's paint) and labelled ticks only (pyqtgraph regenerates
    an axis's ticks in Python whenever its range moves: 1.2-1.4 ms with two levels of minor
    ticks, 0.7-0.9 ms without)."""
    plot.setLabel("bottom", x_label)
    plot.setLabel("left", y_label)
    if not live:
        plot.showGrid(x=True, y=True, alpha=0.2)
    for side in ("top", "right"):  # hidden, but linked: each range change re-set their HTML
        plot.getAxis(side).enableAutoSIPrefix(False)
    for side in ("left", "bottom"):
        axis = plot.getAxis(side)
        axis.enableAutoSIPrefix(False)  # "(x0.001)" beside a label confused more than it helped
        axis.setStyle(maxTextLevel=1)  # no text on the finest ticks (they crowd a log axis)
        if live:
            axis.setStyle(maxTickLevel=0)
    plot.addLegend(offset=(-10, 10))
    palette.style_plot(plot)
    return plot


def legend_below(plot: pg.PlotWidget, columns: int = 1) -> pg.LegendItem:
    """Move the plot's legend out of its view box into a row under the bottom axis: it can
    never cover a curve (row 4 of the PlotItem's layout is free: title, top axis, view, bottom
    axis take rows 0-3). One column by default: two were wider than a plot at 1280 px with
    the clipping view's labels."""
    item = plot.getPlotItem()
    old = item.legend
    if old is not None and old.scene() is not None:
        old.scene().removeItem(old)  # from its view box too (LegendItem.setParentItem(None) raises)
    legend = pg.LegendItem(colCount=columns)
    item.layout.addItem(legend, 4, 1)
    item.legend = legend
    return legend


def set_axis_label(plot: pg.PlotWidget | pg.PlotItem, side: str, text: str) -> None:
    """``plot.setLabel(side, text)`` unless the axis already says it: a new label makes the axis
    lay out and repaint its ticks (1-1.5 ms a frame while a slider moves). The label is then
    centred again for its new length: pyqtgraph centres it only when the axis is resized, so a
    title shortened after the resize (``neighbours._fit_left_labels``) kept the old one's place
    and ran past its plot."""
    axis = plot.getAxis(side)
    if axis.labelText != text:
        plot.setLabel(side, text)
        axis.resizeEvent()


def sticky_range(
    current: tuple[float, float],
    low: float,
    high: float,
    *,
    fill: float = 0.6,
    margin: float = 0.08,
    grow_room: float = 0.15,
) -> tuple[float, float] | None:
    """The axis range to show data spanning [low, high], or None to keep ``current``: it is kept
    while it holds the data and the data fill at least ``fill`` of it, so a slider dragged in
    small steps does not rescale the axis (and regenerate its ticks) at every frame. A new
    range is the data's with ``margin`` of its span on each side, and ``grow_room`` more on a
    side where the data spilled out of a range they still overlap: data that grew during a
    drag tend to keep growing."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    if high <= low:
        low, high = low - 0.5, high + 0.5
    start, end = current
    if start <= low and high <= end and (high - low) >= fill * (end - start):
        return None
    span = high - low
    overlap = low < end and high > start  # the same data moving, not a first draw or a jump
    return (
        low - span * (margin + (grow_room if overlap and low < start else 0.0)),
        high + span * (margin + (grow_room if overlap and high > end else 0.0)),
    )


def fit_sticky(
    plot: pg.PlotItem,
    x: tuple[float, float] | None = None,
    y: tuple[float, float] | None = None,
    *,
    exact_x: bool = False,
) -> None:
    """Show the data spans ``x`` and ``y``, keeping each current range while it still fits
    (:func:`sticky_range`; ``exact_x``: x is shown as given), in one range change: each
    change makes every line, label and linked plot recompute its geometry. Ranges are set
    here rather than by pyqtgraph's auto-range, which asks every item for its bounds at
    each paint."""
    view = plot.getViewBox()
    current = view.viewRange()
    new = [
        None if span is None else sticky_range(tuple(current[axis]), *span)
        for axis, span in enumerate((x, y))
    ]
    if exact_x and x is not None:
        new[0] = None if np.allclose(current[0], x) else x
    if new[0] is not None or new[1] is not None:
        view.setRange(xRange=new[0], yRange=new[1], padding=0.0)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


MAX_LOG_LABELS = 7
"""Labelled ticks on a log axis at most: 10ⁿ labels are about 5 characters, and a plot's axis is
rarely shorter than 250 px, so seven never touch."""
_DECADE_STEPS = (1, 2, 3, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000)


def _power(k: int) -> str:
    return f"10{str(k).translate(_SUPERSCRIPT)}" if k not in (0, 1) else str(10**k)


def _multiple(m: int, k: int) -> str:
    """m·10ᵏ as a plain number near 1 (0.02 ... 500), else in powers of ten."""
    return f"{m * 10.0**k:g}" if -2 <= k <= 2 else f"{m}·{_power(k)}"


def log_ticks(
    arrays: Sequence[Sequence[float] | np.ndarray], max_labels: int = MAX_LOG_LABELS
) -> list[list[tuple[float, str]]] | None:
    """Ticks for a log axis (positions in log10 units, as pyqtgraph's log mode uses), whatever
    the span: at most ``max_labels`` labelled powers of ten, every ``step`` decades with step
    1, 2, 5, 10, ... (a 120-decade axis gets 10⁻¹²⁰, 10⁻¹⁰⁰, ...); unlabelled minor ticks at the
    other decades, or at 2..9·10ⁿ when every decade is labelled, with 2·10ⁿ and 5·10ⁿ labelled
    when the data span at most two decades (pyqtgraph labels every multiple, and they overlap)."""
    values = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays]) if arrays else np.array([])
    values = values[np.isfinite(values) & (values > 0)]
    if values.size == 0:
        return None
    low, high = math.floor(np.log10(values.min())), math.ceil(np.log10(values.max()))
    if high == low:
        low, high = low - 1, high + 1
    span = high - low
    step = next((s for s in _DECADE_STEPS if span / s <= max_labels - 1), math.ceil(span / (max_labels - 1)))
    first = math.ceil(low / step) * step
    major = [(float(k), _power(k)) for k in range(first, high + 1, step)]
    if step > 1:
        minor_step = 1 if span <= 60 else step // 5 if step % 5 == 0 else max(step // 2, 1)
        minor = [(float(k), "") for k in range(low, high + 1, minor_step) if (k - first) % step]
        return [major, minor]
    labelled = span <= 2
    minor = [
        (math.log10(m) + k, _multiple(m, k) if labelled and m in (2, 5) else "")
        for k in range(low, high)
        for m in range(2, 10)
    ]
    return [major, minor]


def _log_span(arrays: Sequence[Sequence[float] | np.ndarray]) -> tuple[float, float] | None:
    values = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays]) if arrays else np.array([])
    values = values[np.isfinite(values) & (values > 0)]
    if values.size == 0:
        return None
    return float(np.log10(values.min())), float(np.log10(values.max()))


MIN_LOG_SPAN = 1.0
"""Decades a log axis shows at least: labels fall at 1, 2 and 5 times powers of ten when the
data span two decades or less, at most 0.4 decade apart, so a decade holds two of them (a flat
curve, e.g. PTR's error against n at 2.9957 to 2.9958, left its axis without a single label)."""


class CurveSet:
    """The named curves of one plot (exact solid, bounds dashed, Monte Carlo dotted), kept
    between redraws and updated with ``setData``: re-creating pyqtgraph items was most of a
    redraw's cost (17-22 ms for the accuracy view). The axes are named after the first curve."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        self.plot = plot
        self.items: dict[str, pg.PlotDataItem] = {}
        self.note = pg.TextItem(color=palette.colour(GREY), anchor=(0.5, 0.5))
        self.note.hide()
        plot.addItem(self.note, ignoreBounds=True)

    def _fit_log_ranges(self, curves: Sequence[Curve], log_x: bool, log_y: bool) -> None:
        """A log axis shows exactly the decades its ticks were chosen for (pyqtgraph's own range
        could reach far past the data, squeezing adjacent decades' labels onto each other)."""
        for log, values, axis in ((log_x, [c.x for c in curves], "x"), (log_y, [c.y for c in curves], "y")):
            span = _log_span(values) if log else None
            if span is None:
                continue
            low, high = span
            if high - low < MIN_LOG_SPAN:  # a flat curve: a decade around it, two labels in view
                middle = (low + high) / 2
                low, high = middle - MIN_LOG_SPAN / 2, middle + MIN_LOG_SPAN / 2
            if axis == "x":
                self.plot.setXRange(low, high, padding=0.04)
            else:
                self.plot.setYRange(low, high, padding=0.04)

    def draw(
        self, curves: Sequence[Curve], *, log_x: bool = False, log_y: bool = False, empty: str = ""
    ) -> None:
        """Draw ``curves``; with none, say ``empty`` (why there is nothing) in the plot's middle
        on plain axes, rather than leave an empty frame with stray ticks."""
        if not curves:
            log_x = log_y = False
        self.note.setText(empty)
        self.note.setVisible(not curves and bool(empty))
        self.plot.setLogMode(x=log_x, y=log_y)
        for side, log, values in (
            ("bottom", log_x, [c.x for c in curves]),
            ("left", log_y, [c.y for c in curves]),
        ):
            self.plot.getAxis(side).setTicks(log_ticks(values) if log else None)
        if curves:  # "(log scale)" on x only: the y axis is shorter, and its 10ⁿ ticks say it
            set_axis_label(self.plot, "bottom", curves[0].x_label + (" (log scale)" if log_x else ""))
            set_axis_label(self.plot, "left", short_axis_label(curves[0].y_label))
        names = []
        for i, curve in enumerate(curves):
            name = f"{curve.name} ({curve.kind.replace('_', ' ')})"
            if log_y and not np.any(np.asarray(curve.y, dtype=float) > 0):  # else silently missing
                name += " = 0: not on a log axis"
            names.append(name)
            if name not in self.items:
                pen = palette.pen(PALETTE[i % len(PALETTE)], 2, _LINE_STYLES[curve.kind])
                self.items[name] = self.plot.plot(pen=pen, name=name)
            self.items[name].setData(np.asarray(curve.x, dtype=float), np.asarray(curve.y, dtype=float))
        for name in [n for n in self.items if n not in names]:
            self.plot.removeItem(self.items.pop(name))
        if curves:  # an empty draw fixed the range at [0, 1], which turned auto-range off
            self.plot.enableAutoRange()
        self._fit_log_ranges(curves, log_x, log_y)
        if not curves:  # no axes to name either: the note says what is missing
            set_axis_label(self.plot, "bottom", "")
            set_axis_label(self.plot, "left", "")
            self.plot.setRange(xRange=(0.0, 1.0), yRange=(0.0, 1.0), padding=0.0)
            self.note.setPos(0.5, 0.5)


def short_axis_label(text: str) -> str:
    """A y label short enough for a plot's height: "X not exceeded with 95% probability" reads
    "95%-sure bound on X" (the long form ran past its axis)."""
    match = re.fullmatch(r"(.+?) not exceeded with (\d+(?:\.\d+)?%) probability", text)
    return f"{match.group(2)}-sure bound on {match.group(1)}" if match else text


def curve_columns(curves: Sequence[Curve]) -> dict[str, Column]:
    columns: dict[str, Column] = {}
    for curve in curves:
        columns[f"{curve.name}: {curve.x_label}"] = list(np.asarray(curve.x, dtype=float))
        columns[f"{curve.name}: {curve.y_label}"] = list(np.asarray(curve.y, dtype=float))
    return columns
