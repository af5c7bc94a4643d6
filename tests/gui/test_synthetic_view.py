"""The synthetic-data view of MST and AIM (issue 30): the job's errors are the true against the
synthetic 2-way marginals, the view draws them and says it reads the true data, a query that is
not a marginals query is refused with a message, and a run can be cancelled; the rounds page
lists what the run's record measured, the picker shows the true and synthetic shares and says
it reads the true data; the curve against epsilon runs from the window's workspace with progress
and Cancel."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QTabWidget

from dpexplorer.core.cancel import CancelToken
from dpexplorer.core.errors import CancelledError, NotApplicableError
from dpexplorer.core.marginals import tvd
from dpexplorer.core.mechanisms.base import NumericInput
from dpexplorer.core.mechanisms.registry import get
from dpexplorer.core.mechanisms.runs import Job
from dpexplorer.core.synthetic_error import DEFAULT_EPSILONS
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.views import synthetic
from dpexplorer.gui.workspace import SPECIFIC_VIEWS, SYNTHETIC_RUN_JOB, Workspace
from tests.core.test_synthetic_error import correlated_query as _query


@pytest.mark.parametrize("name", ["mst", "aim"])
def test_the_view_shows_each_pair_against_the_independent_baseline(qtbot, name: str) -> None:
    mechanism = get(name)
    params = mechanism.validate({"epsilon": 2.0, "estimator": "dense", "iterations": 200})
    query = _query()
    result = synthetic.job(mechanism, params, query, seed=4)
    assert result.labels == ("a × b", "a × c", "b × c")
    # the baseline is the product of the true one-way marginals; a and b depend on each other
    product = np.outer(query.counts((0,)), query.counts((1,))).ravel() / query.n
    assert result.independent[0] == pytest.approx(tvd(query.counts((0, 1)), product))
    assert result.synthetic[0] < result.independent[0]
    view = synthetic.MarginalErrorView()
    qtbot.addWidget(view)
    view.show_result(result)
    assert view.columns["synthetic_tvd"] == list(result.synthetic)
    assert "TRUE data" in view.explanation.text() and "independent" in view.summary.text()


def test_a_query_that_is_not_marginals_is_refused_and_shown(qtbot) -> None:
    mst = get("mst")
    count = NumericInput(np.array([10.0]), np.array([11.0]), 1.0, 1.0, 10, "count")
    with pytest.raises(NotApplicableError, match="marginals query"):
        synthetic.job(mst, mst.validate({}), count, seed=0)
    view = synthetic.MarginalErrorView()
    qtbot.addWidget(view)
    view.show_error("MST needs a marginals query")
    assert view.columns == {} and not view.error.isHidden()


def test_a_cancelled_run_stops() -> None:
    token = CancelToken()
    token.cancel()
    aim = get("aim")
    with pytest.raises(CancelledError):
        synthetic.job(aim, aim.validate({"estimator": "dense"}), _query(), seed=0, job=Job(token))


def test_the_window_routes_mst_and_aim_to_this_view() -> None:
    served = {name for module, _, _ in SPECIFIC_VIEWS for name in module.MECHANISMS}
    assert {"mst", "aim"} <= served


def test_the_rounds_and_the_picker_show_the_runs_record_and_the_true_data(qtbot) -> None:
    aim = get("aim")
    params = aim.validate({"epsilon": 1.0, "estimator": "dense", "iterations": 100})
    query = _query()
    result = synthetic.job(aim, params, query, seed=2)
    assert len(result.rounds) >= 2
    assert result.one_way_rho + sum(r.rho for r in result.rounds) <= result.rho * (1 + 1e-9)
    view = synthetic.MarginalErrorView()
    qtbot.addWidget(view)
    view.show_result(result)
    rounds = view.rounds_page
    assert rounds.table.rowCount() == len(result.rounds)
    assert rounds.table.item(0, 1).text() == result.rounds[0].marginal
    view.pages.setCurrentWidget(rounds)
    assert view.columns["rho"] == [r.rho for r in result.rounds]  # the CSV follows the page
    picker = view.picker_page
    assert picker.picker.count() == 3 + 3  # 1-way and 2-way (the workload is the 2-ways)
    picker.picker.setCurrentText("a × b")
    view.pages.setCurrentWidget(picker)
    true = query.counts((0, 1)) / query.n
    assert view.columns["true_share"] == pytest.approx(list(true))
    synthetic_share = np.asarray(view.columns["synthetic_share"])
    assert synthetic_share.sum() == pytest.approx(1.0)
    assert "TRUE data" in picker.warning.text()
    assert "total-variation distance" in picker.plot.getPlotItem().titleLabel.text


@pytest.fixture
def workspace(qtbot):
    compute = ComputeService()
    tabs = QTabWidget()
    qtbot.addWidget(tabs)
    space = Workspace(compute, tabs)
    yield space
    compute.shutdown()


def test_the_curve_runs_from_the_workspace_and_can_be_cancelled(qtbot, workspace) -> None:
    mst = get("mst")
    params = mst.validate({"epsilon": 1.0, "estimator": "dense", "iterations": 100})
    workspace.update(mst, params, _query(), 1)
    view = workspace.specific["mst"][1]
    workspace.tabs.show()
    workspace.tabs.setCurrentWidget(view)
    workspace.submit_visible()
    qtbot.waitUntil(lambda: view.result is not None, timeout=20_000)
    page = view.curve_page
    # the baselines cost nothing: drawn with the single run, before any Run
    assert set(page.curve.errors) == {"direct", "independent"} and page.run_button.isEnabled()
    page.run_button.click()
    assert page.cancel_button.isEnabled() and SYNTHETIC_RUN_JOB in workspace.compute.pending_views()
    page.cancel_button.click()  # cancelled at once: the job's result is dropped
    assert page.run_button.isEnabled() and "Cancelled" in page.status.text()
    qtbot.waitUntil(lambda: not workspace.compute.busy, timeout=20_000)
    assert "mst" not in page.curve.errors
    page.run_button.click()
    qtbot.waitUntil(lambda: "mst" in page.curve.errors, timeout=20_000)
    assert page.curve.epsilons == DEFAULT_EPSILONS
    view.pages.setCurrentWidget(page)
    assert set(view.columns) == {
        "epsilon", "rho", "mst_workload_tvd", "aim_workload_tvd", "direct_workload_tvd",
        "independent_workload_tvd",
    }  # fmt: skip
    assert len(page.plot.getPlotItem().listDataItems()) == 4
    for label in ("MST", "AIM", "each marginal with Gaussian noise", "independent columns"):
        assert label in page.summary.text()  # the key, above the plot
