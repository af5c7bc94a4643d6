"""`dpexplorer release PLAN.json --data PATH_OR_TABLE --out DIR [--ledger PATH] [--dataset NAME]
[--budget-epsilon E --budget-delta D] [--engine polars|spark [--spark-master URL]]`: release
every statistic of a plan through the exact samplers, charged to the dataset's budget in the
ledger. With ``--engine spark`` the true answers are computed on Spark (dpexplorer.data.engine);
noise, accounting, ledger and export stay in this process. The plan format is documented in
``dpexplorer/release/PLAN_FORMAT.md`` and the README (Releasing statistics).

The whole plan is validated first (file, every query, mechanism and parameter, an exact release
path for each, the output directory, and the plan's total against the remaining budget);
nothing is charged unless all of it passes. Then each entry is charged, drawn and written, with
one line per entry on stdout as it goes. Exit codes (:mod:`dpexplorer.commands.errors`): 0 done,
2 bad input, 3 refused by the budget, 4 an entry was charged but not released, 130
interrupted; errors are one line on stderr."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpexplorer.commands.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_NOT_RELEASED,
    EXIT_REFUSED,
    fail,
)
from dpexplorer.core.errors import DPExplorerError

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_REFUSED",
    "PlanError",
    "add_arguments",
    "read_plan",
    "read_plan_file",
    "run",
]

MAX_PLAN_BYTES = 64 << 20
"""A plan larger than this is refused before it is parsed."""


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
    parser.add_argument(
        "--dataset",
        metavar="NAME",
        help="file the budget under this name (group several files of one dataset under one budget)",
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
        "--report", action="store_true", help="also write report.html and report.pdf (for readers) in DIR"
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


def read_plan_file(path: str | Path) -> tuple[list[dict[str, Any]], float | None]:
    """(entries, declared Poisson sampling rate or None). A plan is a JSON list of entries, or an
    object ``{"sampling": {"rate": Q}, "measurements": [...]}`` whose ``sampling`` is the steward's
    claim that the data are a secret Poisson sample of rate Q of a population."""
    try:
        if Path(path).stat().st_size > MAX_PLAN_BYTES:
            raise PlanError(f"the plan {path} is larger than {MAX_PLAN_BYTES >> 20} MiB")
        data = Path(path).read_bytes()
    except OSError as exc:
        raise PlanError(f"cannot read the plan {path}: {exc.strerror or exc}") from None
    try:
        plan = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise PlanError(f"the plan {path} is not UTF-8 text (byte {exc.start}): save it as UTF-8") from None
    except json.JSONDecodeError as exc:
        raise PlanError(f"the plan {path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise PlanError(f"the plan {path} is nested too deeply to be a plan") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise PlanError(f"the plan {path} cannot be read: {str(exc)[:80]}") from None
    plan, rate = _sampling(plan)
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
    return entries, rate


def _sampling(plan: Any) -> tuple[Any, float | None]:
    """The plan's measurements and its declared sampling rate (None for a plain list)."""
    if not isinstance(plan, dict):
        return plan, None
    sampling = plan.get("sampling")
    if (
        set(plan) - {"sampling", "measurements"}
        or not isinstance(sampling, dict)
        or set(sampling) != {"rate"}
    ):
        raise PlanError('a plan object must be {"sampling": {"rate": Q}, "measurements": [...]}')
    rate = sampling["rate"]
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 1:
        raise PlanError(f"the plan's sampling rate must satisfy 0 < rate <= 1, got {str(rate)[:40]}")
    return plan.get("measurements"), float(rate)


def _unknown_keys(given: Any, known: Any, where: str = "query") -> str | None:
    """The first key of ``given`` that the rebuilt query ``known`` does not have (recursively),
    as a dotted path; None if every key is used."""
    if isinstance(given, Mapping) and isinstance(known, Mapping):
        for key, value in given.items():
            if key not in known:
                return f"{where}.{key}"
            found = _unknown_keys(value, known[key], f"{where}.{key}")
            if found:
                return found
    if isinstance(given, list) and isinstance(known, list | tuple) and len(given) == len(known):
        for i, (a, b) in enumerate(zip(given, known, strict=True)):
            found = _unknown_keys(a, b, f"{where}[{i}]")
            if found:
                return found
    return None


def _parameters(entry: Mapping[str, Any], query_dict: Mapping[str, Any]) -> dict[str, Any]:
    """The entry's parameters; a top-k query's ``k`` is the topk mechanism's ``k`` (given once,
    or twice with the same value)."""
    params = dict(entry["parameters"])
    if entry["mechanism"] == "topk" and "k" in query_dict:
        if "k" in params and params["k"] != query_dict["k"]:
            raise PlanError(
                f"the query's k ({query_dict['k']!r}) and the parameters' k ({params['k']!r}) "
                "differ: give k once"
            )
        params["k"] = query_dict["k"]
    return params


def _prepare_all(
    args: argparse.Namespace, plan: tuple[list[dict[str, Any]], float | None], dataset: Any, ledger: Any
) -> list[Any]:
    from dpexplorer.data.queries import query_from_dict
    from dpexplorer.release.release import dataset_key, prepare, with_sampling_rate

    entries, rate = plan
    ci_level = _number("ci-level", args.ci_level)
    key = dataset_key(dataset, ledger, args.dataset)
    prepared = []
    for number, entry in enumerate(entries, start=1):
        try:
            query = query_from_dict(entry["query"])
            unknown = _unknown_keys(entry["query"], query.to_dict())
            if unknown:
                raise PlanError(f"unknown key {unknown}")
            params = _parameters(entry, query.to_dict())
            item = prepare(dataset, query, entry["mechanism"], params, ci_level=ci_level)  # type: ignore[arg-type]
            item = item if rate is None else with_sampling_rate(item, rate)
            prepared.append(_with_key(item, key))
        except (DPExplorerError, KeyError, TypeError, ValueError, ArithmeticError) as exc:
            raise PlanError(f"plan entry {number}: {exc}") from None
    return prepared


def _with_key(item: Any, key: str) -> Any:
    import dataclasses

    return dataclasses.replace(item, fingerprint=key)


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


def _release_all(args: argparse.Namespace, progress: dict[str, Any]) -> int:
    from dpexplorer.data.engine import open_dataset
    from dpexplorer.release.export import check_output_dir, remove_partial_files
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.release import charged_guarantee, execute

    plan = read_plan_file(args.plan)
    if args.spark_master and args.engine != "spark":
        raise PlanError("--spark-master needs --engine spark")
    dataset = open_dataset(args.data, args.engine, spark_master=args.spark_master)
    for warning in getattr(dataset, "warnings", ()):
        print(
            f"dpexplorer release: note: {Path(args.data).name}: {' '.join(warning.split())}", file=sys.stderr
        )
    with Ledger(args.ledger) as ledger:
        prepared = _prepare_all(args, plan, dataset, ledger)
        key = prepared[0].fingerprint
        _set_budget(args, ledger, key)
        ledger.check(key, [charged_guarantee(item, ledger) for item in prepared])
        check_output_dir(args.out, [item.token for item in prepared])
        remove_partial_files(args.out)
        before = [m.guarantee for m in ledger.measurements(key)]
        released = []
        progress["total"] = len(prepared)
        for number, item in enumerate(prepared, start=1):
            result = execute(item, ledger=ledger, out_dir=args.out, directory_checked=True)
            released.append((item, result))
            progress["released"] = number
            shown = ", ".join(f"{k} = {v}" for k, v in zip(result.labels, result.values, strict=True))
            print(f"[{number}/{len(prepared)}] {result.files['provenance'].name}: {shown}", flush=True)
        left = ledger.remaining(key)
        if args.report:
            _write_report(args, key, ledger, before, released)
    print(f"epsilon left for this dataset: {left:.6g}")
    return 0


def _write_report(
    args: argparse.Namespace, key: str, ledger: Any, before: list[Any], released: list[Any]
) -> None:
    """report.html and report.pdf in DIR: released values only (dpexplorer/release/report.py)."""
    from dpexplorer.release.report import build_report, write_html
    from dpexplorer.report_pdf import write_pdf  # Qt, loaded only for --report

    entries, rate = read_plan_file(args.plan)
    plan = entries if rate is None else [{"sampling": {"rate": rate}}, *entries]
    report = build_report(
        dataset=Path(args.data).name,
        fingerprint=key,
        released=released,
        ledger=ledger,
        before=before,
        plan=plan,
    )
    print(f"report: {write_html(report, args.out)}, {write_pdf(report, Path(args.out) / 'report.pdf')}")


def run(args: argparse.Namespace) -> int:
    """Validate the plan, then release it; one line on stderr and a documented non-zero code on
    failure (module docstring)."""
    from dpexplorer.release.ledger import BudgetExceededError
    from dpexplorer.release.release import ReleaseFailedError

    progress: dict[str, Any] = {"total": 0, "released": 0}
    try:
        return _release_all(args, progress)
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
