"""The ε the ledger subtracts for a release, beside the ε it declares (issue 40).

A release declares (ε, δ) in its parameters, but the ledger charges its guarantee: MST and AIM
charge zCDP ρ (from the declared ε and δ), the Gaussian mechanism its noise, a subsampled
release its amplified loss. Under the budget's accountant that guarantee is converted at the
*budget's* δ (under basic composition an equal share of the δ left for every such guarantee,
:mod:`dpexplorer.core.accounting.compose`), so an MST entry declaring ε = 1 at δ = 1e-9 takes
ε ≈ 0.77 of a budget with δ = 1e-6, and more of one with a smaller δ. These functions say what
the ledger will subtract, so that the steward reads both numbers before anything is charged:
the CLI's lines before a plan is released, the window's release dialog and the report.

What the ledger subtracts for an entry is the difference of the budget's totals
(:func:`~dpexplorer.release.ledger.total_epsilon`, its accountant at its δ) before and after
the entry is charged, the plan's entries charged in order after what the ledger already holds:
these differences add up to what the plan spends. Computed only for guarantees that are
converted (:data:`CONVERTED`); a pure or (ε, δ) guarantee under basic composition costs what it
declares."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpexplorer.core.accounting.guarantees import ZCDP, GaussianNoise, Guarantee, RDPCurve, Subsampled
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.release.presentation import privacy_number
from dpexplorer.release.rational import float_up

CONVERTED = (ZCDP, RDPCurve, GaussianNoise, Subsampled)
"""Guarantees with no one (ε, δ) of their own: the accountant converts them at the budget's δ."""


def declared_epsilon(prepared: Any) -> float:
    """The ε a prepared release (a statistic or a synthetic table) declares: its ``epsilon``
    parameter, else the ε of its exact path at its own δ."""
    value = prepared.parameters.get("epsilon")
    return float(value) if isinstance(value, int | float) else float(prepared.exact.epsilon)


def prefix_costs(
    before: Sequence[Guarantee], charged: Sequence[Guarantee], method: str, delta: float
) -> list[float | None]:
    """Per guarantee of ``charged`` that is :data:`CONVERTED`, the ε the budget's total (under
    ``method`` at ``delta``) grows by when it is charged after ``before`` and the ones before it
    in ``charged``, rounded up; None for the others, and where the accountant has no finite
    total. Two totals per converted guarantee (totals of the list so far are shared)."""
    from dpexplorer.release.ledger import total_epsilon

    totals: dict[int, Fraction | None] = {}

    def total(count: int) -> Fraction | None:
        if count not in totals:
            try:
                totals[count] = total_epsilon([*before, *charged[:count]], method, delta)
            except NotApplicableError:
                totals[count] = None
        return totals[count]

    costs: list[float | None] = []
    for index, guarantee in enumerate(charged):
        start, end = (total(index), total(index + 1)) if isinstance(guarantee, CONVERTED) else (None, None)
        costs.append(None if start is None or end is None else float_up(end - start))
    return costs


def ledger_costs(prepared: Sequence[Any], ledger: Any) -> list[float | None]:
    """:func:`prefix_costs` of a prepared plan (statistics and synthetic tables, one dataset)
    against what ``ledger`` holds for it, under its budget; every entry None without a budget."""
    from dpexplorer.release.charge import charged_guarantee

    if not prepared:
        return []
    key = prepared[0].fingerprint
    budget = ledger.budget(key)
    if budget is None:
        return [None] * len(prepared)
    before = [m.guarantee for m in ledger.measurements(key)]
    charged = [charged_guarantee(item, ledger) for item in prepared]
    return prefix_costs(before, charged, budget.method, budget.delta)


def cost_words(
    declared: float,
    subtracted: float | None,
    *,
    method: str,
    budget_delta: float,
    rho: float | None = None,
    verb: str = "subtracts",
) -> str:
    """The words beside an entry whose ledger cost does not read as its declared ε (three
    significant digits, :func:`~dpexplorer.release.presentation.privacy_number`): "declared
    ε = 1; the ledger subtracts ε = 0.771 (its zCDP ρ = 0.015 converted at the budget's
    δ = 1e-6 under basic composition)" (``verb`` "subtracted" after the release); "" when they
    read the same or the cost is unknown."""
    if subtracted is None or privacy_number(subtracted) == privacy_number(declared):
        return ""
    what = f"its zCDP ρ = {privacy_number(rho)}" if rho else "its guarantee"
    return (
        f"declared ε = {privacy_number(declared)}; the ledger {verb} ε = {privacy_number(subtracted)} "
        f"({what} converted at the budget's δ = {privacy_number(budget_delta)} under {method} composition)"
    )


def plan_cost_lines(prepared: Sequence[Any], ledger: Any) -> list[str]:
    """One line per entry of a prepared plan whose ledger cost does not read as its declared ε
    (:func:`cost_words`), "plan entry N (mechanism): ..."; [] without a budget."""
    budget = ledger.budget(prepared[0].fingerprint) if prepared else None
    if budget is None:
        return []
    lines = []
    for number, (item, cost) in enumerate(
        zip(prepared, ledger_costs(prepared, ledger), strict=True), start=1
    ):
        words = cost_words(
            declared_epsilon(item), cost, method=budget.method, budget_delta=budget.delta, rho=item.exact.rho
        )
        if words:
            lines.append(f"plan entry {number} ({item.mechanism}): {words}")
    return lines
