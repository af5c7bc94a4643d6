"""The budget view: the totals it shows are the accountant's, add/remove redraws, a plan that
cannot fit says so, accuracy-first planning and sharing go through the job."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dpexplorer.core import planning
from dpexplorer.core.accounting.compose import compose
from dpexplorer.core.accounting.guarantees import LaplaceNoise, Subsampled
from dpexplorer.core.mechanisms.base import NumericInput
from dpexplorer.core.planning import ErrorTarget, PlannedMeasurement, ReleasedMeasurement
from dpexplorer.gui.views.budget import BudgetView
from dpexplorer.gui.views.budget_jobs import BudgetRequest, budget_job, release_charge
from dpexplorer.gui.views.budget_table import EPSILON_COLUMN, HOLD_COLUMN, TARGET_COLUMN


def _query() -> NumericInput:
    return NumericInput(np.array([100.0]), np.array([101.0]), 1.0, 1.0, 1000, "count")


def _laplace(label: str, epsilon: float, **kwargs: object) -> PlannedMeasurement:
    return PlannedMeasurement(label, "laplace", {"epsilon": epsilon}, _query(), **kwargs)  # type: ignore[arg-type]


class _Window:
    """Stands in for the main window: runs each requested job at once (the compute service
    runs it on a worker; its threading is tested in test_compute.py) and hands back the result."""

    def __init__(self, view: BudgetView) -> None:
        self.view = view
        self.requests: list[BudgetRequest] = []
        view.job_requested.connect(self.run)

    def run(self, request: BudgetRequest) -> None:
        self.requests.append(request)
        self.view.show_result(budget_job(request))


@pytest.fixture
def view(qtbot):  # type: ignore[no-untyped-def]
    widget = BudgetView()
    qtbot.addWidget(widget)
    widget.resize(1200, 900)
    widget.window_stub = _Window(widget)  # type: ignore[attr-defined]
    widget.set_budget(2.0, 1e-6)
    return widget


def _shown_totals(view: BudgetView) -> dict[str, float | None]:
    """The totals as the view shows them: read back from the text above each bar."""
    import pyqtgraph as pg

    texts = [item for item in view.bars.plotItem.items if isinstance(item, pg.TextItem)]
    shown: dict[str, float | None] = {}
    for index, text in enumerate(sorted(texts, key=lambda t: t.pos().x())):
        method = view.result.report.methods[index].method  # type: ignore[union-attr]
        value = text.textItem.toPlainText()
        shown[method] = None if "not" in value else float(value)
    return shown


def test_three_statistics_show_the_accountants_totals(view: BudgetView) -> None:
    gaussian = PlannedMeasurement("mean", "gaussian", {"epsilon": 0.5, "delta": 1e-7}, _query())
    view.set_plan([_laplace("count", 0.5), gaussian, _laplace("median", 0.25)])
    # each accountant composes what the releases would be charged under it (the discrete
    # Gaussian's zCDP, or its (epsilon, delta) where the accountant takes no zCDP)
    by_method = planning.guarantees_by_method(view.plan, release_charge)
    results = [compose(g, delta=1e-6, methods=[m]).results[0] for m, g in by_method.items()]
    shown = _shown_totals(view)
    for result in results:
        if result.epsilon is None:
            assert shown[result.method] is None
        else:
            # three digits, rounded up (an upper bound stays one: core/figures.privacy_up)
            unit = 10 ** (math.floor(math.log10(result.epsilon)) - 2)
            assert result.epsilon <= shown[result.method] < result.epsilon + unit
            assert view.result.report.get(result.method).total == result.epsilon  # type: ignore[union-attr]
    assert view.table.rowCount() == 3
    assert view.columns["total_epsilon"] == [r.epsilon for r in results]
    best = min(r.epsilon for r in results if r.epsilon is not None)
    assert view.remaining.value() == round(best / 2.0 * 1000)
    assert "fits" in view.status.text()


def test_add_and_remove_redraw(view: BudgetView) -> None:
    view.add_measurement(_laplace("a", 0.5))
    view.add_measurement(_laplace("b", 0.7))
    # the discrete Laplace's scale is rounded up: each release charges a hair below its epsilon
    assert view.result.report.get("basic").total == pytest.approx(1.2, rel=1e-3)  # type: ignore[union-attr]
    view.table.selectRow(0)
    view.remove_button.click()
    assert [item.label for item in view.plan] == ["b"]
    assert view.result.report.get("basic").total == pytest.approx(0.7, rel=1e-3)  # type: ignore[union-attr]
    assert view.table.rowCount() == 1


def test_add_button_asks_the_window(view: BudgetView, qtbot) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(view.add_requested, timeout=30_000):
        view.add_button.click()


def test_a_plan_that_cannot_fit_says_so(view: BudgetView) -> None:
    for label in "abc":
        view.add_measurement(_laplace(label, 1.0))
    assert not view.result.report.fits  # type: ignore[union-attr]
    assert "does not fit" in view.status.text()
    assert "OVER BUDGET" in view.remaining.format()


def test_held_statistics_that_do_not_fit_are_reported(view: BudgetView) -> None:
    view.add_measurement(_laplace("a", 1.5, held=True))
    view.add_measurement(_laplace("b", 1.0, held=True))
    view.add_measurement(_laplace("c", 0.3))
    view.share.setChecked(True)
    assert "the held statistics alone use ε = 2.49" in view.status.text()  # 1.5 + 1, as charged
    assert "of the budget ε = 2" in view.status.text()


def test_sharing_and_target_error(view: BudgetView) -> None:
    view.share_method.setCurrentIndex(view.share_method.findData("basic"))
    view.add_measurement(_laplace("held", 0.5, held=True))
    view.add_measurement(_laplace("free", 0.1))
    view.add_measurement(_laplace("solved", 0.1, target=ErrorTarget(10.0, 0.95)))
    view.share.setChecked(True)
    eps = [item.params["epsilon"] for item in view.plan]
    assert eps[2] == pytest.approx(math.log(20) / 10, rel=1e-8)  # b ln(1/beta) = 10
    # shared so that the charges (a hair below the epsilons: the discrete Laplace) fill the budget
    assert eps[0] == 0.5 and eps[1] == pytest.approx(2.0 - 0.5 - eps[2], rel=1e-3)
    # (within the discrete scale's rounding steps, ~1e-4 of epsilon)
    assert view.result.report.get("basic").total == pytest.approx(2.0, rel=1e-4)  # type: ignore[union-attr]
    assert view.result.report.get("basic").total <= 2.0  # type: ignore[union-attr, operator]


def test_typing_a_target_error_in_the_table_solves_epsilon(view: BudgetView) -> None:
    view.add_measurement(_laplace("count", 1.0))
    view.table.item(0, TARGET_COLUMN).setText("5")
    assert view.plan[0].target == ErrorTarget(5.0, 0.95)
    assert view.plan[0].params["epsilon"] == pytest.approx(math.log(20) / 5, rel=1e-8)


def test_released_rows_count_and_render(view: BudgetView, tmp_path: Path) -> None:
    view.set_released([ReleasedMeasurement("#1 count", "laplace", LaplaceNoise(5.0))])
    view.add_measurement(_laplace("a", 0.5))
    assert view.result.report.get("basic").released == pytest.approx(0.2)  # type: ignore[union-attr]
    assert view.table.item(0, HOLD_COLUMN).text() == "released"
    assert "optimal" in view.tooltip_at(2.0)
    path = tmp_path / "budget-view.png"
    assert view.grab().save(str(path))
    view.save(tmp_path / "budget.csv")
    assert (tmp_path / "budget.csv").read_text().startswith("accountant")


def test_hold_and_epsilon_edits_in_the_table(view: BudgetView) -> None:
    from PySide6.QtCore import Qt

    view.add_measurement(_laplace("a", 0.5))
    view.table.item(0, HOLD_COLUMN).setCheckState(Qt.CheckState.Checked)
    assert view.plan[0].held
    view.table.item(0, EPSILON_COLUMN).setText("0.8")
    assert view.plan[0].params["epsilon"] == 0.8
    assert view.result.report.get("basic").total == pytest.approx(0.8, rel=1e-3)  # type: ignore[union-attr]
    view.table.item(0, EPSILON_COLUMN).setText("-1")
    assert view.plan[0].params["epsilon"] == 0.8 and "positive number" in view.status.text()


def test_ledger_budget_and_releases_and_a_shared_plan_the_ledger_accepts(
    view: BudgetView, tmp_path: Path
) -> None:
    from dpexplorer.release.ledger import Ledger

    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        ledger.set_budget("f" * 64, 2.0, 1e-6, "pld")
        ledger.charge(
            "f" * 64,
            query={"kind": "count"},
            mechanism="laplace",
            parameters={"epsilon": 0.5},
            guarantee=LaplaceNoise(2.0),
        )
        view.load_ledger(ledger, "f" * 64)
        assert "from the ledger" in view.budget_source.text()
        # issue 28: a row is named in words when its query can be rebuilt; this one cannot
        assert view.table.item(0, 0).text() == "released #1: kind=count"
        view.share_method.setCurrentIndex(view.share_method.findData("pld"))
        view.set_plan([_laplace("count", 0.2), _laplace("sum", 0.4, held=True), _laplace("mean", 0.3)])
        view.share.setChecked(True)
        report = view.result.report  # type: ignore[union-attr]
        # the tight accountant's grid moves with the epsilons, so its total jumps a little:
        # sharing lands just below the budget, never above it
        assert 2.0 * (1 - 1e-4) <= report.get("pld").total <= 2.0
        assert report.get("pld").released == pytest.approx(0.5 + 2 * math.log1p(-1e-6))  # exact Laplace
        planned = view.result.guarantees[1:]  # type: ignore[union-attr]
        ledger.check("f" * 64, list(planned))  # the shared plan is accepted: no BudgetExceededError


def test_a_secret_sample_claim_composes_the_plan_as_the_release_charges_it(view: BudgetView) -> None:
    """Issue 18: with the file declared a secret Poisson sample of rate q, the planned Laplace
    statistics are composed as Subsampled(..., q) (what the release charges), and say so."""
    from dpexplorer.core.accounting.amplify import amplified_epsilon

    view.set_plan([_laplace("count", 0.5), _laplace("median", 0.25)])
    plain = view.result.report.get("basic").total  # type: ignore[union-attr]
    view.set_sampling_rate(0.05)
    assert view.window_stub.requests[-1].sampling_rate == 0.05  # type: ignore[attr-defined]
    # what the releases charge (issue 19): each exact path's own PureDP (the discrete Laplace's
    # eps' <= eps), amplified
    charged = [release_charge(item, None) for item in view.plan]
    assert view.result.guarantees == tuple(Subsampled(g, 0.05) for g in charged)  # type: ignore[union-attr, arg-type]
    amplified = sum(amplified_epsilon(g.epsilon, 0.05) for g in charged)  # type: ignore[union-attr]
    assert view.result.report.get("basic").total == pytest.approx(amplified, rel=1e-12)  # type: ignore[union-attr]
    assert amplified < plain / 10
    assert view.result.rows[0].epsilon == pytest.approx(amplified_epsilon(0.5, 0.05))  # type: ignore[union-attr]
    assert "secret sample" in view.result.rows[0].note  # type: ignore[union-attr]
    view.set_sampling_rate(None)
    assert view.result.report.get("basic").total == pytest.approx(plain)  # type: ignore[union-attr]


def test_the_claim_does_not_amplify_under_replacement() -> None:
    """Poisson sampling is analysed for neighbours that add or remove a row: under replace the
    planned guarantee stays the mechanism's own (a valid upper bound)."""
    from dataclasses import replace

    query = replace(_query(), relation="replace")
    item = PlannedMeasurement("count", "laplace", {"epsilon": 0.5}, query)
    result = budget_job(BudgetRequest((item,), (), 2.0, 1e-6, sampling_rate=0.05))
    assert result.guarantees == (release_charge(item, None),)  # the release's own, not amplified
    assert not isinstance(result.guarantees[0], Subsampled)


def test_the_ledgers_releases_go_to_the_risk_view_and_leave_with_another_dataset(
    view: BudgetView, tmp_path: Path, qtbot
) -> None:  # type: ignore[no-untyped-def]
    """Issue 44: reading the ledger sends the dataset's released guarantees on (the Risk tab
    composes them); while another dataset's identity is computed, they are not this one's."""
    from dpexplorer.release.ledger import Ledger

    sent: list[tuple] = []
    view.released_changed.connect(sent.append)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        ledger.set_budget("f" * 64, 2.0, 1e-6, "pld")
        ledger.charge(
            "f" * 64, query={"kind": "count"}, mechanism="laplace", parameters={}, guarantee=LaplaceNoise(2.0)
        )
        view.load_ledger(ledger, "f" * 64)
    assert sent[-1] == (LaplaceNoise(2.0),)
    view.set_identity_note("computing the new file's identity")
    assert sent[-1] == () and view.table.rowCount() == len(view.plan)
