"""Issue 9 in the window: plan statistics against the budget, the risk view follows, the
mechanism-specific tab follows the mechanism, BLR can be cancelled."""

from __future__ import annotations

import pytest
from conftest import wait_idle

from dpexplorer.core import planning
from dpexplorer.core.accounting.compose import compose
from dpexplorer.gui.views.budget_jobs import release_charge


def _plan_three(qtbot, window) -> None:
    panel, mech = window.query_panel, window.mechanism_panel
    window.workspace.budget_view.add_requested.emit()  # the default count, Laplace ε = 1
    panel.select_kind("mean", "age")
    wait_idle(qtbot, window)
    mech.select("gaussian")
    wait_idle(qtbot, window)
    window.workspace.budget_view.add_requested.emit()
    panel.select_kind("argmax", "occupation")
    wait_idle(qtbot, window)
    mech.select("exponential")
    mech.set_values({"epsilon": 0.5})
    wait_idle(qtbot, window)
    window.workspace.budget_view.add_requested.emit()
    wait_idle(qtbot, window)


def test_three_planned_statistics_total_what_the_accountant_says(qtbot, window):
    view = window.workspace.budget_view
    window.tabs.setCurrentWidget(view)
    _plan_three(qtbot, window)
    assert len(view.plan) == 3
    qtbot.waitUntil(lambda: view.result is not None and len(view.result.plan) == 3, timeout=30_000)
    report = view.result.report
    delta = view.result.request.budget_delta
    # each accountant totals what the releases would be charged under it (issue 19)
    by_method = planning.guarantees_by_method(view.result.plan, release_charge)
    results = [compose(g, delta=delta, methods=[m]).results[0] for m, g in by_method.items()]
    for method_result in results:
        shown = report.get(method_result.method)
        if method_result.epsilon is None:
            assert shown.total is None
        else:
            assert shown.total == pytest.approx(method_result.epsilon, rel=1e-9)
    view.remove_measurement(0)
    qtbot.waitUntil(lambda: len(view.result.plan) == 2, timeout=30_000)


def test_risk_view_follows_the_current_mechanism(qtbot, window):
    risk = window.workspace.risk_view
    window.tabs.setCurrentWidget(risk)
    qtbot.waitUntil(lambda: risk.result is not None, timeout=30_000)
    window.mechanism_panel.set_values({"epsilon": 0.25})
    wait_idle(qtbot, window)
    assert risk.result.request.current.params["epsilon"] == 0.25


def test_mechanism_specific_tab_follows_the_mechanism(qtbot, window):
    tabs = window.tabs
    titles = lambda: [tabs.tabText(i) for i in range(tabs.count())]  # noqa: E731
    assert "Selection" not in titles()
    window.query_panel.select_kind("argmax", "occupation")
    wait_idle(qtbot, window)
    window.mechanism_panel.select("exponential")
    wait_idle(qtbot, window)
    assert "Selection" in titles()
    view = window.workspace.shown_specific
    window.tabs.setCurrentWidget(view)
    wait_idle(qtbot, window)
    assert view.result is not None
    expected = window.explorer.mechanism.output_distribution(
        window.explorer.mechanism.validate(window.explorer.params), window.explorer.query_input
    )
    assert list(view.result.pmf_d) == pytest.approx(list(expected.pmf_d))
    window.query_panel.select_kind("count")
    wait_idle(qtbot, window)
    assert "Selection" not in titles()


def test_blr_cancelled_mid_run_leaves_the_window_usable(qtbot, window):
    panel = window.query_panel
    panel.select_kind("workload", "sex")
    panel.columns2.setCurrentText("race")  # 3 x 7 cells
    wait_idle(qtbot, window)
    window.mechanism_panel.select("blr")
    window.mechanism_panel.set_values({"m": 12})  # C(32, 12) = 2.3e8 candidates: a long run
    wait_idle(qtbot, window)
    blr_view = window.workspace.blr_view
    window.tabs.setCurrentWidget(blr_view)
    wait_idle(qtbot, window)
    assert blr_view.run_button.isEnabled()
    blr_view.run_button.click()
    qtbot.waitUntil(lambda: blr_view.progress.value() > 0, timeout=20_000)
    blr_view.cancel_button.click()
    qtbot.waitUntil(lambda: not window.compute.busy, timeout=60_000)
    assert blr_view.run_button.isEnabled() and blr_view.run is None
    window.last_error = None  # the exact BLR views refuse m this large: said in the status bar
    panel.select_kind("count")
    window.tabs.setCurrentWidget(window.neighbours_view)  # computed when shown (it showed the
    wait_idle(qtbot, window)  # BLR refusal before, not a stale result)
    assert window.neighbours_view.result is not None and window.last_error is None


def test_hidden_views_draw_when_shown_with_the_latest_result(qtbot, window):
    accuracy = window.accuracy_view
    assert not accuracy.isVisible()
    before = accuracy.result
    window.mechanism_panel.set_values({"epsilon": 0.31})
    wait_idle(qtbot, window)
    assert accuracy.result is before, "a hidden view was drawn"
    window.tabs.setCurrentWidget(accuracy)  # computed now that it is shown
    wait_idle(qtbot, window)
    assert accuracy.result.params["epsilon"] == 0.31
    assert window.neighbours_view.result.params["epsilon"] == 0.31
