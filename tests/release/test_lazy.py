"""Lazy uniforms and exact index sampling by refinement (dpexplorer.release.lazy)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy import stats

from dpexplorer.release import lazy
from dpexplorer.release.samplers import SeededBitSource


def test_lazy_uniform_bounds_are_nested_and_shrink() -> None:
    u = lazy.LazyUniform(SeededBitSource(1))
    low, high = u.bounds()
    assert high - low == Fraction(1, 2**lazy.START_BITS)
    u.refine()
    low2, high2 = u.bounds()
    assert low <= low2 < high2 <= high
    assert high2 - low2 == Fraction(1, 2 ** (lazy.START_BITS + lazy.STEP_BITS))


def test_interval_encloses_exact_bounds() -> None:
    u = lazy.LazyUniform(SeededBitSource(2), digits=80)
    ctx = lazy.context(120)
    assert lazy.fraction_bounds(u.interval(ctx)) == u.bounds()


def test_fraction_bounds_enclose_e_and_reject_infinity() -> None:
    ctx = lazy.context(100)
    low, high = lazy.fraction_bounds(ctx.exp(ctx.mpf(1)))
    e = Fraction(math.e)
    assert e * (1 - Fraction(1, 10**15)) < low < high < e * (1 + Fraction(1, 10**15))
    assert 0 < high - low < Fraction(1, 2**90)
    assert lazy.fraction_bounds(ctx.log(ctx.mpf([0, 1]))) is None


def _exp_weights(gammas: list[Fraction]) -> lazy.Bounds:
    def bounds(ctx):  # type: ignore[no-untyped-def]
        return [lazy.fraction_bounds(ctx.exp(-ctx.mpf(g.numerator) / g.denominator)) for g in gammas]

    return bounds  # type: ignore[return-value]


def test_pick_index_matches_irrational_weights_chi_square() -> None:
    """Weights e^0, e^-1/3, e^-2, e^-4 (irrational ratios); 3,000 seeded draws."""
    gammas = [Fraction(0), Fraction(1, 3), Fraction(2), Fraction(4)]
    bits = SeededBitSource(7)
    draws = [lazy.pick_index(_exp_weights(gammas), bits) for _ in range(3_000)]
    observed = np.bincount(draws, minlength=4)
    p = np.exp(-np.array([float(g) for g in gammas]))
    p /= p.sum()
    assert stats.chisquare(observed, p * observed.sum()).pvalue > 1e-3


def test_pick_index_never_picks_a_zero_weight() -> None:
    weights = [(Fraction(0), Fraction(0)), (Fraction(1), Fraction(1)), (Fraction(0), Fraction(0))]
    bits = SeededBitSource(3)
    assert {lazy.pick_index(lambda ctx: weights, bits) for _ in range(200)} == {1}


def test_pick_index_exact_rational_weights_inversion() -> None:
    """With exact weights 1:3 the outcome is exactly [U >= 1/4]: check against the drawn U."""
    weights = [(Fraction(1), Fraction(1)), (Fraction(3), Fraction(3))]
    for seed in range(50):
        u = lazy.LazyUniform(SeededBitSource(seed))
        expected = int(u.bounds()[0] >= Fraction(1, 4))
        assert lazy.pick_index(lambda ctx: weights, SeededBitSource(seed)) == expected
