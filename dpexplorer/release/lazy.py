"""Exact sampling of laws with irrational probabilities: lazy uniform reals and rigorous
interval arithmetic.

A :class:`LazyUniform` is a uniform real U in [0, 1) of which only the first k binary digits
have been drawn: U lies in [m / 2^k, (m + 1) / 2^k], and more digits are drawn on demand. A
sampler decides its outcome from such intervals alone, evaluating what it needs with rigorous
interval arithmetic (mpmath's ``iv`` context: every result encloses the exact value), and draws
more digits and raises the working precision while the interval still straddles two outcomes.
The outcome is then exactly the one the exact real U would give; the loop ends with
probability 1 (boundaries have probability 0) after a few rounds on average. This is how a
release draws exactly from laws that CKS 2020's integer samplers cannot express: continuous
noise rounded to a grid, argmax of continuous noise, weights exp(-gamma) with many values.

:func:`pick_index` samples an index with probability proportional to weights given only by
rigorous bounds of increasing precision (inversion of the CDF with a lazy uniform)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, TypeVar

from mpmath.ctx_iv import MPIntervalContext

from dpexplorer.release.samplers import BitSource

T = TypeVar("T")

START_BITS = 32
STEP_BITS = 16
GUARD_BITS = 24
"""Working precision = digits drawn + GUARD_BITS (the enclosures then stay narrower than U's)."""
MAX_BITS = 1 << 16
"""A sampler that is still undecided with this many digits has a bug (probability ~2^-65000)."""

Bounds = tuple[Fraction, Fraction]


class LazyUniform:
    """A uniform real on [0, 1) whose binary digits are drawn from ``bits`` when needed."""

    def __init__(self, bits: BitSource, digits: int = START_BITS) -> None:
        self._bits = bits
        self.numerator = bits.randbelow(1 << digits)
        self.digits = digits

    def refine(self, more: int = STEP_BITS) -> None:
        """Draw ``more`` further digits."""
        self.numerator = (self.numerator << more) | self._bits.randbelow(1 << more)
        self.digits += more

    def bounds(self) -> Bounds:
        """[low, high] containing U, exactly."""
        scale = 1 << self.digits
        return Fraction(self.numerator, scale), Fraction(self.numerator + 1, scale)

    def interval(self, ctx: MPIntervalContext) -> Any:
        """U as an interval of ``ctx`` (dyadic endpoints: exact at any precision >= digits)."""
        low, high = self.bounds()
        return ctx.mpf([rational(ctx, low).a, rational(ctx, high).b])


def rational(ctx: MPIntervalContext, value: Fraction) -> Any:
    """An interval of ``ctx`` enclosing the rational ``value``."""
    return ctx.mpf(value.numerator) / ctx.mpf(value.denominator)


_local = threading.local()


def context(precision: int) -> MPIntervalContext:
    """An interval context at ``precision`` bits, private to the calling thread (mpmath's global
    ``iv`` is shared state, and releases may run on worker threads). Cached: creating one costs
    about 1.6 ms."""
    cache: dict[int, MPIntervalContext] = _local.__dict__.setdefault("contexts", {})
    ctx = cache.get(precision)
    if ctx is None:
        ctx = cache[precision] = MPIntervalContext()
        ctx.prec = precision
    return ctx


def _mpf_fraction(raw: tuple[int, int, int, int]) -> Fraction | None:
    """An mpmath raw mpf (sign, mantissa, exponent, bitcount) as a Fraction; None if infinite/NaN."""
    sign, mantissa, exponent, _ = raw
    if mantissa == 0:
        return Fraction(0) if exponent == 0 else None  # mpmath encodes inf / nan with man = 0
    value = Fraction(mantissa) * (Fraction(2) ** exponent)
    return -value if sign else value


def fraction_bounds(interval: Any) -> Bounds | None:
    """The endpoints of an mpmath interval as exact Fractions; None if either is infinite."""
    low, high = (_mpf_fraction(end) for end in interval._mpi_)
    if low is None or high is None:
        return None
    return low, high


def refine_until(decide: Callable[[MPIntervalContext], T | None], uniforms: Sequence[LazyUniform]) -> T:
    """Call ``decide(ctx)`` until it returns an outcome (not None), drawing STEP_BITS more digits
    of every uniform and raising the precision before each retry. ``decide`` must return an
    outcome only when every real value inside the current intervals gives that same outcome."""
    while True:
        digits = max((u.digits for u in uniforms), default=START_BITS)
        outcome = decide(context(digits + GUARD_BITS))
        if outcome is not None:
            return outcome
        if digits > MAX_BITS:
            raise RuntimeError("an exact sampler did not converge; this is a bug, please report it")
        for u in uniforms:
            u.refine()


def _index_if_decided(u: Bounds, weights: Sequence[Bounds]) -> int | None:
    """The index i with S_{i-1} <= U W < S_i (S the partial sums, W the total) if every
    weight in ``weights`` agrees; None while the bounds leave two indices possible."""
    low_total = sum((w[0] for w in weights), Fraction(0))
    high_total = sum((w[1] for w in weights), Fraction(0))
    below_low, below_high = Fraction(0), Fraction(0)  # bounds of S_i, the mass up to and incl. i
    for i, (w_low, w_high) in enumerate(weights):
        below_low += w_low
        below_high += w_high
        above_low, above_high = low_total - below_low, high_total - below_high  # the rest
        cdf_low = below_low / (below_low + above_high) if below_low else Fraction(0)
        cdf_high = below_high / (below_high + above_low) if below_high else Fraction(0)
        if u[1] <= cdf_low:
            return i  # U < F_i for sure, and U >= F_(i-1) was sure at the previous step
        if u[0] < cdf_high:
            return None  # U might be on either side of F_i
    return len(weights) - 1


def pick_index(weight_bounds: Callable[[MPIntervalContext], Sequence[Bounds]], bits: BitSource) -> int:
    """An index i drawn with probability exactly w_i / sum_j w_j, where ``weight_bounds(ctx)``
    returns rigorous bounds [low_i, high_i] of every w_i >= 0 (tighter at higher ``ctx.prec``),
    not all zero. Inversion of the CDF with a :class:`LazyUniform` (module docstring)."""
    u = LazyUniform(bits)

    def decide(ctx: MPIntervalContext) -> int | None:
        return _index_if_decided(u.bounds(), weight_bounds(ctx))

    return refine_until(decide, [u])
