"""Issue 41, item 2: "Where to clip" models the chosen mechanism. With noisy sum / noisy count
chosen for the mean of Adult's hours_per_week in [1, 99] (noise about ±0.006), it modelled a
Laplace release (noise (U - L) / 2 / ε, no 1/n) and advised [39.71, 41.18], whose clipping bias
(-0.15) is 80 times the noisy mean's noise. Now its smallest error lies at bounds whose bias is
below the noise, its title names the mechanism, its panels have titles and their legends lie
clear of the curves (measured on screen, in the style of test_view_labels)."""

from __future__ import annotations

import itertools

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QRectF

from dpexplorer.core.clipping import DRAWS, NoiseModel, ratio_error
from dpexplorer.core.mechanisms.noisy_mean import RatioLaw, scales
from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict
from dpexplorer.gui.views.clipping import ClippingResult, job

NOISY_MEAN = NoiseModel("noisy_mean", (("count_l1", 1.0), ("epsilon", 1.0), ("sum_share", 0.5)))
HOURS = {"type": "mean", "column": "hours_per_week", "lower": 1, "upper": 99}


def test_noisy_mean_on_adult_hours_is_smallest_where_bias_is_below_noise() -> None:
    result = job(load_dataset(default_dataset_path()), query_from_dict(HOURS), 1.0, model=NOISY_MEAN)
    t = result.tradeoff
    low, high, _error = t.best()
    i, j = t.at(low, high)
    assert abs(t.bias[i, j]) < t.noise[i, j], (low, high, t.bias[i, j], t.noise[i, j])
    assert high - low > 30, f"not the Laplace model's narrow [39.71, 41.18]: [{low}, {high}]"
    i, j = t.at(1.0, 99.0)
    assert t.noise[i, j] == pytest.approx(0.0028, rel=0.1), "the noisy mean's noise at [1, 99]"
    assert t.model == f"Noisy sum / noisy count, Monte Carlo ({DRAWS:,} seeded draws)"


def test_ratio_error_matches_the_mechanisms_own_moments() -> None:
    """The Monte Carlo bias and sd against RatioLaw.moments_about (numerical integration), within
    4 standard errors of DRAWS draws."""
    lower, upper, n, clipped = 10.0, 60.0, 200, 31.0
    bias, sd = ratio_error(lower, upper, clipped, n, 0.5, NOISY_MEAN)
    b1, b2 = scales(0.5, 0.5, ((upper - lower) / 2, 1.0))
    exact_bias, second = RatioLaw(lower, upper, n * (clipped - 35.0), n, b1, b2).moments_about(clipped)
    exact_sd = float(np.sqrt(second - exact_bias**2))
    assert bias == pytest.approx(exact_bias, abs=4 * exact_sd / np.sqrt(DRAWS))
    assert sd == pytest.approx(exact_sd, rel=4 * np.sqrt(2 / DRAWS))  # sd of a sample sd ~ sd/sqrt(2N)


def test_an_unmodelled_mechanism_is_named_as_modelled_by_laplace() -> None:
    model = NoiseModel.of("smooth_sensitivity", "Smooth sensitivity", {"epsilon": 1.0})
    assert model.name == "laplace"
    assert model.describe() == "modelled as Laplace (Smooth sensitivity is not modelled here)"


def _on_screen(plot: pg.PlotWidget, item) -> QRectF:
    return item.deviceTransform(plot.viewportTransform()).mapRect(item.boundingRect())


def test_window_names_the_noisy_mean_and_keeps_legends_off_the_curves(qtbot, window) -> None:
    window.resize(1280, 720)
    state = window.query_panel.state()
    state.update(kind="mean", column="hours_per_week", lower=1.0, upper=99.0)
    window.query_panel.set_state(state)
    panel = window.mechanism_panel
    qtbot.waitUntil(
        lambda: (
            window.explorer.query_input is not None and "noisy_mean" in [m.name for m in panel.mechanisms]
        ),
        timeout=20_000,
    )
    panel.select("noisy_mean")
    window.tabs.setCurrentWidget(window.clipping_view)
    view = window.clipping_view
    qtbot.waitUntil(
        lambda: isinstance(view.result, ClippingResult) and "Noisy sum" in view.result.tradeoff.model,
        timeout=60_000,
    )
    qtbot.wait(100)  # painted: the items' transforms are current
    assert "Noisy sum / noisy count" in view.title.text()
    for plot in (view.upper_plot, view.lower_plot):
        item = plot.getPlotItem()
        assert item.titleLabel.text in ("Error as U moves (L held)", "Error as L moves (U held)")
        legend = _on_screen(plot, item.legend)
        assert [label.text for _, label in item.legend.items][:3] == [
            "total error √(bias² + noise²)",
            "|bias| (observed: not public)",
            "noise (standard deviation)",
        ]
        box = _on_screen(plot, item.getViewBox())
        # each line's (PlotCurveItem) and marker's (ScatterPlotItem) drawn rectangle, in the view
        parts = [p for c in item.listDataItems() for p in (c.curve, c.scatter) if p.isVisible()]
        curves = [_on_screen(plot, p).intersected(box) for p in parts]
        assert len(curves) == 4 and all(not c.isEmpty() for c in curves), curves
        for k, curve in enumerate(curves):
            assert not legend.intersects(curve), f"legend {legend} covers curve {k} {curve}"
        assert plot.rect().contains(legend.toRect()), "the legend is on the plot's canvas"
    for a, b in itertools.combinations((view.upper_plot, view.lower_plot), 2):
        assert a.geometry() != b.geometry()
