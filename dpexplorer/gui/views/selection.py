"""The selection view (exponential mechanism, report-noisy-max, private top-k): each candidate's
score on D and D' beside its probability of being selected on D and on D'.

Every number comes from the mechanism: :func:`job` asks it for its exact output distribution
(``output_distribution``) and its largest privacy loss; :class:`SelectionView` only draws.
The module also holds the small bar-chart helpers the other mechanism views share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QWidget

from dpexplorer.core.mechanisms.base import CategoricalOutput, Mechanism, QueryInput, SelectionInput
from dpexplorer.core.mechanisms.exponential import max_abs_loss
from dpexplorer.gui import palette
from dpexplorer.gui.views.base import BLUE, ORANGE, ResultView, new_plot

MECHANISMS = ("exponential", "noisy_max", "topk")
"""The mechanisms (registry names) this view serves."""
MAX_OUTCOMES_SHOWN = 15
"""At most this many outcomes are drawn (the likeliest); the CSV holds them all."""
MAX_TICK_LABELS = 40
"""More categories than this get every n-th label only, so that labels never overlap."""
MAX_LABEL_CHARS = 42
"""Longer category names are shortened on the axis (the CSV keeps them whole)."""
BAR = 0.38
"""Height of one bar of a D / D' pair (the pair fills 0.76 of a row)."""


# ---------------------------------------------------------------- shared drawing helpers
def category_plot(value_label: str, title: str, category_label: str) -> pg.PlotWidget:
    """A plot with one row per category, the first on top, values along the x axis."""
    plot = new_plot(value_label, category_label, title)
    plot.invertY(True)
    plot.showGrid(x=True, y=False, alpha=0.2)
    plot.getAxis("bottom").enableAutoSIPrefix(False)
    return plot


def label_rows(
    plot: pg.PlotWidget,
    labels: Sequence[str],
    max_labels: int = MAX_TICK_LABELS,
    max_chars: int = MAX_LABEL_CHARS,
) -> None:
    """Name the rows 0, 1, ... of a :func:`category_plot` (every n-th name when there are many;
    names longer than ``max_chars`` are shortened with "…"), and widen the axis to fit."""
    step = max(1, int(np.ceil(len(labels) / max_labels)))
    names = [_short(str(labels[i]), max_chars) for i in range(0, len(labels), step)]
    ticks = [(float(i), name) for i, name in zip(range(0, len(labels), step), names, strict=True)]
    axis = plot.getAxis("left")
    axis.setTicks([ticks, []])
    metrics = QFontMetrics(axis.style.get("tickFont") or plot.font())
    widest = max((metrics.horizontalAdvance(name) for name in names), default=0)
    axis.setWidth(min(widest + 40, 480))
    plot.setYRange(-0.6, len(labels) - 0.4, padding=0.0)


def _short(label: str, max_chars: int) -> str:
    return label if len(label) <= max_chars else label[: max_chars - 1] + "…"


def hbars(
    plot: pg.PlotWidget,
    rows: np.ndarray,
    values: np.ndarray,
    color: tuple[int, int, int],
    name: str | None = None,
    height: float = BAR,
    alpha: int = 190,
) -> None:
    """Horizontal bars from 0 to ``values`` centred on ``rows``."""
    if len(rows) == 0:
        return
    plot.addItem(
        pg.BarGraphItem(
            x0=np.zeros(len(rows)),
            width=np.asarray(values, dtype=float),
            y=np.asarray(rows, dtype=float),
            height=height,
            brush=palette.brush(color, alpha),
            pen=pg.mkPen(None),
            name=name,
        )
    )


def paired_hbars(
    plot: pg.PlotWidget,
    values_d: np.ndarray,
    values_d_prime: np.ndarray | None,
    top: float,
    fmt: str = "{:.3g}",
) -> None:
    """One row per category: a blue bar for D above an orange bar for D' (none when
    ``values_d_prime`` is None), each with its value written at its end (inside the bar when it
    reaches near ``top``, the axis' end), when there are few enough rows to read them. The x
    axis is set to 0 .. ``top``."""
    rows = np.arange(len(values_d), dtype=float)
    pairs = [(-BAR / 2, np.asarray(values_d, dtype=float), BLUE)]
    if values_d_prime is not None:
        pairs.append((BAR / 2, np.asarray(values_d_prime, dtype=float), ORANGE))
    for offset, values, color in pairs:
        hbars(plot, rows + offset, values, color)
    plot.setXRange(0.0, top if top > 0 else 1.0, padding=0.0)
    if len(rows) > MAX_TICK_LABELS:
        return
    for offset, values, color in pairs:
        for row, value in zip(rows, values, strict=True):
            inside = float(value) > 0.75 * top
            text = pg.TextItem(
                fmt.format(float(value)), color="w" if inside else color, anchor=(1 if inside else 0, 0.5)
            )
            text.setPos(float(value), row + offset)
            plot.addItem(text)


def axis_end(*values: np.ndarray, room: float = 1.08) -> float:
    """A little more than the largest of ``values`` (1 when there is nothing positive)."""
    top = max((float(np.nanmax(v)) for v in values if np.size(v)), default=0.0)
    return top * room if top > 0 else 1.0


def colour_key(d: str = "D, your dataset", d_prime: str = "D', its worst-case neighbour") -> str:
    """The rich-text key of the blue (D) and orange (D') bars."""
    return (
        f"<span style='color:{palette.css(BLUE)}'>■</span> {d} &nbsp; "
        f"<span style='color:{palette.css(ORANGE)}'>■</span> {d_prime}"
    )


# ---------------------------------------------------------------- the job
@dataclass(frozen=True, eq=False)
class SelectionResult:
    """What the selection view draws. ``pmf_d``/``pmf_d_prime`` are the mechanism's exact output
    distribution over ``outcomes`` (for top-k: ordered lists), ``shown`` the indices of the
    outcomes drawn (the likeliest, most likely first for top-k)."""

    mechanism: str
    name: str
    candidates: tuple[str, ...]
    scores_d: np.ndarray
    scores_d_prime: np.ndarray
    outcomes: tuple[str, ...]
    pmf_d: np.ndarray
    pmf_d_prime: np.ndarray
    shown: np.ndarray
    epsilon: float
    max_loss: float
    sensitivity: float
    monotone: bool
    differing_row: str
    note: str
    params: dict[str, Any]


def job(mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int = 0) -> SelectionResult:
    """The candidates' scores and the mechanism's exact selection probabilities on D and D'.

    ``seed`` is unused (the probabilities are exact); it keeps the views' job signatures alike."""
    del seed
    if not isinstance(query, SelectionInput):
        raise TypeError(f"the selection view needs a SelectionInput, not {type(query).__name__}")
    output = mechanism.output_distribution(params, query)
    if not isinstance(output, CategoricalOutput):
        raise TypeError(f"{mechanism.label} has no selection probabilities to show")
    epsilon, _ = mechanism.epsilon_delta(params, query)
    pmf_d, pmf_dp = np.asarray(output.pmf_d, dtype=float), np.asarray(output.pmf_d_prime, dtype=float)
    if tuple(output.labels) == tuple(query.candidates):
        shown = np.arange(len(output.labels))
    else:  # outcomes are lists: the likeliest first
        shown = np.argsort(-np.maximum(pmf_d, pmf_dp), kind="stable")[:MAX_OUTCOMES_SHOWN]
    return SelectionResult(
        mechanism=mechanism.label,
        name=mechanism.name,
        candidates=tuple(query.candidates),
        scores_d=np.asarray(query.scores_d, dtype=float),
        scores_d_prime=np.asarray(query.scores_d_prime, dtype=float),
        outcomes=tuple(output.labels),
        pmf_d=pmf_d,
        pmf_d_prime=pmf_dp,
        shown=shown,
        epsilon=epsilon,
        max_loss=max_abs_loss(output),
        sensitivity=float(query.sensitivity),
        monotone=bool(query.monotone),
        differing_row=query.differing_row,
        note=output.note,
        params=dict(params),
    )


# ---------------------------------------------------------------- the view
class SelectionView(ResultView):
    """Scores (left) beside selection probabilities (right), on D (blue) and D' (orange)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Scores and selection probabilities on D and D'", parent)
        self.scores = category_plot("score u(r) (higher is better)", "Score of each candidate", "candidate")
        self.probabilities = category_plot("probability of being selected", "Chance of being chosen", "")
        self.plots = self.place_plots((self.scores, 1), (self.probabilities, 1))
        self.result: SelectionResult | None = None

    def show_result(self, result: SelectionResult) -> None:
        self.start_result(result)
        scores_top = axis_end(result.scores_d, result.scores_d_prime)
        paired_hbars(self.scores, result.scores_d, result.scores_d_prime, scores_top, "{:,.6g}")
        label_rows(self.scores, result.candidates)
        shown = result.shown
        lists = result.outcomes != result.candidates
        pmf_top = min(1.0, axis_end(result.pmf_d[shown], result.pmf_d_prime[shown], room=1.15))
        paired_hbars(self.probabilities, result.pmf_d[shown], result.pmf_d_prime[shown], pmf_top)
        label_rows(self.probabilities, [result.outcomes[i] for i in shown], max_chars=70 if lists else 42)
        self.probabilities.setLabel("left", "reported list (likeliest first)" if lists else "candidate")
        self.probabilities.setTitle("Chance of each reported list" if lists else "Chance of being chosen")
        self.probabilities.setYLink(None if lists else self.scores)
        self.plots.setStretch(1, 2 if lists else 1)
        self.summary.setText(self._summary(result, lists))
        self.explanation.setText(self._explain(result, lists))
        self.columns = {
            "candidate": list(result.candidates),
            "score_D": list(result.scores_d),
            "score_D_prime": list(result.scores_d_prime),
            "outcome": list(result.outcomes),
            "P_D": list(result.pmf_d),
            "P_D_prime": list(result.pmf_d_prime),
        }

    @staticmethod
    def _summary(result: SelectionResult, lists: bool) -> str:
        hidden = len(result.outcomes) - len(result.shown)
        rest = ""
        if hidden > 0:
            mass = float(np.delete(result.pmf_d, result.shown).sum())
            rest = f" The {hidden:,} other lists (not drawn) have probability {mass:.3g} on D in total."
        loss_ok = "≤" if result.max_loss <= result.epsilon * (1 + 1e-9) else "&gt;"
        return (
            f"{colour_key()}<br>Largest privacy loss over all outcomes: "
            f"|ln P_D / P_D'| = <b>{result.max_loss:.4g}</b> "
            f"{loss_ok} ε = {result.epsilon:.4g}. {result.note}.{rest}"
        )

    @staticmethod
    def _explain(result: SelectionResult, lists: bool) -> str:
        what = "an ordered list of k candidates" if lists else "one candidate"
        shape = (
            "a candidate's chance shrinks fast as its score falls below the best, measured in units "
            "of the noise scale σ given below"
            if not lists
            else "each list's chance is the product of its picks' chances"
        )
        monotone = (
            "the scores can only move one way between neighbours (monotone), so less noise is needed"
            if result.monotone
            else "the scores are not monotone, so the noise is doubled"
        )
        return (
            f"<b>{result.mechanism}</b> picks {what} at random, favouring high scores: {shape}. "
            f"One person changes any score by at most Δu = {result.sensitivity:g}; {monotone}. "
            f"{result.differing_row}. Close scores mean an uncertain winner. ε-differential privacy "
            "means every outcome's chance on D is within a factor e^ε of its chance on D'."
        )
