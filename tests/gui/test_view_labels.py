"""Issue 28, item 7: the group-by neighbours view drew the clamped point masses of Noisy sum /
noisy count as bars right of the axis, their labels over each other, the legend and
"true f(D')". Checked geometrically: the rectangles the labels, the legend and the stems cover
on screen (pixels of the plot's canvas) never intersect, and the stems stand at the bounds."""

from __future__ import annotations

import itertools

import numpy as np
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
    assert {m.at for m in masses} == {17.0, 90.0}, "the empty group '(any other)': both clamps carry mass"
    stems = [s for s in view._pools["stem"] if s.isVisible()]
    xs = sorted(float(s.opts["x"][0]) for s in stems)
    left, right = view.outputs.getViewBox().viewRange()[0]
    assert max(xs[:2]) < 17.5 and min(xs[2:]) > 89.5 and max(xs) < 90.5, "at 17 and 90, not right of the axis"
    assert left <= min(xs) and max(xs) <= right
    _assert_labels_clear(view, stems)


def _assert_labels_clear(view, stems) -> None:
    """The point masses' labels, the true answers' labels and the legend cover neither each
    other nor a stem, inside the plot (the true answers' labels may sit at its sides)."""
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


def test_the_labels_stay_clear_when_the_window_is_resized(qtbot, window):
    """A resize changes the plot's pixels but not its ranges: every label is placed again in
    the new transform (they were placed in the old one, which pyqtgraph updates only at the
    next paint, and a loaded machine's event order left "clamped to 90" over "true f(D)")."""
    view = _mean_by_sex(qtbot, window)
    for width, height in ((1000, 700), (1600, 900), (1180, 720)):
        window.resize(width, height)
        qtbot.waitUntil(lambda: window.views_idle(), timeout=60_000)
        qtbot.wait(50)  # painted
        _assert_labels_clear(view, [s for s in view._pools["stem"] if s.isVisible()])


def test_a_changed_axis_title_is_centred_again_without_a_resize(qtbot):
    """set_axis_label centres a new title on its axis at once: pyqtgraph centres it only when
    the axis is resized, so a title shortened afterwards kept the long one's place."""
    from dpexplorer.gui.views.base import set_axis_label

    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(400, 300)
    plot.show()
    set_axis_label(plot.getPlotItem(), "left", "a rather long title of the left axis")
    qtbot.wait(50)
    axis = plot.getPlotItem().getAxis("left")
    set_axis_label(plot.getPlotItem(), "left", "short")
    label = axis.label.mapRectToItem(axis, axis.label.boundingRect())
    assert abs(label.center().y() - axis.size().height() / 2) <= 1.0, (label, axis.size())


def test_the_bar_with_the_mass_is_named_even_at_the_axis_end():
    """Issue 28: the most common occupation (all the mass on the first bar, "Prof-specialty") was
    left unnamed because its name crossed the axis's left end."""
    from dpexplorer.gui.views.outcomes import readable_ticks, span_for_name

    labels = ["Prof-specialty", *(f"Occupation-{i:02d}" for i in range(13))]
    heights = np.array([1.0] + [0.0] * 13)
    pixels_over_char = 14 * 6.0  # 6 characters a bar: a 14-character name spans ~3 bars
    assert readable_ticks(labels, heights, 6.0)[0] == "", "the old rule: crossing the end, unnamed"
    (low, high), chars_per_bar = span_for_name(labels, 0, pixels_over_char, (-0.6, 13.6))
    ticks = readable_ticks(labels, heights, chars_per_bar, span=(low, high), always=0)
    assert ticks[0] == "Prof-specialty"
    half = (1.2 * len(labels[0]) + 2) / 2 / chars_per_bar
    assert low <= -half and high == 13.6, "the range widened on the left just enough to hold it"
    named = [i for i, t in enumerate(ticks) if t]
    halves = {i: (1.2 * len(labels[i]) + 2) / 2 / chars_per_bar for i in named}
    assert all(abs(a - b) >= halves[a] + halves[b] for a in named for b in named if a < b)


def test_most_common_occupation_names_its_only_likely_bar_in_the_window(qtbot, window):
    window.query_panel.select_kind("argmax", "occupation")
    qtbot.waitUntil(lambda: getattr(window.explorer.query, "kind", "") == "argmax", timeout=20_000)
    view = window.neighbours_view
    qtbot.waitUntil(lambda: view.result is not None and bool(view._ticks), timeout=20_000)
    qtbot.waitUntil(lambda: window.views_idle(), timeout=60_000)
    pmf = np.asarray(view.result.output.pmf_d)
    top = int(np.argmax(pmf))
    assert view._ticks[top] == view.result.output.labels[top] == "Prof-specialty"
    # ... and inside the shown range, where pyqtgraph draws it
    low, high = view.outputs.getViewBox().viewRange()[0]
    assert low < top < high
    # the shipped codebook's 14 occupations (adult.names): exploring "the most common N" is not
    # offered, and never exceeds what the column has
    panel = window.query_panel
    assert panel.categories.text().count(",") == 13 and not panel.form.isRowVisible(panel.category_row)
    assert panel.category_count.value() == 14
    assert panel.category_note.text() == "of 14 in the data (observed: not public)"


def test_top_k_asks_for_k_once(qtbot, window):
    """Issue 28: the query panel's k and Private top-k's own k were two controls that could
    differ; the mechanism's now follows the query's and is not shown."""
    panel = window.query_panel
    panel.select_kind("top_k", "occupation")
    mechanisms = window.mechanism_panel
    qtbot.waitUntil(lambda: "topk" in [m.name for m in mechanisms.mechanisms], timeout=20_000)
    mechanisms.select("topk")
    k_control = mechanisms.params.controls["k"]
    assert not k_control.isVisibleTo(mechanisms) and not mechanisms.params.form.labelForField(
        k_control
    ).isVisibleTo(mechanisms)
    panel.k.setValue(4)
    qtbot.waitUntil(lambda: window.explorer.params.get("k") == 4, timeout=20_000)
    assert window.explorer.query.k == 4 and mechanisms.values()["k"] == 4
    qtbot.waitUntil(lambda: "4 picks" in window.neighbours_view.delta_label.text(), timeout=20_000)
    panel.select_kind("argmax", "occupation")  # no k in the query: nothing fixed
    qtbot.waitUntil(lambda: mechanisms.fixed == {}, timeout=20_000)


def test_blr_says_which_number_it_plots(qtbot, window):
    """Issue 28: BLR, PMW and MWEM plotted "output o of the mechanism" (0.001-0.003) without
    saying it is their released answers' largest error."""
    from dpexplorer.core.mechanisms.base import WORKLOAD_ERROR

    window.query_panel.select_kind("workload", "age")
    mechanisms = window.mechanism_panel
    qtbot.waitUntil(lambda: "blr" in [m.name for m in mechanisms.mechanisms], timeout=20_000)
    view = window.neighbours_view
    for name in ("blr", "pmw"):
        mechanisms.select(name)
        qtbot.waitUntil(
            lambda: view.result is not None and view.result.mechanism == mechanisms.current().label,
            timeout=60_000,
        )
        assert view.loss.getAxis("bottom").labelText == WORKLOAD_ERROR, name


def test_the_budget_table_names_released_rows_in_words_shows_the_note_and_rounds_epsilon(qtbot):
    """Issue 28: released rows were labelled by a raw dict ("#1 column=body_mass_g, lower=2700.0,
    ..."), the Note column was pushed out of sight, and ε 0.3 showed as "0.2999"."""
    from types import SimpleNamespace

    from dpexplorer.core.accounting.guarantees import PureDP
    from dpexplorer.gui.views.budget import BudgetView
    from dpexplorer.gui.views.budget_jobs import Row
    from dpexplorer.gui.views.budget_table import _number

    query = {"type": "mean", "column": "body_mass_g", "lower": 2700.0, "upper": 6300.0}
    row = SimpleNamespace(id=1, query=query, mechanism="laplace", guarantee=PureDP(0.5))
    ledger = SimpleNamespace(budget=lambda _fp: None, measurements=lambda _fp: [row])
    view = BudgetView()
    qtbot.addWidget(view)
    view.resize(780, 600)  # the tab's width in a 1280 x 720 window
    view.show()
    view.load_ledger(ledger, "fp")
    label = view.table.item(0, 0).text()
    assert label == "released #1: the mean of body_mass_g, clipped to [2700, 6300]", label
    assert "=" not in label
    note = "released (in the ledger); a long note that used to be cut off at the window's edge"
    view.table.fill([Row(label, "laplace", 0.5, 0.0, True, True, charged=0.29990234375, note=note)])
    qtbot.wait(20)
    assert view.table.item(0, 4).text() == "0.3" and _number(0.29990234375) == "0.3"
    assert view.table.horizontalScrollBar().maximum() == 0, "every column, the note too, in view"
    header = view.table.horizontalHeader()
    note_right = header.sectionPosition(8) + header.sectionSize(8)
    assert note_right <= view.table.viewport().width()


def test_teaching_mode_at_1280_by_720_gives_the_random_walk_plot_the_width(qtbot, window):
    """Issue 28: in teaching mode at 1280 x 720 the random walk's plot was squeezed beside its
    settings (320 px of a 746 px view; a third in the report) with the space under the numbers
    empty. Now the settings and numbers go under it when the view is narrow."""
    window.resize(1280, 720)
    window.teaching_action.setChecked(True)
    try:
        view = window.theory_views.random_walk_view
        window.tabs.setCurrentWidget(view)
        qtbot.waitUntil(lambda: view.result is not None, timeout=30_000)
        qtbot.wait(50)
        assert not view.beside
        assert view.plot.width() >= 0.9 * view.width(), (view.plot.width(), view.width())
        assert view.plot.height() >= 250
        lowest = max(
            w.mapTo(view, w.rect().bottomLeft()).y()
            for w in (view.plot, view.controls, view.summary)
            if w.isVisible()
        )
        assert view.height() - lowest < 40, "no band of empty space under the view's content"
    finally:
        window.teaching_action.setChecked(False)
    from dpexplorer.gui.views.random_walk import RandomWalkView

    wide = RandomWalkView()  # a wide view: beside, the plot still the larger part
    qtbot.addWidget(wide)
    wide.resize(1300, 700)
    wide.show()
    qtbot.waitUntil(lambda: wide.beside is True, timeout=5_000)
    qtbot.wait(20)
    assert wide.plot.width() > wide.width() / 2
