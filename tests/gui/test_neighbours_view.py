"""The neighbouring-datasets view reuses its items across redraws and shows exactly what it is
given: point masses (⊥), red bands where |loss| > epsilon, the clipped-loss note."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyqtgraph as pg
import pytest

from dpexplorer.core.mechanisms.base import NumericOutput, PointMass
from dpexplorer.gui.jobs import NeighboursResult
from dpexplorer.gui.views.neighbours import NeighboursView
from dpexplorer.gui.views.neighbours_shapes import LOSS_CLIP
from dpexplorer.gui.views.spanning import Bands, Rules


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
    items = view.outputs.items + view.loss.items
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
    grid = np.linspace(-5, 5, 201)
    half_step = (grid[1] - grid[0]) / 2
    over = grid[np.abs(0.5 - grid) > 1.0]  # |loss| > ε = 1 on both sides of the grid
    expected = [
        (-5 - half_step, over[over < 0].max() + half_step),
        (over[over > 0].min() - half_step, 5 + half_step),
    ]
    bands = [item for item in view.outputs.items + view.loss.items if isinstance(item, Bands)]
    assert len(bands) == 2  # one per plot
    for band, plot in zip(bands, (view.outputs, view.loss), strict=True):
        np.testing.assert_allclose(band.spans, expected)
        low, high = plot.getViewBox().viewRange()[1]  # full height, following the view
        outline = band.path().boundingRect()
        assert (outline.top(), outline.bottom()) == pytest.approx((low, high))
    view.loss.getViewBox().setYRange(-100, 100, padding=0)
    assert bands[1].path().boundingRect().bottom() == pytest.approx(100)
    items_before = len(view.outputs.items)

    view.show_result(_result((), epsilon=10.0, loss_scale=10.0))  # no mass; loss up to 55 > clip
    assert not [t for t in _visible(view, pg.TextItem) if "⊥" in t.toPlainText()]
    assert not _visible(view, pg.BarGraphItem)
    notes = [t for t in _visible(view, pg.TextItem) if f"±{LOSS_CLIP:g}" in t.toPlainText()]
    assert len(notes) == 1
    assert len(view.outputs.items) == items_before  # hidden and reused, not re-made


def test_many_outcomes_show_the_likeliest_and_one_bar_for_the_rest():
    from dpexplorer.gui.views.outcomes import MAX_BARS, ShownOutcomes

    rng = np.random.default_rng(4)
    p, q = rng.dirichlet(np.ones(500)), rng.dirichlet(np.ones(500))
    labels = [f"list {i}" for i in range(500)]
    shown = ShownOutcomes.of(p, q, labels)
    assert len(shown.labels) == MAX_BARS and shown.labels[-1] == f"{500 - MAX_BARS + 1} others"
    likeliest = set(np.argsort(-np.maximum(p, q))[: MAX_BARS - 1])
    assert set(shown.index) == likeliest and list(shown.index) == sorted(shown.index)
    np.testing.assert_allclose(shown.collect(p).sum(), 1.0)  # nothing lost, nothing counted twice
    loss = shown.loss(np.log(p) - np.log(q), p, q)
    rest = np.setdiff1d(np.arange(500), shown.index)
    assert loss[-1] == np.log(p[rest].sum()) - np.log(q[rest].sum())
    few = ShownOutcomes.of(p[:5] / p[:5].sum(), q[:5] / q[:5].sum(), labels[:5])
    assert few.labels == tuple(labels[:5]) and len(few.collect(p[:5])) == 5


def test_bar_names_never_overlap_and_the_tallest_come_first():
    from dpexplorer.gui.views.outcomes import readable_ticks

    labels = [f"list {i:02d}" for i in range(20)] + ["280 others"]  # 7 and 10 characters
    heights = np.array([0.5, 0.3] + [0.01] * 18 + [0.1])  # bar 1 is the tallest that fits
    ticks = readable_ticks(labels, heights, chars_per_bar=3.0)  # a name spans ~3 bars
    named = [i for i, t in enumerate(ticks) if t]
    assert 20 not in named and 0 not in named  # at the ends: the names would cross them
    assert 1 in named and 2 not in named  # the tallest that fits, then not its neighbour
    widths = {i: (len(labels[i]) + 2) / 2 / 3.0 for i in named}
    assert all(abs(a - b) >= widths[a] + widths[b] for a in named for b in named if a < b)
    assert readable_ticks(labels, heights, chars_per_bar=50.0) == tuple(labels)  # room for all


def _shaded_area(view: NeighboursView) -> float:
    """Area of the dark red fill, by the shoelace formula over its polygon."""
    polygon = view._items["fill"].path().toFillPolygon()
    if polygon.size() < 3:
        return 0.0
    xy = np.array([(point.x(), point.y()) for point in polygon])
    x, y = xy[:, 0], xy[:, 1]
    return abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))) / 2


def test_the_shaded_area_is_the_excess_of_p_over_e_epsilon_q(qtbot):
    """The dark red area is ∫ max(0, p_D − e^ε p_D') over the grid (trapezoid rule, as drawn);
    it was once empty (a fill between two curves that had no pen, so no path)."""
    view = NeighboursView()
    qtbot.addWidget(view)
    view.show()
    for epsilon in (0.2, 1.0, 3.0):
        result = _result((), epsilon=epsilon, loss_scale=1.0)
        view.show_result(result)
        out = result.output
        excess = np.maximum(0.0, out.density_d - np.exp(epsilon) * out.density_d_prime)
        expected = float(np.trapezoid(excess, out.grid))
        assert _shaded_area(view) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert (expected > 0.01) == (epsilon < 3.0)  # the three cases: large, some, none shaded


def test_epsilon_and_true_answer_rules_cross_the_view_where_the_result_says(qtbot):
    """The ±ε lines run across the loss plot at ±ε, the true-answer lines up the output plot at
    f(D) and f(D'), each with its label on it, and they follow the view when it is panned."""
    view = NeighboursView()
    qtbot.addWidget(view)
    view.show()
    result = replace(_result((), epsilon=0.7, loss_scale=1.0), true_d=1.5, true_d_prime=-2.0)
    view.show_result(result)
    rules = {key: view._items[key] for key in ("epsilon_lines", "true_d", "true_d_prime")}
    assert all(isinstance(rule, Rules) for rule in rules.values())
    assert rules["epsilon_lines"].values == (0.7, -0.7)
    assert (rules["true_d"].values, rules["true_d_prime"].values) == ((1.5,), (-2.0,))

    def lines(rule: Rules) -> list[tuple[float, float, float, float]]:
        path = rule.path()
        points = [path.elementAt(i) for i in range(path.elementCount())]
        return [(a.x, a.y, b.x, b.y) for a, b in zip(points[::2], points[1::2], strict=True)]

    for _ in range(2):
        (left, right), (bottom, top) = view.loss.getViewBox().viewRange()
        expected = [(left, 0.7, right, 0.7), (left, -0.7, right, -0.7)]
        np.testing.assert_allclose(lines(rules["epsilon_lines"]), expected)
        (left, right), (bottom, top) = view.outputs.getViewBox().viewRange()
        np.testing.assert_allclose(lines(rules["true_d"]), [(1.5, bottom, 1.5, top)])
        label = rules["true_d"].childItems()[0]
        assert label.text() == "true f(D)" and label.isVisible()
        assert label.pos().x() == pytest.approx(1.5)
        assert label.pos().y() == pytest.approx(bottom + 0.95 * (top - bottom))
        view.outputs.getViewBox().setRange(xRange=(-30, 30), yRange=(-1, 3), padding=0)
    assert [label.text() for label in rules["epsilon_lines"].childItems()] == ["+ε", "−ε"]
    assert rules["epsilon_lines"].dataBounds(1) == (-0.7, 0.7)
    assert rules["epsilon_lines"].dataBounds(0) is None  # auto-range ignores its x: it follows the view


def test_noise_too_small_to_plot_is_drawn_in_noise_scales_with_the_true_answers_on_it(qtbot):
    """A heavily tied median: the smooth sensitivity is ~1e-36 of the value, so the grid is in
    noise scales of M(D) from its centre. The true answers are mapped onto that grid (they once
    stayed in output units, far off screen), the axis says what it shows, and draws, which
    float64 cannot resolve at this scale, are left out with a note."""
    from dpexplorer.core.mechanisms.base import NumericInput
    from dpexplorer.core.mechanisms.smooth import SmoothStudentT
    from dpexplorer.core.sensitivity import quantile_of_sorted
    from dpexplorer.gui import jobs
    from dpexplorer.gui.jobs import DrawsResult
    from dpexplorer.gui.views.neighbours import SCALED_AXIS

    x = np.sort(np.clip(np.round(np.random.default_rng(1).normal(40, 13, 40_001)), 17, 90))
    x_prime = np.sort(np.r_[x[:-1], 17.0])
    median, median_prime = quantile_of_sorted(x, 0.5, 17), quantile_of_sorted(x_prime, 0.5, 17)
    query = NumericInput(
        np.array([median]), np.array([median_prime]), 73.0, 73.0, x.size, "median",
        relation="replace", bounds=(17.0, 90.0), sorted_values_d=x, sorted_values_d_prime=x_prime,
    )  # fmt: skip
    mechanism = SmoothStudentT()
    result = jobs.neighbours(mechanism, mechanism.validate({"epsilon": 1.0, "dof": 3}), query)
    out = result.output
    assert not out.in_output_units and out.unit < 1e-20
    assert result.true_d == pytest.approx(0.0) and result.true_d == out.to_grid(median)
    view = NeighboursView()
    qtbot.addWidget(view)
    view.show()
    view.show_result(result)
    assert view.loss.getAxis("bottom").labelText == SCALED_AXIS
    (left, right), _ = view.outputs.getViewBox().viewRange()
    assert left < view._items["true_d"].values[0] < right  # on screen
    draws = np.full(1000, median)  # what float64 makes of f(D) + 1e-36 Z
    view.show_draws(DrawsResult(draws, draws, draws.size))
    assert not view.overlays_draws()
    assert "not overlaid" in view.delta_label.text()


def test_the_plots_fit_the_visible_densities_and_the_red_bands():
    """Heavy tails: the grid holds all but 1e-10 of a Cauchy law (±3e9 scales), but the plots
    fit where a density is at least INK of the tallest (1/(1 + x²) ≥ 1e-3: |x| ≤ 31.6),
    widened to any output where the loss exceeds ε."""
    from scipy import stats

    from dpexplorer.gui.views.neighbours_shapes import INK, shown_span

    grid = np.concatenate(
        [-np.geomspace(3e9, 40, 300), np.linspace(-40, 40, 801), np.geomspace(40, 3e9, 300)]
    )
    p, q = stats.cauchy.pdf(grid), stats.cauchy.pdf(grid, loc=1)
    low, high = shown_span(grid, p, q, np.zeros(grid.size, bool))
    edge = np.sqrt(1 / INK - 1)
    assert low == pytest.approx(-edge, abs=0.2) and high == pytest.approx(1 + edge, abs=0.2)
    over = grid > 1e5  # a red band far out in the tail
    assert shown_span(grid, p, q, over) == (low, grid[-1])


def test_small_noise_is_plotted_in_noise_scales_with_its_draws_mapped_onto_them(qtbot):
    """Noise 1e-6 of the value: float64 still holds it, but a plot in output units would not
    (ticks 37.00001, and Qt rasterising in single precision), so the grid is in noise scales;
    the draws are mapped there and their histogram follows the standard Laplace density
    within 5 binomial standard errors per bin."""
    from scipy import stats

    from dpexplorer.core.accuracy import NoisyRelease, numeric_output
    from dpexplorer.gui.jobs import DrawsResult

    scale = 37e-6
    out = numeric_output(
        NoisyRelease(stats.laplace, 37.0, scale), NoisyRelease(stats.laplace, 37.0 + scale, scale)
    )
    assert not out.in_output_units and out.outputs_resolve_noise and out.unit == scale
    view = NeighboursView()
    qtbot.addWidget(view)
    view.show()
    view.show_result(NeighboursResult("Test", out, 1.0, 0.0, 0.0, "", {"epsilon": 1.0}, 0.0, 1.0))
    size = 100_000
    draws = 37.0 + scale * np.random.default_rng(7).laplace(size=size)
    view.show_draws(DrawsResult(draws, draws, size))
    assert view.overlays_draws() and "not overlaid" not in view.delta_label.text()
    edges, heights = view._items["draws_d"].getOriginalDataset()
    chance = np.diff(stats.laplace.cdf(edges))
    expected = chance / np.diff(edges)
    standard_error = np.sqrt(size * chance * (1 - chance)) / (size * np.diff(edges))
    assert np.all(np.abs(heights - expected) <= 5 * standard_error + 1e-12)
    assert heights.max() > 0.3  # the peak of a standard Laplace density (0.5), binned
