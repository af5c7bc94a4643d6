"""`dpexplorer attack reconstruct|differencing|membership ...`: why differential privacy, on a
data file (the bundled Adult by default).

* ``reconstruct --column COL [--value V] --rows N --queries Q [--epsilon E | --noise B]``: the
  Dinur-Nissim attack on N sampled rows of ``COL == V`` from Q random subset counts, answered
  exactly, with uniform noise in [-B, B], or by the Laplace mechanism with the total epsilon E
  split over the Q answers; prints the fraction recovered and the baseline (the majority value's
  share).
* ``differencing --column COL [--value V] --row R [--epsilon E]``: two counts that differ by row
  R; exact, or each by Laplace at E/2; prints the attacker's posterior and the e^E bound.
* ``membership --column COL [--value V] --epsilon E [--trials T]``: the likelihood-ratio test
  on T releases of the count from D and from D' less one person; prints its largest excess over
  the E-DP region (<= 0 inside, up to the sampling error).

Attacks are exploration: they read the true data, release nothing and charge no ledger. Bad
input (no such column, N beyond the rows, E <= 0, both --epsilon and --noise): one line on
stderr, exit 2."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from dpexplorer.commands.errors import EXIT_BAD_INPUT, fail
from dpexplorer.core.errors import DPExplorerError


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data", metavar="FILE", help="CSV, TSV, .csv.gz or Parquet (default: bundled Adult)"
    )
    parser.add_argument("--column", required=True, help="the sensitive column")
    parser.add_argument(
        "--value", help="the value that makes a row's secret 1 (default: the column's smallest)"
    )
    parser.add_argument("--seed", default=None, help="seed of the exploration random generator")
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of text")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `attack` subcommands and their options (numbers parsed in :func:`run`, so that a bad
    one is one line on stderr)."""
    sub = parser.add_subparsers(dest="attack", required=True, metavar="ATTACK")
    rec = sub.add_parser("reconstruct", help="Dinur-Nissim reconstruction from random subset counts")
    _common(rec)
    rec.add_argument("--rows", required=True, help="rows in the secret sample, >= 1")
    rec.add_argument("--queries", required=True, help="number of random subset counts, >= 1")
    rec.add_argument(
        "--epsilon", help="answer by the Laplace mechanism, total epsilon split over the queries"
    )
    rec.add_argument("--noise", help="answer with uniform noise in [-B, B] (B >= 0)")
    diff = sub.add_parser("differencing", help="two counts that differ by one person")
    _common(diff)
    diff.add_argument("--row", required=True, help="the person: a row number, from 0")
    diff.add_argument("--epsilon", help="answer each count by Laplace at epsilon/2 (total epsilon)")
    mem = sub.add_parser("membership", help="the likelihood-ratio test against the epsilon-DP region")
    _common(mem)
    mem.add_argument("--epsilon", required=True, help="epsilon of the Laplace mechanism on the count, > 0")
    mem.add_argument("--trials", default="20000", help="releases from D and from D' (default 20000)")


def _number(
    name: str, text: str | None, *, whole: bool = False, low: float = 0.0, above: bool = False
) -> float:
    """``--name``'s value as a finite number >= ``low`` (> when ``above``); whole when asked."""
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        value = math.nan
    ok = (
        math.isfinite(value)
        and (value > low if above else value >= low)
        and (not whole or value.is_integer())
    )
    if not ok:
        kind = "a whole number" if whole else "a number"
        sign = ">" if above else ">="
        raise DPExplorerError(f"--{name} must be {kind} {sign} {low:g}; got {text!r}")
    return value


def _open(args: argparse.Namespace) -> tuple[Any, Any, int | None]:
    from dpexplorer.data.attack_rows import first_value
    from dpexplorer.data.default import default_dataset_path
    from dpexplorer.data.engine import open_dataset

    seed = None if args.seed is None else int(_number("seed", args.seed, whole=True))
    dataset = open_dataset(args.data or default_dataset_path(), "polars")
    value = args.value if args.value is not None else first_value(dataset, args.column)
    return dataset, value, seed


def _reconstruct(args: argparse.Namespace) -> dict[str, Any]:
    if args.epsilon is not None and args.noise is not None:
        raise DPExplorerError("give --epsilon (Laplace answers) or --noise (bounded noise), not both")
    rows = int(_number("rows", args.rows, whole=True, low=1))
    queries = int(_number("queries", args.queries, whole=True, low=1))
    epsilon = None if args.epsilon is None else _number("epsilon", args.epsilon, above=True)
    magnitude = None if args.noise is None else _number("noise", args.noise)
    dataset, value, seed = _open(args)
    from dpexplorer.core.attacks import Noise
    from dpexplorer.data.attack_rows import reconstruct_column

    noise: Noise = "laplace" if epsilon is not None else ("bounded" if magnitude else "exact")
    result = reconstruct_column(
        dataset,
        args.column,
        value,
        rows,
        queries,
        noise=noise,
        magnitude=magnitude or 0.0,
        epsilon=epsilon or 1.0,
        seed=seed,
    )
    out: dict[str, Any] = {"attack": "reconstruct", "column": args.column, "value": value}
    out |= {"recovered": result.recovered, "baseline": result.baseline, "rows": rows, "queries": queries}
    out |= {"epsilon": epsilon} if epsilon is not None else {"noise": magnitude or 0.0}
    return out


def _differencing(args: argparse.Namespace) -> dict[str, Any]:
    row = int(_number("row", args.row, whole=True))
    epsilon = None if args.epsilon is None else _number("epsilon", args.epsilon, above=True)
    dataset, value, seed = _open(args)
    from dpexplorer.data.attack_rows import difference_person

    result = difference_person(
        dataset,
        args.column,
        value,
        row,
        noise="exact" if epsilon is None else "laplace",
        epsilon=epsilon or 1.0,
        seed=seed,
    )
    return {
        "attack": "differencing",
        "column": args.column,
        "value": value,
        "row": row,
        "count_all": result.count_all,
        "count_others": result.count_others,
        "posterior": result.posterior,
        "bound": result.bound,
        "guess": result.guess,
        "epsilon": epsilon,
    }


def _membership(args: argparse.Namespace) -> dict[str, Any]:
    epsilon = _number("epsilon", args.epsilon, above=True)
    trials = int(_number("trials", args.trials, whole=True, low=1))
    dataset, value, seed = _open(args)
    from dpexplorer.core.attacks import dp_region_excess
    from dpexplorer.data.attack_rows import membership_of

    result = membership_of(dataset, args.column, value, trials, epsilon=epsilon, seed=seed)
    excess = dp_region_excess(result.tpr, result.fpr, epsilon, result.delta)
    best = int((result.tpr - result.fpr).argmax())
    return {
        "attack": "membership",
        "column": args.column,
        "value": value,
        "epsilon": epsilon,
        "trials": trials,
        "tpr": float(result.tpr[best]),
        "fpr": float(result.fpr[best]),
        "largest_excess": float(excess.max()),
    }


def _print_text(result: dict[str, Any]) -> None:
    for key, value in result.items():
        shown = f"{value:.4g}" if isinstance(value, float) else value
        print(f"{key} = {shown}")


def run(args: argparse.Namespace) -> int:
    """Run the attack and print its result; 0 on success, 2 (one line on stderr) on bad input."""
    handlers = {"reconstruct": _reconstruct, "differencing": _differencing, "membership": _membership}
    try:
        result = handlers[args.attack](args)
    except DPExplorerError as error:
        return fail("attack", f"error: {error}", EXIT_BAD_INPUT)
    if args.json:
        print(json.dumps(result, allow_nan=False))
    else:
        _print_text(result)
    return 0
