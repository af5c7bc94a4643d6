"""Compare mode of the budget view (gui/compare.py pins a mechanism): the total ε of k releases
of the current and the pinned mechanism under each of :data:`COMPARE_METHODS`, with the budget ε,
how many releases of each fit, and the curves' columns for the CSV export. Only draws: the totals
come from :func:`dpexplorer.gui.views.budget_jobs.repeats_job`."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from dpexplorer.core import planning
from dpexplorer.core.accounting.compose import METHODS
from dpexplorer.core.figures import privacy_number
from dpexplorer.gui import palette
from dpexplorer.gui.plot_export import Column
from dpexplorer.gui.views.base import PALETTE, RED, dashed_line, log_ticks
from dpexplorer.gui.views.budget_jobs import COMPARE_METHODS, RepeatsResult

METHOD_NAMES = planning.METHOD_LABELS
LEGEND_ROOM = 0.6
"""Decades left empty above the comparison's curves, per decade they span: the legend's room."""
COMPARISON_TIP = (
    "Each release is priced as the ledger would charge it (the exact release path's own "
    "guarantee, e.g. a discrete Gaussian's zCDP); every total is an upper bound."
)


def method_colour(method: str) -> tuple[int, int, int]:
    """An accountant's colour, the same in the privacy profiles and in compare mode."""
    return PALETTE[METHODS.index(method) % len(PALETTE)]


def draw_comparison(plot: pg.PlotItem, result: RepeatsResult) -> tuple[dict[str, pg.PlotDataItem], str]:
    """Draw ε of k releases of both sides of ``result`` on ``plot`` (cleared by the caller; log
    scales). Colour: the accountant; solid: current, dashed: pinned. The legend names the
    accountants once and the two mechanisms by their line style; every curve keeps its full name
    (``item.name()``). Returns the curves by that name and the note that says up to which k each
    side fits (and which curves are not drawn: a single point or none)."""
    curves: dict[str, pg.PlotDataItem] = {}
    request = result.request
    plot.setLogMode(x=True, y=True)
    ks = np.asarray(result.repeats, dtype=float)
    drawn: list[np.ndarray] = []
    missing: list[str] = []
    for prefix, side, totals, style in (
        ("", request.current, result.current, Qt.PenStyle.SolidLine),
        ("pinned ", request.pinned, result.pinned, Qt.PenStyle.DashLine),
    ):
        sample = pg.PlotDataItem([], [], pen=palette.pen(palette.PLOT_FOREGROUND, 2, style))
        plot.addItem(sample)
        plot.legend.addItem(sample, f"{prefix}{side.short} ({'dashed' if prefix else 'solid'})")
        for method in COMPARE_METHODS:
            values = np.asarray(totals[method], dtype=float)
            finite = np.isfinite(values)
            name = f"{prefix}{side.short}, {METHOD_NAMES[method]}"
            if np.count_nonzero(finite) < 2:  # a point or nothing: said, not drawn
                missing.append(f"{name}: {_not_drawn(values)}")
                continue
            colour = method_colour(method)
            item = pg.PlotDataItem(
                ks, values, pen=palette.pen(colour, width=2, style=style), connect="finite"
            )
            plot.addItem(item)
            item.opts["name"] = name  # after addItem: the legend names accountants and styles once
            curves[name] = item
            drawn.append(values[finite])
    for method in COMPARE_METHODS:
        colour = method_colour(method)
        sample = pg.PlotDataItem([], [], pen=palette.pen(colour, width=2))
        plot.addItem(sample)
        plot.legend.addItem(sample, METHOD_NAMES[method])
    budget = request.budget_epsilon
    plot.addItem(
        dashed_line(
            RED, f"budget ε = {privacy_number(budget)}", 0.97, pos=math.log10(budget), angle=0, anchor=(1, 1)
        )
    )
    if drawn:
        values = np.concatenate(drawn)
        low = math.log10(max(min(float(np.min(values)), budget), 1e-12))
        high = math.log10(max(float(np.max(values)), budget))
        # room above the curves for the legend (top left): they rise to the right
        plot.setYRange(low, high + LEGEND_ROOM * max(high - low, 1.0), padding=0.05)
    plot.setXRange(0.0, math.log10(float(ks[-1])), padding=0.02)
    plot.getAxis("bottom").setTicks(log_ticks([ks]))  # powers of ten (pyqtgraph labels 2..9 too)
    plot.getAxis("left").setTicks(log_ticks([*drawn, [budget]]))
    note = _fits_text(result)
    if missing:
        note += " Not drawn: " + "; ".join(missing) + "."
    return curves, note


def _within(totals: dict[str, np.ndarray], repeats: Sequence[int], budget: float) -> tuple[int, str] | None:
    """The largest k drawn whose total fits ``budget`` under the accountant that allows most,
    with that accountant's name (None when not even one release fits)."""
    best: tuple[int, str] | None = None
    for method in COMPARE_METHODS:
        values = np.asarray(totals[method], dtype=float)
        fitting = [k for k, v in zip(repeats, values, strict=True) if np.isfinite(v) and v <= budget]
        if fitting and (best is None or max(fitting) > best[0]):
            best = (max(fitting), METHOD_NAMES[method])
    return best


def comparison_columns(result: RepeatsResult | None) -> dict[str, Column]:
    """The comparison's curves for the CSV export: k, then ε per side and accountant (NaN where
    the accountant does not apply); nothing when no mechanism is pinned."""
    if result is None:
        return {}
    columns: dict[str, Column] = {"compare_releases_k": list(result.repeats)}
    for side, totals in (("current", result.current), ("pinned", result.pinned)):
        for method in COMPARE_METHODS:
            columns[f"compare_{side}_{method}_epsilon"] = list(np.asarray(totals[method], dtype=float))
    columns["compare_mechanisms"] = [result.request.current.label, result.request.pinned.label]
    return columns


def _not_drawn(values: np.ndarray) -> str:
    """Why a curve of k releases is not drawn: no accountant value, or only k = 1's."""
    return "does not apply" if not np.any(np.isfinite(values)) else "only at k = 1"


def _fits_text(result: RepeatsResult) -> str:
    """How many releases of each side fit the budget, e.g. "Gaussian: none; pinned Laplace: up
    to k = 1 (basic)"."""
    request = result.request
    parts = []
    for prefix, side, totals in (
        ("", request.current, result.current),
        ("pinned ", request.pinned, result.pinned),
    ):
        within = _within(totals, result.repeats, request.budget_epsilon)
        if within is None:
            parts.append(f"{prefix}{side.label}: none")
        else:
            k, name = within
            more = " or more" if k == result.repeats[-1] else ""
            parts.append(f"{prefix}{side.label}: up to k = {k}{more} ({name})")
    return (
        f"<b>Releases within the budget ε = {privacy_number(request.budget_epsilon)}, "
        f"δ = {privacy_number(request.budget_delta)}</b> "
        f"(of the k drawn): {'; '.join(parts)}."
    )
