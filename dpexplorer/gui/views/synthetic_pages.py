"""The pages of the synthetic-data view beyond the per-marginal errors (issue 30): the workload
error against epsilon (a long job, run on request with progress and cancel), the selection rounds
of the run (which marginal at what budget, from its record), and a true-against-synthetic
marginal picker (exploration only: it shows the true data).

Each page only draws what a job computed (:mod:`dpexplorer.core.synthetic_error`,
:func:`dpexplorer.gui.views.synthetic.job` and :func:`run_job`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.marginals import MarginalInput
from dpexplorer.core.mechanisms.base import Mechanism, QueryInput
from dpexplorer.core.mechanisms.runs import NO_JOB, Job
from dpexplorer.core.synthetic_error import (
    DEFAULT_EPSILONS,
    METHOD_LABELS,
    METHODS,
    ErrorCurve,
    RoundCost,
    error_curve,
)
from dpexplorer.gui import palette
from dpexplorer.gui.plot_export import Column
from dpexplorer.gui.views.base import BLUE, GREY, ORANGE, PALETTE, PURPLE, new_plot, rich_label
from dpexplorer.gui.views.run_controls import RunControls
from dpexplorer.gui.views.selection import (
    MAX_TICK_LABELS,
    axis_end,
    category_plot,
    colour_key,
    label_rows,
    paired_hbars,
)

CURVE_COLOURS = dict(zip(METHODS, (PURPLE, PALETTE[2], ORANGE, GREY), strict=True))
"""MST, AIM, direct, independent (independent grey, as on the per-marginal page)."""
CURVE_SYMBOLS = dict(zip(METHODS, ("o", "s", "t", "d"), strict=True))
CURVE_GLYPHS = dict(zip(METHODS, ("●", "■", "▼", "◆"), strict=True))
"""The symbols as text, for the key above the plot."""


def run_job(
    mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int, job: Job = NO_JOB
) -> ErrorCurve:
    """The workload error against epsilon (:func:`~dpexplorer.core.synthetic_error.error_curve`)
    at :data:`DEFAULT_EPSILONS`, with the current parameters and seed (exploration only)."""
    if not isinstance(query, MarginalInput):
        raise NotApplicableError(f"{mechanism.label} needs a marginals query")
    return error_curve(query, params, DEFAULT_EPSILONS, seed, job=job)


# ---------------------------------------------------------------- the curve page
class CurvePage(QWidget):
    """Run / Cancel and a progress bar above the curve of each method's mean workload TVD
    against epsilon (log scale). Signals :attr:`run_requested`, :attr:`cancel_requested`."""

    run_requested = Signal()
    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controls = RunControls(
            "Run the curve",
            "Fit MST and AIM at each ε (exploration only: never a release)",
            "Stop the fits; nothing is drawn",
            "%p% of the fits done",
            busy="Fitting MST and AIM at each ε…",
            cancelled="Cancelled: the curve was not drawn.",
        )
        self.run_button, self.cancel_button = self.controls.run_button, self.controls.cancel_button
        self.progress, self.status = self.controls.progress, self.controls.status
        self.plot = new_plot("privacy budget ε (log scale)", "mean TVD, workload", "")
        self.plot.getPlotItem().legend = None  # the key is the line above the plot: it hides no point
        self.summary = rich_label()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.controls)
        layout.addWidget(self.summary)
        layout.addWidget(self.plot, 1)
        self.controls.run_requested.connect(self.run_requested)
        self.controls.cancel_requested.connect(self.cancel_requested)
        self.curve: ErrorCurve | None = None
        self.columns: dict[str, Column] = {}
        self.set_cost("")
        self.clear()

    @property
    def running(self) -> bool:
        return self.controls.running

    def set_cost(self, run_seconds: str) -> None:
        """What a curve costs, given the current single run's time in words ("" unknown)."""
        points = ", ".join(f"{e:g}" for e in DEFAULT_EPSILONS)
        each = f" (the run above took {run_seconds})" if run_seconds else ""
        self.controls.info.setText(
            f"Run fits MST and AIM at ε = {points}{each}: {2 * len(DEFAULT_EPSILONS)} fits, AIM the "
            "slow one; on Adult's default five columns about half a minute to a minute on two cores."
        )

    def enable(self, ready: bool) -> None:
        """Whether a marginals query is in (the button waits for one)."""
        self.controls.set_ready(ready)

    def run_started(self) -> None:
        self.controls.started(self.controls.busy)

    def run_cancelled(self) -> None:
        self.controls.idle(self.controls.cancelled)

    def run_failed(self, message: str) -> None:
        self.controls.idle(f"The curve stopped: {message}")

    def set_progress(self, fraction: float) -> None:
        self.controls.set_progress(fraction)

    def clear(self) -> None:
        """A new query: the old curve no longer describes it."""
        self.curve = None
        self.plot.clear()
        self.plot.setLogMode(x=False, y=False)
        self.plot.getAxis("bottom").setTicks([[], []])
        self.plot.getAxis("left").setTicks([[], []])
        note = pg.TextItem(
            "No curve yet: press Run the curve.", color=palette.colour(GREY), anchor=(0.5, 0.5)
        )
        note.setPos(0.5, 0.5)
        self.plot.addItem(note)
        self.plot.setRange(xRange=(0.0, 1.0), yRange=(0.0, 1.0), padding=0.0)
        self.summary.clear()
        self.columns = {}
        if not self.running:
            self.status.setText("Press Run the curve to fit MST and AIM at each ε.")

    def show_baselines(self, baselines: ErrorCurve) -> None:
        """The two baselines of the current query (free: computed with the single run), unless
        a whole curve of the same workload is already drawn."""
        if (
            self.curve is not None
            and self.curve.workload == baselines.workload
            and self._complete(self.curve)
        ):
            return
        self.show_curve(baselines)

    @staticmethod
    def _complete(curve: ErrorCurve) -> bool:
        return {"mst", "aim"} <= set(curve.errors)

    def show_curve(self, curve: ErrorCurve) -> None:
        """Draw ``curve`` (every method it holds); a curve with MST and AIM ends a run."""
        self.curve = curve
        if self._complete(curve):
            self.controls.idle(f"Done in {sum(curve.seconds.values()):.1f} s (seed {curve.seed}).")
        elif not self.running:
            self.status.setText("The two baselines are drawn; press Run the curve to add MST and AIM.")
        self.plot.clear()
        self.plot.setLogMode(x=True, y=False)
        x = np.asarray(curve.epsilons, dtype=float)
        self.plot.getAxis("bottom").setTicks([[(math.log10(e), f"{e:g}") for e in x], []])
        self.plot.getAxis("left").setTicks(None)
        for method, values in curve.errors.items():
            colour = CURVE_COLOURS[method]
            self.plot.plot(
                x,
                values,
                pen=palette.pen(colour, 2),
                symbol=CURVE_SYMBOLS[method],
                symbolBrush=palette.brush(colour),
                symbolPen=None,
            )
        top = axis_end(*curve.errors.values(), room=1.1)
        self.plot.setYRange(0.0, top, padding=0.0)
        self.plot.setXRange(math.log10(x.min()), math.log10(x.max()), padding=0.08)
        key = " &nbsp; ".join(
            f"<span style='color:{palette.css(CURVE_COLOURS[m])}'>{CURVE_GLYPHS[m]}</span> {METHOD_LABELS[m]}"
            for m in curve.errors
        )
        parts = [f"{m.upper()} {curve.seconds[m]:.1f} s" for m in ("mst", "aim") if m in curve.errors]
        self.summary.setText(
            f"{key}<br>Mean TVD over the {len(curve.workload)} workload marginals, one seeded run "
            f"per method and ε, δ = {curve.delta:.3g}, estimator {curve.estimator}"
            + (f"; {', '.join(parts)}." if parts else ".")
        )
        self.columns = {
            "epsilon": list(x),
            "rho": list(curve.rhos),
            **{f"{m}_workload_tvd": list(v) for m, v in curve.errors.items()},
        }


# ---------------------------------------------------------------- the rounds page
class RoundsPage(QWidget):
    """The run's selection rounds: the zCDP each round spent (bars, one per round) and a table
    of the marginal each measured, its selection epsilon, measurement sigma and candidates."""

    HEADERS = ("round", "marginal measured", "ε select", "σ noise", "ρ spent", "candidates")
    TIPS = (
        "The round's number",
        "The marginal the exponential mechanism chose this round (a DP output)",
        "The exponential mechanism's ε in this round (its zCDP is ε²/8)",
        "The standard deviation of the Gaussian noise on each cell of the measured marginal",
        "The zCDP the round spent: selection plus measurement",
        "How many marginals the selection chose among",
    )

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = rich_label()
        self.plot = new_plot("round", "zCDP ρ spent in the round", "")
        self.plot.getPlotItem().legend = None
        self.table = QTableWidget(0, len(self.HEADERS))
        self.table.setHorizontalHeaderLabels(list(self.HEADERS))
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        for j, tip in enumerate(self.TIPS):
            header = self.table.horizontalHeaderItem(j)
            if header is not None:
                header.setToolTip(tip)
        row = QHBoxLayout()
        row.addWidget(self.plot, 2)
        row.addWidget(self.table, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addLayout(row, 1)
        self.columns: dict[str, Column] = {}

    def show_rounds(
        self, mechanism: str, rounds: Sequence[RoundCost], one_way_rho: float, rho: float
    ) -> None:
        self.plot.clear()
        numbers = np.arange(1, len(rounds) + 1, dtype=float)
        costs = np.array([r.rho for r in rounds], dtype=float)
        if len(rounds):
            self.plot.addItem(
                pg.BarGraphItem(
                    x=numbers, height=costs, width=0.7, brush=palette.brush(PURPLE, 190), pen=None
                )
            )
            self.plot.setXRange(0.4, len(rounds) + 0.6, padding=0.0)
            step = max(1, math.ceil(len(rounds) / 20))
            self.plot.getAxis("bottom").setTicks(
                [[(float(k), str(k)) for k in range(1, len(rounds) + 1, step)], []]
            )
            self.plot.setYRange(0.0, axis_end(costs, room=1.15), padding=0.0)
        self.table.setRowCount(len(rounds))
        for i, r in enumerate(rounds):
            cells = (
                f"{i + 1}",
                r.marginal,
                f"{r.epsilon:.4g}",
                f"{r.sigma:.4g}",
                f"{r.rho:.4g}",
                f"{r.candidates:,}",
            )
            for j, text in enumerate(cells):
                self.table.setItem(i, j, QTableWidgetItem(text))
        spent = one_way_rho + float(costs.sum())
        anneal = int(np.sum(costs[1:] > costs[:-1] * 1.5)) if len(costs) > 1 else 0
        doubled = (
            f" A round's budget grew {anneal} time(s): AIM anneals when the model already fits "
            "the marginal it measured."
            if anneal
            else ""
        )
        self.summary.setText(
            f"{mechanism}: the {len(rounds)} round(s) recorded by this run, after the 1-way marginals "
            f"(measured first, ρ = {one_way_rho:.4g}). Spent in all ρ = {spent:.4g} of {rho:.4g}.{doubled} "
            "Which marginal each round chose is a DP output of the run (the exponential mechanism)."
        )
        self.columns = {
            "round": list(numbers),
            "marginal": [r.marginal for r in rounds],
            "selection_epsilon": [r.epsilon for r in rounds],
            "measurement_sigma": [r.sigma for r in rounds],
            "rho": list(costs),
            "candidates": [r.candidates for r in rounds],
        }


# ---------------------------------------------------------------- the picker page
@dataclass(frozen=True, eq=False)
class MarginalPair:
    """One marginal's cells with the true and the synthetic counts (the true ones are private:
    exploration only)."""

    name: str
    cells: tuple[str, ...]
    true: np.ndarray
    synthetic: np.ndarray

    def shares(self) -> tuple[np.ndarray, np.ndarray]:
        return self.true / max(float(self.true.sum()), 1.0), self.synthetic / max(
            float(self.synthetic.sum()), 1.0
        )


class PickerPage(QWidget):
    """Pick a marginal; its true and synthetic shares side by side (bars, or a scatter of one
    against the other when it has too many cells to name)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.picker = QComboBox()
        self.picker.setToolTip("The marginal to compare (1-way, 2-way and the workload's)")
        self.warning = QLabel(
            "Exploration only: this picker reads the TRUE data of your table beside the synthetic "
            "one. Nothing here is private; release the synthetic table itself, never this page."
        )
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet(f"color: {palette.css(palette.WARNING_TEXT)};")
        self.key = rich_label()
        top = QHBoxLayout()
        top.addWidget(QLabel("Marginal:"))
        top.addWidget(self.picker, 1)
        self.plot = category_plot("share of the rows", "", "cell")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.warning)
        layout.addWidget(self.key)
        layout.addWidget(self.plot, 1)
        self.pairs: dict[str, MarginalPair] = {}
        self.columns: dict[str, Column] = {}
        self.picker.currentTextChanged.connect(self._draw)

    def set_marginals(self, pairs: Sequence[MarginalPair]) -> None:
        chosen = self.picker.currentText()
        self.pairs = {p.name: p for p in pairs}
        self.picker.blockSignals(True)
        self.picker.clear()
        self.picker.addItems(list(self.pairs))
        if chosen in self.pairs:
            self.picker.setCurrentText(chosen)
        self.picker.blockSignals(False)
        self._draw(self.picker.currentText())

    def _draw(self, name: str) -> None:
        pair = self.pairs.get(name)
        self.plot.clear()
        if pair is None:
            self.columns = {}
            return
        true, synthetic = pair.shares()
        tvd = 0.5 * float(np.abs(true - synthetic).sum())
        many = len(pair.cells) > MAX_TICK_LABELS
        if many:
            self._scatter(true, synthetic)
        else:
            self._bars(pair, true, synthetic)
        self.key.setText(
            f"{colour_key('true data (shares of its rows)', 'synthetic table (shares of its rows)')}"
            if not many
            else f"Each dot is one of the {len(pair.cells):,} cells: its true share across, its "
            "synthetic share up; on the dashed line they agree."
        )
        self.plot.setTitle(f"{pair.name}: total-variation distance {tvd:.3f}")
        self.columns = {
            "cell": list(pair.cells),
            "true_share": list(true),
            "synthetic_share": list(synthetic),
        }

    def _bars(self, pair: MarginalPair, true: np.ndarray, synthetic: np.ndarray) -> None:
        self.plot.invertY(True)
        self.plot.setLabel("bottom", "share of the rows")
        self.plot.setLabel("left", "cell")
        self.plot.getAxis("left").setTicks(None)
        paired_hbars(self.plot, true, synthetic, axis_end(true, synthetic, room=1.2))
        label_rows(self.plot, list(pair.cells))

    def _scatter(self, true: np.ndarray, synthetic: np.ndarray) -> None:
        self.plot.invertY(False)
        axis = self.plot.getAxis("left")
        axis.setTicks(None)
        axis.setWidth(None)
        self.plot.setLabel("bottom", "true share of the cell")
        self.plot.setLabel("left", "synthetic share of the cell")
        top = axis_end(true, synthetic, room=1.05)
        self.plot.plot([0.0, top], [0.0, top], pen=palette.pen(GREY, 1, Qt.PenStyle.DashLine))
        self.plot.plot(
            true,
            synthetic,
            pen=None,
            symbol="o",
            symbolSize=6,
            symbolBrush=palette.brush(BLUE, 170),
            symbolPen=None,
        )
        self.plot.setXRange(0.0, top, padding=0.0)
        self.plot.setYRange(0.0, top, padding=0.0)
