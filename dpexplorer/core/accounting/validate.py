"""Checks on guarantees and targets before any composition: bad values raise
:class:`~dpexplorer.core.errors.InvalidParameterError` with a message saying what to fix."""

from __future__ import annotations

import math
from collections.abc import Sequence

from dpexplorer.core.accounting.guarantees import (
    SCHEMES,
    ZCDP,
    Amplifiable,
    ApproxDP,
    GaussianNoise,
    Guarantee,
    LaplaceNoise,
    PureDP,
    RDPCurve,
    Subsampled,
)
from dpexplorer.core.errors import InvalidParameterError


def _positive(name: str, value: float, owner: str) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise InvalidParameterError(f"{owner}: {name} must be a positive finite number, got {value!r}")


MAX_LOSS = 100.0
"""Largest privacy loss one guarantee may bound (epsilon, sensitivity / scale, sensitivity /
sigma): e^100 is already a likelihood ratio no release can mean as protection, and the
accountants' e^epsilon overflows a double a little past 700."""


def _at_most(name: str, value: float, owner: str) -> None:
    if value > MAX_LOSS:
        raise InvalidParameterError(
            f"{owner}: {name} = {value:.6g} is above {MAX_LOSS:g}: a guarantee that weak protects "
            "nobody, and the accountants cannot represent e^epsilon for it"
        )


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


def _check_subsampled(g: Subsampled) -> None:
    if not isinstance(g.base, Amplifiable):
        raise InvalidParameterError(
            f"Subsampled: the base must be Laplace or Gaussian noise or pure DP, got {type(g.base).__name__}"
        )
    check_guarantee(g.base)
    if not (isinstance(g.rate, int | float) and math.isfinite(g.rate) and 0 < g.rate <= 1):
        raise InvalidParameterError(f"Subsampled: rate must satisfy 0 < rate <= 1, got {g.rate!r}")
    if g.scheme not in SCHEMES:
        raise InvalidParameterError(
            f"Subsampled: scheme must be one of {', '.join(SCHEMES)}, got {g.scheme!r}"
        )


def check_guarantee(g: Guarantee) -> None:
    """Raise InvalidParameterError if ``g`` holds a value outside its domain."""
    name = type(g).__name__
    if isinstance(g, PureDP):
        _positive("epsilon", g.epsilon, name)
        _at_most("epsilon", g.epsilon, name)
    elif isinstance(g, ApproxDP):
        _positive("epsilon", g.epsilon, name)
        _at_most("epsilon", g.epsilon, name)
        _delta_ok(g.delta, name, allow_zero=True)
    elif isinstance(g, ZCDP):
        _positive("rho", g.rho, name)
        _delta_ok(g.delta, name, allow_zero=True)
    elif isinstance(g, LaplaceNoise):
        _positive("scale", g.scale, name)
        _positive("sensitivity", g.sensitivity, name)
        _at_most("sensitivity / scale", g.sensitivity / g.scale, name)
    elif isinstance(g, GaussianNoise):
        _positive("sigma", g.sigma, name)
        _positive("sensitivity", g.sensitivity, name)
        _at_most("sensitivity / sigma", g.sensitivity / g.sigma, name)
    elif isinstance(g, RDPCurve):
        _check_rdp(g)
    elif isinstance(g, Subsampled):
        _check_subsampled(g)
    else:
        raise InvalidParameterError(f"not a guarantee: {g!r}")


def check_delta(delta: float) -> None:
    """Raise InvalidParameterError unless 0 <= delta < 1."""
    _delta_ok(delta, "target", allow_zero=True)


def check_epsilon(epsilon: float) -> None:
    """Raise InvalidParameterError unless epsilon >= 0 and finite."""
    if not (isinstance(epsilon, int | float) and math.isfinite(epsilon) and epsilon >= 0):
        raise InvalidParameterError(f"target: epsilon must be a finite number >= 0, got {epsilon!r}")


MAX_COUNT = 10**15
"""Largest multiplicity accepted (a count, never a list length; beyond it no method is meaningful
in double precision)."""


def _check_count(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_COUNT:
        raise InvalidParameterError(
            f"a guarantee's count must be an integer in 1..{MAX_COUNT:.0e}, got {k!r}"
        )
    return k


class HashedCounts(tuple):
    """The pairs (guarantee, count) of a list, hashing once: the accountants cache their results
    per list, and a ledger of ten thousand distinct releases would otherwise be hashed anew (ten
    thousand dataclass hashes) at every lookup."""

    def __hash__(self) -> int:
        cached = self.__dict__.get("hash")
        if cached is None:
            cached = self.__dict__["hash"] = tuple.__hash__(self)
        return cached


def counted(guarantees: Sequence[Guarantee | tuple[Guarantee, int]]) -> tuple[tuple[Guarantee, int], ...]:
    """Validate every guarantee and group identical ones: ((guarantee, how many times), ...).

    An item is a guarantee (once) or a pair (guarantee, count): a ledger of ten thousand
    identical releases, or ``k=10**8`` on the command line, is one pair, never a list of k.
    The result (a :class:`HashedCounts`, immutable) is returned as it is when passed again."""
    if isinstance(guarantees, HashedCounts):
        return guarantees  # validated and grouped when it was built
    counts: dict[Guarantee, int] = {}
    try:
        for item in guarantees:
            g, k = (item[0], _check_count(item[1])) if isinstance(item, tuple) else (item, 1)
            counts[g] = counts.get(g, 0) + k
    except TypeError:
        raise InvalidParameterError("guarantees must be guarantee values (PureDP, ApproxDP, ...)") from None
    for g in counts:
        check_guarantee(g)
    schemes = {g.scheme for g in counts if isinstance(g, Subsampled) and g.rate < 1}
    if len(schemes) > 1:
        raise InvalidParameterError(
            "Poisson subsampling (neighbours add or remove a row) and sampling without replacement "
            "(neighbours replace a row) hold under different neighbouring relations: compose one kind"
        )
    return HashedCounts(counts.items())
