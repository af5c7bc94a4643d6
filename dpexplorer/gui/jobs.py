"""The functions the window submits to the compute service. Each calls the core (or data
layer) and bundles what one view draws; none does privacy math of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    CategoricalOutput,
    Mechanism,
    NumericInput,
    NumericOutput,
    OutputDistribution,
    QueryInput,
    SelectionInput,
)

DRAWS = 100_000


@dataclass(frozen=True, eq=False)
class NeighboursResult:
    """What the neighbouring-datasets view draws."""

    mechanism: str
    output: OutputDistribution
    epsilon: float
    delta_claim: float
    delta_exact: float | None
    differing_row: str
    params: dict[str, Any]
    true_d: float | None = None
    true_d_prime: float | None = None
    """f(D) and f(D') in the grid's coordinates (:meth:`NumericOutput.to_grid`)."""
    delta_note: str = ""
    """Why there is no exact delta (the mechanism has no exact privacy profile), if so."""


@dataclass(frozen=True, eq=False)
class DrawsResult:
    draws_d: np.ndarray
    draws_d_prime: np.ndarray
    size: int


@dataclass(frozen=True, eq=False)
class AccuracyResult:
    mechanism: str
    report: AccuracyReport
    epsilon: float
    params: dict[str, Any]


def neighbours(mechanism: Mechanism, params: dict[str, Any], query: QueryInput) -> NeighboursResult:
    """Output distributions of M(D), M(D') and the exact delta at the claimed epsilon."""
    epsilon, delta_claim = mechanism.epsilon_delta(params, query)
    output = mechanism.output_distribution(params, query)
    true_d = true_d_prime = None
    if isinstance(query, NumericInput) and isinstance(output, NumericOutput):
        true_d = float(output.to_grid(np.atleast_1d(query.value_d)[output.coordinate]))
        true_d_prime = float(output.to_grid(np.atleast_1d(query.value_d_prime)[output.coordinate]))
    try:
        delta_exact: float | None
        if isinstance(output, CategoricalOutput):  # same exact sum, without recomputing the pmfs
            from dpexplorer.core.accuracy import discrete_hockey_stick  # scipy: off the start-up path

            pair = (output.pmf_d, output.pmf_d_prime)
            delta_exact = float(discrete_hockey_stick(*pair, np.array([epsilon]))[0])
        else:
            delta_exact = mechanism.delta_at(params, query, epsilon)
        delta_note = ""
    except NotApplicableError as exc:
        delta_exact, delta_note = None, str(exc)
    return NeighboursResult(
        mechanism=mechanism.label,
        output=output,
        epsilon=epsilon,
        delta_claim=delta_claim,
        delta_exact=delta_exact,
        delta_note=delta_note,
        differing_row=getattr(query, "differing_row", ""),
        params=dict(params),
        true_d=true_d,
        true_d_prime=true_d_prime,
    )


def draws(
    mechanism: Mechanism,
    params: dict[str, Any],
    query: QueryInput,
    seed: int,
    on: Literal["D", "D'"],
    size: int = DRAWS,
) -> np.ndarray:
    """``size`` simulated outputs on D or on D' (exploration RNG, never used for release). The
    two sides are separate jobs so that the two workers draw them at once (numpy releases the
    GIL); each side has its own stream, seeded by (seed, side)."""
    rng = np.random.default_rng([seed, 0 if on == "D" else 1])
    return mechanism.simulate(params, query, rng, size, on=on)


def accuracy(
    mechanism: Mechanism, params: dict[str, Any], query: QueryInput, ci_level: float
) -> AccuracyResult:
    epsilon, _ = mechanism.epsilon_delta(params, query)
    return AccuracyResult(
        mechanism=mechanism.label,
        report=mechanism.accuracy(params, query, ci_level=ci_level),
        epsilon=epsilon,
        params=dict(params),
    )


@dataclass(frozen=True, eq=False)
class LoadedDataset:
    """A dataset with the steward's prefill: each numeric column's range and each other
    column's most common values (NON-PRIVATE: for the steward's own eyes only)."""

    dataset: Any
    ranges: dict[str, tuple[float, float]]
    top_values: dict[str, list[str]]


def peek_dataset(path: str, share: float | None = None) -> Any:
    """Schema and first rows of ``path`` (dpexplorer.data.engine.scan.peek): shown at once,
    while :func:`load_dataset` scans the whole file."""
    from dpexplorer.data.engine.scan import LAZY_SHARE, peek

    return peek(path, share=LAZY_SHARE if share is None else share)


def load_dataset(
    path: str,
    top: int = 16,
    share: float | None = None,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> LoadedDataset:
    """Load ``path`` (streamed when larger than ``share`` of memory) and compute, off the main
    thread, everything the Data tab and the query builder show about it (through the dataset's
    engine: dpexplorer.data.engine). Cancellable between its three passes, which it reports as
    progress (each is one or more scans of a streamed file)."""
    from dpexplorer.data.engine import engine_of
    from dpexplorer.data.engine.scan import LAZY_SHARE, should_scan
    from dpexplorer.data.load import load_dataset as load

    dataset = load(path, lazy=should_scan(path, LAZY_SHARE if share is None else share))
    checkpoint(cancel, progress, 1 / 3)
    summary = engine_of(dataset).summary(dataset, top)  # cached columns: computed here, off the main thread
    checkpoint(cancel, progress, 2 / 3)
    _ = dataset.fingerprint  # likewise (SHA-256 of the file, for sessions)
    _ = dataset.content_fingerprint  # likewise (the dataset's identity in the ledger)
    checkpoint(cancel, progress, 1.0)
    return LoadedDataset(dataset, summary.ranges, summary.top_values)


@dataclass(frozen=True, eq=False)
class ReleasePreview:
    """What the release dialog shows before anything is charged or drawn: the validated
    release and its price under the dataset's budget (``release.price``)."""

    prepared: Any
    price: Any


def release_preview(
    dataset: Any, query: Any, mechanism: str, params: dict[str, Any], relation: str, ledger_path: str
) -> ReleasePreview:
    """Validate the release and price it against the ledger (charges nothing)."""
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.release import prepare, price

    with Ledger(ledger_path) as ledger:
        prepared = prepare(dataset, query, mechanism, params, relation=relation, ledger=ledger)  # type: ignore[arg-type]
        return ReleasePreview(prepared, price(prepared, ledger))


def set_budget(ledger_path: str, fingerprint: str, epsilon: float, delta: float, method: str) -> None:
    from dpexplorer.release.ledger import Ledger

    with Ledger(ledger_path) as ledger:
        ledger.set_budget(fingerprint, epsilon, delta, method)


def run_release(prepared: Any, ledger_path: str, out_dir: str, dataset_name: str = "") -> Any:
    """Charge, sample with the exact samplers (OS CSPRNG), write: :func:`release.execute`; then
    the release's report (``report-<ledger row>.html`` and ``.pdf``), listed in its files."""
    import dataclasses
    from pathlib import Path

    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.release import execute
    from dpexplorer.release.report import build_report, write_html
    from dpexplorer.report_pdf import write_pdf

    with Ledger(ledger_path) as ledger:
        before = [m.guarantee for m in ledger.measurements(prepared.fingerprint)]
        result = execute(prepared, ledger=ledger, out_dir=out_dir)
        report = build_report(
            dataset=dataset_name or prepared.fingerprint[:12],
            fingerprint=prepared.fingerprint,
            released=[(prepared, result)],
            ledger=ledger,
            before=before,
        )
    stem = f"report-{result.row_id:06d}"
    html = write_html(report, out_dir, f"{stem}.html")
    pdf = write_pdf(report, Path(out_dir) / f"{stem}.pdf")
    return dataclasses.replace(result, files={**result.files, "report": html, "report_pdf": pdf})


@dataclass(frozen=True)
class TeachingDraw:
    """One simulated output on D, as text, beside the true answer (teaching mode only)."""

    output: str
    truth: str
    run: int


def teaching_draw(
    mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int, run: int
) -> TeachingDraw:
    """Run the mechanism once on D with the exploration RNG (seed, run)."""
    rng = np.random.default_rng([seed, run])
    value = mechanism.simulate(params, query, rng, 1, on="D")[0]
    if isinstance(query, SelectionInput):
        output = "⊥ (no answer)" if value < 0 else query.candidates[int(value)]
        truth = query.candidates[int(np.argmax(query.scores_d))]
    elif isinstance(query, NumericInput):
        output = "⊥ (no answer)" if not np.isfinite(value) else f"{float(value):.4g}"
        truth = ", ".join(f"{v:.6g}" for v in np.atleast_1d(query.value_d))
    else:
        output, truth = f"{value}", "(see the workload view)"
    return TeachingDraw(output, truth, run)


def rebuild_plan(dataset: Any, entries: list[dict[str, Any]]) -> tuple[Any, ...]:
    """The planned measurements of a saved session, their true answers recomputed on ``dataset``."""
    from dpexplorer.core.planning import ErrorTarget, PlannedMeasurement
    from dpexplorer.data.answers import query_input
    from dpexplorer.data.grouped import EXPLORATION_SEED
    from dpexplorer.data.queries import query_from_dict

    plan = []
    for entry in entries:
        query = query_input(
            dataset, query_from_dict(entry["query"]), entry["relation"], bounding_seed=EXPLORATION_SEED
        )
        target = ErrorTarget(*entry["target"]) if entry.get("target") else None
        plan.append(
            PlannedMeasurement(
                entry["label"], entry["mechanism"], entry["params"], query, entry["held"], target
            )
        )
    return tuple(plan)
