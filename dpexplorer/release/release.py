"""One release, end to end, shared by the CLI and the GUI's release dialog.

:func:`prepare` validates everything and builds the exact release path without drawing or
charging anything; :func:`execute` then (1) charges the ledger, which refuses with
:class:`~dpexplorer.release.ledger.BudgetExceededError` before any noise exists, (2) draws the
noise from the exact samplers with the OS CSPRNG, (3) writes the files atomically and
(4) records their path in the ledger. :func:`release_one` does both."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import dpexplorer
from dpexplorer.core.accounting.guarantees import (
    ApproxDP,
    GaussianNoise,
    Guarantee,
    LaplaceNoise,
    PureDP,
    Subsampled,
)
from dpexplorer.core.errors import DPExplorerError, InvalidParameterError, NotApplicableError
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import NumericInput, QueryInput, Relation, SelectionInput
from dpexplorer.release.exact import ExactRelease, Value
from dpexplorer.release.export import export_release
from dpexplorer.release.ledger import Budget, Ledger, guarantee_to_dict, total_epsilon
from dpexplorer.release.plans import exact_release
from dpexplorer.release.rational import float_down, float_up
from dpexplorer.release.samplers import BitSource, default_bit_source

ZCDP_INCAPABLE = frozenset({"pld", "optimal"})
"""Accountant methods of ``compose`` that take no zCDP guarantee."""


@dataclass(frozen=True)
class PreparedRelease:
    """A validated release, not yet charged: everything :func:`execute` needs."""

    fingerprint: str
    query: dict[str, Any]
    mechanism: str
    parameters: dict[str, Any]
    relation: Relation
    exact: ExactRelease
    public_facts: dict[str, Any]
    ci_level: float
    sampling_rate: float | None = None
    """The steward's declaration that the data are a secret Poisson sample of a population (each
    person kept with this probability): the ledger is charged the amplified guarantee."""


def with_sampling_rate(prepared: PreparedRelease, rate: float) -> PreparedRelease:
    """``prepared`` under the steward's claim that the data are a secret Poisson sample of rate
    ``rate`` (add/remove neighbours): it is charged ``Subsampled(guarantee, rate)`` (Zhu, Dong &
    Wang 2022; see :mod:`dpexplorer.core.accounting.losses`) and the claim goes to the provenance.
    InvalidParameterError for a rate outside (0, 1], another relation, or a path whose guarantee
    has no amplification here (only Laplace or Gaussian noise and pure epsilon-DP)."""
    if not (isinstance(rate, int | float) and 0 < rate <= 1):
        raise InvalidParameterError(f"sampling rate must satisfy 0 < rate <= 1, got {rate!r}")
    if prepared.relation != "add_remove":
        raise InvalidParameterError("a Poisson sampling rate holds for neighbours that add or remove a row")
    base = prepared.exact.guarantee
    if not isinstance(base, LaplaceNoise | GaussianNoise | PureDP):
        raise InvalidParameterError(
            f"{prepared.mechanism} charges {type(base).__name__}, which has no subsampling amplification "
            "here (Laplace or Gaussian noise and pure epsilon-DP have)"
        )
    return dataclasses.replace(prepared, sampling_rate=float(rate))


@dataclass(frozen=True)
class ReleaseResult:
    """What a release produced. ``values`` are the released (noisy) values, one per label;
    ``confidence_intervals`` hold (low, high) per value at ``ci_level`` (None for selections)."""

    row_id: int
    labels: tuple[str, ...]
    values: tuple[Value, ...]
    confidence_intervals: tuple[tuple[float, float], ...] | None
    ci_level: float
    guarantee: Guarantee
    epsilon: float
    delta: float
    rho: float | None
    sampler: str
    files: dict[str, Path]


def _public_facts(query: QueryInput) -> dict[str, Any]:
    """Facts about the query that are public (declared, not computed from the data)."""
    if isinstance(query, NumericInput):
        return {
            "statistic": query.statistic,
            "sensitivity_l1": query.sensitivity_l1,
            "sensitivity_l2": query.sensitivity_l2,
            "bounds": list(query.bounds) if query.bounds is not None else None,
            "output_range": list(query.output_range) if query.output_range is not None else None,
        }
    if isinstance(query, SelectionInput):
        return {"statistic": query.statistic, "utility_sensitivity": query.sensitivity}
    return {"statistic": "workload of counting queries", "sensitivity": "1/n per query (fractions of n rows)"}


def prepare_input(
    query_input: QueryInput,
    mechanism_name: str,
    params: Mapping[str, Any],
    *,
    fingerprint: str,
    query: Mapping[str, Any],
    relation: Relation = "add_remove",
    ci_level: float = 0.95,
) -> PreparedRelease:
    """Validate a release of ``query_input`` (already built by the data layer). Raises
    InvalidParameterError (unknown mechanism, bad parameter) or NotApplicableError (no exact
    path). Draws and charges nothing."""
    if not 0 < ci_level < 1:
        raise InvalidParameterError(f"confidence level must be in (0, 1); got {ci_level}")
    try:
        mechanism = registry.get(mechanism_name)
    except KeyError as exc:
        raise InvalidParameterError(str(exc.args[0])) from None
    validated = mechanism.validate(params)
    exact = exact_release(mechanism, validated, query_input, ci_level)
    return PreparedRelease(
        fingerprint=fingerprint,
        query=dict(query),
        mechanism=mechanism_name,
        parameters=validated,
        relation=relation,
        exact=exact,
        public_facts=_public_facts(query_input),
        ci_level=ci_level,
    )


def prepare(
    dataset: Any,
    query: Any,
    mechanism_name: str,
    params: Mapping[str, Any],
    *,
    relation: Relation = "add_remove",
    ci_level: float = 0.95,
) -> PreparedRelease:
    """:func:`prepare_input` for a query of the data layer on a loaded dataset."""
    from dpexplorer.data.answers import query_input

    return prepare_input(
        query_input(dataset, query, relation),
        mechanism_name,
        params,
        fingerprint=dataset.fingerprint,
        query=query.to_dict(),
        relation=relation,
        ci_level=ci_level,
    )


def charged_guarantee(prepared: PreparedRelease, ledger: Ledger) -> Guarantee:
    """The guarantee the ledger is charged for ``prepared`` under the dataset's accountant: the
    path's own (e.g. ZCDP for the discrete Gaussian), or, where that accountant cannot compose it
    (``pld`` and ``optimal`` take no zCDP), the path's (epsilon, delta) statement
    (:attr:`ExactRelease.approx`), which is implied by it."""
    exact = prepared.exact
    if prepared.sampling_rate is not None and prepared.sampling_rate < 1:
        return Subsampled(exact.guarantee, prepared.sampling_rate)  # type: ignore[arg-type]
    budget = ledger.budget(prepared.fingerprint)
    if budget is not None and budget.method in ZCDP_INCAPABLE and exact.approx is not None:
        return ApproxDP(*exact.approx)
    return exact.guarantee


@dataclass(frozen=True)
class ReleasePrice:
    """What a prepared release would cost under the dataset's budget (nothing charged).
    Epsilons are exact rational totals rounded outward (spent and cost up, left down);
    ``refusal`` is the message :meth:`Ledger.charge` would raise, or "" if it would pass;
    ``guarantee`` is what would be charged (:func:`charged_guarantee`)."""

    budget: Budget | None
    guarantee: Guarantee
    spent_epsilon: float
    cost_epsilon: float | None
    left_after: float | None
    refusal: str


def price(prepared: PreparedRelease, ledger: Ledger) -> ReleasePrice:
    """Price ``prepared`` against the dataset's budget in ``ledger`` without charging."""
    guarantee = charged_guarantee(prepared, ledger)
    fingerprint = prepared.fingerprint
    budget = ledger.budget(fingerprint)
    if budget is None:
        return ReleasePrice(None, guarantee, 0.0, None, None, "no privacy budget is set for this dataset")
    spent = [m.guarantee for m in ledger.measurements(fingerprint)]
    before = total_epsilon(spent, budget.method, budget.delta)
    try:
        ledger.check(fingerprint, [guarantee])
        refusal = ""
    except DPExplorerError as exc:
        refusal = str(exc)
    try:
        after = total_epsilon([*spent, guarantee], budget.method, budget.delta)
    except NotApplicableError:
        return ReleasePrice(budget, guarantee, float_up(before), None, None, refusal)
    return ReleasePrice(
        budget,
        guarantee,
        float_up(before),
        float_up(after - before),
        float_down(Fraction(budget.epsilon) - after),
        refusal,
    )


def _intervals(exact: ExactRelease, values: list[Value]) -> tuple[tuple[float, float], ...] | None:
    half = exact.ci_halfwidth
    if half is None:
        return None
    return tuple((float(v) - half, float(v) + half) for v in values)


def _sidecar(
    prepared: PreparedRelease, row_id: int, charged: Guarantee, result: dict[str, Any]
) -> dict[str, Any]:
    exact = prepared.exact
    return {
        "mechanism": prepared.mechanism,
        "parameters": prepared.parameters,
        "query": prepared.query,
        "relation": prepared.relation,
        "epsilon": exact.epsilon,
        "delta": exact.delta,
        "rho": exact.rho,
        "guarantee_charged": guarantee_to_dict(charged),
        "sampling_claim": None
        if prepared.sampling_rate is None
        else {
            "poisson_rate": prepared.sampling_rate,
            "claim": "declared by the steward: the data are a secret sample of a population, each "
            "person kept independently with this probability; the amplification holds only if so",
        },
        **prepared.public_facts,
        "confidence_interval": result["ci"],
        "confidence_level": prepared.ci_level if result["ci"] is not None else None,
        "sampler": exact.sampler,
        "randomness": result["bits"],
        "discretisation": exact.provenance,
        "dp_outputs": exact.dp_outputs,
        "software": f"dpexplorer {dpexplorer.__version__}",
        "dataset_fingerprint": prepared.fingerprint,
        "ledger_row_id": row_id,
        "ledger_path": result["ledger"],
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def execute(
    prepared: PreparedRelease,
    *,
    ledger: Ledger,
    out_dir: str | os.PathLike[str],
    bits: BitSource | None = None,
) -> ReleaseResult:
    """Charge, then sample, then write (module docstring). BudgetExceededError / NoBudgetError
    are raised before any noise is drawn."""
    exact = prepared.exact
    charged = charged_guarantee(prepared, ledger)
    row_id = ledger.charge(
        prepared.fingerprint,
        query=prepared.query,
        mechanism=prepared.mechanism,
        parameters=prepared.parameters,
        guarantee=charged,
    )
    source = bits if bits is not None else default_bit_source()
    values = exact.draw(source)
    intervals = _intervals(exact, values)
    sidecar = _sidecar(
        prepared,
        row_id,
        charged,
        {
            "ci": [list(ci) for ci in intervals] if intervals is not None else None,
            "bits": source.name,
            "ledger": str(ledger.path),
        },
    )
    stem = f"release-{row_id:06d}-{prepared.mechanism}"
    files = export_release(out_dir, stem, exact.labels, values, sidecar)
    ledger.mark_released(row_id, files["provenance"])
    return ReleaseResult(
        row_id=row_id,
        labels=exact.labels,
        values=tuple(values),
        confidence_intervals=intervals,
        ci_level=prepared.ci_level,
        guarantee=charged,
        epsilon=exact.epsilon,
        delta=exact.delta,
        rho=exact.rho,
        sampler=exact.sampler,
        files=files,
    )


def release_one(
    dataset: Any,
    query: Any,
    mechanism_name: str,
    params: Mapping[str, Any],
    *,
    ledger: Ledger,
    out_dir: str | os.PathLike[str],
    accountant: str | None = None,
    relation: Relation = "add_remove",
    ci_level: float = 0.95,
    bits: BitSource | None = None,
) -> ReleaseResult:
    """Release one query on ``dataset`` through the exact path of ``mechanism_name``, charged to
    the dataset's budget in ``ledger`` (whose accountant decides; ``accountant``, if given, must
    name the same method), written to ``out_dir``."""
    prepared = prepare(dataset, query, mechanism_name, params, relation=relation, ci_level=ci_level)
    budget = ledger.budget(prepared.fingerprint)
    if accountant is not None and budget is not None and budget.method != accountant:
        raise InvalidParameterError(
            f"the dataset's budget is accounted with {budget.method}, not {accountant}; "
            "change the budget's accountant first"
        )
    return execute(prepared, ledger=ledger, out_dir=out_dir, bits=bits)
