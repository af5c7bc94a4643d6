"""Accuracy and exact comparisons of noisy releases, shared by the mechanism modules.

A :class:`NoisyRelease` is the output law of a noise-adding mechanism on one dataset: with
probability ``1 - bottom`` it releases ``loc + scale * Z`` with Z drawn from a fixed standard
noise (a frozen ``scipy.stats`` distribution), otherwise "⊥" (no answer). From a pair of them
(M(D), M(D')) this module computes what the views show: the output densities on a grid, the
privacy-loss function, the exact hockey-stick divergence (the delta at each epsilon) and the
accuracy report (error tail, confidence interval, MSE, error curves).

The curve helpers (:func:`curve_over`, :func:`error_vs_epsilon`) do not assume noise addition
and are meant for every mechanism family.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    Curve,
    Mechanism,
    NumericInput,
    NumericOutput,
    PointMass,
    QueryInput,
)

BOTTOM = "⊥"
GRID_TAIL_MASS = 1e-10
"""The views' grids leave out at most this mass on each side of each distribution."""

HOCKEY_STICK_TAIL = 1e-15
"""The grid of :func:`hockey_stick_one_way` leaves out at most this mass per side."""

EPSILON_SWEEP = np.geomspace(0.01, 10.0, 60)
"""The epsilons of the error-against-epsilon curves."""

AVERAGES = frozenset({"mean", "trimmed_mean", "proportion", "fraction"})
"""Statistics whose global sensitivity is proportional to 1/n."""


_STANDARD_LAWS = {"STANDARD_LAPLACE": "laplace", "STANDARD_NORMAL": "norm"}
"""``STANDARD_LAPLACE`` and ``STANDARD_NORMAL``: shared frozen scipy.stats laws (freezing one
costs ~0.8 ms, and :func:`standard_span` caches per law object), made on first use (module
``__getattr__``): scipy.stats costs ~0.5-1 s to import, which a release or the CLI's start need
not pay."""


def __getattr__(name: str) -> Any:
    law = _STANDARD_LAWS.get(name)
    if law is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from scipy import stats

    value = getattr(stats, law)()
    globals()[name] = value
    return value


@functools.lru_cache(maxsize=64)
def student_t(dof: float) -> Any:
    """The standard Student's t law with ``dof`` degrees of freedom (one frozen object per dof)."""
    from scipy import stats

    return stats.t(dof)


@functools.lru_cache(maxsize=512)
def standard_span(noise: Any, tail: float) -> tuple[float, float]:
    """(ppf(tail), isf(tail)) of a standard noise law, cached per law object and tail (a root
    search for the Laplace-log-normal; the grids ask for the same tails at every redraw)."""
    return float(noise.ppf(tail)), float(noise.isf(tail))


@dataclass(frozen=True)
class NoisyRelease:
    """The output law of ``loc + scale * Z`` (probability ``1 - bottom``) or "⊥" (``bottom``).

    ``noise`` is a frozen continuous scipy.stats distribution (or any object with ``pdf``,
    ``logpdf``, ``cdf``, ``sf``, ``ppf``, ``isf``, ``var`` and ``rvs(size=, random_state=)``)."""

    noise: Any
    loc: float
    scale: float
    bottom: float = 0.0

    def pdf(self, x: np.ndarray) -> np.ndarray:
        """Density of the numeric part (integrates to ``1 - bottom``)."""
        return (1.0 - self.bottom) * self.noise.pdf((np.asarray(x) - self.loc) / self.scale) / self.scale

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return (
                np.log1p(-self.bottom)
                + self.noise.logpdf((np.asarray(x) - self.loc) / self.scale)
                - np.log(self.scale)
            )

    def mass(self, low: float, high: float) -> float:
        """P[low < output <= high] (numeric part), from the CDF (survival function in the right
        tail, so small tail masses keep their relative precision)."""
        z_low, z_high = (low - self.loc) / self.scale, (high - self.loc) / self.scale
        if z_low >= 0:
            inside = self.noise.sf(z_low) - self.noise.sf(z_high)
        else:
            inside = self.noise.cdf(z_high) - self.noise.cdf(z_low)
        return float((1.0 - self.bottom) * inside)

    def quantile_span(self, tail: float) -> tuple[float, float]:
        """An interval holding all but ``tail`` of the numeric part's mass on each side."""
        low, high = standard_span(self.noise, tail)
        return self.loc + self.scale * low, self.loc + self.scale * high

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` independent outputs, NaN for "⊥" (vectorised)."""
        values = self.loc + self.scale * np.asarray(self.noise.rvs(size=size, random_state=rng), float)
        if self.bottom > 0:
            values[rng.random(size) < self.bottom] = np.nan
        return values


def numeric_query(query: QueryInput) -> NumericInput:
    """``query`` itself if it is a :class:`NumericInput`, else NotApplicableError."""
    if not isinstance(query, NumericInput):
        raise NotApplicableError(
            f"this mechanism releases a number; it cannot answer a {type(query).__name__} query"
        )
    return query


# ---------------------------------------------------------------- grids and output views
def output_grid(
    releases: Sequence[NoisyRelease], points: int = 2001, tail: float = GRID_TAIL_MASS
) -> np.ndarray:
    """A sorted grid for plotting and root bracketing: uniform over the central 99.8% of every
    release's mass, geometric outward to the ``tail`` quantiles (so it holds all but ``tail`` of
    each distribution's mass on each side, even for heavy tails such as Cauchy)."""
    centre_lo = min(r.quantile_span(1e-3)[0] for r in releases)
    centre_hi = max(r.quantile_span(1e-3)[1] for r in releases)
    far_lo = min(r.quantile_span(tail)[0] for r in releases)
    far_hi = max(r.quantile_span(tail)[1] for r in releases)
    width = max(centre_hi - centre_lo, min(r.scale for r in releases))
    tail_points = points // 8
    left = centre_lo - np.geomspace(width / points, max(centre_lo - far_lo, width / points), tail_points)
    right = centre_hi + np.geomspace(width / points, max(far_hi - centre_hi, width / points), tail_points)
    middle = np.linspace(centre_lo, centre_hi, points - 2 * tail_points)
    locations = [r.loc for r in releases]
    return np.unique(np.concatenate([left, middle, right, locations]))


def privacy_loss(p_log: np.ndarray, q_log: np.ndarray) -> np.ndarray:
    """ln p/q from log-densities: +inf where only q is 0, -inf where only p is 0, NaN where both."""
    with np.errstate(invalid="ignore"):
        return np.asarray(p_log) - np.asarray(q_log)


def bottom_point_mass(p: NoisyRelease, q: NoisyRelease) -> tuple[PointMass, ...]:
    """The "⊥" point mass of the pair, if either side has one."""
    if p.bottom == 0 and q.bottom == 0:
        return ()
    return (PointMass(BOTTOM, p.bottom, q.bottom),)


RESOLUTION = 1e-5
"""Below this noise scale relative to the released value, the views plot in noise scales: a
plot ~1,000 px wide over ~20 noise scales then needs steps under 2e-7 of the value, which Qt
rasterises in single precision (each density curve took 1.9 ms to paint instead of 0.15 ms at
1e-6, and the ticks read 37.00001, 37.00002), and float64 itself collapses below ~1e-15."""


def resolvable(p: NoisyRelease, q: NoisyRelease) -> bool:
    """Whether a plot in the statistic's own units can resolve both laws (:data:`RESOLUTION`)."""
    size = max(1.0, abs(p.loc), abs(q.loc))
    return min(p.scale, q.scale) >= RESOLUTION * size


def standardized(p: NoisyRelease, q: NoisyRelease) -> tuple[NoisyRelease, NoisyRelease]:
    """The pair moved so that p is centred at 0 with scale 1 (the same affine map on both):
    divergences and privacy losses are unchanged, and tiny scales keep their precision."""
    return (
        NoisyRelease(p.noise, 0.0, 1.0, p.bottom),
        NoisyRelease(q.noise, (q.loc - p.loc) / p.scale, q.scale / p.scale, q.bottom),
    )


DISPLAY_POINTS = 1201
"""About this many points of each drawn output distribution: one per pixel of a plot ~1,000 px
wide. More only cost paint time while a slider moves (2,001 took twice as long to draw)."""


def _display_points(grid: np.ndarray, releases: Sequence[NoisyRelease]) -> np.ndarray:
    """Indices of the points of the hockey-stick ``grid`` that are drawn: those inside the span
    holding all but GRID_TAIL_MASS of each law on each side, every k-th so that about
    DISPLAY_POINTS remain, and each law's location (where a Laplace density has its kink)."""
    far_lo = min(r.quantile_span(GRID_TAIL_MASS)[0] for r in releases)
    far_hi = max(r.quantile_span(GRID_TAIL_MASS)[1] for r in releases)
    inside = np.flatnonzero((grid >= far_lo) & (grid <= far_hi))
    if inside.size == 0:
        return np.arange(grid.size)
    step = max(1, round(inside.size / DISPLAY_POINTS))
    locations = np.searchsorted(grid, [r.loc for r in releases])  # grid members (output_grid)
    locations = locations[(locations >= inside[0]) & (locations <= inside[-1])]
    return np.unique(np.concatenate([inside[::step], inside[-1:], locations]))


def numeric_output(p: NoisyRelease, q: NoisyRelease, *, coordinate: int = 0, note: str = "") -> NumericOutput:
    """Exact densities of M(D) (``p``) and M(D') (``q``), with the loss, on part of the grid
    that :func:`hockey_stick` uses for the same pair (:func:`_display_points`): the two share
    one evaluation of the densities (:func:`_log_densities_on_grid`), which matters when a
    density is a numerical integral (Laplace-log-normal).

    The grid is in output units, unless the noise is too small to plot around the value
    (scale below :data:`RESOLUTION` of it, e.g. the smooth sensitivity of a tied median):
    then it is in units of M(D)'s noise scale from its centre, (o - p.loc) / p.scale (the
    :func:`standardized` pair: the privacy loss is unchanged), and the note says so. Tick labels
    then read in noise scales, not in 1e-37s, and stay put while epsilon moves the scale by
    orders of magnitude."""
    standard = standardized(p, q)
    z_all, log_p_all, log_q_all = _log_densities_on_grid(*standard)
    shown = _display_points(z_all, standard)
    z, log_p, log_q = z_all[shown], log_p_all[shown], log_q_all[shown]
    if resolvable(p, q):
        origin, unit, grid, log_unit = 0.0, 1.0, p.loc + p.scale * z, np.log(p.scale)
    else:
        origin, unit, grid, log_unit = p.loc, p.scale, z, 0.0
        note = (
            f"{note} The noise is far too small to see around the value: its scale, {unit:.3g}, is "
            f"below any printed digit of {origin:.6g}, so a release equals {origin:.6g} to print "
            f"precision. The x axis counts noise scales from M(D)'s centre: x = (output − "
            f"{origin:.6g}) ÷ {unit:.3g}."
        ).strip()
    return NumericOutput(
        grid=grid,
        density_d=np.exp(log_p - log_unit),  # densities per unit of the grid
        density_d_prime=np.exp(log_q - log_unit),
        privacy_loss=privacy_loss(log_p, log_q),
        point_masses=bottom_point_mass(p, q),
        coordinate=coordinate,
        note=note,
        origin=origin,
        unit=unit,
    )


# ---------------------------------------------------------------- hockey-stick divergence
def _excess_intervals(
    loss: Callable[[float], float], grid: np.ndarray, loss_grid: np.ndarray, epsilon: float
) -> list[tuple[float, float]]:
    """The maximal intervals where loss > epsilon, endpoints refined with brentq (to 1e-13
    relative); a run touching the grid's end extends to infinity."""
    above = loss_grid > epsilon
    if not above.any():
        return []
    edges = np.flatnonzero(np.diff(above.astype(np.int8)))
    crossings = [_crossing(loss, epsilon, grid[k], grid[k + 1]) for k in edges]
    bounds = ([-np.inf] if above[0] else []) + crossings + ([np.inf] if above[-1] else [])
    return list(zip(bounds[::2], bounds[1::2], strict=True))


def _crossing(loss: Callable[[float], float], epsilon: float, a: float, b: float) -> float:
    """Where loss - epsilon changes sign in [a, b]: brentq (to 1e-13 relative); where the loss
    is NaN inside the cell (both densities exactly 0, e.g. beyond a bounded support), bisection
    that counts NaN as "not above": the outputs it may move between the two sides have
    probability 0 under both laws, so delta is unchanged."""
    from scipy import optimize

    try:
        return float(optimize.brentq(lambda x: loss(x) - epsilon, a, b, xtol=1e-14, rtol=1e-13))
    except ValueError:
        pass
    above_at_a = loss(a) > epsilon
    for _ in range(200):
        middle = (a + b) / 2
        if middle in (a, b):
            break
        if (loss(middle) > epsilon) == above_at_a:
            a = middle
        else:
            b = middle
    return (a + b) / 2


def hockey_stick_one_way(
    p: NoisyRelease, q: NoisyRelease, epsilons: np.ndarray, grid: np.ndarray, loss_grid: np.ndarray
) -> np.ndarray:
    """delta_{P||Q}(eps) = sup_S P(S) - e^eps Q(S) = P(L > eps) - e^eps Q(L > eps) at each eps,
    with L = ln p/q, "⊥" included as an atom.

    Exact up to root finding and ``HOCKEY_STICK_TAIL``: the set {L > eps} is located by sign
    changes of L - eps on :func:`output_grid` (which leaves out at most 1e-15 of each law's mass
    per side; a run reaching a grid end is extended to infinity) and its masses come from the
    CDFs. A component of {L > eps} narrower than the grid spacing could be missed; for the
    location-scale pairs used here L is smooth with at most a few crossings. ``grid`` and
    ``loss_grid``: that grid and L on it (:func:`_loss_on_grid`; :func:`hockey_stick` shares
    them between the two directions)."""

    def loss(x: float) -> float:
        with np.errstate(invalid="ignore"):  # -inf - -inf where both laws vanish: see _crossing
            return float(p.logpdf(np.array(x)) - q.logpdf(np.array(x)))

    deltas = []
    for eps in np.atleast_1d(epsilons).astype(float):
        total = max(0.0, p.bottom - np.exp(eps) * q.bottom)
        for low, high in _excess_intervals(loss, grid, loss_grid, eps):
            total += p.mass(low, high) - np.exp(eps) * q.mass(low, high)
        deltas.append(min(max(total, 0.0), 1.0))
    return np.array(deltas)


def hockey_stick(p: NoisyRelease, q: NoisyRelease, epsilons: np.ndarray) -> np.ndarray:
    """The larger of the two directions, delta_{P||Q} and delta_{Q||P}, at each epsilon
    (computed on the :func:`standardized` pair: the divergence is invariant under the map)."""
    p, q = standardized(p, q)
    grid, loss_grid = _loss_on_grid(p, q)  # the grid is symmetric in p, q; L(q||p) = -L(p||q)
    forward = hockey_stick_one_way(p, q, epsilons, grid, loss_grid)
    return np.maximum(forward, hockey_stick_one_way(q, p, epsilons, grid, -loss_grid))


def _loss_on_grid(p: NoisyRelease, q: NoisyRelease) -> tuple[np.ndarray, np.ndarray]:
    """The hockey-stick grid of the pair and ln p/q on it."""
    grid, log_p, log_q = _log_densities_on_grid(p, q)
    return grid, privacy_loss(log_p, log_q)


HOCKEY_STICK_POINTS = 4001


@functools.lru_cache(maxsize=64)
def _own_grid(noise: Any) -> tuple[np.ndarray, np.ndarray]:
    """A standard law's own hockey-stick grid, half the points of a pair's (so a pair has as
    many in all), and ln density there. Cached per law, read-only: it does not depend on
    epsilon, only the other law's placement on it does."""
    standard = NoisyRelease(noise, 0.0, 1.0)
    grid = output_grid([standard], points=HOCKEY_STICK_POINTS // 2 + 1, tail=HOCKEY_STICK_TAIL)
    low, high = standard_span(noise, 1e-3)
    if abs(low + high) <= 1e-12 * high:  # a symmetric law: mirror the positive half exactly,
        half = grid[grid > 0]  # so a centred copy of it meets each |z| twice (log_mixture)
        grid = np.concatenate([-half[::-1], [0.0], half])
    log_density = np.asarray(noise.logpdf(grid), dtype=float)
    for array in (grid, log_density):
        array.flags.writeable = False
    return grid, log_density


@functools.lru_cache(maxsize=8)
def _log_densities_on_grid(p: NoisyRelease, q: NoisyRelease) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hockey-stick grid of a (standardized) pair and ln p, ln q on it. Cached, read-only:
    the neighbouring-datasets view asks for the drawn densities and for delta of the same pair
    one after the other (equal pairs compare equal when their noise laws do).

    When both share one noise law (location-scale copies of it), the grid is the union of each
    law's own grid (:func:`_own_grid`, placed at its location and scale): each side's density
    on its own points is the cached standard one, shifted by ln(1 - bottom) - ln scale (exact
    at loc + scale g up to the rounding of that point), so only the cross terms are evaluated:
    half the work for a density that is a numerical integral (Laplace-log-normal)."""
    if p.noise != q.noise:
        grid = output_grid([p, q], points=HOCKEY_STICK_POINTS, tail=HOCKEY_STICK_TAIL)
        log_p, log_q = p.logpdf(grid), q.logpdf(grid)
    else:
        own, log_own = _own_grid(p.noise)
        at_p, at_q = p.loc + p.scale * own, q.loc + q.scale * own
        with np.errstate(divide="ignore"):
            own_p = np.log1p(-p.bottom) + log_own - np.log(p.scale)
            own_q = np.log1p(-q.bottom) + log_own - np.log(q.scale)
        points = np.concatenate([at_p, at_q])
        log_p = np.concatenate([own_p, p.logpdf(at_q)])
        log_q = np.concatenate([q.logpdf(at_p), own_q])
        grid, first = np.unique(points, return_index=True)  # sorted; a shared point kept once
        log_p, log_q = log_p[first], log_q[first]
    for array in (grid, log_p, log_q):
        array.flags.writeable = False
    return grid, log_p, log_q


# ---------------------------------------------------------------- accuracy
def error_tail(release: NoisyRelease, truth: float, alphas: np.ndarray) -> np.ndarray:
    """Exact P(|output - truth| > alpha) at each alpha, counting "⊥" as an error (computed in
    units of the noise scale)."""
    u = np.asarray(alphas, dtype=float) / release.scale
    offset = (release.loc - truth) / release.scale
    inside = release.noise.cdf(u - offset) - release.noise.cdf(-u - offset)
    return np.clip(1.0 - (1.0 - release.bottom) * inside, 0.0, 1.0)


def ci_halfwidth(release: NoisyRelease, truth: float, level: float) -> float:
    """The smallest alpha with P(|output - truth| <= alpha) >= level (exact, by root finding in
    units of the noise scale, so tiny scales keep their precision); inf when "⊥" alone has
    probability above 1 - level."""
    if release.bottom >= 1.0 - level:
        return float("inf")
    offset = (release.loc - truth) / release.scale
    return _halfwidth_in_scale_units(release.noise, offset, release.bottom, level) * release.scale


@functools.lru_cache(maxsize=1024)
def _halfwidth_in_scale_units(noise: Any, offset: float, bottom: float, level: float) -> float:
    """:func:`ci_halfwidth` for scale 1 (cached: an error-against-epsilon sweep asks the same
    question of the same standard law at every epsilon)."""

    def excess(u: float) -> float:
        inside = noise.cdf(u - offset) - noise.cdf(-u - offset)
        return float(1.0 - (1.0 - bottom) * inside - (1.0 - level))

    from scipy import optimize

    upper = abs(offset) + float(noise.isf(min(1e-12, (1 - level) / 10)))
    return float(optimize.brentq(excess, 0.0, upper, xtol=1e-13))


def mean_squared_error(release: NoisyRelease, truth: float) -> float:
    """E[(output - truth)^2 | an answer is released] (exact; inf for noises without variance)."""
    variance = float(release.noise.var())
    if not np.isfinite(variance):
        return float("inf")
    return release.scale**2 * variance + (release.loc - truth) ** 2


def alpha_axis(release: NoisyRelease, truth: float, points: int = 200) -> np.ndarray:
    """Alphas from 0 to the noise's 1e-6 upper quantile plus any bias (computed in units of
    the scale)."""
    reach = float(release.noise.isf(1e-6)) + abs(release.loc - truth) / release.scale
    return np.linspace(0.0, reach, points) * release.scale


def curve_over(
    xs: np.ndarray,
    function: Callable[[float], float],
    *,
    x_label: str,
    y_label: str,
    name: str,
    kind: Literal["exact", "bound", "monte_carlo"] = "exact",
) -> Curve:
    """A :class:`Curve` of ``function`` evaluated at each x."""
    xs = np.asarray(xs, dtype=float)
    return Curve(xs, np.array([function(float(x)) for x in xs]), x_label, y_label, name, kind)


def error_vs_epsilon(halfwidth_at: Callable[[float], float], ci_level: float) -> Curve:
    """The CI half-width at ``ci_level`` against epsilon over :data:`EPSILON_SWEEP`."""
    return curve_over(
        EPSILON_SWEEP,
        halfwidth_at,
        x_label="ε",
        y_label=f"error bound at {ci_level:.0%} confidence",
        name="CI half-width",
    )


def release_accuracy(
    release: NoisyRelease,
    truth: float,
    ci_level: float,
    *,
    bound: Callable[[np.ndarray], np.ndarray] | None = None,
    bound_name: str = "",
    curves_vs_epsilon: tuple[Curve, ...] = (),
    curves_vs_n: tuple[Curve, ...] = (),
    notes: tuple[str, ...] = (),
) -> AccuracyReport:
    """The :class:`AccuracyReport` of a noisy release of ``truth``: exact error tail, CI, MSE;
    ``bound`` (alpha -> proven bound on the tail) shown beside the exact tail when given."""
    alphas = alpha_axis(release, truth)
    tail = Curve(alphas, error_tail(release, truth, alphas), "α", "P(|error| > α)", "exact")
    tail_bound = None
    if bound is not None:
        tail_bound = Curve(alphas, np.minimum(bound(alphas), 1.0), "α", "P(|error| > α)", bound_name, "bound")
    if release.bottom > 0:
        notes = (*notes, f"'{BOTTOM}' (no answer) counts as an error; the MSE is given an answer.")
    return AccuracyReport(
        error_tail=tail,
        error_tail_bound=tail_bound,
        ci_level=ci_level,
        ci_halfwidth=ci_halfwidth(release, truth, ci_level),
        mse=mean_squared_error(release, truth),
        error_vs_epsilon=curves_vs_epsilon,
        error_vs_n=curves_vs_n,
        notes=notes,
    )


def error_vs_n(n0: int, statistic: str, halfwidth: float, ci_level: float) -> Curve:
    """The CI half-width against n for noise calibrated to a global sensitivity, from its value
    ``halfwidth`` at the current n0. An average (``mean``, ``trimmed_mean``, ``proportion``)
    has sensitivity proportional to 1/n, so its error scales as n0/n; a count or sum has an
    n-free sensitivity, so the curve shows the error relative to n (error / n)."""
    n0 = max(int(n0), 1)
    ns = np.unique(np.geomspace(max(n0 / 100, 10), n0 * 10, 40).astype(int)).astype(float)
    if statistic in AVERAGES:
        return Curve(ns, halfwidth * n0 / ns, "n (people)", f"error bound at {ci_level:.0%}", "CI half-width")
    return Curve(
        ns, halfwidth / ns, "n (people)", f"error bound / n at {ci_level:.0%}", "relative CI half-width"
    )


# ---------------------------------------------------------------- the noise-adding mechanisms
class ReleasePair(NamedTuple):
    """M(D) and M(D') for the coordinate the views show, with a note on that choice."""

    d: NoisyRelease
    d_prime: NoisyRelease
    coordinate: int = 0
    note: str = ""


def shown_coordinate(query: NumericInput) -> tuple[int, str]:
    """The coordinate where D and D' differ most, and a note saying so for vector queries."""
    d, d_prime = np.atleast_1d(query.value_d), np.atleast_1d(query.value_d_prime)
    i = int(np.argmax(np.abs(d - d_prime)))
    if d.size == 1:
        return i, ""
    return i, (
        f"Coordinate {i} (of {d.size}), where D and D' differ most; the coordinates get "
        "independent noise and the privacy loss of the vector is the sum over coordinates."
    )


class ProfileMechanism(Mechanism):
    """A mechanism that computes its privacy profile for many epsilons at once: one delta is
    the profile read at a single epsilon."""

    @abstractmethod
    def privacy_profile(
        self, params: Mapping[str, Any], query: QueryInput, epsilons: np.ndarray
    ) -> np.ndarray:
        """delta(epsilon) at each epsilon (exact, or an upper bound where the subclass says so)."""

    def delta_at(self, params: Mapping[str, Any], query: QueryInput, epsilon: float) -> float:
        return float(self.privacy_profile(params, query, np.array([float(epsilon)]))[0])


class NoisyReleaseMechanism(ProfileMechanism):
    """Base of the mechanisms whose output on each dataset is a :class:`NoisyRelease`: the views,
    the exact delta (generic :func:`hockey_stick`; subclasses with a closed form override
    :meth:`privacy_profile`) and the simulation all follow from :meth:`releases`. They release
    a number from a numeric query."""

    @abstractmethod
    def releases(self, params: Mapping[str, Any], query: QueryInput) -> ReleasePair:
        """The output laws on D and D' (for the coordinate shown)."""

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> NumericOutput:
        pair = self.releases(params, query)
        return numeric_output(pair.d, pair.d_prime, coordinate=pair.coordinate, note=pair.note)

    def privacy_profile(
        self, params: Mapping[str, Any], query: QueryInput, epsilons: np.ndarray
    ) -> np.ndarray:
        """Exact delta(eps) on this pair, both directions (:func:`hockey_stick`)."""
        pair = self.releases(params, query)
        return hockey_stick(pair.d, pair.d_prime, np.asarray(epsilons, dtype=float))

    def simulate(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        pair = self.releases(params, query)
        return (pair.d if on == "D" else pair.d_prime).sample(rng, size)


# ---------------------------------------------------------------- finite output spaces
def discrete_hockey_stick(pmf_p: np.ndarray, pmf_q: np.ndarray, epsilons: np.ndarray) -> np.ndarray:
    """Exact delta(eps) = max over the two directions of sum_o max(0, p(o) - e^eps q(o)) for two
    pmfs on the same finite outcomes (e.g. candidates plus "⊥")."""
    p, q = np.asarray(pmf_p, dtype=float), np.asarray(pmf_q, dtype=float)
    factors = np.exp(np.atleast_1d(np.asarray(epsilons, dtype=float)))[:, None]
    forward = np.maximum(0.0, p[None, :] - factors * q[None, :]).sum(axis=1)
    backward = np.maximum(0.0, q[None, :] - factors * p[None, :]).sum(axis=1)
    return np.minimum(np.maximum(forward, backward), 1.0)


def pmf_privacy_loss(pmf_p: np.ndarray, pmf_q: np.ndarray) -> np.ndarray:
    """ln p(o)/q(o) per outcome (±inf where one side is 0, NaN where both are)."""
    with np.errstate(divide="ignore"):
        return privacy_loss(np.log(np.asarray(pmf_p, float)), np.log(np.asarray(pmf_q, float)))
