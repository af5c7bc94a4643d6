"""How a released number is shown to a person (DESIGN.md, "What a person reads").

One rule for every number a person reads (the window's result card, the CLI lines, the CSV and
the report); the JSON and the provenance keep full precision for machines.

**A released value with an interval** [low, high] at level L: let h = (high - low) / 2 be the
interval's half-width and u = 10^(floor(log10 h) - 1), the place of the half-width's second
significant digit (h = 98 gives u = 1, h = 0.0083 gives u = 0.0001). The value is rounded to the
nearest multiple of u (ties to even), ``low`` down and ``high`` up to a multiple of u (outward,
so the printed interval contains the computed one, and so covers at least as often). For a
statistic whose answers are whole numbers (counts, histograms) u is at least 1. Rounding moves
the value by at most u / 2 <= h / 20: the digits dropped are smaller than a twentieth of what
the noise may have moved it. Without an interval (h = 0, or none published, or an end infinite)
a value keeps six significant digits (whole numbers in full).

**The sentence** (issue 41, item 3: this module alone decides it): "with 95 % probability the
noise moved this by at most ±x", x the larger distance from the value to an end of the computed
interval, rounded up to a multiple of u, when the two distances (rounded up) differ by at most
:data:`SYMMETRIC` of x; else
(an asymmetric interval, e.g. cut at zero) "with 95 % probability the true answer lies at most
a below and b above this", each rounded up. An interval that is not the noise's has its own
words (:data:`KIND_SENTENCES`): the declared range (a clamp that filled it, or a mechanism with
no narrower interval) says "no estimate better than the declared range", and such a value, an
empty group and ⊥ are not findings (:attr:`Shown.finding`: not shown in bold).

**ε and δ**: three significant digits, rounded to nearest, trailing zeros dropped (ε charged
0.2999 for a claimed 0.3 shows 0.3; δ 1e-07 shows 1e-7). A display only: the ledger decides
with the exact figures, which the JSON keeps.

**Values that are not numbers**: ⊥ ("no answer", a DP output of PTR and the distance tests),
an empty group (declared but with no released value, :data:`EMPTY`), and a quantile's rank
interval ("between the 45th and 55th percentile") have their own words here.

Pure Python (``decimal``): exact decimal rounding of the binary floats, no Qt, no files."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal, localcontext

from dpexplorer.core.figures import PRIVACY_DIGITS as PRIVACY_DIGITS  # re-exported: one rule
from dpexplorer.core.figures import privacy_number as privacy_number  # re-exported

BOTTOM = "⊥"
"""The released "no answer" (same symbol as :data:`dpexplorer.release.exact.BOTTOM`)."""
EMPTY = "empty"
"""What a declared group with no rows publishes in place of a value (declared post-processing)."""

NO_INTERVAL_DIGITS = 6
"""Significant digits of a value shown without an interval."""
SYMMETRIC = Decimal("0.1")
"""An interval reads as ±x (x the larger distance) when its two distances differ by at most this
share of x; else each side is said (:func:`show`)."""
FLOAT_DIGITS = 17
"""No more significant digits than a double holds, whatever the interval."""


@dataclass(frozen=True)
class Shown:
    """A released value as a person reads it. ``value``, ``low`` and ``high`` are decimal texts
    (``low``/``high`` None without an interval); ``unit`` the rounding step (None without an
    interval); ``sentence`` the plain statement of the interval ("" without one)."""

    value: str
    low: str | None = None
    high: str | None = None
    unit: Decimal | None = None
    sentence: str = ""
    level: float | None = None
    finding: bool = True
    """False for what is no estimate (an empty group, ⊥, a value whose interval is the declared
    range): the reader sees it in plain type, not in bold."""
    reach: str = ""
    """The noise's reach in short ("±4", "−3700 / +300"), "" without a noise interval."""

    @property
    def interval(self) -> str:
        """``[low, high]``, or "" without an interval."""
        return "" if self.low is None else f"[{self.low}, {self.high}]"

    def __str__(self) -> str:
        """``value [low, high]`` (the interval's level given once by the caller)."""
        return f"{self.value} {self.interval}" if self.low is not None else self.value


SCIENTIFIC_ABOVE = 15
"""Numbers of 10^15 and more, or below 10^-6 (not zero), are written with an exponent."""
SCIENTIFIC_BELOW = -6


def decimal_text(number: Decimal) -> str:
    """Text of a decimal keeping exactly its digits: fixed point ("4190", "0.0083"), or with an
    exponent ("1.00e-300") beyond 10^15 or below 10^-6; ``-0`` as ``0``."""
    if number.is_zero():
        return format(abs(number), "f") if number.adjusted() >= SCIENTIFIC_BELOW else "0"
    if not SCIENTIFIC_BELOW <= number.adjusted() < SCIENTIFIC_ABOVE:
        mantissa, exponent = format(number, "e").split("e")
        return f"{mantissa}e{int(exponent)}"
    return format(number, "f")


def rounding_unit(low: float, high: float, *, integral: bool = False) -> Decimal | None:
    """u of the rule (module docstring) for the interval [low, high]: 10^(floor(log10 h) - 1),
    h the half-width; at least 1 for ``integral``. None when the interval has no finite positive
    width (then a value keeps :data:`NO_INTERVAL_DIGITS` significant digits)."""
    if not (math.isfinite(low) and math.isfinite(high)) or not high > low:
        return Decimal(1) if integral and math.isfinite(low) and math.isfinite(high) else None
    half = (Decimal(high) - Decimal(low)) / 2
    exponent = half.adjusted() - 1
    if integral:
        exponent = max(exponent, 0)
    # a double holds about 17 significant digits: never ask for more of the larger end
    largest = max(abs(Decimal(low)), abs(Decimal(high)))
    if largest:
        exponent = max(exponent, largest.adjusted() - FLOAT_DIGITS + 1)
    return Decimal(1).scaleb(exponent)


def _quantize(number: float, unit: Decimal, rounding: str) -> Decimal:
    exact = Decimal(number)
    with localcontext() as context:
        # enough digits for any double on any unit the rule produces
        context.prec = max(40, exact.adjusted() - unit.adjusted() + 5)
        return exact.quantize(unit, rounding=rounding)


def plain(value: float, *, integral: bool = False, digits: int = NO_INTERVAL_DIGITS) -> str:
    """A number shown without an interval: ``digits`` significant digits (a whole number in
    full when ``integral`` or when it is one), "∞"/"−∞" for infinities, "—" for NaN."""
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if (integral or float(value).is_integer()) and abs(value) < 10**FLOAT_DIGITS:
        return decimal_text(_quantize(value, Decimal(1), ROUND_HALF_EVEN))
    number = Decimal(value)
    if not number:
        return "0"
    unit = Decimal(1).scaleb(number.adjusted() - digits + 1)
    return decimal_text(_quantize(value, unit, ROUND_HALF_EVEN).normalize())


def round_released(
    value: float, low: float, high: float, *, integral: bool = False
) -> tuple[Decimal, Decimal, Decimal, Decimal] | None:
    """(value, low, high, unit) rounded by the rule: the value to nearest, ``low`` down,
    ``high`` up, all multiples of ``unit``; None when the interval gives no unit
    (:func:`rounding_unit`). Guaranteed: rounded low <= low and rounded high >= high (exactly,
    in decimal), and the rounded value lies in the rounded interval whenever value lies in
    [low, high]."""
    unit = rounding_unit(low, high, integral=integral)
    if unit is None or not math.isfinite(value):
        return None
    return (
        _quantize(value, unit, ROUND_HALF_EVEN),
        _quantize(low, unit, ROUND_FLOOR),
        _quantize(high, unit, ROUND_CEILING),
        unit,
    )


def level_text(level: float) -> str:
    """A confidence level as a percentage ("95 %", "99.9 %")."""
    return f"{plain(level * 100, digits=4)} %"


KIND_SENTENCES = {
    "exact": "exact: this value is the true answer (the mechanism's test passed), so its interval is "
    "the value itself",
    "range": "no estimate better than the declared range: the interval is the statistic's whole "
    "declared range, so the value says nothing the declaration did not",
}
"""What an interval that is not the noise's means (kinds of dpexplorer/release/published.py)."""


def show(
    value: float | str | None,
    interval: tuple[float, float] | None = None,
    level: float = 0.95,
    *,
    integral: bool = False,
    kind: str | None = None,
) -> Shown:
    """``value`` (a released number, or a category, ⊥, :data:`EMPTY`, None for empty) with its
    ``interval`` at ``level`` of ``kind`` ("noise" when None; "exact", "range"), rounded by the
    rule, with the sentence of the module docstring."""
    if value is None or value == EMPTY:
        return Shown(
            EMPTY, sentence="empty: the release's noisy count says this group has no rows", finding=False
        )
    if isinstance(value, str):
        if value == BOTTOM:
            return Shown(
                BOTTOM, sentence="no answer (⊥): the mechanism's test declined to answer", finding=False
            )
        return Shown(value)
    shown = _show_number(float(value), interval, level, integral)
    if interval is not None and kind in KIND_SENTENCES:
        return replace(shown, sentence=KIND_SENTENCES[kind], finding=kind != "range", reach="")
    return shown


def _show_number(value: float, interval: tuple[float, float] | None, level: float, integral: bool) -> Shown:
    """A number with its noise interval (or none), rounded by the rule, and its sentence."""
    if interval is None:
        return Shown(plain(value, integral=integral))
    low, high = float(interval[0]), float(interval[1])
    rounded = round_released(value, low, high, integral=integral)
    if rounded is None:
        return Shown(
            plain(value, integral=integral),
            plain(low, integral=integral),
            plain(high, integral=integral),
            level=level,
        )
    shown, down, up, unit = rounded
    down_by, up_by = (_quantize(max(d, 0.0), unit, ROUND_CEILING) for d in (value - low, high - value))
    below, above = decimal_text(down_by), decimal_text(up_by)
    if abs(down_by - up_by) <= max(down_by, up_by) * SYMMETRIC:
        moved = decimal_text(max(down_by, up_by))
        reach, sentence = (
            f"±{moved}",
            f"with {level_text(level)} probability the noise moved this by at most ±{moved}",
        )
    else:  # an interval cut at a bound (or a skewed law): no single ± says it
        reach = f"−{below} / +{above}"
        sentence = (
            f"with {level_text(level)} probability the true answer lies at most {below} below and "
            f"{above} above this"
        )
    return Shown(
        decimal_text(shown), decimal_text(down), decimal_text(up), unit, sentence, level, reach=reach
    )


def privacy_text(epsilon: float, delta: float = 0.0, rho: float | None = None) -> str:
    """ "ε = 0.3" or "ε = 0.5, δ = 1e-7" (and ", ρ = ..." when given), by :func:`privacy_number`."""
    text = f"ε = {privacy_number(epsilon)}"
    if delta:
        text += f", δ = {privacy_number(delta)}"
    if rho is not None:
        text += f", ρ = {privacy_number(rho)}"
    return text


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, ..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def percentile_bounds(low: float, high: float) -> tuple[int, int]:
    """A rank interval given as fractions of the rows [low, high] in whole percentiles, outward
    (low down, high up), within [0, 100]."""
    return max(0, math.floor(low * 100 + 1e-9)), min(100, math.ceil(high * 100 - 1e-9))


def rank_sentence(low: float, high: float, level: float = 0.95) -> str:
    """A quantile's rank interval in words: "with 95 % probability this lies between the 45th
    and the 55th percentile of the data" (``low``/``high`` fractions of the rows, outward to
    whole percentiles)."""
    a, b = percentile_bounds(low, high)
    if a > 0 and b < 100:
        between = f"the {ordinal(a)} and the {ordinal(b)} percentile"
    else:
        first = "the smallest value" if a == 0 else f"the {ordinal(a)} percentile"
        between = f"{first} and {'the largest value' if b == 100 else f'the {ordinal(b)} percentile'}"
    return f"with {level_text(level)} probability this lies between {between} of the data"


def significant_decimals(text: str) -> int:
    """Digits after the decimal point of a number's text (0 for a whole number): what tests use
    to check a shown number against its unit."""
    return len(text.split(".", 1)[1]) if "." in text else 0


KIND_WORDS = {"range": "declared range", "exact": "exact"}
"""How a line names an interval that is not the noise's (dpexplorer/release/published.py)."""


def values_line(
    labels: Sequence[str],
    values: Sequence[float | str | None],
    intervals: Sequence[tuple[float, float] | None] | None = None,
    level: float = 0.95,
    *,
    kinds: Sequence[str | None] = (),
    integral: Sequence[bool] = (),
    limit: int = 0,
) -> str:
    """One line of released values for a terminal: ``label = value [low, high]`` each, rounded
    by the rule, an interval that is not the noise's named ("(declared range)"), the level said
    once at the end; with ``limit`` > 0 at most that many values, then how many more."""
    parts = []
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        if limit and i == limit:
            parts.append(f"… {len(values) - limit} more in the CSV")
            break
        interval = intervals[i] if intervals is not None else None
        kind = kinds[i] if i < len(kinds) else None
        shown = show(
            value, interval, level, integral=bool(integral[i]) if i < len(integral) else False, kind=kind
        )
        note = f" ({KIND_WORDS[kind]})" if interval is not None and kind in KIND_WORDS else ""
        parts.append(f"{label} = {shown}{note}")
    text = ", ".join(parts)
    if intervals is not None and any(ci is not None for ci in intervals):
        text += f" ({level_text(level)} intervals)"
    return text
