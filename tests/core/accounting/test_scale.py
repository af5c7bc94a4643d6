"""Composition at scale (issue 18): counts, the Chernoff window, the balanced tree, and the
optimal (KOV) accountant's outward rounding (issue 15, item 6). Each number is checked against
a computation written here: exact decimal arithmetic, or the same PLD discretised by rounding
every loss down (a lower bound on the true delta) and up (an upper bound) on a fine grid of the
test's own, composed by brute-force FFT over the whole support."""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal, getcontext

import numpy as np
import pytest
from scipy import fft, signal

from dpexplorer.core.accounting.compose import compose, delta_at, epsilon_at, pld_of
from dpexplorer.core.accounting.guarantees import GaussianNoise, LaplaceNoise, PureDP
from dpexplorer.core.accounting.validate import MAX_COUNT, counted
from dpexplorer.core.errors import InvalidParameterError


def exact_kov_delta(eps0: float, k: int, eps: float) -> Decimal:
    """delta(eps) of k-fold randomized response (Kairouz, Oh & Viswanath 2015, Theorem 3.3) in
    60-digit decimal arithmetic, at the exact binary values of eps0 and eps."""
    getcontext().prec = 60
    e0, e = Decimal(eps0), Decimal(eps)
    p, q = e0.exp() / (1 + e0.exp()), 1 / (1 + e0.exp())
    total = Decimal(0)
    for l_value in range(k + 1):
        term = math.comb(k, l_value) * (
            p ** (k - l_value) * q**l_value - e.exp() * p**l_value * q ** (k - l_value)
        )
        total += max(term, Decimal(0))
    return total


@pytest.mark.parametrize(("eps0", "k", "delta"), [(0.1, 100, 1e-6), (0.5, 30, 1e-5), (0.01, 1000, 1e-8)])
def test_optimal_rounds_outward(eps0, k, delta):
    # issue 15: 100 x 0.1 at 1e-6 used to show 4.7745675881041745, whose exact delta is
    # 1.0000000000288e-6 > 1e-6. The epsilon shown must never be below the tight one.
    eps = epsilon_at([(PureDP(eps0), k)], "optimal", delta)
    exact = exact_kov_delta(eps0, k, eps)
    assert exact <= Decimal(delta)
    assert exact >= Decimal(delta) * (1 - Decimal("1e-8"))  # and still tight


def test_optimal_with_a_huge_count_is_fast_and_between_bounds():
    eps = epsilon_at([(PureDP(0.1), 10**8)], "optimal", 1e-6)
    # the privacy loss has mean k eps0 tanh(eps0 / 2) and standard deviation ~ sqrt(k) eps0
    mean, sd = 1e8 * 0.1 * math.tanh(0.05), math.sqrt(1e8) * 0.1
    assert mean + 3 * sd < eps < mean + 6 * sd
    assert eps < epsilon_at([(PureDP(0.1), 10**8)], "basic", 1e-6)


def test_counts_are_counts():
    g = LaplaceNoise(3.0)
    assert counted([(g, 5), g, (g, 2)]) == ((g, 8),)
    assert counted([(g, MAX_COUNT)]) == ((g, MAX_COUNT),)
    for bad in (0, -1, MAX_COUNT + 1, 2.0, True):
        with pytest.raises(InvalidParameterError, match="count"):
            counted([(g, bad)])
    assert epsilon_at([(g, 7)], "pld", 1e-6) == epsilon_at([g] * 7, "pld", 1e-6)


def _laplace_bracket(eps0s: list[float], step: float) -> tuple[np.ndarray, np.ndarray, int]:
    """The composed Laplace PLD rounded down and rounded up onto j * step: (down, up, first).
    Identical mechanisms are raised to their count in the FFT domain over the whole support."""
    downs, ups, first = np.ones(1), np.ones(1), 0
    for e, k in Counter(eps0s).items():
        x = np.arange(math.floor(-e / step) - 1, math.ceil(e / step) + 2) * step
        # F(x) = P(L <= x) of Laplace noise's loss (Koskela et al. 2020, Section 4.1)
        cdf = np.where(x >= e, 1.0, np.where(x < -e, 0.0, 0.5 * np.exp((np.minimum(x, e) - e) / 2)))
        mass = np.diff(cdf)  # mass of (x_j, x_{j+1}]
        down = np.append(mass, 0.0)  # to the left end x_j
        up = np.insert(mass, 0, 0.0)  # to the right end x_{j+1}
        size = (down.size - 1) * k + 1
        n = fft.next_fast_len(size)
        downs = signal.fftconvolve(downs, fft.irfft(fft.rfft(down, n) ** k, n)[:size])
        ups = signal.fftconvolve(ups, fft.irfft(fft.rfft(up, n) ** k, n)[:size])
        first += (math.floor(-e / step) - 1) * k
    return np.maximum(downs, 0.0), np.maximum(ups, 0.0), first


def _delta(first: int, step: float, pmf: np.ndarray, eps: float) -> float:
    losses = (first + np.arange(pmf.size)) * step
    above = losses > eps
    return float((pmf[above] * -np.expm1(eps - losses[above])).sum())


@pytest.mark.parametrize(
    "eps0s",
    [
        [1 / (100 + 7 * i) for i in range(40)],  # distinct: the balanced tree
        [0.001] * 3000,  # identical: repeated squaring; the window is far inside the support
        [0.02] * 50 + [0.05] * 20 + [1 / (30 + i) for i in range(25)],
    ],
)
def test_laplace_lists_lie_between_rounding_down_and_up(eps0s):
    step = 2e-5
    down, up, first = _laplace_bracket(eps0s, step)
    ours = pld_of([LaplaceNoise(1 / e) for e in eps0s])
    checked = 0
    spread = math.sqrt(sum(e * e for e in eps0s))  # about the composed loss's standard deviation
    for eps in np.linspace(0.0, 6 * spread, 13):
        lower, upper = _delta(first, step, down, eps), _delta(first, step, up, eps)
        value = ours.delta(float(eps))
        if lower < 1e-9:  # below that the brute-force FFT round-off of the test itself shows
            continue
        assert lower * (1 - 1e-9) <= value <= upper * (1 + 1e-9)
        checked += 1
    assert checked >= 3


def test_many_distinct_laplace_and_gaussians_against_the_closed_form_envelope():
    # 1,000 distinct mechanisms: the PLD is at most basic composition and not below the exact
    # Gaussian part alone
    gs = [LaplaceNoise(100.0 + i) if i % 2 == 0 else GaussianNoise(20.0 + i) for i in range(1000)]
    report = compose(gs, delta=1e-6, methods=["pld", "rdp", "zcdp"])
    gaussian_only = epsilon_at([g for g in gs if isinstance(g, GaussianNoise)], "pld", 1e-6)
    assert gaussian_only < report.get("pld").epsilon <= report.get("rdp").epsilon


def test_delta_at_zero_is_the_top_of_the_support():
    gs = [(PureDP(0.3), 5), (LaplaceNoise(5.0), 1000)]
    eps = epsilon_at(gs, "pld", 0.0)
    assert eps <= 1.5 + 200 * 1.001 and delta_at(gs, "pld", eps) == 0.0


def test_losses_too_small_for_a_grid_are_still_upper_bounds() -> None:
    """A Laplace whose loss bound is 1e-308 (the fuzz test's case) or a subsampled Gaussian with
    sigma 1e14 cannot be put on a grid; they are composed by basic composition (pure) or as their
    base Gaussian, which is never below the tight value and here adds at most 1e-9."""
    from dpexplorer.core.accounting.compose import epsilon_at
    from dpexplorer.core.accounting.guarantees import GaussianNoise, LaplaceNoise, Subsampled

    alone = epsilon_at([GaussianNoise(1.0)], "pld", 1e-6)
    with_tiny = epsilon_at([LaplaceNoise(1e308), GaussianNoise(1.0)], "pld", 1e-6)
    assert alone <= with_tiny <= alone + 1e-9
    assert 0 < epsilon_at([LaplaceNoise(1e308)], "pld", 1e-6) <= 1e-300
    weak = Subsampled(GaussianNoise(7.5e13), 0.01, "poisson")
    assert epsilon_at([weak], "pld", 1e-6) == epsilon_at([GaussianNoise(7.5e13)], "pld", 1e-6)
