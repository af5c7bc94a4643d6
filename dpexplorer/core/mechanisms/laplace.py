"""The Laplace mechanism (scalar and vector, l1 sensitivity).

M(x) = f(x) + (Y_1, ..., Y_d), Y_i ~ Lap(b) independent, b = Delta_1 / epsilon, is epsilon-DP
(Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth 2014, Theorem 3.6; seed 002). Accuracy:
P(|Y| > ln(1/beta) b) = beta for one coordinate, and P(max_i |Y_i| >= ln(d/beta) b) <= beta
(Dwork & Roth 2014, Theorem 3.8); E[Y^2] = 2 b^2 (seed 002: 2/epsilon^2 for a count)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np

from dpexplorer.core import accuracy as acc
from dpexplorer.core.accounting.guarantees import ApproxDP, LaplaceNoise, PureDP
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    NumericInput,
    QueryInput,
    key_selection_guarantee,
    with_key_selection,
)
from dpexplorer.core.mechanisms.params import EPSILON, Param
from dpexplorer.core.mechanisms.registry import register

_PLD_STEP = 1e-4
"""Loss-grid step of the vector delta (upper bound, within about this of the exact value)."""


def laplace_scale(epsilon: float, sensitivity_l1: float) -> float:
    """The scale b = Delta_1 / epsilon that makes the Laplace mechanism epsilon-DP (exact
    calibration, Dwork & Roth 2014, Theorem 3.6)."""
    if not epsilon > 0:
        raise InvalidParameterError(f"ε must be greater than 0; got {epsilon}")
    if not sensitivity_l1 > 0:
        raise InvalidParameterError(
            f"the l1 sensitivity must be greater than 0 (got {sensitivity_l1}); check the query's bounds"
        )
    return float(sensitivity_l1) / float(epsilon)


def laplace_delta(epsilon: np.ndarray | float, shift: float) -> np.ndarray:
    """Exact delta(eps) between Lap(0, 1) and Lap(shift, 1) (either direction; symmetric):
    max(0, 1 - exp((eps - |shift|) / 2)). Derivation: {L > eps} = {x < (|shift| - eps) / 2}."""
    eps = np.asarray(epsilon, dtype=float)
    return np.maximum(0.0, -np.expm1((eps - abs(shift)) / 2.0)) + 0.0


def _coordinate_loss_pmf(shift: float, step: float) -> np.ndarray:
    """The privacy loss L = |Y + shift| - |Y| of one coordinate, Y ~ Lap(1), on the grid
    k * step, k = -K..K, every value rounded UP to the grid. L has atoms at +shift (mass 1/2)
    and -shift (e^-shift / 2) and density e^((l - shift)/2) / 4 on (-shift, shift)."""
    top = int(np.ceil(shift / step))
    edges = np.clip(np.arange(-top - 1, top + 1) * step, -shift, shift)
    cdf = 0.5 * np.exp((edges - shift) / 2.0)  # integral of the density from -shift
    pmf = np.zeros(2 * top + 1)
    pmf[:] = np.diff(cdf - cdf[0])
    pmf[-1] += 0.5
    pmf[int(np.ceil(-shift / step)) + top] += 0.5 * np.exp(-shift)
    return pmf


def vector_laplace_delta(epsilon: np.ndarray | float, shifts: np.ndarray) -> np.ndarray:
    """delta(eps) of d-dimensional Laplace noise of scale 1 between means differing by
    ``shifts`` (in units of b). One nonzero shift: exact (:func:`laplace_delta`). Several: the
    per-coordinate loss distributions are rounded up to a grid of step 1e-4 and convolved, so
    the result is an UPPER bound on the exact delta (pessimistic discretisation, as in
    Koskela et al. 2020), within about 1e-4 of it. Symmetric, so it holds in both directions."""
    nonzero = np.abs(np.asarray(shifts, dtype=float))
    nonzero = nonzero[nonzero > 0]
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    if nonzero.size == 0:
        return np.zeros_like(eps)
    if nonzero.size == 1:
        return laplace_delta(eps, float(nonzero[0]))
    from scipy import signal  # ~0.3 s to import: only for this curve

    pmf = np.array([1.0])
    for shift in nonzero:
        pmf = np.clip(signal.fftconvolve(pmf, _coordinate_loss_pmf(float(shift), _PLD_STEP)), 0, None)
    losses = (np.arange(pmf.size) - (pmf.size - 1) / 2) * _PLD_STEP
    return np.array([np.sum(pmf * np.maximum(0.0, -np.expm1(e - losses))) for e in eps])


def pure_laplace_profile(epsilons: np.ndarray, shifts: np.ndarray, epsilon: float) -> np.ndarray:
    """delta at each of ``epsilons`` of Laplace coordinates whose means differ by ``shifts``
    (in units of their scales) between D and D', for a mechanism that claims pure ``epsilon``-DP:
    0 at and above it, else :func:`vector_laplace_delta` (an upper bound within ~1e-4)."""
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    return np.where(eps >= epsilon, 0.0, vector_laplace_delta(eps, shifts))


LAPLACE_EPSILON = EPSILON.with_note("Laplace noise of scale b = sensitivity / ε gives exactly ε-DP (δ = 0).")


@register
class LaplaceMechanism(acc.NoisyReleaseMechanism):
    """Laplace noise of scale Delta_1 / epsilon on every coordinate: pure epsilon-DP."""

    name: ClassVar[str] = "laplace"
    label: ClassVar[str] = "Laplace"
    summary: ClassVar[str] = (
        "Adds Laplace noise scaled to the query's l1 sensitivity. Pure ε-DP (δ = 0); "
        "the typical error is sensitivity / ε."
    )
    input_type: ClassVar[type] = NumericInput
    output_kind: ClassVar[Literal["numeric"]] = "numeric"
    params: ClassVar[tuple[Param, ...]] = (LAPLACE_EPSILON,)
    order: ClassVar[int] = 10

    def noise_scale(self, params: Mapping[str, Any], query: QueryInput) -> float:
        """b = Delta_1 / epsilon."""
        query = acc.numeric_query(query)
        return laplace_scale(params["epsilon"], query.sensitivity_l1)

    def guarantee(self, params: Mapping[str, Any], query: QueryInput) -> LaplaceNoise | PureDP | ApproxDP:
        """The Laplace noise's own guarantee (tight under every accountant); by privately
        selected keys, (epsilon + the selection's epsilon, its delta) (:func:`with_key_selection`,
        what the release charges)."""
        if acc.numeric_query(query).partition is not None:
            return key_selection_guarantee(float(params["epsilon"]), query)
        return self.noise(params, query)

    def noise(self, params: Mapping[str, Any], query: QueryInput) -> LaplaceNoise:
        """The noise added (its scale and the sensitivity it is calibrated to), whatever the keys."""
        query = acc.numeric_query(query)
        return LaplaceNoise(self.noise_scale(params, query), query.sensitivity_l1)

    def epsilon_delta(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        """The epsilon asked for (the noise is calibrated to it by :meth:`noise_scale`), delta 0;
        by privately selected keys, plus the selection's (epsilon, delta)."""
        return with_key_selection(float(params["epsilon"]), query)

    def releases(self, params: Mapping[str, Any], query: QueryInput) -> acc.ReleasePair:
        query = acc.numeric_query(query)
        scale = self.noise_scale(params, query)
        i, note = acc.shown_coordinate(query)
        noise = acc.STANDARD_LAPLACE
        return acc.ReleasePair(
            acc.NoisyRelease(noise, float(np.atleast_1d(query.value_d)[i]), scale),
            acc.NoisyRelease(noise, float(np.atleast_1d(query.value_d_prime)[i]), scale),
            i,
            note,
        )

    def _shifts(self, params: Mapping[str, Any], query: NumericInput) -> np.ndarray:
        difference = np.atleast_1d(query.value_d) - np.atleast_1d(query.value_d_prime)
        return difference / self.noise_scale(params, query)

    def privacy_profile(
        self, params: Mapping[str, Any], query: QueryInput, epsilons: np.ndarray
    ) -> np.ndarray:
        """delta(eps) on this pair: exact when one coordinate differs, else an upper bound
        within ~1e-4 (:func:`vector_laplace_delta`)."""
        query = acc.numeric_query(query)
        return vector_laplace_delta(epsilons, self._shifts(params, query))

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        query = acc.numeric_query(query)
        p = self.releases(params, query).d
        dims = np.atleast_1d(query.value_d).size

        def halfwidth(eps: float) -> float:
            return laplace_scale(eps, query.sensitivity_l1) * np.log(1 / (1 - ci_level))

        notes: tuple[str, ...] = ("Error of one coordinate; the Laplace tail bound is exact for it.",)
        if dims > 1:
            notes += (
                f"All {dims} coordinates at once: P(max error >= b ln(d/β)) <= β "
                f"(Dwork & Roth Thm 3.8): {p.scale * np.log(dims / (1 - ci_level)):.4g} "
                f"at {ci_level:.0%}.",
            )
        return acc.release_accuracy(
            p,
            p.loc,
            ci_level,
            bound=lambda alphas: np.exp(-alphas / p.scale),
            bound_name="P(|err| > ln(1/β) b) = β (Dwork & Roth Thm 3.8)",
            curves_vs_epsilon=(acc.error_vs_epsilon(halfwidth, ci_level),),
            curves_vs_n=(acc.error_vs_n(query.n, query.statistic, halfwidth(params["epsilon"]), ci_level),),
            notes=notes,
        )
