"""BLR: candidate enumeration, exact softmax against brute force, the streaming sampler against
the exact softmax (chi-square), refusal, cancellation, the seed's bound."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpexplorer.core.cancel import CancelToken
from dpexplorer.core.errors import CancelledError, DPExplorerError
from dpexplorer.core.mechanisms import blr
from dpexplorer.core.mechanisms.base import WorkloadInput
from dpexplorer.core.mechanisms.blr import BLR, all_multisets, multiset_count, synthetic_size

MECH = BLR()
WORKLOAD = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 1, 1]])
HIST_D = np.array([7, 5, 3])
HIST_DP = np.array([6, 5, 3])  # one row of cell 0 removed
TINY = WorkloadInput(("a", "b", "c"), ("q0", "q1", "q2", "q3"), HIST_D, HIST_DP, WORKLOAD, 15)


def brute_force(query: WorkloadInput, m: int, epsilon: float, on: str = "D") -> dict[tuple[int, ...], float]:
    """P(histogram) over every multiset (combinations with replacement), exact rational errors,
    weights exp(-epsilon n err / 2) with n the side's OWN row count (no public n: the score in
    counts n err has sensitivity 1 under add/remove)."""
    hist = query.histogram_d if on == "D" else query.histogram_d_prime
    n_h = int(hist.sum())
    truth = [Fraction(int(row @ hist), n_h) for row in query.workload]
    weights = {}
    for combo in itertools.combinations_with_replacement(range(len(hist)), m):
        h = np.bincount(combo, minlength=len(hist))
        err = max(abs(Fraction(int(row @ h), m) - t) for row, t in zip(query.workload, truth, strict=True))
        weights[tuple(h)] = math.exp(-epsilon * n_h * float(err) / 2)
    total = math.fsum(weights.values())
    return {h: w / total for h, w in weights.items()}


def test_candidate_count_and_enumeration() -> None:
    for n_cells, m in [(1, 4), (3, 3), (4, 5), (5, 2)]:
        histograms = all_multisets(n_cells, m)
        expected = {
            tuple(np.bincount(c, minlength=n_cells))
            for c in itertools.combinations_with_replacement(range(n_cells), m)
        }
        assert multiset_count(n_cells, m) == len(expected) == histograms.shape[0]
        assert {tuple(h) for h in histograms} == expected
    assert multiset_count(1000, 50) == math.comb(1049, 50)  # exact integer, no float
    params = MECH.validate({"m": 3})
    assert MECH.candidate_count(params, TINY) == 10


def test_m_from_alpha() -> None:
    assert synthetic_size({"m": 0, "alpha": 0.5}, 4) == math.ceil(2 * math.log(8) / 0.25)
    assert synthetic_size({"m": 7, "alpha": 0.5}, 4) == 7


@pytest.mark.parametrize("on", ["D", "D'"])
def test_error_distribution_matches_brute_force(on: str) -> None:
    params = MECH.validate({"epsilon": 2.0, "m": 4})
    out = MECH.output_distribution(params, TINY)
    probs = brute_force(TINY, 4, 2.0, on)
    truth = WORKLOAD @ HIST_D / 15  # the statistic is the error against D's answers on both sides
    by_error: dict[float, float] = {}
    for h, p in probs.items():
        err = float(np.max(np.abs(WORKLOAD @ np.array(h) / 4 - truth)))
        key = round(err, 12)
        by_error[key] = by_error.get(key, 0.0) + p
    got = out.density_d if on == "D" else out.density_d_prime
    assert len(by_error) == out.grid.size
    for value, p in zip(out.grid, got, strict=True):
        assert p == pytest.approx(by_error[round(float(value), 12)], rel=1e-9)


def test_delta_at_matches_brute_force_and_claim() -> None:
    params = MECH.validate({"epsilon": 1.0, "m": 4})
    p, q = brute_force(TINY, 4, 1.0, "D"), brute_force(TINY, 4, 1.0, "D'")
    for eps in (0.0, 0.3, 1.0):
        expected = max(
            sum(max(p[h] - math.exp(eps) * q[h], 0) for h in p),
            sum(max(q[h] - math.exp(eps) * p[h], 0) for h in p),
        )
        assert MECH.delta_at(params, TINY, eps) == pytest.approx(expected, abs=1e-12)
    ratios = [abs(math.log(p[h] / q[h])) for h in p]
    assert max(ratios) <= 1.0 + 1e-12  # the claim, on every synthetic dataset


def test_streaming_sampler_matches_exact_softmax(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blr, "CHUNK", 3)  # many blocks: exercises the Gumbel-max across blocks
    params = MECH.validate({"epsilon": 4.0, "m": 3})
    probs = brute_force(TINY, 3, 4.0)
    keys = list(probs)
    rng = np.random.default_rng(8)
    draws = 1500
    counts = np.zeros(len(keys))
    for _ in range(draws):
        counts[keys.index(tuple(MECH.run(params, TINY, rng).synthetic_histogram))] += 1
    expected = np.array([probs[h] for h in keys]) * draws
    keep = expected > 5
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    _, p_value = stats.chisquare(observed, expected)
    assert p_value > 1e-3


def test_run_reports_errors_and_bound() -> None:
    params = MECH.validate({"epsilon": 1.0, "m": 4, "beta": 0.1})
    result = MECH.run(params, TINY, np.random.default_rng(0))
    assert result.synthetic_histogram.sum() == 4 and result.candidates == 15
    np.testing.assert_allclose(
        result.query_errors, np.abs(WORKLOAD @ result.synthetic_histogram / 4 - WORKLOAD @ HIST_D / 15)
    )
    gamma = math.sqrt(math.log(8) / 8)
    assert result.accuracy_bound == pytest.approx(gamma + 2 / 15 * (math.log(15) + math.log(10)))


def test_accuracy_tail_below_bound() -> None:
    report = MECH.accuracy(MECH.validate({"epsilon": 3.0, "m": 4}), TINY)
    assert report.error_tail_bound is not None
    assert np.all(report.error_tail.y <= report.error_tail_bound.y + 1e-12)


def test_refuses_past_limit_naming_mwem() -> None:
    big = WorkloadInput(
        tuple(map(str, range(64))), ("q",), np.ones(64, int), np.ones(64, int), np.ones((1, 64), int), 64
    )
    params = MECH.validate({"m": 40, "max_candidates": 1e9})
    assert MECH.candidate_count(params, big) > 10**20
    assert MECH.estimate_seconds(params, big) > 1e6
    with pytest.raises(DPExplorerError, match="MWEM"):
        MECH.run(params, big, np.random.default_rng(0))


def test_cancel_and_progress() -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(CancelledError):
        MECH.run(MECH.validate({"m": 3}), TINY, np.random.default_rng(0), cancel=token)
    seen: list[float] = []
    MECH.run(MECH.validate({"m": 3}), TINY, np.random.default_rng(0), progress=seen.append)
    assert seen[-1] == 1.0 and all(0 <= f <= 1 for f in seen)
