"""Exact BLR and MWEM release paths (dpexplorer.release.synthetic_paths) against independent
computations: every candidate's exponential-mechanism probability by brute force, per-level
counts by enumeration, MWEM's selection against the softmax, its measurement against the discrete
Laplace pmf, the charged epsilon against the claim. Seeded chi-square tests."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import sparse, stats
from scipy.special import softmax

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.mechanisms.base import WorkloadInput
from dpexplorer.core.mechanisms.blr import BLR, ErrorLevels
from dpexplorer.core.mechanisms.mwem import MWEM
from dpexplorer.release.lazy import context
from dpexplorer.release.row_count import Denominator, true_counts
from dpexplorer.release.samplers import SeededBitSource
from dpexplorer.release.synthetic_paths import (
    MWEMPlan,
    MWEMSteps,
    blr_release,
    level_weights,
    mwem_plan,
    mwem_release,
)

ALPHA = 1e-3
WORKLOAD = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0]])
HIST = np.array([7, 5, 3])
TINY = WorkloadInput(("a", "b", "c"), ("q0", "q1", "q2"), HIST, np.array([8, 5, 3]), WORKLOAD, 15)
BLR_MECH, MWEM_MECH = BLR(), MWEM()


def _chi_square_p(observed: np.ndarray, pmf: np.ndarray) -> float:
    """Chi-square p-value, outcomes expected fewer than 5 times lumped into one cell."""
    expected = pmf / pmf.sum() * observed.sum()
    keep = expected >= 5
    obs = np.r_[observed[keep], observed[~keep].sum()]
    exp = np.r_[expected[keep], expected[~keep].sum()]
    if exp[-1] < 5:  # too small a lump: merge it into the likeliest cell
        obs[np.argmax(exp[:-1])] += obs[-1]
        exp[np.argmax(exp[:-1])] += exp[-1]
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp).pvalue)


def _candidates(m: int) -> list[tuple[int, ...]]:
    return [tuple(np.bincount(c, minlength=3)) for c in itertools.combinations_with_replacement(range(3), m)]


def _error(h: tuple[int, ...], m: int) -> Fraction:
    """max_i |q_i(h) - q_i(D)| as an exact fraction, from the definition."""
    return max(abs(Fraction(int(row @ h), m) - Fraction(int(row @ HIST), 15)) for row in WORKLOAD)


# ------------------------------------------------------------------ BLR
def test_blr_release_matches_brute_force_exponential_mechanism() -> None:
    m, epsilon = 3, 0.8
    candidates = _candidates(m)
    # weight exp(u / sigma), u = -error, sigma = 2 Delta_u / eps = 2 / (n eps), in floats
    pmf = softmax([-float(_error(h, m)) * 15 * epsilon / 2 for h in candidates])
    release = blr_release(BLR_MECH, BLR_MECH.validate({"epsilon": epsilon, "m": m}), TINY, 0.95)
    assert release.guarantee.epsilon == epsilon and release.labels == TINY.cell_labels
    bits = SeededBitSource(3)
    draws = Counter(tuple(int(x) for x in release.draw(bits)) for _ in range(3000))
    assert set(draws) <= set(candidates)
    observed = np.array([draws[h] for h in candidates])
    assert _chi_square_p(observed, pmf) > ALPHA


@pytest.mark.parametrize("m", [2, 3, 4])
def test_level_counts_match_enumeration(m: int) -> None:
    expected = Counter(int(_error(h, m) * 15 * m) for h in _candidates(m))
    levels = ErrorLevels(TINY, m)
    assert levels.counts() == dict(expected)
    assert levels.exponent(0.8) == Fraction(0.8) * 15 / (2 * 15 * m)


def test_each_candidate_of_a_level_has_exactly_one_index() -> None:
    """So a uniform index (bits.randbelow(N_v)) is a uniform candidate within its level."""
    m = 4
    levels = ErrorLevels(TINY, m)
    for level, number in levels.counts().items():
        found = [tuple(int(x) for x in levels.candidate(level, i)) for i in range(number)]
        at_level = {h for h in _candidates(m) if _error(h, m) * 15 * m == level}
        assert len(set(found)) == number and set(found) == at_level
        with pytest.raises(ValueError, match="fewer candidates"):
            levels.candidate(level, number)


def test_blr_refuses_too_many_candidates_before_drawing() -> None:
    params = BLR_MECH.validate({"m": 3, "max_candidates": 5.0})  # 10 candidates
    with pytest.raises(DPExplorerError, match="10 candidate"):
        blr_release(BLR_MECH, params, TINY, 0.95)


def test_level_weights_enclose_the_exact_weights() -> None:
    """Bounds of N_v exp(-c (v - v_min)) against mpmath at 2000 bits, at working precisions where
    the tiny weights take the no-exp shortcut and where they do not; widths shrink as 2^-p."""
    levels, numbers, c = [3, 4, 103, 400], [5, 1, 1000, 2**40], Fraction(1, 2)
    with mpmath.workprec(2000):
        exact = [
            mpmath.mpf(n) * mpmath.exp(-mpmath.mpf(c * (v - 3))) for v, n in zip(levels, numbers, strict=True)
        ]
        for prec in (40, 80, 200):
            bounds = level_weights(levels, numbers, c)(context(prec))
            for (low, high), w in zip(bounds, exact, strict=True):
                assert (
                    mpmath.mpf(low.numerator) / low.denominator
                    <= w
                    <= mpmath.mpf(high.numerator) / high.denominator
                )
                assert high - low <= Fraction(float(w) + 1) / 2 ** (prec - 8)


def _other_data(query: WorkloadInput) -> WorkloadInput:
    """The same public facts (cells, queries, n) with different private counts."""
    hist = np.roll(query.histogram_d, 1)
    return WorkloadInput(query.cell_labels, query.query_labels, hist, hist, query.workload, query.n)


def test_blr_provenance_does_not_depend_on_the_data() -> None:
    params = BLR_MECH.validate({"m": 3})
    assert blr_release(BLR_MECH, params, TINY, 0.95).provenance == (
        blr_release(BLR_MECH, params, _other_data(TINY), 0.95).provenance
    )


# ------------------------------------------------------------------ MWEM
def _mwem_query(n: int = 100, relation: str = "add_remove") -> WorkloadInput:
    hist = np.array([40, 25, 20, 15]) * n // 100
    workload = np.array([[1, 0, 0, 0], [0, 1, 1, 0], [1, 0, 1, 0], [0, 0, 0, 1], [1, 1, 1, 1]])
    labels = tuple(f"q{i}" for i in range(5))
    return WorkloadInput(tuple("wxyz"), labels, hist, hist, workload, n, relation=relation)


def _mwem_steps(params: dict, query: WorkloadInput) -> tuple[MWEMPlan, MWEMSteps]:
    """The plan and the steps with the true n as denominator (the public n under replace)."""
    plan = mwem_plan(params, Denominator.for_query(query, params))
    return plan, plan.steps(true_counts(query), query.n)


def test_mwem_selection_matches_exponential_mechanism() -> None:
    query, epsilon, rounds = _mwem_query(relation="replace"), 0.8, 2
    _, steps = _mwem_steps(MWEM_MECH.validate({"epsilon": epsilon, "rounds": rounds}), query)
    approx = query.workload @ np.array([0.1, 0.2, 0.3, 0.4])  # any public synthetic answers
    utility = np.abs(approx - query.workload @ query.histogram_d / query.n)
    # exp(u / sigma), sigma = 2 Delta_u / (eps / 2T), Delta_u = 1/n (McSherry & Talwar 2007)
    pmf = softmax(utility * query.n * (epsilon / (2 * rounds)) / 2)
    bits = SeededBitSource(7)
    observed = np.bincount([steps.select(approx, bits) for _ in range(4000)], minlength=5)
    assert _chi_square_p(observed, pmf) > ALPHA


def test_mwem_measurement_is_discrete_laplace_at_the_stated_scale() -> None:
    query, epsilon, rounds = _mwem_query(relation="replace"), 1.0, 5
    _, steps = _mwem_steps(MWEM_MECH.validate({"epsilon": epsilon, "rounds": rounds}), query)
    scale = steps.t / steps.s
    assert 2 * rounds / epsilon <= scale < 1.001 * 2 * rounds / epsilon
    bits = SeededBitSource(11)
    count = int(query.workload[1] @ query.histogram_d)
    noise = np.array([int(steps.measure(1, bits) * query.n) - count for _ in range(4000)])
    support = np.arange(-200, 201)
    pmf = np.exp(-np.abs(support) / scale)  # P(x) proportional to exp(-|x| / scale) (CKS 2020)
    assert np.abs(noise).max() <= 200  # P(|Z| > 200) ~ exp(-20): never with this seed
    observed = np.bincount(noise + 200, minlength=support.size)
    assert _chi_square_p(observed, pmf) > ALPHA


@pytest.mark.parametrize(("epsilon", "rounds"), [(1.0, 10), (0.3, 7), (2.5, 3), (0.05, 1000), (7.0, 1)])
def test_mwem_charge_within_the_claim(epsilon: float, rounds: int) -> None:
    params = MWEM_MECH.validate({"epsilon": epsilon, "rounds": rounds})
    release = mwem_release(MWEM_MECH, params, _mwem_query(), 0.95)
    claim = MWEM_MECH.guarantee(params, _mwem_query()).epsilon
    assert 0.99 * claim <= release.guarantee.epsilon <= claim == epsilon
    plan, steps = _mwem_steps(params, _mwem_query())
    # add/remove: 5% of epsilon buys the row count, each selection and measurement gets 95% / 2T
    per_round = Fraction(epsilon) * (1 - Fraction(params["count_share"])) / (2 * rounds)
    assert plan.step == per_round and Fraction(steps.s, steps.t) <= per_round
    count_scale = Denominator.for_query(_mwem_query(), params).scale
    assert count_scale is not None
    spent = Fraction(count_scale[1], count_scale[0]) + rounds * (per_round + Fraction(steps.s, steps.t))
    assert Fraction(release.epsilon) >= spent


def test_mwem_release_distribution_and_provenance() -> None:
    query = _mwem_query(n=1000)
    params = MWEM_MECH.validate({"epsilon": 1.0, "rounds": 4})
    release = mwem_release(MWEM_MECH, params, query, 0.95)
    assert release.provenance == mwem_release(MWEM_MECH, params, _other_data(query), 0.95).provenance
    assert release.labels == query.cell_labels
    as_sparse = WorkloadInput(
        query.cell_labels, query.query_labels, query.histogram_d, query.histogram_d,
        sparse.csr_array(query.workload), query.n,
    )  # fmt: skip
    for q in (query, as_sparse):
        values = mwem_release(MWEM_MECH, params, q, 0.95).draw(SeededBitSource(5))
        assert len(values) == 4 and math.isclose(sum(values), 1.0) and min(values) > 0
