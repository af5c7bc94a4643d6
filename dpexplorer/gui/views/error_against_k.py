"""Answering k counting queries: BLR's synthetic database against PMW's online answers, their
error as k grows, simulated (seeded, with two standard errors shaded) beside the theory's bounds
(:mod:`dpexplorer.core.error_against_k` computes everything; this view only draws)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from dpexplorer.core.error_against_k import ErrorAgainstK, error_against_k
from dpexplorer.core.mechanisms.base import Mechanism, QueryInput, WorkloadInput
from dpexplorer.core.mechanisms.pmw import THRESHOLD, UPDATES
from dpexplorer.core.row_count import COUNT_SHARE
from dpexplorer.gui import palette
from dpexplorer.gui.views.base import BLUE, GREY, ORANGE, ResultView, log_ticks, new_plot

TITLE = "Answering k counting queries: BLR against PMW, error against k"


NOT_A_WORKLOAD = (
    "BLR and PMW answer workloads of counting queries: choose Statistic › Workload to see their "
    "error as the number of queries k grows."
)


def job(mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int) -> ErrorAgainstK | str:
    """BLR and PMW against k on the workload's data at the current ε; PMW's T, L and row-count
    share from the current parameters when the mechanism is PMW, else their defaults. For
    another query, why there is nothing to draw (not an error: the tab simply does not apply)."""
    del mechanism
    if not isinstance(query, WorkloadInput):
        return NOT_A_WORKLOAD
    return error_against_k(
        query.histogram_d,
        epsilon=float(params["epsilon"]),
        threshold=float(params.get("threshold", THRESHOLD.default)),
        updates=int(params.get("updates", UPDATES.default)),
        count_share=float(params.get("count_share", COUNT_SHARE.default)),
        relation=query.relation,
        seed=seed,
    )


def summary_html(result: ErrorAgainstK, current_k: int | None) -> str:
    last = -1
    here = f"; the workload on screen: k = {current_k} (grey line)" if current_k else ""
    return (
        f"{result.replicates} random workloads per k, n = {result.n:,.0f}, ε = {result.epsilon:g}{here}. "
        f"At k = {int(result.ks[last])}: <b style='color:{palette.css(BLUE)}'>BLR</b> (m = "
        f"{result.m} synthetic "
        f"rows) errs by {result.blr_mean[last]:.2g} (bound {result.blr_bound[last]:.2g}); "
        f"<b style='color:{palette.css(ORANGE)}'>PMW</b> by {result.pmw_mean[last]:.2g} on the "
        "queries it answers "
        f"({1 - result.beta:.0%} bound {result.pmw_bound[last]:.2g}), and answers ⊥ to "
        f"{result.pmw_bottom[last]:.0%} of them once its L updates are spent."
    )


class ErrorAgainstKView(ResultView):
    """The two mechanisms' max error against k (log scale), and PMW's share of ⊥ below it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(
            TITLE,
            parent,
            explanation="BLR releases one synthetic dataset that answers every query; PMW answers the "
            "queries one by one and updates a public guess only when it errs. Both errors grow with "
            "the number of queries k only like log k (Dwork &amp; Roth 2014, sections 4.1 and 4.2).",
        )
        self.plot = new_plot("number of queries k (log scale)", "max error (log scale)")
        self.bottom_plot = new_plot("number of queries k (log scale)", "share ⊥")
        self.bottom_plot.setXLink(self.plot)
        self.bottom_plot.getPlotItem().legend.setOffset((10, 10))  # top left: ⊥ comes late
        legend = self.plot.getPlotItem().legend
        legend.setOffset((10, 10))  # top left: the errors climb to the right
        legend.setBrush(palette.brush(palette.PLOT_BACKGROUND, 210))  # readable where a line passes under it
        self.place_plots((self.plot, 3), (self.bottom_plot, 2), beside=False)
        self.result: ErrorAgainstK | None = None
        self.current_k: int | None = None

    def plot_area(self) -> QWidget:
        return self.plot

    def show_result(self, result: ErrorAgainstK | str) -> None:
        self.error.hide()
        shown = not isinstance(result, str)
        for plot in (self.plot, self.bottom_plot):  # no empty frames: the summary says why
            plot.setVisible(shown)
        if isinstance(result, str):  # nothing to draw for this query, and why
            self.result, self.columns = None, {}
            self.set_text(self.summary, result)
            return
        self.result = result
        self.set_text(self.summary, summary_html(result, self.current_k))
        x = np.log2(result.ks.astype(float))  # log2 k, labelled with k itself
        ticks = [[(float(v), str(int(k))) for v, k in zip(x, result.ks, strict=True)]]
        curves = {
            "BLR": (BLUE, result.blr_mean, result.blr_se, result.blr_bound, "bound on the mean"),
            "PMW": (
                ORANGE,
                result.pmw_mean,
                result.pmw_se,
                result.pmw_bound,
                f"{1 - result.beta:.0%} bound, answered queries",
            ),
        }
        # A log error axis: the bounds sit an order of magnitude above the simulated errors, and
        # on a linear axis the simulated curves would be flattened at its foot.
        arrays = [a for _, mean, se, bound, _ in curves.values() for a in (mean + 2 * se, bound)]
        finite = np.concatenate(
            [a[np.isfinite(a) & (a > 0)] for a in arrays] + [result.pmw_mean[result.pmw_mean > 0]]
        )
        floor = float(finite.min()) / 2 if finite.size else 1e-3

        def log(values: np.ndarray) -> np.ndarray:
            return np.log10(np.clip(values, floor, None))

        plot = self.plot
        plot.clear()
        dash = Qt.PenStyle.DashLine
        for name, (color, mean, se, bound, bound_name) in curves.items():
            low = plot.plot(x, log(mean - 2 * se), pen=pg.mkPen(None))
            high = plot.plot(x, log(mean + 2 * se), pen=pg.mkPen(None))
            plot.addItem(pg.FillBetweenItem(low, high, brush=palette.brush(color, 60)))
            plot.plot(
                x,
                log(mean),
                pen=palette.pen(color, width=3),
                symbol="o",
                symbolSize=6,
                symbolBrush=color,
                name=f"{name}: simulated mean ± 2 SE",
            )
            plot.plot(
                x, log(bound), pen=palette.pen(color, width=2, style=dash), name=f"{name}: {bound_name}"
            )
        if self.current_k:
            line = pg.InfiniteLine(
                pos=float(np.log2(self.current_k)), angle=90, pen=palette.pen(GREY, width=1, style=dash)
            )
            plot.addItem(line)
        plot.getAxis("left").setTicks(log_ticks([[floor, float(finite.max(initial=floor))]]))
        x_range = (x[0] - 0.3, x[-1] + 0.3)  # the first and last k's labels inside the axis
        low_y, high_y = np.log10(floor), np.log10(float(finite.max(initial=floor)))
        # headroom above the curves for the legend (top left)
        plot.setRange(xRange=x_range, yRange=(low_y, high_y + 1.3 * (high_y - low_y)), padding=0.0)
        bottom = self.bottom_plot
        bottom.clear()
        bottom.plot(
            x,
            result.pmw_bottom,
            pen=palette.pen(ORANGE, width=3),
            symbol="o",
            symbolSize=6,
            symbolBrush=ORANGE,
            name="PMW: share of queries answered ⊥",
        )
        bottom.setRange(xRange=x_range, yRange=(-0.3, 1.3), padding=0.0)
        axis = bottom.getAxis("left")
        axis.setTicks([[(0.0, "0"), (0.5, "50%"), (1.0, "100%")]])
        for widget in (plot, bottom):
            widget.getAxis("bottom").setTicks(ticks)
        self.columns = {
            "k": list(result.ks.astype(float)),
            "BLR mean max error": list(result.blr_mean),
            "BLR standard error": list(result.blr_se),
            "BLR best candidate's max error": list(result.blr_opt),
            "BLR bound on the mean": list(result.blr_bound),
            "PMW mean max error (answered)": list(result.pmw_mean),
            "PMW standard error": list(result.pmw_se),
            f"PMW bound (probability {1 - result.beta:g})": list(result.pmw_bound),
            "PMW share answered bottom": list(result.pmw_bottom),
        }
