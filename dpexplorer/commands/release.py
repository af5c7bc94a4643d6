"""`dpexplorer release PLAN.json --data PATH_OR_TABLE --out DIR [--ledger PATH] [--budget-epsilon E
--budget-delta D] [--engine polars|spark [--spark-master URL]]`: release every statistic of a
plan through the exact samplers, charged to the dataset's budget in the ledger. With
``--engine spark`` the true answers are computed on Spark (dpexplorer.data.engine); noise,
accounting, ledger and export stay in this process. The plan format is documented in
``dpexplorer/release/PLAN_FORMAT.md``.

The whole plan is validated first (file, every query, mechanism and parameter, an exact release
path for each, and the plan's total against the remaining budget); nothing is charged unless
all of it passes. Exit codes: 0 done, 2 bad input, 3 refused by the budget; errors are one line
on stderr."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dpexplorer.core.errors import DPExplorerError

EXIT_BAD_INPUT = 2
EXIT_REFUSED = 3


class PlanError(DPExplorerError):
    """The plan file is malformed."""


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
    parser.add_argument("--ledger", metavar="PATH", help="budget ledger (default: per-user data dir)")
    parser.add_argument("--budget-epsilon", type=float, metavar="E", help="set the dataset's total epsilon")
    parser.add_argument(
        "--budget-delta", type=float, default=None, metavar="D", help="set the dataset's total delta"
    )
    parser.add_argument(
        "--accountant",
        default="basic",
        help="composition method of a budget set here: basic, advanced, optimal, zcdp, rdp, pld",
    )
    parser.add_argument("--ci-level", type=float, default=0.95, help="confidence level of the intervals")
    parser.add_argument(
        "--report", action="store_true", help="also write report.html and report.pdf (for readers) in DIR"
    )


def read_plan(path: str | Path) -> list[dict[str, Any]]:
    """The plan's entries, each with ``query`` (dict), ``mechanism`` (str), ``parameters``
    (dict, may be absent); PlanError says which entry is wrong and how."""
    return read_plan_file(path)[0]


def read_plan_file(path: str | Path) -> tuple[list[dict[str, Any]], float | None]:
    """(entries, declared Poisson sampling rate or None). A plan is a JSON list of entries, or an
    object ``{"sampling": {"rate": Q}, "measurements": [...]}`` whose ``sampling`` is the steward's
    claim that the data are a secret Poisson sample of rate Q of a population."""
    try:
        plan = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PlanError(f"cannot read the plan {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise PlanError(f"the plan {path} is not valid JSON: {exc}") from None
    rate = None
    if isinstance(plan, dict):
        sampling = plan.get("sampling")
        if (
            set(plan) - {"sampling", "measurements"}
            or not isinstance(sampling, dict)
            or set(sampling) != {"rate"}
        ):
            raise PlanError('a plan object must be {"sampling": {"rate": Q}, "measurements": [...]}')
        rate = sampling["rate"]
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 1:
            raise PlanError(f"the plan's sampling rate must satisfy 0 < rate <= 1, got {rate!r}")
        plan = plan["measurements"]
    if not isinstance(plan, list) or not plan:
        raise PlanError("the plan must be a non-empty JSON list of {query, mechanism, parameters}")
    entries = []
    for number, entry in enumerate(plan, start=1):
        if not isinstance(entry, dict) or set(entry) - {"query", "mechanism", "parameters"}:
            raise PlanError(f"plan entry {number} must be an object with keys query, mechanism, parameters")
        query, mechanism, params = entry.get("query"), entry.get("mechanism"), entry.get("parameters", {})
        if not isinstance(query, dict) or not isinstance(mechanism, str) or not isinstance(params, dict):
            raise PlanError(
                f"plan entry {number} needs a query object, a mechanism name and a parameters object"
            )
        entries.append({"query": query, "mechanism": mechanism, "parameters": params})
    return entries, None if rate is None else float(rate)


def _prepare_all(args: argparse.Namespace, dataset: Any) -> list[Any]:
    from dpexplorer.data.queries import query_from_dict
    from dpexplorer.release.release import prepare, with_sampling_rate

    prepared = []
    entries, rate = read_plan_file(args.plan)
    for number, entry in enumerate(entries, start=1):
        try:
            query = query_from_dict(entry["query"])
            item = prepare(dataset, query, entry["mechanism"], entry["parameters"], ci_level=args.ci_level)
            prepared.append(item if rate is None else with_sampling_rate(item, rate))
        except (DPExplorerError, KeyError, TypeError, ValueError) as exc:
            raise PlanError(f"plan entry {number}: {exc}") from None
    return prepared


def _release_all(args: argparse.Namespace) -> int:
    from dpexplorer.data.engine import open_dataset
    from dpexplorer.release.export import remove_partial_files
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.release import charged_guarantee, execute

    if args.spark_master and args.engine != "spark":
        raise PlanError("--spark-master needs --engine spark")
    dataset = open_dataset(args.data, args.engine, spark_master=args.spark_master)
    prepared = _prepare_all(args, dataset)
    fingerprint = dataset.fingerprint
    with Ledger(args.ledger) as ledger:
        if args.budget_epsilon is not None or args.budget_delta is not None:
            if args.budget_epsilon is None:
                raise PlanError("--budget-delta needs --budget-epsilon as well")
            delta = 0.0 if args.budget_delta is None else args.budget_delta
            ledger.set_budget(fingerprint, args.budget_epsilon, delta, args.accountant)
        ledger.check(fingerprint, [charged_guarantee(item, ledger) for item in prepared])
        remove_partial_files(args.out)
        before = [m.guarantee for m in ledger.measurements(fingerprint)]
        released = []
        for item in prepared:
            result = execute(item, ledger=ledger, out_dir=args.out)
            released.append((item, result))
            shown = ", ".join(f"{k} = {v}" for k, v in zip(result.labels, result.values, strict=True))
            print(f"{result.files['provenance'].name}: {shown}")
        left = ledger.remaining(fingerprint)
        if args.report:
            _write_report(args, dataset, ledger, before, released)
    print(f"epsilon left for this dataset: {left:.6g}")
    return 0


def _write_report(
    args: argparse.Namespace, dataset: Any, ledger: Any, before: list[Any], released: list[Any]
) -> None:
    """report.html and report.pdf in DIR: released values only (dpexplorer/release/report.py)."""
    from dpexplorer.release.report import build_report, write_html
    from dpexplorer.report_pdf import write_pdf  # Qt, loaded only for --report

    entries, rate = read_plan_file(args.plan)
    plan = entries if rate is None else [{"sampling": {"rate": rate}}, *entries]
    report = build_report(
        dataset=Path(args.data).name,
        fingerprint=dataset.fingerprint,
        released=released,
        ledger=ledger,
        before=before,
        plan=plan,
    )
    print(f"report: {write_html(report, args.out)}, {write_pdf(report, Path(args.out) / 'report.pdf')}")


def run(args: argparse.Namespace) -> int:
    """Validate the plan, then release it; one line on stderr and a non-zero code on failure."""
    from dpexplorer.release.ledger import BudgetExceededError

    try:
        return _release_all(args)
    except BudgetExceededError as exc:
        return _fail(exc, EXIT_REFUSED)
    except (DPExplorerError, OSError) as exc:
        return _fail(exc, EXIT_BAD_INPUT)


def _fail(exc: BaseException, code: int) -> int:
    message = " ".join(str(exc).split())
    print(f"dpexplorer release: {message}", file=sys.stderr)
    return code
