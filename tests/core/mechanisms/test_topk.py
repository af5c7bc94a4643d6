"""Private top-k: peeling against one-shot Gumbel, exact pmf against brute force, usefulness."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpexplorer.core.audit import audit_mechanism
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import SelectionInput
from dpexplorer.core.mechanisms.exponential import max_abs_loss
from dpexplorer.core.mechanisms.topk import TopK, tuple_rank

MECH = TopK()
SCORES = np.array([10.0, 9.0, 9.0, 6.0, 2.0])


def query(shift: np.ndarray | None = None) -> SelectionInput:
    moved = SCORES + (np.array([-1.0, 1.0, -1.0, 1.0, 0.0]) if shift is None else shift)
    return SelectionInput(tuple("abcde"), SCORES, moved, 1.0, False, 40)


def brute_force(scores: np.ndarray, step_scale: float, k: int) -> dict[tuple[int, ...], float]:
    """P(ordered tuple) by sequential sampling without replacement, in pure Python."""
    weights = [math.exp(u / step_scale) for u in scores]
    out = {}
    for order in itertools.permutations(range(len(scores)), k):
        p, left = 1.0, set(range(len(scores)))
        for r in order:
            p *= weights[r] / math.fsum(weights[j] for j in left)
            left.remove(r)
        out[order] = p
    return out


def test_pmf_matches_brute_force() -> None:
    params = MECH.validate({"epsilon": 2.0, "k": 3})
    out = MECH.output_distribution(params, query())
    tuples = MECH.outcomes(params, query())
    expected = brute_force(SCORES, 2 * 1.0 / (2.0 / 3), 3)
    np.testing.assert_allclose(out.pmf_d, [expected[tuple(t)] for t in tuples], rtol=1e-10)
    assert out.pmf_d.sum() == pytest.approx(1.0)


def test_tuple_rank_is_enumeration_order() -> None:
    tuples = MECH.outcomes(MECH.validate({"k": 3}), query())
    np.testing.assert_array_equal(tuple_rank(tuples, 5), np.arange(len(tuples)))


@pytest.mark.parametrize("method", ["peeling", "gumbel"])
def test_both_methods_match_exact_pmf(method: str) -> None:
    params = MECH.validate({"epsilon": 3.0, "k": 2, "method": method})
    pmf = MECH.output_distribution(params, query()).pmf_d
    draws = MECH.simulate(params, query(), np.random.default_rng(17), 100_000)
    observed = np.bincount(draws, minlength=pmf.size)
    keep = pmf * draws.size > 5
    _, p_value = stats.chisquare(observed[keep], pmf[keep] / pmf[keep].sum() * observed[keep].sum())
    assert p_value > 1e-3


def test_privacy_loss_within_epsilon() -> None:
    for k in (1, 2, 3):
        params = MECH.validate({"epsilon": 1.5, "k": k})
        assert max_abs_loss(MECH.output_distribution(params, query())) <= 1.5 + 1e-9


@pytest.mark.parametrize("method", ["peeling", "gumbel"])
def test_auditor_accepts_claim(method: str) -> None:
    q = SelectionInput(
        ("a", "b", "c", "d"), np.array([1.0, 0, 0, 0]), np.array([0.0, 1, 1, 1]), 1.0, False, 9
    )
    result = audit_mechanism(
        MECH, {"epsilon": 2.0, "k": 2, "method": method}, q, rng=np.random.default_rng(31), n_draws=200_000
    )
    assert result.epsilon_lb <= 2.0


def test_usefulness_exact_and_measured() -> None:
    params = MECH.validate({"epsilon": 2.0, "k": 2})
    alphas = np.array([0.5, 1.0, 3.5, 8.0])
    useful = MECH.usefulness(params, query(), alphas)
    tuples = MECH.outcomes(params, query())
    expected = brute_force(SCORES, 2 * 1.0 / 1.0, 2)
    s_k = 9.0
    for index, alpha in enumerate(alphas):  # the definitions of seed 004, checked tuple by tuple
        sound = sum(p for t, p in expected.items() if all(SCORES[i] > s_k - alpha for i in t))
        complete = sum(
            p for t, p in expected.items() if all(j in t for j in range(5) if SCORES[j] >= s_k + alpha)
        )
        assert useful.sound[index] == pytest.approx(sound)
        assert useful.complete[index] == pytest.approx(complete)
    assert np.all(useful.useful <= np.minimum(useful.sound, useful.complete) + 1e-12)
    lists = MECH.sample_lists(params, query(), np.random.default_rng(2), 50_000)
    measured_sound = np.mean(SCORES[lists].min(axis=1) > s_k - 1.0)
    assert measured_sound == pytest.approx(useful.sound[1], abs=4 * math.sqrt(0.25 / 50_000))
    assert len(tuples) == 20


def test_accuracy_tail_below_bound() -> None:
    report = MECH.accuracy(MECH.validate({"epsilon": 2.0, "k": 2}), query())
    assert report.error_tail_bound is not None
    assert np.all(report.error_tail.y <= report.error_tail_bound.y + 1e-12)


def test_k_too_large() -> None:
    with pytest.raises(InvalidParameterError, match="exceeds"):
        MECH.output_distribution(MECH.validate({"k": 6}), query())


def _many(count: int = 10_000) -> SelectionInput:
    from dpexplorer.core.mechanisms.exponential import counts_input

    counts = np.random.default_rng(3).integers(0, 1_000, count)
    return counts_input(tuple(f"c{i}" for i in range(count)), counts)


def test_top_100_of_10000_simulates_and_exact_views_refuse_in_words() -> None:
    """The old code raised OverflowError from TopK.simulate (outcome ranks beyond int64) and
    capped k at 50."""
    from dpexplorer.core.errors import NotApplicableError

    many = _many()
    params = MECH.validate({"epsilon": 1.0, "k": 100, "method": "gumbel"})
    lists = MECH.sample_lists(params, many, np.random.default_rng(0), 3)
    assert lists.shape == (3, 100) and all(len(set(row)) == 100 for row in lists)
    for call in (
        lambda: MECH.simulate(params, many, np.random.default_rng(0), 2),
        lambda: MECH.output_distribution(params, many),
        lambda: MECH.accuracy(params, many),
    ):
        with pytest.raises(NotApplicableError, match="lists"):
            call()
    assert MECH.delta_at(params, many, 1.0) == 0.0


def test_delta_is_exactly_zero_at_the_claim_and_computed_below() -> None:
    """At its claimed epsilon a pure mechanism's delta is 0 by its theorem (the float sum left
    a residue of rounding, e.g. 2.87e-42 for the exponential mechanism on Adult's occupation)."""
    from dpexplorer.core.mechanisms.exponential import ExponentialMechanism

    params = MECH.validate({"epsilon": 1.0, "k": 2})
    assert MECH.delta_at(params, query(), 1.0) == 0.0
    assert MECH.delta_at(params, query(), 0.1) > 0.0
    exponential = ExponentialMechanism()
    many = _many(2_000)
    assert exponential.delta_at(exponential.validate({"epsilon": 1.0}), many, 1.0) == 0.0
    assert exponential.delta_at(exponential.validate({"epsilon": 1.0}), many, 0.05) > 0.0
