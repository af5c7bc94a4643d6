"""The privacy loss of t releases as a random walk (Dwork & Roth 2014, section 3.5.2, the proof
of Theorem 3.20; Dwork, Rothblum & Vadhan 2010).

Release i draws its output o_i from M_i(D); its privacy loss is L_i = ln p_D(o_i) / p_D'(o_i).
For t independent releases the loss of the whole transcript is the sum S_t = L_1 + ... + L_t:
a random walk whose steps are bounded by epsilon (each release is epsilon-DP). Two step laws:

* ``randomized_response``: L = +eps with probability e^eps / (1 + e^eps), else -eps (the
  worst case among epsilon-DP mechanisms for the mean loss). E[L] = eps tanh(eps / 2).
* ``laplace``: a count with Lap(1/eps) noise (sensitivity 1): L = eps (|Z - 1| - |Z|),
  Z ~ Lap(1/eps). E[L] = eps + e^-eps - 1 (the KL divergence of the two Laplace laws).

Closed forms drawn beside the paths (all exact formulas, each a bound as stated):

* ``mean``: t E[L], exact;
* ``mean_bound``: t eps (e^eps - 1), Dwork & Roth's bound on the mean (Lemma 3.18) - never below
  the exact mean;
* the concentration band t E[L] +- eps sqrt(2 t ln(1/delta')): by Hoeffding's inequality
  (centred steps lie in an interval of length 2 eps) each side is crossed at t with
  probability at most delta';
* ``advanced``: eps' = t eps (e^eps - 1) + eps sqrt(2 t ln(1/delta')), advanced composition
  (Dwork & Roth 2014, Theorem 3.20): P(S_t > eps') <= delta'; an upper bound;
* ``basic``: t eps, basic composition (Theorem 3.16): S_t never exceeds it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpexplorer.core.accounting.classic import drv_epsilon
from dpexplorer.core.errors import InvalidParameterError

StepLaw = Literal["randomized_response", "laplace"]
STEP_LAWS: dict[str, str] = {
    "randomized_response": "randomized response (±ε, the worst case)",
    "laplace": "Laplace noise on a count",
}
MAX_CELLS = 2_000_000
"""paths x releases simulated at most (16 MB of float64)."""


def step_mean(epsilon: float, law: StepLaw) -> float:
    """E[L] of one release's privacy loss under M(D), exact (see the module docstring)."""
    if law == "randomized_response":
        return float(epsilon * math.tanh(epsilon / 2))
    if law == "laplace":
        return float(epsilon + math.expm1(-epsilon))
    raise InvalidParameterError(f"unknown step law {law!r}: use {' or '.join(STEP_LAWS)}")


def mean_bound(epsilon: float, t: np.ndarray | int) -> np.ndarray:
    """t eps (e^eps - 1): Dwork & Roth 2014, Lemma 3.18, an upper bound on E[S_t]."""
    return np.asarray(t, dtype=float) * epsilon * math.expm1(epsilon)


def band_halfwidth(epsilon: float, delta_prime: float, t: np.ndarray | int) -> np.ndarray:
    """eps sqrt(2 t ln(1/delta')): S_t leaves t E[L] +- this on each side with probability at
    most delta' (Hoeffding; the same deviation term as Theorem 3.20)."""
    return epsilon * np.sqrt(2.0 * np.asarray(t, dtype=float) * math.log(1.0 / delta_prime))


def advanced_epsilon(epsilon: float, delta_prime: float, t: np.ndarray | int) -> np.ndarray:
    """Theorem 3.20's eps' for t releases of eps each (via
    :func:`dpexplorer.core.accounting.classic.drv_epsilon`, the accountant's own formula)."""
    ts = np.atleast_1d(np.asarray(t, dtype=int))
    values = np.array([drv_epsilon([(epsilon, 0.0, int(k))], delta_prime) for k in ts])
    return values if np.ndim(t) else values[0]


def sample_steps(epsilon: float, law: StepLaw, size: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """Independent privacy losses L of one release each, drawn under M(D)."""
    if law == "randomized_response":
        plus = rng.random(size) < 1.0 / (1.0 + math.exp(-epsilon))  # e^eps / (1 + e^eps)
        return np.where(plus, epsilon, -epsilon)
    if law == "laplace":
        z = rng.laplace(0.0, 1.0 / epsilon, size)
        return epsilon * (np.abs(z - 1.0) - np.abs(z))
    raise InvalidParameterError(f"unknown step law {law!r}: use {' or '.join(STEP_LAWS)}")


@dataclass(frozen=True, eq=False)
class RandomWalk:
    """Sample paths of S_1..S_t and the closed forms at each t (module docstring)."""

    epsilon: float
    delta_prime: float
    law: StepLaw
    releases: np.ndarray
    paths: np.ndarray
    mean: np.ndarray
    mean_bound: np.ndarray
    band_low: np.ndarray
    band_high: np.ndarray
    advanced: np.ndarray
    basic: np.ndarray

    @property
    def share_above_advanced(self) -> float:
        """The share of paths whose loss after all t releases exceeds advanced composition's eps'
        (Theorem 3.20 says: at most delta', in expectation)."""
        return float(np.mean(self.paths[:, -1] > self.advanced[-1]))

    @property
    def share_outside_band(self) -> float:
        """The share of paths outside the band after t releases (at most 2 delta')."""
        final = self.paths[:, -1]
        return float(np.mean((final > self.band_high[-1]) | (final < self.band_low[-1])))


def random_walk(
    epsilon: float, t: int, delta_prime: float, paths: int, law: StepLaw, seed: int
) -> RandomWalk:
    """``paths`` sample paths of the summed privacy loss of ``t`` releases of ``epsilon`` each,
    seeded (exploration only), with the closed forms of the module docstring."""
    if not (math.isfinite(epsilon) and 0 < epsilon <= 20):
        raise InvalidParameterError(f"ε must be in (0, 20], got {epsilon}")
    if not 0 < delta_prime < 1:
        raise InvalidParameterError(f"δ' must be in (0, 1), got {delta_prime}")
    if t < 1 or paths < 1:
        raise InvalidParameterError("the number of releases t and of paths must be at least 1")
    if t * paths > MAX_CELLS:
        raise InvalidParameterError(
            f"{paths} paths of {t} releases is more than {MAX_CELLS:,} steps: draw fewer paths"
        )
    rng = np.random.default_rng(seed)
    walks = np.cumsum(sample_steps(epsilon, law, (paths, t), rng), axis=1)
    ts = np.arange(1, t + 1)
    mean = ts * step_mean(epsilon, law)
    half = band_halfwidth(epsilon, delta_prime, ts)
    return RandomWalk(
        epsilon=epsilon,
        delta_prime=delta_prime,
        law=law,
        releases=ts,
        paths=walks,
        mean=mean,
        mean_bound=mean_bound(epsilon, ts),
        band_low=mean - half,
        band_high=mean + half,
        advanced=advanced_epsilon(epsilon, delta_prime, ts),
        basic=ts * float(epsilon),
    )
