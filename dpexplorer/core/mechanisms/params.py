"""The parameter declaration of DESIGN.md: declared once, it drives the GUI's controls,
tooltips and validation, the CLI's parsing and the saved sessions."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from dpexplorer.core.checks import shown as _shown
from dpexplorer.core.errors import InvalidParameterError

ParamType = Literal["float", "int", "choice", "bool"]


@dataclass(frozen=True)
class Param:
    """One parameter of a mechanism.

    ``low``/``high`` bound the value; ``low_open``/``high_open`` say whether the bound itself is
    excluded (epsilon > 0, delta < 1). ``log_scale`` asks the GUI for a logarithmic slider.
    ``help`` is written for a data steward: what the parameter does to privacy and accuracy."""

    name: str
    label: str
    type: ParamType
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    log_scale: bool = False
    unit: str = ""
    choices: tuple[str, ...] = field(default_factory=tuple)
    slider: tuple[float, float] | None = None
    """The span a slider covers (a typed value may go beyond it, within low/high)."""

    def __post_init__(self) -> None:
        if self.type == "choice" and self.default not in self.choices:
            raise ValueError(f"{self.name}: default {self.default!r} is not among the choices")
        if self.log_scale and (self.slider is None or self.slider[0] <= 0):
            raise ValueError(f"{self.name}: a log-scale parameter needs a positive slider span")

    def with_note(self, note: str) -> Param:
        """This parameter with ``note`` appended to its help: the same ε or δ, explained for one
        mechanism (what it spends it on)."""
        return replace(self, help=f"{self.help} {note}")

    def slider_span(self) -> tuple[float, float]:
        """The (low, high) a slider covers: ``slider`` if declared, else the range itself."""
        if self.slider is not None:
            return self.slider
        if self.low is None or self.high is None:
            raise ValueError(f"{self.name}: an unbounded parameter needs a slider span")
        return (self.low, self.high)

    def validate(self, value: Any) -> Any:
        """Return ``value`` converted to this parameter's type, or raise
        :class:`InvalidParameterError` with a message naming the parameter and its range."""
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            raise InvalidParameterError(f"{self.label} must be true or false, not {value!r}")
        if self.type == "choice":
            if isinstance(value, str) and value in self.choices:
                return value
            options = ", ".join(self.choices)
            raise InvalidParameterError(f"{self.label} must be one of {options}; got {_shown(value)}")
        # Booleans and text are not numbers: "epsilon": true must not release at epsilon 1.
        if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
            raise InvalidParameterError(
                f"{self.label} must be a number, not {type(value).__name__} {_shown(value)}"
            )
        try:
            number = float(value)
        except (OverflowError, ValueError):  # an int of 400 digits
            raise InvalidParameterError(
                f"{self.label} must be a finite number; got {_shown(value)}"
            ) from None
        if not math.isfinite(number):
            raise InvalidParameterError(f"{self.label} must be a finite number; got {_shown(value)}")
        if self.type == "int":
            if number != int(number):
                raise InvalidParameterError(f"{self.label} must be a whole number; got {_shown(value)}")
            number = int(number)
        if not self._in_range(number):
            raise InvalidParameterError(f"{self.label} must be {self.range_text()}; got {_shown(value)}")
        return number

    def _in_range(self, number: float) -> bool:
        if self.low is not None and (number < self.low or (self.low_open and number == self.low)):
            return False
        return not (
            self.high is not None and (number > self.high or (self.high_open and number == self.high))
        )

    def range_text(self) -> str:
        """The allowed range in words, e.g. ``"in (0, 1)"`` or ``"at least 1"``."""
        if self.low is not None and self.high is not None:
            left = "(" if self.low_open else "["
            right = ")" if self.high_open else "]"
            return f"in {left}{self.low:g}, {self.high:g}{right}"
        if self.low is not None:
            return f"{'greater than' if self.low_open else 'at least'} {self.low:g}"
        if self.high is not None:
            return f"{'less than' if self.high_open else 'at most'} {self.high:g}"
        return "any number"


def validate_params(declared: tuple[Param, ...], values: Mapping[str, Any]) -> dict[str, Any]:
    """Fill defaults, reject unknown names, validate each value. Returns a new dict."""
    known = {p.name for p in declared}
    unknown = sorted(k if isinstance(k, str) else _shown(k) for k in set(values) - known)
    if unknown:
        raise InvalidParameterError(
            f"unknown parameter(s) {', '.join(unknown)}; expected some of {', '.join(sorted(known))}"
        )
    return {p.name: p.validate(values.get(p.name, p.default)) for p in declared}


# The kinds of parameter the mechanisms declare: each factory fixes what its kind has in common
# (type, open ends, slider scale), so a declaration states only what differs.


def log_float(
    name: str,
    label: str,
    *,
    default: float,
    help: str,
    slider: tuple[float, float],
    low: float = 0.0,
    high: float | None = None,
    unit: str = "",
) -> Param:
    """A positive float on a logarithmic slider, in [low, high] (no upper bound when ``high`` is
    None). A log scale never reaches 0, so a ``low`` of 0 is excluded: the value is > 0."""
    return Param(
        name=name,
        label=label,
        type="float",
        default=default,
        low=low,
        high=high,
        low_open=low == 0.0,
        log_scale=True,
        slider=slider,
        unit=unit,
        help=help,
    )


def probability(
    name: str, label: str, *, default: float, help: str, slider: tuple[float, float], log_scale: bool = True
) -> Param:
    """A float strictly between 0 and 1 (a δ, a failure probability, a share of ε)."""
    return Param(
        name=name,
        label=label,
        type="float",
        default=default,
        low=0.0,
        high=1.0,
        low_open=True,
        high_open=True,
        log_scale=log_scale,
        slider=slider,
        help=help,
    )


def number(name: str, label: str, *, default: float, low: float, high: float, help: str) -> Param:
    """A float in [low, high] (a share, a threshold) on a linear slider."""
    return Param(name=name, label=label, type="float", default=default, low=low, high=high, help=help)


def whole_number(name: str, label: str, *, default: int, low: int, high: int, help: str) -> Param:
    """An int in [low, high] (a count of rounds, picks, rows or steps) on a linear slider."""
    return Param(name=name, label=label, type="int", default=default, low=low, high=high, help=help)


def choice(name: str, label: str, *, default: str, choices: tuple[str, ...], help: str) -> Param:
    """One of ``choices`` (a method or estimator): no effect on privacy unless its help says so."""
    return Param(name=name, label=label, type="choice", default=default, choices=choices, help=help)


# Parameters shared by many mechanisms, declared once.
MIN_EPSILON = 1e-10
"""The smallest ε any mechanism takes (the one rule, in :data:`EPSILON`, that every mechanism
declares, MST and AIM included). Below it the noise is more than 10^10 times one person's
contribution, more people than are alive: a release would say nothing. Smaller values also left
the exact samplers unrepresentable (Laplace's scale overflowed below about 5e-17) or never
refused (MST and AIM's search for ρ never ended at 1e-300)."""

EPSILON = log_float(
    "epsilon",
    "ε (epsilon)",
    default=1.0,
    low=MIN_EPSILON,
    high=20.0,
    slider=(0.01, 10.0),
    help=(
        "Privacy loss bound. Smaller ε means stronger privacy and more noise: an attacker's "
        "odds of telling whether one person is in the data can grow by at most a factor e^ε. "
        "Common choices lie between 0.1 and 2."
    ),
)

DELTA = probability(
    "delta",
    "δ (delta)",
    default=1e-6,
    slider=(1e-12, 0.1),
    help=(
        "The probability mass allowed to exceed the ε bound. Keep it well below 1/n "
        "(n = number of people): a δ of 1/n would allow publishing one person's record outright."
    ),
)
