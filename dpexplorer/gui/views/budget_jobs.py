"""What the budget view asks the compute service for, run off the main thread: the plan's totals
under every accountant against the budget (:func:`budget_job`), and k releases of two mechanisms
composed for compare mode (:func:`repeats_job`). Each request is captured on the main thread;
each result holds only what the view draws (no widget here)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpexplorer.core import planning
from dpexplorer.core.accounting.guarantees import Guarantee, Subsampled, poisson_subsampled
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.mechanisms.base import QueryInput
from dpexplorer.core.planning import (
    BudgetReport,
    ErrorTarget,
    PlannedMeasurement,
    ReleasedMeasurement,
)

PROFILE_DELTAS = np.geomspace(1e-12, 1e-1, 12)
"""The deltas at which the privacy profiles are drawn (one per decade: the tight accountant
takes tens of milliseconds per delta when Gaussian noise is in the plan)."""


@dataclass(frozen=True, eq=False)
class BudgetRequest:
    """Everything :func:`budget_job` needs, captured on the main thread.

    ``share_method``: when set, the statistics not held share what is left of the budget under
    that accountant (:func:`planning.share_budget`). ``ledger_method``: the accountant the ledger
    charges with (None when the budget is not the ledger's)."""

    plan: tuple[PlannedMeasurement, ...]
    released: tuple[ReleasedMeasurement, ...]
    budget_epsilon: float
    budget_delta: float
    share_method: str | None = None
    ledger_method: str | None = None
    sampling_rate: float | None = None
    """The steward's claim that the file is a secret Poisson sample (None: no claim)."""


@dataclass(frozen=True)
class Row:
    """One line of the table: epsilon and delta as the mechanism claims them (released
    measurements: their guarantee's pair, or its epsilon at the budget's delta); ``charged``:
    the epsilon its release is (or was) charged, at the budget's delta."""

    label: str
    mechanism: str
    epsilon: float
    delta: float
    held: bool
    released: bool
    charged: float = math.nan
    target: ErrorTarget | None = None
    note: str = ""


@dataclass(frozen=True, eq=False)
class BudgetResult:
    """What the budget view draws. ``plan`` is the request's plan with target errors solved and
    the budget shared; ``guarantees`` are those of released + planned (for the risk view)."""

    request: BudgetRequest
    plan: tuple[PlannedMeasurement, ...]
    rows: tuple[Row, ...]
    report: BudgetReport
    profiles: dict[str, planning.Profile]
    guarantees: tuple[Guarantee, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


def _solve_targets(plan: Sequence[PlannedMeasurement]) -> tuple[list[PlannedMeasurement], dict[int, str]]:
    solved, notes = [], {}
    for i, item in enumerate(plan):
        try:
            solved.append(planning.apply_target(item))
        except DPExplorerError as exc:
            solved.append(item)
            notes[i] = str(exc)
    return solved, notes


def release_charge(
    item: PlannedMeasurement, method: str | None, sampling_rate: float | None = None
) -> Guarantee:
    """What releasing ``item`` would charge under ``method`` (``release.planned_charge``: the
    release path's own guarantee; with the steward's ``sampling_rate`` claim, that guarantee
    amplified, under every accountant, as a release with the claim is charged); the mechanism's
    claim where it has no exact release (the row's note then says why)."""
    from dpexplorer.release.release import planned_charge

    relation = item.query.relation
    try:
        if sampling_rate is not None and sampling_rate < 1:
            own = planned_charge(item.mechanism, item.params, item.query, None)
            return poisson_subsampled(own, sampling_rate, relation)
        return planned_charge(item.mechanism, item.params, item.query, method)
    except DPExplorerError:
        return poisson_subsampled(planning.claimed_guarantee(item, method), sampling_rate, relation)


def _release_refusal(item: PlannedMeasurement) -> str:
    """Why ``item`` cannot be released exactly ("" when it can)."""
    from dpexplorer.release.release import planned_charge

    try:
        planned_charge(item.mechanism, item.params, item.query, None)
    except DPExplorerError as exc:
        return f"cannot be released as planned ({exc}); priced at the mechanism's claim"
    return ""


def _rows(
    plan: Sequence[PlannedMeasurement],
    released: Sequence[ReleasedMeasurement],
    delta: float,
    notes: dict[int, str],
    amplified: Sequence[Guarantee | None],
    charges: Sequence[Guarantee],
) -> tuple[Row, ...]:
    """The table: ε and δ as the mechanism claims them (the parameters typed; ``amplified[i]``,
    the plan's i-th guarantee when the sampling claim amplifies it, else None), and the ε its
    release is charged (``charges[i]``, under the ledger's accountant) at the budget's δ, as
    released rows show theirs (the same :func:`planning.guarantee_epsilon_delta`)."""
    rows = []
    pairs = planning.guarantees_epsilon_delta([item.guarantee for item in released], delta)
    for item, (eps, dlt) in zip(released, pairs, strict=True):
        rows.append(
            Row(item.label, item.mechanism, eps, dlt, True, True, eps, note="released (in the ledger)")
        )
    for i, step in enumerate(plan):
        note = notes.get(i, "")
        amplified_guarantee = amplified[i]
        if amplified_guarantee is not None:
            eps, dlt = planning.guarantee_epsilon_delta(amplified_guarantee, delta)
            note = note or "amplified: the file is declared a secret sample"
        else:
            eps, dlt = planning.claimed_epsilon_delta(step)
        charged, _ = planning.guarantee_epsilon_delta(charges[i], delta)
        note = "; ".join(t for t in (note, _release_refusal(step)) if t)
        rows.append(Row(step.label, step.mechanism, eps, dlt, step.held, False, charged, step.target, note))
    return tuple(rows)


def budget_job(request: BudgetRequest) -> BudgetResult:
    """Solve target errors, share the budget if asked, compose under every accountant and
    compute the profiles (everything from :mod:`dpexplorer.core.planning`). A target that cannot
    be met or a budget that cannot be shared becomes a note; the plan is then left as it was."""
    plan, row_notes = _solve_targets(request.plan)
    notes = [f"{plan[i].label}: {text}" for i, text in row_notes.items()]
    pricing = functools.partial(release_charge, sampling_rate=request.sampling_rate)
    released = [item.guarantee for item in request.released]
    if request.share_method is not None and plan:
        try:
            plan = list(
                planning.share_budget(
                    plan,
                    request.budget_epsilon,
                    request.budget_delta,
                    request.share_method,
                    released=released,
                    guarantee_of=pricing,
                )
            )
        except DPExplorerError as exc:
            notes.append(f"Cannot share the budget: {exc}.")
    by_method = planning.guarantees_by_method(plan, pricing)
    everything = {method: released + planned for method, planned in by_method.items()}
    charges = planning.plan_guarantees(plan, method=request.ledger_method, guarantee_of=pricing)
    claimed = planning.plan_guarantees(plan, request.sampling_rate)
    amplified = [g if isinstance(g, Subsampled) else None for g in claimed]
    return BudgetResult(
        request=request,
        plan=tuple(plan),
        rows=_rows(plan, request.released, request.budget_delta, row_notes, amplified, charges),
        report=planning.budget_report(by_method, released, request.budget_epsilon, request.budget_delta),
        profiles=planning.privacy_profiles(everything, PROFILE_DELTAS),
        guarantees=tuple(released + charges),
        notes=tuple(notes),
    )


COMPARE_METHODS = ("basic", "advanced", "zcdp", "pld")
"""The accountants the comparison of two mechanisms over many releases draws (four per
mechanism keep the legend readable; the bars name all six). zCDP is among them because the
exact Gaussian release (discrete Gaussian) is charged its zCDP guarantee under basic, advanced
and zCDP composition, and an (ε, δ) pair under the tight accountant."""


@dataclass(frozen=True)
class Contender:
    """One side of a comparison: a mechanism (registry name) at ``params``, named ``label``."""

    label: str
    mechanism: str
    params: dict[str, Any]
    short: str = ""
    """The mechanism's name alone (the legend's), ``label`` when empty."""

    def __post_init__(self) -> None:
        if not self.short:
            object.__setattr__(self, "short", self.label)


@dataclass(frozen=True, eq=False)
class RepeatsRequest:
    """Two mechanisms on one query, composed over k releases at the budget's delta
    (:func:`repeats_job`); captured on the main thread."""

    current: Contender
    pinned: Contender
    query: QueryInput
    budget_epsilon: float
    budget_delta: float
    sampling_rate: float | None = None


@dataclass(frozen=True, eq=False)
class RepeatsResult:
    """epsilon of k releases of each side under each of :data:`COMPARE_METHODS` (NaN where the
    accountant does not apply), at ``request.budget_delta``."""

    request: RepeatsRequest
    repeats: tuple[int, ...]
    current: dict[str, np.ndarray]
    pinned: dict[str, np.ndarray]


def repeats_job(request: RepeatsRequest) -> RepeatsResult:
    """Price one release of each side as the planner does (:func:`release_charge`: what the
    release would be charged under each accountant, with the steward's sampling claim) and
    compose k of them (:func:`planning.repeated_totals`, upper bounds)."""
    pricing = functools.partial(release_charge, sampling_rate=request.sampling_rate)

    def totals(side: Contender) -> dict[str, np.ndarray]:
        item = PlannedMeasurement(side.label, side.mechanism, side.params, request.query)
        priced = planning.guarantees_by_method([item], pricing, COMPARE_METHODS)
        one = {method: guarantees[0] for method, guarantees in priced.items()}
        return planning.repeated_totals(one, planning.REPEATS, request.budget_delta, COMPARE_METHODS)

    return RepeatsResult(request, planning.REPEATS, totals(request.current), totals(request.pinned))


def released_from_ledger(ledger: object, fingerprint: str) -> tuple[ReleasedMeasurement, ...]:
    """The measurements the ledger (a :class:`dpexplorer.release.ledger.Ledger`) holds for the
    dataset, labelled by their query."""
    out = []
    for m in ledger.measurements(fingerprint):  # type: ignore[attr-defined]
        out.append(ReleasedMeasurement(f"released #{m.id}: {_described(m.query)}", m.mechanism, m.guarantee))
    return tuple(out)


def _described(query: dict) -> str:
    """A ledger row's query in words, as the query panel says it ("the mean of age, clipped to
    [17, 90]"); its fields when the query cannot be rebuilt (an older or foreign row)."""
    from dpexplorer.data.queries import query_from_dict

    try:
        return str(query_from_dict(query).describe())
    except Exception:  # any row the ledger holds must still be listed
        fields = ", ".join(f"{k}={v}" for k, v in query.items() if isinstance(v, str | int | float))
        return fields[:80]
