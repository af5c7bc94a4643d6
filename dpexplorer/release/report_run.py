"""The report of one run, rebuilt from the ledger and the provenance files (issue 32).

A run of ``dpexplorer release`` draws one random token; every release of the run records it in
its provenance (``run``: token, its entry in the plan, the dataset's name), and the run's report
is named after it (:func:`report_names`: ``report-<token>.html`` and ``.pdf``), so two runs into
one folder never want the same names, and nothing is ever replaced.

:func:`report_of_run` builds the report of the run a ledger row belongs to from what was
published only: the ledger (guarantees charged, the budget) and the released files (values,
intervals, DP outputs, declared facts in the provenance). ``dpexplorer release --report`` writes
its report through it and ``dpexplorer report --ledger L --row N`` regenerates it the same way,
so the two are equal except for the time written on them (and for the budget's line, if the
steward changed the dataset's budget in between). What the report calls "before" is what the
ledger charged the dataset in rows older than the run's first row; "after" adds the run's rows
(a run racing another into one ledger shows its own cost, not the other's)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.release.ledger import Ledger, Measurement, guarantee_from_dict
from dpexplorer.release.report_model import (
    SYNTHETIC,
    Report,
    ReportItem,
    budget_lines,
    released_risk,
    report_item,
    with_costs,
)

PUBLIC_FACT_KEYS = (
    "statistic",
    "sensitivity_l1",
    "sensitivity_l2",
    "bounds",
    "output_range",
    "utility_sensitivity",
    "sensitivity",
)
"""The keys :func:`dpexplorer.release.release._public_facts` writes into a provenance."""


class ReportSourceError(DPExplorerError):
    """The ledger row or the files a report is rebuilt from are missing or unreadable."""


def report_names(
    token: str, directory: str | os.PathLike[str], *, regenerate: bool = False
) -> tuple[Path, Path]:
    """(HTML path, PDF path) of the report of the run ``token`` in ``directory``:
    ``report-<token>.html``/``.pdf``. With ``regenerate``, the first pair of which neither file
    exists (``report-<token>-2``, ``-3``, ... after the first), so that a regenerated report never
    replaces one; without, the plain pair (the caller checks it is free)."""
    folder = Path(directory)
    for number in range(1, 10_000):
        stem = f"report-{token}" if number == 1 else f"report-{token}-{number}"
        pair = folder / f"{stem}.html", folder / f"{stem}.pdf"
        if not regenerate or not any(p.exists() or p.is_symlink() for p in pair):
            return pair
    raise ReportSourceError(f"{folder} holds 10,000 reports of run {token}: choose another --out")


def check_names_free(paths: Sequence[Path]) -> None:
    """ReportSourceError if any of ``paths`` exists (nothing is ever replaced)."""
    for path in paths:
        if path.exists() or path.is_symlink():
            raise ReportSourceError(
                f"{path} already exists: nothing is ever overwritten; choose another --out"
            )


def write_report(
    report: Report, html_path: Path, pdf_path: Path, write_pdf: Callable[[Report, Path], object]
) -> None:
    """Write ``report`` as HTML then PDF (``write_pdf``: :func:`dpexplorer.report_pdf.write_pdf`,
    passed in because this layer does not import Qt), each to a hidden temporary name linked into
    place (never replacing a file), under the folder's lock
    (:func:`~dpexplorer.release.export.directory_lock`), so that what a killed writer leaves is
    removed by the next release into the folder and a live writer's is not."""
    from dpexplorer.release.export import atomic_write, directory_lock
    from dpexplorer.release.report import render_html

    with directory_lock(html_path.parent):
        atomic_write(html_path, render_html(report))
        write_pdf(report, pdf_path)


@dataclass(frozen=True)
class _Released:
    row: Measurement
    provenance: dict[str, Any]
    labels: tuple[str, ...]
    values: tuple[float | str, ...]


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportSourceError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportSourceError(f"{what} {path} is not valid JSON: {exc}") from None


def _sidecar_path(row: Measurement, ledger: Ledger) -> Path:
    if row.status != "released" or not row.export_path:
        why = f": {row.note}" if row.note else ""
        raise ReportSourceError(
            f"ledger row {row.id} was not released (status {row.status}{why}): it has no report"
        )
    path = Path(row.export_path)
    if not path.is_absolute() and not path.exists():  # written with a relative --out
        path = ledger.path.parent / path
    return path


def _released(row: Measurement, ledger: Ledger, provenance: dict[str, Any] | None = None) -> _Released:
    path = _sidecar_path(row, ledger)
    if provenance is None:
        provenance = _read_json(path, "the provenance")
    if not isinstance(provenance, dict) or provenance.get("ledger_row_id") != row.id:
        raise ReportSourceError(f"{path} is not the provenance of ledger row {row.id}")
    if str(provenance.get("statistic", "")).startswith(SYNTHETIC):
        return _synthetic(row, provenance)
    name = (provenance.get("files") or {}).get("json")
    if not isinstance(name, str):
        raise ReportSourceError(f"{path} names no file of released values")
    document = _read_json(path.parent / name, "the released values")
    try:
        pairs = [(str(v["label"]), v["value"]) for v in document["values"]]
    except (KeyError, TypeError) as exc:
        raise ReportSourceError(f"{path.parent / name} holds no released values ({exc})") from None
    return _Released(row, provenance, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))


def _synthetic(row: Measurement, provenance: dict[str, Any]) -> _Released:
    """A synthetic table (MST, AIM): what the report shows of it is in its provenance (the
    records written, the marginals measured and their noise); its records file is not read."""
    outputs = provenance.get("dp_outputs") or {}
    if not isinstance(outputs, dict):
        raise ReportSourceError(f"the provenance of ledger row {row.id} lacks its DP outputs")
    rows = outputs.get("synthetic_rows")
    measured = outputs.get("measured")
    return _Released(
        row,
        provenance,
        ("synthetic records", "measured marginals"),
        (
            float(rows) if isinstance(rows, int | float) else "not recorded",
            float(len(measured)) if isinstance(measured, list) else "not recorded",
        ),
    )


def _item(released: _Released) -> ReportItem:
    """The published parts of one release, as :func:`report_item` reads them at release time:
    stand-ins for the PreparedRelease and ReleaseResult built from the provenance."""
    p = released.provenance
    facts = p.get("public_facts")
    if not isinstance(facts, Mapping):
        facts = {k: p[k] for k in PUBLIC_FACT_KEYS if k in p}
    run = p.get("run") or {}
    intervals = p.get("confidence_interval")
    prepared = SimpleNamespace(
        exact=SimpleNamespace(
            dp_outputs=dict(p.get("dp_outputs") or {}), provenance=dict(p.get("discretisation") or {})
        ),
        query=dict(p.get("query") or {}),
        public_facts=dict(facts),
        mechanism=str(p.get("mechanism", "")),
        parameters=dict(p.get("parameters") or {}),
        relation=str(p.get("relation", "add_remove")),
        origins={"fact_origins": p.get("fact_origins") or [], "codebook": p.get("codebook")},
    )
    try:
        result = SimpleNamespace(
            row_id=released.row.id,
            labels=released.labels,
            values=released.values,
            confidence_intervals=None
            if intervals is None
            else tuple(None if ci is None else (float(ci[0]), float(ci[1])) for ci in intervals),
            ci_level=float(p.get("confidence_level") or run.get("ci_level") or 0.95),
            epsilon=float(p["epsilon"]),
            delta=float(p["delta"]),
            rho=None if p.get("rho") is None else float(p["rho"]),
            guarantee=guarantee_from_dict(p["guarantee_charged"]),
            sampler=str(p.get("sampler", "")),
            interval_kinds=tuple(p.get("interval_kinds") or ()),
        )
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ReportSourceError(
            f"the provenance of ledger row {released.row.id} lacks what a report needs ({exc})"
        ) from None
    return report_item(prepared, result)


def run_rows(ledger: Ledger, row_id: int) -> list[_Released]:
    """The released rows of the run ledger row ``row_id`` belongs to, oldest first (the row
    alone when its provenance names no run, e.g. a release from the window)."""
    row = ledger.measurement(row_id)
    if row is None:
        raise ReportSourceError(f"the ledger {ledger.path} has no row {row_id}")
    first = _released(row, ledger)
    token = (first.provenance.get("run") or {}).get("token")
    if not token:
        return [first]
    folder = _sidecar_path(row, ledger).parent
    found = []
    for other in ledger.measurements(row.fingerprint):
        if other.status != "released" or not other.export_path:
            continue
        path = _sidecar_path(other, ledger)
        if path.parent != folder or token not in path.name:
            continue  # a run writes into one folder; its token is in every file name
        if other.id == row.id:
            found.append(first)
            continue
        provenance = _read_json(path, "the provenance")
        if isinstance(provenance, dict) and (provenance.get("run") or {}).get("token") == token:
            found.append(_released(other, ledger, provenance))
    return found


def report_of_run(ledger: Ledger, row_id: int) -> Report:
    """The report of the run ledger row ``row_id`` belongs to (module docstring), from the
    ledger and the files only. ReportSourceError names what is missing."""
    rows = run_rows(ledger, row_id)
    fingerprint = rows[0].row.fingerprint
    first = rows[0].row.id
    history = ledger.measurements(fingerprint)
    before = [m.guarantee for m in history if m.id < first]
    after = before + [r.row.guarantee for r in rows]
    budget = ledger.budget(fingerprint)
    items = with_costs(tuple(_item(r) for r in rows), budget, before)
    run = rows[0].provenance.get("run") or {}
    plan: list[dict[str, Any]] = [
        {"query": i.query, "mechanism": i.mechanism, "parameters": i.parameters} for i in items
    ]
    claim = rows[0].provenance.get("sampling_claim")
    if isinstance(claim, Mapping) and "poisson_rate" in claim:
        plan = [{"sampling": {"rate": claim["poisson_rate"]}}, *plan]
    lines = budget_lines(budget, before, after)
    dataset_id = ledger.public_id(fingerprint)
    return Report(
        dataset=str(run.get("dataset") or f"dataset {dataset_id}"),
        dataset_id=dataset_id,
        items=items,
        budget=budget,
        budget_lines=lines,
        plan=plan,
        ledger_path=os.path.abspath(ledger.path),
        risk=released_risk(after, budget, lines),
    )
