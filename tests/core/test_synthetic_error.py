"""The workload error against epsilon (issue 30, views): the baselines' noise is the zCDP
calibration an independent computation gives, the curve is reproducible and separates the
methods as they should on dependent data, a cancelled curve stops, and a run's rounds add up to
what its record says it spent."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from dpexplorer.core.cancel import CancelToken
from dpexplorer.core.errors import CancelledError, InvalidParameterError
from dpexplorer.core.marginals import MarginalInput, SeededSteps, candidate_cliques, record_marginal, tvd
from dpexplorer.core.mechanisms.mst import rho_for
from dpexplorer.core.mechanisms.registry import get
from dpexplorer.core.mechanisms.runs import Job
from dpexplorer.core.synthetic_error import direct_errors, error_curve, independent_errors, round_costs

SIZES = (3, 4, 2)
DENSE = {"estimator": "dense", "iterations": 150}


def correlated_query(n: int = 3000, l2_squared: int = 1) -> MarginalInput:
    """b depends on a; c is independent of both."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 4
    c = rng.integers(0, 2, n)
    records = np.stack([a, b, c], axis=1)
    workload = tuple(itertools.combinations(range(3), 2))
    marginals = {
        cl: record_marginal(records, SIZES, cl).astype(np.int64) for cl in candidate_cliques(3, workload)
    }
    labels = tuple(tuple(str(k) for k in range(s)) for s in SIZES)
    return MarginalInput(
        ("a", "b", "c"), labels, workload, marginals, n, sensitivity_l1=math.isqrt(l2_squared),
        sensitivity_l2_squared=l2_squared,
    )  # fmt: skip


@pytest.mark.parametrize("l2_squared", [1, 4])
def test_the_baselines_noise_is_the_zcdp_calibration_of_their_split(l2_squared: int) -> None:
    query, rho = correlated_query(l2_squared=l2_squared), 0.02
    # direct: |W| = 3 Gaussian measurements, each rho / 3: sigma^2 = Delta_2^2 / (2 rho / 3)
    sigma = math.sqrt(l2_squared / (2 * rho / 3))
    rng = np.random.default_rng(5)
    expected = []
    for clique in query.workload:
        noisy = np.maximum(query.counts(clique) + rng.normal(0, sigma, query.size(clique)), 0)
        expected.append(tvd(query.counts(clique), noisy))
    assert direct_errors(query, rho, np.random.default_rng(5)) == pytest.approx(expected, abs=1e-12)
    # independent: d = 3 one-way measurements, each rho / 3, the same sigma here
    rng = np.random.default_rng(6)
    shares = []
    for i in range(3):
        noisy = np.maximum(query.counts((i,)) + rng.normal(0, sigma, SIZES[i]), 0)
        shares.append(noisy / noisy.sum())
    expected = [tvd(query.counts((i, j)), np.outer(shares[i], shares[j]).ravel()) for i, j in query.workload]
    assert independent_errors(query, rho, np.random.default_rng(6)) == pytest.approx(expected, abs=1e-12)


def test_the_curve_is_reproducible_and_ranks_the_methods_on_dependent_data() -> None:
    query = correlated_query()
    params = {"delta": 1e-6, **DENSE}
    curve = error_curve(query, params, (0.05, 5.0), seed=3)
    again = error_curve(query, params, (5.0, 0.05), seed=3)
    assert curve.epsilons == (0.05, 5.0) and set(curve.errors) == {"mst", "aim", "direct", "independent"}
    for method in curve.errors:
        assert np.array_equal(curve.errors[method], again.errors[method])
    assert curve.rhos == (rho_for(0.05, 1e-6), rho_for(5.0, 1e-6))
    # at epsilon = 5 the noise is small: the independent baseline keeps the dependence of a and b
    # unmodelled (its error is about the product of the true one-way marginals'), the others not
    n = query.n
    truth = np.mean(
        [tvd(query.counts((i, j)), np.outer(query.counts((i,)), query.counts((j,))).ravel() / n)
         for i, j in query.workload]
    )  # fmt: skip
    assert curve.errors["independent"][1] == pytest.approx(truth, abs=0.01)
    for method in ("mst", "aim", "direct"):
        assert curve.errors[method][1] < truth / 2, method
        assert curve.errors[method][1] < curve.errors[method][0], method


def test_a_cancelled_curve_stops_and_bad_epsilons_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A curve whose token is already cancelled stops at its first checkpoint: no fit and no
    baseline is computed (each call counted)."""
    from dpexplorer.core import synthetic_error
    from dpexplorer.core.mechanisms.mst import MarginalMechanism

    calls: list[str] = []

    def counted(name: str, fn: Any) -> Any:
        return lambda *args, **kwargs: calls.append(name) or fn(*args, **kwargs)

    monkeypatch.setattr(MarginalMechanism, "run", counted("fit", MarginalMechanism.run))
    for name in ("direct_errors", "independent_errors"):
        monkeypatch.setattr(synthetic_error, name, counted(name, getattr(synthetic_error, name)))
    token = CancelToken()
    token.cancel()
    with pytest.raises(CancelledError):
        error_curve(correlated_query(), DENSE, job=Job(token))
    assert calls == []
    error_curve(correlated_query(), DENSE, (1.0,), methods=("direct", "independent"))
    assert calls == ["direct_errors", "independent_errors"], "the counting sees the calls"
    with pytest.raises(InvalidParameterError, match="positive"):
        error_curve(correlated_query(), DENSE, (0.0, 1.0))


@pytest.mark.parametrize("name", ["mst", "aim"])
def test_the_rounds_add_up_to_what_the_run_spent(name: str) -> None:
    query = correlated_query()
    mechanism = get(name)
    params = mechanism.validate({"epsilon": 1.0, **DENSE})
    rho = Fraction(mechanism.rho(params))
    transcript = mechanism.steps(params, query, SeededSteps(np.random.default_rng(1)))  # type: ignore[attr-defined]
    rounds, one_way = round_costs(query, transcript)
    assert len(rounds) == len(transcript.rounds) >= 2
    assert one_way + sum(r.rho for r in rounds) == pytest.approx(float(transcript.rho_spent), rel=1e-9)
    assert float(transcript.rho_spent) <= float(rho) * (1 + 1e-12)
    assert all(r.marginal in {query.name(c) for c in candidate_cliques(3, query.workload)} for r in rounds)
