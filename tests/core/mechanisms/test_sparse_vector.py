"""Sparse vector (Dwork & Roth 2014, Algorithms 1-2): exact pmf against independent integrals,
simulation against the pmf, the auditor on the claim and on planted bugs."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import pytest
from scipy import integrate, stats

from dpexplorer.core.audit import audit_mechanism
from dpexplorer.core.mechanisms.base import WorkloadInput
from dpexplorer.core.mechanisms.exponential import max_abs_loss
from dpexplorer.core.mechanisms.sparse_vector import BOTTOM, HALTED, TOP, SparseVector

MECH = SparseVector()
N = 100


def stream(shifts: list[int], base: int = 10) -> WorkloadInput:
    """Query i counts cell i (``base`` rows on D); on D' cell i gains ``shifts[i]`` rows, taken
    from (or given to) a filler cell so that n is unchanged (the replace relation)."""
    k = len(shifts)
    hist_d = np.array([base] * k + [N - base * k])
    hist_dp = hist_d + np.array([*shifts, -sum(shifts)])
    workload = np.hstack([np.eye(k, dtype=int), np.zeros((k, 1), dtype=int)])
    return WorkloadInput(
        tuple(map(str, range(k + 1))),
        tuple(f"q{i}" for i in range(k)),
        hist_d,
        hist_dp,
        workload,
        N,
        relation="replace",
    )


ALTERNATING = stream([1, -1] * 3)  # up on D' where D says ⊥, down where D says ⊤


def independent_log_prob(
    answers: np.ndarray, tops: list[int], c: int, T: float, rho: float, nu: float, refresh: bool
) -> float:
    """P(exactly ``tops`` answered ⊤) by closed-form Laplace cdfs and scipy quad, segment by
    segment (refresh) or with one threshold noise for the whole run (no refresh)."""

    def cdf(z: float) -> float:  # Laplace(nu) distribution function, closed form
        return 0.5 * math.exp(z / nu) if z < 0 else 1 - 0.5 * math.exp(-z / nu)

    last = tops[-1] if len(tops) == c else len(answers) - 1
    segments = []
    start = 0
    for i in tops:
        segments.append((list(range(start, i)), [i]))
        start = i + 1
    if len(tops) < c:
        segments.append((list(range(start, last + 1)), []))
    if not refresh:
        segments = [([j for seg in segments for j in seg[0]], tops)]
    total = 0.0
    for below, above in segments:

        def f(x: float, below: list[int] = below, above: list[int] = above) -> float:
            p = math.exp(-abs(x - T) / rho) / (2 * rho)
            for j in below:
                p *= cdf(x - answers[j])
            for i in above:
                p *= cdf(answers[i] - x)
            return p

        value = sum(
            integrate.quad(f, lo, hi, epsabs=0, epsrel=1e-11, limit=200)[0]
            for lo, hi in [(-np.inf, T - 40 * rho), (T - 40 * rho, T + 40 * rho), (T + 40 * rho, np.inf)]
        )
        total += math.log(value)
    return total


@pytest.mark.parametrize("c", [1, 2])
def test_exact_pmf_matches_independent_integrals(c: int) -> None:
    params = MECH.validate({"epsilon": 1.0, "threshold": 0.1, "c": c})
    q = stream([1, -1, 1, -1])
    out = MECH.output_distribution(params, q)
    rho, nu = MECH.noise_scales(params, q, N)
    answers = q.workload @ q.histogram_d / N
    for index, tops in enumerate(MECH.outcome_sets(params, q)):
        expected = independent_log_prob(answers, list(tops), c, 0.1, rho, nu, refresh=True)
        assert math.log(out.pmf_d[index]) == pytest.approx(expected, rel=1e-7, abs=1e-9)
    assert out.pmf_d.sum() == pytest.approx(1.0, abs=1e-9)


def test_simulation_matches_exact_pmf() -> None:
    params = MECH.validate({"epsilon": 1.0, "threshold": 0.1, "c": 2})
    pmf = MECH.output_distribution(params, ALTERNATING).pmf_d
    draws = MECH.simulate(params, ALTERNATING, np.random.default_rng(4), 100_000)
    observed = np.bincount(draws, minlength=pmf.size)
    keep = pmf * draws.size > 5
    _, p_value = stats.chisquare(observed[keep], pmf[keep] / pmf[keep].sum() * observed[keep].sum())
    assert p_value > 1e-3


@pytest.mark.parametrize("c", [1, 2, 3])
def test_privacy_loss_within_epsilon(c: int) -> None:
    params = MECH.validate({"epsilon": 2.0, "threshold": 0.1, "c": c})
    out = MECH.output_distribution(params, ALTERNATING)
    assert max_abs_loss(out) <= 2.0 + 1e-6
    assert MECH.delta_at(params, ALTERNATING, 2.0) <= 1e-9


class BudgetNotSplit(SparseVector):
    """Planted bug: each of the c AboveThreshold runs uses the whole epsilon (noise not scaled
    with c), while the claim stays epsilon."""

    name: ClassVar[str] = "svt_bug_unsplit"

    def noise_scales(self, params, query, denominator):  # type: ignore[no-untyped-def]
        return 2 / (denominator * params["epsilon"]), 4 / (denominator * params["epsilon"])


class ReusedThreshold(SparseVector):
    """The variant that keeps one threshold noise after a ⊤ instead of drawing a fresh one."""

    name: ClassVar[str] = "svt_reused_threshold"
    refresh_threshold: ClassVar[bool] = False


PARAMS = {"epsilon": 2.0, "threshold": 0.1, "c": 3}


def test_auditor_accepts_claim_and_catches_unsplit_budget() -> None:
    sound = audit_mechanism(MECH, PARAMS, ALTERNATING, rng=np.random.default_rng(41), n_draws=300_000)
    assert sound.epsilon_lb <= 2.0
    buggy = audit_mechanism(
        BudgetNotSplit(), PARAMS, ALTERNATING, rng=np.random.default_rng(42), n_draws=300_000
    )
    assert buggy.epsilon_lb > 2.0


def test_reused_threshold_is_private_here() -> None:
    """Reusing the threshold noise is NOT a privacy violation with these noise scales: it is
    Lyu, Su & Li 2017 ("Understanding the sparse vector technique"), Algorithm 1, with
    epsilon_1 = eps / (2c) for the threshold and epsilon_2 = eps / 2 for the queries (their
    Theorem 2 gives epsilon_1 + epsilon_2 <= eps). The exact loss (independent integrals over the
    single threshold noise) stays below epsilon and the auditor finds nothing above it."""
    params = MECH.validate(PARAMS)
    rho, nu = MECH.noise_scales(params, ALTERNATING, N)
    answers = ALTERNATING.workload @ ALTERNATING.histogram_d / N
    answers_dp = ALTERNATING.workload @ ALTERNATING.histogram_d_prime / N
    losses = [
        independent_log_prob(answers, list(tops), 3, 0.1, rho, nu, refresh=False)
        - independent_log_prob(answers_dp, list(tops), 3, 0.1, rho, nu, refresh=False)
        for tops in [(0,), (1, 3, 5), (1, 3), (0, 2, 4), ()]
    ]
    assert max(abs(x) for x in losses) <= 2.0
    reused = audit_mechanism(
        ReusedThreshold(), PARAMS, ALTERNATING, rng=np.random.default_rng(43), n_draws=300_000
    )
    assert reused.epsilon_lb <= 2.0


def test_transcript_halts_after_c() -> None:
    q = stream([0] * 80, base=1)  # 80 queries (more than a bitmask holds), all at 1%
    params = MECH.validate({"epsilon": 5.0, "threshold": 0.0, "c": 2})
    transcript = MECH.run(params, q, np.random.default_rng(3))
    assert transcript.positives == 2
    first, second = [i for i, r in enumerate(transcript.responses) if r == TOP]
    assert set(transcript.responses[second + 1 :]) <= {HALTED}
    assert set(transcript.responses[:second]) - {TOP} <= {BOTTOM}
    assert first < second


def test_accuracy_tail_below_bound() -> None:
    report = MECH.accuracy(MECH.validate({"epsilon": 1.0, "threshold": 0.1, "c": 1}), stream([1, -1, 1]))
    assert report.error_tail_bound is not None
    assert np.all(report.error_tail.y <= report.error_tail_bound.y + 1e-9)


def test_the_note_never_calls_the_true_count_noisy():
    """Issue 28: the caption read "given the noisy row count n̂ = 48,842" for the true n."""
    from dpexplorer.core.row_count import denominator_note

    note = denominator_note("add_remove", 48_842, 48_843)
    assert "n̂ = 48,842" not in note and "noisy row count n̂ (bought" in note
    assert "fix n̂ at D's true count, 48,842" in note and "never the true count" in note
    assert denominator_note("replace", 100, 100) == "the number of rows (100) is public under replace"
