"""The risk of everything released, in an attacker's terms: the trade-off curve of a composed
list of guarantees (f-DP, Dong, Roth & Su 2022) and a mu-GDP summary of it.

An attacker who sees every release tests "is Alice in the data?". Any test has a false-positive
rate (fpr, type I error: says she is in when she is not) and a false-negative rate (fnr, type II
error: misses her). The trade-off curve f(fpr) is the smallest fnr any test can reach at that fpr;
random guessing gives f(fpr) = 1 - fpr. :func:`tradeoff_of` returns the curve of a list, and says
which of these it is:

* ``exact`` where the curve is known in closed form: Gaussian noise, any number of times
  (mu = sqrt(sum k (Delta/sigma)^2), f = G_mu, Dong, Roth & Su 2022, Theorem 2.7 and Corollary 3.3);
  one pure epsilon-DP or (epsilon, delta)-DP guarantee (f_{eps,delta}, Proposition 2.5: exact for
  the guarantee as stated, randomized response attains it); one Laplace noise (Appendix A of
  Dong, Roth & Su 2022: the curve of Lap(0, 1) against Lap(Delta/b, 1), the worst-case shift the
  PLD accountant also uses).
* ``lower bound from the PLD`` elsewhere: every (eps, delta(eps)) pair of the pessimistic
  privacy-loss distribution holds, so the curve is at least sup_eps f_{eps,delta(eps)}
  (Proposition 2.12). Reading finitely many epsilons and upper bounds on delta only lowers it: the
  attacker's true fnr is never below it, so it is sound for privacy.
* ``lower bound from the accountants' profiles`` when some guarantee has no PLD (zCDP, RDP
  curves): the same with the best (eps, delta) of the other accountants.

The mu-GDP summary (:attr:`TradeOff.gdp_mu`) is exact for Gaussian noise alone; otherwise it is
the smallest mu (to a relative 1e-4, rounded up) for which the PLD's profile is checked to stay
below the Gaussian one at every epsilon (Corollary 2.13: mu-GDP is (eps, delta_mu(eps))-DP for all
eps >= 0), so the releases are mu-GDP: an upper bound on the true mu. Gaussian noise in a list
with other mechanisms is added exactly, mu^2 = mu_G^2 + mu_rest^2 (Corollary 3.3). A list with an
(epsilon, delta) guarantee of delta > 0, a subsampled mechanism or a zCDP / RDP bound gets no mu
(none is proven here), with the reason.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from dpexplorer.core.accounting.compose import pld_of
from dpexplorer.core.accounting.guarantees import (
    ApproxDP,
    GaussianNoise,
    Guarantee,
    LaplaceNoise,
    PureDP,
    Subsampled,
)
from dpexplorer.core.accounting.pld import PrivacyLossDistribution, TwoSided, not_applicable_reason
from dpexplorer.core.accounting.single import gaussian_delta
from dpexplorer.core.accounting.validate import counted
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.risk import method_profile_pairs, tradeoff_curve_epsilon_delta

EXACT = "exact"
PLD_BOUND = "lower bound from the PLD"
PROFILE_BOUND = "lower bound from the accountants' profiles"
GDP_EXACT = "exact"
GDP_BOUND = "upper bound"

FPR_GRID = np.unique(
    [
        float(f"{a:.10g}")
        for a in np.concatenate(
            [
                [0.0],
                np.geomspace(1e-6, 1e-4, 9)[:-1],
                np.linspace(1e-4, 1e-3, 10)[:-1],
                np.arange(1, 101) * 1e-3,
                np.arange(11, 101) * 1e-2,
            ]
        )
    ]
)
"""The false-positive rates a curve is listed at: 0, 1e-6 to 1e-3 on a log scale, every 0.001
up to 0.1, then every 0.01 up to 1 (so fnr can be read at 0.001 steps near 0)."""

ENVELOPE_EPSILONS = 600
"""Epsilons on a regular grid at which the PLD's profile is read for the curve (with Gaussian
noise in the list; without, the PLD's own atoms are read, up to ATOM_EPSILONS of them)."""
ATOM_EPSILONS = 4000
GDP_EPSILONS = 4096
"""Epsilons at which the PLD's profile is checked against a Gaussian one for the mu-GDP fit."""
GDP_RTOL = 1e-4


@dataclass(frozen=True, eq=False)
class TradeOff:
    """The attacker's best false-negative rate ``fnr`` at each false-positive rate ``fpr`` against
    the composed list: exact or a lower bound, as ``kind`` says (module doc). ``gdp_mu`` the
    mu-GDP summary (``gdp_kind`` exact or an upper bound), None with ``gdp_note`` saying why."""

    fpr: np.ndarray
    fnr: np.ndarray
    kind: str
    how: str
    gdp_mu: float | None
    gdp_kind: str | None
    gdp_note: str

    def fnr_at(self, fpr: float) -> float:
        """fnr at ``fpr``: its listed value if ``fpr`` is listed, else the value at the next listed
        rate above (a lower bound still: the curve is nonincreasing)."""
        index = int(np.searchsorted(self.fpr, fpr - 1e-12 * max(fpr, 1e-300), side="left"))
        if not (0 <= fpr <= 1) or index >= self.fpr.size:
            raise InvalidParameterError(f"a false-positive rate must lie in [0, 1], got {fpr!r}")
        return float(self.fnr[index])

    def gdp_curve(self) -> np.ndarray | None:
        """G_mu at :attr:`fpr` (below :attr:`fnr`: a sound, looser summary), None without mu."""
        return None if self.gdp_mu is None else gaussian_tradeoff(self.gdp_mu, self.fpr)

    def as_dict(self) -> dict[str, object]:
        """The JSON form: ``tradeoff`` as a list of ``{"fpr": a, "fnr": b}``."""
        points = [{"fpr": float(a), "fnr": float(b)} for a, b in zip(self.fpr, self.fnr, strict=True)]
        return {
            "tradeoff_kind": self.kind,
            "tradeoff_note": self.how,
            "tradeoff": points,
            "gdp_mu": self.gdp_mu,
            "gdp_kind": self.gdp_kind,
            "gdp_note": self.gdp_note,
        }


def _alphas(fpr: np.ndarray) -> np.ndarray:
    values = np.asarray(fpr, dtype=float)
    if not np.all((values >= 0) & (values <= 1)):
        raise InvalidParameterError("false-positive rates must lie in [0, 1]")
    return values


def gaussian_tradeoff(mu: float, fpr: np.ndarray) -> np.ndarray:
    """G_mu(a) = Phi(Phi^-1(1 - a) - mu): the exact trade-off curve of N(0, 1) against N(mu, 1)
    (Dong, Roth & Su 2022, Definition 2.6), computed as Phi(-Phi^-1(a) - mu) so that small a
    keep their digits."""
    if not (math.isfinite(mu) and mu >= 0):
        raise InvalidParameterError(f"mu must be a finite number >= 0, got {mu!r}")
    alphas = _alphas(fpr)
    with np.errstate(divide="ignore"):
        return np.clip(special.ndtr(-special.ndtri(alphas) - mu), 0.0, 1.0)


def laplace_tradeoff(epsilon: float, fpr: np.ndarray) -> np.ndarray:
    """The exact trade-off curve of Lap(0, 1) against Lap(epsilon, 1) (Dong, Roth & Su 2022,
    Appendix A; the likelihood-ratio test thresholds x): 1 - e^eps a for a < e^-eps / 2,
    e^-eps / (4 a) up to a = 1/2, e^-eps (1 - a) beyond."""
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise InvalidParameterError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    a = _alphas(fpr)
    low = math.exp(-epsilon) / 2
    with np.errstate(divide="ignore"):
        middle = np.exp(-epsilon) / (4 * np.maximum(a, 1e-300))
    curve = np.where(a < low, 1 - np.exp(epsilon) * a, np.where(a <= 0.5, middle, np.exp(-epsilon) * (1 - a)))
    return np.clip(curve, 0.0, 1.0)


def _gaussian_mu(counts: Sequence[tuple[Guarantee, int]]) -> float:
    return math.sqrt(
        sum(k * (g.sensitivity / g.sigma) ** 2 for g, k in counts if isinstance(g, GaussianNoise))
    )


def _exact(counts: Sequence[tuple[Guarantee, int]], fpr: np.ndarray) -> tuple[np.ndarray, str] | None:
    """The closed-form curve and how it was had, or None when the list has none."""
    if all(isinstance(g, GaussianNoise) for g, _ in counts):
        mu = _gaussian_mu(counts)
        return gaussian_tradeoff(mu, fpr), f"Gaussian noise composed exactly: G_mu with mu = {mu:.6g}"
    if len(counts) != 1 or counts[0][1] != 1:
        return None
    g = counts[0][0]
    if isinstance(g, LaplaceNoise):
        eps = g.sensitivity / g.scale
        return laplace_tradeoff(eps, fpr), f"Laplace noise: the curve of Lap(0,1) against Lap({eps:.6g},1)"
    if isinstance(g, PureDP | ApproxDP):
        delta = g.delta if isinstance(g, ApproxDP) else 0.0
        curve = tradeoff_curve_epsilon_delta(g.epsilon, delta, fpr)
        return curve, f"the (epsilon, delta) = ({g.epsilon:.6g}, {delta:.3g}) curve, exact for that guarantee"
    return None


def _envelope(pairs: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """sup over the (eps, delta) rows of ``pairs`` of f_{eps,delta} at ``alphas`` (Proposition
    2.12), in chunks of rows."""
    curve = np.zeros_like(alphas)
    keep = pairs[pairs[:, 1] < 1]
    for chunk in np.array_split(keep, max(1, keep.shape[0] // 256)):
        eps, delta = chunk[:, :1], chunk[:, 1:]
        with np.errstate(over="ignore", invalid="ignore"):
            below = 1 - delta - np.exp(eps) * alphas[None, :]
        above = np.exp(-eps) * (1 - delta - alphas[None, :])
        below = np.where(alphas[None, :] > 0, below, 1 - delta)
        curve = np.maximum(curve, np.maximum(below, above).max(axis=0))
    return np.clip(curve, 0.0, 1.0)


def _sides(pld: PrivacyLossDistribution | TwoSided) -> tuple[PrivacyLossDistribution, ...]:
    return (pld.remove, pld.add) if isinstance(pld, TwoSided) else (pld,)


def _top_loss(pld: PrivacyLossDistribution | TwoSided) -> float:
    """The largest finite loss with mass (delta is its infinite-loss mass beyond it)."""
    return max(float(side.losses[side.pmf > 0].max(initial=0.0)) for side in _sides(pld))


def _pld_epsilons(pld: PrivacyLossDistribution | TwoSided) -> np.ndarray:
    """The epsilons at which the profile is read for the curve: the atoms of a discrete PLD (its
    curve's kinks), else a regular grid up to where delta falls to 1e-12."""
    if all(side.mu == 0 for side in _sides(pld)):
        atoms = np.unique(
            np.concatenate([side.losses[(side.pmf > 0) & (side.losses > 0)] for side in _sides(pld)])
        )
        if atoms.size > ATOM_EPSILONS:
            atoms = atoms[np.linspace(0, atoms.size - 1, ATOM_EPSILONS).astype(int)]
        return np.concatenate([[0.0], atoms])
    top = pld.epsilon(pld.infinity + 1e-12 * (1 - pld.infinity))
    return np.linspace(0.0, top, ENVELOPE_EPSILONS)


def _bound(counts: Sequence[tuple[Guarantee, int]], fpr: np.ndarray) -> tuple[np.ndarray, str, str]:
    """The lower bound on the curve (curve, kind, how)."""
    if not_applicable_reason(counts) is None:
        pld = pld_of(counts)
        epsilons = _pld_epsilons(pld)
        pairs = np.column_stack([epsilons, pld.deltas(epsilons)])
        how = f"sup of the (eps, delta(eps)) curves of the pessimistic PLD at {epsilons.size} epsilons"
        return _envelope(pairs, fpr), PLD_BOUND, how
    pairs = np.asarray(method_profile_pairs(counts), dtype=float).reshape(-1, 2)
    how = f"sup of the (eps, delta) curves of the tightest accountant at {pairs.shape[0]} deltas"
    return _envelope(pairs, fpr), PROFILE_BOUND, how


def _no_gdp(counts: Sequence[tuple[Guarantee, int]]) -> str | None:
    """Why no mu is proven for the list, or None."""
    for g, _ in counts:
        if isinstance(g, ApproxDP) and g.delta > 0:
            return "an (epsilon, delta) guarantee with delta > 0 is not mu-GDP for any mu"
        if isinstance(g, Subsampled):
            return "no mu-GDP bound is proven here for subsampled mechanisms"
        if not isinstance(g, GaussianNoise | LaplaceNoise | PureDP | ApproxDP):
            return f"no mu-GDP bound is proven here for {type(g).__name__} (zCDP and RDP do not imply one)"
    return None


def _fits(mu: float, epsilons: np.ndarray, deltas: np.ndarray) -> bool:
    """Whether delta(eps) <= delta_mu(eps) at every eps in [0, epsilons[-1]] follows from the
    profile read at ``epsilons``: both are nonincreasing, so delta(e_i) <= delta_mu(e_{i+1})
    suffices on [e_i, e_{i+1}]."""
    return bool(np.all(deltas[:-1] <= gaussian_delta(epsilons[1:], mu)))


@functools.lru_cache(maxsize=32)
def _discrete_mu(counts: tuple[tuple[Guarantee, int], ...]) -> float | None:
    """The smallest mu (an upper bound, relative GDP_RTOL) with the discrete PLD's profile below
    the Gaussian one at every eps >= 0 (Corollary 2.13); None if none fits up to mu = 1000. The
    loss is bounded (no infinite mass), so delta is 0 past its top atom."""
    pld = pld_of(counts)
    if pld.infinity > 0:
        return None
    top = _top_loss(pld)
    if top <= 0:
        return 0.0
    epsilons = np.linspace(0.0, top, GDP_EPSILONS)
    deltas = pld.deltas(epsilons)
    deltas[-1] = 0.0  # no finite loss above the top atom: delta(top) = 0
    high = 1.0
    while not _fits(high, epsilons, deltas):
        high *= 2
        if high > 1000:
            return None
    low = 0.0
    while high - low > GDP_RTOL * high:
        middle = (low + high) / 2
        low, high = (low, middle) if _fits(middle, epsilons, deltas) else (middle, high)
    return high


def _gdp(counts: Sequence[tuple[Guarantee, int]]) -> tuple[float | None, str | None, str]:
    reason = _no_gdp(counts)
    if reason is not None:
        return None, None, reason
    mu_gaussian = _gaussian_mu(counts)
    rest = counted([(g, k) for g, k in counts if not isinstance(g, GaussianNoise)])
    if not rest:
        return mu_gaussian, GDP_EXACT, "Gaussian noise only: mu = sqrt(sum k (sensitivity / sigma)^2)"
    mu_rest = _discrete_mu(rest)
    if mu_rest is None:
        return None, None, "no mu up to 1000 fits the releases' privacy profile"
    mu = math.hypot(mu_gaussian, mu_rest)
    note = (
        "smallest mu whose Gaussian profile is checked to lie above the PLD's at every epsilon "
        "(the releases are mu-GDP; the true mu may be smaller)"
    )
    if mu_gaussian > 0:
        note += f"; Gaussian noise adds exactly: mu^2 = {mu_gaussian:.4g}^2 + {mu_rest:.4g}^2"
    return mu, GDP_BOUND, note


def tradeoff_of(
    guarantees: Sequence[Guarantee | tuple[Guarantee, int]], fpr: np.ndarray | None = None
) -> TradeOff:
    """The trade-off curve of the composed list at ``fpr`` (default :data:`FPR_GRID`) and its
    mu-GDP summary: exact where the module doc says so, otherwise a lower bound on the attacker's
    fnr (sound for privacy); the kind is in :attr:`TradeOff.kind`. An empty list releases
    nothing: fnr = 1 - fpr exactly, mu = 0."""
    alphas = FPR_GRID if fpr is None else _alphas(fpr)
    counts = counted(guarantees)
    if not counts:
        return TradeOff(alphas, 1 - alphas, EXACT, "nothing released: random guessing", 0.0, GDP_EXACT, "")
    exact = _exact(counts, alphas)
    if exact is not None:
        curve, how, kind = exact[0], exact[1], EXACT
    else:
        curve, kind, how = _bound(counts, alphas)
    mu, gdp_kind, note = _gdp(counts)
    return TradeOff(alphas, curve, kind, how, mu, gdp_kind, note)


__all__ = [
    "EXACT",
    "FPR_GRID",
    "GDP_BOUND",
    "GDP_EXACT",
    "PLD_BOUND",
    "PROFILE_BOUND",
    "TradeOff",
    "gaussian_tradeoff",
    "laplace_tradeoff",
    "tradeoff_of",
]
