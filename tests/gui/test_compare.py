"""Compare two mechanisms (issue 34): the pinned mechanism's curves over the current one's in
the neighbours and accuracy views, on the same query, with one legend."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyqtgraph as pg
from conftest import wait_idle

from dpexplorer.gui.compare import ACCURACY_PINNED, NEIGHBOURS_PINNED


def _pinned_items(plot: pg.PlotItem) -> list[pg.PlotDataItem]:
    return [
        item
        for item in plot.items
        if isinstance(item, pg.PlotDataItem)
        and "pinned" in (item.name() or "")
        and item.getData()[0] is not None
        and len(item.getData()[0]) > 0
    ]


def _legend_names(plot: pg.PlotItem) -> list[str]:
    return [label.text for _sample, label in plot.legend.items]


def test_laplace_pinned_against_noisy_sum_on_the_mean_age(qtbot, window):
    window.query_panel.select_kind("mean", "age")
    wait_idle(qtbot, window)
    window.mechanism_panel.select("laplace")
    wait_idle(qtbot, window)
    assert window.comparison.pin()
    window.mechanism_panel.select("noisy_mean")
    wait_idle(qtbot, window)
    assert window.comparison.bar.isVisible()
    assert "Laplace" in window.comparison.bar.full

    outputs = window.neighbours_view.outputs
    pinned = _pinned_items(outputs)
    assert len(pinned) == 2  # M(D) and M(D') of the pinned Laplace
    assert any("M(D), pinned Laplace" in name for name in _legend_names(outputs))
    assert any(name == "M(D)" for name in _legend_names(outputs))  # the current one, same legend
    # the pinned law in the current view's coordinates is still a probability density
    x, y = pinned[0].xData, pinned[0].yData
    assert 0.99 < np.trapezoid(y, x) < 1.01

    window.tabs.setCurrentWidget(window.accuracy_view)
    wait_idle(qtbot, window)
    vs_epsilon = window.accuracy_view.vs_epsilon.getPlotItem()
    lines = _pinned_items(vs_epsilon)
    assert len(lines) == 1
    assert any("pinned Laplace" in name for name in _legend_names(vs_epsilon))
    # Laplace's 95% half-width at ε = 1 is about 23,000 times noisy sum / noisy count's
    eps, width = lines[0].xData, lines[0].yData
    at_one = float(np.interp(0.0, np.log10(eps), np.log10(width)))
    mine = window.accuracy_view.result.report.ci_halfwidth
    assert 10**at_one / mine > 1000

    window.comparison.stop()
    assert not window.comparison.bar.isVisible()
    assert not _pinned_items(outputs) and not _pinned_items(vs_epsilon)
    assert NEIGHBOURS_PINNED not in window.compute.pending_views()
    assert ACCURACY_PINNED not in window.compute.pending_views()


def test_a_query_the_pinned_mechanism_refuses_clears_its_curves_and_says_why(qtbot, window):
    window.query_panel.select_kind("mean", "age")
    wait_idle(qtbot, window)
    window.mechanism_panel.select("noisy_mean")
    wait_idle(qtbot, window)
    window.comparison.pin()
    wait_idle(qtbot, window)
    assert len(_pinned_items(window.neighbours_view.outputs)) == 2
    window.query_panel.select_kind("argmax", "occupation")
    wait_idle(qtbot, window)
    assert "does not apply" in window.comparison.bar.full
    assert not _pinned_items(window.neighbours_view.outputs)
    assert window.last_error is None


def _releases_curves(view) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The compare plot's curves by legend name (x: k, y: total ε; the plot is log-log)."""
    plot = view.releases.getPlotItem()
    out = {}
    for item in plot.listDataItems():
        x, y = item.getOriginalDataset()
        if x is not None and len(x) > 0:
            out[item.name()] = (np.asarray(x), np.asarray(y))
    return out


def test_the_budget_view_composes_the_pinned_laplace_beside_the_current_gaussian(qtbot, window):
    """Laplace pinned, Gaussian chosen: the budget tab draws the total ε of k releases of both
    under basic, advanced, zCDP and tight composition, with one legend and the k each fits."""
    window.query_panel.select_kind("mean", "age")
    wait_idle(qtbot, window)
    window.mechanism_panel.select("laplace")
    wait_idle(qtbot, window)
    assert window.comparison.pin()
    window.mechanism_panel.select("gaussian")
    wait_idle(qtbot, window)
    view = window.workspace.budget_view
    window.tabs.setCurrentWidget(view)
    wait_idle(qtbot, window)

    assert view.releases.isVisible()
    curves = _releases_curves(view)
    legend = _legend_names(view.releases.getPlotItem())
    # one legend: the accountants by colour, the two mechanisms by line style
    assert {"Gaussian (solid)", "pinned Laplace (dashed)"} <= set(legend)
    assert {"basic", "advanced", "zCDP", "tight (PLD)"} <= set(legend)
    for method in ("basic", "advanced", "zCDP", "tight (PLD)"):
        assert f"pinned Laplace, {method}" in curves
    for method in ("basic", "advanced", "zCDP"):
        assert f"Gaussian, {method}" in curves
    # the exact Gaussian is charged an (ε, δ) pair under the tight accountant: said, not drawn
    assert "Gaussian, tight (PLD)" in curves or "Gaussian, tight (PLD):" in view.comparison_note.text()
    assert not view.profiles.isVisible()  # the comparison takes the profiles' place
    k, laplace_basic = curves["pinned Laplace, basic"]
    # basic composition of the pinned Laplace: k times one release's ε
    np.testing.assert_allclose(laplace_basic, laplace_basic[0] * k, rtol=1e-9)
    # the lesson: the Gaussian's zCDP total grows like sqrt(k), far below its basic total
    _, gauss_zcdp = curves["Gaussian, zCDP"]
    _, gauss_basic = curves["Gaussian, basic"]
    assert gauss_zcdp[-1] < gauss_basic[-1] / 10
    assert "pinned Laplace" in view.comparison_note.text() and "Gaussian" in view.comparison_note.text()
    # Save plot… > CSV holds what is drawn
    assert list(view.columns["compare_releases_k"]) == list(k)
    np.testing.assert_array_equal(view.columns["compare_pinned_basic_epsilon"], laplace_basic)

    # a new budget δ recomposes at that δ
    before = gauss_zcdp[-1]
    view.budget_delta.setText("1e-3")
    view.budget_delta.editingFinished.emit()
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: view.comparison is not None and view.comparison.request.budget_delta == 1e-3)
    _, after = _releases_curves(view)["Gaussian, zCDP"]
    assert after[-1] < before

    # teaching mode: the bars make way for the comparison (1280 x 720 projector), and come back
    window.teaching_action.setChecked(True)
    assert view.releases.isVisible() and not view.bars.isVisible()
    window.teaching_action.setChecked(False)
    assert view.bars.isVisible()

    window.comparison.stop()
    assert not view.releases.isVisible() and not _releases_curves(view)
    assert view.profiles.isVisible() and view.bars.isVisible()
    assert not any(name.startswith("compare_") for name in view.columns)


def test_the_status_bar_compares_only_with_the_mechanism_on_screen(qtbot, window):
    """The accuracy tab draws when shown: while it still holds an earlier mechanism's result
    (a lesson step that switches mechanism on another tab), the bar gives no ratio against it."""
    window.query_panel.select_kind("mean", "age")
    wait_idle(qtbot, window)
    window.mechanism_panel.select("laplace")
    wait_idle(qtbot, window)
    window.comparison.pin()
    window.mechanism_panel.select("noisy_mean")
    window.tabs.setCurrentWidget(window.accuracy_view)
    wait_idle(qtbot, window)
    assert "now:" in window.comparison._headline()
    shown = window.accuracy_view.result
    window.accuracy_view.result = dataclasses.replace(shown, mechanism="an earlier mechanism")
    assert "now:" not in window.comparison._headline()
    window.accuracy_view.result = dataclasses.replace(shown, params={**shown.params, "epsilon": 0.5})
    assert "now:" not in window.comparison._headline()
