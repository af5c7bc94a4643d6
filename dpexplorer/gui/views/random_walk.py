"""Composition as a random walk: sample paths of the summed privacy loss of t releases, its mean,
the concentration band, and the ε of basic and advanced composition (Dwork & Roth 2014,
section 3.5.2, Theorem 3.20; :mod:`dpexplorer.core.privacy_loss_walk` computes everything).

The view's settings are declared once (:data:`SETTINGS`) and drive its controls; a lesson step
sets them by name. It does not depend on the data or the query."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QGridLayout, QWidget

from dpexplorer.core.mechanisms.params import (
    EPSILON,
    Param,
    choice,
    probability,
    validate_params,
    whole_number,
)
from dpexplorer.core.privacy_loss_walk import STEP_LAWS, RandomWalk, random_walk
from dpexplorer.gui import palette
from dpexplorer.gui.param_controls import ParamPanel
from dpexplorer.gui.views.base import BLUE, GREY, ORANGE, RED, ResultView, new_plot

QWIDGETSIZE_MAX = (1 << 24) - 1
"""Qt's "no maximum" size."""

SIDE_WIDTH = 420
"""Pixels at most for the settings and the numbers beside the plot, when they go beside it."""
BESIDE_FROM = 1000
"""The view's width (pixels) from which settings and numbers go beside the plot; narrower (the
tab at 1280 x 720, about 750-790 px, teaching mode or not) they go under it, side by side, and
the plot takes the whole width (beside it, it was squeezed to a third with the space under the
numbers empty)."""
SHOWN_PATHS = 60
"""Paths drawn (all of them enter the shares in the summary)."""
SETTINGS: tuple[Param, ...] = (
    replace(
        EPSILON, default=0.1, help="The ε of each release; every release's privacy loss lies in [−ε, ε]."
    ),
    whole_number(
        "t",
        "releases t",
        default=200,
        low=1,
        high=5000,
        help="How many ε-DP releases are composed: the number of steps of the walk.",
    ),
    probability(
        "delta_prime",
        "δ′ (advanced composition)",
        default=1e-3,
        slider=(1e-9, 0.5),
        help=(
            "Advanced composition's extra failure probability: the walk ends above its ε′ at most this often."
        ),
    ),
    whole_number(
        "paths",
        "sample paths",
        default=400,
        low=1,
        high=5000,
        help=f"Simulated transcripts (the first {SHOWN_PATHS} are drawn; all are counted).",
    ),
    choice(
        "law",
        "each release",
        default="randomized_response",
        choices=tuple(STEP_LAWS),
        help="; ".join(f"{k}: {v}" for k, v in STEP_LAWS.items()),
    ),
)


def job(settings: dict[str, Any], seed: int) -> RandomWalk:
    """Sample paths and closed forms for the view's settings (exploration generator, seeded)."""
    values = validate_params(SETTINGS, settings)
    return random_walk(
        values["epsilon"], values["t"], values["delta_prime"], values["paths"], values["law"], seed
    )


def summary_html(walk: RandomWalk) -> str:
    t = int(walk.releases[-1])
    return (
        f"After <b>t = {t}</b> releases of ε = {walk.epsilon:g}: "
        f"<b style='color:{palette.css(GREY)}'>basic composition ε = {walk.basic[-1]:.4g}</b> (the "
        "loss can never "
        f"exceed it); <b style='color:{palette.css(RED)}'>advanced composition ε′ = "
        f"{walk.advanced[-1]:.4g}</b> "
        f"at δ′ = {walk.delta_prime:g} (exceeded by {walk.share_above_advanced:.1%} of the "
        f"{walk.paths.shape[0]} paths). The mean loss is <b style='color:{palette.css(BLUE)}'>"
        f"{walk.mean[-1]:.4g}</b>, below Dwork &amp; Roth's bound tε(e<sup>ε</sup>−1) = "
        f"{walk.mean_bound[-1]:.4g}; the <span style='color:{palette.css(ORANGE)}'>band</span> "
        f"mean ± ε√(2t ln(1/δ′)) holds {1 - walk.share_outside_band:.1%} of the paths."
    )


class RandomWalkView(ResultView):
    """Controls over a plot of the walk against the number of releases."""

    settings_changed = Signal(dict)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(
            "Composition as a random walk: the privacy loss of t releases",
            parent,
            explanation="Each release adds its privacy loss ln p<sub>D</sub>(o)/p<sub>D′</sub>(o), between "
            "−ε and ε; the total wanders like a random walk, so it grows like t·ε² on average plus "
            "√t·ε, not t·ε (Dwork &amp; Roth 2014, Theorem 3.20).",
        )
        self.controls = ParamPanel()
        self.controls.build(SETTINGS)
        self.controls.changed.connect(self.settings_changed)
        self.plot = new_plot("releases t", "summed privacy loss")
        self.result_plots = (self.plot,)  # beside or under its settings: see _arrange
        self.grid = QGridLayout()
        self.body.addLayout(self.grid, 1)
        self.beside: bool | None = None
        self._arrange(beside=False)
        self.plot.getPlotItem().legend.setOffset((10, 10))  # top left: the walk climbs to the right
        self.result: RandomWalk | None = None

    def _arrange(self, beside: bool) -> None:
        """Settings and numbers beside the plot (a wide view) or under it, side by side."""
        if beside == self.beside:
            return
        self.beside = beside
        grid = self.grid
        for widget in (self.plot, self.controls, self.error, self.summary):
            grid.removeWidget(widget)
        for i in range(3):
            grid.setRowStretch(i, 0)
            grid.setColumnStretch(i, 0)
        if beside:
            grid.addWidget(self.plot, 0, 0, 4, 1)
            grid.addWidget(self.controls, 0, 1)
            grid.addWidget(self.error, 1, 1)
            grid.addWidget(self.summary, 2, 1)
            grid.setRowStretch(3, 1)
            grid.setColumnStretch(0, 1)
        else:
            grid.addWidget(self.plot, 0, 0, 1, 2)
            grid.addWidget(self.controls, 1, 0, Qt.AlignmentFlag.AlignTop)
            grid.addWidget(self.summary, 1, 1, Qt.AlignmentFlag.AlignTop)
            grid.addWidget(self.error, 2, 0, 1, 2)
            grid.setRowStretch(0, 1)
            grid.setColumnStretch(0, 1)
            grid.setColumnStretch(1, 1)
        for widget in (self.controls, self.summary):
            widget.setMaximumWidth(SIDE_WIDTH if beside else QWIDGETSIZE_MAX)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._arrange(beside=event.size().width() >= BESIDE_FROM)

    def settings(self) -> dict[str, Any]:
        return self.controls.values()

    def set_settings(self, values: dict[str, Any]) -> None:
        """Set some settings (a lesson step's); emits ``settings_changed`` once."""
        self.controls.blockSignals(True)
        self.controls.set_values(values)
        self.controls.blockSignals(False)
        self.settings_changed.emit(self.settings())

    def plot_area(self) -> QWidget:
        return self.plot

    def show_result(self, walk: RandomWalk) -> None:
        self.start_result(walk)
        self.set_text(self.summary, summary_html(walk))
        plot = self.plot
        t = walk.releases.astype(float)
        shown = walk.paths[:SHOWN_PATHS]
        xs = np.tile(t, shown.shape[0])
        connect = np.ones(xs.size, dtype=bool)
        connect[t.size - 1 :: t.size] = False  # one item for every path: no line between paths
        plot.plot(
            xs,
            shown.ravel(),
            connect=connect,
            pen=palette.pen(GREY, 1, alpha=90),
            name="sample paths",
        )
        low = plot.plot(t, walk.band_low, pen=palette.pen(ORANGE, width=1))
        high = plot.plot(
            t, walk.band_high, pen=palette.pen(ORANGE, width=1), name="band: mean ± ε√(2t ln 1/δ′)"
        )
        plot.addItem(pg.FillBetweenItem(low, high, brush=palette.brush(ORANGE, 50)))
        plot.plot(t, walk.mean, pen=palette.pen(BLUE, width=3), name="mean loss (exact)")
        dash = pg.QtCore.Qt.PenStyle.DashLine
        plot.plot(
            t,
            walk.mean_bound,
            pen=palette.pen(BLUE, width=2, style=dash),
            name="tε(e^ε − 1), D&R's bound on the mean",
        )
        plot.plot(t, walk.advanced, pen=palette.pen(RED, width=3, style=dash), name="advanced composition ε′")
        plot.plot(t, walk.basic, pen=palette.pen(GREY, width=2, style=dash), name="basic composition tε")
        top = max(float(walk.advanced[-1]), float(shown.max(initial=0.0)))
        bottom = min(float(walk.band_low.min()), float(shown.min(initial=0.0)))
        plot.setRange(xRange=(0, t[-1]), yRange=(bottom, top * 1.1 if top > 0 else 1.0))
        self.columns = {
            "t": list(t),
            "mean": list(walk.mean),
            "mean bound": list(walk.mean_bound),
            "band low": list(walk.band_low),
            "band high": list(walk.band_high),
            "advanced epsilon": list(walk.advanced),
            "basic epsilon": list(walk.basic),
        }
