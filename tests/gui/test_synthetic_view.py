"""The marginal-error view of MST and AIM (issue 30): the job's errors are the true against the
synthetic 2-way marginals, the view draws them and says it reads the true data, a query that is
not a marginals query is refused with a message, and a run can be cancelled."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpexplorer.core.cancel import CancelToken
from dpexplorer.core.errors import CancelledError, NotApplicableError
from dpexplorer.core.marginals import MarginalInput, candidate_cliques, record_marginal, tvd
from dpexplorer.core.mechanisms.base import NumericInput
from dpexplorer.core.mechanisms.registry import get
from dpexplorer.gui.views import synthetic
from dpexplorer.gui.workspace import SPECIFIC_VIEWS

SIZES = (3, 4, 2)


def _query(n: int = 3000) -> MarginalInput:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 4
    c = rng.integers(0, 2, n)
    records = np.stack([a, b, c], axis=1)
    workload = tuple(itertools.combinations(range(3), 2))
    marginals = {
        cl: record_marginal(records, SIZES, cl).astype(np.int64) for cl in candidate_cliques(3, workload)
    }
    labels = tuple(tuple(str(k) for k in range(s)) for s in SIZES)
    return MarginalInput(("a", "b", "c"), labels, workload, marginals, n)


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
        synthetic.job(aim, aim.validate({"estimator": "dense"}), _query(), seed=0, cancel=token)


def test_the_window_routes_mst_and_aim_to_this_view() -> None:
    served = {name for module, _, _ in SPECIFIC_VIEWS for name in module.MECHANISMS}
    assert {"mst", "aim"} <= served
