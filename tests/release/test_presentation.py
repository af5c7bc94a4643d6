"""The one rounding rule for what a person reads (dpexplorer/release/presentation.py)."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpexplorer.release.presentation import (
    BOTTOM,
    EMPTY,
    plain,
    privacy_number,
    privacy_text,
    rank_sentence,
    round_released,
    rounding_unit,
    show,
    significant_decimals,
)

finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)
widths = st.floats(min_value=1e-9, max_value=1e9, allow_nan=False)


@st.composite
def released(draw: st.DrawFn) -> tuple[float, float, float]:
    """(value, low, high) with low <= value <= high and high > low."""
    value = draw(finite)
    below, above = draw(widths), draw(widths)
    low, high = value - below, value + above
    if not high > low:
        high = math.nextafter(low, math.inf)
    return min(max(value, low), high), low, high


@settings(max_examples=400, deadline=None)
@given(released(), st.booleans())
def test_rounded_interval_contains_the_computed_one_and_the_value(
    case: tuple[float, float, float], integral: bool
) -> None:
    value, low, high = case
    rounded = round_released(value, low, high, integral=integral)
    assert rounded is not None
    shown, down, up, unit = rounded
    assert down <= Decimal(low) and up >= Decimal(high)  # outward, exactly
    assert down <= shown <= up
    assert abs(shown - Decimal(value)) <= unit / 2
    for number in (shown, down, up):
        assert number % unit == 0
    if integral:
        assert unit >= 1


@settings(max_examples=400, deadline=None)
@given(released())
def test_unit_is_the_half_widths_second_significant_digit(case: tuple[float, float, float]) -> None:
    _value, low, high = case
    unit = rounding_unit(low, high)
    assert unit is not None
    half = (Decimal(high) - Decimal(low)) / 2
    largest = max(abs(Decimal(low)), abs(Decimal(high)))
    if largest.adjusted() - 16 <= half.adjusted() - 1:  # not capped at a double's digits
        assert 10 * unit <= half < 100 * unit
    # the rounding error is at most a twentieth of the half-width (or a double's last digit)
    assert unit / 2 <= max(half / 20, largest * Decimal("1e-16"))


@settings(max_examples=300, deadline=None)
@given(released())
def test_shown_texts_parse_back_to_the_rounded_numbers(case: tuple[float, float, float]) -> None:
    value, low, high = case
    shown = show(value, (low, high))
    assert shown.low is not None and shown.high is not None and shown.unit is not None
    assert float(shown.low) <= low and float(shown.high) >= high
    assert float(shown.low) <= float(shown.value) <= float(shown.high)
    if "e" not in shown.value and shown.value != "0":  # tiny units: zero is written "0"
        assert significant_decimals(shown.value) == max(0, -shown.unit.as_tuple().exponent)  # type: ignore[operator]
    if shown.reach.startswith("±"):  # both distances round to one figure
        below = above = float(shown.reach[1:])
        assert abs((value - low) - (high - value)) <= 0.1 * below + 2 * float(shown.unit)
        assert shown.sentence.endswith(f"at most {shown.reach}")
    else:  # asymmetric: each side its own figure (issue 41)
        below, above = (float(t) for t in shown.reach.replace("−", "").replace("+", "").split(" / "))
        assert below != above and " below and " in shown.sentence and "±" not in shown.sentence
    assert below >= value - low and above >= high - value


@pytest.mark.parametrize(
    ("value", "interval", "integral", "expected"),
    [
        (4190.43553008596, (4088.2, 4284.9), False, "4190 [4088, 4285]"),
        (120.625, (11.3, 230.0), False, "120 [10, 230]"),
        (38.5812, (38.573, 38.589), False, "38.5812 [38.5730, 38.5890]"),
        (1234.0, (1231.0, 1237.0), True, "1234 [1231, 1237]"),
        (3764.9139072847684, (3700.1, 3829.7), False, "3765 [3700, 3830]"),
        (0.0, (-3.0, 3.0), False, "0.0 [-3.0, 3.0]"),
    ],
)
def test_examples(value: float, interval: tuple[float, float], integral: bool, expected: str) -> None:
    assert str(show(value, interval, integral=integral)) == expected


def test_sentence() -> None:
    shown = show(4190.43553008596, (4093.0, 4287.0), 0.95)
    assert shown.sentence == "with 95 % probability the noise moved this by at most ±98"
    assert show(10.0, (9.0, 11.0), 0.9).sentence.startswith("with 90 % probability")


def test_values_that_are_not_numbers() -> None:
    assert show(BOTTOM).value == BOTTOM and show(BOTTOM).interval == ""
    assert show(None).value == EMPTY and show(EMPTY).value == EMPTY
    assert show("Bachelors").value == "Bachelors"
    assert show(float("nan")).value == "—"
    assert show(2.5).value == "2.5" and show(2.0, integral=True).value == "2"


def test_without_interval_six_significant_digits() -> None:
    assert plain(4190.43553008596) == "4190.44"
    assert plain(120.625) == "120.625"
    assert plain(48842.0) == "48842"
    assert plain(1e20) == "1e20"
    assert plain(float("inf")) == "∞"
    assert show(5.0, (5.0, 5.0)).value == "5"


def test_extreme_magnitudes_are_written_with_an_exponent() -> None:
    shown = show(1e-300, (0.5e-300, 1.5e-300))
    assert shown.value == "1.00e-300" and float(shown.low) <= 0.5e-300  # type: ignore[arg-type]
    assert len(str(show(1e300, (1e300 - 1e285, 1e300 + 1e285)))) < 80


@pytest.mark.parametrize(
    ("x", "text"),
    [(0.29990234375, "0.3"), (0.30000000000000004, "0.3"), (1e-7, "1e-7"), (2.5e-6, "2.5e-6"),
     (1.16899, "1.17"), (0.0, "0"), (2.0, "2"), (None, "—"), (0.123456, "0.123")],
)  # fmt: skip
def test_privacy_numbers(x: float | None, text: str) -> None:
    assert privacy_number(x) == text


def test_privacy_text() -> None:
    assert privacy_text(0.29990234375) == "ε = 0.3"
    assert privacy_text(0.5, 1e-7) == "ε = 0.5, δ = 1e-7"


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-12, max_value=100, allow_nan=False))
def test_privacy_number_is_within_half_a_percent(x: float) -> None:
    assert abs(float(privacy_number(x)) - x) <= 0.005 * x


def test_rank_sentence() -> None:
    assert rank_sentence(0.45, 0.55) == (
        "with 95 % probability this lies between the 45th and the 55th percentile of the data"
    )
    assert rank_sentence(0.0, 0.031).endswith("between the smallest value and the 4th percentile of the data")
    assert "21st" in rank_sentence(0.213, 0.5) and "12th" in rank_sentence(0.1, 0.12)


def test_words_match_the_interval_kind_and_its_asymmetry() -> None:
    """Issue 41: the declared range says so in words and is no finding; an empty group is no
    finding; an asymmetric interval (4,000 wide around 2,900, cut at one end) is said side by
    side, never as ±half-width."""
    ranged = show(74.0, (17.0, 90.0), kind="range")
    assert ranged.sentence.startswith("no estimate better than the declared range")
    assert not ranged.finding and "±" not in ranged.sentence and ranged.reach == ""
    empty = show(EMPTY)
    assert empty.value == "empty" and not empty.finding and "empty" in empty.sentence
    cut = show(2900.0, (-100.0, 3900.0))
    assert cut.reach == "−3000 / +1000" and "±" not in cut.sentence
    assert cut.sentence == "with 95 % probability the true answer lies at most 3000 below and 1000 above this"
    assert show(2900.0, (2800.0, 3000.0)).finding
