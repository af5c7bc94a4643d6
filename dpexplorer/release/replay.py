"""The replay audit of a plan (issue 44; DESIGN.md, "Replay audit"): ``dpexplorer audit``,
``dpx.audit_plan`` and the Budget tab's "Audit this plan…".

The plan is released, by the very code ``dpexplorer release`` runs (:func:`prepare_plan`,
:func:`release_prepared`: the exact samplers, the ledger, the exporter, the files), on D and on
each neighbour D' that stresses one of its entries (:mod:`dpexplorer.data.neighbour_rows`: one
row or person added or removed, a row at a clipping bound or beyond it, a new category, a tie at
the median, a person with many rows under the privacy unit, the views' worst case), every side
with the SAME random bits: entry k draws from ``SeededBitSource(seed, k)`` on every side, and
the privacy unit's choice of rows uses one seed. Nothing real is charged: each side has a
throwaway ledger (a fresh SQLite file in a temporary folder, with a budget no plan reaches),
and its files go to a temporary folder that is deleted afterwards.

Then, per entry, against each D':

(a) **replay**: everything the release publishes except its paid DP outputs must be identical:
    the result object, every field of the provenance sidecar, every cell of the CSV and of the
    values JSON (or a synthetic table's files), the names of the files written, the lines the CLI
    prints before the charge, the epsilon left, and any refusal with its exact wording (a
    refusal on one side and not the other is a finding). The DP outputs (:func:`dp_output`) are
    the released values and what is computed from them and from public facts after the draw
    (intervals, their kinds, the post-processing applied, ``dp_outputs``; with privately selected
    keys or marginals, which labels are released). A few fields differ by construction and are
    not compared, each said why in :data:`EXEMPT`. ``replay`` is "pass", or the path of the
    first field that differs (e.g. ``provenance.discretisation.grid_spacing``).
(b) **sensitivity**: with the same bits, additive noise is the same on both sides, so the
    released values (before the declared post-processing) differ by exactly the difference of
    the true answers on the grid; it must be at most the declared sensitivity in the declared
    norm (Laplace: l1, Gaussian: l2, the grid's ``sensitivity_on_grid`` steps; a synthetic
    table's or MST's noisy marginals: each measured marginal's l1 and l2 sensitivity, when both
    sides measured the same ones). A movement beyond it fails ``replay`` too.
(c) **black box**: a lower confidence bound on epsilon from outputs sampled from the entry's
    exact release on D and on each D' (:func:`dpexplorer.core.hockey_stick.search_neighbours`:
    every neighbour screened, the best audited on fresh draws), or, for a synthetic table or a
    transcript, from one run of the exact path with canaries (:mod:`dpexplorer.core.one_run`);
    it must not exceed the claimed epsilon.

The audit reads the true data (it is the steward's: exploration, never published) and its
numbers are evidence, not proof: (a) and (b) hold only for the neighbours tried, (c) finds gross
violations at the stated confidence and never certifies a small one."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.core.errors import DPExplorerError, InvalidParameterError
from dpexplorer.release.plan_run import PlanError

DEFAULT_DRAWS = 2_000
MAX_DRAWS = 10_000_000
DEFAULT_CONFIDENCE = 0.95
TOKEN = "a0d17a0d17a0d17a"
"""The run token of every side (the file names' random part, the same on D and D')."""
AUDIT_BUDGET = (1e9, 0.5, "basic")
"""The throwaway ledger's budget: no plan reaches it."""
ONE_RUN_CANARIES = 64
ONE_RUN_RUNS = 4

EXEMPT: dict[str, str] = {
    "provenance.time": "the time of the release (bookkeeping)",
    "provenance.dataset_id": "the dataset's public id, drawn at random by each side's own throwaway "
    "ledger (Ledger.public_id): independent of the rows, it differs between ledgers by construction",
    "codebook.dataset": "the codebook's binding to its dataset: checked on D only (by design it "
    "refuses any other data, a neighbour included); the neighbours are released with the binding "
    "cleared",
}
"""Fields that differ between D and D' by construction, and why they are not compared."""

STATISTIC_DP = (
    "result.values",
    "result.confidence_intervals",
    "result.interval_kinds",
    "provenance.dp_outputs",
    "provenance.confidence_interval",
    "provenance.interval_kinds",
    "provenance.post_processing.values_before",
    "provenance.post_processing.applied",
    "provenance.post_processing.released_total",
    "json.values[*].value",
    "json.values[*].ci_low",
    "json.values[*].ci_high",
    "csv[*].value",
    "csv[*].ci_low",
    "csv[*].ci_high",
    "csv[*].interval",
    "csv[*].rank_within_rows",
)
"""The DP outputs of a statistic (module docstring, (a)), as paths with [*] for any index."""
PRIVATE_LABELS_DP = ("result.labels", "result.integral", "json.values", "csv")
"""Also DP outputs where the released labels are (privately selected keys, measured marginals)."""
TABLE_DP = ("result.rows", "result.selected", "result.values", "provenance.dp_outputs", "json", "records")
"""The DP outputs of a synthetic table: its records, its measurements and what was selected."""


def additive_norm(item: Any) -> str | None:
    """The norm of the declared sensitivity when the entry's exact path adds noise that does not
    depend on the data to the answer (the Laplace and Gaussian mechanisms' discrete paths: "l1",
    "l2"), else None (a ratio of noisy parts, a selection, a data-dependent scale, a run)."""
    from dpexplorer.core.mechanisms import registry
    from dpexplorer.core.mechanisms.gaussian import GaussianMechanism
    from dpexplorer.core.mechanisms.laplace import LaplaceMechanism
    from dpexplorer.release.numeric_paths import GAUSSIAN_SAMPLER, LAPLACE_SAMPLER

    mechanism = registry.get(item.mechanism)
    sampler = getattr(item.exact, "sampler", "")
    if isinstance(mechanism, LaplaceMechanism) and sampler == LAPLACE_SAMPLER:
        return "l1"
    if isinstance(mechanism, GaussianMechanism) and sampler == GAUSSIAN_SAMPLER:
        return "l2"
    return None


# ------------------------------------------------------------------ what a side published
@dataclass
class _Side:
    """What one release of the plan on one dataset published, per entry."""

    name: str
    refusal: tuple[int | None, str] | None = None
    fields: list[dict[str, Any]] = field(default_factory=list)
    private_labels: list[bool] = field(default_factory=list)
    raw: list[tuple[tuple[str, ...], tuple[Any, ...]] | None] = field(default_factory=list)
    measurements: list[list[dict[str, Any]] | None] = field(default_factory=list)
    prepared: list[Any] = field(default_factory=list)
    dataset: Any = None
    applies: Callable[[str | None], bool] = lambda unit: True
    """Whether this side is a neighbour of D for a query of that privacy unit (None: rows)."""
    stresses: frozenset[int] | None = None
    """The entries (by index) this neighbour was built for (None: every entry)."""


def flatten(value: Any, path: str, out: dict[str, Any]) -> None:
    """Every leaf of ``value`` (JSON-like) under its dotted path, in order; an empty container
    is a leaf of its own."""
    if isinstance(value, Mapping):
        if not value:
            out[path] = {}
        for key, item in value.items():
            flatten(item, f"{path}.{key}", out)
    elif isinstance(value, list | tuple):
        if not value:
            out[path] = []
        for index, item in enumerate(value):
            flatten(item, f"{path}[{index}]", out)
    elif isinstance(value, Path):
        out[path] = value.name
    else:
        out[path] = value


_INDEX = re.compile(r"\[\d+\]")


def dp_output(path: str, prefixes: Sequence[str]) -> bool:
    """Whether ``path`` is under one of ``prefixes`` ([*] for any index)."""
    pattern = _INDEX.sub("[*]", path)
    return any(
        pattern == p or (pattern.startswith(p) and pattern[len(p) : len(p) + 1] in (".", "["))
        for p in prefixes
    )


def _result_fields(result: Any) -> dict[str, Any]:
    """The result object's fields as the caller of ``release_prepared`` sees them."""
    from dpexplorer.release.ledger import guarantee_to_dict

    out: dict[str, Any] = {}
    for item in dataclasses.fields(result):
        value = getattr(result, item.name)
        if item.name == "guarantee":
            value = guarantee_to_dict(value)
        elif item.name == "files":
            value = {kind: path.name for kind, path in value.items()}
        flatten(value, f"result.{item.name}", out)
    if hasattr(result, "text"):
        out["result.text"] = "(the values as printed: DP outputs)"
    return out


def _file_fields(
    files: Mapping[str, Path], table: bool
) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """The files' contents as fields (a statistic's CSV cell by cell, its JSON and provenance
    leaf by leaf; a synthetic table's records as one DP output each), and a synthetic table's
    measurements."""
    out: dict[str, Any] = {}
    measurements = None
    for kind, path in files.items():
        if kind == "provenance":
            flatten(json.loads(path.read_text(encoding="utf-8")), "provenance", out)
        elif kind == "json":
            document = json.loads(path.read_text(encoding="utf-8"))
            flatten(document, "json", out)
            measurements = document.get("measurements") if table else None
        elif kind == "csv" and not table:
            rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
            out["csv.header"] = rows[0] if rows else []
            for number, row in enumerate(rows[1:]):
                for column, cell in zip(rows[0], row, strict=False):
                    out[f"csv[{number}].{column}"] = cell
        else:
            out[f"records.{kind}"] = path.stat().st_size
    return out, measurements


def _raw_values(result: Any, provenance: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """(labels, values before the declared post-processing) of a statistic."""
    before = provenance.get("post_processing", {}).get("values_before")
    values = tuple(before) if before is not None else tuple(result.values)
    return tuple(result.labels), values


def _clear(*paths: Path) -> None:
    """Remove each file (and a SQLite file's -wal and -shm) or folder."""
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path)
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


@dataclass(frozen=True)
class _Run:
    """What every side shares: the plan, the codebook, the seed, the folders."""

    entries: Sequence[Mapping[str, Any]]
    rate: float | None
    codebook: Any
    dataset_name: str
    seed: int
    ci_level: float
    work: Path

    def bits(self, number: int) -> Any:
        from dpexplorer.release.samplers import SeededBitSource

        return SeededBitSource((self.seed << 24) + number)

    @property
    def bounding_seed(self) -> int:
        return (self.seed * 2_654_435_761 + 12_345) % (1 << 63)


def _entry_number(message: str) -> int | None:
    found = re.match(r"plan entry (\d+):", message)
    return int(found.group(1)) if found else None


def run_side(name: str, dataset: Any, run: _Run) -> _Side:
    """Release the plan on ``dataset`` through the release path, with a throwaway ledger and
    folder (module docstring), and collect what it published."""
    from dpexplorer.release.charge import ReleaseFailedError
    from dpexplorer.release.costs import plan_cost_lines
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.plan_run import in_run, prepare_plan, release_prepared

    side = _Side(name, dataset=dataset)
    ledger_path, out = run.work / "ledger.sqlite", run.work / "out"
    _clear(ledger_path, out)
    plan: dict[str, Any] = {}
    released: list[tuple[Any, Any]] = []
    with Ledger(ledger_path) as ledger:
        try:
            prepared = prepare_plan(
                dataset,
                run.entries,
                run.rate,
                ledger,
                ci_level=run.ci_level,
                codebook=run.codebook,
                bounding_seed=run.bounding_seed,
            )
            side.prepared = in_run(prepared, run.dataset_name, TOKEN)
            key = side.prepared[0].fingerprint
            ledger.set_budget(key, *AUDIT_BUDGET)
            flatten(plan_cost_lines(side.prepared, ledger), "plan.printed", plan)
            release_prepared(
                side.prepared,
                ledger,
                out,
                on_release=lambda n, item, result: released.append((item, result)),
                bits=run.bits,
            )
            plan["plan.epsilon_left"] = ledger.remaining(key)
        except ReleaseFailedError as exc:
            side.refusal = (len(released) + 1, str(exc))
        except DPExplorerError as exc:
            side.refusal = (_entry_number(str(exc)), str(exc))
        for item, result in released:
            _collect(side, item, result, plan)
        plan["plan.files"] = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    for fields in side.fields:
        fields.update(plan)
    return side


def _collect(side: _Side, item: Any, result: Any, plan: Mapping[str, Any]) -> None:
    """One released entry's fields (result, files, the interval's construction) into ``side``."""
    table = type(result).__name__ == "TableResult"
    fields = _result_fields(result)
    files, measurements = _file_fields(result.files, table)
    fields.update(files)
    exact = item.exact
    fields["interval.halfwidth"] = exact.ci_halfwidth  # how the intervals are built: public
    side.fields.append(fields)
    labels = {"labels", "kept_keys"} & set(exact.dp_outputs)
    side.private_labels.append(bool(labels))
    provenance = json.loads(result.files["provenance"].read_text(encoding="utf-8"))
    side.raw.append(None if table else _raw_values(result, provenance))
    side.measurements.append(measurements)


# ------------------------------------------------------------------ the comparisons
def _same(a: Any, b: Any) -> bool:
    """Equal values of one type (1 and 1.0 differ, as they do in the files); NaN equals NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and bool(a == b)


def first_difference(
    on_d: Mapping[str, Any], on_dp: Mapping[str, Any], prefixes: Sequence[str]
) -> str | None:
    """The first path (in D's order, then D''s) whose value differs and is neither a DP output
    under ``prefixes`` nor exempt (:data:`EXEMPT`)."""
    for path in [*on_d, *(p for p in on_dp if p not in on_d)]:
        if path in EXEMPT or dp_output(path, prefixes):
            continue
        if path not in on_d or path not in on_dp or not _same(on_d[path], on_dp[path]):
            return path
    return None


def _prefixes(item: Any, private: bool) -> tuple[str, ...]:
    if type(item).__name__ == "TableRelease":
        return TABLE_DP
    return STATISTIC_DP + (PRIVATE_LABELS_DP if private else ())


def _movement(name: str, item: Any, on_d: _Side, on_dp: _Side, index: int) -> str | None:
    """(b) for one entry and neighbour: None if the DP outputs moved within the declared
    sensitivity (or the check does not apply), else what moved by how much."""
    norm = additive_norm(item)
    if type(item).__name__ == "TableRelease" or item.query.get("type") == "marginals":
        return _marginals_movement(item, on_d, on_dp, index)
    if norm is None or on_d.private_labels[index] or on_dp.private_labels[index]:
        return None  # no additive noise, or the noise drawn per private candidate key
    facts = on_d.fields[index]
    spacing = facts.get("provenance.discretisation.grid_spacing")
    steps = facts.get("provenance.discretisation.sensitivity_on_grid")
    if spacing is None or steps is None or on_d.raw[index] is None or on_dp.raw[index] is None:
        return None
    bound = float(spacing) * float(steps)
    (labels_d, values_d), (labels_dp, values_dp) = on_d.raw[index], on_dp.raw[index]  # type: ignore[misc]
    other = dict(zip(labels_dp, values_dp, strict=True))
    gaps = [
        abs(float(v) - float(other[k]))
        for k, v in zip(labels_d, values_d, strict=True)
        if k in other and isinstance(v, int | float) and isinstance(other[k], int | float)
    ]
    moved = sum(gaps) if norm == "l1" else math.sqrt(sum(g * g for g in gaps))
    if moved <= bound * (1 + 1e-12):
        return None
    return (
        f"the released values moved by {moved:.6g} in {norm} on {name!r}, more than the declared {bound:.6g}"
    )


def _marginals_movement(item: Any, on_d: _Side, on_dp: _Side, index: int) -> str | None:
    """(b) for noisy marginals: each measurement made before the first private selection (its
    noise comes from the same bits on both sides; a selection's rejection sampler may use more
    bits on one side) within the declared marginal sensitivities in l1 and l2."""
    facts = on_d.fields[index]
    l1 = facts.get("provenance.discretisation.marginal_sensitivity_l1")
    l2sq = facts.get("provenance.discretisation.marginal_sensitivity_l2_squared")
    if l1 is None or l2sq is None:
        return None
    parts_d, parts_dp = _measured(on_d, index), _measured(on_dp, index)
    if parts_d is None or parts_dp is None:
        return None
    for (name, values), (other_name, other) in zip(parts_d, parts_dp, strict=False):
        if name != other_name or len(values) != len(other):
            return None  # the measurements differ: selected privately (a DP output)
        gaps = np.abs(np.asarray(values, dtype=float) - np.asarray(other, dtype=float))
        moved_l1, moved_l2 = float(gaps.sum()), math.sqrt(float(np.sum(gaps**2)))
        if moved_l1 > float(l1) * (1 + 1e-12) or moved_l2 > math.sqrt(float(l2sq)) * (1 + 1e-12):
            return (
                f"the noisy marginal {name} moved by {moved_l1:.6g} in l1 ({moved_l2:.6g} in l2), "
                f"more than the declared {l1} ({math.sqrt(float(l2sq)):.6g})"
            )
    return None


def _measured(side: _Side, index: int) -> list[tuple[str, list[float]]] | None:
    """The measurements made before the first private selection, in order, as (marginal, noisy
    counts): from a synthetic table's JSON, or an MST statistic's labels "A × B: cell" (a
    measurement ends where the marginal changes or a cell comes again)."""
    fields = side.fields[index]
    rounds = len({p.split("]")[0] for p in fields if p.startswith("provenance.dp_outputs.rounds[")})
    measurements = side.measurements[index]
    found: list[tuple[str, list[float]]]
    if measurements is not None:
        found = [(" × ".join(m["marginal"]), [float(v) for v in m["noisy_counts"]]) for m in measurements]
    else:
        raw = side.raw[index]
        if raw is None:
            return None
        found, cells = [], set[str]()
        for label, value in zip(*raw, strict=True):
            name = label.split(": ", 1)[0]
            if not found or found[-1][0] != name or label in cells:
                found.append((name, []))
                cells = set()
            cells.add(label)
            found[-1][1].append(float(value))
    return found[: max(0, len(found) - rounds)]


# ------------------------------------------------------------------ the black box
def _sampler(exact: Any) -> Callable[[np.random.Generator, int], Sequence[Any]]:
    """Draws of an exact release (its own ``draw``, from seeded bits; ``simulate`` where it gives
    the one value released)."""
    from dpexplorer.release.samplers import SeededBitSource

    def draws(rng: np.random.Generator, size: int) -> Sequence[Any]:
        bits = SeededBitSource(int(rng.integers(1 << 62)))
        if exact.simulate is not None and len(exact.labels) == 1 and not exact.key_columns:
            return list(np.asarray(exact.simulate(bits, size), dtype=float))
        return [tuple(exact.draw(bits)) for _ in range(size)]

    return draws


@dataclass(frozen=True)
class _BlackBox:
    lower_bound: float | None
    test: str
    neighbour: str
    screened: Mapping[str, float] = field(default_factory=dict)


def black_box(
    index: int,
    sides: Sequence[_Side],
    run: _Run,
    draws: int,
    confidence: float,
    rng: np.random.Generator,
    cancel: CancelToken | None = None,
) -> _BlackBox:
    """(c) for entry ``index``: a one-run audit for a run (synthetic table, transcript), else the
    neighbour search over the exact releases on D and every D' that released it."""
    from dpexplorer.core.hockey_stick import search_neighbours
    from dpexplorer.core.mechanisms import registry

    on_d = sides[0]
    item = on_d.prepared[index]
    mechanism = registry.get(item.mechanism)
    if mechanism.output_kind in ("synthetic", "transcript"):
        return _one_run(item, mechanism, on_d, run, confidence, rng)
    pairs = {
        side.name: _sampler(side.prepared[index].exact)
        for side in sides[1:]
        if len(side.prepared) > index
        and len(side.fields) > index
        and (side.stresses is None or index in side.stresses)
    }
    if not pairs:
        return _BlackBox(None, "not run: no neighbour released this entry", "")
    found = search_neighbours(
        _sampler(item.exact),
        pairs,
        float(item.exact.delta),
        rng=rng,
        draws=draws,
        screen_draws=max(100, draws // 5),
        at_epsilon=float(item.exact.epsilon),
        confidence=confidence,
        cancel=cancel,
    )
    return _BlackBox(found.bound.epsilon_lb, found.bound.test, found.neighbour, found.screened)


def _stressing(index: int, sides: Sequence[_Side]) -> tuple[str, ...]:
    """The neighbours the black box searches for entry ``index``: those built for it, and n + 1,
    n - 1 (each side's ``stresses``)."""
    return tuple(s.name for s in sides[1:] if s.stresses is None or index in s.stresses)


def _one_run(
    item: Any, mechanism: Any, on_d: _Side, run: _Run, confidence: float, rng: np.random.Generator
) -> _BlackBox:
    """Steinke-Nasr-Jagielski on the exact path: canaries put in the entry's input on D, the exact
    selection and measurement (marginals) or the exact release (a workload) run once per run."""
    from dpexplorer.core.mechanisms.base import WorkloadInput
    from dpexplorer.core.one_run import (
        domain_sizes,
        draw_canaries,
        marginal_scores,
        marginals_with,
        one_run_bound,
        released_scores,
        workload_with,
    )
    from dpexplorer.data.answers import query_input
    from dpexplorer.data.queries import query_from_dict
    from dpexplorer.release.plans import exact_release
    from dpexplorer.release.samplers import SeededBitSource
    from dpexplorer.release.synthetic_tables import ExactSteps

    built = query_input(
        on_d.dataset,
        query_from_dict(item.query),
        "add_remove",
        bounding_seed=run.bounding_seed,
        exact_sums=True,
    )
    scores, included = [], []
    for _ in range(ONE_RUN_RUNS):
        bits = SeededBitSource(int(rng.integers(1 << 62)))
        canaries = draw_canaries(domain_sizes(built), ONE_RUN_CANARIES, rng)
        if isinstance(built, WorkloadInput):
            values = exact_release(mechanism, item.parameters, workload_with(built, canaries)).draw(bits)
            scores.append(released_scores(built, values, canaries))
        else:
            transcript = mechanism.steps(item.parameters, marginals_with(built, canaries), ExactSteps(bits))
            scores.append(marginal_scores(built, transcript.measurements, canaries))
        included.append(canaries.included)
    bound = one_run_bound(
        np.concatenate(scores), np.concatenate(included), float(item.exact.delta), confidence, ONE_RUN_RUNS
    )
    test = (
        f"one-run audit (Steinke, Nasr, Jagielski 2023): {bound.correct} of {bound.guesses} guesses right, "
        f"{bound.canaries} canaries in {bound.runs} runs"
    )
    return _BlackBox(bound.epsilon_lb, test, "canaries put in D")


# ------------------------------------------------------------------ the audit
@dataclass(frozen=True)
class EntryAudit:
    """One plan entry's audit (module docstring): ``replay`` "pass" or the first differing field;
    ``lower_bound`` the black box's (None when it could not run); the claim; the neighbours
    tried; ``detail`` what differed, on which neighbour, with both values."""

    entry: int
    mechanism: str
    statistic: str
    replay: str
    lower_bound: float | None
    claimed_epsilon: float | None
    claimed_delta: float | None
    neighbours: tuple[str, ...]
    sensitivity: str = "n/a"
    searched: tuple[str, ...] = ()
    """The neighbours the black box searched (those built for this entry, and n + 1, n - 1)."""
    test: str = ""
    bounded_on: str = ""
    refused: str | None = None
    detail: Mapping[str, Any] | None = None

    @property
    def passed(self) -> bool:
        """The replay passed and the lower bound is not above the claim."""
        above = (
            self.lower_bound is not None
            and self.claimed_epsilon is not None
            and self.lower_bound > self.claimed_epsilon
        )
        return self.replay == "pass" and not above

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "mechanism": self.mechanism,
            "statistic": self.statistic,
            "replay": self.replay,
            "lower_bound": self.lower_bound,
            "claimed_epsilon": self.claimed_epsilon,
            "claimed_delta": self.claimed_delta,
            "neighbours": list(self.neighbours),
            "sensitivity": self.sensitivity,
            "black_box_neighbours": list(self.searched),
            "test": self.test,
            "bounded_on": self.bounded_on,
            "refused": self.refused,
            "detail": None if self.detail is None else dict(self.detail),
            "passed": self.passed,
        }


@dataclass(frozen=True)
class PlanAudit:
    """The audit of a whole plan: one :class:`EntryAudit` per entry, the neighbours built (and
    those that could not be), the exempt fields with their reasons, the settings."""

    entries: tuple[EntryAudit, ...]
    neighbours: tuple[str, ...]
    not_built: Mapping[str, str]
    seed: int
    draws: int
    confidence: float
    exempt: Mapping[str, str] = field(default_factory=lambda: dict(EXEMPT))

    @property
    def passed(self) -> bool:
        return all(e.passed for e in self.entries)

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "entries": [e.to_dict() for e in self.entries],
            "neighbours": list(self.neighbours),
            "neighbours_not_built": dict(self.not_built),
            "exempt": dict(self.exempt),
            "seed": self.seed,
            "draws": self.draws,
            "confidence": self.confidence,
        }

    def lines(self) -> list[str]:
        """The audit as a person reads it: one line per entry, then the verdict."""
        out = []
        for e in self.entries:
            bound = "not run" if e.lower_bound is None else f"ε ≥ {e.lower_bound:.3g}"
            claim = "" if e.claimed_epsilon is None else f" (claimed ε = {e.claimed_epsilon:.4g})"
            verdict = "pass" if e.passed else "FINDING"
            replay = "replay pass" if e.replay == "pass" else f"replay differs at {e.replay}"
            out.append(
                f"[{e.entry}] {e.mechanism} on {e.statistic}: {verdict}: {replay}; black box {bound}{claim}"
            )
            if e.detail:
                out.append(f"    {e.detail.get('what', '')}")
            if e.refused:
                out.append(f"    refused on D (and alike on every neighbour unless said above): {e.refused}")
        out.append(
            f"{len(self.neighbours)} neighbours built; "
            + ("every entry passed" if self.passed else "findings above")
            + f" (seed {self.seed}, {self.draws:,} draws per side, {self.confidence:.0%} confidence)"
        )
        return out


def audit_plan(
    dataset: Any,
    entries: Sequence[Mapping[str, Any]],
    rate: float | None = None,
    *,
    codebook: Any = None,
    dataset_name: str | None = None,
    seed: int = 0,
    draws: int = DEFAULT_DRAWS,
    confidence: float = DEFAULT_CONFIDENCE,
    ci_level: float = 0.95,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
    work_dir: str | Path | None = None,
    only: Callable[[str], bool] | None = None,
) -> PlanAudit:
    """The replay audit of the plan ``entries`` (``rate``: its declared sampling rate) on
    ``dataset`` (module docstring). ``codebook`` as ``dpexplorer release --codebook`` (None: the
    shipped one for the bundled dataset); ``seed`` fixes every random choice of the audit (the
    same seed gives the same audit); ``draws`` per side for the black box (0: no black box, the
    replay only). PlanError when the
    plan is refused on D before any neighbour is built (its codebook, its queries); nothing is
    charged to any real ledger. ``work_dir``: where the temporary folder of the throwaway ledger
    and files goes (default: the system's); ``only``: keep the neighbours whose name it accepts
    (tests)."""
    from dpexplorer.release.public_facts import check_dataset, default_codebook

    if isinstance(draws, bool) or not isinstance(draws, int) or not (draws == 0 or 100 <= draws <= MAX_DRAWS):
        raise InvalidParameterError(
            f"draws must be 0 (no black box) or a whole number from 100 to {MAX_DRAWS:,}, not {draws!r}"
        )
    if not 0 < confidence < 1:
        raise InvalidParameterError(f"confidence must be in (0, 1), not {confidence!r}")
    book = default_codebook(dataset, codebook)
    try:
        check_dataset(book, dataset, dataset_name)
    except DPExplorerError as exc:
        raise PlanError(str(exc)) from None
    queries = _queries(entries, book)
    free = dataclasses.replace(book, dataset="") if book is not None else None
    name = dataset_name or Path(str(getattr(dataset, "path", "data"))).name
    with tempfile.TemporaryDirectory(prefix="dpexplorer-audit-", dir=work_dir) as folder:
        run = _Run(entries, rate, free, name, seed, ci_level, Path(folder))
        sides, not_built = _sides(dataset, queries, run, cancel, progress, only)
        checkpoint(cancel, progress, 0.6)
        audits = _entry_audits(sides, queries, run, draws, confidence, cancel, progress)
    checkpoint(cancel, progress, 1.0)
    return PlanAudit(tuple(audits), tuple(s.name for s in sides[1:]), not_built, seed, draws, confidence)


def _queries(entries: Sequence[Mapping[str, Any]], book: Any) -> list[Any]:
    """Each entry's query, completed from the codebook (PlanError as the release says it)."""
    from dpexplorer.data.queries import query_from_dict
    from dpexplorer.release.public_facts import declare_entry

    queries = []
    for number, entry in enumerate(entries, start=1):
        try:
            completed, _ = declare_entry(entry, book)
            queries.append(query_from_dict(completed["query"]))
        except (DPExplorerError, KeyError, TypeError, ValueError) as exc:
            raise PlanError(f"plan entry {number}: {exc}") from None
    return queries


def _sides(
    dataset: Any,
    queries: Sequence[Any],
    run: _Run,
    cancel: CancelToken | None,
    progress: ProgressFn | None,
    only: Callable[[str], bool] | None = None,
) -> tuple[list[_Side], dict[str, str]]:
    """The plan released on D (reordered, written and read back as D was read) and on every
    neighbour that could be built."""
    from dpexplorer.data.errors import DataError
    from dpexplorer.data.load import load_dataset
    from dpexplorer.data.neighbour_rows import (
        is_parquet,
        neighbour_table,
        neighbours_for,
        reordered,
        table_of,
        unit_columns,
        write_like,
    )

    table, removed = reordered(table_of(dataset), queries)
    units = unit_columns(queries)
    parquet = is_parquet(dataset)
    suffix = ".parquet" if parquet else ".csv"
    frames: list[tuple[str, Any, Any]] = [("D", table, None)]
    not_built: dict[str, str] = {}
    for neighbour in neighbours_for(table, queries, removed):
        if only is not None and not only(neighbour.name):
            continue
        try:
            frames.append((neighbour.name, neighbour_table(table, neighbour, units), neighbour))
        except DataError as exc:
            not_built[neighbour.name] = str(exc)
    sides = []
    for number, (name, frame, neighbour) in enumerate(frames):
        checkpoint(cancel, progress, 0.6 * number / len(frames))
        folder = run.work / f"side-{number}"
        folder.mkdir()
        loaded = load_dataset(write_like(frame, folder / f"data{suffix}", parquet))
        side = run_side(name, loaded, run)
        if neighbour is not None:
            side.applies, side.stresses = neighbour.applies, neighbour.stresses
        sides.append(side)
    return sides, not_built


def _entry_audits(
    every: Sequence[_Side],
    queries: Sequence[Any],
    run: _Run,
    draws: int,
    confidence: float,
    cancel: CancelToken | None,
    progress: ProgressFn | None,
) -> list[EntryAudit]:
    """Each entry's audit on D and the neighbours that are neighbours under its privacy unit."""
    units = [getattr(getattr(q, "unit", None), "column", None) for q in queries]
    on_d = every[0]
    rng = np.random.default_rng(run.seed)
    out = []
    for index, entry in enumerate(run.entries):
        checkpoint(cancel, progress, 0.6 + 0.4 * index / len(run.entries))
        sides = [on_d, *(s for s in every[1:] if s.applies(units[index]))]
        neighbours = tuple(s.name for s in sides[1:])
        number = index + 1
        statistic = str(queries[index].describe())
        replay, detail, sensitivity = _replay(index, sides)
        released = len(on_d.fields) > index
        item = on_d.prepared[index] if released else None
        refused = on_d.refusal[1] if on_d.refusal is not None and on_d.refusal[0] in (number, None) else None
        if not released:
            box = _BlackBox(None, "not run: the entry is not released on D", "")
        elif draws == 0:
            box = _BlackBox(None, "not run (draws 0)", "")
        else:
            box = black_box(index, sides, run, draws, confidence, rng, cancel)
        out.append(
            EntryAudit(
                number,
                str(entry["mechanism"]),
                statistic,
                replay,
                box.lower_bound,
                None if item is None else float(item.exact.epsilon),
                None if item is None else float(item.exact.delta),
                neighbours,
                sensitivity,
                _stressing(index, sides) if box.neighbour not in ("", "canaries put in D") else (),
                box.test,
                box.neighbour,
                refused,
                detail,
            )
        )
    return out


def _refusal_concerns(number: int, refusals: Sequence[tuple[int | None, str] | None]) -> bool:
    """Whether refusals that differ concern entry ``number``: it is named, or one refuses the
    whole plan (no entry named)."""
    named = {r[0] for r in refusals if r is not None}
    return number in named or None in named


def _replay(index: int, sides: Sequence[_Side]) -> tuple[str, dict[str, Any] | None, str]:
    """(replay, detail, sensitivity) of entry ``index``: the first finding over the neighbours,
    in their order (a refusal that differs, a field that differs, a movement beyond the declared
    sensitivity), else "pass"."""
    on_d, number = sides[0], index + 1
    released = len(on_d.fields) > index
    for side in sides[1:]:
        if on_d.refusal != side.refusal and _refusal_concerns(number, (on_d.refusal, side.refusal)):
            what = f"the release refuses differently on {side.name!r}"
            return "refusal", _detail(side.name, what, on_d.refusal, side.refusal), "n/a (refused)"
        if not released or len(side.fields) <= index:
            continue
        item = on_d.prepared[index]
        prefixes = _prefixes(item, on_d.private_labels[index] or side.private_labels[index])
        path = first_difference(on_d.fields[index], side.fields[index], prefixes)
        if path is not None:
            a, b = on_d.fields[index].get(path, "(absent)"), side.fields[index].get(path, "(absent)")
            what = f"{path} differs on {side.name!r}: {a!r} on D, {b!r} on the neighbour"
            return path, _detail(side.name, what, a, b), "not checked"
        moved = _movement(side.name, item, on_d, side, index)
        if moved is not None:
            return "result.values", _detail(side.name, moved, None, None), moved
    if not released:
        return "pass", None, "n/a (not released on D)"
    item = on_d.prepared[index]
    if on_d.private_labels[index] and item.query.get("type") != "marginals":
        return "pass", None, "n/a (noise per private candidate key: the keys released are a DP output)"
    if additive_norm(item) is None and item.query.get("type") != "marginals":
        return "pass", None, "n/a (not an additive-noise release)"
    return "pass", None, "pass"


def _detail(neighbour: str, what: str, on_d: Any, on_dp: Any) -> dict[str, Any]:
    return {"neighbour": neighbour, "what": what, "on_d": _jsonable(on_d), "on_neighbour": _jsonable(on_dp)}


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)
    return value
