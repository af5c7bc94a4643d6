"""Guarantee types: what a mechanism promises, in the richest form it has.

Mechanisms return one of these from ``Mechanism.guarantee``; the accountant composes lists of
them. The noise types (:class:`LaplaceNoise`, :class:`GaussianNoise`) carry the exact
privacy-loss distribution implicitly: the accountant derives pure/approximate DP, zCDP, RDP and
the PLD from them. All are immutable values."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PureDP:
    """epsilon-DP (delta = 0)."""

    epsilon: float


@dataclass(frozen=True)
class ApproxDP:
    """(epsilon, delta)-DP."""

    epsilon: float
    delta: float


@dataclass(frozen=True)
class ZCDP:
    """rho-zero-concentrated DP (Bun & Steinke 2016), optionally with a delta (approximate zCDP)."""

    rho: float
    delta: float = 0.0


@dataclass(frozen=True)
class RDPCurve:
    """Renyi DP: epsilon_RDP(order) at each order alpha > 1 (Mironov 2017)."""

    orders: tuple[float, ...]
    epsilons: tuple[float, ...]


@dataclass(frozen=True)
class LaplaceNoise:
    """Laplace noise of ``scale`` b on a query of l1 ``sensitivity``: exact PLD known,
    pure epsilon = sensitivity / scale."""

    scale: float
    sensitivity: float = 1.0


@dataclass(frozen=True)
class GaussianNoise:
    """Gaussian noise of standard deviation ``sigma`` on a query of l2 ``sensitivity``: exact PLD
    known, rho = sensitivity^2 / (2 sigma^2)."""

    sigma: float
    sensitivity: float = 1.0


SCHEMES = ("poisson", "without_replacement")
"""How a subsample is drawn: each row kept independently with probability ``rate`` (Poisson;
neighbours differ by adding or removing a row), or ``rate`` = m/N, m rows drawn without
replacement from N (neighbours differ by replacing a row)."""


Amplifiable = LaplaceNoise | GaussianNoise | PureDP
"""The guarantees whose amplification by subsampling the accountants know (a
:class:`Subsampled` base); usable with ``isinstance``."""


@dataclass(frozen=True)
class Subsampled:
    """``base`` (Laplace or Gaussian noise, or pure epsilon-DP) run on a secret random subsample
    of the data drawn by ``scheme`` at ``rate`` (see SCHEMES). The amplification is a claim
    about how the data were drawn: the accountant believes it; the steward must make it true.
    For ``without_replacement`` the base is taken as its guarantee under the replace relation."""

    base: Amplifiable
    rate: float
    scheme: str = "poisson"


Guarantee = PureDP | ApproxDP | ZCDP | RDPCurve | LaplaceNoise | GaussianNoise | Subsampled


def poisson_subsampled(g: Guarantee, rate: float | None, relation: str = "add_remove") -> Guarantee:
    """``g`` as charged under the steward's claim that the data are a secret Poisson sample of
    ``rate`` (None or 1: no claim). Amplified (:class:`Subsampled`) where the accountants have an
    amplification for it (Laplace or Gaussian noise, pure epsilon-DP) and the neighbours add or
    remove a row (Poisson sampling is analysed under that relation); otherwise ``g`` unchanged,
    which stays a valid upper bound (coupled Poisson subsamples of neighbours are neighbours or
    equal, and the hockey-stick divergence is jointly convex)."""
    if rate is None or rate >= 1 or relation != "add_remove":
        return g
    if isinstance(g, Amplifiable):
        return Subsampled(g, rate)
    return g
