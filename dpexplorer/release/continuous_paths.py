"""Exact release paths of mechanisms whose proofs need continuous noise: smooth sensitivity
(Cauchy, Student's t, Laplace-log-normal) and report-noisy-max with Laplace noise.

Continuous noise is built from lazy uniforms (:mod:`.lazy`) and evaluated in rigorous interval
arithmetic; a uniform's digits are drawn until the outcome is the same for every real value in
the intervals, so the outcome is EXACTLY a function of the exact continuous noise (no float
decides anything):

* standard normal pair (Box & Muller 1958): R cos(2 pi U2), R sin(2 pi U2), R = sqrt(-2 ln U1);
* chi-square with 2j degrees of freedom: -2 ln(U_1 ... U_j) (a sum of j Exp(1/2) variables);
* Student's t with d degrees of freedom: N0 / sqrt(V / d), V = chi-square(2 floor(d/2)) plus N1^2
  if d is odd (N0, N1 one Box-Muller pair); d = 1 is the Cauchy law;
* Laplace(1): a fair sign times -ln U; Laplace-log-normal: X e^(sigma Y), X ~ Lap(1), Y ~ N(0, 1)
  (Bun & Steinke 2019, "Average-case averages", Section 3.1).

**Smooth sensitivity** (Nissim, Raskhodnikova & Smith 2007; Bun & Steinke 2019, Section 3):
the released value is g * floor((f(x) + (S'(x) / s) Z) / g + 1/2), with

* f(x) the exact statistic (a data value for a median or quantile; the trimmed mean in exact
  rationals), under the conventions of :mod:`dpexplorer.core.sensitivity`;
* S' the provably beta-smooth upper bound of :mod:`.smooth_scale` (beta = t and the divisor s
  of the mechanism's ``smoothing``), so the continuous mechanism meets the hypotheses of the
  mechanism's own theorem and its claim holds;
* g = 2^k with k = floor(log2(upper - lower)) - 30: a grid fixed by the PUBLIC bounds. Rounding
  is then post-processing. The grid must not follow the noise scale S'(x)/s as the other paths'
  grids follow theirs: S' depends on the data, and neighbours with scales on either side of a
  power of two would release on different grids (outputs possible under one and impossible
  under the other: no finite epsilon). g is 2^-30 of the range, so the rounding matters only
  when the noise scale is itself that small.

The charge is the mechanism's own claim (pure epsilon; zCDP for Laplace-log-normal, with its
(epsilon, delta) conversion as ``approx``), raised to a rigorous upper bound of the same formula
where the float evaluation came out an ulp low. No confidence interval is published: its width
would reveal S'(x), which depends on the data and is not covered by the guarantee.

**Report-noisy-max with Laplace noise** (Dwork & Roth 2014, Claim 3.9): argmax of
u_r / b + Lap(1) with b = 2 Delta_u / epsilon (Delta_u / epsilon for a monotone utility)
computed exactly, so the charge PureDP(epsilon) is the mechanism's claim. The winner is decided
once its noisy score's interval lies above every other one.

A released value far beyond 2^53 grid steps is rounded to the nearest float (a fixed map:
post-processing)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from mpmath.ctx_iv import MPIntervalContext

from dpexplorer.core.accounting.guarantees import ZCDP, Guarantee, PureDP
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import Mechanism, NumericInput, SelectionInput
from dpexplorer.core.mechanisms.smooth import check_data_query
from dpexplorer.core.sensitivity import quantile_rank, trim_count
from dpexplorer.release.exact import ExactRelease
from dpexplorer.release.lazy import LazyUniform, context, fraction_bounds, rational, refine_until
from dpexplorer.release.rational import float_up, floor_log2
from dpexplorer.release.samplers import BitSource
from dpexplorer.release.selection_paths import checked_scores, sigma, uses_monotone_bound
from dpexplorer.release.smooth_scale import smooth_upper_bound

SMOOTH_GRID_BITS = 30
"""The smooth-sensitivity grid is 2^-30 of the range (upper - lower), rounded down to a power of 2."""
CLAIM_PRECISION = 128

Interval = Any
"""An mpmath ``iv`` interval."""
NoiseInterval = Callable[[MPIntervalContext], Interval]
"""Encloses the standard noise Z given the current digits of its uniforms."""
NoiseLaw = Callable[[BitSource], tuple[list[LazyUniform], NoiseInterval]]
"""Starts one draw of Z: its lazy uniforms and their enclosure of Z."""


Enclosures = Callable[[MPIntervalContext], list[Interval]]


def enclosures(values: list[Fraction]) -> Enclosures:
    """ctx -> intervals enclosing ``values``, computed once per context (contexts are cached
    per thread and precision by :func:`.lazy.context`, so a draw reuses them)."""
    cache: dict[int, list[Interval]] = {}

    def get(ctx: MPIntervalContext) -> list[Interval]:
        found = cache.get(id(ctx))
        if found is None:
            found = cache[id(ctx)] = [rational(ctx, v) for v in values]
        return found

    return get


# ---------------------------------------------------------------- noise as functions of uniforms
def _box_muller(ctx: MPIntervalContext, u1: LazyUniform, u2: LazyUniform) -> tuple[Interval, Interval]:
    """Two independent N(0, 1) (Box & Muller 1958), enclosed."""
    radius = ctx.sqrt(-2 * ctx.log(u1.interval(ctx)))
    angle = 2 * ctx.pi * u2.interval(ctx)
    return radius * ctx.cos(angle), radius * ctx.sin(angle)


def student_t_law(dof: int) -> NoiseLaw:
    """Student's t with ``dof`` degrees of freedom (Cauchy for 1): module docstring."""
    if dof < 1:
        raise InvalidParameterError(f"Student's t needs at least 1 degree of freedom, got {dof}")

    def start(bits: BitSource) -> tuple[list[LazyUniform], NoiseInterval]:
        uniforms = [LazyUniform(bits) for _ in range(2 + dof // 2)]

        def z(ctx: MPIntervalContext) -> Interval:
            n0, n1 = _box_muller(ctx, uniforms[0], uniforms[1])
            chi2 = n1**2 if dof % 2 else ctx.mpf(0)
            if dof >= 2:
                chi2 += -2 * ctx.log(math.prod((u.interval(ctx) for u in uniforms[2:]), start=ctx.mpf(1)))
            return n0 / ctx.sqrt(chi2 / dof)

        return uniforms, z

    return start


def _laplace(ctx: MPIntervalContext, negative: bool, u: LazyUniform) -> Interval:
    """A Laplace(1) variable: sign times Exp(1) = -ln U."""
    magnitude = -ctx.log(u.interval(ctx))
    return -magnitude if negative else magnitude


def laplace_log_normal_law(sigma_: float) -> NoiseLaw:
    """X e^(sigma Y), X ~ Lap(1), Y ~ N(0, 1) (module docstring)."""

    def start(bits: BitSource) -> tuple[list[LazyUniform], NoiseInterval]:
        negative = bits.randbelow(2) == 1
        uniforms = [LazyUniform(bits) for _ in range(3)]

        def z(ctx: MPIntervalContext) -> Interval:
            y, _ = _box_muller(ctx, uniforms[0], uniforms[1])
            return _laplace(ctx, negative, uniforms[2]) * ctx.exp(ctx.mpf(sigma_) * y)

        return uniforms, z

    return start


def rounded_cell(law: NoiseLaw, offset_ratio: Enclosures, bits: BitSource) -> int:
    """floor(offset + ratio * Z) for one draw of Z from ``law``, exactly (refined until the
    whole enclosure lies in one cell); ``offset_ratio`` encloses the two rationals."""
    uniforms, z = law(bits)

    def decide(ctx: MPIntervalContext) -> int | None:
        offset, ratio = offset_ratio(ctx)
        bounds = fraction_bounds(offset + ratio * z(ctx))
        if bounds is None:
            return None
        low, high = math.floor(bounds[0]), math.floor(bounds[1])
        return low if low == high else None

    return refine_until(decide, uniforms)


# ---------------------------------------------------------------- smooth sensitivity
def _clipped_column(query: NumericInput) -> np.ndarray:
    """The sorted column clipped to the bounds (a no-op on the data layer's values);
    InvalidParameterError on a NaN or infinite value or bound."""
    values = np.sort(np.asarray(query.sorted_values_d, dtype=float))
    lower, upper = query.bounds  # type: ignore[misc]
    if not (np.all(np.isfinite(values)) and math.isfinite(lower) and math.isfinite(upper)):
        raise InvalidParameterError("the column or its bounds contain NaN or infinity; clean the data first")
    return np.clip(values, lower, upper)


def exact_sum(values: np.ndarray) -> Fraction:
    """The exact sum of floats (integer arithmetic over their common power-of-two denominator)."""
    ratios = [v.as_integer_ratio() for v in values.tolist()]
    denominator = max((d for _, d in ratios), default=1)  # every d is a power of two
    return Fraction(sum(n * (denominator // d) for n, d in ratios), denominator)


def exact_statistic(query: NumericInput, values: np.ndarray) -> Fraction:
    """f(x) exactly from the clipped sorted column ``values``: the order statistic of rank
    r(n, q), or the mean of x_(m+1), ..., x_(n-m) in rationals (conventions of
    :mod:`dpexplorer.core.sensitivity`; empty column: lower, or the midpoint for the trimmed mean)."""
    lower, upper = (Fraction(b) for b in query.bounds)  # type: ignore[union-attr]
    n = values.size
    if query.statistic == "trimmed_mean":
        m = trim_count(n, query.trim_fraction)
        return exact_sum(values[m : n - m]) / (n - 2 * m) if n else (lower + upper) / 2
    q = 0.5 if query.statistic == "median" else query.quantile
    return Fraction(float(values[quantile_rank(n, q) - 1])) if n else lower


def _noise_law(mechanism: Mechanism, params: Mapping[str, Any]) -> tuple[NoiseLaw, str]:
    if mechanism.name == "smooth_lln":
        sigma_ = float(params["sigma"])
        return laplace_log_normal_law(sigma_), f"Laplace-log-normal (sigma = {sigma_})"
    dof = float(mechanism.dof(params))  # type: ignore[attr-defined]
    if not dof.is_integer():
        raise InvalidParameterError(f"the exact release needs whole degrees of freedom, got {dof}")
    return student_t_law(int(dof)), "Cauchy" if dof == 1 else f"Student's t ({int(dof)} degrees of freedom)"


def _upper(expression: Callable[[MPIntervalContext], Interval]) -> float:
    """The smallest float above a rigorous enclosure of ``expression``."""
    bounds = fraction_bounds(expression(context(CLAIM_PRECISION)))
    assert bounds is not None
    return float_up(bounds[1])


@dataclass(frozen=True)
class _Claim:
    guarantee: Guarantee
    epsilon: float
    delta: float
    rho: float | None
    approx: tuple[float, float] | None


def _smooth_claim(mechanism: Mechanism, params: Mapping[str, Any], query: NumericInput) -> _Claim:
    """The mechanism's guarantee, raised where needed to a rigorous upper bound of its formula:
    epsilon = (d+1) t + s (d+1) / (2 sqrt d) (Student's t), or rho = eps^2 / 2 with
    eps = t / sigma + e^(3 sigma^2 / 2) s and (rho + 2 sqrt(rho ln(1/delta)), delta)
    (Laplace-log-normal; seed 003, Proposition 3; Bun & Steinke 2016, Proposition 1.3)."""
    t, s = mechanism.smoothing(params)  # type: ignore[attr-defined]
    claimed = mechanism.guarantee(params, query)
    if isinstance(claimed, ZCDP):
        sig, delta = float(params["sigma"]), float(params["delta"])

        def rho_of(c: MPIntervalContext) -> Interval:
            return (c.mpf(t) / c.mpf(sig) + c.exp(c.mpf(1.5) * c.mpf(sig) ** 2) * c.mpf(s)) ** 2 / 2

        rho = max(claimed.rho, _upper(rho_of))
        epsilon = _upper(lambda c: c.mpf(rho) + 2 * c.sqrt(c.mpf(rho) * c.log(1 / c.mpf(delta))))
        return _Claim(ZCDP(rho), epsilon, delta, rho, (epsilon, delta))
    assert isinstance(claimed, PureDP)
    d = float(mechanism.dof(params))  # type: ignore[attr-defined]
    epsilon = max(
        claimed.epsilon, _upper(lambda c: (d + 1) * c.mpf(t) + c.mpf(s) * (d + 1) / (2 * c.sqrt(c.mpf(d))))
    )
    return _Claim(PureDP(epsilon), epsilon, 0.0, None, None)


def smooth_grid_exponent(lower: float, upper: float) -> int:
    """k of the public grid 2^k (module docstring)."""
    if not upper > lower:
        raise InvalidParameterError(f"the bounds [{lower}, {upper}] must have positive width; widen them")
    return floor_log2(Fraction(upper) - Fraction(lower)) - SMOOTH_GRID_BITS


def smooth_release(
    mechanism: Mechanism, params: Mapping[str, Any], query: NumericInput, ci_level: float
) -> ExactRelease:
    """Exact smooth-sensitivity release for smooth_cauchy, smooth_student_t and smooth_lln
    (module docstring). ``ci_level`` is unused: no interval is published."""
    query = check_data_query(query, mechanism.label)
    lower, upper = query.bounds  # type: ignore[misc]
    values = _clipped_column(query)
    k = smooth_grid_exponent(lower, upper)
    centre = exact_statistic(query, values)
    t, s = mechanism.smoothing(params)  # type: ignore[attr-defined]
    bound = smooth_upper_bound(
        values, lower, upper, t, query.statistic,
        relation=query.relation, quantile=query.quantile, trim_fraction=query.trim_fraction,
    )  # fmt: skip
    spacing = Fraction(2) ** k
    shifted = centre / spacing + Fraction(1, 2)
    whole = math.floor(shifted)
    ratio = bound / Fraction(s) / spacing  # the noise scale in grid steps
    law, law_name = _noise_law(mechanism, params)
    offset_ratio = enclosures([shifted - whole, ratio])

    def one(bits: BitSource) -> float:
        return float((whole + rounded_cell(law, offset_ratio, bits)) * spacing)

    claim = _smooth_claim(mechanism, params, query)
    return ExactRelease(
        guarantee=claim.guarantee,
        epsilon=claim.epsilon,
        delta=claim.delta,
        rho=claim.rho,
        approx=claim.approx,
        sampler=(
            f"{law_name} noise from lazy uniforms in rigorous interval arithmetic (Box-Muller "
            "normals), rounded exactly to the grid"
        ),
        labels=(query.statistic,),
        draw=lambda bits: [one(bits)],
        simulate=lambda bits, size: np.array([one(bits) for _ in range(size)]),
        provenance={
            "grid_spacing": float(spacing),
            "grid_exponent": k,
            "grid_rule": "2^(floor(log2(upper - lower)) - 30), fixed by the public bounds",
            "noise": law_name,
            "smoothing_beta": t,
            "noise_divisor": s,
            "smooth_sensitivity": "exact beta-smooth upper bound (dpexplorer.release.smooth_scale)",
            "noise_scale": "not published: S(x)/s depends on the data",
            "confidence_interval": "none: its width would reveal the data-dependent noise scale",
        },
    )


# ---------------------------------------------------------------- report-noisy-max, Laplace noise
def laplace_argmax(centres: Enclosures, count: int, bits: BitSource) -> int:
    """argmax_r c_r + Lap(1)_r over the ``count`` rationals that ``centres`` encloses, exactly
    (every uniform is refined until one noisy score's enclosure lies above all others; a second
    round is needed with probability about count^2 2^-32)."""
    signs = [bits.randbelow(2) == 1 for _ in range(count)]
    uniforms = [LazyUniform(bits) for _ in range(count)]

    def decide(ctx: MPIntervalContext) -> int | None:
        noisy = [
            fraction_bounds(c + _laplace(ctx, negative, u))
            for c, negative, u in zip(centres(ctx), signs, uniforms, strict=True)
        ]
        if any(b is None for b in noisy):
            return None
        lows = [b[0] for b in noisy]  # type: ignore[index]
        leader = max(range(len(lows)), key=lows.__getitem__)
        rivals = (b[1] for i, b in enumerate(noisy) if i != leader)  # type: ignore[index]
        return leader if all(high < lows[leader] for high in rivals) else None

    return refine_until(decide, uniforms)


def noisy_max_laplace_release(
    mechanism: Mechanism, params: Mapping[str, Any], query: SelectionInput, ci_level: float
) -> ExactRelease:
    """Exact report-noisy-max with Laplace noise of scale b = c Delta_u / epsilon; PureDP(epsilon)
    (Dwork & Roth 2014, Claim 3.9; module docstring)."""
    epsilon = float(params["epsilon"])
    monotone = uses_monotone_bound(params, query)
    scale = sigma(query, epsilon, monotone)
    centres = enclosures([u / scale for u in checked_scores(query)])
    claimed = mechanism.guarantee(params, query)
    assert isinstance(claimed, PureDP) and claimed.epsilon == epsilon
    return ExactRelease(
        guarantee=claimed,
        epsilon=epsilon,
        delta=0.0,
        rho=None,
        sampler="report-noisy-max, Laplace noise from lazy uniforms in rigorous interval arithmetic",
        labels=("selected",),
        draw=lambda bits: [query.candidates[laplace_argmax(centres, len(query.candidates), bits)]],
        provenance={
            "candidates": list(query.candidates),
            "monotone_bound_used": monotone,
            "noise_scale": float(scale),
        },
    )
