"""The neighbouring-datasets view: M(D) and M(D') overlaid, the privacy loss between them, and
where it exceeds epsilon.

Top: the two output distributions. The shaded area is max(0, p_D - e^ε p_D'), whose total is
the hockey-stick divergence δ(ε) in that direction (the number in the label comes from the
core's exact computation). Bottom: the privacy loss ln p_D(o)/p_D'(o) with the ±ε lines; the
outputs where |loss| > ε are drawn in red."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QRectF, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QGraphicsPathItem,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QWidget,
)

from dpexplorer.core.mechanisms.base import CategoricalOutput, NumericOutput
from dpexplorer.gui import palette
from dpexplorer.gui.jobs import DrawsResult, NeighboursResult
from dpexplorer.gui.views.base import (
    BLUE,
    GREY,
    ORANGE,
    RED,
    View,
    configure_plot,
    error_label,
    fit_sticky,
    set_axis_label,
)
from dpexplorer.gui.views.live_text import LiveText
from dpexplorer.gui.views.neighbours_labels import place_beside_stems, place_line_labels
from dpexplorer.gui.views.neighbours_shapes import (
    LOSS_CLIP,
    MIN_RUNS_FOR_LOSS,
    SimulatedBins,
    clip_loss,
    excess_area,
    excess_bands,
    over_epsilon,
    shown_span,
    span_width,
)
from dpexplorer.gui.views.neighbours_text import (
    RED_BARS,
    SHADED_AREA,
    claimed_numbers,
    explain,
    numeric_note,
    simulated_numbers,
)
from dpexplorer.gui.views.outcomes import ShownOutcomes, readable_ticks, span_for_name
from dpexplorer.gui.views.spanning import Bands, Rules, Spanning

THIN = 1
"""Pen width of the dense curves: a width-2 antialiased 2,000-point curve takes 5 ms to paint,
width 1 about a fifth of that."""
LEFT_AXIS_WIDTH = 64
"""Pixels, at least, for both plots' left axes."""
WIDEST_TICK = "0.00012"
"""The widest tick label the left axes must show (a density; pyqtgraph drops a label that does
not fit): the axes are made wide enough for it in the window's font."""
TRUE_LABEL_ALONG = {"true_d": 0.95, "true_d_prime": 0.85}
"""Where the true answers' labels sit on their lines (fraction of the plot's height), unless
that covers the legend or the other label."""
OUTPUT_AXIS = "output o of the mechanism"
SCALED_AXIS = "(o − centre of M(D)) ÷ noise scale of M(D)"
"""The x axis when the noise is too small to plot around the value (NumericOutput.unit)."""


def _brush(color: tuple[int, int, int], alpha: int) -> pg.QtGui.QBrush:
    return palette.brush(color, alpha)


def _dashed(color: tuple[int, int, int]) -> pg.QtGui.QPen:
    return palette.pen(color, width=1, style=Qt.PenStyle.DashLine)


def _error_bars(color: tuple[int, int, int]) -> pg.ErrorBarItem:
    return pg.ErrorBarItem(x=np.zeros(1), y=np.zeros(1), height=np.zeros(1), pen=palette.pen(color, 1))


def _clip_note() -> pg.TextItem:
    text = f"losses beyond ±{LOSS_CLIP:g} (or infinite) drawn at ±{LOSS_CLIP:g}"
    return pg.TextItem(text, color=palette.colour(GREY), anchor=(0, 0))


def _epsilon_rules(plot: pg.PlotItem) -> Rules:
    """The ±ε lines of a loss plot, "+ε" under its line and "−ε" over its own: inside the band,
    so inside the plot when the loss reaches ±ε exactly and the lines are its edges (above and
    below them the labels were clipped, in teaching mode's font as two red specks)."""
    return Rules(plot, _dashed(RED), ["+ε", "−ε"], vertical=False, along=0.01, anchors=[(0, 0), (0, 1)])


def _curve(
    plot: pg.PlotItem,
    pen: pg.QtGui.QPen | None,
    name: str | None = None,
    connect: str = "all",
) -> pg.PlotCurveItem:
    """A curve added to ``plot`` (and its legend, when named). A bare PlotCurveItem: its
    ``setData`` costs a sixth of a PlotDataItem's, which wraps one with symbols and sampling
    that these curves do not use."""
    curve = pg.PlotCurveItem(pen=pen, name=name, connect=connect)
    plot.addItem(curve)
    return curve


LOSS_LABEL = "privacy loss<br>ln(p_D / p_D')"
"""The loss axis's title, in two lines: in one, it was longer than the loss plot at 1280 x 720
in teaching mode's font."""


def _plain(label: str) -> str:
    """An axis title's lines as plain text (its ``<br>`` as line breaks)."""
    return label.replace("<br>", "\n")


class NeighboursView(View):
    """Draws a :class:`NeighboursResult`, and optional draws over it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Output distributions on neighbouring datasets D and D'", parent)
        self.row = QLabel()
        self.row.setWordWrap(True)
        self.row.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.draw_button = QPushButton("Draw 100,000 outputs")
        self.draw_button.setToolTip(
            "Simulate the mechanism on D and on D' and overlay the histograms of the outputs "
            "on the exact distributions (exploration only: never used for a release)."
        )
        self.clear_draws_button = QPushButton("Clear draws")
        self.clear_draws_button.clicked.connect(self.clear_draws)
        buttons = QHBoxLayout()
        buttons.addWidget(self.row, 1)
        buttons.addWidget(self.draw_button)
        buttons.addWidget(self.clear_draws_button)
        self.body.addLayout(buttons)
        self.error = error_label()
        self.body.addWidget(self.error)
        # Both plots on one canvas: one paint and one flush per frame instead of two (7.5 ms
        # against 10.4 ms, p95 8.7 against 18.6, in a bare two-plot test side by side; in the
        # window, where other costs dominate, the gain was within the noise).
        self.canvas = pg.GraphicsLayoutWidget()
        # Every frame changes most of the canvas. pyqtgraph's minimal updates repaint the union
        # of the changed items, a region whose clip made Qt paint each density curve in 1.1-1.8
        # ms instead of 0.2-0.3 ms whenever only the loss plot rescaled (smooth Student's t).
        self.canvas.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.FullViewportUpdate)
        self._output_title = ("probability density", "density")
        self.outputs = configure_plot(
            self.canvas.addPlot(row=0, col=0), OUTPUT_AXIS, "probability density", live=True
        )
        self.loss = configure_plot(
            # two lines: in one, the label was longer than the loss plot at 1280 x 720 in
            # teaching mode's font
            self.canvas.addPlot(row=1, col=0),
            OUTPUT_AXIS,
            LOSS_LABEL,
            live=True,
        )
        self.canvas.ci.layout.setRowStretchFactor(0, 3)
        self.canvas.ci.layout.setRowStretchFactor(1, 2)
        self.loss.setXLink(self.outputs)
        # One x axis, under the loss plot: the plots share x, and each axis whose range moves
        # regenerates its ticks in Python at the next paint (0.5-1 ms each, the largest cost
        # of a frame that rescales).
        self.outputs.hideAxis("bottom")
        self._fit_left_axes()
        self.body.addWidget(self.canvas, 1)
        self.result: NeighboursResult | None = None
        self.draws: DrawsResult | None = None
        self.delta_label = LiveText()
        self.body.addWidget(self.delta_label)
        self._items: dict[str, pg.GraphicsObject] = {}
        self._layout: tuple[object, ...] | None = None
        self._pools: dict[str, list[pg.GraphicsObject]] = {}
        self._ticks: tuple[str, ...] = ()
        # inside _redraw, a range change is only noted (_moved) and followed once at its end,
        # where the point masses' labels are placed (_labels_due) if no range moved
        self._redrawing = self._moved = self._labels_due = False
        for plot in (self.outputs, self.loss):  # bands and rules span the visible plot
            plot.getViewBox().sigRangeChanged.connect(self._follow_view)
        self.outputs.getViewBox().sigResized.connect(self._follow_resize)
        for plot in (self.outputs, self.loss):  # a short plot gets the short name of its axis
            plot.getViewBox().sigResized.connect(self._fit_left_labels)

    # ------------------------------------------------------------------ items
    # Every item of a layout (continuous, discrete, or categorical with its labels) is made once
    # and then updated with setData / setOpts: creating, adding and removing pyqtgraph items is
    # most of the cost of a redraw (PlotSpeedTest's lesson; 15 ms of a categorical redraw).
    def _pooled(
        self, kind: str, plot: pg.PlotItem, count: int, make: Callable[[], pg.GraphicsObject]
    ) -> list[pg.GraphicsObject]:
        """``count`` items of a kind whose number varies (point masses, notes): a pool
        grown with ``make`` when needed, the unused items hidden rather than removed."""
        pool = self._pools.setdefault(kind, [])
        while len(pool) < count:
            pool.append(make())
            plot.addItem(pool[-1])
        for i, item in enumerate(pool):
            item.setVisible(i < count)
        return pool[:count]

    def _use_layout(self, layout: tuple[object, ...]) -> dict[str, pg.GraphicsObject]:
        """The items of ``layout``, built when the layout changes (cleared plots, fresh items)."""
        if layout == self._layout:
            return self._items
        self.outputs.clear()
        self.loss.clear()
        self._pools = {}
        self.loss.getAxis("bottom").setTicks(None)
        set_axis_label(self.loss, "bottom", OUTPUT_AXIS)
        kind, items = layout[0], {}
        if kind == "continuous":
            items = self._continuous_items()
        elif kind == "discrete":
            items = self._discrete_items()
        elif kind == "categorical":
            items = self._categorical_items()
        elif kind == "monte_carlo":
            items = self._monte_carlo_items()
        if items and kind != "monte_carlo":
            items.update(self._loss_items())
        for plot in (self.outputs, self.loss):
            plot.disableAutoRange()  # ranges are set from the data at each redraw
        self._items, self._layout = items, layout
        return items

    def _true_lines(self) -> dict[str, pg.GraphicsObject]:
        return {
            key: Rules(self.outputs, _dashed(color), [name], vertical=True, along=TRUE_LABEL_ALONG[key])
            for key, color, name in (("true_d", BLUE, "true f(D)"), ("true_d_prime", ORANGE, "true f(D')"))
        }

    def _keep_true_labels_clear(self) -> None:
        """The "true f(D)" and "true f(D')" labels where they cover neither the legend, the
        point masses' stems nor each other, inside the plot: right of their line at their usual
        height if free, else left, else lower down."""
        rules = [self._items.get(key) for key in TRUE_LABEL_ALONG]
        if not all(isinstance(r, Rules) and r.isVisible() and r.values for r in rules):
            return
        plot = self.outputs.getViewBox().sceneBoundingRect()
        area = QRectF(plot.left(), plot.top() - 1e6, plot.width(), 2e6)  # only its sides bind
        shown = [rule for rule in rules if isinstance(rule, Rules)]  # all of them (checked above)
        place_line_labels(shown, list(TRUE_LABEL_ALONG.values()), area, self._legend_and_stems())

    def _draws_curves(self) -> dict[str, pg.GraphicsObject]:
        dotted = Qt.PenStyle.DotLine
        curves = {
            "draws_d": self.outputs.plot(
                stepMode="center", pen=palette.pen(BLUE, width=1, style=dotted), name="draws on D"
            ),
            "draws_d_prime": self.outputs.plot(
                stepMode="center", pen=palette.pen(ORANGE, width=1, style=dotted), name="draws on D'"
            ),
        }
        for curve in curves.values():  # listed from the first draws until "Clear draws"
            self.outputs.legend.removeItem(curve)
        return curves

    def _list_draws_in_legend(self, listed: bool) -> None:
        """Add or remove the draws' legend entries. Not done at every move: re-laying out the
        legend costs 1-2 ms a frame."""
        legend = self.outputs.legend
        for key in ("draws_d", "draws_d_prime"):
            curve = self._items.get(key)
            if curve is not None and listed != any(sample.item is curve for sample, _ in legend.items):
                if listed:
                    legend.addItem(curve, curve.name())
                else:
                    legend.removeItem(curve)

    def _bars(
        self, brushes: dict[str, pg.QtGui.QBrush], names: dict[str, str]
    ) -> dict[str, pg.GraphicsObject]:
        bars = {}
        for key, brush in brushes.items():
            bars[key] = pg.BarGraphItem(x=[0.0], height=[0.0], width=0.4, brush=brush, name=names.get(key))
            self.outputs.addItem(bars[key])
        return bars

    def _continuous_items(self) -> dict[str, pg.GraphicsObject]:
        fill = QGraphicsPathItem()  # the excess area, as one polygon set at each redraw
        fill.setBrush(_brush(RED, 110))
        fill.setPen(pg.mkPen(None))
        fill.setZValue(-1)
        self.outputs.addItem(fill)
        items: dict[str, pg.GraphicsObject] = {
            "p": _curve(self.outputs, palette.pen(BLUE, width=THIN), "M(D)"),
            "q": _curve(self.outputs, palette.pen(ORANGE, width=THIN), "M(D')"),
            "fill": fill,
            **self._draws_curves(),
        }
        return {**items, **self._true_lines()}

    def _discrete_items(self) -> dict[str, pg.GraphicsObject]:
        bars = self._bars({"p": _brush(BLUE, 160), "q": _brush(ORANGE, 160)}, {"p": "M(D)", "q": "M(D')"})
        dots = pg.ScatterPlotItem(size=7, brush=palette.brush(GREY), pen=None)
        self.loss.addItem(dots)
        return {**bars, "loss_dots": dots, **self._draws_curves(), **self._true_lines()}

    def _categorical_items(self) -> dict[str, pg.GraphicsObject]:
        bars = self._bars(
            {"p": _brush(BLUE, 180), "q": _brush(ORANGE, 180), "excess": _brush(RED, 200)},
            {"p": "M(D)", "q": "M(D')"},
        )
        dots = {
            key: self.outputs.plot(pen=None, symbol="o", symbolBrush=color, symbolSize=7)
            for key, color in (("dots_d", BLUE), ("dots_d_prime", ORANGE))
        }
        set_axis_label(self.loss, "bottom", "outcome")
        self._ticks = ()
        return {**bars, **dots}

    def _pixels_per_bar(self, bars: int) -> float:
        """Screen pixels per bar along x, in units of the tick font's average character width."""
        metrics = QFontMetrics(self.loss.getAxis("bottom").font())
        return self.loss.getViewBox().width() / max(bars, 1) / max(metrics.averageCharWidth(), 1)

    def _set_ticks(self, labels: tuple[str, ...]) -> None:
        """The outcome names under the bars (set only when they change)."""
        if labels != self._ticks:
            self.loss.getAxis("bottom").setTicks([list(enumerate(labels))])
            self._ticks = labels

    def _fit_left_axes(self) -> None:
        """Equal left axes (the linked x positions line up), wide enough for a density's tick
        label such as 0.00012 in the current font: a fixed width dropped every label but 0 in
        teaching mode's larger font at epsilon = 0.05."""
        metrics = QFontMetrics(self.font())
        width = max(LEFT_AXIS_WIDTH, metrics.horizontalAdvance(WIDEST_TICK) + 2 * metrics.height())
        for plot in (self.outputs, self.loss):
            plot.getAxis("left").setWidth(width)

    def _set_output_title(self, full: str, short: str) -> None:
        """The outputs axis's title, and its short form for a short plot."""
        self._output_title = (full, short)
        self._fit_left_labels()

    def _fit_left_labels(self) -> None:
        """Each left axis's title, or its short form where the plot is shorter than the title
        (at the window's narrowest size in teaching mode the two rotated titles ran into each
        other: "privacy lossprobability density")."""
        for plot, (full, short) in (
            (self.outputs, self._output_title),
            (self.loss, (LOSS_LABEL, "loss")),
        ):
            axis = plot.getAxis("left")
            metrics = QFontMetrics(axis.label.font())
            longest = max(metrics.horizontalAdvance(line) for line in _plain(full).split("\n"))
            fits = longest + metrics.height() <= plot.getViewBox().height()
            set_axis_label(plot, "left", full if fits else short)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.ApplicationFontChange):
            self._fit_left_axes()

    def _loss_items(self) -> dict[str, pg.GraphicsObject]:
        """The loss plot's curve, its part beyond ±ε and the ±ε lines."""
        items: dict[str, pg.GraphicsObject] = {
            "loss": _curve(self.loss, palette.pen(GREY, width=THIN), "privacy loss"),
            "over": _curve(self.loss, palette.pen(RED, width=4), "|loss| > ε", connect="finite"),
        }
        items["epsilon_lines"] = _epsilon_rules(self.loss)
        items["bands"] = Bands(self.outputs, _brush(RED, 28))
        items["bands_loss"] = Bands(self.loss, _brush(RED, 28))
        return items

    # ------------------------------------------------------------------ drawing
    def show_error(self, message: str) -> None:
        """The job failed or refused: say why in the view and draw nothing (never the previous
        result as if it were this one's)."""
        self.result, self.draws, self.columns = None, None, {}
        self._pending = None  # a result waiting for the tab to show is older than this failure
        self._use_layout(("empty",))
        self.delta_label.setText("")
        self.error.setText(message)
        self.error.show()

    def show_result(self, result: NeighboursResult) -> None:
        self.error.hide()
        self.result = result
        self.draws = None
        self._redraw()

    def overlays_draws(self) -> bool:
        """Whether simulated draws are drawn over the densities now (not when the noise is too
        small for float64 to resolve: then only the note under the plots changes)."""
        for key in ("draws_d", "dots_d"):  # histogram over densities, dots over bars
            data = self._items[key].getData()[0] if key in self._items else None
            if data is not None and len(data) > 0:
                return True
        return False

    def show_draws(self, draws: DrawsResult) -> None:
        self.draws = draws
        self._redraw()

    def clear_draws(self) -> None:
        self.draws = None
        self._list_draws_in_legend(False)
        self._redraw()

    def _redraw(self) -> None:
        result = self.result
        if result is None:
            self._use_layout(("empty",))
            return
        simulated = isinstance(result.output, NumericOutput) and bool(result.output.monte_carlo_runs)
        for button in (self.draw_button, self.clear_draws_button):  # a simulation has no exact
            button.setVisible(not simulated)  # law to lay draws over
        self.set_text(self.row, f"<b>D</b> is your dataset. {result.differing_row}")
        # A redraw changes up to three ranges (the outputs' x and y, the loss plot's x through
        # the link, its y): each used to rebuild every band and rule and place every label
        # again (0.4-1 ms each). They are followed once, when all ranges are final.
        self._redrawing, self._moved, self._labels_due = True, False, False
        try:
            if isinstance(result.output, NumericOutput):
                self._draw_numeric(result, result.output)
            else:
                self._draw_categorical(result, result.output)
        finally:
            self._redrawing = False
        for plot in (self.outputs, self.loss):  # the new ranges' transforms, which the labels'
            plot.getViewBox().updateMatrix()  # places are computed in (else at the next paint)
        if self._moved:
            self._follow_view()
        elif self._labels_due:
            self._place_mass_labels()
        self.set_text(self.explanation, explain(result))
        # ranges and transforms now, not inside the paint: there they schedule a second paint
        self.canvas.scene().prepareForPaint()

    def _monte_carlo_items(self) -> dict[str, pg.GraphicsObject]:
        """Step histograms with ±2 SE bars; the estimated loss with its own bars; ±ε lines."""
        items: dict[str, pg.GraphicsObject] = {}
        for key, color, name in (("p", BLUE, "M(D), simulated"), ("q", ORANGE, "M(D'), simulated")):
            items[key] = self.outputs.plot(stepMode="center", pen=palette.pen(color, width=2), name=name)
            items[key + "_bars"] = _error_bars(color)
            self.outputs.addItem(items[key + "_bars"])
        items["loss"] = self.loss.plot(
            pen=None, symbol="o", symbolSize=5, symbolBrush=GREY, name="estimated loss (±2 SE)"
        )
        items["loss_bars"] = _error_bars(GREY)
        self.loss.addItem(items["loss_bars"])
        items["few_runs"] = pg.TextItem(color=palette.colour(GREY), anchor=(0.5, 0.5))
        self.loss.addItem(items["few_runs"], ignoreBounds=True)
        items["epsilon_lines"] = _epsilon_rules(self.loss)
        return items

    def _draw_monte_carlo(self, result: NeighboursResult, out: NumericOutput) -> None:
        """Histograms of ``out.monte_carlo_runs`` runs per side with ±2 standard errors, and the
        loss estimated where both sides have enough runs (:class:`SimulatedBins`)."""
        items = self._use_layout(("monte_carlo",))
        self._set_output_title("estimated density", "est. density")
        set_axis_label(self.loss, "bottom", out.quantity or OUTPUT_AXIS)
        bins = SimulatedBins.of(out)
        grid, enough, loss, se_loss = bins.grid, bins.enough, bins.loss, bins.se_loss
        for key, counts in (("p", bins.counts_d), ("q", bins.counts_d_prime)):
            density, se = bins.density(counts)
            items[key].setData(bins.edges, density)
            items[key + "_bars"].setData(x=grid, y=density, height=4 * se)
        items["loss"].setData(grid[enough], loss[enough])
        items["loss_bars"].setData(x=grid[enough], y=loss[enough], height=4 * se_loss[enough])
        items["epsilon_lines"].set_values((result.epsilon, -result.epsilon))
        span = (float(bins.edges[0]), float(bins.edges[-1]))
        tallest = max(float(np.max(bins.counts_d)), float(np.max(bins.counts_d_prime)))
        fit_sticky(self.outputs, x=span, y=(0.0, tallest / (bins.runs * bins.width) * 1.15))
        reach = np.concatenate([np.abs(loss[enough]) + 2 * se_loss[enough], [result.epsilon]])
        fit_sticky(self.loss, y=(-float(reach.max()) * 1.1, float(reach.max()) * 1.1))
        note = items["few_runs"]
        note.setVisible(not enough.any())
        if not enough.any():
            note.setText(f"No bin has {MIN_RUNS_FOR_LOSS} runs on both sides: too few to estimate the loss")
            note.setPos((span[0] + span[1]) / 2, 0.0)
        self.columns = {
            "bin centre": grid,
            "runs on D": bins.counts_d,
            "runs on D'": bins.counts_d_prime,
            "estimated loss": loss,
            "standard error of the loss": se_loss,
        }
        self.delta_label.setText(simulated_numbers(result, bins))

    def _draw_numeric(self, result: NeighboursResult, out: NumericOutput) -> None:
        if out.monte_carlo_runs:
            self._draw_monte_carlo(result, out)
            return
        grid = np.asarray(out.grid, dtype=float)
        p, q = np.asarray(out.density_d, dtype=float), np.asarray(out.density_d_prime, dtype=float)
        scaled_q = np.exp(result.epsilon) * q
        if out.discrete:
            self._set_output_title("probability", "probability")
        else:
            self._set_output_title("probability density", "density")
        # a discrete law's spacing (1 for a single point: a bar as wide as the whole axis read
        # as a block of outputs, not one value)
        unit = float(np.min(np.diff(grid))) if grid.size > 1 else 1.0
        if out.discrete:
            items = self._use_layout(("discrete",))
            width = unit * 0.4
            items["p"].setOpts(x=grid - width / 2, height=p, width=width)
            items["q"].setOpts(x=grid + width / 2, height=q, width=width)
        else:
            items = self._use_layout(("continuous",))
            items["p"].setData(grid, p)
            items["q"].setData(grid, q)
            items["fill"].setPath(excess_area(grid, p, scaled_q))
        x_label = (out.quantity or OUTPUT_AXIS) if out.in_output_units else SCALED_AXIS
        set_axis_label(self.loss, "bottom", x_label)
        loss = np.asarray(out.privacy_loss, dtype=float)
        over = over_epsilon(loss, result.epsilon)
        low, high = shown_span(grid, p, q, over)
        placed = [float(out.to_grid(m.at)) for m in out.point_masses if m.at is not None]
        if placed:  # a clamp's bound is an output: the span shows it
            low, high = min(low, *placed), max(high, *placed)
        if out.discrete:  # room for the bars around the first and last value
            low, high = low - unit, high + unit
        density_top = max(float(np.max(p)), float(np.max(q)), 0.0)
        self._draw_point_masses(out, low, high, density_top)
        self._mark_true_answers(result, items)
        self._draw_loss(grid, loss, result.epsilon, over, shown=(grid >= low) & (grid <= high))
        if out.discrete:  # a pmf's loss is a value per output: dots (a single one has no line)
            items["loss_dots"].setData(grid, clip_loss(loss))
        cut_stems = any("▲" in t.toPlainText() for t in self._pools.get("mass", []) if t.isVisible())
        note = numeric_note(
            out, cut_stems, hidden_draws=self.draws is not None and not out.outputs_resolve_noise
        )
        bins = np.linspace(low, high, 81) if not out.discrete else np.append(grid - 0.5, grid[-1] + 0.5)
        self._overlay_numeric_draws(out, bins, items)
        apart = [m for m in out.point_masses if m.at is None]
        extra = 0.08 + 0.06 * len(apart) if apart else 0.0
        fit_sticky(
            self.outputs,
            x=(low, high + extra * span_width(low, high)),
            y=(0.0, self._mass_top(out, density_top)),
        )
        self._labels_due = True  # placed at the end of the redraw, once the ranges are final
        self.columns = {  # arrays, not lists: 4,800 Python floats a frame cost 0.2 ms
            "output" if out.in_output_units else x_label: grid,
            "density_D": p,
            "density_D_prime": q,
            "privacy_loss": loss,
        }
        for mass in out.point_masses:
            self.columns[f"P_D[{mass.label}]"] = [mass.mass_d]
            self.columns[f"P_D'[{mass.label}]"] = [mass.mass_d_prime]
        self.delta_label.setText(claimed_numbers(result, SHADED_AREA, note))

    @staticmethod
    def _mass_top(out: NumericOutput, density_top: float) -> float:
        """The y range's top: the densities' (a probability mass is another unit, and a tall stem
        would flatten the curves to nothing), or the masses' when there are no densities to read."""
        masses = [max(m.mass_d, m.mass_d_prime) for m in out.point_masses]
        return density_top if density_top > 0 else max(masses, default=0.0)

    def _draw_point_masses(self, out: NumericOutput, low: float, high: float, density_top: float) -> None:
        """Point masses as two stems (D, D'): at their value when they have one (a clamp's bound),
        else (⊥) right of the shown outputs [low, high]. A stem taller than the densities' top
        is drawn to it (its label gives the mass). Each label is placed by
        :meth:`_place_mass_labels` where it overlaps nothing else."""
        masses = out.point_masses
        stems = self._pooled(
            "stem", self.outputs, 2 * len(masses), lambda: pg.BarGraphItem(x=[0], height=[0], width=0.1)
        )
        texts = self._pooled(
            "mass",
            self.outputs,
            len(masses),
            lambda: pg.TextItem(color=palette.colour(GREY), anchor=(0, 0)),
        )
        span = span_width(low, high)
        top = self._mass_top(out, density_top)
        self._mass_spots: list[tuple[float, float]] = []
        apart = 0
        for k, mass in enumerate(masses):
            if mass.at is not None:
                x = float(out.to_grid(mass.at))
            else:
                x = high + span * (0.08 + 0.06 * apart)
                apart += 1
            sides = ((-0.006, mass.mass_d, BLUE), (0.006, mass.mass_d_prime, ORANGE))
            for stem, (dx, value, color) in zip(stems[2 * k : 2 * k + 2], sides, strict=True):
                height = min(value, 0.97 * top) if top > 0 else value
                stem.setOpts(x=[x + dx * span], height=[height], width=span * 0.01, brush=_brush(color, 220))
            cut = " ▲" if max(mass.mass_d, mass.mass_d_prime) > 0.97 * top > 0 else ""
            texts[k].setText(f"{mass.label}{cut}\nP_D = {mass.mass_d:.3g}, P_D' = {mass.mass_d_prime:.3g}")
            tallest = max(mass.mass_d, mass.mass_d_prime)
            self._mass_spots.append((x, min(tallest, 0.97 * top) if top > 0 else tallest))

    def _stem_rects(self) -> list[QRectF]:
        """Scene rectangles of the point masses' stems shown (two per mass, D then D')."""
        return [stem.sceneBoundingRect() for stem in self._pools.get("stem", []) if stem.isVisible()]

    def _legend_and_stems(self) -> list[QRectF]:
        """Scene rectangles no label may cover: the legend (when shown) and the stems."""
        legend = self.outputs.legend
        shown = legend is not None and legend.isVisible()
        return ([legend.sceneBoundingRect()] if shown else []) + self._stem_rects()

    def _label_rects(self) -> list[QRectF]:
        """Scene rectangles of what a mass label must not cover: the legend, the labels of the
        true-answer lines, and the stems."""
        rects = self._legend_and_stems()
        for key in ("true_d", "true_d_prime"):
            rules = self._items.get(key)
            if isinstance(rules, Rules) and rules.isVisible():
                rects += rules.label_rects()
        return rects

    def _place_mass_labels(self) -> None:
        """Each point mass's label beside its stem's top, where it covers no other label, the
        legend or a stem, inside the plot (tried right of the stem, then left, lower and lower)."""
        texts = [t for t in self._pools.get("mass", []) if t.isVisible()]
        spots = getattr(self, "_mass_spots", [])
        if not texts or len(spots) != len(texts):
            return
        place_beside_stems(self.outputs.getViewBox(), texts, spots, self._stem_rects(), self._label_rects())

    @staticmethod
    def _mark_true_answers(result: NeighboursResult, items: dict[str, pg.GraphicsObject]) -> None:
        known = result.true_d is not None and result.true_d_prime is not None
        for key, value in (("true_d", result.true_d), ("true_d_prime", result.true_d_prime)):
            items[key].setVisible(known)
            if known:
                items[key].set_values((value,))

    def _shade_excess_regions(self, grid: np.ndarray, over: np.ndarray) -> None:
        """Light red bands over the outputs where |loss| > epsilon (``over``), in both plots."""
        bands = excess_bands(grid, over)
        for key in ("bands", "bands_loss"):
            self._items[key].set_spans(bands)

    def _follow_resize(self) -> None:
        """A resized plot: its new transform first (pyqtgraph computes it only at the next
        paint, so labels placed now were placed in the old one's pixels and could land on each
        other once painted), then everything that follows the view, the true answers' labels
        as well as the point masses'."""
        self.outputs.getViewBox().updateMatrix()
        self._follow_view()

    def _follow_view(self) -> None:
        if self._redrawing:
            self._moved = True
            return
        for item in self._items.values():
            if isinstance(item, Spanning):
                item.follow_view()
        self._keep_true_labels_clear()
        self._place_mass_labels()

    def _draw_loss(
        self, x: np.ndarray, loss: np.ndarray, epsilon: float, over: np.ndarray, *, shown: np.ndarray
    ) -> None:
        """The loss curve at outputs ``x``, red where ``over``; the y range fits the outputs
        ``shown`` (a mask of ``x``)."""
        self._shade_excess_regions(x, over)
        clipped = clip_loss(loss)
        items = self._items
        visible = clipped[shown]
        low, high = (float(visible.min()), float(visible.max())) if visible.size else (0.0, 0.0)
        fit_sticky(self.loss, y=(min(low, -epsilon), max(high, epsilon)))
        items["loss"].setData(x, clipped)
        items["over"].setData(x, np.where(over, clipped, np.nan))
        items["epsilon_lines"].set_values((epsilon, -epsilon))
        clipped_note = self._pooled(
            "note", self.loss, int(np.any(np.abs(loss[shown]) >= LOSS_CLIP)), _clip_note
        )
        for note in clipped_note:
            note.setPos(float(x[shown][0]), LOSS_CLIP)

    def _overlay_numeric_draws(
        self, out: NumericOutput, bins: np.ndarray, items: dict[str, pg.GraphicsObject]
    ) -> None:
        """Histograms of the draws over ``bins`` (grid coordinates), if float64 kept their noise."""
        keys = ("draws_d", "draws_d_prime")
        if self.draws is None or not out.outputs_resolve_noise:
            for key in keys:
                if items[key].getData()[0] is not None:  # an empty setData still costs 0.1 ms
                    items[key].setData([], [])
            return
        self._list_draws_in_legend(True)
        for key, values in zip(keys, (self.draws.draws_d, self.draws.draws_d_prime), strict=True):
            finite = out.to_grid(values[np.isfinite(values)])
            counts, edges = np.histogram(finite, bins=bins)
            items[key].setData(edges, counts / (values.size * (1.0 if out.discrete else np.diff(edges))))

    def _draw_categorical(self, result: NeighboursResult, out: CategoricalOutput) -> None:
        items = self._use_layout(("categorical",))
        p, q = np.asarray(out.pmf_d, dtype=float), np.asarray(out.pmf_d_prime, dtype=float)
        shown = ShownOutcomes.of(p, q, out.labels)
        x = np.arange(len(shown.labels), dtype=float)
        heights = np.maximum(shown.collect(p), shown.collect(q))
        bars = len(shown.labels)
        tallest = int(np.argmax(heights))
        span, chars_per_bar = span_for_name(
            shown.labels, tallest, self._pixels_per_bar(bars) * bars, (-0.6, bars - 0.4)
        )
        self._set_ticks(readable_ticks(shown.labels, heights, chars_per_bar, span=span, always=tallest))
        self._set_output_title("probability of being selected", "probability")
        p_shown, q_shown = shown.collect(p), shown.collect(q)
        fit_sticky(
            self.outputs,
            x=span,
            y=(0.0, max(float(np.max(p_shown)), float(np.max(q_shown)), 0.0)),
            exact_x=True,
        )
        items["p"].setOpts(x=x - 0.2, height=p_shown, width=0.4)
        items["q"].setOpts(x=x + 0.2, height=q_shown, width=0.4)
        excess = shown.collect(np.maximum(0.0, p - np.exp(result.epsilon) * q))
        items["excess"].setOpts(x=x - 0.2, height=excess, width=0.4)
        loss = shown.loss(np.asarray(out.privacy_loss, dtype=float), p, q)
        every = np.ones(x.size, dtype=bool)
        self._draw_loss(x, loss, result.epsilon, over_epsilon(loss, result.epsilon), shown=every)
        for key, values, dx in (
            ("dots_d", self.draws.draws_d if self.draws else None, -0.2),
            ("dots_d_prime", self.draws.draws_d_prime if self.draws else None, 0.2),
        ):
            if values is None:
                items[key].setData([], [])
                continue
            freq = np.bincount(values[values >= 0].astype(int), minlength=len(out.labels)) / values.size
            items[key].setData(x + dx, shown.collect(freq))
        self.columns = {
            "outcome": list(out.labels),
            "P_D": list(p),
            "P_D_prime": list(q),
            "privacy_loss": list(out.privacy_loss),
        }
        top = int(np.argmax(p))
        likeliest = f"Likeliest under D: {out.labels[top]} ({p[top]:.3g}). " if len(out.labels) > 2 else ""
        self.delta_label.setText(claimed_numbers(result, RED_BARS, likeliest + out.note))
