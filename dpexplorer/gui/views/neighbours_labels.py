"""Where the neighbouring-datasets view puts its labels so that none covers another: the true
answers' labels on their lines, and each point mass's label beside its stems. Both try places in
order and take the first free one, else the least covered (in square pixels of the scene)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF

from dpexplorer.gui.views.spanning import Rules

STEM_CLEARANCE = 8.0
"""Pixels between a true answer's line and its label: a point mass's stems may stand on it."""
LABEL_GAP = 4.0
"""Pixels between a point mass's stems and its label."""


def covered(rect: QRectF, area: QRectF, taken: list[QRectF]) -> float:
    """Square pixels of ``rect`` outside ``area`` or over any of ``taken`` (0: a free place)."""
    inside = rect.intersected(area)
    outside = rect.width() * rect.height() - inside.width() * inside.height()
    over = (rect.intersected(r) for r in taken)
    return outside + sum(max(0.0, r.width()) * max(0.0, r.height()) for r in over)


def place_line_labels(rules: list[Rules], along: list[float], area: QRectF, taken: list[QRectF]) -> None:
    """Each rule's (vertical line's) one label right of its line at ``along`` (fraction of the
    height) if free, else left, else lower down in steps of a tenth; a label placed is taken
    for the next. ``taken`` grows with them."""
    for rule, start in zip(rules, along, strict=True):
        best: tuple[float, float, tuple[float, float]] | None = None
        for height in np.arange(start, 0.0, -0.1):
            clear = STEM_CLEARANCE / max(rule.label_width(), 1.0)  # past a stem on the line
            for anchor in ((-clear, 0.5), (1.0 + clear, 0.5)):
                (rect,) = rule.label_rects_at(float(height), anchor)
                cost = covered(rect, area, taken)
                if best is None or cost < best[0]:
                    best = (cost, float(height), anchor)
                if cost == 0:
                    break
            if best is not None and best[0] == 0:
                break
        assert best is not None  # ``start`` > 0: at least one height was tried
        rule.place_labels(best[1], best[2])
        taken += rule.label_rects()


def _tops_nearest(wanted: float, height: float, area: QRectF) -> list[float]:
    """Tops of a label ``height`` high inside ``area``, a quarter of its height apart, nearest
    ``wanted`` first (below before above at equal distance): a short plot leaves few free rows, and
    the one free may lie above the stem's top as well as below it."""
    bottom = max(area.top(), area.bottom() - height)
    steps = int((bottom - area.top()) // max(height / 4, 1.0)) + 1
    tops = {min(bottom, area.top() + i * height / 4) for i in range(steps)} | {bottom}
    if area.top() <= wanted <= bottom:
        tops.add(wanted)
    return sorted(tops, key=lambda top: (abs(top - wanted), top < wanted))


def place_beside_stems(
    view: pg.ViewBox,
    texts: list[pg.TextItem],
    spots: list[tuple[float, float]],
    stems: list[QRectF],
    taken: list[QRectF],
) -> None:
    """Each text beside the top of its pair of stems (``spots``: the tops, in data units;
    ``stems``: two scene rectangles per text), where it covers nothing ``taken`` and stays inside
    the plot: right of the stems, then left, lower and lower. ``taken`` grows with them."""
    area = view.sceneBoundingRect()
    for k, (text, (x, y)) in enumerate(zip(texts, spots, strict=True)):
        size = text.textItem.boundingRect()
        w, h = size.width(), size.height()
        spot = view.mapViewToScene(QPointF(x, y))
        own = stems[2 * k : 2 * k + 2]
        left_edge = min((r.left() for r in own), default=spot.x())
        right_edge = max((r.right() for r in own), default=spot.x())
        candidates = (
            QRectF(left, top, w, h)
            for top in _tops_nearest(spot.y() - h / 2, h, area)
            for left in (right_edge + LABEL_GAP, left_edge - LABEL_GAP - w)
        )
        # the first free one, else the (first) least covered; the search stops at a free one
        best: tuple[float, QRectF] | None = None
        for rect in candidates:
            cost = covered(rect, area, taken)
            if best is None or cost < best[0]:
                best = (cost, rect)
                if cost == 0:
                    break
        assert best is not None  # ``rows`` >= 1: at least two candidates
        chosen = best[1]
        taken.append(chosen)
        text.setPos(view.mapSceneToView(chosen.topLeft()))
