"""The release report's model (issue 21): what a run released, as published.

:func:`build_report` gathers, from the released results and the ledger, only what was published:
the released (noisy) values, their intervals, the declared query and mechanism, the guarantees
charged, the budget before and after. It never sees a true answer: :class:`ReportItem` is built
from :class:`~dpexplorer.release.release.ReleaseResult` (released values) and the public parts of
:class:`~dpexplorer.release.release.PreparedRelease` (query, parameters, provenance; never
``exact.draw``). :mod:`dpexplorer.release.report_plots` draws it, :mod:`dpexplorer.release.report`
writes it as a page."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import dpexplorer
from dpexplorer.core.accounting.guarantees import Guarantee
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.release.deployments import ContextRow, in_context
from dpexplorer.release.ledger import METHODS, Budget, Ledger, total_epsilon
from dpexplorer.release.presentation import EMPTY, Shown, show
from dpexplorer.release.published import HELPER_SUFFIX, integral_flags


@dataclass(frozen=True)
class MarginalRow:
    """One marginal a synthetic table's mechanism measured (MST, AIM): DP facts only."""

    marginal: tuple[str, ...]
    cells: int | None
    """Its number of cells (the product of its columns' public domain sizes)."""
    sigma: float
    """The Gaussian noise's standard deviation the run accounted for (a DP output for AIM)."""
    rho_measure: float
    """zCDP of the measurement: Delta_2^2 / (2 sigma^2)."""
    rho_select: float | None
    """zCDP of the exponential-mechanism round that chose it (epsilon^2 / 8), None if it was
    measured without a selection (the 1-way marginals)."""


@dataclass(frozen=True)
class ReportItem:
    """One released statistic, as published: nothing here is a true answer."""

    row_id: int
    description: str
    query: dict[str, Any]
    statistic: str
    mechanism: str
    parameters: dict[str, Any]
    labels: tuple[str, ...]
    values: tuple[float | str, ...]
    intervals: tuple[tuple[float, float] | None, ...] | None
    """(low, high) per value; None in place of a value without one (⊥), None for no intervals."""
    ci_level: float
    epsilon: float
    delta: float
    rho: float | None
    guarantee: Guarantee
    sampler: str
    grid: dict[str, Any]
    dp_outputs: dict[str, Any]
    public_facts: dict[str, Any]
    relation: str
    interval_kinds: tuple[str | None, ...] = ()
    """Per value, what its interval is: "noise", "exact" or "range" (dpexplorer/release/published.py)."""
    marginals: tuple[MarginalRow, ...] = ()
    """A synthetic table's measured marginals (its quality table); empty for a statistic."""
    fact_origins: tuple[Mapping[str, Any], ...] = ()
    """Each public fact the release used with its origin (the provenance's ``fact_origins``:
    :mod:`dpexplorer.release.public_facts`); empty for a release that recorded none."""
    codebook: Mapping[str, Any] | None = None
    """The codebook the release was checked against (the provenance's ``codebook``)."""
    subtracted: float | None = None
    """The ε the ledger subtracted for it where its guarantee was converted at the budget's δ
    (:func:`~dpexplorer.release.costs.prefix_costs`; None otherwise)."""

    @property
    def numeric(self) -> bool:
        """True when every released value is a number, or an empty group (not a category or ⊥)."""
        return any(isinstance(v, float | int) for v in self.values) and all(
            isinstance(v, float | int) or v == EMPTY for v in self.values
        )

    def integral(self, index: int) -> bool:
        """Whether value ``index`` is a count of rows (shown as a whole number)."""
        return integral_flags(self.statistic, self.labels)[index]

    def shown(self, index: int) -> Shown:
        """Value ``index`` as a person reads it (the one rounding rule)."""
        interval = self.intervals[index] if self.intervals else None
        kind = self.interval_kinds[index] if index < len(self.interval_kinds) else None
        return show(self.values[index], interval, self.ci_level, integral=self.integral(index), kind=kind)

    def main_indices(self) -> list[int]:
        """The statistic's own values: every value but the helpers ("count (noisy)", "centred sum
        (noisy)"), which the report lists in an appendix."""
        return [i for i, label in enumerate(self.labels) if not label.endswith(HELPER_SUFFIX)]

    @property
    def rank_within(self) -> int | None:
        """A DP quantile's rank interval in rows (None for other releases)."""
        value = self.grid.get("rank_within_rows")
        return None if value is None else int(value)


@dataclass(frozen=True)
class BudgetLine:
    """Epsilon spent before and after the run under one accountant (upper bounds), or the
    reason the accountant does not apply."""

    method: str
    before: float | None
    after: float | None
    note: str


@dataclass(frozen=True, eq=False)
class ReleasedRisk:
    """The risk of everything the ledger holds for the dataset after the run: the attacker's
    trade-off curve of the composition and its mu-GDP summary (``tradeoff``, a
    :class:`~dpexplorer.core.tradeoff.TradeOff`; None with ``note`` when it cannot be computed),
    and the total epsilon at the budget's delta among published deployments (``context``)."""

    tradeoff: Any
    releases: int
    note: str = ""
    context: tuple[ContextRow, ...] = ()


@dataclass(frozen=True)
class Report:
    """Everything the report shows (all public: declared facts and DP outputs)."""

    dataset: str
    dataset_id: str
    """The dataset's public id in the ledger (:meth:`Ledger.public_id`): never a hash of its rows."""
    items: tuple[ReportItem, ...]
    budget: Budget | None
    budget_lines: tuple[BudgetLine, ...]
    plan: list[dict[str, Any]]
    ledger_path: str
    risk: ReleasedRisk | None = None
    """Everything released from the dataset, in an attacker's terms (:func:`released_risk`)."""
    software: str = field(default_factory=lambda: f"dpexplorer {dpexplorer.__version__}")
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


def _describe_query(query: Mapping[str, Any]) -> str:
    from dpexplorer.data.queries import query_from_dict

    try:
        return query_from_dict(dict(query)).describe()
    except (DPExplorerError, KeyError, TypeError, ValueError):
        return json.dumps(query, sort_keys=True)


def report_item(prepared: Any, result: Any) -> ReportItem:
    """The published parts of one release: ``prepared`` a PreparedRelease, ``result`` its
    ReleaseResult. Reads the released values, never ``prepared.exact.draw``."""
    exact = prepared.exact
    intervals = result.confidence_intervals
    if intervals is None and exact.dp_outputs.get("confidence_intervals"):
        # intervals computed after the charge from released values (e.g. a noisy mean)
        intervals = tuple(
            None if ci is None else (float(ci[0]), float(ci[1]))
            for ci in exact.dp_outputs["confidence_intervals"]
        )
    return ReportItem(
        row_id=result.row_id,
        description=_describe_query(prepared.query),
        query=dict(prepared.query),
        statistic=str(prepared.public_facts.get("statistic", prepared.query.get("type", ""))),
        mechanism=prepared.mechanism,
        parameters=dict(prepared.parameters),
        labels=tuple(result.labels),
        values=tuple(result.values),
        intervals=intervals,
        ci_level=float(exact.dp_outputs.get("confidence_level", result.ci_level)),
        epsilon=result.epsilon,
        delta=result.delta,
        rho=result.rho,
        guarantee=result.guarantee,
        sampler=str(getattr(result, "sampler", "") or getattr(exact, "sampler", "")),
        grid=dict(exact.provenance),
        dp_outputs=dict(exact.dp_outputs),
        public_facts=dict(prepared.public_facts),
        relation=prepared.relation,
        interval_kinds=tuple(getattr(result, "interval_kinds", ()) or ()),
        marginals=marginal_rows(exact.provenance, exact.dp_outputs)
        if str(prepared.public_facts.get("statistic", "")).startswith(SYNTHETIC)
        else (),
        fact_origins=tuple(_origins(prepared).get("fact_origins") or ()),
        codebook=_origins(prepared).get("codebook"),
    )


def _origins(prepared: Any) -> Mapping[str, Any]:
    """The release's ``origins`` (fact_origins, codebook); empty for one that has none."""
    origins = getattr(prepared, "origins", None)
    return origins if isinstance(origins, Mapping) else {}


SYNTHETIC = "synthetic table"
"""How a synthetic table's statistic starts (its public facts, its provenance)."""


def marginal_rows(grid: Mapping[str, Any], outputs: Mapping[str, Any]) -> tuple[MarginalRow, ...]:
    """The quality table of a synthetic table from its provenance's ``discretisation``
    (``grid``: the public domain, Delta_2^2) and ``dp_outputs`` (``measured``, ``rounds``):
    every measured marginal with its size, sigma and the zCDP its measurement and selection took.
    Each selection round is the one before the measurement of its marginal (MST, AIM), so the
    last rounds pair with the last measurements; a malformed entry is skipped, never raised."""
    given = grid.get("cells")
    cells: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    try:
        l2 = float(grid.get("marginal_sensitivity_l2_squared", 1))
    except (TypeError, ValueError):
        l2 = 1.0
    measured = [m for m in outputs.get("measured") or () if isinstance(m, Mapping)]
    rounds = [r for r in outputs.get("rounds") or () if isinstance(r, Mapping)]
    first_selected = len(measured) - len(rounds)
    rows = []
    for index, m in enumerate(measured):
        try:
            marginal = tuple(str(c) for c in m["marginal"])
            sigma = float(m["sigma"])
        except (KeyError, TypeError, ValueError):
            continue
        size: int | None = 1
        for column in marginal:
            labels = cells.get(column)
            size = size * len(labels) if size is not None and isinstance(labels, list) else None
        selected = None
        if 0 <= index - first_selected < len(rounds):
            chosen = rounds[index - first_selected]
            if [str(c) for c in chosen.get("marginal") or ()] == list(marginal):
                with contextlib.suppress(TypeError, ValueError):
                    selected = float(chosen["epsilon"]) ** 2 / 8
        rho = l2 / (2 * sigma * sigma) if sigma > 0 else math.inf
        rows.append(MarginalRow(marginal, size, sigma, rho, selected))
    return tuple(rows)


def with_costs(
    items: tuple[ReportItem, ...], budget: Budget | None, before: Sequence[Guarantee]
) -> tuple[ReportItem, ...]:
    """``items`` with the ε the ledger subtracted for each converted guarantee, charged in order
    after ``before`` under ``budget`` (:func:`~dpexplorer.release.costs.prefix_costs`)."""
    from dataclasses import replace

    from dpexplorer.release.costs import prefix_costs

    if budget is None:
        return items
    costs = prefix_costs(before, [i.guarantee for i in items], budget.method, budget.delta)
    return tuple(replace(item, subtracted=cost) for item, cost in zip(items, costs, strict=True))


def budget_lines(
    budget: Budget | None, before: Sequence[Guarantee], after: Sequence[Guarantee]
) -> tuple[BudgetLine, ...]:
    """Epsilon spent before and after, at the budget's delta, under the ledger's accountant
    (first; its exact total, :func:`~dpexplorer.release.ledger.total_epsilon`) and under every
    other accountant (:func:`dpexplorer.core.accounting.compose.compose`). Every number is an
    upper bound on the true epsilon under its theorem."""
    if budget is None:
        return ()
    from dpexplorer.core.accounting.compose import compose

    delta = budget.delta
    reports = [compose(list(g), delta=delta) if g else None for g in (before, after)]
    lines = []
    for method in (budget.method, *[m for m in METHODS if m != budget.method]):
        values: list[float | None] = []
        note = ""
        for guarantees, report in zip((before, after), reports, strict=True):
            if report is None:
                values.append(0.0)
                continue
            if method == budget.method:
                try:
                    values.append(float(total_epsilon(list(guarantees), method, delta)))
                except DPExplorerError as exc:
                    values.append(None)
                    note = str(exc)
                continue
            result = report.get(method)
            values.append(result.epsilon)
            if result.epsilon is None:
                note = result.reason
        lines.append(BudgetLine(method, values[0], values[1], note))
    return tuple(lines)


def released_risk(
    after: Sequence[Guarantee], budget: Budget | None, lines: Sequence[BudgetLine]
) -> ReleasedRisk:
    """The trade-off curve of ``after`` (every guarantee the ledger holds for the dataset) and,
    with a budget, its total under the ledger's accountant (``lines``' first) among the
    published deployments. A composition that cannot be computed is a note, never a failure."""
    from dpexplorer.core.tradeoff import tradeoff_of  # numpy and scipy

    try:
        tradeoff = tradeoff_of(list(after))
    except DPExplorerError as exc:
        return ReleasedRisk(None, len(after), f"the trade-off curve cannot be computed: {exc}")
    own = []
    ledger_line = next((line for line in lines if budget is not None and line.method == budget.method), None)
    if budget is not None and ledger_line is not None and ledger_line.after is not None:
        own.append(("everything released from this dataset", ledger_line.after, budget.delta))
    return ReleasedRisk(tradeoff, len(after), context=in_context(own, "as under Dataset above"))


def build_report(
    *,
    dataset: str,
    fingerprint: str,
    released: Sequence[tuple[Any, Any]],
    ledger: Ledger,
    before: Sequence[Guarantee],
    plan: list[dict[str, Any]] | None = None,
) -> Report:
    """The report of one run: ``released`` the (PreparedRelease, ReleaseResult) pairs in order,
    ``before`` the guarantees the ledger held for the dataset before the run."""
    budget = ledger.budget(fingerprint)
    after = [m.guarantee for m in ledger.measurements(fingerprint)]
    items = with_costs(tuple(report_item(p, r) for p, r in released), budget, before)
    if plan is None:
        plan = [{"query": i.query, "mechanism": i.mechanism, "parameters": i.parameters} for i in items]
    lines = budget_lines(budget, before, after)
    return Report(
        dataset=dataset,
        dataset_id=ledger.public_id(fingerprint),
        items=items,
        budget=budget,
        budget_lines=lines,
        plan=plan,
        ledger_path=str(ledger.path),
        risk=released_risk(after, budget, lines),
    )
