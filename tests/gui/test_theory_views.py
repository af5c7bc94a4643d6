"""The sensitivity side-by-side and random-walk views: their jobs (what the views are given to
draw) and the views drawing them."""

from __future__ import annotations

import numpy as np
import pytest

from dpexplorer.core.mechanisms.registry import get
from dpexplorer.data import queries as q
from dpexplorer.data.answers import query_input
from dpexplorer.data.load import load_dataset
from dpexplorer.gui.lesson_files import LESSONS_DIR
from dpexplorer.gui.views import random_walk, sensitivity


@pytest.fixture(scope="module")
def classroom():
    return load_dataset(LESSONS_DIR / "classroom.csv")


def _median(dataset, relation="add_remove"):
    return query_input(dataset, q.Median("score", 0, 100), relation)


def test_beta_comes_from_the_mechanism_or_from_epsilon(classroom):
    query = _median(classroom)
    cauchy = get("smooth_cauchy")
    result = sensitivity.job(cauchy, cauchy.validate({"epsilon": 1.0}), query)
    assert result.profile.beta == pytest.approx(0.25)  # t = ε / (2 (d + 1)), d = 1
    laplace = get("laplace")
    result = sensitivity.job(laplace, laplace.validate({"epsilon": 0.4}), query)
    assert result.profile.beta == pytest.approx(0.1) and "ε/4" in result.beta_source


def test_ptr_bound_is_crossed_where_the_curve_first_exceeds_it(classroom):
    ptr = get("ptr")
    for bound in (5.0, 20.0, 60.0):
        params = ptr.validate({"epsilon": 0.5, "delta": 1e-6, "bound": bound})
        result = sensitivity.job(ptr, params, _median(classroom), 0)
        p = result.profile
        assert np.array_equal(p.distances, np.arange(len(p.distances))), "every k on 40 rows"
        first = int(np.flatnonzero(p.local_at_distance > bound)[0])
        assert result.bound == bound and result.distance_to_bound == first
        assert f"k = {first}" in sensitivity.summary_html(result)


def test_a_count_has_no_curve_and_says_why(classroom):
    laplace = get("laplace")
    result = sensitivity.job(laplace, laplace.validate({}), query_input(classroom, q.Count(), "add_remove"))
    assert result.profile is None and result.global_l1 == 1.0
    assert "count" in result.note and "median" in result.note


def test_an_underflowing_smooth_sensitivity_is_said_so():
    values = np.sort(np.r_[np.zeros(3000), np.full(3001, 50.0), np.full(3000, 100.0)])
    from dpexplorer.core.sensitivity_profile import sensitivity_profile

    profile = sensitivity_profile(values, 0, 100, "median", "replace", 1.0)
    assert profile.smooth_sensitivity == 0.0 and profile.local_at_distance.max() > 0
    result = sensitivity.SensitivityResult("median", profile, 100.0, "β = 1")
    assert "underflows to 0" in sensitivity.summary_html(result)


def test_sensitivity_view_draws_the_profile(qtbot, classroom):
    view = sensitivity.SensitivityView()
    qtbot.addWidget(view)
    view.show()
    cauchy = get("smooth_cauchy")
    view.deliver(sensitivity.job(cauchy, cauchy.validate({}), _median(classroom)))
    assert view.columns["k"][0] == 0 and len(view.columns["A(k)"]) == len(view.columns["k"])
    assert view.zoom.isVisible() and "Distance to instability" in view.summary.toPlainText()


@pytest.mark.parametrize("private", [False, True])
def test_a_quantile_by_group_says_what_its_release_draws(qtbot, private):
    """A median by group with a privacy unit (2 groups, 3 rows per person): the view says each
    group is drawn at ε / 2 with the score's sensitivity 0.5 x 3, not the range's 500 (the
    mechanism's words), and, by private keys, how the groups are kept (before: only
    "Global sensitivity Δ = 1000", and "choose a median or quantile")."""
    from pathlib import Path

    visits = load_dataset(Path(__file__).parents[1] / "fixtures" / "visits.csv")
    keys = (
        {"keys": [], "private": q.PrivateKeys(("department",), 0.5, 1e-6)}
        if private
        else {"keys": (q.Axis("department", categories=("GP", "Cardiology")),)}
    )
    query = q.GroupBy(
        statistic="quantile",
        column="cost",
        lower=0,
        upper=500,
        unit=q.PrivacyUnit("patient_id", 2, 3),
        **keys,
    )
    built = query_input(visits, query, "add_remove", bounding_seed=1)
    mech = get("dp_quantile")
    result = sensitivity.job(mech, mech.validate({"epsilon": 1.0, "bins": 100}), built)
    assert (
        result.headline
        == "By group: score sensitivity Δu = 1.5 in each group, each group drawn at ε / 2 = 0.5"
    )
    assert "0.5 × 3 row(s) = 1.5" in result.note and "101 grid points of [0, 500]" in result.note
    assert ("keys selected privately" in result.note) is private and "median or quantile" not in result.note
    assert ("the declared k = 2, not the number of groups" in result.note) is private
    view = sensitivity.SensitivityView()
    qtbot.addWidget(view)
    view.show()
    view.deliver(result)
    shown = view.summary.toPlainText()
    assert shown.startswith("By group: score sensitivity") and not view.plot.isVisible()


def test_random_walk_view_settings_and_drawing(qtbot):
    view = random_walk.RandomWalkView()
    qtbot.addWidget(view)
    view.show()
    with qtbot.waitSignal(view.settings_changed) as signal:
        view.set_settings({"epsilon": 0.2, "t": 50, "paths": 100})
    assert signal.args[0]["epsilon"] == 0.2 and signal.args[0]["law"] == "randomized_response"
    walk = random_walk.job(view.settings(), seed=1)
    view.deliver(walk)
    assert view.columns["t"][-1] == 50 and view.columns["advanced epsilon"][-1] == pytest.approx(
        walk.advanced[-1]
    )
    assert "basic composition ε = 10" in view.summary.toPlainText()


def test_error_against_k_view_draws_both_mechanisms_and_refuses_a_count(qtbot, classroom):
    from dpexplorer.core.mechanisms.base import WorkloadInput
    from dpexplorer.gui.views import error_against_k

    pmw = get("pmw")
    params = pmw.validate({"epsilon": 1.0, "threshold": 0.05, "updates": 10})
    count = query_input(classroom, q.Count(), "add_remove")
    assert error_against_k.job(pmw, params, count, 1) == error_against_k.NOT_A_WORKLOAD
    hist = np.array([900.0, 300.0, 50.0, 700.0, 40.0, 10.0])
    workload = WorkloadInput(
        tuple("abcdef"), ("q1", "q2"), hist, hist, np.eye(2, 6, dtype=np.int64), int(hist.sum())
    )
    result = error_against_k.job(pmw, params, workload, 3)
    view = error_against_k.ErrorAgainstKView()
    qtbot.addWidget(view)
    view.show()
    view.current_k = 2
    view.deliver(result)
    assert view.columns["k"] == [float(k) for k in result.ks] and view.error.isHidden()
    assert view.columns["PMW bound (probability 0.95)"] == list(result.pmw_bound)
    text = view.summary.toPlainText()
    assert "k = 2" in text and f"m = {result.m} synthetic rows" in text
    view.deliver(error_against_k.NOT_A_WORKLOAD)  # another query: said, not an error
    assert view.columns == {} and view.error.isHidden() and "Workload" in view.summary.toPlainText()
    assert view.plot.isHidden() and view.bottom_plot.isHidden()
    view.show_error("cancelled")
    assert view.columns == {} and not view.error.isHidden()
