"""The neighbouring-datasets view's arithmetic of what it draws, with no widget: where the privacy
loss exceeds ε, the outputs worth showing, the loss as drawn (clipped), the excess area's polygon,
the red bands and the histograms of a simulated mechanism with their sampling errors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QPainterPath

from dpexplorer.core.mechanisms.base import NumericOutput

MIN_RUNS_FOR_LOSS = 10
"""Simulated runs a bin needs on each side before its privacy loss is estimated (below, the
logarithm of a count is mostly noise)."""
LOSS_CLIP = 25.0
"""Losses beyond ±this (including ±inf) are drawn at the clip, and the plot says so."""
INK = 1e-3
"""A density below this fraction of the tallest is under half a pixel high on a plot up to
500 px tall: the x range need not show it (unless the loss exceeds ε there)."""


def over_epsilon(loss: np.ndarray, epsilon: float) -> np.ndarray:
    """Where |loss| > epsilon (NaN, where both densities vanish, is not; nor is rounding noise)."""
    return np.abs(np.nan_to_num(loss, nan=0.0)) > epsilon * (1 + 1e-9)


def shown_span(grid: np.ndarray, p: np.ndarray, q: np.ndarray, over: np.ndarray) -> tuple[float, float]:
    """The outputs the plots fit: where either density is visible (at least INK of the tallest)
    or the loss exceeds ε (``over``, the red bands). The grid itself holds all but 1e-10 of
    each law per side, which for heavy tails (Cauchy: ±3e9 noise scales) would squeeze the
    densities into a spike; the curves still run over the whole grid, for panning and export."""
    top = max(float(np.max(p)), float(np.max(q))) if grid.size else 0.0
    keep = np.flatnonzero((p >= INK * top) | (q >= INK * top) | over)
    if keep.size == 0 or grid.size < 2:
        return (float(grid[0]), float(grid[-1])) if grid.size else (0.0, 1.0)
    return float(grid[keep[0]]), float(grid[keep[-1]])


def span_width(low: float, high: float) -> float:
    """``high - low``, or 1 for an empty span (a single output)."""
    return high - low if high > low else 1.0


def clip_loss(loss: np.ndarray) -> np.ndarray:
    """The loss as drawn: NaN (both sides 0) at 0, beyond ±LOSS_CLIP (±inf too) at the clip."""
    return np.clip(np.nan_to_num(loss, nan=0.0, posinf=LOSS_CLIP, neginf=-LOSS_CLIP), -LOSS_CLIP, LOSS_CLIP)


def excess_area(grid: np.ndarray, p: np.ndarray, scaled_q: np.ndarray) -> QPainterPath:
    """The region between p_D and min(p_D, e^ε·p_D'), as one closed polygon: its area is
    ∫ max(0, p_D − e^ε p_D'). Built in numpy: pyqtgraph's FillBetweenItem rebuilds its path
    from two curves' polygons, 4 ms per curve at each redraw."""
    floor = np.minimum(p, scaled_q)
    path = pg.arrayToQPath(np.concatenate((grid, grid[::-1])), np.concatenate((p, floor[::-1])))
    path.closeSubpath()
    return path


def excess_bands(grid: np.ndarray, over: np.ndarray) -> list[tuple[float, float]]:
    """The spans of outputs where ``over`` (|loss| > ε) holds, each run of grid points widened by
    half a step on each side."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], over.astype(int), [0]))))
    step = float(np.median(np.diff(grid))) / 2 if grid.size > 1 else 0.5
    return [(grid[a] - step, grid[b - 1] + step) for a, b in zip(edges[::2], edges[1::2], strict=True)]


@dataclass(frozen=True)
class SimulatedBins:
    """Histograms of ``runs`` simulated outputs per side over bins centred on ``grid`` of width
    ``width``: counts, densities with their standard errors (a bin of c runs in R: sqrt(c (1 −
    c/R)) runs), and the loss ln(c_D / c_D') estimated where both sides have at least
    :data:`MIN_RUNS_FOR_LOSS` runs (``enough``), with the delta method's standard error
    sqrt(1/c_D + 1/c_D') (NaN elsewhere)."""

    grid: np.ndarray
    edges: np.ndarray
    width: float
    runs: int
    counts_d: np.ndarray
    counts_d_prime: np.ndarray
    enough: np.ndarray
    loss: np.ndarray
    se_loss: np.ndarray

    @classmethod
    def of(cls, out: NumericOutput) -> SimulatedBins:
        grid = np.asarray(out.grid, dtype=float)
        runs = int(out.monte_carlo_runs)
        width = float(grid[1] - grid[0]) if grid.size > 1 else 1.0
        edges = np.append(grid - width / 2, grid[-1] + width / 2)
        c_d, c_q = (
            np.round(np.asarray(d, dtype=float) * runs * width) for d in (out.density_d, out.density_d_prime)
        )
        enough = (c_d >= MIN_RUNS_FOR_LOSS) & (c_q >= MIN_RUNS_FOR_LOSS)
        with np.errstate(divide="ignore", invalid="ignore"):
            loss = np.where(enough, np.log(c_d) - np.log(c_q), np.nan)
            se_loss = np.where(enough, np.sqrt(1 / c_d + 1 / c_q), np.nan)
        return cls(grid, edges, width, runs, c_d, c_q, enough, loss, se_loss)

    def density(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A side's estimated density per bin and its standard error."""
        scale = self.runs * self.width
        return counts / scale, np.sqrt(counts * (1 - counts / self.runs)) / scale
