"""The neighbouring-datasets view reuses its items across redraws and shows exactly what it is
given: point masses (⊥), red bands where |loss| > epsilon, the clipped-loss note."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from dpexplorer.core.mechanisms.base import NumericOutput, PointMass
from dpexplorer.gui.jobs import NeighboursResult
from dpexplorer.gui.views.neighbours import LOSS_CLIP, NeighboursView


def _result(masses: tuple[PointMass, ...], epsilon: float, loss_scale: float) -> NeighboursResult:
    grid = np.linspace(-5, 5, 201)
    p, q = np.exp(-(grid**2) / 2), np.exp(-((grid - 1) ** 2) / 2)
    output = NumericOutput(
        grid=grid,
        density_d=p,
        density_d_prime=q,
        privacy_loss=loss_scale * (0.5 - grid),
        point_masses=masses,
    )
    return NeighboursResult("Test", output, epsilon, 0.0, 0.01, "D' adds a row.", {"epsilon": epsilon})


def _visible(view: NeighboursView, kind: type) -> list[pg.GraphicsObject]:
    items = view.outputs.getPlotItem().items + view.loss.getPlotItem().items
    return [item for item in items if isinstance(item, kind) and item.isVisible()]


def test_point_masses_bands_and_note_follow_each_result(qtbot):
    view = NeighboursView()
    qtbot.addWidget(view)
    view.show()
    bottom = PointMass("⊥", 0.2, 0.05)
    view.show_result(_result((bottom,), epsilon=1.0, loss_scale=1.0))
    texts = [t for t in _visible(view, pg.TextItem) if "⊥" in t.toPlainText()]
    assert len(texts) == 1 and "P_D = 0.2" in texts[0].toPlainText()
    heights = sorted(float(b.opts["height"][0]) for b in _visible(view, pg.BarGraphItem))
    assert heights == [0.05, 0.2]
    bands = _visible(view, pg.LinearRegionItem)
    assert len(bands) == 4  # |loss| > 1 on both sides of the grid, in both plots
    items_before = len(view.outputs.getPlotItem().items)

    view.show_result(_result((), epsilon=10.0, loss_scale=10.0))  # no mass; loss up to 55 > clip
    assert not [t for t in _visible(view, pg.TextItem) if "⊥" in t.toPlainText()]
    assert not _visible(view, pg.BarGraphItem)
    notes = [t for t in _visible(view, pg.TextItem) if f"±{LOSS_CLIP:g}" in t.toPlainText()]
    assert len(notes) == 1
    assert len(view.outputs.getPlotItem().items) == items_before  # hidden and reused, not re-made
