"""Composition theorems on (epsilon, delta) pairs: basic, advanced (Dwork, Rothblum & Vadhan
2010) and optimal homogeneous composition (Kairouz, Oh & Viswanath 2015).

Guarantees without one fixed (epsilon, delta) pair (Gaussian noise, zCDP, RDP curves) are first
turned into pairs: the delta left after the fixed deltas is shared equally among them, and each
gets the smallest epsilon its own privacy profile allows at its share (an upper bound)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from dpexplorer.core.accounting.guarantees import GaussianNoise, Guarantee
from dpexplorer.core.accounting.pld import epsilon_of_atoms
from dpexplorer.core.accounting.single import epsilon_of, fixed_approx, gaussian_epsilons, nudge_up
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.figures import privacy_number as fig

Counts = Sequence[tuple[Guarantee, int]]


@dataclass(frozen=True)
class Outcome:
    """An epsilon (upper bound) and a sentence saying how it was obtained."""

    epsilon: float
    detail: str


@dataclass(frozen=True, eq=False)
class _Table:
    """A list's guarantees as arrays, built once per list (a ledger of ten thousand distinct
    releases is asked for many deltas and splits): counts ``k``, the fixed epsilons (NaN where
    a guarantee has no fixed pair), the delta the fixed pairs spend, how many guarantees need
    their epsilon solved, the Gaussian ones (by mu) and the other ones."""

    k: np.ndarray
    fixed_eps: np.ndarray
    spent: float
    flexible: int
    gaussian: np.ndarray
    mus: np.ndarray
    others: tuple[tuple[int, Guarantee], ...]


@functools.lru_cache(maxsize=16)
def _table(counts: tuple[tuple[Guarantee, int], ...]) -> _Table:
    fixed = [fixed_approx(g) for g, _ in counts]
    k = np.array([k for _, k in counts], dtype=float)
    fixed_eps = np.array([np.nan if pair is None else pair[0] for pair in fixed])
    spent = sum(pair[1] * n for pair, (_, n) in zip(fixed, counts, strict=True) if pair is not None)
    gaussian = [i for i, (g, _) in enumerate(counts) if isinstance(g, GaussianNoise)]
    mus = np.array([counts[i][0].sensitivity / counts[i][0].sigma for i in gaussian])  # type: ignore[union-attr]
    is_gaussian = set(gaussian)
    others = tuple(
        (i, g)
        for i, ((g, _), pair) in enumerate(zip(counts, fixed, strict=True))
        if pair is None and i not in is_gaussian
    )
    flexible = sum(n for pair, (_, n) in zip(fixed, counts, strict=True) if pair is None)
    return _Table(k, fixed_eps, spent, flexible, np.array(gaussian, dtype=int), mus, others)


def _splits(counts: Counts, delta: float, shares: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each of ``shares`` (fractions of the free delta given to the guarantees without a
    fixed pair, shared equally): the epsilons (one row per share; each guarantee's fixed pair, or
    the smallest epsilon its own profile allows at its share: an upper bound), the counts, and
    the delta left over (advanced composition's delta'). The Gaussian ones are solved all
    together (:func:`gaussian_epsilons`), the others one by one."""
    table = _table(counts if isinstance(counts, tuple) else tuple(counts))
    free = delta - table.spent
    if free < 0:
        raise NotApplicableError(
            f"δ {fig(delta)} is below the {fig(table.spent)} the (ε, δ) guarantees already spend"
        )
    shares = np.asarray(shares, dtype=float)
    per_item = free * shares / table.flexible if table.flexible else np.zeros(shares.shape)
    eps = np.repeat(table.fixed_eps[None, :], shares.size, axis=0)
    if table.flexible:
        positive = per_item > 0
        eps[~positive] = np.where(np.isnan(table.fixed_eps), math.inf, table.fixed_eps)
        if table.gaussian.size:
            # largest share first: its epsilons are below the next ones' roots, a close start
            start = None
            for row in sorted(np.flatnonzero(positive), key=lambda r: -per_item[r]):
                start = gaussian_epsilons(per_item[row], table.mus, start)
                eps[row, table.gaussian] = start
        for i, g in table.others:
            eps[positive, i] = [epsilon_of(g, float(d)) for d in per_item[positive]]
    return eps, table.k, free - per_item * table.flexible


def basic(counts: Counts, delta: float) -> Outcome:
    """Basic composition (Dwork & Roth 2014, Theorem 3.16): epsilons add, deltas add. Upper bound."""
    eps, k, _ = _splits(counts, delta, np.array([1.0]))
    with np.errstate(over="ignore"):  # a sum past the largest float is +inf, as it should be
        total = float(eps[0] @ k)
    return Outcome(total, "epsilons add (Dwork & Roth 2014, Theorem 3.16)")


def drv_epsilon(pairs: Sequence[tuple[float, float, int]], delta_prime: float) -> float:
    """Advanced composition for heterogeneous epsilons (Dwork, Rothblum & Vadhan 2010; Dwork & Roth
    2014, Theorem 3.20; seed 001, Theorem 5): with deltas sum k_i d_i + delta',
    eps' = sqrt(2 ln(1/delta') sum k_i e_i^2) + sum k_i e_i (e^e_i - 1). Upper bound."""
    eps = np.array([[e for e, _, _ in pairs]], dtype=float)
    k = np.array([k for _, _, k in pairs], dtype=float)
    return float(_drv(eps, k, np.array([delta_prime]))[0])


def _drv(eps: np.ndarray, k: np.ndarray, delta_prime: np.ndarray) -> np.ndarray:
    """:func:`drv_epsilon` for each row of ``eps`` (counts ``k``) with its ``delta_prime``."""
    with np.errstate(over="ignore", invalid="ignore"):
        square = (eps * eps) @ k
        drift = np.where(eps < 700, eps * np.expm1(np.minimum(eps, 700)), math.inf) @ k
        return np.sqrt(2 * np.log(1 / delta_prime) * square) + drift


SHARES = np.concatenate([[1e-6, 1e-4, 1e-3], np.linspace(0.025, 0.975, 39)])
"""Fractions of the free delta given to the non-fixed guarantees when searching the best delta'."""
FEW_SHARES = np.array([1e-6, 1e-3, 0.025, 0.1, 0.25, 0.4, 0.55, 0.7, 0.85, 0.975])
"""The fractions tried when more than MANY_FLEXIBLE distinct guarantees need their epsilon solved
for each one (a ledger of thousands of Gaussian releases): every fraction gives a valid bound, so
fewer only makes the best one a little less tight."""
MANY_FLEXIBLE = 64


def advanced(counts: Counts, delta: float) -> Outcome:
    """Best of advanced composition (over the delta' split) and basic composition; never worse
    than basic. Upper bound. The detail says which won and the split."""
    table = _table(counts if isinstance(counts, tuple) else tuple(counts))
    distinct = int(np.isnan(table.fixed_eps).sum())
    shares = (SHARES if distinct <= MANY_FLEXIBLE else FEW_SHARES) if table.flexible else np.array([0.0])
    # basic composition's split (share 1) is solved with the others, in one pass
    eps, k, delta_prime = _splits(counts, delta, np.append(shares, 1.0))
    with np.errstate(over="ignore"):  # a sum past the largest float is +inf, as it should be
        base = Outcome(float(eps[-1] @ k), "")
    eps, delta_prime = eps[:-1], delta_prime[:-1]
    usable = delta_prime > 0
    best: tuple[float, float, float] | None = None  # (eps, delta', share)
    if usable.any():
        totals = np.full(shares.shape, math.inf)
        totals[usable] = _drv(eps[usable], k, delta_prime[usable])
        i = int(np.argmin(totals))
        best = (float(totals[i]), float(delta_prime[i]), float(shares[i]))
    if best is None or best[0] >= base.epsilon:
        shown = "" if best is None else f" (advanced would give ε = {fig(best[0])})"
        return Outcome(base.epsilon, f"basic composition won{shown}")
    total, delta_prime_best, _ = best
    rest = delta - delta_prime_best
    return Outcome(
        total,
        f"advanced composition won (Dwork-Rothblum-Vadhan, δ' = {fig(delta_prime_best)}, "
        f"{fig(rest)} spent by the mechanisms' own deltas; basic gives ε = {fig(base.epsilon)})",
    )


def homogeneous(counts: Counts) -> tuple[float, float, int]:
    """(eps0, delta0, k) of a homogeneous list of fixed pairs; NotApplicableError otherwise."""
    pairs = {fixed_approx(g) for g, _ in counts}
    if None in pairs:
        raise NotApplicableError(
            "optimal composition (Kairouz-Oh-Viswanath) needs every guarantee to be one fixed "
            "(epsilon, delta) pair; Gaussian noise, zCDP and RDP curves have none"
        )
    if len(pairs) != 1:
        raise NotApplicableError(
            "optimal composition (Kairouz-Oh-Viswanath) needs every guarantee to have the same "
            "(epsilon, delta); this list is heterogeneous"
        )
    eps, d = pairs.pop()  # type: ignore[misc]
    return eps, d, sum(k for _, k in counts)


KOV_SIGMAS = 24.0
"""The KOV sum keeps the outcomes within KOV_SIGMAS standard deviations of the binomial's mean
(plus everything with a positive loss when that is fewer); the rest is bounded (Chernoff) and
counted as if its loss were infinite."""


FLOAT_EPS = float(np.finfo(float).eps)
KOV_MAX_ATOMS = 1 << 23
"""Largest number of outcomes the KOV sum takes (memory: a few arrays of this length)."""


def _binomial_tail(k: int, q: float, at: float) -> float:
    """Chernoff bound on P(X <= at) for at < kq, or P(X >= at) for at > kq, X ~ Bin(k, q):
    exp(-k KL(at/k || q)) (Chernoff 1952; Hoeffding 1963, Theorem 1). An upper bound."""
    a = min(max(at / k, 0.0), 1.0)
    kl = sum(x * math.log(x / y) for x, y in ((a, q), (1 - a, 1 - q)) if x > 0)
    return math.exp(-k * kl)


def _kov_atoms(eps0: float, k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(losses, masses, mass moved to +inf) of k-fold randomized response with parameter eps0:
    l flips (probability q = 1/(1 + e^eps0) each) give the loss (k - 2l) eps0 with mass
    C(k,l) p^(k-l) q^l (Kairouz, Oh & Viswanath 2015, Theorem 3.3). Only l from the binomial's
    lower tail up to k/2 matter (larger l: loss <= 0); for large k the range is cut and the
    mass cut off is a Chernoff bound, put at +inf. Each mass is multiplied by a bound on the
    relative error of its floating-point evaluation (gammaln of arguments up to k), so every
    mass is an upper bound on the true one."""
    q = float(special.expit(-eps0))
    spread = KOV_SIGMAS * math.sqrt(k * q * (1 - q)) + 1
    low = max(0, math.floor(k * q - spread))
    high = min(k // 2, math.ceil(k * q + spread))
    if high - low > KOV_MAX_ATOMS:
        raise NotApplicableError(
            f"optimal composition of {k} guarantees needs {high - low + 1:.3g} outcomes; use rdp or pld"
        )
    cut = (_binomial_tail(k, q, low - 1) if low > 0 else 0.0) + (
        _binomial_tail(k, q, high + 1) if high < k // 2 else 0.0
    )
    l_values = np.arange(low, high + 1, dtype=float)
    log_binom = special.gammaln(k + 1) - special.gammaln(l_values + 1) - special.gammaln(k - l_values + 1)
    log_p, log_q = -math.log1p(math.exp(-eps0)), -math.log1p(math.exp(eps0))
    logs = log_binom + (k - l_values) * log_p + l_values * log_q
    # each of the ~6 terms is within a few ulps of its size: bound the absolute error of the sum
    scale = 3 * abs(float(special.gammaln(k + 1))) + k * (abs(log_p) + abs(log_q)) + 1.0
    error = 16 * FLOAT_EPS * scale
    return (k - 2 * l_values) * eps0, np.exp(logs + error), cut


def _atoms_delta(losses: np.ndarray, masses: np.ndarray, epsilon: float) -> float:
    """sum_j m_j (1 - e^(eps - l_j))_+ as a sum of positive terms (no cancellation)."""
    above = losses > epsilon
    return float((masses[above] * -np.expm1(epsilon - losses[above])).sum())


def kov_delta(eps0: float, k: int, epsilon: float) -> float:
    """delta(epsilon) of k-fold randomized response with parameter eps0: the largest delta of any
    k-fold composition of eps0-DP mechanisms (Kairouz, Oh & Viswanath 2015, Theorem 3.3),
    delta = sum_l C(k,l) (p^(k-l) q^l - e^epsilon p^l q^(k-l))_+, p = e^eps0/(1+e^eps0).
    An upper bound on that exact value (masses rounded up, far tails counted whole)."""
    losses, masses, cut = _kov_atoms(eps0, k)
    return min(1.0, _atoms_delta(losses, masses, epsilon) * (1 + 4 * FLOAT_EPS * losses.size) + cut)


def optimal(counts: Counts, delta: float) -> Outcome:
    """Optimal composition of k identical (eps0, d0) guarantees (Kairouz, Oh & Viswanath 2015,
    Theorem 3.3): the tight epsilon with 1 - (1 - d0)^k (1 - delta_RR(eps)) <= delta. The worst
    case is exact, hence an upper bound for any such mechanisms (not a discretisation); the
    number shown is rounded outward: the delta of the returned epsilon, summed without
    cancellation from masses rounded up, is checked to be <= delta (issue 15)."""
    eps0, d0, k = homogeneous(counts)
    # 1 - (1 - delta)/(1 - d0)^k, without cancellation, and shaded down by a few ulps
    target = -math.expm1(math.log1p(-delta) - k * math.log1p(-d0)) * (1 - 1e-12)
    if target < 0:
        raise NotApplicableError(f"δ {fig(delta)} is below the δ the {k} guarantees already spend")
    losses, masses, cut = _kov_atoms(eps0, k)
    goal = target - cut
    if goal < 0:
        raise NotApplicableError(f"δ {fig(delta)} is too small for optimal composition of {k} guarantees")
    slack = 1 + 4 * FLOAT_EPS * losses.size  # rounding of the sum of positive terms

    def fits(eps: float) -> bool:
        return _atoms_delta(losses, masses, eps) * slack <= goal

    eps = epsilon_of_atoms(losses, masses, goal / slack)
    eps = nudge_up(eps, fits)
    return Outcome(eps, f"{k} identical ({fig(eps0)}, {fig(d0)})-DP guarantees (Kairouz-Oh-Viswanath)")
