"""Exact samplers: chi-square against pmfs computed independently (scipy.stats.dlaplace, a
brute-force normalised discrete Gaussian), Bernoulli(exp(-gamma)) against math.exp, and the
vectorised samplers against the same pmfs. Seeded bit sources; alpha = 1e-3 per test."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpexplorer.release import samplers
from dpexplorer.release.samplers import SeededBitSource, SystemBitSource

ALPHA = 1e-3


def _chi_square_p(sample: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> float:
    """Chi-square p-value of integer ``sample`` against ``pmf`` on ``support`` (which holds all
    but a negligible mass): cells merged in order until each expects >= 20 draws, the two
    tails lumped into the end cells."""
    n = sample.size
    edges, acc = [support[0]], 0.0
    for x, p in zip(support, pmf, strict=True):
        acc += p
        if acc * n >= 20:
            edges.append(x + 1)
            acc = 0.0
    edges[-1] = support[-1] + 1
    cells = np.asarray(edges)
    index = np.clip(np.searchsorted(cells, sample, side="right") - 1, 0, cells.size - 2)
    observed = np.bincount(index, minlength=cells.size - 1)
    cum = np.concatenate([[0.0], np.cumsum(pmf)])
    start = np.searchsorted(support, cells[:-1])
    stop = np.searchsorted(support, cells[1:])
    expected = (cum[stop] - cum[start]) / cum[-1] * n
    return float(stats.chisquare(observed, expected).pvalue)


def _dgauss_pmf(support: np.ndarray, sigma2: float) -> np.ndarray:
    """Brute force: exp(-x^2 / 2 sigma^2) normalised over a support wide enough for 1e-15."""
    wide = np.arange(-int(40 * math.sqrt(sigma2)) - 5, int(40 * math.sqrt(sigma2)) + 6)
    norm = math.fsum(math.exp(-(x * x) / (2 * sigma2)) for x in wide)
    return np.array([math.exp(-(x * x) / (2 * sigma2)) / norm for x in support])


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_scalar_and_vector_match_exp(gamma: Fraction) -> None:
    n = 20_000
    bits = SeededBitSource(int(gamma * 6) + 1)
    scalar = sum(samplers.bernoulli_exp(gamma, bits) for _ in range(n))
    num = np.full(n, gamma.numerator, dtype=np.int64)
    vector = int(samplers.bernoulli_exp_array(num, gamma.denominator, bits).sum())
    p = math.exp(-float(gamma))
    for successes in (scalar, vector):
        if p == 1.0:
            assert successes == n
        else:
            assert stats.binomtest(successes, n, p).pvalue > ALPHA


def test_uniform_below_is_uniform_for_an_awkward_bound() -> None:
    m = 3 * 2**61 // 5  # rejection removes a large part of the 64-bit range here
    draws = samplers.uniform_below(m, 30_000, SeededBitSource(3))
    assert draws.min() >= 0 and draws.max() < m
    cells = np.floor(draws / m * 10).astype(int)
    assert stats.chisquare(np.bincount(cells, minlength=10)).pvalue > ALPHA


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(3, 2), Fraction(7)])
def test_discrete_laplace_scalar(scale: Fraction) -> None:
    bits = SeededBitSource(11)
    sample = np.array([samplers.discrete_laplace(scale, bits) for _ in range(5_000)])
    support = np.arange(-60 * int(scale + 1), 60 * int(scale + 1) + 1)
    pmf = stats.dlaplace(float(1 / scale)).pmf(support)
    assert _chi_square_p(sample, support, pmf) > ALPHA


@pytest.mark.parametrize(("t", "s"), [(1, 1), (3, 2), (7, 3), (1024, 1), (1639, 8192)])
def test_discrete_laplace_vectorised(t: int, s: int) -> None:
    sample = samplers.discrete_laplace_array(t, s, 40_000, SeededBitSource(t + s))
    scale = t / s
    reach = int(40 * scale) + 10
    support = np.arange(-reach, reach + 1)
    assert _chi_square_p(sample, support, stats.dlaplace(1 / scale).pmf(support)) > ALPHA


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(9, 4), Fraction(50)])
def test_discrete_gaussian_scalar(sigma2: Fraction) -> None:
    bits = SeededBitSource(5)
    sample = np.array([samplers.discrete_gaussian(sigma2, bits) for _ in range(3_000)])
    reach = int(12 * math.sqrt(sigma2)) + 3
    support = np.arange(-reach, reach + 1)
    assert _chi_square_p(sample, support, _dgauss_pmf(support, float(sigma2))) > ALPHA


@pytest.mark.parametrize(("t", "p", "q"), [(1, 1, 4), (2, 9, 8), (8, 8, 1), (1025, 1025, 1)])
def test_discrete_gaussian_vectorised(t: int, p: int, q: int) -> None:
    sigma2 = t * p / q
    sample = samplers.discrete_gaussian_array(t, p, q, 40_000, SeededBitSource(t * p))
    reach = int(12 * math.sqrt(sigma2)) + 3
    support = np.arange(-reach, reach + 1)
    assert _chi_square_p(sample, support, _dgauss_pmf(support, sigma2)) > ALPHA


def test_discrete_gaussian_python_fallback(monkeypatch) -> None:
    """The acceptance test in Python integers (used for astronomically rare tails) has the same law."""
    monkeypatch.setattr(samplers, "_SQUARE_SAFE", 0)
    sample = samplers.discrete_gaussian_array(2, 9, 8, 2_000, SeededBitSource(12))
    support = np.arange(-20, 21)
    assert _chi_square_p(sample, support, _dgauss_pmf(support, 2.25)) > ALPHA


def test_the_csprng_is_the_default_source() -> None:
    assert isinstance(samplers.default_bit_source(), SystemBitSource)
    words = SystemBitSource().words(4)
    assert words.dtype == np.uint64 and words.size == 4


def test_seeded_source_is_reproducible() -> None:
    a = samplers.discrete_laplace_array(5, 1, 100, SeededBitSource(1))
    b = samplers.discrete_laplace_array(5, 1, 100, SeededBitSource(1))
    assert np.array_equal(a, b)


def test_parameters_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError):
        samplers.discrete_laplace_array(0, 1, 1, SeededBitSource(0))
    with pytest.raises(ValueError):
        samplers.bernoulli_exp(Fraction(-1), SeededBitSource(0))
