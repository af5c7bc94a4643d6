"""Compare two mechanisms: pin the one on screen, choose another, and see both.

Pinning keeps a mechanism with its parameters. While one is pinned, every change of the query
(or of the mechanism on screen) computes the pinned one's views on the same query through the
compute service (jobs "neighbours-pinned", "accuracy-pinned": the same pure functions as the
views' own), and draws them over the current ones with one legend: its M(D) and M(D') dashed
in the colours of M(D) and M(D') on the neighbouring-datasets plot, its exact accuracy curves
dash-dotted on the accuracy plots; on the budget tab, the total ε of k releases of the current
and of the pinned mechanism under basic, advanced, zCDP and tight composition (job "budget-pinned",
:func:`dpexplorer.gui.views.budget_jobs.repeats_job`, the math in :mod:`dpexplorer.core.planning`).
A line in the status bar says what is pinned and stops it.

Guarantee: the overlay is always the pinned mechanism's on the query shown (a result for an
older query is dropped by the compute service's generation numbers, and a query the pinned
mechanism does not accept clears it and says so); nothing here releases anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QToolButton, QWidget

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.mechanisms.base import Mechanism, NumericOutput
from dpexplorer.gui import jobs, palette
from dpexplorer.gui.views.base import MIN_LOG_SPAN, _log_span, log_ticks

if TYPE_CHECKING:
    from dpexplorer.gui.views.budget import BudgetView
    from dpexplorer.gui.window_parts import WindowParts

NEIGHBOURS_PINNED = "neighbours-pinned"
ACCURACY_PINNED = "accuracy-pinned"
BUDGET_PINNED = "budget-pinned"
PINNED_STYLE = Qt.PenStyle.DashLine
ACCURACY_STYLE = Qt.PenStyle.DashDotLine
MAX_STRETCH = 5.0
"""The neighbours plot's height grows for the pinned law up to this factor."""
_TAGS = re.compile(r"<[^>]+>")
ACCURACY_COLOURS = (palette.ACCENT, palette.GOOD, palette.NEUTRAL)


@dataclass(frozen=True)
class Pinned:
    mechanism: Mechanism
    params: dict[str, Any]

    @property
    def label(self) -> str:
        epsilon = self.params.get("epsilon")
        return f"{self.mechanism.label}" + (f" (ε = {epsilon:g})" if isinstance(epsilon, int | float) else "")


class CompareBar(QWidget):
    """ "Pinned: …" and a Stop button, in the status bar while a mechanism is pinned: one line
    there costs the plots nothing (above the tabs it grew the window past a 1280 x 720
    projector in teaching mode). The text is elided to the room it has; its tooltip is whole."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.text = QLabel()
        self.text.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.full = ""
        self.stop = QToolButton()
        self.stop.setText("Stop comparing")
        self.stop.setToolTip("Remove the pinned mechanism's curves (View > Stop Comparing)")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.stop)
        self.hide()

    def set_text(self, html: str) -> None:
        self.full = " ".join(_TAGS.sub("", html).split())
        self.text.setToolTip(self.full)
        self._elide()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = max(self.text.width(), 40)
        self.text.setText(self.text.fontMetrics().elidedText(self.full, Qt.TextElideMode.ElideRight, width))


class Comparison(QObject):
    """The pinned mechanism, its jobs and its curves over the neighbours and accuracy views."""

    def __init__(self, window: WindowParts) -> None:
        super().__init__(window)
        self.window = window
        self.pinned: Pinned | None = None
        self.neighbours: jobs.NeighboursResult | None = None
        self.accuracy: jobs.AccuracyResult | None = None
        self._current: jobs.NeighboursResult | None = None  # the view's own, for its x axis
        self._items: dict[tuple[int, str], pg.PlotDataItem] = {}
        self._budget_connected: BudgetView | None = None
        self.bar = CompareBar()
        window.statusBar().insertPermanentWidget(0, self.bar, 1)
        self.bar.stop.clicked.connect(self.stop)
        window.explorer.inputs_changed.connect(lambda *_a: self._submit())
        window.compute.finished.connect(self._on_result)
        window.compute.failed.connect(self._on_failure)
        window.explorer.views_updated.connect(lambda _view: self._draw())
        window.tabs.currentChanged.connect(lambda _i: self._draw())

    # ------------------------------------------------------------------ pinning
    def pin(self) -> bool:
        """Pin the mechanism on screen with its parameters (False when there is none)."""
        explorer = self.window.explorer
        if explorer.mechanism is None or explorer.query_input is None:
            self.window.show_error("Choose a query and a mechanism before pinning one for comparison.")
            return False
        self.pinned = Pinned(explorer.mechanism, explorer.mechanism.validate(explorer.params))
        self.bar.show()
        self._submit()
        return True

    def stop(self) -> None:
        self.pinned = self.neighbours = self.accuracy = None
        for job in (NEIGHBOURS_PINNED, ACCURACY_PINNED, BUDGET_PINNED):
            self.window.compute.cancel(job)
        self._clear()
        budget = self._budget_view()
        if budget is not None:
            budget.show_comparison(None)
        self.bar.hide()

    def _submit(self) -> None:
        pinned, query = self.pinned, self.window.explorer.query_input
        if pinned is None or query is None:
            return
        refusal = pinned.mechanism.accepts(query)
        self.neighbours = self.accuracy = None
        if refusal is not None:
            self._clear()
            self._say(f"The pinned {pinned.label} does not apply to this query: {refusal}")
            budget = self._budget_view()
            if budget is not None:
                self.window.compute.cancel(BUDGET_PINNED)
                budget.comparison_failed(f"The pinned {pinned.label} does not apply to this query: {refusal}")
            return
        self._say(self._headline())
        level = self.window.accuracy_view.ci_level.value()
        compute = self.window.compute
        compute.submit(NEIGHBOURS_PINNED, jobs.neighbours, pinned.mechanism, pinned.params, query)
        compute.submit(ACCURACY_PINNED, jobs.accuracy, pinned.mechanism, pinned.params, query, level)
        self._submit_budget()

    def _budget_view(self) -> BudgetView | None:
        workspace = self.window.workspace
        return workspace.budget_view if workspace is not None else None

    def _submit_budget(self) -> None:
        """Ask for k releases of the current and the pinned mechanism at the budget view's budget
        (again whenever that budget changes: its every change asks for a new plan total)."""
        from dpexplorer.gui.views.budget_jobs import Contender, RepeatsRequest, repeats_job

        view, pinned = self._budget_view(), self.pinned
        explorer = self.window.explorer
        if view is None or pinned is None:
            return
        if self._budget_connected is not view:
            view.job_requested.connect(lambda _request: self._submit_budget())
            self._budget_connected = view
        budget, query, mechanism = view.request(), explorer.query_input, explorer.mechanism
        if (
            budget is None
            or query is None
            or mechanism is None
            or pinned.mechanism.accepts(query) is not None
        ):
            return
        try:
            current = Pinned(mechanism, mechanism.validate(explorer.params))
        except DPExplorerError as exc:
            view.comparison_failed(f"The current mechanism's parameters: {exc}")
            return
        request = RepeatsRequest(
            current=Contender(current.label, mechanism.name, current.params, mechanism.label),
            pinned=Contender(pinned.label, pinned.mechanism.name, pinned.params, pinned.mechanism.label),
            query=query,
            budget_epsilon=budget.budget_epsilon,
            budget_delta=budget.budget_delta,
            sampling_rate=budget.sampling_rate,
        )
        self.window.compute.submit(BUDGET_PINNED, repeats_job, request)

    def _say(self, text: str) -> None:
        self.bar.set_text(text)

    # ------------------------------------------------------------------ results
    def _on_result(self, view: str, _generation: int, result: object) -> None:
        if view == NEIGHBOURS_PINNED and self.pinned is not None:
            self.neighbours = result  # type: ignore[assignment]
        elif view == ACCURACY_PINNED and self.pinned is not None:
            self.accuracy = result  # type: ignore[assignment]
        elif view == BUDGET_PINNED:
            budget = self._budget_view()
            if budget is not None and self.pinned is not None:
                budget.show_comparison(result)  # type: ignore[arg-type]
            return
        elif view == "neighbours":
            self._current = result  # type: ignore[assignment]
            return  # drawn once the view has drawn it (views_updated)
        else:
            return
        self._draw()

    def _on_failure(self, view: str, _generation: int, message: str) -> None:
        budget = self._budget_view()
        if view == BUDGET_PINNED and self.pinned is not None and budget is not None:
            budget.comparison_failed(
                f"Cannot compose the pinned {self.pinned.label} over k releases: {message}"
            )
            return
        if view in (NEIGHBOURS_PINNED, ACCURACY_PINNED) and self.pinned is not None:
            self._say(f"The pinned {self.pinned.label} cannot be drawn for this query: {message}")

    # ------------------------------------------------------------------ drawing
    def _item(self, plot: pg.PlotItem, key: str, name: str, pen: object) -> pg.PlotDataItem:
        """The overlay's curve ``key`` on ``plot``, (re)added when the view cleared the plot."""
        item = self._items.get((id(plot), key))
        if item is None:
            item = pg.PlotDataItem(name=name)
            self._items[(id(plot), key)] = item
        item.setPen(pen)
        if item not in plot.items:
            plot.addItem(item)
            if plot.legend is not None and name:
                plot.legend.removeItem(item)
                plot.legend.addItem(item, name)
        elif plot.legend is not None:
            for sample, label in plot.legend.items:
                if sample.item is item and label.text != name:
                    label.setText(name)
        item.opts["name"] = name
        return item

    def _clear(self) -> None:
        for item in self._items.values():
            plot = item.getViewBox().parentItem() if item.getViewBox() is not None else None
            item.setData([], [])
            if isinstance(plot, pg.PlotItem):
                if plot.legend is not None:
                    plot.legend.removeItem(item)
                plot.removeItem(item)
        self._items = {}

    def _headline(self) -> str:
        """What is pinned, and its interval against the current mechanism's when both are known
        (short: on a projector the bar takes a line from the plots)."""
        pinned = self.pinned
        if pinned is None:
            return ""
        text = f"Pinned: <b>{pinned.label}</b>, dashed"
        mine = self.accuracy.report if self.accuracy is not None else None
        shown = self.window.accuracy_view.result
        if mine is None or not np.isfinite(mine.ci_halfwidth):
            return text + "."
        text += f". {mine.ci_level:.0%} interval ±{mine.ci_halfwidth:.3g}"
        current = shown.report if shown is not None and shown.report.ci_level == mine.ci_level else None
        if shown is not None and not self._is_current(shown):
            current = None  # the accuracy tab still shows an earlier mechanism's (it is drawn when shown)
        if current is not None and np.isfinite(current.ci_halfwidth) and current.ci_halfwidth > 0:
            ratio = mine.ci_halfwidth / current.ci_halfwidth
            times = ratio if ratio >= 1 else 1 / ratio
            factor = (f"{times:,.0f}" if times >= 10 else f"{times:.2g}") + (
                "× wider" if ratio >= 1 else "× narrower"
            )
            text += f" against ±{current.ci_halfwidth:.3g} now: {factor}"
        return text + "."

    def _is_current(self, shown: jobs.AccuracyResult) -> bool:
        """Whether ``shown`` is the mechanism on screen at its parameters."""
        explorer = self.window.explorer
        if explorer.mechanism is None or shown.mechanism != explorer.mechanism.label:
            return False
        try:
            return shown.params == explorer.mechanism.validate(explorer.params)
        except DPExplorerError:
            return False

    def _draw(self) -> None:
        if self.pinned is None:
            return
        if self.neighbours is not None or self.accuracy is not None:
            self._say(self._headline())
        self._draw_neighbours()
        self._draw_accuracy()

    def _draw_neighbours(self) -> None:
        plot = self.window.neighbours_view.outputs
        current, pinned = self._current, self.neighbours
        out = pinned.output if pinned is not None else None
        axis = current.output if current is not None else None
        if not isinstance(out, NumericOutput) or not isinstance(axis, NumericOutput) or out.monte_carlo_runs:
            for key in ("d", "d_prime"):
                if (id(plot), key) in self._items:
                    self._items[(id(plot), key)].setData([], [])
            return
        # the pinned law in the current view's grid coordinates (outputs o = origin + unit * grid)
        outputs = out.origin + out.unit * np.asarray(out.grid, dtype=float)
        x = (outputs - axis.origin) / axis.unit
        scale = axis.unit / out.unit  # densities per grid unit
        label = self.pinned.label if self.pinned is not None else ""
        for key, role, density, side in (
            ("d", palette.D, out.density_d, "M(D)"),
            ("d_prime", palette.D_PRIME, out.density_d_prime, "M(D')"),
        ):
            name = f"{side}, pinned {label}"
            item = self._item(plot, key, name, palette.pen(role, 2, PINNED_STYLE))
            item.setData(x, np.asarray(density, dtype=float) * scale)
        self._fit_height(plot, x, np.maximum(out.density_d, out.density_d_prime) * scale)

    @staticmethod
    def _fit_height(plot: pg.PlotItem, x: np.ndarray, y: np.ndarray) -> None:
        """Raise the plot's top to the pinned law's peak in view, unless that peak is more than
        :data:`MAX_STRETCH` times the top: then the current law would be a flat line, and the
        pinned one running off the top says the comparison better."""
        (left, right), (bottom, top) = plot.getViewBox().viewRange()
        shown = (x >= left) & (x <= right) & np.isfinite(y)
        peak = float(np.max(y[shown])) if np.any(shown) else 0.0
        if top < peak <= MAX_STRETCH * top:
            plot.setYRange(bottom, peak * 1.05, padding=0.0)

    def _draw_accuracy(self) -> None:
        view, result = self.window.accuracy_view, self.accuracy
        label = self.pinned.label if self.pinned is not None else ""
        plots = (
            (view.vs_epsilon.getPlotItem(), "eps", result.report.error_vs_epsilon if result else ()),
            (view.tail.getPlotItem(), "tail", (result.report.error_tail,) if result else ()),
            (view.vs_n.getPlotItem(), "n", result.report.error_vs_n if result else ()),
        )
        shown = self.window.accuracy_view.result
        for plot, key, curves in plots:
            exact = [c for c in curves if c.kind != "bound"]
            if key != "tail" and exact and shown is not None:
                own = shown.report.error_vs_epsilon if key == "eps" else shown.report.error_vs_n
                _fit_log_axes(plot, [*own, *exact])
            for i in range(3):
                if i >= len(exact):
                    if (id(plot), f"{key}{i}") in self._items:
                        self._items[(id(plot), f"{key}{i}")].setData([], [])
                    continue
                curve = exact[i]
                pen = palette.pen(ACCURACY_COLOURS[i], 2, ACCURACY_STYLE)
                item = self._item(plot, f"{key}{i}", f"{curve.name}, pinned {label}", pen)
                item.setData(np.asarray(curve.x, dtype=float), np.asarray(curve.y, dtype=float))


def _fit_log_axes(plot: pg.PlotItem, curves: list[Any]) -> None:
    """Both axes of a log-log plot over every curve drawn (the view fits them to its own
    curves only), with ticks for the whole span."""
    for axis, values in (("bottom", [c.x for c in curves]), ("left", [c.y for c in curves])):
        span = _log_span(values)
        if span is None:
            continue
        low, high = span
        if high - low < MIN_LOG_SPAN:
            middle = (low + high) / 2
            low, high = middle - MIN_LOG_SPAN / 2, middle + MIN_LOG_SPAN / 2
        plot.getAxis(axis).setTicks(log_ticks(values))
        if axis == "bottom":
            plot.setXRange(low, high, padding=0.04)
        else:
            plot.setYRange(low, high, padding=0.04)
