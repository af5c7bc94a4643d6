"""`dpexplorer account [--delta D] [--method M ...] [--json] [--risk] [--ledger L --dataset KEY] [SPEC...]`:
compose guarantees under every accounting method and print the epsilons side by side.

SPEC is one of ``laplace:scale=B[:sensitivity=S][:k=K]``, ``gaussian:sigma=S[:sensitivity=S][:k=K]``,
``pure:epsilon=E[:k=K]``, ``approx:epsilon=E:delta=D[:k=K]``, ``zcdp:rho=R[:k=K]``; ``k`` repeats
the mechanism k times (a count: ``k=100000000`` costs what ``k=100`` does). Laplace, Gaussian and
pure specs also take ``q=Q`` (run on a secret Poisson subsample of rate Q, neighbours by adding or
removing a row) or ``sample=M/N`` (M rows drawn without replacement from N, neighbours by
replacing a row). Every epsilon printed is an upper bound under its theorem.

``--dataset KEY`` (with ``--ledger L``, default the per-user ledger) composes every release the
ledger holds for that dataset (a key as the ledger prints it, or a name given with
``release --dataset``), and the SPECs, if any, beside them. ``--risk`` adds the attacker's
trade-off curve of the composition and a mu-GDP summary (:mod:`dpexplorer.core.tradeoff`): JSON
keys ``tradeoff`` (a list of ``{"fpr": a, "fnr": b}``), ``tradeoff_kind`` ("exact" or a lower
bound on the attacker's fnr, named), ``gdp_mu`` and ``gdp_kind`` ("exact" or "upper bound")."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from dpexplorer.core.accounting.guarantees import (
    ZCDP,
    ApproxDP,
    GaussianNoise,
    Guarantee,
    LaplaceNoise,
    PureDP,
    Subsampled,
)
from dpexplorer.core.accounting.validate import MAX_COUNT, check_guarantee
from dpexplorer.core.errors import DPExplorerError, InvalidParameterError
from dpexplorer.release.ledger import METHODS  # the accountant's names, without loading it

if TYPE_CHECKING:
    from dpexplorer.core.accounting.compose import CompositionReport
    from dpexplorer.core.tradeoff import TradeOff

DEFAULT_DELTA = 1e-6

# kind -> (constructor, required keys, optional keys)
KINDS: dict[str, tuple[Callable[..., Guarantee], tuple[str, ...], tuple[str, ...]]] = {
    "laplace": (LaplaceNoise, ("scale",), ("sensitivity",)),
    "gaussian": (GaussianNoise, ("sigma",), ("sensitivity",)),
    "pure": (PureDP, ("epsilon",), ()),
    "approx": (ApproxDP, ("epsilon", "delta"), ()),
    "zcdp": (ZCDP, ("rho",), ()),
}


class SpecError(InvalidParameterError):
    """A SPEC on the command line is malformed; the message names the part that is wrong."""


def _number(spec: str, key: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SpecError(f"bad SPEC {spec!r}: {key}={text!r} is not a number") from None
    if not math.isfinite(value):
        raise SpecError(f"bad SPEC {spec!r}: {key}={text!r} must be finite")
    return value


SUBSAMPLED_KINDS = ("laplace", "gaussian", "pure")


def _repeat(spec: str, text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_COUNT:
        raise SpecError(f"bad SPEC {spec!r}: k={text!r} must be an integer from 1 to {MAX_COUNT:.0e}")
    return int(text)


def _sampling(spec: str, kind: str, values: dict[str, str]) -> tuple[float, str] | None:
    """(rate, scheme) from ``q=Q`` or ``sample=M/N`` (removed from ``values``), None if neither."""
    if "q" not in values and "sample" not in values:
        return None
    if kind not in SUBSAMPLED_KINDS:
        raise SpecError(
            f"bad SPEC {spec!r}: {kind} cannot be subsampled (only {', '.join(SUBSAMPLED_KINDS)})"
        )
    if "q" in values and "sample" in values:
        raise SpecError(f"bad SPEC {spec!r}: give q or sample, not both")
    if "q" in values:
        rate = _number(spec, "q", values.pop("q"))
        if not 0 < rate <= 1:
            raise SpecError(f"bad SPEC {spec!r}: q={rate:g} must satisfy 0 < q <= 1")
        return rate, "poisson"
    text = values.pop("sample")
    m, sep, n = text.partition("/")
    if not (sep and m.isdigit() and n.isdigit() and 1 <= int(m) <= int(n)):
        raise SpecError(f"bad SPEC {spec!r}: sample={text!r} must be M/N with integers 1 <= M <= N")
    return int(m) / int(n), "without_replacement"


def _pairs(spec: str, parts: list[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for part in parts:
        key, sep, text = part.partition("=")
        if not sep or not key or not text:
            raise SpecError(f"bad SPEC {spec!r}: part {part!r} is not key=value")
        if key in values:
            raise SpecError(f"bad SPEC {spec!r}: {key!r} is given twice")
        values[key] = text
    return values


def parse_spec(spec: str) -> tuple[Guarantee, int]:
    """The guarantee a SPEC stands for and its count k. Raises SpecError naming the wrong part."""
    kind, *parts = spec.strip().split(":")
    if kind not in KINDS:
        raise SpecError(f"bad SPEC {spec!r}: unknown kind {kind!r} (expected one of {', '.join(KINDS)})")
    make, required, optional = KINDS[kind]
    values = _pairs(spec, parts)
    allowed = (*required, *optional, "k", *(("q", "sample") if kind in SUBSAMPLED_KINDS else ()))
    for key in values:
        if key not in allowed:
            expected = ", ".join(allowed)
            raise SpecError(f"bad SPEC {spec!r}: unknown key {key!r} for {kind} (expected {expected})")
    missing = [key for key in required if key not in values]
    if missing:
        raise SpecError(f"bad SPEC {spec!r}: missing {missing[0]!r} ({kind} needs {', '.join(required)})")
    k = _repeat(spec, values.pop("k", "1"))
    sampling = _sampling(spec, kind, values)
    guarantee: Guarantee = make(**{key: _number(spec, key, text) for key, text in values.items()})
    if sampling is not None and sampling[0] < 1:
        guarantee = Subsampled(guarantee, *sampling)  # type: ignore[arg-type]
    try:
        check_guarantee(guarantee)
    except InvalidParameterError as error:
        detail = str(error).split(": ", 1)[-1]
        raise SpecError(f"bad SPEC {spec!r}: {detail}") from None
    return guarantee, k


def _methods(raw: list[str] | None) -> list[str]:
    if not raw:
        return list(METHODS)
    chosen = [m.strip() for item in raw for m in item.split(",") if m.strip()]
    for method in chosen:
        if method not in METHODS:
            raise InvalidParameterError(f"unknown --method {method!r} (expected one of {', '.join(METHODS)})")
    return list(dict.fromkeys(chosen))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of `dpexplorer account`."""
    parser.add_argument(
        "--delta", type=float, default=DEFAULT_DELTA, help=f"target delta (default {DEFAULT_DELTA:g})"
    )
    parser.add_argument(
        "--method",
        action="append",
        metavar="M",
        help=f"method to run, repeatable or comma-separated (default: all of {', '.join(METHODS)})",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--risk",
        action="store_true",
        help="also print the attacker's trade-off curve (best false-negative rate at each "
        "false-positive rate) and a mu-GDP summary",
    )
    parser.add_argument("--ledger", metavar="PATH", help="budget ledger (default: per-user data dir)")
    parser.add_argument(
        "--dataset",
        metavar="KEY",
        help="compose every release the ledger holds for this dataset (its key or name), with the SPECs",
    )
    parser.add_argument(
        "specs",
        nargs="*",
        metavar="SPEC",
        help="laplace:scale=B[:sensitivity=S][:k=K] | gaussian:sigma=S[:sensitivity=S][:k=K] | "
        "pure:epsilon=E[:k=K] | approx:epsilon=E:delta=D[:k=K] | zcdp:rho=R[:k=K]; laplace, gaussian "
        "and pure also take :q=Q (Poisson subsample of rate Q) or :sample=M/N (M of N rows without "
        "replacement)",
    )


def _table(report: CompositionReport) -> str:
    lines = [f"epsilon at delta = {report.delta:g} (upper bounds)"]
    for result in report.results:
        shown = f"{result.epsilon:.6g}" if result.epsilon is not None else "n/a"
        lines.append(f"  {result.method:<9} {shown:>12}   {result.reason}")
    try:
        best = report.best()
        lines.append(f"tightest: {best.method} (epsilon = {best.epsilon:.6g})")
    except DPExplorerError:
        lines.append("no method applies")
    return "\n".join(lines)


READ_AT = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5)
"""False-positive rates at which the text output reads the trade-off curve."""


def ledger_guarantees(ledger_path: str | None, dataset: str) -> tuple[str, list[Guarantee]]:
    """(key, guarantees) of every release the ledger holds for ``dataset`` (a key as printed, a
    name, or ``name:NAME``), oldest first. InvalidParameterError for a ledger that does not exist
    (none is created to read from) or a dataset it does not know; LedgerError for one it cannot
    read or that was altered."""
    from pathlib import Path

    from dpexplorer.release.ledger import NAME_PREFIX, Ledger, default_ledger_path

    where = Path(ledger_path) if ledger_path is not None else default_ledger_path()
    if not where.is_file():
        raise InvalidParameterError(f"there is no ledger at {where}: name it with --ledger")
    with Ledger(where) as ledger:
        for key in (dataset, NAME_PREFIX + dataset):
            if ledger.known(key):
                return key, [m.guarantee for m in ledger.measurements(key)]
    raise InvalidParameterError(
        f"--dataset {dataset}: the ledger {where} has no dataset {dataset!r} with a budget or a release "
        "(give its key or the name it was released under)"
    )


def _guarantees(
    args: argparse.Namespace,
) -> tuple[list[Guarantee | tuple[Guarantee, int]], dict[str, object]]:
    """The list to compose (the ledger's releases, then the SPECs) and what JSON says of its source."""
    if args.ledger is not None and args.dataset is None:
        raise InvalidParameterError("--ledger names the ledger to read: give the dataset with --dataset KEY")
    if not args.specs and args.dataset is None:
        raise InvalidParameterError("give a SPEC to compose, or --dataset KEY to compose a ledger's releases")
    items: list[Guarantee | tuple[Guarantee, int]] = []
    source: dict[str, object] = {}
    if args.dataset is not None:
        key, released = ledger_guarantees(args.ledger, args.dataset)
        items.extend(released)
        source = {"dataset": key, "releases": len(released)}
    items.extend(parse_spec(spec) for spec in args.specs)
    return items, source


def _risk_text(risk: TradeOff) -> str:
    lines = [f"attacker's trade-off ({risk.kind}; {risk.how}):"]
    for fpr in READ_AT:
        lines.append(f"  false-positive rate {fpr:<5g}: false-negative rate at least {risk.fnr_at(fpr):.4f}")
    if risk.gdp_mu is None:
        lines.append(f"mu-GDP: none ({risk.gdp_note})")
    else:
        lines.append(f"mu-GDP: mu = {risk.gdp_mu:.4g} ({risk.gdp_kind}; {risk.gdp_note})")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Compose the SPECs (and the ledger's releases) and print the table (or JSON). Exit 0; 2
    with one line on stderr for a bad SPEC, delta, method, ledger or dataset."""
    try:
        if not (0 <= args.delta < 1):
            raise InvalidParameterError(f"--delta must satisfy 0 <= delta < 1, got {args.delta:g}")
        guarantees, source = _guarantees(args)
        from dpexplorer.core.accounting.compose import compose  # numpy and scipy: only to compute

        report = compose(guarantees, delta=args.delta, methods=_methods(args.method))
        risk = None
        if args.risk:
            from dpexplorer.core.tradeoff import tradeoff_of

            risk = tradeoff_of(guarantees)
    except DPExplorerError as error:
        print(f"dpexplorer account: {error}", file=sys.stderr)
        return 2
    if args.json:
        epsilons = {r.method: r.epsilon for r in report.results}
        print(
            json.dumps(
                {**source, "delta": report.delta, "epsilon": epsilons, **(risk.as_dict() if risk else {})}
            )
        )
        return 0
    if source:
        print(f"dataset {source['dataset']}: {source['releases']} release(s) in the ledger")
    print(_table(report))
    if risk is not None:
        print(_risk_text(risk))
    return 0
