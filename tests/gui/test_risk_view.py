"""The risk view: the numbers it shows are core.risk's, and the prior drives the sentence."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from render_audit import audit

from dpexplorer.core import risk, tradeoff
from dpexplorer.core.accounting.guarantees import GaussianNoise, LaplaceNoise
from dpexplorer.core.mechanisms.base import NumericInput
from dpexplorer.core.planning import PlannedMeasurement, best_total
from dpexplorer.gui.views.risk import ALPHAS, RELEASED_ALPHAS, RiskRequest, RiskView, risk_job


@pytest.fixture
def view(qtbot):  # type: ignore[no-untyped-def]
    widget = RiskView()
    qtbot.addWidget(widget)
    widget.resize(1200, 700)
    widget.job_requested.connect(lambda request: widget.show_result(risk_job(request)))
    return widget


def _item(epsilon: float) -> PlannedMeasurement:
    query = NumericInput(np.array([10.0]), np.array([11.0]), 1.0, 1.0, 100, "count")
    return PlannedMeasurement("count", "laplace", {"epsilon": epsilon}, query)


def test_numbers_are_core_risks(view: RiskView) -> None:
    plan = (LaplaceNoise(2.0), LaplaceNoise(4.0))
    view.set_current(_item(0.5))
    view.set_plan(plan, 1e-6)
    view.prior.setValue(10.0)
    result = view.result
    assert result is not None and result.current is not None and result.plan is not None
    assert result.current.posterior == risk.posterior_bound(0.5, 0.0, 0.1)
    np.testing.assert_array_equal(
        result.current.beta_pair, risk.tradeoff_curve_epsilon_delta(0.5, 0.0, ALPHAS)
    )
    _, epsilon = best_total(plan, 1e-6)
    assert result.plan.epsilon == epsilon
    assert result.plan.posterior == risk.posterior_bound(epsilon, 1e-6, 0.1)
    np.testing.assert_array_equal(result.plan.beta_profile, risk.tradeoff_curve_profile(plan, ALPHAS))
    expected = f"believe it with at most <b>{risk.posterior_bound(0.5, 0.0, 0.1):.0%}</b>"
    assert expected in view.sentence.text()
    assert "believed with 10%" in view.sentence.text()


def test_prior_changes_the_sentence(view: RiskView) -> None:
    view.set_current(_item(1.0))
    view.prior.setValue(50.0)
    bound = risk.posterior_bound(1.0, 0.0, 0.5)  # e / (1 + e) = 73%
    assert bound == pytest.approx(np.e / (1 + np.e))
    assert f"at most <b>{bound:.0%}</b>" in view.sentence.text()


def test_empty_view_and_stale_results(view: RiskView) -> None:
    view.set_plan((), 1e-6)
    assert "Add a statistic" in view.sentence.text()
    stale = risk_job(RiskRequest(_item(3.0), (), 1e-6, 0.1))
    view.show_result(stale)  # not the request the view asked for: ignored
    assert view.result is not None and view.result.current is None


def test_render(view: RiskView, tmp_path: Path) -> None:
    view.set_current(_item(0.5))
    view.set_plan((LaplaceNoise(2.0), LaplaceNoise(1.0)), 1e-6)
    assert view.grab().save(str(tmp_path / "risk-view.png"))
    view.save(tmp_path / "risk.csv")
    assert (tmp_path / "risk.csv").read_text().startswith("alpha")


# ------------------------------------------------------------------ everything released (issue 44)
RELEASED = (LaplaceNoise(2.0), LaplaceNoise(2.0), GaussianNoise(4.0))


def test_the_ledgers_releases_are_drawn_as_core_composes_them(view: RiskView) -> None:
    view.set_plan(RELEASED, 1e-6)
    view.set_released(RELEASED)
    result = view.result
    assert result is not None and result.released is not None
    expected = tradeoff.tradeoff_of(list(RELEASED), RELEASED_ALPHAS)
    np.testing.assert_array_equal(result.released.tradeoff.fnr, expected.fnr)
    assert result.released.releases == 3
    assert result.released.epsilon == best_total(RELEASED, 1e-6)[1]
    (curve,) = [
        c
        for c in view.tradeoff.getPlotItem().listDataItems()
        if c.name() == "everything released (lower bound)"
    ]
    np.testing.assert_array_equal(curve.getData()[1], expected.fnr)
    sentence = view.sentence.text()
    assert f"at least {expected.fnr_at(0.001):.3f} at a 0.1% false-positive rate" in sentence
    assert f"μ-GDP with μ ≤ {expected.gdp_mu:.3g}" in sentence and "3 release(s)" in sentence


def test_an_exact_composition_says_so(view: RiskView) -> None:
    view.set_released((GaussianNoise(10.0),) * 4)
    assert view.result is not None and view.result.released is not None
    assert view.result.released.tradeoff.kind == tradeoff.EXACT
    assert (
        "misses her with probability 0." in view.sentence.text()
        and "μ-GDP with μ = 0.2" in view.sentence.text()
    )
    names = [c.name() for c in view.tradeoff.getPlotItem().listDataItems()]
    assert "everything released (exact)" in names


def test_the_context_table_marks_this_datasets_totals(view: RiskView) -> None:
    from dpexplorer.release.deployments import deployments

    view.set_plan((*RELEASED, LaplaceNoise(1.0)), 1e-6)
    view.set_released(RELEASED)
    table = view.context
    assert table.rowCount() == len(deployments()) + 2  # released, and released + planned
    own = [r for r in range(table.rowCount()) if table.item(r, 0).font().bold()]
    assert [table.item(r, 0).text() for r in own] == [
        "this dataset: everything released",
        "this dataset: released + planned",
    ]
    epsilons = [
        float(re.sub(r"^ρ = \S+ \(≈ ε ", "", table.item(r, 1).text()).split(",")[0])
        for r in range(table.rowCount())
    ]
    assert epsilons == sorted(epsilons)
    assert table.item(own[0], 1).text().startswith(f"{best_total(RELEASED, 1e-6)[1]:.3g}")
    assert "Units differ" in view.context_note.text()


def test_no_release_no_curve(view: RiskView) -> None:
    view.set_released(())
    assert view.result is not None and view.result.released is None
    assert not [
        c for c in view.tradeoff.getPlotItem().listDataItems() if (c.name() or "").startswith("everything")
    ]


def test_render_with_the_ledgers_releases(view: RiskView, tmp_path: Path) -> None:
    """Rendered offscreen and looked at (a PNG beside the test): the legend sits under the
    plot, never over a curve; the audit finds no overlapping ticks or raw numbers."""
    view.set_current(_item(0.5))
    view.set_released(RELEASED)
    view.set_plan((*RELEASED, LaplaceNoise(1.0)), 1e-6)
    view.show()
    assert view.grab().save(str(tmp_path / "risk-released.png"))
    assert audit(view) == []
    legend = view.tradeoff.getPlotItem().legend
    box = view.tradeoff.getPlotItem().getViewBox()
    assert not legend.sceneBoundingRect().intersects(box.sceneBoundingRect())
