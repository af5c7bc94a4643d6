"""The clipping trade-off view (issue 21, item 2; issue 41, item 2): for a sum, mean, quantile or
trimmed mean, the error of a release by the chosen mechanism (its title names the model,
:class:`~dpexplorer.core.clipping.NoiseModel`) split into bias and noise, against the lower and
the upper bound, with the current bounds marked and the error-minimising bounds shown.

Exploration only: the bias is computed on the true data (``dpexplorer.data.clipping``), so the
view says it must not be used to choose a release's bounds, and offers the private estimate
(``private_bounds_requested``). :func:`job` runs on the compute service; the view only draws."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget
from superqt import QLabeledDoubleRangeSlider

from dpexplorer.core.clipping import ClippingTradeOff, NoiseModel, trade_off
from dpexplorer.gui import palette
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.views.base import BLUE, GREEN, GREY, ORANGE, View, dashed_line, legend_below, new_plot

JOB = "clipping"
CLIPPED_KINDS = frozenset({"sum", "mean", "quantile", "trimmed_mean"})
"""Query kinds (``query.kind``) the view explains."""
GRID_POINTS = 81
WARNING = (
    "<b>Exploration only — observed: not public.</b> The bias is the data's own clipping bias, "
    "computed on the true data: choosing a release's bounds from this view leaks the data. "
    "Estimate them privately instead (DP quantiles, charged to the budget)."
)
TITLE = "Where to clip: bias against noise"


@dataclass(frozen=True, eq=False)
class ClippingResult:
    """What the view draws: the trade-off on a grid around the data, the current bounds."""

    tradeoff: ClippingTradeOff
    statistic: str
    column: str
    epsilon: float
    lower: float
    upper: float
    n: int


def clipping_model(mechanism: Any, params: dict, query_input: Any) -> NoiseModel:
    """The noise model of the chosen ``mechanism`` (its name, label and ``params``); for the
    noisy sum over a noisy count, the count's l1 sensitivity of its input (0: n public)."""
    values = dict(params)
    sensitivities = getattr(query_input, "moment_sensitivities", None)
    if sensitivities is not None:
        values["count_l1"] = float(sensitivities[1])
    return NoiseModel.of(getattr(mechanism, "name", ""), getattr(mechanism, "label", ""), values)


def bound_grid(values: np.ndarray, lower: float, upper: float, points: int = GRID_POINTS) -> np.ndarray:
    """Candidate bounds covering the data with 10 % margins, the current bounds among them."""
    low = min(float(values[0]), lower)
    high = max(float(values[-1]), upper)
    margin = 0.1 * (high - low or 1.0)
    return np.union1d(np.linspace(low - margin, high + margin, points), [lower, upper])


def job(
    dataset: Any, query: Any, epsilon: float, relation: str = "add_remove", lower: float | None = None,
    upper: float | None = None, model: NoiseModel | None = None,
) -> ClippingResult:  # fmt: skip
    """Bias on the true data (data layer) and the chosen mechanism's noise (core, ``model``;
    Laplace when None) on a grid of bounds."""
    from dpexplorer.data.clipping import bias_grid, column_values

    statistic = getattr(query, "statistic", query.kind)
    q = float(getattr(query, "q", 0.5))
    trim = float(getattr(query, "trim_fraction", 0.0))
    low = float(query.lower if lower is None else lower)
    high = float(query.upper if upper is None else upper)
    values = column_values(dataset, query.column)
    grid = bound_grid(values, low, high)
    bias = bias_grid(values, statistic, grid, grid, q=q, trim_fraction=trim)
    if model is not None and model.name == "noisy_mean" and statistic != "mean":
        model = NoiseModel("laplace", model.params, chosen=model.name)
    tradeoff = trade_off(
        statistic, relation, grid, grid, bias, epsilon, n=values.size, trim_fraction=trim,  # type: ignore[arg-type]
        model=model, value=float(values.mean()),
    )  # fmt: skip
    return ClippingResult(tradeoff, statistic, query.column, epsilon, low, high, values.size)


def _positive(values: np.ndarray) -> np.ndarray:
    """NaN where a value is not positive (a log axis cannot show it)."""
    return np.where(values > 0, values, np.nan)


class ClippingView(View):
    """Two plots: error against the upper bound (lower held) and against the lower bound (upper
    held); a range slider moves the bounds; the best bounds on the grid are marked."""

    private_bounds_requested = Signal(str)
    """The column whose bounds the steward wants estimated privately."""

    def __init__(self, compute: ComputeService, parent: QWidget | None = None) -> None:
        super().__init__(TITLE, parent)  # the model is named once a result is drawn
        self.compute = compute
        self.result: ClippingResult | None = None
        self.context: tuple[Any, ...] | None = None
        self._stale = False
        self.warning = QLabel(WARNING)
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet(f"background: {palette.css(palette.NOTE_BACKGROUND)}; padding: 4px;")
        self.slider = QLabeledDoubleRangeSlider(Qt.Orientation.Horizontal)
        self.slider.setToolTip("The declared lower and upper bounds")
        self.slider.valueChanged.connect(self._bounds_moved)
        self.private_button = QPushButton("Estimate bounds privately…")
        self.private_button.setToolTip("Release a low and a high DP quantile (charged to the ledger)")
        self.private_button.clicked.connect(
            lambda: self.private_bounds_requested.emit(self.result.column if self.result else "")
        )
        row = QHBoxLayout()
        row.addWidget(QLabel("Bounds:"))
        row.addWidget(self.slider, 1)
        row.addWidget(self.private_button)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.upper_plot = new_plot(
            "upper bound U", "error (units of the statistic)", "Error as U moves (L held)"
        )
        self.lower_plot = new_plot(
            "lower bound L", "error (units of the statistic)", "Error as L moves (U held)"
        )
        for plot in (self.upper_plot, self.lower_plot):
            plot.setLogMode(False, True)
            legend_below(plot)
        plots = QHBoxLayout()
        plots.addWidget(self.upper_plot)
        plots.addWidget(self.lower_plot)
        self.body.addWidget(self.warning)
        self.body.addLayout(row)
        self.body.addWidget(self.summary)
        self.body.addLayout(plots, 1)
        self.explanation.setText(
            "Expected error of a release of the clipped statistic by the chosen mechanism (named in "
            "the title): √(bias² + noise²). Wider bounds clip less (less bias) but need more noise."
        )
        compute.finished.connect(self._on_result)

    def set_context(
        self,
        dataset: Any,
        query: Any,
        epsilon: float,
        relation: str = "add_remove",
        model: NoiseModel | None = None,
    ) -> None:
        """Compute the trade-off for ``query`` (a clipped statistic) at ``epsilon`` for the
        mechanism ``model`` (Laplace when None), now if the view is on screen, else when it is
        next shown."""
        context = (dataset, query, epsilon, relation, None, None, model)
        if context == self.context:
            return
        self.context = context
        self._stale = True
        if self.isVisible():
            self._submit()

    def clear(self, message: str) -> None:
        """No clipped statistic: say why the view is empty."""
        self.context, self.result, self._stale = None, None, False
        self.compute.cancel(JOB)
        for plot in (self.upper_plot, self.lower_plot):
            plot.clear()
        self.set_text(self.summary, message)

    def _submit(self) -> None:
        if self.context is not None and self._stale:
            self._stale = False
            self.compute.submit(JOB, job, *self.context)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._submit()

    def _bounds_moved(self, value: tuple[float, float]) -> None:
        if self.result is not None:
            self.draw(self.result, *value)

    def _on_result(self, view: str, generation: int, result: object) -> None:
        if view == JOB and isinstance(result, ClippingResult):
            self.result = result
            grid = result.tradeoff.lows
            self.slider.blockSignals(True)
            # superqt's stubs give the double slider its int base's setRange; it takes floats
            self.slider.setRange(float(grid[0]), float(grid[-1]))  # type: ignore[arg-type]
            self.slider.setValue((result.lower, result.upper))
            self.slider.blockSignals(False)
            self.draw(result, result.lower, result.upper)

    def draw(self, result: ClippingResult, lower: float, upper: float) -> None:
        """Curves through the current bounds, the current and the best bounds marked; the title
        names the mechanism modelled."""
        t = result.tradeoff
        self.set_text(self.title, f"<b>{TITLE} — {t.model}</b>")
        i, j = t.at(lower, upper)
        best_low, best_high, best_rmse = t.best()
        self.columns = {"bound": t.highs.tolist()}
        for plot, axis, row, current, best, narrow in (
            (self.upper_plot, t.highs, (i, slice(None)), upper, best_high, 0),
            (self.lower_plot, t.lows, (slice(None), j), lower, best_low, -1),
        ):
            plot.clear()
            # log scale: bias and noise differ by orders of magnitude; a zero bias leaves a gap
            bias, noise, rmse = (
                _positive(np.abs(t.bias[row])),
                _positive(t.noise[row]),
                _positive(t.rmse[row]),
            )
            plot.plot(axis, rmse, pen=palette.pen(GREEN, width=4), name="total error √(bias² + noise²)")
            plot.plot(
                axis,
                bias,
                pen=palette.pen(ORANGE, width=2),
                name="|bias| (observed: not public)",
                connect="finite",
            )
            plot.plot(axis, noise, pen=palette.pen(BLUE, width=2), name="noise (standard deviation)")
            plot.addItem(dashed_line(GREY, f"current {current:.4g}", 0.25, pos=current))
            plot.addItem(dashed_line(GREEN, f"best pair [{best_low:.4g}, {best_high:.4g}]", 0.6, pos=best))
            # the smallest error along this slice; among ties the narrowest bounds
            k = int(np.flatnonzero(t.rmse[row] <= np.nanmin(t.rmse[row]) * (1 + 1e-9))[narrow])
            plot.plot(
                [axis[k]], [t.rmse[row][k]], pen=None, symbol="o", symbolBrush=GREEN, symbolSize=10,
                name="smallest error on this curve",
            )  # fmt: skip
        now = t.rmse[i, j]
        self.set_text(
            self.summary,
            f"{result.statistic.replace('_', ' ')} of <b>{result.column}</b> at ε = {result.epsilon:g}: "
            f"at [{t.lows[i]:.4g}, {t.highs[j]:.4g}] bias {t.bias[i, j]:.4g}, noise "
            f"{t.noise[i, j]:.4g}, error {now:.4g}. Smallest error on the grid: <b>{best_rmse:.4g}</b> "
            f"at [{best_low:.4g}, {best_high:.4g}] (clipping both ends can cancel the bias of a sum or "
            "mean).",
        )
