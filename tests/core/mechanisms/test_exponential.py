"""The exponential mechanism: exact pmf against brute force, privacy loss against the claim,
accuracy against the union bound, the auditor on the claim and on a planted bug."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import polars as pl
import pytest
from scipy import stats

from dpexplorer.core.audit import audit_mechanism
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import SelectionInput
from dpexplorer.core.mechanisms.exponential import (
    ExponentialMechanism,
    counts_input,
    max_abs_loss,
    pricing_input,
)
from dpexplorer.core.mechanisms.registry import get

MECH = ExponentialMechanism()


def adversarial_input(others: int = 20) -> SelectionInput:
    """Not monotone: candidate 0 loses Delta on D' while all others gain Delta, which drives
    the loss of candidate 0 towards 2 Delta / sigma."""
    scores_d = np.array([1.0] + [0.0] * others)
    scores_dp = np.array([0.0] + [1.0] * others)
    labels = tuple(f"c{i}" for i in range(others + 1))
    return SelectionInput(labels, scores_d, scores_dp, sensitivity=1.0, monotone=False, n=100)


def brute_force_pmf(scores: np.ndarray, scale: float) -> np.ndarray:
    """exp(u/sigma) / sum, in pure Python floats (scores shifted for range only)."""
    top = max(scores)
    weights = [math.exp((u - top) / scale) for u in scores]
    return np.array([w / math.fsum(weights) for w in weights])


@pytest.fixture(scope="module")
def occupations() -> SelectionInput:
    from dpexplorer.data.default import default_dataset_path

    counts = (
        pl.read_parquet(default_dataset_path(), columns=["occupation"])
        .drop_nulls()
        .group_by("occupation")
        .len()
        .sort("len", descending=True)
    )
    return counts_input(tuple(counts["occupation"]), counts["len"].to_numpy(), "replace")


def test_registered() -> None:
    assert isinstance(get("exponential"), ExponentialMechanism)


@pytest.mark.parametrize("monotone", [False, True])
def test_pmf_matches_brute_force(monotone: bool) -> None:
    rng = np.random.default_rng(3)
    scores = rng.normal(0, 3, 7)
    query = SelectionInput(tuple("abcdefg"), scores, scores - 1, 1.5, monotone, 50)
    params = MECH.validate({"epsilon": 0.7})
    out = MECH.output_distribution(params, query)
    scale = (1 if monotone else 2) * 1.5 / 0.7
    np.testing.assert_allclose(out.pmf_d, brute_force_pmf(list(scores), scale), rtol=1e-12)
    np.testing.assert_allclose(out.pmf_d_prime, brute_force_pmf(list(scores - 1), scale), rtol=1e-12)


def test_simulation_matches_pmf_chi_square() -> None:
    query = counts_input(tuple("abcde"), np.array([10, 9, 9, 6, 2]))
    params = MECH.validate({"epsilon": 1.0})
    pmf = MECH.output_distribution(params, query).pmf_d
    draws = MECH.simulate(params, query, np.random.default_rng(0), 100_000)
    observed = np.bincount(draws, minlength=5)
    keep = pmf * draws.size > 5
    _, p_value = stats.chisquare(observed[keep], pmf[keep] / pmf[keep].sum() * observed[keep].sum())
    assert p_value > 1e-3


def test_privacy_loss_within_claim_and_nearly_attained() -> None:
    params = MECH.validate({"epsilon": 1.0})
    loss = max_abs_loss(MECH.output_distribution(params, adversarial_input(2000)))
    assert 0.99 < loss <= 1.0 + 1e-12  # 2 Delta / sigma = epsilon, approached as |R| grows


def test_monotone_bound_on_counts() -> None:
    query = counts_input(tuple("abcd"), np.array([50, 49, 30, 3]))  # add/remove: monotone
    params = MECH.validate({"epsilon": 0.5})
    out = MECH.output_distribution(params, query)
    assert max_abs_loss(out) <= 0.5 + 1e-12
    assert MECH.scale(params, query) == pytest.approx(1 / 0.5)
    assert MECH.scale({**params, "use_monotone": False}, query) == pytest.approx(2 / 0.5)


def test_delta_at() -> None:
    params = MECH.validate({"epsilon": 1.0})
    query = adversarial_input()
    out = MECH.output_distribution(params, query)
    assert MECH.delta_at(params, query, 1.0) == 0.0
    total_variation = 0.5 * np.abs(out.pmf_d - out.pmf_d_prime).sum()
    assert MECH.delta_at(params, query, 0.0) == pytest.approx(total_variation)


def test_accuracy_exact_tail_below_union_bound() -> None:
    query = counts_input(tuple("abcdef"), np.array([40, 38, 35, 20, 10, 1]))
    params = MECH.validate({"epsilon": 0.5})
    report = MECH.accuracy(params, query)
    pmf = brute_force_pmf([40, 38, 35, 20, 10, 1], 1 / 0.5)
    errors = 40 - np.array([40, 38, 35, 20, 10, 1])
    for alpha, tail in zip(report.error_tail.x, report.error_tail.y, strict=True):
        assert tail == pytest.approx(pmf[errors > alpha].sum(), abs=1e-12)
    assert report.error_tail_bound is not None
    assert np.all(report.error_tail.y <= report.error_tail_bound.y + 1e-12)
    exact, bound = report.error_vs_epsilon
    assert np.all(exact.y <= bound.y + 1e-9)
    assert report.mse == pytest.approx(float(np.sum(pmf * errors**2)))


def test_occupation_race(occupations: SelectionInput) -> None:
    top = dict(zip(occupations.candidates, occupations.scores_d, strict=True))
    assert (top["Prof-specialty"], top["Craft-repair"], top["Exec-managerial"]) == (6172, 6112, 6086)
    params = MECH.validate({"epsilon": 0.05})
    out = MECH.output_distribution(params, occupations)
    assert out.pmf_d.sum() == pytest.approx(1.0)
    assert 0.5 < out.pmf_d[0] < 0.99 and out.pmf_d[1] > 0.01  # the winner is not obvious
    assert max_abs_loss(out) <= 0.05 + 1e-12  # replace neighbour: not monotone, factor 2 kept


def test_pricing_input_brute_force() -> None:
    rng = np.random.default_rng(5)
    bids = rng.integers(1, 60, 40).astype(float)
    prices = np.arange(1.0, 61.0)
    query = pricing_input(bids, prices)
    revenue = [p * sum(b >= p for b in bids) for p in prices]
    without_top = sorted(bids)[:-1]
    revenue_dp = [p * sum(b >= p for b in without_top) for p in prices]
    np.testing.assert_array_equal(query.scores_d, revenue)
    np.testing.assert_array_equal(query.scores_d_prime, revenue_dp)
    assert query.monotone and query.sensitivity == 60.0
    assert np.all(np.abs(query.scores_d - query.scores_d_prime) <= query.sensitivity)
    out = MECH.output_distribution(MECH.validate({"epsilon": 1.0}), query)
    assert max_abs_loss(out) <= 1.0 + 1e-12


def test_pricing_on_hours_per_week() -> None:
    from dpexplorer.data.default import default_dataset_path

    hours = pl.read_parquet(default_dataset_path(), columns=["hours_per_week"])["hours_per_week"].to_numpy()
    query = pricing_input(hours, np.arange(1.0, 100.0))
    out = MECH.output_distribution(MECH.validate({"epsilon": 1.0}), query)
    best = int(np.argmax(query.scores_d))
    assert out.pmf_d.argmax() == best
    assert max_abs_loss(out) <= 1.0 + 1e-12


def test_bad_scores_rejected() -> None:
    query = SelectionInput(("a", "b"), np.array([1.0, np.nan]), np.array([1.0, 0.0]), 1.0, False, 3)
    with pytest.raises(InvalidParameterError, match="NaN"):
        MECH.output_distribution(MECH.validate({}), query)
    with pytest.raises(InvalidParameterError):
        pricing_input(np.array([1.0]), np.array([0.0]))


class DroppedFactorTwo(ExponentialMechanism):
    """Planted bug: uses sigma = Delta / epsilon even though the utility is not monotone."""

    name: ClassVar[str] = "exponential_bug"

    def scale(self, params, query):  # type: ignore[no-untyped-def]
        return query.sensitivity / params["epsilon"]


def test_auditor_accepts_claim_and_catches_dropped_factor_two() -> None:
    query, params = adversarial_input(), {"epsilon": 1.0}
    sound = audit_mechanism(MECH, params, query, rng=np.random.default_rng(11), n_draws=200_000)
    assert sound.epsilon_lb <= 1.0
    assert sound.epsilon_lb > 0.5  # the audit is sensitive on this pair (true loss 0.95)
    buggy = audit_mechanism(DroppedFactorTwo(), params, query, rng=np.random.default_rng(12), n_draws=200_000)
    assert buggy.epsilon_lb > 1.0
