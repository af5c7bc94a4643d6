"""`dpexplorer calibrate gaussian --epsilon E --delta D [--sensitivity S] [--json]`.

Prints the noise standard deviation of the Gaussian mechanism under the classical calibration
(Dwork & Roth 2014, Theorem A.1; proven only for epsilon < 1) and the analytic one (Balle &
Wang 2018, exact). Bad input (epsilon <= 0, delta outside (0, 1), sensitivity <= 0, a value
that is not a number, or values so extreme that sigma cannot be computed): one line on stderr,
exit code 2. A sigma that overflows (e.g. the classical one at delta = 5e-324) is printed as
``inf`` in text and ``null`` in JSON (which has no infinity)."""

from __future__ import annotations

import argparse
import json
import math

from dpexplorer.commands.errors import fail
from dpexplorer.core.errors import DPExplorerError

EXIT_BAD_INPUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `calibrate` subcommands and their options."""
    sub = parser.add_subparsers(dest="mechanism", required=True, metavar="MECHANISM")
    gaussian = sub.add_parser(
        "gaussian",
        help="standard deviation of Gaussian noise for (epsilon, delta)-DP",
        description="Print sigma for the Gaussian mechanism: classical (proven for epsilon < 1) "
        "and analytic (Balle & Wang 2018, exact for every epsilon).",
    )
    # Numbers are parsed in run(), so that a bad value gives one line on stderr, not a usage dump.
    gaussian.add_argument("--epsilon", required=True, help="privacy loss bound, > 0")
    gaussian.add_argument("--delta", required=True, help="failure probability, in (0, 1)")
    gaussian.add_argument("--sensitivity", default="1", help="l2 sensitivity of the query, > 0 (default 1)")
    gaussian.add_argument("--json", action="store_true", help="print a JSON object instead of text")


def _number(name: str, text: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise DPExplorerError(f"--{name} must be a number; got {text!r}") from None
    if not math.isfinite(value):
        raise DPExplorerError(f"--{name} must be a finite number; got {text!r}")
    return value


def _gaussian(args: argparse.Namespace) -> dict[str, float | bool]:
    epsilon = _number("epsilon", args.epsilon)
    delta = _number("delta", args.delta)
    sensitivity = _number("sensitivity", args.sensitivity)
    import numpy as np  # numpy and scipy: only to compute (the command starts without them)

    from dpexplorer.core.mechanisms.gaussian import gaussian_sigma_analytic, gaussian_sigma_classical

    try:
        with np.errstate(all="ignore"):  # overflow is handled below, not printed as a warning
            classical = gaussian_sigma_classical(epsilon, delta, sensitivity)
            analytic = gaussian_sigma_analytic(epsilon, delta, sensitivity)
    except DPExplorerError:
        raise
    except (ArithmeticError, ValueError) as exc:  # e.g. epsilon 1e308: no bracket for the root
        raise DPExplorerError(
            f"sigma cannot be computed at epsilon={epsilon:g}, delta={delta:g}, sensitivity="
            f"{sensitivity:g} ({type(exc).__name__}: {exc}); choose less extreme values"
        ) from None
    return {
        "epsilon": epsilon,
        "delta": delta,
        "sensitivity": sensitivity,
        "sigma_classical": classical,
        "sigma_analytic": analytic,
        "classical_proven": epsilon < 1,
    }


def _json_safe(result: dict[str, float | bool]) -> dict[str, float | bool | None]:
    """Non-finite numbers as null: JSON has no infinity."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in result.items()}


def _print_text(result: dict[str, float | bool]) -> None:
    caveat = "" if result["classical_proven"] else "  (NOT proven: the classical bound needs epsilon < 1)"
    print(f"epsilon = {result['epsilon']:g}, delta = {result['delta']:g}, ", end="")
    print(f"l2 sensitivity = {result['sensitivity']:g}")
    print(f"sigma_classical = {result['sigma_classical']:.6g}{caveat}")
    print(f"sigma_analytic  = {result['sigma_analytic']:.6g}  (Balle & Wang 2018, exact)")


def run(args: argparse.Namespace) -> int:
    """Print the calibration; 0 on success, 2 (one line on stderr) on bad input."""
    try:
        result = _gaussian(args)
    except DPExplorerError as error:
        return fail("calibrate", f"error: {error}", EXIT_BAD_INPUT)
    if args.json:
        print(json.dumps(_json_safe(result), allow_nan=False))
    else:
        _print_text(result)
    return 0
