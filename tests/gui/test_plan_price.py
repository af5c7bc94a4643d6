"""The planner prices exactly what a release charges (issue 19).

For every registered mechanism and every query kind it accepts (the public-facts catalogue), the
budget planner's total for a one-statistic plan, under the ledger's accountant, equals the total
the ledger holds after that statistic is released through the real pipeline; the release
dialog's price (``release.price``) equals it too. Both read the release path's own guarantee
(``release.planned_charge`` and ``release.charged_guarantee`` share ``charged_for``); the
planner used to read the mechanism's claim, e.g. a Gaussian at epsilon 0.5 planned at 0.500
under basic composition and charged 0.541 (its discrete Gaussian's zCDP at the budget's delta)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dpexplorer.core import planning
from dpexplorer.core.accounting.single import fixed_approx
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.planning import PlannedMeasurement
from dpexplorer.data.answers import query_input
from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict
from dpexplorer.gui.views.budget_jobs import BudgetRequest, budget_job, release_charge
from dpexplorer.release.ledger import FLOAT_MARGIN, Ledger, total_epsilon
from dpexplorer.release.release import execute, prepare, price
from dpexplorer.release.samplers import SeededBitSource
from tests.release.test_public_facts import QUERIES, _cases, load_neighbours

BUDGET_EPSILON, BUDGET_DELTA = 1000.0, 1e-2
"""Loose enough that no release is refused: above every default delta (private keys: 1e-3)."""
METHODS = ("basic", "pld")
"""Where the charge takes each of its forms: the path's own guarantee (e.g. zCDP, converted at
the budget's delta) and its (epsilon, delta) statement for an accountant that takes no zCDP."""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return load_neighbours(tmp_path_factory.mktemp("plan_price"), ("D",))["D"]


def _planned_total(item: PlannedMeasurement, method: str) -> float | None:
    """The planner's total for a plan of ``item`` alone, as the budget job computes it."""
    by_method = planning.guarantees_by_method([item], release_charge, (method,))
    report = planning.budget_report(by_method, [], BUDGET_EPSILON, BUDGET_DELTA, (method,))
    return report.get(method).total


@pytest.mark.parametrize(("mechanism", "kind"), _cases())
def test_the_planner_prices_what_the_release_charges(
    dataset: Any, tmp_path: Path, mechanism: str, kind: str
) -> None:
    query = query_from_dict(QUERIES[kind])
    params = registry.get(mechanism).validate({})
    # the input a release builds (exact sums on a lattice, see release.prepare); the window's
    # plan holds the exploration input, whose float sums cost one grid step more (a hair above)
    exact_input = query_input(dataset, query, "add_remove", exact_sums=True)
    item = PlannedMeasurement(kind, mechanism, params, exact_input)
    try:
        prepared = prepare(dataset, query, mechanism, params)
    except DPExplorerError as exc:  # no exact release: the planner's row says so
        rows = budget_job(BudgetRequest((item,), (), BUDGET_EPSILON, BUDGET_DELTA)).rows
        assert "cannot be released as planned" in rows[0].note and str(exc) in rows[0].note
        return
    for method in METHODS:
        with Ledger(tmp_path / f"{method}.sqlite") as ledger:
            ledger.set_budget(prepared.fingerprint, BUDGET_EPSILON, BUDGET_DELTA, method)
            quoted = price(prepared, ledger)
            execute(prepared, ledger=ledger, out_dir=tmp_path / method, bits=SeededBitSource(1))
            charged = [m.guarantee for m in ledger.measurements(prepared.fingerprint)]
        spent = float(total_epsilon(charged, method, BUDGET_DELTA))
        # the ledger keeps an accountant's float total times (1 + FLOAT_MARGIN), basic's exactly
        margin = 1.0 if method == "basic" and _pure(charged) else 1 + float(FLOAT_MARGIN)
        assert _planned_total(item, method) * margin == pytest.approx(spent, rel=1e-12, abs=1e-15)
        assert quoted.cost_epsilon == pytest.approx(spent, rel=1e-12, abs=1e-15)


def _pure(guarantees: list[Any]) -> bool:
    """True when basic composition is exact rational arithmetic (every part has a fixed pair)."""
    return all(fixed_approx(g) is not None for g in guarantees)


def test_a_gaussian_is_planned_at_its_discrete_gaussians_charge(tmp_path: Path) -> None:
    """The case the issue saw, on Adult, through the budget job and its table: epsilon 0.5 is
    charged 0.541 under basic composition at delta 1e-6 (zCDP of the discrete Gaussian)."""
    adult = load_dataset(default_dataset_path())
    query = query_from_dict({"type": "count"})
    params = registry.get("gaussian").validate({"epsilon": 0.5, "delta": 1e-6})
    item = PlannedMeasurement("count", "gaussian", params, query_input(adult, query, "add_remove"))
    result = budget_job(BudgetRequest((item,), (), 5.0, 1e-6, ledger_method="basic"))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        prepared = prepare(adult, query, "gaussian", params, ledger=ledger)
        ledger.set_budget(prepared.fingerprint, 5.0, 1e-6, "basic")
        execute(prepared, ledger=ledger, out_dir=tmp_path / "out", bits=SeededBitSource(2))
        charged = [m.guarantee for m in ledger.measurements(prepared.fingerprint)]
    spent = float(total_epsilon(charged, "basic", 1e-6)) / (1 + float(FLOAT_MARGIN))
    assert spent == pytest.approx(0.541, abs=5e-4)
    assert result.report.get("basic").total == pytest.approx(spent, rel=1e-12)
    assert result.rows[0].epsilon == 0.5  # the setting typed
    assert result.rows[0].charged == pytest.approx(spent, rel=1e-12)  # what the ledger takes
