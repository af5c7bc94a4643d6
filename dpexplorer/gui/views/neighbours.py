"""The neighbouring-datasets view: M(D) and M(D') overlaid, the privacy loss between them, and
where it exceeds epsilon.

Top: the two output distributions. The shaded area is max(0, p_D - e^ε p_D'), whose total is
the hockey-stick divergence δ(ε) in that direction (the number in the label comes from the
core's exact computation). Bottom: the privacy loss ln p_D(o)/p_D'(o) with the ±ε lines; the
outputs where |loss| > ε are drawn in red."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from dpexplorer.core.mechanisms.base import CategoricalOutput, NumericOutput
from dpexplorer.gui.jobs import DrawsResult, NeighboursResult
from dpexplorer.gui.views.base import BLUE, GREY, ORANGE, RED, View, new_plot

LOSS_CLIP = 25.0
"""Losses beyond ±this (including ±inf) are drawn at the clip, and the plot says so."""


def _brush(color: tuple[int, int, int], alpha: int) -> pg.QtGui.QBrush:
    return pg.mkBrush(*color, alpha)


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
        self.outputs = new_plot("output o of the mechanism", "probability density")
        self.loss = new_plot("output o of the mechanism", "privacy loss ln p_D(o) / p_D'(o)")
        self.loss.setXLink(self.outputs)
        self.body.addWidget(self.outputs, 3)
        self.body.addWidget(self.loss, 2)
        self.result: NeighboursResult | None = None
        self.draws: DrawsResult | None = None
        self.delta_label = QLabel()
        self.delta_label.setWordWrap(True)
        self.body.addWidget(self.delta_label)
        self._curves: dict[str, pg.GraphicsObject] | None = None
        self._transient: list[tuple[pg.PlotWidget, pg.GraphicsObject]] = []

    # ------------------------------------------------------------------ items
    def _add(self, plot: pg.PlotWidget, item: pg.GraphicsObject) -> None:
        """Add an item that is rebuilt on every redraw (bands, point masses, notes)."""
        plot.addItem(item)
        self._transient.append((plot, item))

    def _clear_transient(self) -> None:
        for plot, item in self._transient:
            plot.removeItem(item)
        self._transient = []

    def _continuous_curves(self) -> dict[str, pg.GraphicsObject]:
        """The items of a continuous output, made once and then updated with setData: creating
        and adding pyqtgraph items is most of the cost of a redraw (PlotSpeedTest's lesson)."""
        if self._curves is not None:
            return self._curves
        dashed = Qt.PenStyle.DashLine
        curves: dict[str, pg.GraphicsObject] = {
            "p": self.outputs.plot(pen=pg.mkPen(BLUE, width=2), name="M(D)"),
            "q": self.outputs.plot(pen=pg.mkPen(ORANGE, width=2), name="M(D')"),
            "floor": self.outputs.plot(pen=None),
            "top": self.outputs.plot(pen=None),
            "draws_d": self.outputs.plot(
                stepMode="center", pen=pg.mkPen(BLUE, width=1, style=Qt.PenStyle.DotLine), name="draws on D"
            ),
            "draws_d_prime": self.outputs.plot(
                stepMode="center",
                pen=pg.mkPen(ORANGE, width=1, style=Qt.PenStyle.DotLine),
                name="draws on D'",
            ),
        }
        curves["fill"] = pg.FillBetweenItem(curves["top"], curves["floor"], brush=_brush(RED, 110))
        self.outputs.addItem(curves["fill"])
        for key, color, name, position in (
            ("true_d", BLUE, "true f(D)", 0.95),
            ("true_d_prime", ORANGE, "true f(D')", 0.85),
        ):
            curves[key] = pg.InfiniteLine(
                angle=90,
                pen=pg.mkPen(color, width=1, style=dashed),
                label=name,
                labelOpts={"position": position, "color": color, "anchors": [(0, 0.5), (0, 0.5)]},
            )
            self.outputs.addItem(curves[key])
        self._curves = curves
        return curves

    # ------------------------------------------------------------------ drawing
    def show_result(self, result: NeighboursResult) -> None:
        self.result = result
        self.draws = None
        self._redraw()

    def show_draws(self, draws: DrawsResult) -> None:
        self.draws = draws
        self._redraw()

    def clear_draws(self) -> None:
        self.draws = None
        self._redraw()

    def _redraw(self) -> None:
        result = self.result
        continuous = (
            result is not None and isinstance(result.output, NumericOutput) and not result.output.discrete
        )
        self._clear_transient()
        if not continuous or self._curves is None:
            self.outputs.clear()
            self.loss.clear()
            self._curves = None
            for plot in (self.outputs, self.loss):
                plot.getAxis("bottom").setTicks(None)
                plot.setLabel("bottom", "output o of the mechanism")
        if result is None:
            return
        self.row.setText(f"<b>D</b> is your dataset. {result.differing_row}")
        if isinstance(result.output, NumericOutput):
            self._draw_numeric(result, result.output)
        else:
            self._draw_categorical(result, result.output)
        self.explanation.setText(self._explain(result))

    @staticmethod
    def _delta_text(result: NeighboursResult) -> str:
        if result.delta_exact is None:
            return f"not computable exactly here ({result.delta_note})"
        return f"{result.delta_exact:.3g}"

    def _explain(self, result: NeighboursResult) -> str:
        eps = result.epsilon
        return (
            f"<b>{result.mechanism}</b> claims ε = {eps:.4g}, δ = {result.delta_claim:.3g}. "
            f"<span style='color:rgb{BLUE}'>■ M(D)</span> and "
            f"<span style='color:rgb{ORANGE}'>■ M(D')</span>: the closer they are, the less an "
            "observer learns about the one person who differs. "
            f"<span style='color:rgb{RED}'>Red bands</span> mark the outputs where the privacy "
            "loss exceeds ε, i.e. where seeing the output shifts the odds between D and D' by "
            f"more than e^ε. The dark red area is how much more likely those outputs are under "
            f"D than e^ε times their chance under D'; in total δ(ε) = {self._delta_text(result)} "
            "(exact), the chance that ε-privacy fails."
        )

    def _draw_numeric(self, result: NeighboursResult, out: NumericOutput) -> None:
        grid = np.asarray(out.grid, dtype=float)
        p, q = np.asarray(out.density_d, dtype=float), np.asarray(out.density_d_prime, dtype=float)
        scaled_q = np.exp(result.epsilon) * q
        excess_top = np.where(p > scaled_q, p, np.minimum(p, scaled_q))
        ylabel = "probability" if out.discrete else "probability density"
        self.outputs.setLabel("left", ylabel)
        if out.discrete:
            width = float(np.min(np.diff(grid))) * 0.4 if grid.size > 1 else 0.4
            self.outputs.addItem(
                pg.BarGraphItem(
                    x=grid - width / 2, height=p, width=width, brush=_brush(BLUE, 160), name="M(D)"
                )
            )
            self.outputs.addItem(
                pg.BarGraphItem(
                    x=grid + width / 2, height=q, width=width, brush=_brush(ORANGE, 160), name="M(D')"
                )
            )
        else:
            curves = self._continuous_curves()
            curves["p"].setData(grid, p)
            curves["q"].setData(grid, q)
            curves["floor"].setData(grid, np.minimum(p, scaled_q))
            curves["top"].setData(grid, excess_top)
        self._draw_point_masses(out, grid)
        self._mark_true_answers(result, out)
        self._draw_loss(grid, np.asarray(out.privacy_loss, dtype=float), result.epsilon)
        self._overlay_numeric_draws(grid, out.discrete)
        extra = 0.08 + 0.06 * len(out.point_masses) if out.point_masses else 0.0
        span = float(grid[-1] - grid[0]) if grid.size > 1 else 1.0
        self.outputs.setXRange(float(grid[0]), float(grid[-1]) + extra * span, padding=0.02)
        self.columns = {
            "output": list(grid),
            "density_D": list(p),
            "density_D_prime": list(q),
            "privacy_loss": list(out.privacy_loss),
        }
        for mass in out.point_masses:
            self.columns[f"P_D[{mass.label}]"] = [mass.mass_d]
            self.columns[f"P_D'[{mass.label}]"] = [mass.mass_d_prime]
        self.delta_label.setText(
            f"<span style='color:rgb{RED}'>Shaded</span>: ∫ max(0, p_D − e^ε p_D') = "
            f"δ(ε = {result.epsilon:.3g}) = <b>{self._delta_text(result)}</b> "
            f"(the larger of the two directions D→D', D'→D). {out.note}"
        )

    def _draw_point_masses(self, out: NumericOutput, grid: np.ndarray) -> None:
        if not out.point_masses:
            return
        span = float(grid[-1] - grid[0]) if grid.size > 1 else 1.0
        for k, mass in enumerate(out.point_masses):
            x = float(grid[-1]) + span * (0.08 + 0.06 * k)
            for dx, value, color in ((-0.01, mass.mass_d, BLUE), (0.01, mass.mass_d_prime, ORANGE)):
                stem = pg.BarGraphItem(
                    x=[x + dx * span], height=[value], width=span * 0.015, brush=_brush(color, 220)
                )
                self._add(self.outputs, stem)
            text = pg.TextItem(
                f"{mass.label}\nP_D = {mass.mass_d:.3g}\nP_D' = {mass.mass_d_prime:.3g}",
                color=GREY,
                anchor=(0.5, 1),
            )
            text.setPos(x, max(mass.mass_d, mass.mass_d_prime))
            self._add(self.outputs, text)

    def _mark_true_answers(self, result: NeighboursResult, out: NumericOutput) -> None:
        known = result.true_d is not None and result.true_d_prime is not None
        if not out.discrete:
            curves = self._continuous_curves()
            for key, value in (("true_d", result.true_d), ("true_d_prime", result.true_d_prime)):
                curves[key].setVisible(known)
                if known:
                    curves[key].setValue(value)
            return
        if not known:
            return
        marks = ((result.true_d, BLUE, "true f(D)", 0.95), (result.true_d_prime, ORANGE, "true f(D')", 0.85))
        for value, color, name, position in marks:
            line = pg.InfiniteLine(
                pos=value,
                angle=90,
                pen=pg.mkPen(color, width=1, style=Qt.PenStyle.DashLine),
                label=name,
                labelOpts={"position": position, "color": color, "anchors": [(0, 0.5), (0, 0.5)]},
            )
            self._add(self.outputs, line)

    def _shade_excess_regions(self, grid: np.ndarray, loss: np.ndarray, epsilon: float) -> None:
        """Light red bands over the outputs where |loss| > epsilon, in both plots."""
        over = np.abs(np.nan_to_num(loss, nan=0.0)) > epsilon * (1 + 1e-9)  # not rounding noise
        edges = np.flatnonzero(np.diff(np.concatenate(([0], over.astype(int), [0]))))
        step = float(np.median(np.diff(grid))) / 2 if grid.size > 1 else 0.5
        for start, stop in zip(edges[::2], edges[1::2], strict=True):
            for plot in (self.outputs, self.loss):
                region = pg.LinearRegionItem(
                    values=(grid[start] - step, grid[stop - 1] + step),
                    movable=False,
                    brush=_brush(RED, 28),
                    pen=pg.mkPen(None),
                )
                region.setZValue(-10)
                self._add(plot, region)

    def _loss_items(self) -> dict[str, pg.GraphicsObject]:
        """The loss plot's curve, its part beyond ±ε and the ±ε lines (kept between redraws of a
        continuous output, like :meth:`_continuous_curves`)."""
        curves = self._curves if self._curves is not None else {}
        if "loss" not in curves:
            dashed = pg.mkPen(RED, width=1, style=Qt.PenStyle.DashLine)
            curves["loss"] = self.loss.plot(pen=pg.mkPen(GREY, width=2), name="privacy loss")
            curves["over"] = self.loss.plot(pen=pg.mkPen(RED, width=4), connect="finite", name="|loss| > ε")
            for key, text in (("plus", "+ε"), ("minus", "−ε")):
                curves[key] = pg.InfiniteLine(
                    angle=0, pen=dashed, label=text, labelOpts={"position": 0.03, "color": RED}
                )
                self.loss.addItem(curves[key])
            if self._curves is not None:
                self._curves.update(curves)
        return curves

    def _draw_loss(self, grid: np.ndarray, loss: np.ndarray, epsilon: float) -> None:
        self._shade_excess_regions(grid, loss, epsilon)
        clipped = np.clip(
            np.nan_to_num(loss, nan=0.0, posinf=LOSS_CLIP, neginf=-LOSS_CLIP), -LOSS_CLIP, LOSS_CLIP
        )
        over = np.where(np.abs(clipped) > epsilon * (1 + 1e-9), clipped, np.nan)
        items = self._loss_items()
        items["loss"].setData(grid, clipped)
        items["over"].setData(grid, over)
        items["plus"].setValue(epsilon)
        items["minus"].setValue(-epsilon)
        if np.any(np.abs(loss) >= LOSS_CLIP):
            note = pg.TextItem(
                f"losses beyond ±{LOSS_CLIP:g} (or infinite) drawn at ±{LOSS_CLIP:g}",
                color=GREY,
                anchor=(0, 0),
            )
            note.setPos(float(grid[0]), LOSS_CLIP)
            self._add(self.loss, note)

    def _overlay_numeric_draws(self, grid: np.ndarray, discrete: bool) -> None:
        if not discrete:
            curves = self._continuous_curves()
            for key in ("draws_d", "draws_d_prime"):
                curves[key].setData([], [])
        if self.draws is None:
            return
        bins = np.linspace(grid[0], grid[-1], 81) if not discrete else np.append(grid - 0.5, grid[-1] + 0.5)
        for values, color, name in (
            (self.draws.draws_d, BLUE, "draws on D"),
            (self.draws.draws_d_prime, ORANGE, "draws on D'"),
        ):
            finite = values[np.isfinite(values)]
            counts, edges = np.histogram(finite, bins=bins)
            height = counts / (values.size * (1.0 if discrete else np.diff(edges)))
            if not discrete:
                key = "draws_d" if name == "draws on D" else "draws_d_prime"
                self._continuous_curves()[key].setData(edges, height)
                continue
            self.outputs.plot(
                edges,
                height,
                stepMode="center",
                pen=pg.mkPen(color, width=1, style=Qt.PenStyle.DotLine),
                name=f"{name} ({values.size:,})",
            )

    def _draw_categorical(self, result: NeighboursResult, out: CategoricalOutput) -> None:
        x = np.arange(len(out.labels), dtype=float)
        p, q = np.asarray(out.pmf_d, dtype=float), np.asarray(out.pmf_d_prime, dtype=float)
        self.outputs.setLabel("left", "probability of being selected")
        self.outputs.addItem(
            pg.BarGraphItem(x=x - 0.2, height=p, width=0.4, brush=_brush(BLUE, 180), name="M(D)")
        )
        self.outputs.addItem(
            pg.BarGraphItem(x=x + 0.2, height=q, width=0.4, brush=_brush(ORANGE, 180), name="M(D')")
        )
        excess = np.maximum(0.0, p - np.exp(result.epsilon) * q)
        if np.any(excess > 0):
            self.outputs.addItem(pg.BarGraphItem(x=x - 0.2, height=excess, width=0.4, brush=_brush(RED, 200)))
        ticks = [list(zip(x, out.labels, strict=True))]
        for plot in (self.outputs, self.loss):
            plot.getAxis("bottom").setTicks(ticks)
            plot.setLabel("bottom", "outcome")
        self._draw_loss(x, np.asarray(out.privacy_loss, dtype=float), result.epsilon)
        if self.draws is not None:
            for values, color, dx in (
                (self.draws.draws_d, BLUE, -0.2),
                (self.draws.draws_d_prime, ORANGE, 0.2),
            ):
                freq = np.bincount(values[values >= 0].astype(int), minlength=len(out.labels)) / values.size
                self.outputs.plot(x + dx, freq, pen=None, symbol="o", symbolBrush=color, symbolSize=7)
        self.columns = {
            "outcome": list(out.labels),
            "P_D": list(p),
            "P_D_prime": list(q),
            "privacy_loss": list(out.privacy_loss),
        }
        self.delta_label.setText(
            f"δ(ε = {result.epsilon:.3g}) = <b>{self._delta_text(result)}</b> (exact). {out.note}"
        )
