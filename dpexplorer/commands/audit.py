"""`dpexplorer audit PLAN.json --data FILE [--codebook FILE] [--dataset NAME] [--json]
[--draws N] [--seed S] [--confidence C]`: the replay audit of a plan on the steward's own data
(issue 44; :mod:`dpexplorer.release.replay`).

The plan is released by the code ``dpexplorer release`` runs, on the data and on neighbouring
datasets that stress each entry, with the same random bits, into a throwaway ledger and folder
(nothing is charged to any ledger, nothing is left on disk); what it publishes is compared, and
a black-box lower bound on epsilon is drawn from sampled outputs. One line per entry on stdout
(or, with ``--json``, one JSON object: ``entries`` each with ``replay``, ``lower_bound``,
``claimed_epsilon``, ``claimed_delta``, ``neighbours``, ...). Exit codes: 0 every entry passed,
5 a finding (a field that depends on the data, a movement beyond the declared sensitivity, a
lower bound above the claim), 2 bad input (the plan, the data, an option), 130 interrupted."""

from __future__ import annotations

import argparse
import json

from dpexplorer.commands.errors import EXIT_BAD_INPUT, EXIT_FINDING, EXIT_OK, fail
from dpexplorer.core.errors import DPExplorerError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("plan", metavar="PLAN.json", help="the plan, as dpexplorer release reads it")
    parser.add_argument("--data", required=True, metavar="FILE", help="CSV, TSV or Parquet dataset")
    parser.add_argument(
        "--codebook",
        metavar="FILE",
        help="the dataset's codebook (as dpexplorer release): default the shipped one for the bundled Adult",
    )
    parser.add_argument("--dataset", metavar="NAME", help="the ledger name the data are released under")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument(
        "--draws",
        default="2000",
        metavar="N",
        help="outputs sampled per side for the black-box bound (100 to 10,000,000; 0: replay only)",
    )
    parser.add_argument("--seed", default="0", metavar="S", help="seed of the audit's random bits (>= 0)")
    parser.add_argument(
        "--confidence", default="0.95", metavar="C", help="level of the lower bound, in (0, 1)"
    )


def _whole(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise DPExplorerError(f"--{name} must be a whole number; got {text!r}") from None
    if value < 0:
        raise DPExplorerError(f"--{name} must be 0 or more; got {value}")
    return value


def _level(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DPExplorerError(f"--confidence must be a number in (0, 1); got {text!r}") from None
    if not 0 < value < 1:
        raise DPExplorerError(f"--confidence must be in (0, 1); got {text}")
    return value


def run(args: argparse.Namespace) -> int:
    """Read the plan and the codebook (refused before the data are opened), open the data, audit,
    print; a documented exit code (module docstring)."""
    from dpexplorer.commands.release import read_codebook
    from dpexplorer.release.plan_run import check_codebook, read_plan_file

    try:
        draws, seed = _whole("draws", args.draws), _whole("seed", args.seed)
        confidence = _level(args.confidence)
        entries, rate = read_plan_file(args.plan)
        codebook = read_codebook(args)
        check_codebook(entries, codebook)
        from dpexplorer.data.load import load_dataset
        from dpexplorer.release.replay import audit_plan

        dataset = load_dataset(args.data)
        audit = audit_plan(
            dataset,
            entries,
            rate,
            codebook=codebook,
            dataset_name=args.dataset,
            seed=seed,
            draws=draws,
            confidence=confidence,
        )
    except (DPExplorerError, OSError) as exc:
        return fail("audit", str(exc), EXIT_BAD_INPUT)
    if args.json:
        print(json.dumps(audit.to_dict(), allow_nan=False))
    else:
        print("\n".join(audit.lines()))
    return EXIT_OK if audit.passed else EXIT_FINDING
