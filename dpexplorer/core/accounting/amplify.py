"""Privacy amplification by subsampling for the (epsilon, delta) and Renyi accountants.

* (epsilon, delta): a mechanism that is (eps, delta)-DP, run on a Poisson subsample of rate q
  (add/remove) or on m of N rows drawn without replacement (replace, q = m/N), is
  (log(1 + q (e^eps - 1)), q delta)-DP (Balle, Barthe & Gaboardi 2018, Theorems 8 and 10).
  Upper bounds.
* Renyi DP, Poisson subsampling only: for integer orders a,
  eps(a) <= 1/(a-1) log( (1-q)^(a-1) (1 + (a-1) q) + C(a,2) q^2 (1-q)^(a-2) e^eps_M(2)
                         + 3 sum_{l>=3} C(a,l) q^l (1-q)^(a-l) e^((l-1) eps_M(l)) )
  for any mechanism with Renyi curve eps_M (Zhu & Wang 2019, "Poisson subsampled Renyi
  differential privacy", Theorem 6), and for Gaussian noise the exact
  1/(a-1) log sum_l C(a,l) (1-q)^(a-l) q^l e^((l^2 - l) / (2 sigma^2)) (Mironov, Talwar & Zhang
  2019, Section 3.3 and Theorem 11: removal is the worse direction). Non-integer orders take the
  value at the next integer (Renyi divergence grows with the order); orders above MAX_ORDER get
  +inf. Upper bounds. Sampling without replacement has no Renyi bound here (None).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import special

MAX_ORDER = 256
"""Largest integer order computed for a subsampled Renyi curve."""


def amplified_epsilon(epsilon: float, rate: float) -> float:
    """log(1 + q (e^eps - 1)): the epsilon of an eps-DP mechanism after subsampling at rate q
    (Balle, Barthe & Gaboardi 2018, Theorems 8 and 10). Upper bound."""
    if epsilon > 700:
        return epsilon + math.log(rate)  # log(q e^eps) up to a term below 1e-300
    return math.log1p(rate * math.expm1(epsilon))


def _log_binomials(order: int) -> np.ndarray:
    l_values = np.arange(order + 1)
    return special.gammaln(order + 1) - special.gammaln(l_values + 1) - special.gammaln(order - l_values + 1)


def _gaussian_integer(order: int, q: float, mu: float) -> float:
    l_values = np.arange(order + 1)
    logs = _log_binomials(order) + (order - l_values) * math.log1p(-q) + l_values * math.log(q)
    logs = logs + (l_values * l_values - l_values) * mu * mu / 2
    return float(special.logsumexp(logs)) / (order - 1)


def _general_integer(order: int, q: float, base: np.ndarray) -> float:
    """Zhu & Wang 2019, Theorem 6, at integer ``order``; base[l] = eps_M(l) for l = 2..order."""
    log_1q = math.log1p(-q)
    terms = [(order - 1) * log_1q + math.log1p((order - 1) * q)]
    log_binom = _log_binomials(order)
    terms.append(log_binom[2] + 2 * math.log(q) + (order - 2) * log_1q + base[2])
    for l_value in range(3, order + 1):
        terms.append(
            math.log(3)
            + log_binom[l_value]
            + l_value * math.log(q)
            + (order - l_value) * log_1q
            + (l_value - 1) * base[l_value]
        )
    return float(special.logsumexp(terms)) / (order - 1)


def poisson_rdp(
    orders: np.ndarray, q: float, base_curve: Callable[[np.ndarray], np.ndarray], gaussian_mu: float | None
) -> np.ndarray:
    """Renyi curve (an upper bound) at ``orders`` of a mechanism subsampled by Poisson sampling at
    rate q; ``base_curve(orders)`` gives the base's curve (used unless ``gaussian_mu`` is set)."""
    integers = np.arange(2, MAX_ORDER + 1)
    if gaussian_mu is not None:
        table = np.array([_gaussian_integer(int(a), q, gaussian_mu) for a in integers])
    else:
        base = np.concatenate([[0.0, 0.0], base_curve(integers.astype(float))])
        table = np.array([_general_integer(int(a), q, base) for a in integers])
    index = np.ceil(np.maximum(np.asarray(orders, dtype=float), 2.0)).astype(int) - 2
    padded = np.append(table, np.inf)
    return padded[np.minimum(index, table.size)]
