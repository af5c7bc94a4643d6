"""The test view of propose-test-release and Dist2Instability: how far D and D' are from
"trouble" (the distance the mechanism tests), the threshold the noisy distance must pass, and
the chance of "⊥" (no answer) on D and on D'.

Both mechanisms add Lap(1/ε) to the distance and answer only above ln(1/δ)/ε (Dwork &
Roth 2014, section 7.3). :func:`job` asks the mechanism for the distances and its exact chances
of "⊥", and :func:`dpexplorer.core.mechanisms.ptr.bottom_probability` for the curve; the view
only draws."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

from dpexplorer.core.mechanisms.base import Mechanism, NumericInput, QueryInput
from dpexplorer.core.mechanisms.ptr import ProposeTestRelease, bottom_probability, pass_threshold
from dpexplorer.core.sensitivity import NO_SUCH_DISTANCE
from dpexplorer.gui import palette
from dpexplorer.gui.views.base import (
    BLUE,
    GREY,
    ORANGE,
    RED,
    ResultView,
    keep_line_labels_inside,
    marker_line,
    new_plot,
)
from dpexplorer.gui.views.selection import (
    axis_end,
    category_plot,
    colour_key,
    label_rows,
    paired_hbars,
)

MECHANISMS = ("ptr", "dist2instability", "dist2instability_mode")
"""The mechanisms (registry names) this view serves."""
CURVE_POINTS = 401


@dataclass(frozen=True, eq=False)
class PTRResult:
    """What the test view draws. Distances are exact (``inf`` when no dataset is in trouble:
    then "⊥" never happens); ``bottom_d``/``bottom_d_prime`` are the mechanism's exact chances of
    "⊥"; ``curve_bottom`` is the exact chance of "⊥" at each distance of ``curve_distance``."""

    mechanism: str
    name: str
    distance_d: float
    distance_d_prime: float
    threshold: float
    test_epsilon: float
    delta: float
    claim_epsilon: float
    claim_delta: float
    bottom_d: float
    bottom_d_prime: float
    curve_distance: np.ndarray
    curve_bottom: np.ndarray
    trouble: str
    answer: str
    differing_row: str
    params: dict[str, Any]


def _distances(mechanism: Mechanism, params: dict[str, Any], query: QueryInput) -> tuple[int, int]:
    if isinstance(mechanism, ProposeTestRelease):
        assert isinstance(query, NumericInput)
        return mechanism.distance(params, query, "D"), mechanism.distance(params, query, "D'")
    return mechanism.distances(query)  # type: ignore[attr-defined]


def _bottoms(mechanism: Mechanism, params: dict[str, Any], query: QueryInput) -> tuple[float, float]:
    if isinstance(mechanism, ProposeTestRelease):
        pair = mechanism.releases(params, query)
        return pair.d.bottom, pair.d_prime.bottom
    return mechanism.bottoms(params, query)  # type: ignore[attr-defined]


def _story(mechanism: Mechanism, params: dict[str, Any], query: QueryInput) -> tuple[str, str]:
    """(what "trouble" means, what the mechanism releases when the test passes)."""
    if isinstance(mechanism, ProposeTestRelease):
        statistic = getattr(query, "statistic", "statistic").replace("_", " ")
        bound = params["bound"]
        return (
            f"one person could move the {statistic} by more than your proposed bound {bound:g}",
            f"the {statistic} plus Laplace noise of scale bound/ε = {bound / params['epsilon']:.4g}",
        )
    if mechanism.name == "dist2instability_mode":
        return (
            "one person could change which category is the most common",
            "the most common category, exactly",
        )
    return "one person could move the median", "the median itself, exactly (no noise)"


def _finite(distance: int) -> float:
    return float("inf") if distance >= NO_SUCH_DISTANCE else float(distance)


def job(mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int = 0) -> PTRResult:
    """Distances to trouble on D and D', the threshold, and the exact chances of "⊥".

    ``seed`` is unused (everything here is exact); it keeps the views' job signatures alike."""
    del seed
    bottom_d, bottom_dp = _bottoms(mechanism, params, query)
    distance_d, distance_dp = (_finite(d) for d in _distances(mechanism, params, query))
    epsilon, delta = float(params["epsilon"]), float(params["delta"])
    threshold = pass_threshold(epsilon, delta)
    finite = [d for d in (distance_d, distance_dp) if np.isfinite(d)]
    reach = max([threshold + 8.0 / epsilon, *(d * 1.1 for d in finite if d < 4 * threshold)])
    grid = np.linspace(0.0, reach, CURVE_POINTS)
    curve = np.array([bottom_probability(float(x), epsilon, delta) for x in grid])
    claim_epsilon, claim_delta = mechanism.epsilon_delta(params, query)
    trouble, answer = _story(mechanism, params, query)
    return PTRResult(
        mechanism=mechanism.label,
        name=mechanism.name,
        distance_d=distance_d,
        distance_d_prime=distance_dp,
        threshold=threshold,
        test_epsilon=epsilon,
        delta=delta,
        claim_epsilon=claim_epsilon,
        claim_delta=claim_delta,
        bottom_d=float(bottom_d),
        bottom_d_prime=float(bottom_dp),
        curve_distance=grid,
        curve_bottom=curve,
        trouble=trouble,
        answer=answer,
        differing_row=getattr(query, "differing_row", ""),
        params=dict(params),
    )


def _distance_text(distance: float) -> str:
    return "∞ (never in trouble)" if not np.isfinite(distance) else f"{distance:,.0f}"


class PTRView(ResultView):
    """Left: the chance of "⊥" against the distance, with D and D' marked. Right: the chances
    of "⊥" and of an answer on D and D'."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("The private test: distance to trouble and the chance of no answer (⊥)", parent)
        self.curve = new_plot(
            "distance to trouble d (rows that would have to change)",
            "chance of ⊥ (no answer)",
            "Chance of ⊥ against the distance",
        )
        legend = self.curve.getPlotItem().legend
        if legend is not None:  # bottom left: the curve falls from the top left to the bottom right
            legend.anchor(itemPos=(0, 1), parentPos=(0, 1), offset=(10, -10))
        self.chances = category_plot("probability", "Chance of ⊥ or an answer", "")
        self.place_plots((self.curve, 3), (self.chances, 2))
        self.result: PTRResult | None = None

    def show_result(self, result: PTRResult) -> None:
        self.start_result(result)
        self.curve.plot(
            result.curve_distance,
            result.curve_bottom,
            pen=palette.pen(GREY, width=2),
            name="P(⊥) = P(d + Lap(1/ε) ≤ threshold)",
        )
        marker_line(self.curve, result.threshold, RED, f"threshold ln(1/δ)/ε = {result.threshold:.3g}", 0.5)
        reach = float(result.curve_distance[-1])
        for distance, bottom, color, name, position, side in (
            (result.distance_d, result.bottom_d, BLUE, "d(D)", 0.92, 0),
            (result.distance_d_prime, result.bottom_d_prime, ORANGE, "d(D')", 0.78, 1),
        ):
            self._mark(distance, bottom, color, name, position, side, reach)
        self.curve.setXRange(0.0, reach, padding=0.02)
        self.curve.setYRange(0.0, 1.0, padding=0.03)
        keep_line_labels_inside(self.curve)
        paired_hbars(
            self.chances,
            np.array([result.bottom_d, 1.0 - result.bottom_d]),
            np.array([result.bottom_d_prime, 1.0 - result.bottom_d_prime]),
            axis_end(np.array([1.0]), room=1.0),
        )
        label_rows(self.chances, ("⊥ (no answer)", "an answer"))
        self.summary.setText(self._summary(result))
        self.explanation.setText(self._explain(result))
        self.columns = {
            "distance": list(result.curve_distance),
            "P_bottom_at_distance": list(result.curve_bottom),
            "side": ["D", "D'"],
            "distance_to_trouble": [result.distance_d, result.distance_d_prime],
            "P_bottom": [result.bottom_d, result.bottom_d_prime],
            "threshold": [result.threshold],
        }

    def _mark(
        self,
        distance: float,
        bottom: float,
        color: tuple[int, int, int],
        name: str,
        position: float,
        side: int,
        reach: float,
    ) -> None:
        """A line at the distance with its chance of ⊥; off the plot's right end an arrow."""
        text = f"{name} = {_distance_text(distance)}: P(⊥) = {bottom:.3g}"
        if distance <= reach:
            marker_line(self.curve, distance, color, text, position, side)
            self.curve.plot([distance], [bottom], pen=None, symbol="o", symbolBrush=color, symbolSize=10)
            return
        arrow = pg.TextItem(
            f"{text}  →",
            color=palette.colour(color),
            anchor=(1, 0.5),
            fill=palette.colour(palette.PLOT_BACKGROUND, 200),
        )
        arrow.setPos(reach, position)
        self.curve.addItem(arrow)

    @staticmethod
    def _summary(result: PTRResult) -> str:
        return (
            f"{colour_key()}<br>Distance to trouble: <b>{_distance_text(result.distance_d)}</b> on D, "
            f"<b>{_distance_text(result.distance_d_prime)}</b> on D' (exact). Threshold "
            f"ln(1/δ)/ε = {result.threshold:.4g}. Chance of ⊥: <b>{result.bottom_d:.4g}</b> on D, "
            f"<b>{result.bottom_d_prime:.4g}</b> on D' (exact). Guarantee: "
            f"(ε, δ) = ({result.claim_epsilon:.4g}, {result.claim_delta:.3g})."
        )

    @staticmethod
    def _explain(result: PTRResult) -> str:
        return (
            f"<b>{result.mechanism}</b> first tests, privately, how far your data are from trouble: "
            f"the distance d is the number of rows that would have to change before {result.trouble}. "
            f"It adds Laplace noise of scale 1/ε = {1 / result.test_epsilon:.3g} to d and answers only "
            f"if the noisy distance is above the threshold ln(1/δ)/ε; otherwise it answers ⊥. "
            f"When it answers it releases {result.answer}. One person moves d by at most 1, so "
            f"D and D' ({result.differing_row}) have nearly the same chance of ⊥; the δ covers "
            "the rare case where the test passes although the data are in trouble."
        )
