"""The risk view: the numbers it shows are core.risk's, and the prior drives the sentence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpexplorer.core import risk
from dpexplorer.core.accounting.guarantees import LaplaceNoise
from dpexplorer.core.mechanisms.base import NumericInput
from dpexplorer.core.planning import PlannedMeasurement, best_total
from dpexplorer.gui.views.risk import ALPHAS, RiskRequest, RiskView, risk_job


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
