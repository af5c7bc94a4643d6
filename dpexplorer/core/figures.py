"""Privacy figures as a person reads them: ε, δ and ρ to three significant digits (DESIGN.md,
"What a person reads"; :mod:`dpexplorer.release.presentation` re-exports :func:`privacy_number`
for the release side). Here in core so that core's own sentences (a plan's budget message, an
accountant's reason for not applying) follow the rule too, rather than print Python's floats
("epsilon=0.7999414176918571", "leaving ε = 1.368e-06").

Three roundings, each a guarantee about the printed figure:

- :func:`privacy_number`: to nearest (a claimed or declared figure);
- :func:`privacy_up`: up, so the printed figure is at least the exact one (what is spent, charged
  or needed: an upper bound stays one; "0.3", not "0.299", for an exact sampler's 0.2994);
- :func:`privacy_down`: down, so the printed figure is at most the exact one;

(a directed rounding leaves a figure whose binary float is within :data:`FLOAT_TOLERANCE` of
its nearest rounding at that: 0.2 stays 0.2 both ways);

and :func:`left_of`: what is left of a budget once a total is spent, as the budget minus the
total as printed (rounded up), never below 0: a plan that fills its budget to the last few
millionths leaves "0", and the two printed figures add up to the budget.

Pure Python (``decimal``): exact decimal rounding of the binary floats."""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal

PRIVACY_DIGITS = 3
"""Significant digits of ε, δ and ρ as shown."""
SCIENTIFIC_BELOW = 1e-3
"""Figures below this (not zero) are written with an exponent ("1e-7", "2.5e-6")."""


def _special(x: float | None) -> str | None:
    if x is None or math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == 0:
        return "0"
    return None


def _rounded(x: float, digits: int, rounding: str) -> Decimal:
    """``x`` to ``digits`` significant digits, exactly in decimal (``rounding`` a decimal mode)."""
    exact = Decimal(x)
    rounded = exact.quantize(Decimal(1).scaleb(exact.adjusted() - digits + 1), rounding=rounding)
    # a carry (9.995 up to 10.0) adds a digit: quantize again at the new magnitude
    return rounded.quantize(Decimal(1).scaleb(rounded.adjusted() - digits + 1), rounding=rounding)


def _text(number: Decimal, scientific: bool) -> str:
    """Fixed point ("0.3", "2.81", "1230"), or "m e k" ("1e-7", "2.5e-6") when ``scientific``."""
    if number.is_zero():
        return "0"
    if scientific:
        mantissa, exponent = f"{number.normalize():e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return format(number.normalize(), "f")


FLOAT_TOLERANCE = Decimal("1e-9")
"""A directed rounding ignores a binary float's own error, relative: 0.2 is stored as
0.2000000000000000111, which rounded up at three digits would read 0.201."""


def _figure(x: float | None, digits: int, rounding: str) -> str:
    special = _special(None if x is None else float(x))
    if special is not None:
        return special
    x = float(x)  # type: ignore[arg-type]
    if x.is_integer() and abs(x) >= SCIENTIFIC_BELOW and abs(x) < 1e15:
        return str(int(x))  # a whole number in full (an ε of 1234 reads 1234)
    rounded = _rounded(x, digits, ROUND_HALF_EVEN)
    if rounding != ROUND_HALF_EVEN and abs(Decimal(x) - rounded) > abs(Decimal(x)) * FLOAT_TOLERANCE:
        rounded = _rounded(x, digits, rounding)
    return _text(rounded, abs(x) < SCIENTIFIC_BELOW)


def privacy_number(x: float | None, digits: int = PRIVACY_DIGITS) -> str:
    """ε or δ (or ρ) to ``digits`` significant digits, rounded to nearest (ties to even),
    trailing zeros dropped; written with an exponent below 1e-3 ("1e-7", "2.5e-6"); a whole
    number in full; "—" for None or NaN, "∞" for infinity."""
    return _figure(x, digits, ROUND_HALF_EVEN)


def privacy_up(x: float | None, digits: int = PRIVACY_DIGITS) -> str:
    """As :func:`privacy_number`, rounded up: the printed figure is at least ``x`` (exactly, in
    decimal). For what is spent, charged or needed."""
    return _figure(x, digits, ROUND_CEILING)


def privacy_down(x: float | None, digits: int = PRIVACY_DIGITS) -> str:
    """As :func:`privacy_number`, rounded down: the printed figure is at most ``x``. For what
    is left."""
    return _figure(x, digits, ROUND_FLOOR)


def left_of(budget: float, spent: float, digits: int = PRIVACY_DIGITS) -> str:
    """What is left of ``budget`` once ``spent`` is spent, as a person reads it: the budget
    minus ``spent`` as :func:`privacy_up` prints it, never below 0, to ``digits`` significant
    digits. The two printed figures add up to the budget, and what is left reads 0 when it is
    below the printed total's last digit (a shared plan leaving 1.368e-06 of ε = 1)."""
    shown = privacy_up(spent, digits)
    if not (math.isfinite(budget) and math.isfinite(spent)) or shown in ("—", "∞", "−∞"):
        return privacy_number(budget - spent, digits)
    return privacy_number(float(max(Decimal(budget) - Decimal(shown), Decimal(0))), digits)
