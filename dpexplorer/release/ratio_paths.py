"""The exact release path of the noisy-sum-over-noisy-count mean
(:mod:`dpexplorer.core.mechanisms.noisy_mean`).

One mean, or one mean per group (d coordinates); Delta_S and Delta_n are the l1 sensitivities of
the vectors of centred sums and of counts (the query's ``moment_sensitivities``: h and 1 for one
mean under add/remove, h = (upper - lower) / 2).

Counts private (add/remove; every group-by):

* the centred sums sum(x - c) go on the grid 2^k of :func:`.exact.grid_exponent` for noise
  b1 = Delta_S / eps1 and sensitivity Delta_S, with l1 sensitivity on the grid
  floor(Delta_S / 2^k) + m, m = min(d, max(1, Delta_n)) the groups one neighbour can change:
  one step per changed group for the rounding to the grid. The sums are the data layer's exact
  lattice sums (dpexplorer.data.engine.base, exact requests: each row's part in [-h, h]
  exactly, the same sum for an unchanged group on D and D' whatever the engine's order). Given
  float sums instead (an input built for exploration), every group's float rounding may move
  it one more step: floor(Delta_S / 2^k) + m + d, assuming the float error is below half a
  step (refused with private keys, whose number d is private); discrete Laplace of scale
  t1/s1 >= Delta_g / eps1 grid steps on each (CKS 2020, Algorithm 2);
* the counts are integers of l1 sensitivity Delta_n (a whole number); discrete Laplace of scale
  t2/s2 >= Delta_n / eps2 on each;
* charged PureDP(Delta_g s1 / t1 + Delta_n s2 / t2) <= eps1 + eps2 = epsilon, rounded up (pure
  DP of the discrete Laplace mechanism, CKS 2020 Section 2.1, and basic composition).

Everything above, the grid and both scales, comes from the declared bounds, epsilon and share:
no public number depends on n. The released values are the mean c + S~ / max(n~, 1) clamped to
[lower, upper], the noisy count n~ and the noisy centred sum S~. Their confidence intervals are
computed from (S~, n~) and the public noise laws only (post-processing), so they are published
with the DP outputs (``dp_outputs["confidence_intervals"]``), not as a fixed-width interval
(whose width would have to be decided before the draw, and so from n): with probability at
least 1 - beta / 2 each, |Z1| <= q1 and |Z2| <= q2 (discrete Laplace quantiles at level
1 - beta / 2), so with probability at least 1 - beta (union bound) the clipped mean lies in the
range of c + s / m over s in S~ +- (q1 + 1/2 step), m in n~ +- q2 (when n~ - q2 >= 1; else the
interval is [lower, upper]), intersected with [lower, upper].

One mean under replace (n public, as everywhere under replace; Delta_n = 0): only the centred
sum is measured, sensitivity 2h, and the mean is c + S~ / n, clamped; the interval is
c + (S~ +- (q + 1/2 step)) / n."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms.base import CentredMoments, Mechanism, NumericInput
from dpexplorer.core.mechanisms.noisy_mean import split
from dpexplorer.release import samplers
from dpexplorer.release.exact import ExactRelease, Grid, Value, discrete_scale, laplace_ci_steps, make_grid
from dpexplorer.release.numeric_paths import LAPLACE_SAMPLER
from dpexplorer.release.rational import float_up
from dpexplorer.release.samplers import BitSource


def _labels(query: NumericInput, counts_public: bool) -> tuple[str, ...]:
    parts = (
        ("mean", "centred sum (noisy)") if counts_public else ("mean", "count (noisy)", "centred sum (noisy)")
    )
    if len(query.moments or ()) == 1 and query.partition is None:
        return parts
    groups = (
        query.labels
        if len(query.labels) == len(query.moments or ())
        else tuple(map(str, range(len(query.moments or ()))))
    )
    return tuple(f"{g}: {p}" for g in groups for p in parts)


def _sum_grid(
    sums: list[Fraction], noise: Fraction, sensitivity: Fraction, touched: int, exact: bool
) -> Grid:
    """The sums' grid; l1 sensitivity on it floor(Delta / 2^k) + m for exact sums, + m + d for
    float sums, m the number of groups one neighbour can change (module docstring)."""
    grid = make_grid(sums, noise, sensitivity, integral=False)
    scaled = sensitivity / grid.spacing
    slack = touched if exact else touched + len(sums)
    return Grid(grid.k, scaled.numerator // scaled.denominator + slack, grid.centres)


def _sums(moments: tuple[CentredMoments, ...], which: int) -> tuple[list[Fraction], bool]:
    """The centred sums (``which`` = 0) or centred squares (1) as rationals: the exact lattice
    sums where the data layer gave them (a release), else the floats; and whether exact."""
    exact = [None if m.exact_sums is None else m.exact_sums[which] for m in moments]
    if all(e is not None for e in exact):  # (the squares may be absent where the sums are not)
        return [e for e in exact if e is not None], True
    return [Fraction((m.centred_sum, m.centred_squares)[which]) for m in moments], False


def _clamp(value: float, lower: float, upper: float) -> float:
    return min(max(value, lower), upper)


def _ratio_interval(
    s: float, n: float, half_s: float, half_n: float, centre: float, lower: float, upper: float
) -> tuple[float, float]:
    """Range of centre + s' / m over s' in s +- half_s, m in n +- half_n (m >= 1), clamped."""
    if n - half_n < 1:
        return lower, upper
    corners = [centre + a / b for a in (s - half_s, s + half_s) for b in (n - half_n, n + half_n)]
    return _clamp(min(corners), lower, upper), _clamp(max(corners), lower, upper)


@dataclass(frozen=True)
class _Plan:
    """Everything a draw needs, fixed before it from public facts (and the true answers)."""

    grid: Grid
    t1: int
    s1: int
    t2: int
    s2: int
    counts: tuple[int, ...]
    public_n: int | None
    centre: float
    lower: float
    upper: float
    half_s: float
    half_n: float

    def draw(self, bits: BitSource) -> list[Value]:
        d = len(self.counts)
        spacing = float(self.grid.spacing)
        z1 = samplers.discrete_laplace_array(self.t1, self.s1, d, bits)
        totals = [(c + int(z)) * spacing for c, z in zip(self.grid.centres, z1, strict=True)]
        if self.public_n is not None:
            return [_clamp(self.centre + totals[0] / self.public_n, self.lower, self.upper), totals[0]]
        z2 = samplers.discrete_laplace_array(self.t2, self.s2, d, bits)
        out: list[Value] = []
        for total, count, z in zip(totals, self.counts, z2, strict=True):
            noisy_n = count + int(z)
            out += [
                _clamp(self.centre + total / max(noisy_n, 1), self.lower, self.upper),
                float(noisy_n),
                total,
            ]
        return out

    def intervals(self, values: list[Value]) -> tuple[tuple[float, float], ...]:
        if self.public_n is not None:
            total, n = float(values[1]), self.public_n
            low = _clamp(self.centre + (total - self.half_s) / n, self.lower, self.upper)
            high = _clamp(self.centre + (total + self.half_s) / n, self.lower, self.upper)
            return (low, high), (total - self.half_s, total + self.half_s)
        out: list[tuple[float, float]] = []
        for i in range(0, len(values), 3):
            noisy_n, total = float(values[i + 1]), float(values[i + 2])
            out += [
                _ratio_interval(
                    total, noisy_n, self.half_s, self.half_n, self.centre, self.lower, self.upper
                ),
                (noisy_n - self.half_n, noisy_n + self.half_n),
                (total - self.half_s, total + self.half_s),
            ]
        return tuple(out)

    def simulate(self, bits: BitSource, size: int) -> np.ndarray:
        """``size`` draws of the first coordinate's mean."""
        spacing = float(self.grid.spacing)
        total = (
            self.grid.centres[0] + samplers.discrete_laplace_array(self.t1, self.s1, size, bits)
        ) * spacing
        if self.public_n is not None:
            return np.clip(self.centre + total / self.public_n, self.lower, self.upper)
        noisy_n = self.counts[0] + samplers.discrete_laplace_array(self.t2, self.s2, size, bits)
        return np.clip(self.centre + total / np.maximum(noisy_n, 1), self.lower, self.upper)


def noisy_mean_release(
    mechanism: Mechanism, params: Mapping[str, Any], query: NumericInput, ci_level: float
) -> ExactRelease:
    """Discrete Laplace on the centred sums (and on the counts unless public), then the clamped
    ratios; charged PureDP(<= epsilon) (module docstring)."""
    if query.moments is None or query.bounds is None or query.moment_sensitivities is None:
        raise NotApplicableError("a noisy sum over a noisy count needs a mean of a clipped column")
    lower, upper = query.bounds
    sum_l1, count_l1 = (Fraction(x) for x in query.moment_sensitivities)
    counts_public = count_l1 == 0
    epsilon_claimed = Fraction(float(params["epsilon"]))
    eps1 = Fraction(split(float(params["epsilon"]), float(params["sum_share"]), counts_public)[0])
    eps2 = epsilon_claimed - eps1  # exact, so eps1 + eps2 is the claimed epsilon
    # groups one neighbour can change: at most one per unit of count sensitivity (each changed
    # group's count moves by at least one, or it is the one group of a within-group replace)
    # (with private keys the number of groups is private: the bound alone, a public fact)
    touched = max(1, math.ceil(count_l1))
    if query.partition is None:
        touched = min(len(query.moments), touched)
    sums, exact = _sums(query.moments, 0)
    if not exact and query.partition is not None:  # + d would publish the private number of keys
        raise NotApplicableError("a mean by privately selected keys needs the data layer's exact sums")
    grid = _sum_grid(sums, sum_l1 / eps1, sum_l1, touched, exact)
    t1, s1 = discrete_scale(grid.sensitivity / eps1)
    charged = Fraction(grid.sensitivity * s1, t1)
    beta_each = (1 - ci_level) / (1 if counts_public else 2)
    half_s = (laplace_ci_steps(t1, s1, 1 - beta_each) + 0.5) * float(grid.spacing)
    t2 = s2 = 1
    half_n = 0.0
    if not counts_public:
        if count_l1.denominator != 1:
            raise NotApplicableError("the counts' sensitivity must be a whole number")
        t2, s2 = discrete_scale(count_l1 / eps2)
        charged += count_l1 * Fraction(s2, t2)
        half_n = float(laplace_ci_steps(t2, s2, 1 - beta_each))
    assert charged <= epsilon_claimed  # each discrete scale is rounded up (discrete_scale)
    plan = _Plan(
        grid,
        t1,
        s1,
        t2,
        s2,
        tuple(m.count for m in query.moments),
        query.n if counts_public else None,
        float((Fraction(lower) + Fraction(upper)) / 2),
        float(lower),
        float(upper),
        half_s,
        half_n,
    )
    provenance: dict[str, Any] = {
        **grid.describe(),
        "centre": plan.centre,
        "sum_sensitivity_l1": float(sum_l1),
        "count_sensitivity_l1": float(count_l1),
        "epsilon_sum": float(eps1),
        "sum_discrete_scale_grid_units": f"{t1}/{s1}",
        "sum_noise_scale": float(Fraction(t1, s1) * grid.spacing),
        "sum_ci_halfwidth": half_s,
    }
    if counts_public:
        provenance["public_n"] = query.n  # public under replace
        provenance["interval_method"] = "the sum's discrete Laplace quantile over the public n"
    else:
        provenance.update(
            {
                "epsilon_count": float(eps2),
                "count_discrete_scale": f"{t2}/{s2}",
                "count_ci_halfwidth": half_n,
                "interval_method": "union bound over the sum's and the count's discrete Laplace "
                "quantiles, from the released values only",
            }
        )
    epsilon = float_up(charged)
    facts: dict[str, Any] = {}

    def draw(bits: BitSource) -> list[Value]:
        """The released values; their intervals, computed from them alone, go to ``dp_outputs``."""
        values = plan.draw(bits)
        facts["confidence_intervals"] = [list(ci) for ci in plan.intervals(values)]
        facts["confidence_level"] = ci_level
        return values

    return ExactRelease.pure(
        epsilon,
        sampler=LAPLACE_SAMPLER,
        labels=_labels(query, counts_public),
        draw=draw,
        provenance=provenance,
        simulate=plan.simulate,
        dp_outputs=facts,
    )


# ---------------------------------------------------------------- variance / standard deviation
def _variance_range(
    n: float, s: float, q: float, halves: tuple[float, float, float], half: float
) -> tuple[float, float]:
    """The range of q'/m + h^2/2 - (s'/m)^2 over m in n +- a, s' in s +- b, q' in q +- c (m >= 1),
    clamped to [0, h^2]: exact over the box. With u = 1/m the expression is c0 + q' u - s'^2 u^2,
    concave in u: its largest value takes the largest q', the smallest s'^2 and u at the vertex
    q' / (2 s'^2) clipped to [1/m_hi, 1/m_lo]; its smallest value the smallest q', the largest
    s'^2 and u at an end."""
    a, b, c = halves
    if n - a < 1:
        return 0.0, half * half
    u_lo, u_hi = 1 / (n + a), 1 / (n - a)
    s2_min = 0.0 if abs(s) <= b else min(abs(s - b), abs(s + b)) ** 2
    s2_max = max(abs(s - b), abs(s + b)) ** 2
    q_hi, q_lo = q + c, q - c

    def f(qq: float, s2: float, u: float) -> float:
        return half * half / 2 + qq * u - s2 * u * u

    vertex = q_hi / (2 * s2_min) if s2_min > 0 else (u_hi if q_hi >= 0 else u_lo)
    high = max(f(q_hi, s2_min, u) for u in (u_lo, u_hi, min(max(vertex, u_lo), u_hi)))
    low = min(f(q_lo, s2_max, u) for u in (u_lo, u_hi))
    return _clamp(low, 0.0, half * half), _clamp(high, 0.0, half * half)


def noisy_variance_release(
    mechanism: Mechanism, params: Mapping[str, Any], query: NumericInput, ci_level: float
) -> ExactRelease:
    """The exact path of :mod:`~dpexplorer.core.mechanisms.noisy_variance`: discrete Laplace on
    the centred sum and the centred squares, each on its own 2^k grid (l1 sensitivity on the grid
    floor(Delta / 2^k) + 2, as for the mean), and on the count (integer, sensitivity 1) unless n is
    public (replace); the statistic from the released values, clamped to [0, h^2] (or its root).
    Charged PureDP(sum of the parts' Delta_g s / t) <= epsilon (CKS 2020; basic composition).
    Every public number comes from the bounds and epsilon; the intervals, from the released values
    and the noise laws (union bound over the parts, exact range over the box:
    :func:`_variance_range`), go to ``dp_outputs``."""
    from dpexplorer.core.mechanisms.noisy_variance import part_sensitivities

    if query.moments is None or query.bounds is None or len(query.moments) != 1:
        raise NotApplicableError("a variance needs the moments of one clipped column")
    lower, upper = query.bounds
    public = query.relation == "replace"
    half = (upper - lower) / 2
    (moments,) = query.moments
    epsilon = Fraction(float(params["epsilon"]))
    eps_part = epsilon / (2 if public else 3)  # the equal split (noisy_variance.part_epsilons)
    _, d_sum, d_squares = (Fraction(x) for x in part_sensitivities(lower, upper, public))
    beta = (1 - ci_level) / (2 if public else 3)
    parts, charged = [], Fraction(0)
    for which, sensitivity in ((0, d_sum), (1, d_squares)):
        values, exact = _sums((moments,), which)
        grid = _sum_grid(values, sensitivity / eps_part, sensitivity, 1, exact)
        t, s = discrete_scale(grid.sensitivity / eps_part)
        charged += Fraction(grid.sensitivity * s, t)
        parts.append((grid, t, s, (laplace_ci_steps(t, s, 1 - beta) + 0.5) * float(grid.spacing)))
    tn = sn = 1
    half_n = 0.0
    if not public:
        tn, sn = discrete_scale(1 / eps_part)
        charged += Fraction(sn, tn)
        half_n = float(laplace_ci_steps(tn, sn, 1 - beta))
    assert charged <= epsilon  # each discrete scale is rounded up
    std = query.statistic == "std"
    facts: dict[str, Any] = {}

    def draw(bits: BitSource) -> list[Value]:
        (g1, t1, s1, h1), (g2, t2, s2, h2) = parts
        total = float((g1.centres[0] + int(samplers.discrete_laplace_array(t1, s1, 1, bits)[0])) * g1.spacing)
        squares = float(
            (g2.centres[0] + int(samplers.discrete_laplace_array(t2, s2, 1, bits)[0])) * g2.spacing
        )
        n = (
            float(query.n)
            if public
            else float(moments.count + int(samplers.discrete_laplace_array(tn, sn, 1, bits)[0]))
        )
        var = float(np.clip(squares / max(n, 1) + half * half / 2 - (total / max(n, 1)) ** 2, 0, half * half))
        low, high = _variance_range(n, total, squares, (0.0 if public else half_n, h1, h2), half)
        if std:
            var, low, high = math.sqrt(var), math.sqrt(low), math.sqrt(high)
        facts["confidence_intervals"] = [
            [low, high],
            [n - half_n, n + half_n],
            [total - h1, total + h1],
            [squares - h2, squares + h2],
        ]
        facts["confidence_level"] = ci_level
        return [var, n, total, squares]

    names = (
        "standard deviation" if std else "variance",
        "count" + ("" if public else " (noisy)"),
        "centred sum (noisy)",
        "centred squares (noisy)",
    )
    provenance: dict[str, Any] = {
        "centre": (lower + upper) / 2,
        "parts": "count, sum of y = x - centre, sum of y^2 - h^2/2 (h = (upper - lower)/2)",
        "epsilon_split": "equal (halves when n is public)",
        "sum_grid": parts[0][0].describe(),
        "squares_grid": parts[1][0].describe(),
        "sum_discrete_scale_grid_units": f"{parts[0][1]}/{parts[0][2]}",
        "squares_discrete_scale_grid_units": f"{parts[1][1]}/{parts[1][2]}",
        "count_discrete_scale": None if public else f"{tn}/{sn}",
        "public_n": query.n if public else None,
        "interval_method": "union bound over the parts' discrete Laplace quantiles, exact range of the "
        "statistic over the box, from the released values only",
    }
    epsilon_charged = float_up(charged)
    return ExactRelease.pure(
        epsilon_charged,
        sampler=LAPLACE_SAMPLER,
        labels=names,
        draw=draw,
        provenance=provenance,
        dp_outputs=facts,
    )
