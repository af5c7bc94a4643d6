"""Epsilon as risk: what an attacker who tests "is this person in the data?" can achieve.

* The hypothesis-testing region: an (epsilon, delta)-DP mechanism leaves any test with type I
  error alpha a type II error of at least beta(alpha) (Wasserman & Zhou 2010; Kairouz, Oh &
  Viswanath 2015, Theorem 2.1; Dong, Roth & Su 2022, f-DP).
* The posterior belief an attacker can reach from a prior (Bayesian reading of the privacy loss).

Every curve is a LOWER bound on the attacker's errors (the attacker is never better than shown)
and every posterior is an UPPER bound on the attacker's belief.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpexplorer.core.accounting.compose import METHODS, pld_of, privacy_profile
from dpexplorer.core.accounting.guarantees import Guarantee
from dpexplorer.core.accounting.pld import not_applicable_reason
from dpexplorer.core.accounting.validate import check_epsilon, counted
from dpexplorer.core.errors import InvalidParameterError, NotApplicableError

PROFILE_POINTS = 160
"""Epsilons (or deltas) at which a privacy profile is read to build a trade-off curve."""


def _check_alphas(alphas: np.ndarray) -> np.ndarray:
    values = np.asarray(alphas, dtype=float)
    if not np.all((values >= 0) & (values <= 1)):
        raise InvalidParameterError("type I errors (alphas) must lie in [0, 1]")
    return values


def _tradeoff(epsilon: float, delta: float, alphas: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        below = np.where(alphas > 0, 1 - delta - np.exp(epsilon) * alphas, 1 - delta)
    above = np.exp(-epsilon) * (1 - delta - alphas)
    return np.maximum(0.0, np.maximum(below, above))


def tradeoff_curve_epsilon_delta(epsilon: float, delta: float, alphas: np.ndarray) -> np.ndarray:
    """Smallest type II error beta(alpha) of any test against an (epsilon, delta)-DP mechanism:
    beta = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha)).

    Exact for (epsilon, delta)-DP (Kairouz, Oh & Viswanath 2015, Theorem 2.1; Dong, Roth & Su 2022,
    Proposition 2.5): some (epsilon, delta)-DP mechanism attains it; no such mechanism is easier."""
    check_epsilon(epsilon)
    if not (0 <= delta < 1):
        raise InvalidParameterError(f"delta must satisfy 0 <= delta < 1, got {delta!r}")
    return _tradeoff(epsilon, delta, _check_alphas(alphas))


def _pairs_from_pld(guarantees: Sequence[Guarantee]) -> list[tuple[float, float]]:
    pld = pld_of(guarantees)
    top = pld.epsilon(pld.infinity + 1e-12 * (1 - pld.infinity))
    epsilons = np.linspace(0.0, top, PROFILE_POINTS)
    return list(zip(epsilons.tolist(), pld.deltas(epsilons).tolist(), strict=True))


def method_profile_pairs(
    guarantees: Sequence[Guarantee | tuple[Guarantee, int]],
) -> list[tuple[float, float]]:
    """(epsilon, delta) pairs of the tightest accountant other than the PLD (and advanced) at
    PROFILE_POINTS deltas: each pair holds (an upper bound on epsilon at its delta)."""
    deltas = np.geomspace(1e-12, 0.5, PROFILE_POINTS)
    methods = [m for m in METHODS if m not in ("pld", "advanced")]
    profiles = np.vstack([privacy_profile(guarantees, m, deltas) for m in methods])
    if np.all(np.isnan(profiles)):
        raise NotApplicableError("no accounting method applies to this list, so there is no trade-off curve")
    best = np.nanmin(np.where(np.isnan(profiles), np.inf, profiles), axis=0)
    return [(float(e), float(d)) for e, d in zip(best, deltas, strict=True) if math.isfinite(e)]


def tradeoff_curve_profile(guarantees: Sequence[Guarantee], alphas: np.ndarray) -> np.ndarray:
    """Lower bound on the type II error beta(alpha) of any membership test against the composed
    list: beta = sup over eps >= 0 of the (eps, delta(eps)) curve above (Dong, Roth & Su 2022,
    Proposition 2.12), with delta(eps) the tight PLD profile (an upper bound on the true one), or,
    when the PLD does not apply, the best of the other methods' profiles. Taking the sup over a
    finite set of epsilons and using upper bounds on delta both only lower the curve."""
    values = _check_alphas(alphas)
    counts = counted(guarantees)
    if not counts:
        return np.maximum(1.0 - values, 0.0)
    use_pld = not_applicable_reason(counts) is None
    pairs = _pairs_from_pld(guarantees) if use_pld else method_profile_pairs(guarantees)
    curve = np.zeros_like(values)
    for epsilon, delta in pairs:
        if delta < 1:
            curve = np.maximum(curve, _tradeoff(epsilon, delta, values))
    return curve


def posterior_bound(
    epsilon: float, delta: float, prior: float, *, failure_probability: float | None = None
) -> float:
    """Upper bound on the posterior belief that the person is in the data, from ``prior``.

    The posterior after an output y is prior e^L / (prior e^L + 1 - prior), L the privacy loss
    at y. Pure DP (delta = 0): L <= epsilon always, so the bound prior e^eps / (prior e^eps + 1 -
    prior) holds for every output and is attained by randomized response (exact).
    With delta > 0 no bound below 1 holds for every output (the delta part may reveal the person);
    since delta >= E[(1 - e^(eps - L))_+] >= (1 - e^(eps - eps')) P(L > eps'), the bound with
    eps' = eps - log(1 - delta / failure_probability) holds except on outputs of probability at
    most ``failure_probability`` (default 10 delta; must exceed delta)."""
    check_epsilon(epsilon)
    if not (0 < prior < 1):
        raise InvalidParameterError(f"the prior must lie strictly between 0 and 1, got {prior!r}")
    if not (0 <= delta < 1):
        raise InvalidParameterError(f"delta must satisfy 0 <= delta < 1, got {delta!r}")
    effective = epsilon
    if delta > 0:
        failure = 10 * delta if failure_probability is None else failure_probability
        if not (delta < failure <= 1):
            raise InvalidParameterError(
                f"failure_probability must satisfy delta < failure_probability <= 1, got {failure!r}"
            )
        effective = epsilon - math.log1p(-delta / failure)
    odds = prior / (1 - prior) * math.exp(min(effective, 700.0))
    return odds / (1 + odds)


__all__ = [
    "method_profile_pairs",
    "posterior_bound",
    "tradeoff_curve_epsilon_delta",
    "tradeoff_curve_profile",
]
