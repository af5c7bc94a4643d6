"""One release, end to end, shared by the CLI and the GUI's release dialog.

:func:`prepare` validates everything and builds the exact release path without drawing or
charging anything; :func:`execute` then (1) charges the ledger, which refuses with
:class:`~dpexplorer.release.ledger.BudgetExceededError` before any noise exists, (2) draws the
noise from the exact samplers with the OS CSPRNG, (3) writes the files atomically and
(4) records their path in the ledger. :func:`release_one` does both.

All or nothing: :func:`prepare` checks everything that can be checked without the noise (the
parameters, an exact path, finite numbers within the samplers' reach) and :func:`execute`
checks the output directory before charging. If anything fails after the charge (including
Ctrl+C), the ledger row is marked ``failed`` with the reason, any file written is removed, and
:class:`~dpexplorer.release.charge.ReleaseFailedError` says what was charged for nothing. ⊥
("no answer", a valid DP
output of PTR and the distance tests) is released like any value, with no interval."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpexplorer.core.accounting.guarantees import (
    GaussianNoise,
    Guarantee,
    LaplaceNoise,
    PureDP,
)
from dpexplorer.core.errors import DPExplorerError, InvalidParameterError, NotApplicableError
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import NumericInput, QueryInput, Relation, SelectionInput
from dpexplorer.release.charge import (
    Charged,
    charged_for,
    charged_guarantee,
    check_provenance,
    filed,
    provenance,
)
from dpexplorer.release.charge import execute as execute
from dpexplorer.release.exact import ExactRelease, Value
from dpexplorer.release.export import (
    Table,
    export_release,
    new_token,
    value_rows,
)
from dpexplorer.release.ledger import Budget, Ledger, total_epsilon
from dpexplorer.release.plans import exact_release
from dpexplorer.release.published import Drawn, Published, declared, integral_flags, publish
from dpexplorer.release.rational import float_down, float_up
from dpexplorer.release.samplers import BitSource, default_bit_source


@dataclass(frozen=True)
class PreparedRelease:
    """A validated release, not yet charged: everything :func:`execute` needs. ``token`` is the
    random part of its file names, drawn here so that the output directory can be checked for a
    clash before the charge."""

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
    token: str = ""
    legacy: tuple[str, ...] = ()
    """Keys older ledgers kept this dataset under (the file's SHA-256), not yet moved to
    ``fingerprint`` in a ledger: :func:`price` and :func:`execute` move them
    (:meth:`Ledger.identify`) in whatever ledger they are given, so a caller that prepares
    without a ledger cannot skip the migration."""
    run: Mapping[str, Any] | None = None
    """Which run (a CLI plan) the release belongs to, as written to its provenance under
    ``run``: ``token`` (the run's files' random part), ``entry``/``entries`` (its place in the
    plan), ``dataset`` (the name a report shows). :mod:`dpexplorer.release.report_run` rebuilds
    a run's report from it."""
    post_processing: Mapping[str, Any] = field(default_factory=lambda: declared(None))
    """The steward's declared post-processing (:mod:`dpexplorer.release.published`), every option
    given: fixed before the charge, applied after the draw, recorded in the provenance."""
    total: tuple[float, Callable[[float], float]] | None = None
    """For ``total_from_entry``: the released total of the plan entry it names and that entry's
    half-width at any level, set once that entry is released
    (:func:`dpexplorer.release.plan_run.with_released_total`)."""
    origins: Mapping[str, Any] = field(default_factory=dict)
    """Where each public fact comes from, as the provenance records it (``fact_origins``,
    ``codebook``: :mod:`dpexplorer.release.public_facts`); empty when no one said (a release
    made outside a plan)."""

    def check(self, charged: Guarantee, ledger: Ledger) -> None:
        """Before the charge: the provenance can be written as JSON (finite numbers only; built
        with a stand-in row id and interval) and a declared total is known."""
        trial = {"ci": [[0.0, 0.0]], "bits": "", "ledger": str(ledger.path), "dataset_id": "0" * 16}
        check_provenance(_sidecar(self, 0, charged, trial))
        _consistent_with(self)

    def write(self, row: Charged, out_dir: str | os.PathLike[str], bits: BitSource | None) -> ReleaseResult:
        """Draw the noise and write the files of ledger row ``row`` (:func:`execute`)."""
        return _draw_and_write(self, row, out_dir, bits)


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
    ``confidence_intervals`` hold the published (low, high) per value at ``ci_level`` (None for
    selections; None in place of a value that is not a number, such as ⊥ or an empty group), after
    the declared post-processing, of the kind ``interval_kinds`` says ("noise", "exact" or
    "range": :mod:`dpexplorer.release.published`); ``rank_within`` a quantile's rank interval
    (rows, or None)."""

    row_id: int
    labels: tuple[str, ...]
    values: tuple[Value, ...]
    confidence_intervals: tuple[tuple[float, float] | None, ...] | None
    ci_level: float
    guarantee: Guarantee
    epsilon: float
    delta: float
    rho: float | None
    sampler: str
    files: dict[str, Path]
    interval_kinds: tuple[str | None, ...] = ()
    rank_within: int | None = None
    integral: tuple[bool, ...] = ()
    """Which values are counts of rows (shown as whole numbers)."""

    def text(self, limit: int = 0) -> str:
        """The released values as a person reads them: each rounded to the digits its interval
        supports, with that interval and the level (one rule for every reader:
        :func:`dpexplorer.release.presentation.values_line`); at most ``limit`` values when
        ``limit`` > 0. The fields keep full precision."""
        from dpexplorer.release.presentation import values_line

        return values_line(
            self.labels,
            self.values,
            self.confidence_intervals,
            self.ci_level,
            kinds=self.interval_kinds,
            integral=self.integral,
            limit=limit,
        )


def _span(pair: tuple[float, float] | None) -> list[float | None] | None:
    """A (low, high) pair for JSON: an infinite end (unbounded) as null."""
    return None if pair is None else [float(v) if math.isfinite(v) else None for v in pair]


def _public_facts(query: QueryInput) -> dict[str, Any]:
    """Facts about the query that are public (declared, not computed from the data)."""
    if isinstance(query, NumericInput):
        return {
            "statistic": query.statistic,
            "sensitivity_l1": query.sensitivity_l1,
            "sensitivity_l2": query.sensitivity_l2,
            "bounds": _span(query.bounds),
            "output_range": _span(query.output_range),
        }
    if isinstance(query, SelectionInput):
        return {"statistic": query.statistic, "utility_sensitivity": query.sensitivity}
    if getattr(query, "statistic", None) == "marginals":  # MST/AIM: one marginal's counts
        return {
            "statistic": "marginals (synthetic data)",
            "sensitivity_l1": getattr(query, "sensitivity_l1", None),
            "sensitivity_l2_squared": getattr(query, "sensitivity_l2_squared", None),
        }
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
    post_processing: Mapping[str, Any] | None = None,
) -> PreparedRelease:
    """Validate a release of ``query_input`` (already built by the data layer). Raises
    InvalidParameterError (unknown mechanism, bad parameter, unknown post-processing option) or
    NotApplicableError (no exact path). Draws and charges nothing."""
    options = declared(post_processing)
    if not 0 < ci_level < 1:
        raise InvalidParameterError(f"confidence level must be in (0, 1); got {ci_level}")
    try:
        mechanism = registry.get(mechanism_name)
    except KeyError as exc:
        raise InvalidParameterError(str(exc.args[0])) from None
    validated = mechanism.validate(params)
    try:
        exact = exact_release(mechanism, validated, query_input, ci_level)
    except (ArithmeticError, ValueError) as exc:
        if isinstance(exc, DPExplorerError):
            raise
        # e.g. epsilon 1e-300 or bounds of 1e308: a noise scale or grid no exact sampler reaches
        raise InvalidParameterError(
            f"{mechanism.label} cannot be released exactly at these parameters and bounds "
            f"({type(exc).__name__}: {exc}); choose a larger epsilon or narrower bounds"
        ) from None
    _check_finite(exact)
    if options["total_from_entry"] is not None and (
        exact.ci_at is None or exact.key_columns or _public_facts(query_input).get("statistic") != "histogram"
    ):
        raise InvalidParameterError(
            "total_from_entry applies to a histogram released with laplace or gaussian (not by group)"
        )
    return PreparedRelease(
        fingerprint=fingerprint,
        query=dict(query),
        mechanism=mechanism_name,
        parameters=validated,
        relation=relation,
        exact=exact,
        public_facts=_public_facts(query_input),
        ci_level=ci_level,
        token=new_token(),
        post_processing=options,
    )


def _check_finite(exact: ExactRelease) -> None:
    """InvalidParameterError unless every number the release would publish about itself is
    finite (JSON has no infinity; an infinite interval or epsilon says nothing)."""
    numbers = {
        "epsilon": exact.epsilon,
        "delta": exact.delta,
        "rho": exact.rho,
        "interval": exact.ci_halfwidth,
    }
    for name, value in numbers.items():
        if value is not None and not math.isfinite(value):
            raise InvalidParameterError(
                f"the release's {name} would be {value}: choose a larger epsilon or narrower bounds"
            )


def prepare(
    dataset: Any,
    query: Any,
    mechanism_name: str,
    params: Mapping[str, Any],
    *,
    relation: Relation = "add_remove",
    ci_level: float = 0.95,
    ledger: Ledger | None = None,
    dataset_name: str | None = None,
    post_processing: Mapping[str, bool] | None = None,
    key: str | None = None,
    bounding_seed: int | None = None,
) -> PreparedRelease:
    """:func:`prepare_input` for a query of the data layer on a loaded dataset. With ``ledger``,
    the release is filed under the dataset's key there (:func:`dataset_key`); with ``key``, under
    that key, already found in the ledger it will be charged to (a plan identifies its dataset
    once); without either, under its content fingerprint, the file's SHA-256 kept as a legacy key.
    ``bounding_seed``: the privacy unit's random choice of rows (None, every release: drawn from
    the OS CSPRNG; the replay audit passes one, to bound D and D' alike)."""
    from dpexplorer.data.answers import query_input

    if key is not None:
        fingerprint = key
    else:
        fingerprint = dataset_key(dataset, ledger, dataset_name) if ledger is not None else _identity(dataset)
    prepared = prepare_input(
        query_input(dataset, query, relation, bounding_seed=bounding_seed, exact_sums=True),
        mechanism_name,
        params,
        fingerprint=fingerprint,
        query=query.to_dict(),
        relation=relation,
        ci_level=ci_level,
        post_processing=post_processing,
    )
    if key is not None or ledger is not None or dataset.fingerprint == fingerprint:
        return prepared  # already filed (dataset_key moved the legacy key), or nothing to move
    return dataclasses.replace(prepared, legacy=(dataset.fingerprint, *earlier_keys(dataset)))


def dataset_key(dataset: Any, ledger: Ledger, name: str | None = None) -> str:
    """The ledger key of ``dataset``: its content fingerprint (or ``name``), with what older
    ledgers kept under the file's SHA-256 or the content-v1 key moved there
    (:meth:`Ledger.identify`). Those older keys are computed only while the ledger holds keys of
    an older scheme not yet looked for this dataset (:meth:`Ledger.legacy_pending`): once per
    dataset and ledger, and never in a ledger that has none. So is the content key the file had
    when fewer spellings of a missing value were read as missing (:func:`earlier_keys`), while
    the ledger holds keys of the same scheme not yet looked through for this dataset. Its column
    fingerprints are kept beside the key (:func:`~dpexplorer.release.same_people.record_columns`:
    once per key)."""
    from dpexplorer.release.same_people import record_columns

    fingerprint = _identity(dataset)
    legacy = legacy_keys(dataset) if ledger.legacy_pending(fingerprint) else []
    if ledger.legacy_pending(fingerprint, len(fingerprint)):
        legacy += earlier_keys(dataset)
    key = ledger.identify(fingerprint, legacy=legacy, name=name, checked=True)
    record_columns(dataset, ledger, key)  # its columns beside it, to find these people elsewhere
    return key


def earlier_keys(dataset: Any) -> list[str]:
    """The content keys ``dataset`` had under earlier readings of its file, where they differ:
    when only an empty field and ``NA`` were read as missing (its file spells a missing value
    otherwise: ``null``, ``N/A``, ...), and under the type rules before issue 41 (numbers
    inferred in a Parquet file's text, ISO days only); each loaded again that way
    (:meth:`dpexplorer.data.load.Dataset.earlier_content_fingerprints`); else none."""
    earlier = getattr(dataset, "earlier_content_fingerprints", None)
    return list(earlier()) if callable(earlier) else []


def legacy_keys(dataset: Any) -> list[str]:
    """The keys older ledgers may keep ``dataset`` under: the file's SHA-256 and, for a dataset
    read by polars, its content-v1 key (about 4 s per million rows)."""
    from dpexplorer.data.load import Dataset, content_fingerprint_v1

    keys = [dataset.fingerprint]
    if isinstance(dataset, Dataset):
        keys.append(content_fingerprint_v1(dataset.read_before().frame))  # as content-v1 read it
    return keys


def _identity(dataset: Any) -> str:
    """The dataset's content fingerprint (polars and Spark give the same for the same data);
    the file's for a reference that has none."""
    return str(getattr(dataset, "content_fingerprint", None) or dataset.fingerprint)


def planned_charge(
    mechanism_name: str, params: Mapping[str, Any], query_input: QueryInput, method: str | None
) -> Guarantee:
    """The guarantee a release of ``query_input`` with ``mechanism_name`` at ``params`` would be
    charged under the accountant ``method``, before anything is prepared for real: the same
    :func:`prepare_input` (validation and the exact path, which may round a noise scale and so
    guarantee a little more or less than the mechanism's claim, e.g. the discrete Gaussian's zCDP
    against the continuous Gaussian's (epsilon, delta)) and the same :func:`charged_for` as
    :func:`execute`. Raises what :func:`prepare_input` raises (no exact path, bad parameters).
    The exact path is kept per (mechanism, parameters, query) for the planner's redraws."""
    try:
        key = tuple(sorted(params.items()))
        hash(key)
    except TypeError:  # a parameter that is not a plain value: build without the cache
        return charged_for(_exact_of(mechanism_name, params, query_input), method)
    return charged_for(_cached_exact(mechanism_name, key, query_input), method)


def _exact_of(mechanism_name: str, params: Mapping[str, Any], query_input: QueryInput) -> ExactRelease:
    return prepare_input(query_input, mechanism_name, params, fingerprint="", query={}).exact


@functools.lru_cache(maxsize=64)
def _cached_exact(
    mechanism_name: str, params: tuple[tuple[str, Any], ...], query_input: QueryInput
) -> ExactRelease:
    return _exact_of(mechanism_name, dict(params), query_input)


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
    """Price ``prepared`` against the dataset's budget in ``ledger`` without charging (legacy
    keys moved first: :func:`filed`)."""
    prepared = filed(prepared, ledger)
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


def _intervals(exact: ExactRelease, values: list[Value]) -> tuple[tuple[float, float] | None, ...] | None:
    """The noise law's fixed-width (low, high) per value; None for a value that is not a number
    (⊥ has no interval), or for a path without a fixed width."""
    half = exact.ci_halfwidth
    if half is None:
        return None
    return tuple((v - half, v + half) if isinstance(v, float) else None for v in values)


def published_values(prepared: PreparedRelease, labels: tuple[str, ...], values: list[Value]) -> Published:
    """What a release publishes for the drawn ``values``: every value's interval and the declared
    post-processing applied (:func:`dpexplorer.release.published.publish`); public facts and DP
    outputs only."""
    exact = prepared.exact
    noise = _intervals(exact, values)
    return publish(
        Drawn(
            prepared.mechanism,
            prepared.public_facts,
            exact.provenance,
            exact.dp_outputs,
            labels,
            values,
            noise,
        ),
        options=prepared.post_processing,
        groups=len(exact.released_groups()) if exact.key_columns else 0,
        level=prepared.ci_level,
        consistent=_consistent_with(prepared),
    )


def _consistent_with(
    prepared: PreparedRelease,
) -> tuple[float, Callable[[float], float], Callable[[float], float]] | None:
    """(total, its half-width at a level, the bins' half-width at a level) for a histogram made
    consistent with a released total; None otherwise. A declared total that was never set (the
    release run outside a plan) is an error, raised before the charge by :func:`execute`."""
    if prepared.post_processing.get("total_from_entry") is None:
        return None
    if prepared.total is None or prepared.exact.ci_at is None:
        raise InvalidParameterError("total_from_entry needs the plan's released total (release the plan)")
    return prepared.total[0], prepared.total[1], prepared.exact.ci_at


def _sidecar(
    prepared: PreparedRelease, row_id: int, charged: Guarantee, result: dict[str, Any]
) -> dict[str, Any]:
    exact = prepared.exact
    body = {
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
        "interval_kinds": result.get("kinds"),
        "rank_interval": None
        if result.get("rank") is None
        else {
            "rows_within": result["rank"],
            "level": prepared.ci_level,
            "statement": "with probability at least the level, the number of rows below the "
            "released value differs from q n by at most this many rows more than at the best "
            "candidate of the declared grid (the exponential mechanism's accuracy); a value "
            "interval would need the data, so confidence_interval is the declared range",
        },
        "post_processing": {
            "declared": dict(prepared.post_processing),
            "applied": result.get("applied"),
            "values_before": result.get("before"),
            **({} if prepared.total is None else {"released_total": prepared.total[0]}),
        },
        "sampler": exact.sampler,
        "randomness": result["bits"],
        "discretisation": exact.provenance,
        "dp_outputs": exact.dp_outputs,
    }
    run = {"run": dict(prepared.run)} if prepared.run else {}
    ledger = (result["ledger"], result["dataset_id"])
    return {**provenance(prepared, charged, row_id, ledger, body), **run}


def _table(prepared: PreparedRelease, labels: tuple[str, ...], published: Published) -> Table:
    """The release's CSV in the one shape (:func:`~dpexplorer.release.export.value_rows`): a
    statistic by group with its key columns first, one row per released value."""
    exact = prepared.exact
    integral = integral_flags(str(prepared.public_facts.get("statistic", "")), labels)
    grouped = bool(exact.key_columns)
    return value_rows(
        labels,
        published.values,
        published.intervals,
        published.kinds,
        level=prepared.ci_level,
        integral=integral,
        key_columns=exact.key_columns if grouped else (),
        groups=exact.released_groups() if grouped else (),
        part=str(prepared.query.get("statistic", "value")),
        rank_within=published.rank_within,
    )


def _draw_and_write(
    prepared: PreparedRelease, row: Charged, out_dir: str | os.PathLike[str], bits: BitSource | None
) -> ReleaseResult:
    """Draw the noise and write the files (removed again on failure, by the exporter)."""
    ledger, row_id, charged = row.ledger, row.row_id, row.guarantee
    exact = prepared.exact
    source = bits if bits is not None else default_bit_source()
    values = exact.draw(source)
    labels = exact.released_labels()  # private keys: the kept groups, a DP output of the draw
    published = published_values(prepared, labels, values)
    intervals = published.intervals if any(ci is not None for ci in published.intervals) else None
    sidecar = _sidecar(
        prepared,
        row_id,
        charged,
        {
            "ci": [list(ci) if ci is not None else None for ci in intervals]
            if intervals is not None
            else None,
            "kinds": list(published.kinds) if intervals is not None else None,
            "rank": published.rank_within,
            "before": list(values) if published.changed else None,
            "applied": dict(published.applied),
            "bits": source.name,
            "ledger": str(ledger.path),
            "dataset_id": ledger.public_id(prepared.fingerprint),
        },
    )
    stem = f"release-{row_id:06d}-{prepared.token or new_token()}-{prepared.mechanism}"
    files = export_release(
        out_dir,
        stem,
        labels,
        published.values,
        sidecar,
        _table(prepared, labels, published),
        intervals,
    )
    return ReleaseResult(
        row_id=row_id,
        labels=labels,
        values=published.values,
        confidence_intervals=intervals,
        interval_kinds=published.kinds if intervals is not None else (),
        rank_within=published.rank_within,
        ci_level=prepared.ci_level,
        guarantee=charged,
        epsilon=exact.epsilon,
        delta=exact.delta,
        rho=exact.rho,
        sampler=exact.sampler,
        files=files,
        integral=integral_flags(str(prepared.public_facts.get("statistic", "")), labels),
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
    prepared = prepare(
        dataset, query, mechanism_name, params, relation=relation, ci_level=ci_level, ledger=ledger
    )
    budget = ledger.budget(prepared.fingerprint)
    if accountant is not None and budget is not None and budget.method != accountant:
        raise InvalidParameterError(
            f"the dataset's budget is accounted with {budget.method}, not {accountant}; "
            "change the budget's accountant first"
        )
    return execute(prepared, ledger=ledger, out_dir=out_dir, bits=bits)
