"""Exact helpers on rationals: directed rounding to floats, exact floor(log2), ceiling."""

from __future__ import annotations

import math
from fractions import Fraction


def float_up(value: Fraction) -> float:
    """The smallest float >= value (a charged epsilon is never rounded down)."""
    f = float(value)
    return math.nextafter(f, math.inf) if Fraction(f) < value else f


def float_down(value: Fraction) -> float:
    """The largest float <= value (a remaining budget is never rounded up)."""
    f = float(value)
    return math.nextafter(f, -math.inf) if Fraction(f) > value else f


def floor_log2(x: Fraction) -> int:
    """floor(log2 x) for a positive rational, exactly."""
    k = x.numerator.bit_length() - x.denominator.bit_length()
    return k - 1 if Fraction(2) ** k > x else k


def ceil_fraction(x: Fraction) -> int:
    """ceil(x), exactly."""
    return -((-x.numerator) // x.denominator)
