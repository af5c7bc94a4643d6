"""The Gaussian mechanism (l2 sensitivity), with two calibrations of sigma.

M(x) = f(x) + N(0, sigma^2 I_d).
- Classical: sigma = sqrt(2 ln(1.25/delta)) Delta_2 / epsilon (Dwork & Roth 2014, Theorem A.1;
  seed 001). Proven only for epsilon < 1.
- Analytic (Balle & Wang 2018, "Improving the Gaussian mechanism for differential privacy",
  Theorem 8 and Algorithm 1): the mechanism is (epsilon, delta)-DP iff
  Phi(mu/2 - epsilon/mu) - e^epsilon Phi(-mu/2 - epsilon/mu) <= delta with mu = Delta_2 / sigma;
  the smallest such sigma is found by root finding on this exact delta(epsilon). Valid for
  every epsilon > 0 and never larger than the classical sigma where both apply.
Accuracy: P(|Y| > t) <= sqrt(2/pi) (sigma/t) exp(-t^2 / (2 sigma^2)) (the Gaussian tail bound of
seed 001, there OCR'd without the 1/t; Dwork & Roth 2014, Appendix A)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np
from scipy import optimize, special, stats

from dpexplorer.core import accuracy as acc
from dpexplorer.core.accounting.guarantees import ApproxDP, GaussianNoise
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import AccuracyReport, NumericInput, QueryInput, with_key_selection
from dpexplorer.core.mechanisms.params import DELTA, EPSILON, Param, choice
from dpexplorer.core.mechanisms.registry import register


def _check(epsilon: float, delta: float, sensitivity_l2: float) -> None:
    if not epsilon > 0:
        raise InvalidParameterError(f"ε must be greater than 0; got {epsilon}")
    if not 0 < delta < 1:
        raise InvalidParameterError(f"δ must be strictly between 0 and 1; got {delta}")
    if not sensitivity_l2 > 0:
        raise InvalidParameterError(
            f"the l2 sensitivity must be greater than 0 (got {sensitivity_l2}); check the query's bounds"
        )


def gaussian_delta(epsilon: np.ndarray | float, mu: float) -> np.ndarray:
    """Exact delta(epsilon) between N(0, 1) and N(mu, 1), either direction (Balle & Wang 2018,
    Theorem 8): Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu), computed in log space."""
    eps = np.asarray(epsilon, dtype=float)
    mu = abs(float(mu))
    if mu == 0:
        return np.zeros_like(eps)
    first = special.ndtr(mu / 2 - eps / mu)
    second = np.exp(eps + special.log_ndtr(-mu / 2 - eps / mu))
    return np.maximum(first - second, 0.0)


def gaussian_sigma_classical(epsilon: float, delta: float, sensitivity_l2: float) -> float:
    """sqrt(2 ln(1.25/delta)) Delta_2 / epsilon (Dwork & Roth 2014, Theorem A.1). Gives
    (epsilon, delta)-DP when epsilon < 1; for epsilon >= 1 it is returned but NOT proven."""
    _check(epsilon, delta, sensitivity_l2)
    return float(np.sqrt(2 * np.log(1.25 / delta)) * sensitivity_l2 / epsilon)


def gaussian_sigma_analytic(epsilon: float, delta: float, sensitivity_l2: float) -> float:
    """The smallest sigma with delta(epsilon) <= delta for the Gaussian mechanism (Balle & Wang
    2018, Algorithm 1, here by brentq on log sigma to relative tolerance 1e-12; the returned sigma
    is rounded up by that tolerance so that it is never below the exact root)."""
    _check(epsilon, delta, sensitivity_l2)

    def excess(log_sigma: float) -> float:
        return float(gaussian_delta(epsilon, 1.0 / np.exp(log_sigma))) - delta

    low, high = -30.0, 30.0  # delta(eps) -> 1 as sigma -> 0 and -> 0 as sigma -> inf
    root = optimize.brentq(excess, low, high, xtol=1e-13, rtol=1e-13)
    return float(np.exp(root) * (1 + 1e-12) * sensitivity_l2)


CALIBRATION = choice(
    "calibration",
    "Calibration",
    default="analytic",
    choices=("analytic", "classical"),
    help=(
        "How σ is chosen from ε and δ. 'analytic' (Balle & Wang 2018) finds the smallest σ that "
        "gives exactly (ε, δ)-DP, for any ε. 'classical' uses σ = √(2 ln(1.25/δ))·sensitivity/ε "
        "from the textbook; it adds more noise and is proven only for ε < 1."
    ),
)

GAUSSIAN_EPSILON = EPSILON.with_note("With the classical calibration keep ε below 1.")


@register
class GaussianMechanism(acc.NoisyReleaseMechanism):
    """Gaussian noise of standard deviation sigma on every coordinate: (epsilon, delta)-DP."""

    name: ClassVar[str] = "gaussian"
    label: ClassVar[str] = "Gaussian"
    summary: ClassVar[str] = (
        "Adds normal noise scaled to the query's l2 sensitivity. (ε, δ)-DP; composes well over "
        "many queries (zCDP) and suits vector queries where few coordinates change."
    )
    input_type: ClassVar[type] = NumericInput
    output_kind: ClassVar[Literal["numeric"]] = "numeric"
    params: ClassVar[tuple[Param, ...]] = (GAUSSIAN_EPSILON, DELTA, CALIBRATION)
    order: ClassVar[int] = 20

    @staticmethod
    def sigma_for(epsilon: float, delta: float, sensitivity_l2: float, calibration: str) -> float:
        """sigma for the given calibration ("analytic" or "classical")."""
        if calibration == "classical":
            return gaussian_sigma_classical(epsilon, delta, sensitivity_l2)
        return gaussian_sigma_analytic(epsilon, delta, sensitivity_l2)

    def noise_scale(self, params: Mapping[str, Any], query: QueryInput) -> float:
        """sigma, from the declared calibration."""
        query = acc.numeric_query(query)
        return self.sigma_for(params["epsilon"], params["delta"], query.sensitivity_l2, params["calibration"])

    def guarantee(self, params: Mapping[str, Any], query: QueryInput) -> GaussianNoise | ApproxDP:
        """The Gaussian noise's own guarantee; by privately selected keys, the (epsilon, delta)
        of :meth:`epsilon_delta` (the selection composed in)."""
        if acc.numeric_query(query).partition is not None:
            return ApproxDP(*self.epsilon_delta(params, query))
        return self.noise(params, query)

    def noise(self, params: Mapping[str, Any], query: QueryInput) -> GaussianNoise:
        """The noise added (its sigma and the sensitivity it is calibrated to), whatever the keys."""
        query = acc.numeric_query(query)
        return GaussianNoise(self.noise_scale(params, query), query.sensitivity_l2)

    def epsilon_delta(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        """The (epsilon, delta) asked for; by privately selected keys, plus the selection's."""
        return with_key_selection(float(params["epsilon"]), query, float(params["delta"]))

    def releases(self, params: Mapping[str, Any], query: QueryInput) -> acc.ReleasePair:
        query = acc.numeric_query(query)
        sigma = self.noise_scale(params, query)
        i, note = acc.shown_coordinate(query)
        return acc.ReleasePair(
            acc.NoisyRelease(acc.STANDARD_NORMAL, float(np.atleast_1d(query.value_d)[i]), sigma),
            acc.NoisyRelease(acc.STANDARD_NORMAL, float(np.atleast_1d(query.value_d_prime)[i]), sigma),
            i,
            note,
        )

    def privacy_profile(
        self, params: Mapping[str, Any], query: QueryInput, epsilons: np.ndarray
    ) -> np.ndarray:
        """Exact delta(eps) on this pair (Balle & Wang 2018, Theorem 8): it depends on the
        vector shift only through mu = ||f(D) - f(D')||_2 / sigma; symmetric in direction."""
        query = acc.numeric_query(query)
        distance = float(np.linalg.norm(np.atleast_1d(query.value_d) - np.atleast_1d(query.value_d_prime)))
        return gaussian_delta(np.asarray(epsilons, float), distance / self.noise_scale(params, query))

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        query = acc.numeric_query(query)
        p = self.releases(params, query).d
        z = float(stats.norm.isf((1 - ci_level) / 2))

        def halfwidth(eps: float) -> float:
            return z * self.sigma_for(eps, params["delta"], query.sensitivity_l2, params["calibration"])

        def tail_bound(alphas: np.ndarray) -> np.ndarray:
            with np.errstate(divide="ignore"):
                return np.sqrt(2 / np.pi) * p.scale / alphas * np.exp(-(alphas**2) / (2 * p.scale**2))

        return acc.release_accuracy(
            p,
            p.loc,
            ci_level,
            bound=tail_bound,
            bound_name="√(2/π) σ/α · exp(-α²/2σ²) (Gaussian tail bound)",
            curves_vs_epsilon=(acc.error_vs_epsilon(halfwidth, ci_level),),
            curves_vs_n=(acc.error_vs_n(query.n, query.statistic, z * p.scale, ci_level),),
            notes=("Error of one coordinate.",),
        )
