"""Composition theorems on (epsilon, delta) pairs: basic, advanced (Dwork, Rothblum & Vadhan
2010) and optimal homogeneous composition (Kairouz, Oh & Viswanath 2015).

Guarantees without one fixed (epsilon, delta) pair (Gaussian noise, zCDP, RDP curves) are first
turned into pairs: the delta left after the fixed deltas is shared equally among them, and each
gets the smallest epsilon its own privacy profile allows at its share (an upper bound)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from dpexplorer.core.accounting.guarantees import Guarantee
from dpexplorer.core.accounting.pld import epsilon_of_atoms
from dpexplorer.core.accounting.single import epsilon_of, fixed_approx
from dpexplorer.core.errors import NotApplicableError

Counts = Sequence[tuple[Guarantee, int]]


@dataclass(frozen=True)
class Outcome:
    """An epsilon (upper bound) and a sentence saying how it was obtained."""

    epsilon: float
    detail: str


def _split(counts: Counts, delta: float, share: float) -> tuple[list[tuple[float, float, int]], float]:
    """Pairs (eps_i, delta_i, k_i) using ``share`` of the free delta for the non-fixed guarantees;
    returns them and the delta left over (for advanced composition's delta')."""
    fixed = [(fixed_approx(g), k) for g, k in counts]
    spent = sum(pair[1] * k for pair, k in fixed if pair is not None)
    free = delta - spent
    if free < 0:
        raise NotApplicableError(
            f"delta {delta:g} is below the {spent:.3g} the (epsilon, delta) guarantees already spend"
        )
    flexible = sum(k for pair, k in fixed if pair is None)
    per_item = free * share / flexible if flexible else 0.0
    pairs = []
    for (g, k), (pair, _) in zip(counts, fixed, strict=True):
        eps_i, delta_i = pair if pair is not None else (epsilon_of(g, per_item), per_item)
        pairs.append((eps_i, delta_i, k))
    used = per_item * flexible
    return pairs, free - used


def basic(counts: Counts, delta: float) -> Outcome:
    """Basic composition (Dwork & Roth 2014, Theorem 3.16): epsilons add, deltas add. Upper bound."""
    pairs, _ = _split(counts, delta, 1.0)
    return Outcome(sum(e * k for e, _, k in pairs), "epsilons add (Dwork & Roth 2014, Theorem 3.16)")


def drv_epsilon(pairs: Sequence[tuple[float, float, int]], delta_prime: float) -> float:
    """Advanced composition for heterogeneous epsilons (Dwork, Rothblum & Vadhan 2010; Dwork & Roth
    2014, Theorem 3.20; seed 001, Theorem 5): with deltas sum k_i d_i + delta',
    eps' = sqrt(2 ln(1/delta') sum k_i e_i^2) + sum k_i e_i (e^e_i - 1). Upper bound."""
    square = sum(k * e * e for e, _, k in pairs)
    drift = sum(k * e * math.expm1(e) if e < 700 else math.inf for e, _, k in pairs)
    return math.sqrt(2 * math.log(1 / delta_prime) * square) + drift


SHARES = np.concatenate([[1e-6, 1e-4, 1e-3], np.linspace(0.025, 0.975, 39)])
"""Fractions of the free delta given to the non-fixed guarantees when searching the best delta'."""


def advanced(counts: Counts, delta: float) -> Outcome:
    """Best of advanced composition (over the delta' split) and basic composition; never worse
    than basic. Upper bound. The detail says which won and the split."""
    base = basic(counts, delta)
    has_flexible = any(fixed_approx(g) is None for g, _ in counts)
    best: tuple[float, float, float] | None = None  # (eps, delta', share)
    for share in SHARES if has_flexible else [0.0]:
        pairs, delta_prime = _split(counts, delta, share)
        if delta_prime <= 0:
            continue
        eps = drv_epsilon(pairs, delta_prime)
        if best is None or eps < best[0]:
            best = (eps, delta_prime, share)
    if best is None or best[0] >= base.epsilon:
        shown = "" if best is None else f" (advanced would give {best[0]:.6g})"
        return Outcome(base.epsilon, f"basic composition won{shown}")
    eps, delta_prime, share = best
    rest = delta - delta_prime
    return Outcome(
        eps,
        f"advanced composition won (Dwork-Rothblum-Vadhan, delta' = {delta_prime:.3g}, "
        f"{rest:.3g} spent by the mechanisms' own deltas; basic gives {base.epsilon:.6g})",
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


def kov_delta(eps0: float, k: int, epsilon: float) -> float:
    """Exact delta(epsilon) of k-fold randomized response with parameter eps0: the largest delta
    of any k-fold composition of eps0-DP mechanisms (Kairouz, Oh & Viswanath 2015, Theorem 3.3).
    delta = sum_l C(k,l) (p^(k-l) q^l - e^epsilon p^l q^(k-l))_+, p = e^eps0/(1+e^eps0)."""
    l_values = np.arange(k + 1)
    log_binom = special.gammaln(k + 1) - special.gammaln(l_values + 1) - special.gammaln(k - l_values + 1)
    log_p, log_q = -np.logaddexp(0.0, -eps0), -np.logaddexp(0.0, eps0)
    under_p = np.exp(log_binom + (k - l_values) * log_p + l_values * log_q)
    losses = (k - 2 * l_values) * eps0  # log(p-term / q-term); the term is p-term (1 - e^(eps-loss))
    above = losses > epsilon
    return float((under_p[above] * -np.expm1(epsilon - losses[above])).sum())


def optimal(counts: Counts, delta: float) -> Outcome:
    """Optimal composition of k identical (eps0, d0) guarantees (Kairouz, Oh & Viswanath 2015,
    Theorem 3.3): the tight epsilon with 1 - (1 - d0)^k (1 - delta_RR(eps)) <= delta. Exact for the
    worst case, hence an upper bound for any such mechanisms (not a discretisation)."""
    eps0, d0, k = homogeneous(counts)
    target = 1 - (1 - delta) / (1 - d0) ** k
    if target < 0:
        raise NotApplicableError(f"delta {delta:g} is below the delta the {k} guarantees already spend")
    l_values = np.arange(k + 1)
    log_binom = special.gammaln(k + 1) - special.gammaln(l_values + 1) - special.gammaln(k - l_values + 1)
    log_p = -np.logaddexp(0.0, -eps0)
    losses = (k - 2 * l_values) * eps0
    masses = np.exp(log_binom + k * log_p - l_values * eps0)  # C(k,l) p^(k-l) q^l
    eps = epsilon_of_atoms(losses.astype(float), masses, target)
    return Outcome(eps, f"{k} identical ({eps0:g}, {d0:g})-DP guarantees (Kairouz-Oh-Viswanath)")
