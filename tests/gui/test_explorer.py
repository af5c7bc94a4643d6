"""Drive the explorer as a user would: every query kind, every mechanism that applies, every
slider; the views must show exactly what the core computes for the final values."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from conftest import wait_idle

from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms.base import CategoricalOutput, NumericOutput, PureEpsilonMechanism
from dpexplorer.gui.param_controls import NumberControl
from dpexplorer.gui.query_panel import QUERY_KINDS
from dpexplorer.gui.views.outcomes import ShownOutcomes


def _bars_show(window, p, q) -> None:
    """The bars named M(D) and M(D') on screen have the core's heights."""
    bars = {
        item.name(): item
        for item in window.neighbours_view.outputs.items
        if isinstance(item, pg.BarGraphItem) and item.name()
    }
    np.testing.assert_allclose(bars["M(D)"].opts["height"], p)
    np.testing.assert_allclose(bars["M(D')"].opts["height"], q)


def _plotted_output_matches_core(window) -> None:
    explorer = window.explorer
    result = window.neighbours_view.result
    mechanism, query = explorer.mechanism, explorer.query_input
    params = mechanism.validate(explorer.params)
    assert result.params == params, "the plot shows other parameters than the controls"
    expected = mechanism.output_distribution(params, query)
    if isinstance(expected, NumericOutput):
        np.testing.assert_allclose(result.output.density_d, expected.density_d)
        np.testing.assert_allclose(result.output.density_d_prime, expected.density_d_prime)
        if not expected.discrete:
            curves = window.neighbours_view.outputs.listDataItems()
            name = "M(D), simulated" if expected.monte_carlo_runs else "M(D)"
            shown = next(c for c in curves if c.name() == name)
            np.testing.assert_allclose(shown.yData, expected.density_d, rtol=1e-9)
        else:
            _bars_show(window, expected.density_d, expected.density_d_prime)
    else:
        assert isinstance(expected, CategoricalOutput)
        np.testing.assert_allclose(result.output.pmf_d, expected.pmf_d)
        shown = ShownOutcomes.of(expected.pmf_d, expected.pmf_d_prime, expected.labels)
        _bars_show(window, shown.collect(expected.pmf_d), shown.collect(expected.pmf_d_prime))
    epsilon, _ = mechanism.epsilon_delta(params, query)
    if result.delta_source == "proved":  # pure epsilon-DP at the claimed epsilon: 0 by theorem
        assert isinstance(mechanism, PureEpsilonMechanism) and result.delta_exact == 0.0
        assert epsilon >= params["epsilon"]
    elif result.delta_exact is None:
        with pytest.raises(NotApplicableError):
            mechanism.delta_at(params, query, epsilon)
    else:
        assert result.delta_exact == pytest.approx(
            mechanism.delta_at(params, query, epsilon), rel=1e-9, abs=1e-15
        )


SLIDER_SHARE = {"rounds": 0.01}
"""Where each slider is moved, as a share of its span (default 0.1). MWEM's views grow with its
rounds: 10% of 1..1000 is 100 rounds, 23 s of the workload case on a loaded 2-core machine
(issue 20); 1% is 11, still a change from the default 10."""


def _move_every_slider(qtbot, window) -> None:
    for name, control in window.mechanism_panel.params.controls.items():
        if name == "k":  # 10% of k's 1..100 is 11, more than the query's 8 candidates (refused)
            continue
        if isinstance(control, NumberControl):
            control.slider.setValue(int(control.slider.maximum() * SLIDER_SHARE.get(name, 0.1)))
    wait_idle(qtbot, window)


@pytest.mark.parametrize("kind", list(QUERY_KINDS))
def test_every_mechanism_on_every_query_kind(qtbot, window, kind):
    panel = window.query_panel
    panel.select_kind(kind)
    if kind == "workload":
        panel.column.setCurrentText("sex")
    wait_idle(qtbot, window)
    picker = window.mechanism_panel.picker
    assert picker.count() > 0, f"no mechanism applies to {kind}"
    for index in range(picker.count()):
        name = window.mechanism_panel.mechanisms[index].name
        if name == "blr":
            continue  # its exact sampler is exercised in test_mechanism_views / the core tests
        if name in ("mst", "aim"):  # no output law: the neighbours view says so in the status bar;
            continue  # their view and the panel are tested in test_synthetic_view, test_query_marginals
        picker.setCurrentIndex(index)
        wait_idle(qtbot, window)
        _move_every_slider(qtbot, window)
        assert window.last_error is None, f"{kind} / {name}: {window.last_error}"
        _plotted_output_matches_core(window)


def test_rapid_slider_moves_end_on_the_last_value_without_stale_plots(qtbot, window):
    control = window.mechanism_panel.params.controls["epsilon"]
    shown: list[float] = []
    window.explorer.views_updated.connect(
        lambda view: (
            shown.append(window.neighbours_view.result.params["epsilon"]) if view == "neighbours" else None
        )
    )
    positions = np.linspace(100, 900, 200).astype(int)
    for position in positions:
        control.slider.setValue(int(position))
        qtbot.wait(1) if position % 7 == 0 else None
    wait_idle(qtbot, window)
    values = [control.value_at(int(p)) for p in positions]
    assert shown[-1] == values[-1] and window.neighbours_view.result.params["epsilon"] == values[-1]
    order = [values.index(v) for v in shown]
    assert order == sorted(order), "an older result was drawn after a newer one"
    assert len(shown) < 200, "the slider was not throttled"


def test_draw_overlays_simulated_outputs(qtbot, window):
    view = window.neighbours_view

    def legend() -> list[str]:
        return [label.text for _, label in view.outputs.legend.items]

    assert "draws on D" not in legend()  # listed from the first draws until "Clear draws"
    view.draw_button.click()
    wait_idle(qtbot, window)
    draws = view.draws
    assert draws is not None and draws.draws_d.size == draws.size
    overlay = {c.name(): c for c in view.outputs.listDataItems()}["draws on D"]
    edges, heights = overlay.getOriginalDataset()
    finite = draws.draws_d[np.isfinite(draws.draws_d)]
    counts, _ = np.histogram(finite, bins=edges)
    np.testing.assert_allclose(heights, counts / (draws.size * np.diff(edges)))
    assert {"draws on D", "draws on D'"} <= set(legend()) and view.overlays_draws()
    view.clear_draws_button.click()
    assert "draws on D" not in legend()


def test_a_long_job_can_be_cancelled(qtbot, window):
    import time

    from dpexplorer.core.cancel import checkpoint

    def long_job(cancel, progress):
        for i in range(2000):
            time.sleep(0.005)
            checkpoint(cancel, progress, i / 2000)
        return "done"

    window.compute.submit("long", long_job)
    qtbot.waitUntil(lambda: window.cancel_button.isVisible(), timeout=30_000)
    window.cancel_button.click()
    qtbot.waitUntil(lambda: not window.compute.busy, timeout=60_000)
    assert "long" not in window.compute.pending_views()


def test_progress_and_cancel_appear_only_for_work_that_lasts(qtbot, window):
    """A job that ends within a few frames (every slider step) leaves the status bar alone; one
    that runs on shows Progress and Cancel after BUSY_INDICATOR_DELAY_MS."""
    import threading
    import time

    from PySide6.QtCore import QTimer

    from dpexplorer.gui.main_window import BUSY_INDICATOR_DELAY_MS

    seen = []
    probe = QTimer()
    probe.timeout.connect(lambda: seen.append(window.cancel_button.isVisible()))
    probe.start(5)
    window.compute.submit("short", lambda: time.sleep(BUSY_INDICATOR_DELAY_MS / 1000 / 4))
    qtbot.waitUntil(lambda: not window.compute.busy, timeout=60_000)
    assert not window._show_busy.isActive()  # the indicator's timer cannot fire afterwards
    assert seen and not any(seen)
    # the slow job runs until the indicator has shown (however late a loaded machine shows it)
    shown = threading.Event()
    window.compute.submit("slow", lambda: shown.wait(60))
    qtbot.waitUntil(lambda: window.cancel_button.isVisible(), timeout=60_000)
    shown.set()
    qtbot.waitUntil(lambda: not window.compute.busy, timeout=60_000)
    assert not window.cancel_button.isVisible() and not window.progress.isVisible()
    probe.stop()
