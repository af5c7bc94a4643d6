"""The mechanism-specific views: each job's numbers are the mechanism's own (checked against an
independent computation where one is cheap), each view draws them, BLR runs and cancels through
the compute service, and the core's messages are shown as they are."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import pytest

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.mechanisms.registry import get
from dpexplorer.core.mechanisms.sparse_vector import HALTED, TOP
from dpexplorer.data import queries as q
from dpexplorer.data.answers import query_input
from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.load import load_dataset
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.views import blr, pmw, ptr, selection
from dpexplorer.gui.views.run_controls import PROGRESS_STEPS

OCCUPATIONS = ("Prof-specialty", "Craft-repair", "Exec-managerial", "Adm-clerical", "Sales")
SEX = q.Axis("sex", categories=("Male", "Female"))
INCOME = q.Axis("income", categories=(">50K", "<=50K"))
AGES = (20, 25, 30, 31, 33, 40, 41, 42, 50, 52, 55, 60, 61, 63, 70, 72, 75, 80, 81, 85, 90)
TIED_AGES = (20, 25, 30, 33, 40, 41, 42, *(50,) * 7, 60, 61, 63, 70, 75, 80, 90)


# ---------------------------------------------------------------- inputs (real, from the data layer)
@pytest.fixture(scope="module")
def adult():
    return load_dataset(default_dataset_path())


@pytest.fixture(scope="module")
def occupation(adult):
    return query_input(adult, q.ArgMax("occupation", OCCUPATIONS))


@pytest.fixture(scope="module")
def marginals(adult):
    """15 counting queries (1- and 2-way marginals) over 9 cells."""
    return query_input(adult, q.marginal_workload([SEX, INCOME]))


@pytest.fixture(scope="module")
def tiny_universe(adult):
    """3 counting queries over the 3 cells of "sex"."""
    return query_input(adult, q.marginal_workload([SEX], ways=(1,)))


def _median_of(ages, directory):
    path = directory / "ages.csv"
    path.write_text("age\n" + "\n".join(map(str, ages)) + "\n")
    return query_input(load_dataset(path), q.Median("age", 0, 100))


@pytest.fixture(scope="module")
def small_median(tmp_path_factory):
    """The median of 21 spread-out ages: its local sensitivity is large a few rows away."""
    return _median_of(AGES, tmp_path_factory.mktemp("spread"))


@pytest.fixture(scope="module")
def tied_median(tmp_path_factory):
    """21 ages, 7 of them at the median: a few rows from instability."""
    return _median_of(TIED_AGES, tmp_path_factory.mktemp("tied"))


@pytest.fixture
def service(qtbot):
    svc = ComputeService()
    yield svc
    svc.shutdown()
    svc.wait_for_workers(30.0)


def _shown(view, qtbot, path):
    qtbot.addWidget(view)
    view.resize(1200, 800)
    view.show()
    view.save(path.with_suffix(".png"))
    view.save(path.with_suffix(".csv"))
    assert path.with_suffix(".png").stat().st_size > 10_000
    return view


def _bar_widths(plot) -> list[np.ndarray]:
    """The lengths of the horizontal bars drawn in ``plot``, one array per bar item."""
    return [
        np.asarray(item.opts["width"], dtype=float)
        for item in plot.getPlotItem().items
        if isinstance(item, pg.BarGraphItem)
    ]


def test_every_served_mechanism_is_registered():
    for module in (selection, ptr, pmw, blr):
        for name in module.MECHANISMS:
            assert get(name).name == name


# ---------------------------------------------------------------- selection
@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("exponential", {"epsilon": 0.05}),
        ("exponential", {"epsilon": 0.05, "use_monotone": False}),
        ("noisy_max", {"epsilon": 0.05, "noise": "exponential"}),
        ("topk", {"epsilon": 0.3, "k": 2}),
    ],
)
def test_selection_view_draws_the_mechanisms_exact_probabilities(qtbot, tmp_path, occupation, name, params):
    mechanism = get(name)
    params = mechanism.validate(params)
    result = selection.job(mechanism, params, occupation, seed=0)
    out = mechanism.output_distribution(params, occupation)
    np.testing.assert_array_equal(result.pmf_d, out.pmf_d)
    np.testing.assert_array_equal(result.pmf_d_prime, out.pmf_d_prime)
    np.testing.assert_array_equal(result.scores_d, occupation.scores_d)
    assert result.max_loss <= params["epsilon"] * (1 + 1e-9)

    view = _shown(selection.SelectionView(), qtbot, tmp_path / name)
    view.show_result(result)
    scores_d, scores_dp = _bar_widths(view.scores)
    np.testing.assert_array_equal(scores_d, occupation.scores_d)
    np.testing.assert_array_equal(scores_dp, occupation.scores_d_prime)
    drawn_d, drawn_dp = _bar_widths(view.probabilities)
    np.testing.assert_array_equal(drawn_d, out.pmf_d[result.shown])
    np.testing.assert_array_equal(drawn_dp, out.pmf_d_prime[result.shown])
    assert view.columns["P_D"] == list(out.pmf_d)


def test_exponential_probabilities_match_an_independent_softmax(occupation):
    """Monotone counts: P(r) proportional to exp(eps u_r / Delta_u) (Dwork & Roth 2014, 3.10)."""
    mechanism = get("exponential")
    result = selection.job(mechanism, mechanism.validate({"epsilon": 0.05}), occupation)
    weights = np.exp(0.05 * (occupation.scores_d - occupation.scores_d.max()))
    np.testing.assert_allclose(result.pmf_d, weights / weights.sum(), rtol=1e-12)


def test_topk_draws_the_likeliest_lists_and_accounts_for_the_rest(qtbot, occupation):
    mechanism = get("topk")
    result = selection.job(mechanism, mechanism.validate({"epsilon": 0.3, "k": 3}), occupation)
    assert len(result.outcomes) == math.perm(5, 3) > len(result.shown) == selection.MAX_OUTCOMES_SHOWN
    hidden = np.delete(result.pmf_d, result.shown)
    assert result.pmf_d[result.shown].min() >= hidden.max()
    view = selection.SelectionView()
    qtbot.addWidget(view)
    view.show_result(result)
    assert f"{len(hidden)} other lists" in view.summary.text()


def test_selection_view_shows_the_cores_message_as_it_is(qtbot, occupation):
    mechanism = get("topk")
    params = mechanism.validate({"epsilon": 1.0, "k": 5})
    many = occupation.__class__(
        candidates=tuple(f"c{i}" for i in range(40)),
        scores_d=np.arange(40.0),
        scores_d_prime=np.arange(40.0),
        sensitivity=1.0,
        monotone=True,
        n=100,
    )
    with pytest.raises(DPExplorerError) as error:
        selection.job(mechanism, params, many)
    view = selection.SelectionView()
    qtbot.addWidget(view)
    view.show_error(str(error.value))
    assert view.error.text() == str(error.value) and not view.error.isHidden()
    assert view.columns == {}


# ---------------------------------------------------------------- PTR and Dist2Instability
def _laplace_bottom(distance: float, epsilon: float, delta: float) -> float:
    """P(distance + Lap(1/eps) <= ln(1/delta)/eps) by the Laplace CDF written out."""
    x = math.log(1 / delta) / epsilon - distance
    return 1 - 0.5 * math.exp(-epsilon * x) if x >= 0 else 0.5 * math.exp(epsilon * x)


@pytest.mark.parametrize(
    ("name", "params", "fixture"),
    [
        ("ptr", {"epsilon": 1.0, "delta": 1e-3, "bound": 20.0}, "small_median"),
        ("dist2instability", {"epsilon": 1.0, "delta": 1e-3}, "tied_median"),
        ("dist2instability_mode", {"epsilon": 0.2, "delta": 1e-6}, "occupation"),
    ],
)
def test_ptr_view_chance_of_bottom_is_the_point_mass(qtbot, tmp_path, request, name, params, fixture):
    query = request.getfixturevalue(fixture)
    mechanism = get(name)
    params = mechanism.validate(params)
    result = ptr.job(mechanism, params, query, seed=0)
    out = mechanism.output_distribution(params, query)
    if hasattr(out, "point_masses"):
        (bottom,) = [m for m in out.point_masses if m.label == "⊥"]
        mass_d, mass_dp = bottom.mass_d, bottom.mass_d_prime
    else:  # categorical: "⊥" is the last outcome
        assert out.labels[-1] == "⊥"
        mass_d, mass_dp = out.pmf_d[-1], out.pmf_d_prime[-1]
    assert (result.bottom_d, result.bottom_d_prime) == (mass_d, mass_dp)
    assert 0.01 < result.bottom_d < 0.99 or 0.01 < result.bottom_d_prime < 0.99
    eps, delta = params["epsilon"], params["delta"]
    assert result.bottom_d == pytest.approx(_laplace_bottom(result.distance_d, eps, delta), rel=1e-12)
    assert result.threshold == pytest.approx(math.log(1 / delta) / eps)
    assert np.all(np.diff(result.curve_bottom) <= 1e-15)  # farther from trouble, fewer "⊥"

    view = _shown(ptr.PTRView(), qtbot, tmp_path / name)
    view.show_result(result)
    drawn_d, drawn_dp = _bar_widths(view.chances)
    assert drawn_d[0] == result.bottom_d and drawn_dp[0] == result.bottom_d_prime
    assert view.columns["P_bottom"] == [result.bottom_d, result.bottom_d_prime]


def test_ptr_distances_are_the_mechanisms(small_median):
    mechanism = get("ptr")
    params = mechanism.validate({"epsilon": 1.0, "delta": 1e-3, "bound": 20.0})
    result = ptr.job(mechanism, params, small_median)
    assert (result.distance_d, result.distance_d_prime) == (
        mechanism.distance(params, small_median, "D"),
        mechanism.distance(params, small_median, "D'"),
    )
    assert result.claim_epsilon == 2.0  # PTR spends epsilon twice


# ---------------------------------------------------------------- PMW and sparse vector
def test_pmw_view_shows_the_transcript_of_the_seeded_run(qtbot, tmp_path, marginals):
    mechanism = get("pmw")
    params = mechanism.validate({"epsilon": 1.0, "threshold": 0.02, "updates": 5})
    result = pmw.job(mechanism, params, marginals, seed=7)
    transcript = mechanism.run(params, marginals, np.random.default_rng(7))
    np.testing.assert_array_equal(result.values, transcript.errors)
    assert result.kinds == transcript.kinds
    np.testing.assert_array_equal(result.used, transcript.updates_used)
    np.testing.assert_allclose(
        result.values[~np.isnan(result.values)],
        np.abs(transcript.answers - transcript.true_answers)[~np.isnan(result.values)],
    )
    # "⊥" exactly once L updates are spent, and from then on
    first = result.kinds.index("⊥")
    assert set(result.kinds[first:]) == {"⊥"} and result.used[first] == 5 == result.count("update")

    view = _shown(pmw.TranscriptView(), qtbot, tmp_path / "pmw")
    view.show_result(result)
    assert view.columns["kind"] == list(transcript.kinds)
    assert "update: 5 (of at most L = 5)" in view.summary.text()


def test_sparse_vector_shares_the_transcript_view(qtbot, marginals):
    mechanism = get("sparse_vector")
    params = mechanism.validate({"epsilon": 1.0, "threshold": 0.3, "c": 2})
    result = pmw.job(mechanism, params, marginals, seed=3)
    transcript = mechanism.run(params, marginals, np.random.default_rng(3))
    assert result.kinds == transcript.responses
    np.testing.assert_array_equal(result.values, transcript.true_answers)
    assert result.used[-1] == transcript.positives <= 2
    if transcript.positives == 2:  # halted after c "⊤"
        last = max(i for i, k in enumerate(result.kinds) if k == TOP)
        assert set(result.kinds[last + 1 :]) <= {HALTED}
    view = pmw.TranscriptView()
    qtbot.addWidget(view)
    view.show_result(result)
    assert view.columns["true_answer"] == list(transcript.true_answers)


# ---------------------------------------------------------------- BLR
def _wire(service: ComputeService, view: blr.BLRView, mechanism, params, query, seed: int = 1) -> None:
    """What the lead's window does: Run submits run_job, Cancel cancels it, progress and results
    come back to the view."""
    view.run_requested.connect(lambda: service.submit("blr_run", blr.run_job, mechanism, params, query, seed))
    view.cancel_requested.connect(lambda: service.cancel("blr_run"))
    service.progress.connect(lambda name, fraction: name == "blr_run" and view.set_progress(fraction))
    service.finished.connect(lambda name, gen, result: view.show_result(result))
    service.failed.connect(
        lambda name, gen, message: view.run_failed(message) if name == "blr_run" else view.show_error(message)
    )


def test_blr_runs_through_the_compute_service_and_shows_the_synthetic_data(
    qtbot, tmp_path, service, tiny_universe
):
    mechanism = get("blr")
    params = mechanism.validate({"epsilon": 1.0, "m": 6})
    view = _shown(blr.BLRView(), qtbot, tmp_path / "blr")
    _wire(service, view, mechanism, params, tiny_universe)
    service.submit("blr", blr.job, mechanism, params, tiny_universe, 1)
    qtbot.waitUntil(lambda: view.plan is not None, timeout=60_000)
    assert view.plan.candidates == math.comb(3 + 6 - 1, 6)  # multisets of 6 rows over 3 cells
    assert view.run_button.isEnabled() and not view.cancel_button.isEnabled()

    qtbot.mouseClick(view.run_button, pg.QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.run is not None, timeout=10_000)
    run = view.run.result
    assert run.synthetic_histogram.sum() == 6 and run.m == 6
    np.testing.assert_allclose(run.query_errors, np.abs(run.synthetic_answers - view.plan.true_answers))
    np.testing.assert_array_equal(view.columns["synthetic_share"], run.synthetic_histogram / 6)
    _, universe_synthetic = _bar_widths(view.universe)
    np.testing.assert_array_equal(universe_synthetic, run.synthetic_histogram / 6)
    assert view.run_button.isEnabled() and not view.cancel_button.isEnabled()
    assert f"{run.max_error:.4g}" in view.summary.text()
    view.save(tmp_path / "blr_run.png")


def test_blr_cancelled_mid_run_leaves_the_view_usable(qtbot, service, marginals):
    mechanism = get("blr")
    params = mechanism.validate({"epsilon": 1.0, "m": 30})  # 49 million candidates: ~10 s
    view = blr.BLRView()
    qtbot.addWidget(view)
    received: list[object] = []
    _wire(service, view, mechanism, params, marginals)
    service.finished.connect(lambda name, gen, result: received.append(name))
    view.show_result(blr.job(mechanism, params, marginals))
    view.run_button.click()
    assert view.running and view.cancel_button.isEnabled() and not view.run_button.isEnabled()
    qtbot.waitUntil(lambda: view.progress.value() > 0, timeout=10_000)
    assert view.progress.value() < PROGRESS_STEPS
    view.cancel_button.click()
    assert not service.busy
    service.shutdown()  # returns at once; the worker stops at its next checkpoint
    assert service.wait_for_workers(10.0)
    qtbot.wait(50)
    assert received == [] and view.run is None
    assert view.run_button.isEnabled() and not view.cancel_button.isEnabled()
    assert "blr_run" not in service.pending_views()
    assert "Cancelled" in view.status.text()


def test_blr_refusal_is_the_mechanisms_message_shown_as_it_is(qtbot, marginals):
    mechanism = get("blr")
    params = mechanism.validate({"epsilon": 1.0, "alpha": 0.05})
    plan = blr.job(mechanism, params, marginals)
    with pytest.raises(DPExplorerError) as error:
        mechanism.run(params, marginals, np.random.default_rng(0))
    assert plan.refusal == str(error.value) and "MWEM" in plan.refusal
    view = blr.BLRView()
    qtbot.addWidget(view)
    view.show_result(plan)
    assert view.error.text() == str(error.value) and not view.error.isHidden()
    assert not view.run_button.isEnabled()
    with pytest.raises(DPExplorerError, match="MWEM"):
        blr.run_job(mechanism, params, marginals, seed=0)


def test_blr_failures_are_shown_as_they_are_and_a_failed_run_ends(qtbot, tiny_universe):
    mechanism = get("blr")
    params = mechanism.validate({"epsilon": 1.0, "m": 4})
    view = blr.BLRView()
    qtbot.addWidget(view)
    view.show_result(blr.job(mechanism, params, tiny_universe))
    view.run_button.click()
    view.run_failed("the run failed: say why")
    assert view.error.text() == "the run failed: say why" and not view.running
    assert view.run_button.isEnabled()
    view.show_error("the workload does not fit the universe")
    assert view.plan is None and not view.run_button.isEnabled() and view.columns == {}


def test_blr_plan_survives_candidate_counts_beyond_floats(adult):
    """C(N + m - 1, m) can exceed the largest float: the plan still says so and refuses."""
    ages = q.Axis("age", edges=tuple(float(a) for a in range(17, 92)))
    query = query_input(adult, q.marginal_workload([ages, SEX], ways=(1,)))
    cells = len(query.cell_labels)
    mechanism = get("blr")
    params = mechanism.validate({"epsilon": 1.0, "m": 10_000})
    plan = blr.job(mechanism, params, query)
    assert plan.candidates == math.comb(cells + 10_000 - 1, 10_000) > 10**308
    assert plan.estimated_seconds == math.inf
    assert plan.refusal.startswith("BLR would have to score about 10^") and "MWEM" in plan.refusal
