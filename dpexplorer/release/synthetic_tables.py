"""Exact release of MST and AIM, and of the synthetic table they produce.

The DP steps (:mod:`dpexplorer.core.marginals`) draw from the exact samplers here
(:class:`ExactSteps`):

* selection: the exponential mechanism by rejection sampling (uniform proposal accepted with
  Bernoulli(exp(-(u* - u_r) / s)), s = 2 Delta_u / epsilon, CKS 2020 Algorithm 1;
  :func:`~.selection_paths.exponential_pick`): exactly P(r) proportional to
  exp(epsilon u_r / (2 Delta_u)), the scores exact rationals (:func:`~dpexplorer.core.marginals.l1_distance`);
* measurement: the discrete Gaussian on the integer counts (CKS 2020, Algorithm 3,
  vectorised) with variance t p / q >= the sigma^2 the mechanism accounts for, so each
  measurement costs at most Delta_2^2 / (2 sigma^2) (CKS 2020, Theorem 14).

Charged: ZCDP(rho), rho the mechanism's (from the declared epsilon and delta), which the run never
exceeds (exact rational accounting; the module docstrings of mst.py and aim.py). Accountants that
take no zCDP get (epsilon(rho, delta), delta) (:attr:`ExactRelease.approx`). Everything fixed
before the charge (domain, bins, workload, rho, estimator settings) is a public fact; what the
run selects (the marginals, the rounds' budgets) is a DP output (``dp_outputs``).

Two ways out:

* the generic pipeline (:func:`dpexplorer.release.release.execute`, the PATHS entries ``mst`` and
  ``aim``) releases the noisy marginal measurements themselves (one value per cell of each
  measured marginal: the DP output everything else is computed from);
* a :class:`TableRelease` (:func:`prepare_table`), given to
  :func:`~dpexplorer.release.charge.execute` like a statistic, charges the same guarantee, then
  fits the model (Private-PGM or the dense estimator: post-processing) and writes the synthetic
  records as CSV and/or Parquet (``formats``), the measurements as JSON and the provenance
  sidecar. Records are drawn with a numpy generator seeded by 256 bits of the release's bit
  source (the OS CSPRNG in a release); their randomness is post-processing."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from dpexplorer.core.accounting.guarantees import ZCDP, Guarantee
from dpexplorer.core.accounting.single import zcdp_to_epsilon
from dpexplorer.core.errors import InvalidParameterError, NotApplicableError
from dpexplorer.core.marginals import MarginalInput, Transcript, choose_estimator, fitter, synthesise
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import Mechanism
from dpexplorer.core.mechanisms.mst import MarginalMechanism, check_input
from dpexplorer.core.mechanisms.runs import Job
from dpexplorer.core.stages import stage
from dpexplorer.release import samplers
from dpexplorer.release.charge import Charged, check_provenance, execute, provenance
from dpexplorer.release.exact import ExactRelease, Value
from dpexplorer.release.export import release_paths, write_release_files
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.rational import ceil_fraction, floor_log2
from dpexplorer.release.samplers import BitSource, default_bit_source
from dpexplorer.release.selection_paths import exponential_pick, gaps

FORMATS = ("csv", "parquet")
"""The files a synthetic table's records can be written as (a plan entry's ``format``)."""


def table_formats(value: Any) -> tuple[str, ...]:
    """A plan entry's ``format`` (``"csv"``, ``"parquet"`` or a list of them; None: CSV) as the
    tuple of formats to write, in :data:`FORMATS` order; InvalidParameterError otherwise."""
    given = ["csv"] if value is None else [value] if isinstance(value, str) else value
    if not isinstance(given, list | tuple) or not given or not all(f in FORMATS for f in given):
        raise InvalidParameterError(
            f"format must be 'csv', 'parquet' or a list of them, not {str(value)[:40]!r}"
        )
    return tuple(f for f in FORMATS if f in given)


SAMPLER = (
    "exponential mechanism by exact rejection sampling (CKS 2020 Bernoulli(exp(-gamma))) and "
    "discrete Gaussian measurements of the counts (CKS 2020, Algorithm 3)"
)


def discrete_gaussian_parameters(sigma2: Fraction) -> tuple[int, int, int]:
    """(t, p, q) with t p / q >= ``sigma2`` (less than 2^-19 relatively above it), t close to
    sigma: the arguments of :func:`~.samplers.discrete_gaussian_array`."""
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    q = 2 ** max(0, 20 - floor_log2(sigma2 / t))
    return t, ceil_fraction(sigma2 * q / t), q


class ExactSteps:
    """:class:`~dpexplorer.core.marginals.PrivateSteps` from the exact samplers (module docstring)."""

    def __init__(self, bits: BitSource) -> None:
        self.bits = bits

    def select(self, scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction) -> int:
        return exponential_pick(gaps(list(scores), 2 * sensitivity / epsilon), self.bits)

    def measure(self, counts: np.ndarray, sigma2: Fraction) -> np.ndarray:
        t, p, q = discrete_gaussian_parameters(sigma2)
        noise = samplers.discrete_gaussian_array(t, p, q, len(counts), self.bits)
        return np.asarray(counts, dtype=np.int64) + noise


def _checked(mechanism: Mechanism, params: Mapping[str, Any], query: Any) -> MarginalMechanism:
    """The checks that can refuse, from public facts only, before anything is charged."""
    if not isinstance(mechanism, MarginalMechanism) or not isinstance(query, MarginalInput):
        raise NotApplicableError("synthetic data over marginals needs MST or AIM on a marginals query")
    check_input(query)
    choose_estimator(query.sizes, str(params["estimator"]))
    rounds = int(params.get("rounds", 0))
    if rounds and rounds < len(query.columns):
        raise InvalidParameterError(
            f"AIM plans at least one round per column: T must be at least {len(query.columns)}"
        )
    return mechanism


def marginal_release(
    mechanism: Mechanism, params: Mapping[str, Any], query: Any, ci_level: float = 0.95
) -> ExactRelease:
    """The exact path (PATHS ``mst``/``aim``): ``draw`` runs selection and measurement with the
    exact samplers and returns the noisy counts of every measured marginal (labels in
    ``dp_outputs["labels"]``: which marginals were measured is a DP output)."""
    chosen = _checked(mechanism, params, query)
    rho = chosen.rho(params)
    delta = float(params["delta"])
    epsilon = zcdp_to_epsilon(rho, delta)
    facts: dict[str, Any] = {}

    def draw(bits: BitSource) -> list[Value]:
        with stage(f"{chosen.name.upper()}: choosing and measuring the marginals") as report:
            transcript = chosen.steps(params, query, ExactSteps(bits), Job(None, report))
        facts.clear()
        facts.update(transcript.describe(query))
        facts["labels"] = [
            f"{query.name(m.clique)}: {cell}"
            for m in transcript.measurements
            for cell in query.cell_labels(m.clique)
        ]
        return [float(v) for m in transcript.measurements for v in m.values]

    return ExactRelease(
        guarantee=ZCDP(rho),
        epsilon=epsilon,
        delta=delta,
        rho=rho,
        approx=(epsilon, delta),
        sampler=SAMPLER,
        labels=(),
        draw=draw,
        provenance={
            **query.public_domain(),
            "rho": rho,
            "estimator": str(params["estimator"]),
            "estimator_resolved": choose_estimator(query.sizes, str(params["estimator"])),
            "estimation_iterations": int(params["iterations"]),
            "released": "noisy counts of every measured marginal (selected privately)",
        },
        dp_outputs=facts,
    )


# ------------------------------------------------------------------ the synthetic table
@dataclass(frozen=True)
class TableRelease:
    """A synthetic table ready to charge (nothing drawn yet): everything public."""

    fingerprint: str
    query: dict[str, Any]
    mechanism: str
    parameters: dict[str, Any]
    relation: str
    input: MarginalInput
    exact: ExactRelease
    token: str
    run: Mapping[str, Any] | None = None
    """The plan run this release belongs to (as :class:`~.release.PreparedRelease`'s)."""
    sampling_rate: None = None
    """No subsampling amplification is claimed for a synthetic table."""
    legacy: tuple[str, ...] = ()
    formats: tuple[str, ...] = ("csv",)
    """The files the records are written as (:data:`FORMATS`)."""
    origins: Mapping[str, Any] = field(default_factory=dict)
    """Where each public fact comes from (as :class:`~.release.PreparedRelease`'s)."""

    @property
    def public_facts(self) -> dict[str, Any]:
        """As :class:`~.release.PreparedRelease`'s: declared facts only."""
        return {"statistic": "synthetic table", **self.input.public_domain()}

    def check(self, charged: Guarantee, ledger: Ledger) -> None:
        """Before the charge: the provenance can be written as JSON (built with stand-ins)."""
        check_provenance(_sidecar(self, 0, charged, ledger, "", 0))

    def write(self, row: Charged, out_dir: str | os.PathLike[str], bits: BitSource | None) -> TableResult:
        """Run selection and measurement with the exact samplers, fit the model, draw the
        records and write them, the measurements (JSON) and the sidecar of ledger row
        ``row_id`` (:func:`~dpexplorer.release.release.execute`)."""
        return _run_and_write(self, row, out_dir, bits)


@dataclass(frozen=True)
class TableResult:
    """What a synthetic-table release wrote and charged."""

    row_id: int
    rows: int
    guarantee: Guarantee
    rho: float
    epsilon: float
    delta: float
    files: dict[str, Path]
    selected: list[list[str]]

    @property
    def labels(self) -> tuple[str, ...]:
        """What a plan run prints for it (as a statistic's labels and values)."""
        return ("synthetic records", "measured marginals")

    @property
    def values(self) -> tuple[int, int]:
        return (self.rows, len(self.selected))

    confidence_intervals: None = None
    """Counts of what was written, not estimates: no interval (as a selection's)."""
    ci_level: float = 0.95
    interval_kinds: tuple[str, ...] = ()

    def text(self, limit: int = 0) -> str:
        """What was written, as :meth:`~dpexplorer.release.release.ReleaseResult.text` says a
        statistic's values: the number of records and of measured marginals (whole numbers)."""
        from dpexplorer.release.presentation import values_line

        return values_line(self.labels, self.values, None, self.ci_level, integral=(True, True), limit=limit)


def prepare_table(
    query_input: MarginalInput,
    mechanism_name: str,
    params: Mapping[str, Any],
    *,
    fingerprint: str,
    query: Mapping[str, Any],
    relation: str = "add_remove",
    formats: Any = None,
) -> TableRelease:
    """Validate a synthetic-table release; draws and charges nothing (InvalidParameterError,
    NotApplicableError on refusal, decided from public facts). ``formats``: the records' files
    (:func:`table_formats`; default CSV)."""
    from dpexplorer.release.export import new_token

    try:
        mechanism = registry.get(mechanism_name)
    except KeyError as exc:
        raise InvalidParameterError(str(exc.args[0])) from None
    if not isinstance(mechanism, MarginalMechanism):
        raise InvalidParameterError(f"a synthetic table is made by mst or aim, not {mechanism_name}")
    chosen = table_formats(formats)
    validated = mechanism.validate(params)
    exact = marginal_release(mechanism, validated, query_input)
    return TableRelease(
        fingerprint,
        dict(query),
        mechanism_name,
        validated,
        relation,
        query_input,
        exact,
        new_token(),
        formats=chosen,
    )


def estimator_settings(query: MarginalInput, mechanism: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """How the model is fitted and the records drawn (post-processing; public: fixed before the
    charge from declared settings and the public domain)."""
    from dpexplorer.core.mechanisms.aim import ROUND_ITERATIONS

    requested = str(params["estimator"])
    resolved = choose_estimator(query.sizes, requested)
    declared = int(params["iterations"])
    settings: dict[str, Any] = {
        "requested": requested,
        "resolved": resolved,
        "iterations": declared,
        "method": "entropic mirror descent on the full table, each marginal weighted by 1 / sigma^2 "
        "(dpexplorer.core.marginals.fit_dense)"
        if resolved == "dense"
        else "Private-PGM mirror descent (mbi.estimation.MirrorDescent) on JAX, CPU",
        "rows": int(params.get("rows", 0)),
        "rows_rule": "the declared number of records"
        if int(params.get("rows", 0)) > 0
        else "the model's estimated total, rounded (inverse-variance weighted mean of the measured "
        "marginals' sums: a DP output)",
    }
    if resolved != "dense":
        from importlib.metadata import PackageNotFoundError, version

        with contextlib.suppress(PackageNotFoundError):
            settings["library"] = f"mbi {version('mbi')}"
    if mechanism == "aim":
        settings["in_loop_iterations"] = min(declared, max(ROUND_ITERATIONS, declared // 5))
        settings["in_loop_note"] = (
            "the fit after each round steers the next selection (post-processing), warm-started; "
            "the final model gets every declared iteration"
        )
    return settings


def seed_policy(unit: Any, bits: str) -> dict[str, str]:
    """Where each random choice of the release comes from (the provenance's ``seed_policy``);
    ``unit`` the query's privacy unit (``{"column", "max_rows"}``) or None."""
    column = unit.get("column") if isinstance(unit, Mapping) else None
    return {
        "selection_and_measurement": f"the release's bit source ({bits or 'the OS CSPRNG'}) through "
        "the exact samplers; never seeded in a release",
        "records": "numpy PCG64 seeded with 256 bits drawn from that bit source after the DP steps "
        "(post-processing); the seed is not recorded",
        "privacy_unit": f"the rows kept of each person (same {column}; at most {unit.get('max_rows', 1)}) "
        "chosen at random with a seed from the OS CSPRNG, before counting"
        if column
        else "no privacy-unit column: one row is one person",
        "exploration": "the window's exploration uses seeded generators; nothing it draws is released",
    }


def _sidecar(
    prepared: TableRelease, row_id: int, charged: Guarantee, ledger: Ledger, bits: str, rows: int | None
) -> dict[str, Any]:
    exact = prepared.exact
    body = {
        "statistic": "synthetic table over marginals",
        "sampler": exact.sampler,
        "randomness": bits,
        "records_randomness": "numpy PCG64 seeded with 256 bits of the release's bit source "
        "(post-processing)",
        "seed_policy": seed_policy(prepared.query.get("unit"), bits),
        "estimator_settings": estimator_settings(prepared.input, prepared.mechanism, prepared.parameters),
        "discretisation": exact.provenance,
        "dp_outputs": {**exact.dp_outputs, "synthetic_rows": rows},
        "post_processing": {
            "declared": None,
            "applied": "none to the measurements: the JSON holds the noisy counts as drawn (negatives "
            "kept, as the model is fitted to them); the records are drawn from that model",
        },
        "run": dict(prepared.run) if prepared.run is not None else None,
    }
    dataset_id = ledger.public_id(prepared.fingerprint) if row_id else "0" * 16  # 0: the trial
    return provenance(prepared, charged, row_id, (str(ledger.path), dataset_id), body)


def _run_and_write(
    prepared: TableRelease, row: Charged, out_dir: str | os.PathLike[str], bits: BitSource | None
) -> TableResult:
    ledger, row_id, charged = row.ledger, row.row_id, row.guarantee
    import polars as pl

    source = bits if bits is not None else default_bit_source()
    query, params = prepared.input, prepared.parameters
    mechanism = _checked(registry.get(prepared.mechanism), params, query)
    with stage(f"{mechanism.name.upper()}: choosing and measuring the marginals") as report:
        transcript: Transcript = mechanism.steps(params, query, ExactSteps(source), Job(None, report))
    prepared.exact.dp_outputs.clear()
    prepared.exact.dp_outputs.update(transcript.describe(query))
    prepared.exact.dp_outputs["selected"] = [  # chosen by the exponential mechanism
        [query.columns[i] for i in r.clique] for r in transcript.rounds
    ]
    seed = int.from_bytes(np.asarray(source.words(4), dtype=np.uint64).tobytes(), "little")
    rng = np.random.Generator(np.random.PCG64(seed))
    fit = fitter(query, str(params["estimator"]), int(params["iterations"]))
    with stage(f"{mechanism.name.upper()}: fitting the model and drawing the records", measured=False):
        result = synthesise(query, transcript, fit, int(params["rows"]), rng)
    table = pl.DataFrame(result.table(query))
    records: dict[str, str | bytes] = {}
    if "csv" in prepared.formats:
        buffer = io.StringIO()
        table.write_csv(buffer)
        records["csv"] = buffer.getvalue()
    if "parquet" in prepared.formats:
        binary = io.BytesIO()
        table.write_parquet(binary)
        records["parquet"] = binary.getvalue()
    sidecar = _sidecar(prepared, row_id, charged, ledger, source.name, len(result.records))
    measurements = {
        "measurements": [
            {
                "marginal": [query.columns[i] for i in m.clique],
                "cells": query.cell_labels(m.clique),
                "noisy_counts": [float(v) for v in m.values],
                "noise_variance": float(m.sigma2),
            }
            for m in transcript.measurements
        ]
    }
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"release-{row_id:06d}-{prepared.token}-{prepared.mechanism}-synthetic"
    paths = {
        kind: path
        for kind, path in {**release_paths(directory, stem), "parquet": directory / f"{stem}.parquet"}.items()
        if kind in records or kind in ("json", "provenance")
    }
    sidecar["files"] = {k: p.name for k, p in paths.items() if k != "provenance"}
    texts: dict[str, str | bytes] = {  # the sidecar last: then it is complete
        **records,
        "json": json.dumps(measurements, indent=2, allow_nan=False) + "\n",
        "provenance": json.dumps(sidecar, indent=2, sort_keys=True, allow_nan=False) + "\n",
    }
    write_release_files(directory, stem, paths, texts)
    return TableResult(
        row_id=row_id,
        rows=len(result.records),
        guarantee=charged,
        rho=float(prepared.exact.rho or 0.0),
        epsilon=prepared.exact.epsilon,
        delta=prepared.exact.delta,
        files=paths,
        selected=[[query.columns[i] for i in m.clique] for m in transcript.measurements],
    )


def prepare_synthetic(
    dataset: Any,
    query: Any,
    mechanism_name: str,
    params: Mapping[str, Any],
    *,
    key: str,
    relation: str = "add_remove",
    formats: Any = None,
    bounding_seed: int | None = None,
) -> TableRelease:
    """A synthetic-table release of ``dataset`` for the marginals ``query``
    (:class:`~dpexplorer.data.marginals.Marginals`), filed under the ledger ``key``, its records
    written as ``formats`` (:func:`table_formats`); nothing drawn or charged. The marginals
    are counted now (the privacy unit's rows chosen with a seed from the OS CSPRNG, or with
    ``bounding_seed``: the replay audit's); every refusal depends on public facts only."""
    from dpexplorer.data.marginals import marginal_input
    from dpexplorer.data.queries import Marginals

    if not isinstance(query, Marginals):
        raise InvalidParameterError("a synthetic table needs a marginals query (type 'marginals')")
    built = marginal_input(dataset, query, relation, bounding_seed=bounding_seed)  # type: ignore[arg-type]
    return prepare_table(
        built,
        mechanism_name,
        params,
        fingerprint=key,
        query=query.to_dict(),
        relation=relation,
        formats=formats,
    )


def release_synthetic(
    dataset: Any,
    query: Any,
    mechanism_name: str,
    params: Mapping[str, Any],
    *,
    ledger: Ledger,
    out_dir: str | os.PathLike[str],
    relation: str = "add_remove",
    bits: BitSource | None = None,
    dataset_name: str | None = None,
    formats: Any = None,
) -> TableResult:
    """:func:`prepare_synthetic` and :func:`~dpexplorer.release.charge.execute`: charged to the
    dataset's budget in ``ledger`` (its content fingerprint, or ``dataset_name``) before anything
    is drawn."""
    from dpexplorer.release.release import dataset_key

    key = dataset_key(dataset, ledger, dataset_name)
    prepared = prepare_synthetic(
        dataset, query, mechanism_name, params, key=key, relation=relation, formats=formats
    )
    return execute(prepared, ledger=ledger, out_dir=out_dir, bits=bits)
