"""The number of rows n as a private fact, for the workload mechanisms that answer in shares of rows.

Under add/remove, n differs between neighbours (n against n + 1), so it is private: no noise
scale, grid, threshold or published field may be computed from it. Under replace, n is the same
on both sides and public. Sparse vector, PMW and MWEM answer counting queries as shares of the
rows, so they need a denominator. Their choice (issue 15, option b):

* under replace: the public n;
* under add/remove: a declared share of epsilon buys a noisy row count
  n_hat = max(1, n + Z), Z Laplace of scale 1/epsilon_n (discrete Laplace in a release), which is
  epsilon_n-DP (Laplace mechanism, Dwork & Roth 2014, Theorem 3.6; the clamp is post-processing,
  Proposition 2.1). Given n_hat, the share c_i / n_hat of a counting query moves by at most
  1 / n_hat between neighbours (the count moves by at most 1, n_hat is fixed), so the rest of the
  mechanism, calibrated to Delta = 1 / n_hat at epsilon - epsilon_n, is (epsilon - epsilon_n)-DP
  for every value of n_hat; the pair is epsilon-DP by basic composition (Theorem 3.16).

BLR needs no denominator: its score in counts, max_i |c_i - n q_i(h)| with q_i(h) in [0, 1], moves
by at most 1 when one row is added (see :mod:`.mechanisms.blr`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dpexplorer.core.mechanisms.params import Param

COUNT_SHARE = Param(
    name="count_share",
    label="Share of ε for the row count",
    type="float",
    default=0.05,
    low=0.01,
    high=0.5,
    help=(
        "Under add/remove the number of rows is itself private (one person more or less changes "
        "it), so this share of ε buys a noisy row count that turns counts into shares of rows. "
        "The default 5% costs little accuracy on a few thousand rows or more. Ignored under "
        "replace, where the number of rows is public."
    ),
)


def count_is_private(relation: str) -> bool:
    """Whether n is private under ``relation`` (add/remove: yes; replace: n is public)."""
    return relation != "replace"


def split_epsilon(params: Mapping[str, Any], relation: str) -> tuple[float, float]:
    """(epsilon spent on the noisy row count, epsilon left for the mechanism): (0, epsilon)
    under replace; the declared share under add/remove. The two add up to epsilon (exactly in
    real arithmetic; the release paths redo this with Fractions)."""
    epsilon = float(params["epsilon"])
    if not count_is_private(relation):
        return 0.0, epsilon
    spent = epsilon * float(params["count_share"])
    return spent, epsilon - spent


def noisy_row_counts(
    n: float, params: Mapping[str, Any], relation: str, rng: np.random.Generator, size: int
) -> np.ndarray:
    """``size`` draws of the denominator the mechanism uses on a dataset of ``n`` rows: n itself
    under replace, max(1, n + Lap(1 / epsilon_n)) under add/remove (module docstring). For
    exploration (continuous Laplace); a release draws discrete Laplace instead."""
    spent, _ = split_epsilon(params, relation)
    if spent == 0.0:
        return np.full(size, float(n))
    return np.maximum(1.0, n + rng.laplace(scale=1.0 / spent, size=size))


def denominator_note(relation: str, n_d: float, n_d_prime: float) -> str:
    """What the exact views condition on, in words."""
    if not count_is_private(relation):
        return f"the number of rows ({n_d:,.0f}) is public under replace"
    return (
        f"D has {n_d:,.0f} rows, D' {n_d_prime:,.0f}. The mechanism divides by a noisy row count "
        "n̂ (bought with its own share of ε); the exact views fix n̂ at D's true count, "
        f"{n_d:,.0f}, for both (a release uses its own noisy n̂, never the true count)"
    )
