"""Closed forms for one mechanism: exact Gaussian privacy profile, Renyi curves, and the
conversions from zCDP / RDP to (epsilon, delta) used by the composition methods."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import special

from dpexplorer.core.accounting import amplify
from dpexplorer.core.accounting.guarantees import (
    ZCDP,
    ApproxDP,
    GaussianNoise,
    Guarantee,
    LaplaceNoise,
    PureDP,
    RDPCurve,
    Subsampled,
)

ORDERS: np.ndarray = np.concatenate([1.0 + np.geomspace(1e-3, 1.0, 40)[:-1], np.geomspace(2.0, 1e5, 160)])
"""Renyi orders used by the RDP accountant (plus any order an RDPCurve brings)."""


def gaussian_delta(epsilon: np.ndarray | float, mu: float) -> np.ndarray:
    """Exact delta(epsilon) of a Gaussian mechanism with mu = sensitivity / sigma.

    Balle & Wang 2018, Theorem 8: delta = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu). Exact
    (computed in log space for the second term); valid for every real epsilon."""
    eps = np.asarray(epsilon, dtype=float)
    first = special.ndtr(mu / 2 - eps / mu)
    second = np.exp(eps + special.log_ndtr(-mu / 2 - eps / mu))
    return np.maximum(first - second, 0.0)


def gaussian_epsilon(delta: float, mu: float) -> float:
    """Smallest epsilon >= 0 with gaussian_delta(epsilon, mu) <= delta (Balle & Wang 2018).

    An upper bound on the exact value, above it by at most ~1e-12 relative (root found by
    Brent's method, then moved up until the exact delta at it is <= delta)."""
    from scipy import optimize  # imported on first use: it costs ~0.3-1 s at start-up

    if gaussian_delta(0.0, mu) <= delta:
        return 0.0
    high = mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta)) + 1.0
    while gaussian_delta(high, mu) > delta:
        high *= 2
    root = optimize.brentq(lambda e: float(gaussian_delta(e, mu)) - delta, 0.0, high, xtol=1e-14, rtol=1e-13)
    return nudge_up(root, lambda e: float(gaussian_delta(e, mu)) <= delta)


def gaussian_epsilons(
    delta: float | np.ndarray, mus: np.ndarray, start: np.ndarray | None = None
) -> np.ndarray:
    """gaussian_epsilon(delta, mu) for many (delta, mu) at once (Balle & Wang 2018; ``delta`` and
    ``mus`` broadcast). Upper bounds: every value returned is a point whose exact delta has been
    computed to be <= its delta.

    Newton's method on log delta(eps), whose slope is -e^eps Phi(-mu/2 - eps/mu) / delta(eps):
    log delta is convex in eps (as observed here; nothing below depends on it but the speed), so
    one step from the Gaussian tail bound above the root lands below it and the steps from there
    rise to the root quadratically. The last iterate, raised by a few ulps until its delta is
    checked to be <= delta, is returned: within ~1e-9 relative of the root in about six
    evaluations (the bisection used before took ~50). ``start``: points at or below the roots
    (e.g. the epsilons at a larger delta), from which fewer steps are needed.
    """
    shape = np.broadcast_shapes(np.shape(delta), np.shape(mus))
    mus = np.broadcast_to(np.asarray(mus, dtype=float), shape).ravel()
    target = np.broadcast_to(np.asarray(delta, dtype=float), shape).ravel()
    log_target = np.log(target)
    # the Gaussian tail bound: delta(eps) <= P(L > eps) <= delta there, L ~ N(mu^2/2, mu^2)
    point = mus * mus / 2 + mus * np.sqrt(-2 * log_target)
    if start is not None:
        point = np.minimum(point, np.broadcast_to(np.asarray(start, dtype=float), shape).ravel())
    zero = special.erf(mus / (2 * math.sqrt(2))) <= target  # delta(0) = 2 Phi(mu/2) - 1
    active = ~zero
    last = np.full(mus.shape, np.inf)  # the previous step's size: Newton's steps shrink until noise
    for _ in range(MAX_NEWTON):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        eps, m = point[idx], mus[idx]
        second = np.exp(eps + special.log_ndtr(-m / 2 - eps / m))  # e^eps Phi(-mu/2 - eps/mu)
        value = special.ndtr(m / 2 - eps / m) - second
        with np.errstate(divide="ignore", invalid="ignore"):
            # Newton on sqrt(-log delta), nearly linear in eps (Gaussian tails)
            root = np.sqrt(-np.log(value))
            step = (np.sqrt(-log_target[idx]) - root) * 2 * root * value / second
        step = np.where((value > 0) & np.isfinite(step), step, -eps / 2)  # underflow: move left
        point[idx] = np.maximum(eps + step, 0.0)
        size = np.abs(step)
        active[idx] = (size > 1e-10 * np.maximum(eps, 1e-300)) & (size < last[idx])  # else: noise
        last[idx] = size
    margin = 1e-10 * point + 2 * last + 1e-300  # over the root and the rounding noise near it
    while np.any(over := ~zero & (_gaussian_deltas(point, mus) > target)):
        point = np.where(over, point + margin, point)
        margin = np.where(over, 4 * margin, margin)
    return np.where(zero, 0.0, point).reshape(shape)


MAX_NEWTON = 60
"""Most Newton steps of :func:`gaussian_epsilons` (it converges in a handful; the check that
follows makes any stopping point an upper bound)."""


def _gaussian_deltas(epsilons: np.ndarray, mus: np.ndarray) -> np.ndarray:
    """gaussian_delta elementwise over pairs (epsilon, mu)."""
    first = special.ndtr(mus / 2 - epsilons / mus)
    second = np.exp(epsilons + special.log_ndtr(-mus / 2 - epsilons / mus))
    return np.maximum(first - second, 0.0)


def nudge_up(value: float, ok: Callable[[float], bool]) -> float:
    """Move ``value`` up by tiny relative steps until ``ok(value)`` holds (root-finder slack)."""
    step = 1e-13 * max(abs(value), 1e-12)
    while not ok(value):
        value += step
        step *= 4
    return value


def laplace_rdp(orders: np.ndarray, epsilon0: float) -> np.ndarray:
    """Exact Renyi divergence of Laplace noise with sensitivity/scale = epsilon0 at each order.

    Mironov 2017, Proposition 6 (Table II): 1/(a-1) log(a/(2a-1) e^((a-1)e0) + (a-1)/(2a-1) e^(-a e0))."""
    a = np.asarray(orders, dtype=float)
    log_terms = np.logaddexp(
        np.log(a / (2 * a - 1)) + (a - 1) * epsilon0, np.log((a - 1) / (2 * a - 1)) - a * epsilon0
    )
    return np.minimum(log_terms / (a - 1), epsilon0)


def pure_rdp(orders: np.ndarray, epsilon: float) -> np.ndarray:
    """Upper bound on the Renyi divergence of any epsilon-DP mechanism: min(eps, a eps^2 / 2).

    Mironov 2017, Proposition 3 (eps) and Bun & Steinke 2016, Proposition 3.3 (eps^2/2-zCDP)."""
    return np.minimum(epsilon, np.asarray(orders, dtype=float) * epsilon * epsilon / 2)


def curve_rdp(orders: np.ndarray, curve: RDPCurve) -> np.ndarray:
    """An RDP curve read at other orders: the value at the next given order at or above (Renyi
    divergence is nondecreasing in the order, van Erven & Harremoes 2014, Theorem 3); +inf above
    the largest given order. An upper bound."""
    given = np.asarray(curve.orders, dtype=float)
    values = np.asarray(curve.epsilons, dtype=float)
    sort = np.argsort(given)
    given, values = given[sort], np.minimum.accumulate(values[sort][::-1])[::-1]
    index = np.searchsorted(given, orders, side="left")
    padded = np.append(values, np.inf)
    return padded[index]


def rdp_to_epsilon(orders: np.ndarray, rdp: np.ndarray, delta: float) -> float:
    """epsilon at delta from an RDP curve, minimised over the orders (an upper bound).

    Improved conversion of Canonne, Kamath & Steinke 2020, Proposition 12 (= Balle et al. 2020,
    Theorem 21): eps = rdp(a) + log(1 - 1/a) - (log(delta) + log(a)) / (a - 1)."""
    if delta <= 0:
        return math.inf
    a = np.asarray(orders, dtype=float)
    with np.errstate(invalid="ignore"):
        eps = rdp + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1)
    eps = eps[np.isfinite(eps)]
    return max(float(eps.min()), 0.0) if eps.size else math.inf


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """epsilon at delta for rho-zCDP (an upper bound): the improved RDP conversion of Canonne,
    Kamath & Steinke 2020 (Proposition 12) with D_a <= rho a (Bun & Steinke 2016, Definition 1.1),
    minimised over a; never above Bun & Steinke's rho + 2 sqrt(rho log(1/delta)) (Lemma 3.5).
    Every value tried is a valid bound, so the minimum found is one whatever the search does."""
    if delta <= 0:
        return math.inf
    classic = rho + 2 * math.sqrt(rho * math.log(1 / delta))

    def conversion(log_am1: float) -> float:
        a = 1.0 + math.exp(log_am1)
        return rho * a + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)

    grid = np.linspace(-12.0, 16.0, 57)
    values = [conversion(x) for x in grid]
    best = int(np.argmin(values))
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    refined = _golden_minimum(conversion, float(low), float(high))
    return max(min(classic, values[best], refined), 0.0)


def _golden_minimum(function: Callable[[float], float], low: float, high: float, steps: int = 60) -> float:
    """The smallest value of ``function`` met by a golden-section search on [low, high] (pure
    Python: scipy.optimize costs ~0.3 s to import, too much for the `account` command)."""
    ratio = (math.sqrt(5) - 1) / 2
    left, right = high - ratio * (high - low), low + ratio * (high - low)
    f_left, f_right = function(left), function(right)
    best = min(f_left, f_right)
    for _ in range(steps):
        if f_left <= f_right:
            high, right, f_right = right, left, f_left
            left = high - ratio * (high - low)
            f_left = function(left)
        else:
            low, left, f_left = left, right, f_right
            right = low + ratio * (high - low)
            f_right = function(right)
        best = min(best, f_left, f_right)
    return best


def rdp_of(g: Guarantee, orders: np.ndarray) -> np.ndarray | None:
    """Renyi curve (an upper bound) of one guarantee at ``orders``; None if it has none
    ((epsilon, delta) with delta > 0 and approximate zCDP carry no Renyi bound)."""
    if isinstance(g, GaussianNoise):
        return np.asarray(orders) * (g.sensitivity / g.sigma) ** 2 / 2  # Mironov 2017, Prop. 7
    if isinstance(g, LaplaceNoise):
        return laplace_rdp(orders, g.sensitivity / g.scale)
    if isinstance(g, PureDP) or (isinstance(g, ApproxDP) and g.delta == 0):
        return pure_rdp(orders, g.epsilon)
    if isinstance(g, ZCDP) and g.delta == 0:
        with np.errstate(over="ignore"):  # a huge rho overflows to +inf: still an upper bound
            return np.asarray(orders) * g.rho
    if isinstance(g, RDPCurve):
        return curve_rdp(orders, g)
    if isinstance(g, Subsampled):
        return _subsampled_rdp(g, orders)
    return None


def _subsampled_rdp(g: Subsampled, orders: np.ndarray) -> np.ndarray | None:
    """Subsampled Renyi curve (Poisson or without replacement, see :mod:`.amplify`); cached per
    guarantee and orders."""
    if g.rate >= 1:
        return rdp_of(g.base, orders)
    key = (g, tuple(np.asarray(orders, dtype=float).tolist()))
    if key not in _RDP_CACHE:
        base = g.base

        def base_curve(a: np.ndarray) -> np.ndarray:
            curve = rdp_of(base, a)
            assert curve is not None  # the base is Laplace, Gaussian or pure: each has a Renyi curve
            return curve

        if g.scheme == "poisson":
            mu = g.base.sensitivity / g.base.sigma if isinstance(g.base, GaussianNoise) else None
            _RDP_CACHE[key] = amplify.poisson_rdp(orders, g.rate, base_curve, mu)
        else:
            pure = fixed_approx(g.base)
            eps_inf = pure[0] if pure is not None else math.inf  # Gaussian noise: no pure epsilon
            _RDP_CACHE[key] = amplify.without_replacement_rdp(orders, g.rate, base_curve, eps_inf)
    return _RDP_CACHE[key]


_RDP_CACHE: dict[tuple[Subsampled, tuple[float, ...]], np.ndarray] = {}


def rho_of(g: Guarantee) -> float | None:
    """zCDP parameter rho (an upper bound) of one guarantee; None if it has none.

    Bun & Steinke 2016: pure eps-DP is eps^2/2-zCDP (Proposition 1.4); Gaussian noise is
    Delta^2/(2 sigma^2)-zCDP (Proposition 1.6); Laplace noise is (Delta/b)-DP, hence (Delta/b)^2/2."""
    if isinstance(g, GaussianNoise):
        return (g.sensitivity / g.sigma) ** 2 / 2
    if isinstance(g, LaplaceNoise):
        return (g.sensitivity / g.scale) ** 2 / 2
    if isinstance(g, PureDP) or (isinstance(g, ApproxDP) and g.delta == 0):
        return g.epsilon**2 / 2
    if isinstance(g, ZCDP) and g.delta == 0:
        return g.rho
    return None


def fixed_approx(g: Guarantee) -> tuple[float, float] | None:
    """(epsilon, delta) of a guarantee that has one fixed pair (pure, approximate, Laplace)."""
    if isinstance(g, PureDP):
        return g.epsilon, 0.0
    if isinstance(g, ApproxDP):
        return g.epsilon, g.delta
    if isinstance(g, LaplaceNoise):
        return g.sensitivity / g.scale, 0.0
    if isinstance(g, Subsampled) and not isinstance(g.base, GaussianNoise):
        eps, _ = fixed_approx(g.base)  # type: ignore[misc]
        return amplify.amplified_epsilon(eps, g.rate), 0.0
    return None


def epsilon_of(g: Guarantee, delta: float) -> float:
    """epsilon at ``delta`` for one guarantee with a privacy profile (Gaussian, zCDP, RDP curve);
    an upper bound. For approximate zCDP (rho, d0) the event definition of Bun & Steinke 2016
    (Definition 8.1) gives P(S) <= e^eps/(1 - d0) Q(S) + d0 + d', used here with d' = delta - d0."""
    if delta <= 0:
        return math.inf if fixed_approx(g) is None else _fixed_or_inf(g, delta)
    if isinstance(g, GaussianNoise):
        return gaussian_epsilon(delta, g.sensitivity / g.sigma)
    if isinstance(g, ZCDP):
        if delta <= g.delta:
            return math.inf
        return zcdp_to_epsilon(g.rho, delta - g.delta) - math.log1p(-g.delta)
    if isinstance(g, RDPCurve):
        orders = np.union1d(ORDERS, np.asarray(g.orders, dtype=float))
        return rdp_to_epsilon(orders, curve_rdp(orders, g), delta)
    if isinstance(g, Subsampled) and isinstance(g.base, GaussianNoise):
        # the base is (eps, delta/q)-DP, so the subsampled one is (amplified eps, delta)-DP
        if delta / g.rate >= 1:
            return 0.0
        return amplify.amplified_epsilon(epsilon_of(g.base, delta / g.rate), g.rate)
    return _fixed_or_inf(g, delta)


def _fixed_or_inf(g: Guarantee, delta: float) -> float:
    fixed = fixed_approx(g)
    assert fixed is not None
    return fixed[0] if delta >= fixed[1] else math.inf
