"""The grid lemma the numeric paths rely on, checked by property tests: rounding two answers
that differ by at most Delta moves them apart by at most the grid sensitivity make_grid claims
(scalar, l1 and l2 vectors); the grid is as fine as documented; discrete scales round up."""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from dpexplorer.release.exact import discrete_scale, make_grid

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False)
positive = st.floats(min_value=1e-6, max_value=1e4, allow_nan=False)
unit = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(finite, unit, positive, positive)
def test_scalar_rounding_moves_at_most_the_grid_sensitivity(x, fraction, sensitivity, noise) -> None:
    y = x + fraction * sensitivity
    if abs(Fraction(y) - Fraction(x)) > Fraction(sensitivity):  # float rounding of y
        return
    grid_x = make_grid([Fraction(x)], Fraction(noise), Fraction(sensitivity), integral=False)
    grid_y = make_grid([Fraction(y)], Fraction(noise), Fraction(sensitivity), integral=False)
    assert grid_x.k == grid_y.k  # the grid depends on public values only
    assert abs(grid_x.centres[0] - grid_y.centres[0]) <= grid_x.sensitivity
    assert grid_x.spacing * 2**10 <= min(Fraction(noise), Fraction(sensitivity)) or (
        Fraction(noise) / grid_x.spacing < 2**21
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, min_size=2, max_size=6), st.data(), positive, st.sampled_from(["l1", "l2"]))
def test_vector_rounding_respects_l1_and_l2(xs, data, sensitivity, norm) -> None:
    d = len(xs)
    weights = data.draw(st.lists(unit, min_size=d, max_size=d))
    size = sum(abs(w) for w in weights) if norm == "l1" else math.sqrt(sum(w * w for w in weights))
    ys = [x + w / (size or 1.0) * sensitivity * 0.999 for x, w in zip(xs, weights, strict=True)]
    shift = [float(Fraction(y) - Fraction(x)) for x, y in zip(xs, ys, strict=True)]
    moved = sum(abs(s) for s in shift) if norm == "l1" else math.sqrt(sum(s * s for s in shift))
    if moved > sensitivity:  # float rounding of ys
        return
    gx = make_grid([Fraction(x) for x in xs], Fraction(1), Fraction(sensitivity), False, norm)
    gy = make_grid([Fraction(y) for y in ys], Fraction(1), Fraction(sensitivity), False, norm)
    moves = [a - b for a, b in zip(gx.centres, gy.centres, strict=True)]
    size_moved = sum(abs(m) for m in moves) if norm == "l1" else math.sqrt(sum(m * m for m in moves))
    assert size_moved <= gx.sensitivity


def test_counts_stay_on_the_integers() -> None:
    grid = make_grid([Fraction(41), Fraction(7)], Fraction(10), Fraction(1), integral=True)
    assert grid.k == 0 and grid.sensitivity == 1 and grid.centres == (41, 7)


@given(st.fractions(min_value=Fraction(1, 10**6), max_value=10**9))
def test_discrete_scale_rounds_up_by_less_than_a_thousandth(target) -> None:
    t, s = discrete_scale(target)
    assert Fraction(t, s) >= target and Fraction(t, s) <= target * (1 + Fraction(1, 1000))
