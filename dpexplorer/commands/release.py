"""`dpexplorer release PLAN.json --data PATH_OR_TABLE --out DIR [--codebook FILE]
[--date-format COLUMN=FORMAT ...] [--ledger PATH]
[--dataset NAME] [--tie-to DATASET | --distinct] [--budget-epsilon E --budget-delta D]
[--engine polars|spark [--spark-master URL]]`: release
every statistic of a plan through the exact samplers, charged to the dataset's budget in the
ledger. With ``--engine spark`` the true answers are computed on Spark (dpexplorer.data.engine);
noise, accounting, ledger and export stay in this process. The plan format is documented in
``dpexplorer/release/PLAN_FORMAT.md`` and the user guide (docs/guide/cli.md, Releasing statistics).

The codebook (``--codebook FILE``; the bundled Adult's shipped one when none is given,
docs/guide/codebook.md) supplies the public facts an entry leaves out; a plan that contradicts
it, or uses a fact neither declares, is refused before the data are opened. It also says how
the file's types are read (:func:`dpexplorer.data.codebook.declared_types`): a text file's
category, identifier and text columns stay text, a day column is read in its ``date_format``;
``--date-format COLUMN=FORMAT`` (e.g. ``date=%d/%m/%Y``) declares one on the command line.

The whole plan is validated first (file, every query, mechanism and parameter, an exact release
path for each, the output directory, and the plan's total against the remaining budget);
nothing is charged unless all of it passes. Then each entry is charged, drawn and written, with
one line per entry on stdout as it goes. A step that runs longer than about two seconds (reading
the file, the plan's answers, a synthetic table's fits, PMW, Spark) shows its progress on stderr:
a bar on a terminal, one line a stage otherwise (:mod:`dpexplorer.commands.progress`). Exit
codes (:mod:`dpexplorer.commands.errors`): 0 done, 2 bad input, 3 refused by the budget, 4 an
entry was charged but not released, 130 interrupted; errors are one line on stderr."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from dpexplorer.commands.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_NOT_RELEASED,
    EXIT_REFUSED,
    fail,
)
from dpexplorer.commands.progress import CommandProgress
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.stages import reporting, stage
from dpexplorer.release.plan_run import (  # the release layer's: the API and the window read plans too
    PlanError,
    read_plan_file,
)
from dpexplorer.release.presentation import privacy_number

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_REFUSED",
    "PlanError",
    "add_arguments",
    "read_plan",
    "read_plan_file",
    "run",
]


MAX_VALUES_SHOWN = 20
"""At most this many values on an entry's line (a group-by may release thousands: the CSV has all)."""


PROGRESS_FROM = 100
"""A plan of this many entries or more says so from its first entry while it is checked."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("plan", metavar="PLAN.json", help="JSON list of {query, mechanism, parameters}")
    parser.add_argument(
        "--data",
        required=True,
        metavar="PATH_OR_TABLE",
        help="CSV, TSV or Parquet dataset; with --engine spark also a Parquet directory or a table name",
    )
    parser.add_argument(
        "--engine",
        choices=("polars", "spark"),
        default="polars",
        help="where the true answers are computed: polars (embedded, default) or Spark "
        '(needs pip install "dpexplorer[spark]" and Java); noise, ledger and export stay here',
    )
    parser.add_argument(
        "--spark-master",
        metavar="URL",
        help="Spark master for --engine spark: local[*] (default) or spark://host:7077",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for the released files")
    parser.add_argument(
        "--codebook",
        metavar="FILE",
        help="the dataset's codebook (JSON, docs/guide/codebook.md): public facts the plan leaves out; "
        "default: the shipped one for the bundled Adult, else none",
    )
    parser.add_argument(
        "--date-format",
        action="append",
        default=[],
        metavar="COLUMN=FORMAT",
        help="COLUMN holds days written in FORMAT (%%d, %%m and %%Y between separators, e.g. "
        "date=%%d/%%m/%%Y); repeat for several columns; wins over the codebook's date_format",
    )
    parser.add_argument("--ledger", metavar="PATH", help="budget ledger (default: per-user data dir)")
    parser.add_argument(
        "--dataset",
        metavar="NAME",
        help="file the budget under this name (group several files of one dataset under one budget)",
    )
    parser.add_argument(
        "--tie-to",
        metavar="DATASET",
        help="these data are the same people as DATASET of the ledger (a key or name, as a refusal "
        "names it): charge its budget, from now on",
    )
    parser.add_argument(
        "--distinct",
        action="store_true",
        help="these data are other people than the dataset their columns match (remembered)",
    )
    parser.add_argument("--budget-epsilon", metavar="E", help="set the dataset's total epsilon")
    parser.add_argument("--budget-delta", default=None, metavar="D", help="set the dataset's total delta")
    parser.add_argument(
        "--accountant",
        default="basic",
        help="composition method of a budget set here: basic, advanced, optimal, zcdp, rdp, pld",
    )
    parser.add_argument("--ci-level", default="0.95", help="confidence level of the intervals")
    parser.add_argument(
        "--report",
        action="store_true",
        help="also write report-<token>.html and .pdf (for readers) in DIR; checked before the charge",
    )


def _number(name: str, text: str | None) -> float | None:
    """The option's value as a float (None if absent); PlanError naming the option otherwise."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        raise PlanError(f"--{name} must be a number; got {text!r}") from None


def read_plan(path: str | Path) -> list[dict[str, Any]]:
    """The plan's entries, each with ``query`` (dict), ``mechanism`` (str), ``parameters``
    (dict, may be absent); PlanError says which entry is wrong and how."""
    return read_plan_file(path)[0]


def read_codebook(args: argparse.Namespace) -> Any:
    """The codebook of ``--codebook FILE`` (DataError naming the file when it is not one), else
    the one shipped for the bundled dataset ``--data`` names, else None."""
    from dpexplorer.data.codebook import load_codebook, shipped_codebook

    if args.codebook is not None:
        return load_codebook(args.codebook)
    return shipped_codebook(args.data)


def declared_types(args: argparse.Namespace, codebook: Any) -> Any:
    """How the file's types are read: the codebook's declarations and each ``--date-format
    COLUMN=FORMAT`` (:func:`dpexplorer.data.codebook.declared_types`); PlanError naming a
    malformed option."""
    from dpexplorer.data.codebook import declared_types as of_codebook

    formats: dict[str, str] = {}
    for option in args.date_format:
        column, sep, fmt = option.partition("=")
        if not sep or not column or not fmt:
            raise PlanError(f"--date-format takes COLUMN=FORMAT, e.g. date=%d/%m/%Y; got {option!r}")
        formats[column] = fmt
    return of_codebook(codebook, formats)


def _prepare_all(
    args: argparse.Namespace,
    plan: tuple[list[dict[str, Any]], float | None],
    dataset: Any,
    ledger: Any,
    codebook: Any,
) -> list[Any]:
    from dpexplorer.release.plan_run import prepare_plan

    entries, rate = plan
    ci_level = _number("ci-level", args.ci_level)
    assert ci_level is not None  # the option has a default
    lines = _Progress()
    with stage("checking the plan and computing its answers (nothing charged yet)") as report:

        def prepared(number: int, total: int) -> None:
            lines(number, total)
            report(number / total)

        return prepare_plan(
            dataset,
            entries,
            rate,
            ledger,
            ci_level=ci_level,
            dataset_name=args.dataset,
            on_prepared=prepared,
            codebook=codebook,
        )


class _Progress:
    """Lines on stdout while a plan is checked (before anything is charged): from the first
    entry of a plan of :data:`PROGRESS_FROM` entries or more, then about every second (and for
    any plan whose check takes that long)."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def __call__(self, number: int, total: int) -> None:
        now = time.monotonic()
        if (number == 1 and total >= PROGRESS_FROM) or now - self.last >= 1.0:
            self.last = now
            print(f"checking plan entry {number:,} of {total:,} (nothing charged yet)", flush=True)


def _set_budget(args: argparse.Namespace, ledger: Any, key: str) -> None:
    epsilon, delta = (
        _number("budget-epsilon", args.budget_epsilon),
        _number("budget-delta", args.budget_delta),
    )
    if epsilon is None and delta is None:
        return
    if epsilon is None:
        raise PlanError("--budget-delta needs --budget-epsilon as well")
    ledger.set_budget(key, epsilon, 0.0 if delta is None else delta, args.accountant)


def _open_early(args: argparse.Namespace, declared: Any = None) -> Future[Any] | None:
    """The dataset opened on a daemon thread from the command's start (polars engine): once that
    thread has imported polars and the loader, polars reads the file outside the GIL while this
    thread imports the release layer and the engine (only then: two threads importing at once
    mostly wait for each other's import locks and the GIL), and the ledger key's kernels load
    alongside (:func:`dpexplorer.data.identity.preload`). Started once the plan file has been
    read; its errors are raised where the result is asked for, after the plan's other checks,
    as before."""
    if args.engine != "polars":
        return None
    future: Future[Any] = Future()
    imported = threading.Event()

    def work() -> None:
        try:
            from dpexplorer.data.identity import preload
            from dpexplorer.data.scan import open_file

            imported.set()
            preload(args.data)
            future.set_result(open_file(args.data, declared=declared))
        except BaseException as exc:  # raised in the main thread by result()
            future.set_exception(exc)
        finally:
            imported.set()

    threading.Thread(target=work, name="open-dataset", daemon=True).start()
    imported.wait()
    return future


def _release_all(
    args: argparse.Namespace,
    plan: Any,
    progress: dict[str, Any],
    opening: Future[Any] | None,
    codebook: Any = None,
    declared: Any = None,
) -> int:
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.plan_run import release_prepared

    if args.spark_master and args.engine != "spark":
        raise PlanError("--spark-master needs --engine spark")
    if args.tie_to is not None and (args.dataset is not None or args.distinct):
        raise PlanError(
            "--tie-to files the data under a known dataset: give it without --dataset or --distinct"
        )
    if opening is not None:
        # what preparing needs, imported while polars reads
        import dpexplorer.data.engine
        import dpexplorer.release.release  # noqa: F401

        with stage(f"reading {Path(args.data).name}", measured=False):
            dataset = opening.result()
    else:
        from dpexplorer.data.engine import open_dataset

        with stage(f"starting Spark and opening {args.data}", measured=False):
            dataset = open_dataset(args.data, args.engine, spark_master=args.spark_master, declared=declared)
    for warning in getattr(dataset, "warnings", ()):
        print(
            f"dpexplorer release: note: {Path(args.data).name}: {' '.join(warning.split())}", file=sys.stderr
        )
    with Ledger(args.ledger) as ledger:
        prepared = _same_people(
            args, dataset, ledger, _in_run(args, _prepare_all(args, plan, dataset, ledger, codebook))
        )
        key = prepared[0].fingerprint
        _set_budget(args, ledger, key)
        from dpexplorer.release.costs import plan_cost_lines

        for line in plan_cost_lines(prepared, ledger):  # before anything is charged
            print(line, flush=True)
        if args.report:
            _check_report(args, prepared[0].run["token"])
        progress["total"] = len(prepared)

        def shown(number: int, item: Any, result: Any) -> None:
            progress["released"] = number
            values = result.text(MAX_VALUES_SHOWN)
            print(f"[{number}/{len(prepared)}] {result.files['provenance'].name}: {values}", flush=True)

        released = release_prepared(prepared, ledger, os.path.abspath(args.out), shown)
        left = ledger.remaining(key)
        if args.report:
            _write_report(args, ledger, released[0][1].row_id, prepared[0].run["token"])
    print(f"epsilon left for this dataset: {privacy_number(left)}")
    return 0


def _same_people(args: argparse.Namespace, dataset: Any, ledger: Any, prepared: list[Any]) -> list[Any]:
    """The plan filed under the dataset the steward chose, before any budget is set: a dataset
    new to the ledger whose columns hold a known dataset's (renamed, projected, a constant
    column added) is refused until ``--tie-to`` or ``--distinct`` says which
    (:func:`dpexplorer.release.same_people.choose`)."""
    import dataclasses

    from dpexplorer.release.same_people import choose

    key = prepared[0].fingerprint
    chosen = choose(
        dataset, ledger, key, source=Path(args.data).name, tie_to=args.tie_to, distinct=args.distinct
    )
    return prepared if chosen == key else [dataclasses.replace(item, fingerprint=chosen) for item in prepared]


def _in_run(args: argparse.Namespace, prepared: list[Any]) -> list[Any]:
    """The plan's releases marked as one run (:func:`dpexplorer.release.plan_run.in_run`)."""
    from dpexplorer.release.plan_run import in_run

    return in_run(prepared, Path(args.data).name)


def _check_report(args: argparse.Namespace, token: str) -> None:
    """Before anything is charged: the report's names are free and Qt can draw its PDF (the
    folder's writability is checked with the releases' files)."""
    from dpexplorer.release.export import ExportError
    from dpexplorer.release.report_run import check_names_free, report_names

    check_names_free(report_names(token, args.out))
    try:
        from dpexplorer.report_pdf import check_renderer  # Qt, loaded only for --report
    except ImportError as exc:
        raise ExportError(f"the report's PDF needs Qt (PySide6), which cannot be loaded: {exc}") from None
    check_renderer()


def _write_report(args: argparse.Namespace, ledger: Any, first_row: int, token: str) -> None:
    """report-<token>.html and .pdf in DIR, rebuilt from the ledger and the files just written
    (:func:`dpexplorer.release.report_run.report_of_run`, as ``dpexplorer report`` does). Whatever
    fails here, after the charge, is a warning naming the command that writes the report again,
    never a failed run."""
    import shlex

    try:
        from dpexplorer.release.report_run import report_names, report_of_run, write_report
        from dpexplorer.report_pdf import write_pdf  # Qt, loaded only for --report

        report = report_of_run(ledger, first_row)
        html_path, pdf_path = report_names(token, args.out)
        write_report(report, html_path, pdf_path, write_pdf)
        print(f"report: {html_path}, {pdf_path}")
    except (Exception, KeyboardInterrupt) as exc:  # the budget is spent and the values are out
        reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc) or type(exc).__name__
        command = shlex.join(
            ["dpexplorer", "report", "--ledger", os.path.abspath(ledger.path), "--row", str(first_row)]
        )
        print(
            f"dpexplorer release: warning: every statistic was released and charged, but the report "
            f"could not be written ({' '.join(reason.split())}); write it with: {command}",
            file=sys.stderr,
        )


def run(args: argparse.Namespace) -> int:
    """Validate the plan, then release it; one line on stderr and a documented non-zero code on
    failure (module docstring). The plan is read first: a plan that is not one is refused
    before the data are opened."""
    from dpexplorer.release.plan_run import check_codebook

    try:
        plan = read_plan_file(args.plan)
        codebook = read_codebook(args)
        check_codebook(plan[0], codebook)
        declared = declared_types(args, codebook)
    except (DPExplorerError, OSError) as exc:
        return fail("release", str(exc), EXIT_BAD_INPUT)
    opening = _open_early(args, declared)
    from dpexplorer.release.charge import ReleaseFailedError
    from dpexplorer.release.ledger import BudgetExceededError

    progress: dict[str, Any] = {"total": 0, "released": 0}
    try:
        with reporting(CommandProgress("dpexplorer release")):
            return _release_all(args, plan, progress, opening, codebook, declared)
    except ReleaseFailedError as exc:
        done = f"{progress['released']} of {progress['total']} entries were released before it"
        code = EXIT_INTERRUPTED if exc.interrupted else EXIT_NOT_RELEASED
        return fail("release", f"{exc}; {done}", code)
    except KeyboardInterrupt:
        done = f"{progress['released']} of {progress['total']} entries released"
        return fail("release", f"interrupted; nothing was charged for the rest; {done}", EXIT_INTERRUPTED)
    except BudgetExceededError as exc:
        return fail("release", str(exc), EXIT_REFUSED)
    except (DPExplorerError, OSError) as exc:
        return fail("release", str(exc), EXIT_BAD_INPUT)
