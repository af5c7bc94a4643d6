"""Issue 28, item 7: the group-by neighbours view drew the clamped point masses of Noisy sum /
noisy count as bars right of the axis, their labels over each other, the legend and
"true f(D')". Checked geometrically: the rectangles the labels, the legend and the stems cover
on screen (pixels of the plot's canvas) never intersect, and the stems stand at the bounds."""

from __future__ import annotations

import itertools

import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QGraphicsSimpleTextItem

from dpexplorer.data import queries as q


def _on_screen(view, item) -> QRectF:
    """The item's rectangle in the canvas's pixels, from Qt's own transforms (not the view's
    helpers): what a reader sees it cover."""
    canvas = view.canvas
    if isinstance(item, pg.TextItem):
        item = item.textItem
    return item.deviceTransform(canvas.viewportTransform()).mapRect(item.boundingRect())


def _mean_by_sex(qtbot, window):
    window.resize(1280, 720)
    query = q.GroupBy((q.Axis("sex", ("Female", "Male")),), "mean", column="age", lower=17, upper=90)
    window.explorer.set_query(query)
    panel = window.mechanism_panel
    qtbot.waitUntil(
        lambda: (
            window.explorer.query_input is not None and "noisy_mean" in [m.name for m in panel.mechanisms]
        ),
        timeout=20_000,
    )
    panel.select("noisy_mean")
    view = window.neighbours_view
    qtbot.waitUntil(
        lambda: view.result is not None and view.result.mechanism == "Noisy sum / noisy count", timeout=20_000
    )
    qtbot.waitUntil(lambda: window.views_idle(), timeout=60_000)
    qtbot.wait(50)  # painted: the text items' transforms are current
    return view


def test_group_by_point_masses_stand_at_the_bounds_and_no_label_overlaps(qtbot, window):
    view = _mean_by_sex(qtbot, window)
    masses = view.result.output.point_masses
    assert {m.at for m in masses} == {17.0, 90.0}, "the empty group 'other': both clamps carry mass"
    stems = [s for s in view._pools["stem"] if s.isVisible()]
    xs = sorted(float(s.opts["x"][0]) for s in stems)
    left, right = view.outputs.getViewBox().viewRange()[0]
    assert max(xs[:2]) < 17.5 and min(xs[2:]) > 89.5 and max(xs) < 90.5, "at 17 and 90, not right of the axis"
    assert left <= min(xs) and max(xs) <= right
    labels = [t for t in view._pools["mass"] if t.isVisible()]
    assert sorted(t.toPlainText().split("\n")[0].rstrip(" ▲") for t in labels) == [
        "clamped to 17",
        "clamped to 90",
    ]
    rules = [
        item
        for key in ("true_d", "true_d_prime")
        for item in view._items[key].childItems()
        if isinstance(item, QGraphicsSimpleTextItem) and item.isVisible()
    ]
    assert [r.text() for r in rules] == ["true f(D)", "true f(D')"]
    boxes = {f"mass {i}": _on_screen(view, t) for i, t in enumerate(labels)}
    boxes |= {r.text(): _on_screen(view, r) for r in rules}
    boxes["legend"] = _on_screen(view, view.outputs.legend)
    for (a, ra), (b, rb) in itertools.combinations(boxes.items(), 2):
        assert not ra.intersects(rb), f"{a} {ra} overlaps {b} {rb}"
    plot = _on_screen(view, view.outputs.getViewBox())
    for name, box in boxes.items():
        assert plot.contains(box) or name.startswith("true"), f"{name} {box} leaves the plot {plot}"
    for i in range(len(labels)):  # a label does not cover the stems either
        for stem in stems:
            assert not boxes[f"mass {i}"].intersects(_on_screen(view, stem))
