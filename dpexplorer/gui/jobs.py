"""The functions the window submits to the compute service. Each calls the core (or data
layer) and bundles what one view draws; none does privacy math of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.marginals import MarginalInput
from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    CategoricalOutput,
    Mechanism,
    NumericInput,
    NumericOutput,
    OutputDistribution,
    PureEpsilonMechanism,
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
    claim_note: str = ""
    """Why the claimed epsilon differs from the epsilon slider, when it does (in words)."""
    delta_source: Literal["computed", "proved"] = "computed"
    """``proved``: delta_exact is 0 by the mechanism's pure epsilon-DP theorem (at its claimed
    epsilon), not by a sum over outcomes; ``computed``: the exact hockey-stick divergence."""


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
    delta_exact, delta_note, delta_source = _delta_at_claim(mechanism, params, query, output, epsilon)
    return NeighboursResult(
        mechanism=mechanism.label,
        output=output,
        epsilon=epsilon,
        delta_claim=delta_claim,
        delta_exact=delta_exact,
        delta_note=delta_note,
        delta_source=delta_source,
        claim_note=claim_note(mechanism, params, query, epsilon, delta_claim),
        differing_row=getattr(query, "differing_row", ""),
        params=dict(params),
        true_d=true_d,
        true_d_prime=true_d_prime,
    )


def claim_note(
    mechanism: Mechanism, params: dict[str, Any], query: QueryInput, epsilon: float, delta: float
) -> str:
    """A sentence saying why the claimed epsilon is not the slider's, or "" when it is."""
    chosen = params.get("epsilon")
    if chosen is None or abs(epsilon - float(chosen)) <= 1e-12 * max(1.0, epsilon):
        return ""
    selection = getattr(query, "partition", None)
    if selection is not None:  # keys selected privately: the claim adds the selection's
        return (
            f"The ε slider ({float(chosen):g}) is the statistic's budget; the keys are selected "
            f"privately at ε = {selection.epsilon:g}, δ = {selection.delta:.3g} (noisy threshold), so "
            f"the release claims ε = {epsilon:.4g}, δ = {delta:.3g} (basic composition). The curves "
            "are the statistic's noise on one kept group."
        )
    rho = getattr(mechanism.guarantee(params, query), "rho", None)
    if rho is not None:
        return (
            f"The ε slider ({float(chosen):g}) sets concentrated DP: ρ = ε²/2 = {rho:.4g} "
            f"(zCDP). The same guarantee as (ε, δ)-DP at δ = {delta:.3g} is ε = {epsilon:.4g} "
            "(Bun & Steinke 2016, Proposition 1.3); the accountant composes the ρ."
        )
    return (
        f"The ε slider ({float(chosen):g}) is the budget of one step; {mechanism.label}'s theorem "
        f"gives ε = {epsilon:.4g} for the whole release."
    )


PURE_ROUNDING = 1e-12
"""A computed delta at most this, for a pure mechanism at its claimed epsilon, is float rounding
of the pmfs (ln p - ln q lands within an ulp of epsilon): the theorem's 0 is shown."""


def _delta_at_claim(
    mechanism: Mechanism,
    params: dict[str, Any],
    query: QueryInput,
    output: OutputDistribution,
    epsilon: float,
) -> tuple[float | None, str, Literal["computed", "proved"]]:
    """delta(epsilon) on this pair: (value or None, why None, where the value comes from).

    A pure epsilon-DP mechanism at its claimed epsilon has delta = 0 by its theorem; the exact
    sum is still computed where one exists, and shown instead whenever it is above rounding
    (which would contradict the claim, i.e. a bug worth seeing)."""
    pure = isinstance(mechanism, PureEpsilonMechanism) and epsilon >= float(params["epsilon"])
    try:
        if isinstance(output, CategoricalOutput):  # same exact sum, without recomputing the pmfs
            from dpexplorer.core.accuracy import discrete_hockey_stick  # scipy: off the start-up path

            pair = (output.pmf_d, output.pmf_d_prime)
            computed = float(discrete_hockey_stick(*pair, np.array([epsilon]))[0])
        else:
            computed = mechanism.delta_at(params, query, epsilon)
    except NotApplicableError as exc:
        if pure:
            return 0.0, str(exc), "proved"
        return None, str(exc), "computed"
    if pure and computed <= PURE_ROUNDING:
        return 0.0, "", "proved"
    return computed, "", "computed"


DRAW_CHUNK_CELLS = 2_000_000
"""Draws x candidates per chunk of simulation: ~16 MB of noise and ~20 ms between checks of the
cancellation token, whatever the number of candidates."""


def draws(
    mechanism: Mechanism,
    params: dict[str, Any],
    query: QueryInput,
    seed: int,
    on: Literal["D", "D'"],
    size: int = DRAWS,
    cancel: CancelToken | None = None,
) -> np.ndarray:
    """``size`` simulated outputs on D or on D' (exploration RNG, never used for release). The
    two sides are separate jobs so that the two workers draw them at once (numpy releases the
    GIL); each side has its own stream, seeded by (seed, side). Drawn in chunks, checking
    ``cancel`` between them, so that Esc stops a draw over thousands of candidates at once."""
    rng = np.random.default_rng([seed, 0 if on == "D" else 1])
    width = len(query.candidates) if isinstance(query, SelectionInput) else 1
    chunk = max(1, min(size, DRAW_CHUNK_CELLS // max(width, 1)))
    parts = []
    for start in range(0, size, chunk):
        checkpoint(cancel)
        parts.append(mechanism.simulate(params, query, rng, min(chunk, size - start), on=on))
    return np.concatenate(parts)


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
    """Schema and first rows of ``path`` (dpexplorer.data.scan.peek): shown at once,
    while :func:`load_dataset` scans the whole file."""
    from dpexplorer.data.scan import LAZY_SHARE, peek

    return peek(path, share=LAZY_SHARE if share is None else share)


CATEGORY_LIMIT = 10_000
"""The most categories the query panel declares for a column (the scale at which top-k and the
exponential mechanism are tested: tests/core/mechanisms/test_topk.py)."""


def load_dataset(
    path: str,
    top: int = CATEGORY_LIMIT + 1,
    share: float | None = None,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> LoadedDataset:
    """Load ``path`` (streamed when larger than ``share`` of memory) and compute, off the main
    thread, everything the Data tab and the query builder show about it (through the dataset's
    engine: dpexplorer.data.engine). Cancellable between its three passes, which it reports as
    progress (each is one or more scans of a streamed file)."""
    from dpexplorer.data.scan import LAZY_SHARE, open_file

    dataset = open_file(path, LAZY_SHARE if share is None else share)
    return _summarised(dataset, top, cancel, progress)


def open_spark_dataset(
    source: str,
    master: str,
    top: int = CATEGORY_LIMIT + 1,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> LoadedDataset:
    """Open ``source`` (a Parquet directory or file, a CSV file, or a table name) on Spark at
    ``master`` (``local[*]`` or ``spark://host:port``) and summarise it through the Spark engine,
    as :func:`load_dataset` does for a file; DataError (shown by the window) if pyspark, Java or
    the source is missing. Cancellable between passes, which it reports as progress. The
    commonest ``top`` values of each text column, as for a file: the query panel's category
    lists, and "all categories" wherever they are every value."""
    from dpexplorer.data.engine import open_dataset

    checkpoint(cancel, progress, 0.05)  # the bar moves while the session starts
    return _summarised(open_dataset(source, "spark", spark_master=master or None), top, cancel, progress)


def _summarised(
    dataset: Any, top: int, cancel: CancelToken | None, progress: ProgressFn | None
) -> LoadedDataset:
    from dpexplorer.data.engine import engine_of

    checkpoint(cancel, progress, 1 / 3)
    summary = engine_of(dataset).summary(dataset, top)  # cached columns: computed here, off the main thread
    checkpoint(cancel, progress, 2 / 3)
    _ = dataset.fingerprint  # likewise (SHA-256 of the file, for sessions)
    # not the content fingerprint (the ledger key, a pass over every row): the window
    # computes it afterwards, with identify_dataset, so that the views never wait for it
    checkpoint(cancel, progress, 1.0)
    return LoadedDataset(dataset, summary.ranges, summary.top_values)


def identify_dataset(
    dataset: Any, cancel: CancelToken | None = None, progress: ProgressFn | None = None
) -> tuple[Any, str]:
    """``(dataset, its ledger identity)``: the content fingerprint, computed and cached on the
    dataset (the same value as ``dataset.content_fingerprint``), cancellable with progress for
    a file (one aggregation on Spark, which polls nothing until it returns)."""
    checkpoint(cancel, progress, 0.0)
    identify = getattr(dataset, "identify", None)
    if identify is not None:
        return dataset, str(identify(cancel=cancel, progress=progress))
    return dataset, str(getattr(dataset, "content_fingerprint", None) or dataset.fingerprint)


@dataclass(frozen=True, eq=False)
class ReleasePreview:
    """What the release dialog shows before anything is charged or drawn: the validated
    release and its price under the dataset's budget (``release.price``)."""

    prepared: Any
    price: Any


def release_preview(
    dataset: Any,
    query: Any,
    mechanism: str,
    params: dict[str, Any],
    relation: str,
    ledger_path: str,
    sampling_rate: float | None = None,
    table_formats: tuple[str, ...] = (),
    codebook: Any = None,
) -> ReleasePreview:
    """Validate the release and price it against the ledger (charges nothing); with
    ``sampling_rate``, under the steward's claim that the file is a secret Poisson sample
    (:func:`release.with_sampling_rate`: amplified charge, claim in the provenance). With
    ``table_formats``, a synthetic table of MST or AIM on a marginals query, its records to be
    written as those files (:func:`synthetic_tables.prepare_synthetic`: the marginals counted now;
    no sampling amplification is claimed for it). With ``codebook`` (the window's: every fact the
    release uses is declared in it), its provenance lists each public fact with its origin."""
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.release import dataset_key, prepare, price, with_sampling_rate

    with Ledger(ledger_path) as ledger:
        if table_formats:
            from dpexplorer.release.synthetic_tables import prepare_synthetic

            key = dataset_key(dataset, ledger)
            table = prepare_synthetic(
                dataset, query, mechanism, params, key=key, relation=relation, formats=list(table_formats)
            )
            table = with_origins(table, query, codebook)
            return ReleasePreview(table, price(table, ledger))
        prepared = prepare(dataset, query, mechanism, params, relation=relation, ledger=ledger)  # type: ignore[arg-type]
        prepared = with_origins(prepared, query, codebook)
        if sampling_rate is not None:
            prepared = with_sampling_rate(prepared, sampling_rate)
        return ReleasePreview(prepared, price(prepared, ledger))


def with_origins(prepared: Any, query: Any, codebook: Any) -> Any:
    """``prepared`` whose provenance records each public fact of ``query`` with its origin in
    ``codebook`` (``fact_origins``) and the codebook (``codebook``); as it is without one."""
    if codebook is None:
        return prepared
    import dataclasses

    from dpexplorer.release.public_facts import declare_entry, origins

    _, records = declare_entry({"query": query.to_dict()}, codebook)
    return dataclasses.replace(prepared, origins=origins(records, codebook))


def set_budget(ledger_path: str, fingerprint: str, epsilon: float, delta: float, method: str) -> None:
    from dpexplorer.release.ledger import Ledger

    with Ledger(ledger_path) as ledger:
        ledger.set_budget(fingerprint, epsilon, delta, method)


def run_release(
    prepared: Any, ledger_path: str, out_dir: str, dataset_name: str = "", warnings: list[str] | None = None
) -> Any:
    """Charge, sample with the exact samplers (OS CSPRNG), write: :func:`charge.execute` (a
    statistic, or a synthetic table: records drawn from the fitted model); then
    the release's report (``report-<token>.html`` and ``.pdf``, the token of its files), listed
    in its files. The report is a run of one release (its provenance's ``run``): rebuilt from the
    ledger and the files, as ``dpexplorer report --row N`` writes it again. Its names and Qt's
    PDF are checked before the charge; a report that still fails after it never fails the
    release: the reason and the command that writes it are appended to ``warnings``."""
    import dataclasses
    import os
    import shlex

    from dpexplorer.release.charge import execute
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.report_run import check_names_free, report_names, report_of_run, write_report
    from dpexplorer.report_pdf import check_renderer, write_pdf

    run = {
        "token": prepared.token,
        "entry": 1,
        "entries": 1,
        "dataset": dataset_name or prepared.fingerprint[:12],
    }
    prepared = dataclasses.replace(prepared, run=run)
    html_path, pdf_path = report_names(prepared.token, out_dir)
    check_names_free((html_path, pdf_path))
    check_renderer()
    with Ledger(ledger_path) as ledger:
        result = execute(prepared, ledger=ledger, out_dir=os.path.abspath(out_dir))
        try:
            write_report(report_of_run(ledger, result.row_id), html_path, pdf_path, write_pdf)
        except Exception as exc:  # the budget is spent and the values are out: a warning
            command = shlex.join(
                [
                    "dpexplorer",
                    "report",
                    "--ledger",
                    os.path.abspath(ledger.path),
                    "--row",
                    str(result.row_id),
                ]
            )
            if warnings is not None:
                warnings.append(f"the report could not be written ({exc}); write it with: {command}")
    written = {k: p for k, p in (("report", html_path), ("report_pdf", pdf_path)) if p.exists()}
    return dataclasses.replace(result, files={**result.files, **written})


@dataclass(frozen=True, eq=False)
class Released:
    """A release as its result card shows it: what :func:`run_release` returned, the query and
    mechanism in words, and the budget read back from the ledger after the charge (epsilon
    under the dataset's accountant, rounded outward: charged up, left down; None where the
    accountant gives no finite total)."""

    result: Any
    query: str
    mechanism: str
    dataset: str
    method: str
    charged: float | None
    left: float | None
    budget_epsilon: float
    integral: bool | tuple[bool, ...] = False
    """Which values are counts of rows (whole numbers, shown without decimals): one flag per
    value (release/published.py's integral_flags: a count, a histogram, a mean's noisy count),
    or one for all."""
    report_warning: str = ""
    """Why the release's report could not be written after the charge, and the command that
    writes it ("" when it was written)."""


def _label(mechanism: str) -> str:
    from dpexplorer.core.mechanisms.registry import get

    try:
        return get(mechanism).label
    except KeyError:  # a release path named otherwise (private bounds): its name
        return mechanism


def release_and_account(
    prepared: Any, ledger_path: str, out_dir: str, dataset_name: str, query: str
) -> Released:
    """:func:`run_release`, then the ledger read again: what this release cost under the
    dataset's accountant and what is left (from the ledger's rows, not the price quoted before)."""
    import math
    from fractions import Fraction

    from dpexplorer.release.ledger import Ledger, total_epsilon
    from dpexplorer.release.published import integral_flags
    from dpexplorer.release.rational import float_down, float_up

    warnings: list[str] = []
    result = run_release(prepared, ledger_path, out_dir, dataset_name, warnings)
    integral = integral_flags(str(prepared.public_facts.get("statistic", "")), result.labels)
    with Ledger(ledger_path) as ledger:
        budget = ledger.budget(prepared.fingerprint)
        rows = ledger.measurements(prepared.fingerprint)
    charged: float | None = None
    left: float | None = None
    if budget is None:  # refused without one; unknown here rather than an error after the charge
        return Released(
            result,
            query,
            _label(prepared.mechanism),
            dataset_name,
            "",
            None,
            None,
            math.nan,
            integral,
            " ".join(warnings),
        )
    try:
        after = total_epsilon([m.guarantee for m in rows], budget.method, budget.delta)
        before = total_epsilon(
            [m.guarantee for m in rows if m.id != result.row_id], budget.method, budget.delta
        )
        charged, left = float_up(after - before), float_down(Fraction(budget.epsilon) - after)
    except NotApplicableError:
        pass
    return Released(
        result=result,
        query=query,
        mechanism=_label(prepared.mechanism),
        dataset=dataset_name,
        method=budget.method,
        charged=charged,
        left=left,
        budget_epsilon=budget.epsilon,
        integral=integral,
        report_warning=" ".join(warnings),
    )


@dataclass(frozen=True)
class TeachingDraw:
    """One simulated output on D, as text, beside the true answer (teaching mode only)."""

    output: str
    truth: str
    run: int
    marginals: int = 0
    """For a synthetic run (MST, AIM on a marginals query): how many marginals its workload has,
    and then ``output`` is the run's workload error (mean total-variation distance from the true
    marginals, which it reads), not an answer; 0 for every other draw."""


WORKLOAD_ERROR_DIGITS = 3
"""Significant digits of a synthetic run's workload error in the teaching banner. The figure is
exact for its run (no interval of its own); what varies is the run, and between seeded runs on
Adult's default query (8 seeds, ε = 1) MST's varied by a standard deviation of 0.0012 around
0.043 and AIM's by 0.0009 around 0.011, so the project's rule (release/presentation.py) on a
95 % spread of about +-0.002 keeps the 0.0001s: three significant digits."""


def full_digits(value: float, scale: float) -> str:
    """``value`` with every digit down to a tenth of ``scale`` (the noise's typical size), so
    that two draws differ visibly: 48,841.7 and 48,843.2, never 4.884e+04 twice. Thousands
    separated; scientific only beyond 10^15 or below 10^-6 in size."""
    magnitude = abs(value)
    if not np.isfinite(value) or (magnitude and not 1e-6 <= magnitude < 1e15):
        return f"{value:.10g}"
    decimals = 0
    if scale > 0 and np.isfinite(scale):
        decimals = int(np.clip(1 - np.floor(np.log10(scale)), 0, 12))
    return f"{value:,.{decimals}f}"


def teaching_draw(
    mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int, run: int
) -> TeachingDraw:
    """Run the mechanism once on D with the exploration RNG (seed, run). Numbers keep every
    digit down to a tenth of the noise (:func:`full_digits`): the noise is what the class is
    there to see."""
    rng = np.random.default_rng([seed, run])
    if isinstance(query, SelectionInput) and hasattr(mechanism, "sample_lists"):
        picked = mechanism.sample_lists(params, query, rng, 1, on="D")[0]
        best = np.argsort(-np.asarray(query.scores_d), kind="stable")[: len(picked)]
        output = " > ".join(query.candidates[int(i)] for i in picked)
        return TeachingDraw(output, " > ".join(query.candidates[int(i)] for i in best), run)
    value = mechanism.simulate(params, query, rng, 1, on="D")[0]
    if isinstance(query, SelectionInput):
        output = "⊥ (no answer)" if value < 0 else query.candidates[int(value)]
        truth = query.candidates[int(np.argmax(query.scores_d))]
    elif isinstance(query, NumericInput):
        spread = mechanism.simulate(params, query, np.random.default_rng([seed, run, 1]), 64, on="D")
        spread = spread[np.isfinite(spread)]
        scale = float(np.std(spread)) if spread.size > 1 else 0.0
        output = "⊥ (no answer)" if not np.isfinite(value) else full_digits(float(value), scale)
        # the truth has no noise to show: its own digits (7 significant), never rounded to the
        # noise's precision (a mean of 38.64 must not read 39)
        truth = ", ".join(f"{float(v):,.7g}" for v in np.atleast_1d(query.value_d))
    elif isinstance(query, MarginalInput):  # a synthetic run's workload error, not an answer
        from dpexplorer.release.presentation import plain

        output = plain(float(value), digits=WORKLOAD_ERROR_DIGITS)
        return TeachingDraw(output, "", run, len(query.workload))
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


def plan_audit(
    dataset: Any,
    entries: list[dict[str, Any]],
    rate: float | None,
    codebook: Any,
    draws: int,
    *,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> Any:
    """The replay audit of the window's plan (:func:`dpexplorer.release.replay.audit_plan`):
    throwaway ledgers only, nothing charged to the window's."""
    from dpexplorer.release.replay import audit_plan

    return audit_plan(
        dataset, entries, rate, codebook=codebook, draws=draws, cancel=cancel, progress=progress
    )
