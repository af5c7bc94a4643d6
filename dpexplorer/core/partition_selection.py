"""Private partition selection by a noisy threshold: which group keys to release when the keys
themselves are private (the values that occur in the data).

Each candidate key's count is the number of distinct persons with a row in it, after bounding
each person to at most k keys (so one person changes at most k counts, each by 1). The count gets
discrete Laplace noise Z of scale t/s (P(Z = z) proportional to r^|z|, r = e^(-s/t)), and the key
is kept when count + Z >= tau. Guarantee (Korolova, Kenthapadi, Mishra & Ntoulas 2009; Wilson et
al. 2020, Theorem 1; Gopi et al. 2020; Desfontaines, Voss, Gipson & Mandayam 2022): (eps, delta)-DP
with

* eps = k s / t (the kept keys' noisy counts: discrete Laplace, l1 sensitivity k; CKS 2020),
* delta = 1 - (1 - P(1 + Z >= tau))^k: the chance that one of the at most k keys that exist only
  because of the added person (count 1) is kept; P(Z >= m) = r^m / (1 + r) for m >= 1.

Everything here is exact arithmetic on the discrete law (floats only in the final exp/log, with
the threshold chosen so that the float delta is at most the target by a relative margin of 1e-9).
The release path of private keys is :mod:`dpexplorer.release.partition_paths`; the data layer
fills :class:`Candidates` (dpexplorer.data.grouped)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from dpexplorer.core.errors import InvalidParameterError


def tail(t: int, s: int, m: int) -> float:
    """P(Z >= m) for Z discrete Laplace of scale t/s: r^m / (1 + r) for m >= 1 (r = e^(-s/t)),
    1 - r^(1-m) / (1 + r) for m <= 0 (by symmetry, P(Z >= m) = 1 - P(Z <= m - 1))."""
    r = math.exp(-s / t)
    if m >= 1:
        return r**m / (1 + r)
    return 1 - r ** (1 - m) / (1 + r)


def keep_probability(count: int, t: int, s: int, threshold: int) -> float:
    """P(count + Z >= threshold): the chance a key with ``count`` persons is kept."""
    return tail(t, s, threshold - count)


def selection_delta(t: int, s: int, threshold: int, max_keys: int) -> float:
    """delta = 1 - (1 - P(1 + Z >= threshold))^k (module docstring): exact for the worst
    neighbour (a person adding k new keys), an upper bound for any other."""
    if max_keys < 1:
        raise InvalidParameterError(f"keys per person must be at least 1, got {max_keys}")
    p = keep_probability(1, t, s, threshold)
    return -math.expm1(max_keys * math.log1p(-p)) if p < 1 else 1.0


def threshold_for(t: int, s: int, delta: float, max_keys: int) -> int:
    """The smallest threshold tau >= 2 whose :func:`selection_delta` is at most ``delta``
    (times 1 - 1e-9, a margin for the floats)."""
    if not 0 < delta < 1:
        raise InvalidParameterError(f"δ must be in (0, 1), got {delta}")
    r = math.exp(-s / t)
    # delta <= k p suffices: p = r^(tau-1) / (1 + r) <= delta / k  =>  tau - 1 >= log(delta (1+r) / k) / log r
    tau = max(2, math.ceil(math.log(delta * (1 + r) / max_keys) / math.log(r)) + 1)
    while tau > 2 and selection_delta(t, s, tau - 1, max_keys) <= delta * (1 - 1e-9):
        tau -= 1
    while selection_delta(t, s, tau, max_keys) > delta * (1 - 1e-9):
        tau += 1
    return tau


def count_at_probability(t: int, s: int, threshold: int, probability: float) -> int:
    """The smallest count kept with at least ``probability`` (a public summary of the rule: a
    key with this many persons or more is kept at least that often)."""
    count = max(0, threshold - 1)
    while keep_probability(count, t, s, threshold) < probability:
        count += 1
    return count


SCALE_PRECISION_BITS = 10
"""The noise scale t/s has t >= 2^10 (as the release's other discrete scales): rounding it up
costs under 0.1 % of the selection's epsilon."""


def selection_rule(epsilon: float, delta: float, max_keys: int) -> tuple[int, int, int, float]:
    """(t, s, threshold, exact delta) of the selection at a declared (epsilon, delta) with k keys
    per person: t/s >= k / epsilon the smallest with s a power of two and t >= 2^10 (so the
    charged k s / t <= epsilon), the threshold of :func:`threshold_for`, and its
    :func:`selection_delta` (<= delta). Public facts only; used by the release path and the
    steward's views alike."""
    if not 0 < epsilon < math.inf:
        raise InvalidParameterError(f"the key selection's ε must be positive, got {epsilon}")
    target = Fraction(max_keys) / Fraction(epsilon)
    exponent = target.numerator.bit_length() - target.denominator.bit_length()
    exponent -= Fraction(2) ** exponent > target  # floor(log2 target), exactly
    s = 2 ** max(0, SCALE_PRECISION_BITS - exponent)
    t = -((-target.numerator * s) // target.denominator)  # ceil(target * s)
    threshold = threshold_for(t, s, delta, max_keys)
    return t, s, threshold, selection_delta(t, s, threshold, max_keys)


@dataclass(frozen=True)
class Candidates:
    """The candidate keys of a private partition selection: PRIVATE (the keys that occur after
    contribution bounding, and their numbers of persons), for the release path and the
    steward's views only. ``persons[i]`` is candidate i's number of distinct persons (rows, when
    each row is a person); ``keys[i]`` its key values, one per key column; ``max_keys`` the
    bound k on keys per person (public); ``epsilon`` and ``delta`` the selection's declared
    budget (public)."""

    persons: tuple[int, ...]
    keys: tuple[tuple[str, ...], ...]
    max_keys: int
    epsilon: float
    delta: float

    def keep_probabilities(self, t: int, s: int, threshold: int) -> list[float]:
        """Each candidate's chance of being kept (a private fact: the steward's view only)."""
        return [keep_probability(c, t, s, threshold) for c in self.persons]

    def describe(self, labels: tuple[str, ...]) -> str:
        """For the steward only (private: the candidates and their counts): the rule, and each
        candidate's number of persons and chance of being kept, least likely first."""
        t, s, threshold, delta = selection_rule(self.epsilon, self.delta, self.max_keys)
        chances = sorted(zip(self.keep_probabilities(t, s, threshold), labels, self.persons, strict=True))
        shown = "; ".join(f"{label}: {n:,} persons, kept with probability {p:.3g}" for p, label, n in chances)
        return (
            f"Keys selected privately: a key is released when its number of persons plus discrete "
            f"Laplace noise (scale {t}/{s}) reaches {threshold} (exact δ {delta:.3g}). "
            f"{len(self.persons):,} candidate key(s) occur (private; never published): {shown}."
        )
