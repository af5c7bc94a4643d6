"""`dpexplorer report --ledger L --row N [--out DIR]`: write again the report of a past release.

The report of the run that ledger row N belongs to (every statistic the run released) is
rebuilt from the ledger and the run's provenance files (:mod:`dpexplorer.release.report_run`),
exactly as ``dpexplorer release --report`` wrote it, except for the time on it. It is written
beside the release's files (or into DIR) as ``report-<run token>.html`` and ``.pdf``, or, if a
report of that run is already there, ``report-<run token>-2.html`` and so on: nothing is ever
replaced. Nothing is charged, nothing is drawn. Exit codes: 0 done, 2 bad input (no such row,
a row that was never released, a provenance or values file missing or unreadable, a folder
that cannot be written); errors are one line on stderr."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from dpexplorer.commands.errors import EXIT_BAD_INPUT, fail
from dpexplorer.core.errors import DPExplorerError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ledger", metavar="PATH", help="budget ledger (default: per-user data dir)")
    parser.add_argument(
        "--row", required=True, metavar="N", help="a ledger row of the release (any row of its run)"
    )
    parser.add_argument(
        "--out", metavar="DIR", help="folder for the report (default: the folder of the release's files)"
    )


def regenerate(ledger_path: str | None, row: int, out: str | None) -> tuple[Path, Path]:
    """Write the report of the run of ``row``; returns (HTML path, PDF path)."""
    from dpexplorer.release.export import check_output_dir
    from dpexplorer.release.ledger import Ledger, default_ledger_path
    from dpexplorer.release.report_run import report_names, report_of_run, run_rows, write_report

    where = Path(ledger_path) if ledger_path is not None else default_ledger_path()
    if not where.is_file():  # never create an empty ledger to read from
        raise DPExplorerError(f"there is no ledger at {where}: name it with --ledger")
    with Ledger(ledger_path) as ledger:
        rows = run_rows(ledger, row)
        report = report_of_run(ledger, row)
    token = (rows[0].provenance.get("run") or {}).get("token") or f"row-{rows[0].row.id:06d}"
    folder = Path(out) if out is not None else Path(rows[0].row.export_path or ".").parent
    check_output_dir(folder)
    html_path, pdf_path = report_names(token, folder, regenerate=True)
    try:
        from dpexplorer.report_pdf import write_pdf  # Qt, imported only here
    except ImportError as exc:
        raise DPExplorerError(f"the report's PDF needs Qt (PySide6), which cannot be loaded: {exc}") from None

    write_report(report, html_path, pdf_path, write_pdf)
    return html_path, pdf_path


def run(args: argparse.Namespace) -> int:
    """Regenerate the report; one line on stderr and exit 2 for bad input."""
    try:
        row = int(args.row)
        if row < 1:
            raise ValueError
    except ValueError:
        return fail(
            "report", f"--row must be a ledger row number (1, 2, ...); got {args.row!r}", EXIT_BAD_INPUT
        )
    try:
        html_path, pdf_path = regenerate(args.ledger, row, args.out)
    except (DPExplorerError, OSError) as exc:
        message = (
            str(exc) if isinstance(exc, DPExplorerError) else f"{exc.strerror or exc}: {exc.filename or ''}"
        )
        return fail("report", message, EXIT_BAD_INPUT)
    print(f"report: {os.fspath(html_path)}, {os.fspath(pdf_path)}")
    return 0
