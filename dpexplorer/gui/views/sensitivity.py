"""Sensitivity side by side: for the current query on the current data, the global sensitivity,
the local sensitivity, the smooth sensitivity with its β and the distance to instability, as
numbers and against the distance k of the smooth-sensitivity definition (Nissim,
Raskhodnikova & Smith 2007; Dwork & Roth 2014, chapter 7).

:func:`job` asks :func:`dpexplorer.core.sensitivity_profile.sensitivity_profile` for every
number; β is the current mechanism's own smoothing parameter, or the one the Cauchy
smooth-sensitivity mechanism would use at the current ε. The view only draws."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtWidgets import QWidget

from dpexplorer.core.mechanisms.base import Mechanism, NumericInput, QueryInput
from dpexplorer.core.mechanisms.ptr import ProposeTestRelease
from dpexplorer.core.sensitivity import NO_SUCH_DISTANCE
from dpexplorer.core.sensitivity_profile import SensitivityProfile, sensitivity_profile
from dpexplorer.gui import palette
from dpexplorer.gui.views.base import (
    BLUE,
    GREY,
    ORANGE,
    PURPLE,
    RED,
    ResultView,
    dashed_line,
    keep_line_labels_inside,
    new_plot,
)

DEFAULT_BETA = 0.25
"""β when the mechanism has no ε to derive one from."""


@dataclass(frozen=True, eq=False)
class SensitivityResult:
    """What the view draws: the profile (None when the query has no column of data: then only
    ``global_l1`` and ``note``), where β came from, and PTR's proposed bound with the distance
    at which A(k) first exceeds it (None without PTR)."""

    statistic: str
    profile: SensitivityProfile | None
    global_l1: float
    beta_source: str
    note: str = ""
    bound: float | None = None
    distance_to_bound: float | None = None
    headline: str = ""
    """What the release's noise follows, when that is not the global sensitivity (a quantile by
    group: the mechanism's own words)."""


def _beta(mechanism: Mechanism, params: dict[str, Any]) -> tuple[float, str]:
    smoothing = getattr(mechanism, "smoothing", None)
    if smoothing is not None:
        beta = float(smoothing(params)[0])
        return beta, f"β = {beta:.4g}, the smoothing of the {mechanism.label} mechanism at its ε"
    if "epsilon" in params:
        from dpexplorer.core.mechanisms.smooth import SmoothCauchy

        beta = float(SmoothCauchy().smoothing({"epsilon": params["epsilon"]})[0])
        return beta, f"β = ε/4 = {beta:.4g}, what the Cauchy smooth-sensitivity mechanism uses at ε"
    return DEFAULT_BETA, f"β = {DEFAULT_BETA:g} (this mechanism has no ε to derive it from)"


def job(mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int = 0) -> SensitivityResult:
    """The sensitivities of the current statistic on D. ``seed`` is unused (all exact)."""
    del seed
    beta, source = _beta(mechanism, params)
    statistic = str(getattr(query, "statistic", "selection"))
    if not isinstance(query, NumericInput):
        sensitivity = float(getattr(query, "sensitivity", 1.0))
        note = (
            f"The scores change by at most Δ = {sensitivity:g} between neighbours, on every dataset: "
            "local and smooth sensitivity matter for statistics of a column such as the median."
        )
        return SensitivityResult(statistic, None, sensitivity, source, note)
    by_group = getattr(mechanism, "sensitivity_note", None)  # the mechanism says what it does
    described = by_group(params, query) if by_group is not None else None
    if described is not None:
        headline, note = described
        return SensitivityResult(statistic, None, query.sensitivity_l1, source, note, headline=headline)
    if query.sorted_values_d is None or query.bounds is None:
        note = (
            f"A {statistic.replace('_', ' ')} moves by at most {query.sensitivity_l1:g} whoever is added or "
            "removed, on every dataset: its local sensitivity equals its global one. Choose a median, "
            "quantile or trimmed mean to see them part."
        )
        return SensitivityResult(statistic, None, query.sensitivity_l1, source, note)
    lower, upper = query.bounds
    values, options = (
        query.sorted_values_d,
        {"quantile": query.quantile, "trim_fraction": query.trim_fraction},
    )
    profile = sensitivity_profile(values, lower, upper, statistic, query.relation, beta, **options)
    bound = distance = None
    if isinstance(mechanism, ProposeTestRelease):  # the distance PTR itself tests
        bound = float(params["bound"])
        found = mechanism.distance(params, query, "D")
        distance = float("inf") if found >= NO_SUCH_DISTANCE else float(found)
    return SensitivityResult(
        statistic, profile, profile.global_sensitivity, source, profile.note, bound, distance
    )


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    return "∞" if not np.isfinite(value) else f"{value:.4g}"


def summary_html(result: SensitivityResult) -> str:
    """The numbers in words (what each one means for this data)."""
    name = result.statistic.replace("_", " ")
    p = result.profile
    if p is None:
        headline = html.escape(result.headline or f"Global sensitivity Δ = {result.global_l1:g}", quote=False)
        return f"<b>{headline}.</b> " + html.escape(result.note, quote=False).replace("\n", "<br>")
    relation = "adding or removing" if p.relation == "add_remove" else "replacing"
    rows = [
        f"<b style='color:{palette.css(GREY)}'>Global GS = {_number(p.global_sensitivity)}</b>: "
        f"on the worst dataset, {relation} one person moves the {name} this much.",
        f"<b style='color:{palette.css(BLUE)}'>Local LS(D) = A(0) = {_number(p.local_sensitivity)}</b>: "
        f"on this data ({p.n:,} rows, bounds [{p.lower:g}, {p.upper:g}]), one person moves it "
        "at most this much.",
    ]
    if p.smooth_sensitivity == 0.0 and p.local_at_distance.size and p.local_at_distance.max() > 0:
        rows.append(
            f"<b style='color:{palette.css(ORANGE)}'>Smooth S*(D) underflows to 0</b> with "
            f"{result.beta_source}: "
            "e<sup>−βk</sup>A(k) is below 10<sup>−308</sup> at every k where A(k) > 0."
        )
    elif p.smooth_sensitivity is not None:
        rows.append(
            f"<b style='color:{palette.css(ORANGE)}'>Smooth S*(D) = {_number(p.smooth_sensitivity)}</b> with "
            f"{result.beta_source}: the largest e<sup>−βk</sup>A(k), reached at k = {p.argmax_k}."
        )
    else:
        rows.append(f"No smooth sensitivity here: {p.note}.")
    if p.distance_to_instability is not None:
        rows.append(
            f"<b style='color:{palette.css(RED)}'>Distance to instability d = "
            f"{p.distance_to_instability}</b>: "
            f"that many rows can change and every neighbour still has the same {name}."
        )
    if result.bound is not None:
        rows.append(
            f"<b style='color:{palette.css(PURPLE)}'>PTR's proposed bound {result.bound:g}</b>: A(k) first "
            f"exceeds it at k = {_number(result.distance_to_bound)}, the distance PTR tests."
        )
    return "<br>".join(rows)


class SensitivityView(ResultView):
    """The numbers, and A(k), e^{-βk} A(k) against k with GS, S*(D), d and PTR's bound marked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(
            "Sensitivity side by side: global, local, smooth",
            parent,
            explanation="A(k) is the largest local sensitivity among the datasets at most k rows away "
            "from D; the smooth sensitivity is the largest e<sup>−βk</sup>A(k) over every k (Nissim, "
            "Raskhodnikova &amp; Smith 2007; Dwork &amp; Roth 2014, chapter 7).",
        )
        self.plot = new_plot("distance k (rows changed from D)", "sensitivity")
        self.plot.getPlotItem().legend.setOffset((70, 10))  # top left, where A(k) is still low
        self.zoom = new_plot("distance k", "sensitivity", "zoomed in on S*(D)")
        for plot in (self.plot, self.zoom):  # labels refit when a plot is laid out or resized
            plot.getViewBox().sigResized.connect(lambda _box, p=plot: keep_line_labels_inside(p))
        self.place_plots((self.plot, 3), (self.zoom, 2))
        self.result: SensitivityResult | None = None

    def show_result(self, result: SensitivityResult) -> None:
        self.start_result(result)
        self.set_text(self.summary, summary_html(result))
        p = result.profile
        if p is None or not p.distances.size:
            self.plot.hide()
            self.zoom.hide()
            self.columns = {"global sensitivity": [result.global_l1]}
            return
        self.plot.show()
        self._draw(result, p)

    def _draw(self, result: SensitivityResult, p: SensitivityProfile) -> None:
        k = p.distances.astype(float)
        edges = np.append(k, k[-1] + 1.0)  # both are functions of the integer k: drawn as steps
        for plot in (self.plot, self.zoom):
            plot.plot(
                edges, p.local_at_distance, stepMode="center", pen=palette.pen(BLUE, width=3), name="A(k)"
            )
            plot.plot(
                edges, p.smoothed, stepMode="center", pen=palette.pen(ORANGE, width=3), name="e^(−βk) A(k)"
            )
            plot.plot([0.0], [p.local_sensitivity], pen=None, symbol="o", symbolBrush=BLUE, symbolSize=12)
        # d on the full plot only: the zoom is about S* (its label, placed for the zoom's range
        # of 1e-120 or so, was drawn below the plot when the same d was drawn again)
        if p.distance_to_instability is not None and p.distance_to_instability <= k[-1]:
            line = dashed_line(RED, f"d = {p.distance_to_instability}", 0.5, pos=p.distance_to_instability)
            self.plot.addItem(line)
        gs = dashed_line(GREY, f"GS = {p.global_sensitivity:.4g}", 0.5, pos=p.global_sensitivity, angle=0)
        self.plot.addItem(gs)
        if result.bound is not None:
            bound = dashed_line(PURPLE, f"PTR bound {result.bound:g}", 0.3, pos=result.bound, angle=0)
            self.plot.addItem(bound)
        top = max(p.global_sensitivity, float(p.local_at_distance.max())) * 1.08
        self.plot.setRange(xRange=(0, k[-1]), yRange=(0, top if top > 0 else 1), padding=0)
        keep_line_labels_inside(self.plot)
        self.zoom.setVisible(p.smooth_sensitivity is not None and p.smooth_sensitivity > 0)
        if self.zoom.isVisible():
            self._draw_zoom(p, k)

    def _draw_zoom(self, p: SensitivityProfile, k: np.ndarray) -> None:
        """Around the maximum of e^(−βk) A(k): k from 0 until it has fallen to a twentieth of
        S*, heights up to 2.5 S* (A(k) leaves through the top)."""
        smooth, best = float(p.smooth_sensitivity or 0.0), int(p.argmax_k or 0)
        low = np.flatnonzero((k > best) & (p.smoothed < smooth / 20))
        reach = max(k[low[0]] if low.size else k[-1], 2.0 * best + 2, 5.0)
        self.zoom.plot([float(best)], [smooth], pen=None, symbol="o", symbolBrush=ORANGE, symbolSize=12)
        self.zoom.addItem(dashed_line(ORANGE, f"S* = {smooth:.4g} at k = {best}", 0.5, pos=smooth, angle=0))
        self.zoom.setRange(xRange=(0, min(reach, k[-1])), yRange=(0, 2.5 * smooth), padding=0)
        keep_line_labels_inside(self.zoom)

        self.columns = {
            "k": list(k),
            "A(k)": list(p.local_at_distance),
            "exp(-beta k) A(k)": list(p.smoothed),
        }
