"""The denominator of a workload release, drawn exactly (:mod:`dpexplorer.core.row_count`).

Under replace the number of rows n is public and is the denominator. Under add/remove it is
private: the release first spends the declared share epsilon_n of epsilon on
n_hat = max(1, n + Z), Z discrete Laplace of scale t/s >= 1/epsilon_n (Canonne, Kamath & Steinke
2020, Algorithm 2; (s/t)-DP with s/t <= epsilon_n, the clamp is post-processing), then runs the
mechanism at epsilon - epsilon_n with Delta = 1/n_hat. Everything built from n_hat (grid, scales,
threshold in grid units) is published under ``dp_outputs``; nothing is built from n."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpexplorer.core.mechanisms.base import WorkloadInput
from dpexplorer.core.mechanisms.pmw import check_any_workload, workload_answers
from dpexplorer.core.row_count import count_is_private
from dpexplorer.release import samplers
from dpexplorer.release.exact import discrete_scale
from dpexplorer.release.rational import float_up
from dpexplorer.release.samplers import BitSource


def true_counts(query: WorkloadInput) -> tuple[int, ...]:
    """(W h)_i on D, the workload's true counts (integers by construction; PRIVATE: a release
    uses them only in ``draw``). The shape check depends on the declared query only."""
    check_any_workload(query)
    counts = np.rint(workload_answers(query.workload, np.asarray(query.histogram_d)))
    return tuple(int(c) for c in counts)


@dataclass(frozen=True)
class Denominator:
    """How a release turns counts into shares. ``rows`` is the true n (private under add/remove:
    used only by ``draw``, after the charge); ``rest`` the epsilon left for the mechanism,
    exactly; ``scale`` the count's discrete Laplace scale (t, s), None when n is public."""

    rows: int
    rest: Fraction
    scale: tuple[int, int] | None

    @classmethod
    def for_query(cls, query: WorkloadInput, params: Mapping[str, Any]) -> Denominator:
        epsilon = Fraction(float(params["epsilon"]))
        rows = int(np.sum(query.histogram_d))
        if not count_is_private(query.relation):
            return cls(rows, epsilon, None)
        spent = epsilon * Fraction(float(params["count_share"]))
        return cls(rows, epsilon - spent, discrete_scale(1 / spent))

    def draw(self, bits: BitSource) -> int:
        """n under replace; max(1, n + Z) under add/remove (module docstring)."""
        if self.scale is None:
            return self.rows
        return max(1, self.rows + samplers.discrete_laplace(Fraction(*self.scale), bits))

    def describe(self) -> dict[str, Any]:
        """Public: what the denominator is and what it costs (no value of n)."""
        if self.scale is None:
            return {"row_count": "public (replace relation): the number of rows is the denominator"}
        t, s = self.scale
        return {
            "row_count": (
                f"private (add/remove): noisy row count max(1, n + Z), Z discrete Laplace of "
                f"scale {t}/{s}, released under dp_outputs"
            ),
            "row_count_epsilon": float_up(Fraction(s, t)),
            "epsilon_after_row_count": float(self.rest),
        }
