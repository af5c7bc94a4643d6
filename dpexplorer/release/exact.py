"""Building blocks of the exact release paths: the :class:`ExactRelease` value, the grid on which
real-valued answers are released, the rounding of noise scales (always up, so a charged epsilon
is never above the mechanism's claim), and the private distance test of PTR/Dist2Instability.

Grid (for every real-valued answer): spacing g = 2^k with

* k = floor(log2(min(b, Delta))) - 10, b the noise scale (Laplace b or Gaussian sigma, in the
  answer's units) and Delta the sensitivity: the grid is at least 1024 times finer than both,
  so discretising costs under 0.1% extra noise;
* k = 0 for counts and histograms (integer answers) when Delta is a whole number;
* k raised where needed to keep b below 2^21 grid steps (the samplers' integer ranges).

The true answer x becomes floor(x/g + 1/2) (exact rational arithmetic on the float x). Since
floor(a + 1/2) - floor(b + 1/2) <= ceil(a - b), a scalar's sensitivity on the grid is
ceil(Delta/g); for d coordinates, l1: floor(Delta/g) + d, l2: ceil(Delta/g) + ceil(sqrt(d))
(each coordinate's rounding moves by at most one more step). Released values are
(rounded answer + integer noise) * g, exact as floats.

An answer computed with float arithmetic (a trimmed mean, a variance; not a count, an order
statistic, nor the exact lattice sums of the data layer) can sit up to its rounding error e away
from the exact answer on each of D and D'. With 2e below one step (the grid is 2^-10 of the
noise, many orders of magnitude above the float error of any realistic sum), a - b exceeds
Delta/g by less than one, so one more step per coordinate: scalar floor(Delta/g) + 2, l1
floor(Delta/g) + 2d, l2 ceil(Delta/g) + 2 ceil(sqrt(d)) (``float_error``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpexplorer.core.accounting.guarantees import ApproxDP, Guarantee, PureDP
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.release import samplers
from dpexplorer.release.rational import ceil_fraction, floor_log2
from dpexplorer.release.samplers import BitSource

INTEGER_STATISTICS = frozenset({"count", "predicate_count", "histogram"})
"""Statistics whose true answers are integers (kept on the integer grid when Delta is whole)."""
ORDER_STATISTICS = frozenset({"median", "quantile"})
"""Statistics whose true answer is one of the (clipped) data values: a float, but no float
arithmetic stands between the data and it."""

GRID_MARGIN_BITS = 10
MAX_NOISE_BITS = 21
SCALE_PRECISION_BITS = 10
"""A discrete Laplace scale t/s has t >= 2^10: rounding it up costs < 0.1% of epsilon."""

BOTTOM = "⊥"

Value = float | str


@dataclass(frozen=True)
class ExactRelease:
    """A release ready to charge. ``draw`` holds the true answer in its closure and returns the
    released values only; ``provenance`` is safe to publish (no true answer in it).
    ``simulate(bits, size)`` (numeric paths) gives ``size`` independent outputs of the first
    coordinate drawn exactly as ``draw`` draws them, for audits and tests. ``epsilon`` and
    ``delta`` are what the provenance reports (for a zCDP release: epsilon at the mechanism's
    delta, converted from rho, an upper bound)."""

    guarantee: Guarantee
    epsilon: float
    delta: float
    rho: float | None
    sampler: str
    labels: tuple[str, ...]
    draw: Callable[[BitSource], list[Value]]
    provenance: dict[str, Any] = field(default_factory=dict)
    ci_halfwidth: float | None = None
    ci_at: Callable[[float], float] | None = None
    """The fixed half-width at any level (Laplace and Gaussian paths: the noise law's quantile
    plus the rounding to the grid), for post-processing that needs intervals at another level
    (a histogram made consistent with a released total: a union bound over its parts)."""
    simulate: Callable[[BitSource, int], np.ndarray] | None = None
    approx: tuple[float, float] | None = None
    """An (epsilon, delta) the release also satisfies, for accountants that cannot compose
    ``guarantee`` (set when ``guarantee`` is zCDP)."""
    dp_outputs: dict[str, Any] = field(default_factory=dict)
    """Facts ``draw`` computes after the charge from noise it draws (e.g. a noisy row count) and
    from public facts, such as the grid built on that count: filled by ``draw``, published in the
    sidecar under ``dp_outputs``. Everything in ``provenance`` is fixed before the charge and
    depends on public facts only (tests/release/test_public_facts.py)."""

    key_columns: tuple[str, ...] = ()
    """The grouping columns of a statistic by group (public: declared in the query)."""
    group_keys: tuple[tuple[str, ...], ...] = ()
    """The groups' key values, in the order of the values (declared keys; with private keys the
    kept ones are a DP output: ``dp_outputs["kept_keys"]``)."""

    def released_groups(self) -> tuple[tuple[str, ...], ...]:
        """The key values of the groups the last ``draw`` released."""
        return tuple(tuple(k) for k in self.dp_outputs.get("kept_keys", self.group_keys))

    def released_labels(self) -> tuple[str, ...]:
        """The labels of the values the last ``draw`` returned: ``labels``, or, where the set of
        released groups is itself a DP output (private keys), the labels ``draw`` put in
        ``dp_outputs["labels"]``."""
        return tuple(self.dp_outputs.get("labels", self.labels))

    @classmethod
    def pure(cls, epsilon: float, **fields: Any) -> ExactRelease:
        """A pure epsilon-DP release: the guarantee and the reported (epsilon, 0) from one number."""
        return cls(guarantee=PureDP(epsilon), epsilon=epsilon, delta=0.0, rho=None, **fields)

    @classmethod
    def approximate(cls, claimed: Guarantee, **fields: Any) -> ExactRelease:
        """An (epsilon, delta)-DP release (behind the distance test: PTR, Dist2Instability): the
        mechanism's claimed guarantee, which must be ApproxDP, and the reported (epsilon, delta)
        from it."""
        assert isinstance(claimed, ApproxDP), claimed
        return cls(guarantee=claimed, epsilon=claimed.epsilon, delta=claimed.delta, rho=None, **fields)


def finite_fractions(values: Sequence[float] | np.ndarray, what: str) -> list[Fraction]:
    """Each float as an exact Fraction; InvalidParameterError on NaN or infinity."""
    floats = [float(v) for v in np.asarray(values, dtype=float).ravel()]
    if not all(math.isfinite(v) for v in floats):
        raise InvalidParameterError(f"the {what} is NaN or infinite; clean the column first")
    return [Fraction(v) for v in floats]


def grid_exponent(noise: Fraction, sensitivity: Fraction, integral: bool) -> int:
    """k of the grid 2^k (module docstring)."""
    k = 0 if integral else floor_log2(min(noise, sensitivity)) - GRID_MARGIN_BITS
    return max(k, floor_log2(noise) + 1 - MAX_NOISE_BITS)


@dataclass(frozen=True)
class Grid:
    """The grid of a release: spacing 2^k, sensitivity in grid steps, rounded true answers."""

    k: int
    sensitivity: int
    centres: tuple[int, ...]
    exact: bool = False
    """The true answers lie on the grid (an integer statistic, spacing 2^k with k <= 0): the
    rounding to it is exact, so an interval needs no half step for it. Decided from the query's
    kind and the grid, both public."""

    @property
    def spacing(self) -> Fraction:
        return Fraction(2) ** self.k

    @property
    def rounding(self) -> Fraction:
        """The largest distance from a true answer to its grid point, in grid steps."""
        return Fraction(0) if self.exact else Fraction(1, 2)

    def values(self, noise: np.ndarray) -> list[Value]:
        """Released values: (rounded answer + integer noise) * spacing, exact as floats."""
        return [float((c + int(z)) * self.spacing) for c, z in zip(self.centres, noise, strict=True)]

    def outputs(self, noise: Callable[[BitSource, int], np.ndarray]) -> dict[str, Any]:
        """``draw`` and ``simulate`` of a release adding ``noise(bits, size)`` on this grid."""
        spacing = float(self.spacing)
        return {
            "draw": lambda bits: self.values(noise(bits, len(self.centres))),
            "simulate": lambda bits, size: (self.centres[0] + noise(bits, size)) * spacing,
        }

    def describe(self) -> dict[str, Any]:
        return {
            "grid_spacing": float(self.spacing),
            "grid_exponent": self.k,
            "sensitivity_on_grid": self.sensitivity,
        }


def make_grid(
    values: list[Fraction],
    noise: Fraction,
    sensitivity: Fraction,
    integral: bool,
    norm: str = "l1",
    *,
    float_error: bool = False,
) -> Grid:
    """The grid for ``values`` with noise scale ``noise`` and ``sensitivity`` (module docstring).
    ``norm`` is "l1", "l2" or "each" (every coordinate has sensitivity ``sensitivity``);
    ``float_error``: the values carry float rounding error (one more step per coordinate)."""
    if sensitivity <= 0 or noise <= 0:
        raise InvalidParameterError("the sensitivity and the noise scale must be positive")
    integral = integral and sensitivity.denominator == 1
    k = grid_exponent(noise, sensitivity, integral)
    # No refusal on a non-integer answer here: it would be decided from the data before the
    # charge. Counts are integers by construction (the data layer counts rows), and rounding to
    # the grid below is what every release does anyway.
    spacing = Fraction(2) ** k
    scaled = sensitivity / spacing
    on_grid = _grid_sensitivity(scaled, len(values), norm, k == 0 and integral, float_error)
    centres = tuple(math.floor(v / spacing + Fraction(1, 2)) for v in values)
    return Grid(k, on_grid, centres, exact=integral and k <= 0)


def _grid_sensitivity(scaled: Fraction, d: int, norm: str, integer_grid: bool, float_error: bool) -> int:
    """The sensitivity in grid steps of d rounded coordinates (module docstring); ``scaled`` is
    Delta / g."""
    per_coordinate = 2 if float_error else 1
    if d == 1 or norm == "each":
        return scaled.numerator // scaled.denominator + 2 if float_error else ceil_fraction(scaled)
    if integer_grid:
        return ceil_fraction(scaled)
    if norm == "l1":
        return scaled.numerator // scaled.denominator + per_coordinate * d
    return ceil_fraction(scaled) + per_coordinate * (math.isqrt(d - 1) + 1)


def discrete_scale(target: Fraction) -> tuple[int, int]:
    """(t, s) with t/s >= target, s a power of two, t >= 2^10 (so t/s exceeds target by less
    than 0.1%): the discrete Laplace scale used for a required scale ``target``."""
    s = 2 ** max(0, SCALE_PRECISION_BITS - floor_log2(target))
    return ceil_fraction(target * s), s


def laplace_ci_steps(t: int, s: int, level: float) -> int:
    """Smallest h >= 0 with P(|X| > h) <= 1 - level for X discrete Laplace of scale t/s:
    P(|X| > h) = 2 r^(h+1) / (1 + r), r = exp(-s/t) (closed form; float evaluation)."""
    r = math.exp(-s / t)
    return max(0, math.ceil(math.log((1 - level) * (1 + r) / 2) / math.log(r) - 1))


# ------------------------------------------------------------------ private distance test
@dataclass(frozen=True)
class DistanceTest:
    """The test "distance + Z >= m" with Z discrete Laplace of scale t/s >= 1/epsilon.

    The continuous test of PTR/Dist2Instability (Dwork & Roth 2014, Section 7.3) passes when
    d + Lap(1/epsilon) > ln(1/delta)/epsilon; its two properties used by the proofs are kept:
    (1) the test is (s/t)-DP with s/t <= epsilon (the distance has sensitivity 1, the discrete
    Laplace mechanism on integers; CKS 2020), (2) at distance 0 it passes with probability
    P(Z >= m) = r^m / (1 + r) (r = e^(-s/t)) <= delta / 2 = P(Lap(1/epsilon) > ln(1/delta)/epsilon):
    m is the smallest integer with m s/t >= ln(2 / (delta (1 + r))), then raised by one when the
    float evaluation is within 1e-9 of an integer (more conservative, never less)."""

    t: int
    s: int
    m: int

    @classmethod
    def for_parameters(cls, epsilon: float, delta: float) -> DistanceTest:
        t, s = discrete_scale(1 / Fraction(epsilon))
        rate = s / t
        x = math.log(2 / (delta * (1 + math.exp(-rate)))) / rate
        m = math.ceil(x)
        if m - x < 1e-9 * max(1.0, x):
            m += 1
        return cls(t, s, max(m, 1))

    def passes(self, distance: int, bits: BitSource) -> bool:
        return distance + samplers.discrete_laplace(Fraction(self.t, self.s), bits) >= self.m

    def then(
        self, distance: int, answer: Callable[[BitSource], list[Value]]
    ) -> Callable[[BitSource], list[Value]]:
        """A release's ``draw``: run the test at ``distance``, then ``answer(bits)`` when it
        passes, else ⊥ (one value)."""

        def draw(bits: BitSource) -> list[Value]:
            return answer(bits) if self.passes(distance, bits) else [BOTTOM]

        return draw

    def describe(self) -> dict[str, Any]:
        return {
            "test_noise": f"discrete Laplace of scale {self.t}/{self.s}",
            "test_passes_when": f"distance + noise >= {self.m}",
        }
