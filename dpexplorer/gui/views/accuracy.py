"""The accuracy view: error against ε (current point marked), the error tail P(|error| > α)
against α with the lecture's bound beside the exact value, and the confidence interval."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QLabel, QWidget

from dpexplorer.gui import palette
from dpexplorer.gui.jobs import AccuracyResult
from dpexplorer.gui.views.base import (
    RED,
    CurveSet,
    View,
    curve_columns,
    dashed_line,
    keep_line_labels_inside,
    new_plot,
)
from dpexplorer.gui.views.live_text import LiveText

INVISIBLE_NOISE = 1e-9
"""An interval narrower than this is below the precision any answer is printed with."""


class AccuracyView(View):
    """Draws an :class:`AccuracyResult`. ``ci_level`` is the level the user chose."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Accuracy on your dataset", parent)
        self.ci_level = QDoubleSpinBox()
        self.ci_level.setRange(0.5, 0.9999)
        self.ci_level.setDecimals(4)
        self.ci_level.setSingleStep(0.01)
        self.ci_level.setValue(0.95)
        self.ci_level.setToolTip(
            "Confidence level 1 − β of the interval: the released value lands within the "
            "interval around the true answer with this probability."
        )
        level_row = QHBoxLayout()
        level_row.addWidget(QLabel("Confidence level 1 − β:"))
        level_row.addWidget(self.ci_level)
        level_row.addStretch(1)
        self.body.addLayout(level_row)
        # the summary on a line of its own, across the view: beside the level control it had a
        # third of the width, and a long summary (noisy sum / noisy count's notes) took 315 px of
        # a 1280 x 720 teaching window, leaving 97 px to each plot
        self.summary = LiveText()
        self.body.addWidget(self.summary)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet(f"color: {palette.css(RED)}")
        self.error.hide()
        self.body.addWidget(self.error)
        self.vs_epsilon = new_plot("ε (log scale)", "error", "Error against ε")
        self.tail = new_plot("α (error size)", "β = P(|error| > α)", "How likely is an error larger than α?")
        self.vs_n = new_plot("n, rows in the dataset (log scale)", "error", "Error against dataset size")
        row = QHBoxLayout()
        row.addWidget(self.vs_epsilon)
        row.addWidget(self.tail)
        self.body.addLayout(row, 1)
        self.body.addWidget(self.vs_n, 1)
        self.result: AccuracyResult | None = None
        self.curves = {plot: CurveSet(plot) for plot in (self.vs_epsilon, self.tail, self.vs_n)}
        self.now_line = self._marker(self.vs_epsilon, 0.08)  # below the legend
        self.interval_line = self._marker(self.tail, 0.55)
        for plot in (self.vs_epsilon, self.tail):  # a label near the right edge goes left of its line
            box = plot.getViewBox()
            box.sigResized.connect(lambda *_args, p=plot: keep_line_labels_inside(p))
            box.sigRangeChanged.connect(lambda *_args, p=plot: keep_line_labels_inside(p))

    @staticmethod
    def _marker(plot: pg.PlotWidget, position: float) -> pg.InfiniteLine:
        """A red dashed vertical line with a label, moved at each redraw."""
        line = dashed_line(RED, "", position)
        plot.addItem(line)
        return line

    @staticmethod
    def _move(line: pg.InfiniteLine, position: float, text: str) -> None:
        line.label.setFormat(text.replace("{", "{{").replace("}", "}}"))
        line.setValue(position)

    def show_error(self, message: str) -> None:
        """The job failed or refused: say why and clear the curves (never the previous
        result's as if they were this one's)."""
        self.result, self.columns = None, {}
        self._pending = None  # a result waiting for the tab to show is older than this failure
        for curves in self.curves.values():
            curves.draw(())
        for line in (self.now_line, self.interval_line):
            line.hide()
        self.summary.setText("")
        self.error.setText(message)
        self.error.show()

    def show_result(self, result: AccuracyResult) -> None:
        self.error.hide()
        self.now_line.show()
        self.result = result
        report = result.report
        self.curves[self.vs_epsilon].draw(
            report.error_vs_epsilon,
            log_x=True,
            log_y=True,
            empty="No curve against ε for this mechanism:\nits accuracy is simulated at this ε only.",
        )
        chosen = float(result.params.get("epsilon", result.epsilon))  # the sweep's x: the slider
        self._move(self.now_line, float(np.log10(chosen)), f"now: ε = {chosen:.3g}")
        tails = (report.error_tail,) + ((report.error_tail_bound,) if report.error_tail_bound else ())
        self.curves[self.tail].draw(tails)
        finite = bool(np.isfinite(report.ci_halfwidth))
        self.interval_line.setVisible(finite)  # a line at infinity has no place (and NaN geometry)
        if finite:
            interval = f"{report.ci_level:.0%} interval: ±{report.ci_halfwidth:.3g}"
            self._move(self.interval_line, report.ci_halfwidth, interval)
        self.curves[self.vs_n].draw(
            report.error_vs_n,
            log_x=True,
            log_y=True,
            empty="No curve against n for this mechanism: its error does not follow from n alone\n"
            "(it depends on the scores or the workload, which a resized dataset would change).",
        )
        mse = "undefined (infinite)" if not np.isfinite(report.mse) else f"{report.mse:.4g}"
        notes = " ".join(report.notes)
        if 0 < report.ci_halfwidth < INVISIBLE_NOISE:
            notes = (
                "The noise is far below any digit an answer shows: the release equals the true "
                f"answer to print precision. {notes}"
            )
        within = (
            f"With probability {report.ci_level:.2%} the released value is within "
            f"<b>±{report.ci_halfwidth:.4g}</b> of the true answer."
            if finite
            else f"No finite interval holds the error with probability {report.ci_level:.2%}: "
            "the mechanism answers ⊥ (no answer) or errs without bound more often than that."
        )
        self.summary.setText(f"{within} Mean squared error: {mse}. {notes}")
        self.set_text(
            self.explanation,
            f"<b>{result.mechanism}</b>. Solid: exact; dashed: the bound proved in the lecture "
            "notes (it must lie above the exact curve); dotted: Monte Carlo.",
        )
        self.columns = curve_columns(report.error_vs_epsilon + tails + report.error_vs_n)
