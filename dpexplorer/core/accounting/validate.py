"""Checks on guarantees and targets before any composition: bad values raise
:class:`~dpexplorer.core.errors.InvalidParameterError` with a message saying what to fix."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from dpexplorer.core.accounting.guarantees import (
    ZCDP,
    ApproxDP,
    GaussianNoise,
    Guarantee,
    LaplaceNoise,
    PureDP,
    RDPCurve,
)
from dpexplorer.core.errors import InvalidParameterError


def _positive(name: str, value: float, owner: str) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise InvalidParameterError(f"{owner}: {name} must be a positive finite number, got {value!r}")


def _delta_ok(value: float, owner: str, *, allow_zero: bool) -> None:
    low_ok = value >= 0 if allow_zero else value > 0
    if not (isinstance(value, int | float) and math.isfinite(value) and low_ok and value < 1):
        bound = "0 <= delta < 1" if allow_zero else "0 < delta < 1"
        raise InvalidParameterError(f"{owner}: delta must satisfy {bound}, got {value!r}")


def _check_rdp(curve: RDPCurve) -> None:
    if len(curve.orders) == 0 or len(curve.orders) != len(curve.epsilons):
        raise InvalidParameterError("RDPCurve: give as many epsilons as orders, at least one of each")
    for order, eps in zip(curve.orders, curve.epsilons, strict=True):
        if not (math.isfinite(order) and order > 1):
            raise InvalidParameterError(f"RDPCurve: every order must be finite and > 1, got {order!r}")
        if not (eps >= 0):
            raise InvalidParameterError(f"RDPCurve: every epsilon must be >= 0, got {eps!r}")


def check_guarantee(g: Guarantee) -> None:
    """Raise InvalidParameterError if ``g`` holds a value outside its domain."""
    name = type(g).__name__
    if isinstance(g, PureDP):
        _positive("epsilon", g.epsilon, name)
    elif isinstance(g, ApproxDP):
        _positive("epsilon", g.epsilon, name)
        _delta_ok(g.delta, name, allow_zero=True)
    elif isinstance(g, ZCDP):
        _positive("rho", g.rho, name)
        _delta_ok(g.delta, name, allow_zero=True)
    elif isinstance(g, LaplaceNoise):
        _positive("scale", g.scale, name)
        _positive("sensitivity", g.sensitivity, name)
    elif isinstance(g, GaussianNoise):
        _positive("sigma", g.sigma, name)
        _positive("sensitivity", g.sensitivity, name)
    elif isinstance(g, RDPCurve):
        _check_rdp(g)
    else:
        raise InvalidParameterError(f"not a guarantee: {g!r}")


def check_delta(delta: float) -> None:
    """Raise InvalidParameterError unless 0 <= delta < 1."""
    _delta_ok(delta, "target", allow_zero=True)


def check_epsilon(epsilon: float) -> None:
    """Raise InvalidParameterError unless epsilon >= 0 and finite."""
    if not (isinstance(epsilon, int | float) and math.isfinite(epsilon) and epsilon >= 0):
        raise InvalidParameterError(f"target: epsilon must be a finite number >= 0, got {epsilon!r}")


def counted(guarantees: Sequence[Guarantee]) -> tuple[tuple[Guarantee, int], ...]:
    """Validate every guarantee and group identical ones: ((guarantee, how many times), ...)."""
    try:
        counts = Counter(guarantees)
    except TypeError:
        raise InvalidParameterError("guarantees must be guarantee values (PureDP, ApproxDP, ...)") from None
    for g in counts:
        check_guarantee(g)
    return tuple(counts.items())
