"""The sensitivity side-by-side numbers against brute force on small integer data: every dataset
within distance k of D is enumerated (values on the integer grid of the bounds, where the
extreme moves land), and GS, LS, A(k), S* and the distance to instability recomputed from the
definitions (Nissim, Raskhodnikova & Smith 2007; Dwork & Roth 2014, section 7.2)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.sensitivity_profile import distance_grid, sensitivity_profile

LOWER, UPPER = 0, 8
GRID = range(LOWER, UPPER + 1)


def _statistic(name, q=0.5, trim=0.0):
    def f(values):
        x = sorted(values)
        n = len(x)
        if name in ("median", "quantile"):
            if n == 0:
                return float(LOWER)
            rank = max(1, math.ceil((0.5 if name == "median" else q) * n - 1e-12))
            return float(x[rank - 1])
        m = math.floor(trim * n + 1e-12)
        return float(np.mean(x[m : n - m]))

    return f


def _neighbours(values, relation):
    values = tuple(sorted(values))
    out = set()
    for i in range(len(values)):
        rest = values[:i] + values[i + 1 :]
        if relation == "add_remove":
            out.add(rest)
        else:
            out.update(tuple(sorted((*rest, v))) for v in GRID)
    if relation == "add_remove":
        out.update(tuple(sorted((*values, v))) for v in GRID)
    out.discard(values)
    return out


def _ls(values, f, relation):
    here = f(values)
    return max((abs(here - f(other)) for other in _neighbours(values, relation)), default=0.0)


def _within(values, k, relation):
    """Every dataset at distance <= k (breadth-first over neighbours)."""
    seen = {tuple(sorted(values))}
    frontier = set(seen)
    for _ in range(k):
        frontier = {o for d in frontier for o in _neighbours(d, relation)} - seen
        seen |= frontier
    return seen


def _brute_a(values, f, relation, k_max):
    return [max(_ls(d, f, relation) for d in _within(values, k, relation)) for k in range(k_max + 1)]


CASES = [
    # data, statistic, relation, q, trim
    ((3, 4, 4, 4, 6), "median", "replace", 0.5, 0.0),
    ((1, 2, 5, 6, 7), "median", "replace", 0.5, 0.0),
    ((2, 2, 3, 7, 7), "quantile", "replace", 0.25, 0.0),
    ((0, 3, 4, 5, 8), "trimmed_mean", "replace", 0.5, 0.2),
    ((3, 4, 4, 4, 6), "median", "add_remove", 0.5, 0.0),
    ((1, 2, 4, 4, 7), "median", "add_remove", 0.5, 0.0),
]


@pytest.mark.parametrize(("data", "statistic", "relation", "q", "trim"), CASES)
def test_profile_matches_brute_force(data, statistic, relation, q, trim):
    f = _statistic(statistic, q, trim)
    beta = 0.4
    k_max = len(data) + 1 if relation == "replace" else 3  # replace: every dataset by k = n
    brute = _brute_a(data, f, relation, k_max)
    profile = sensitivity_profile(
        np.array(sorted(data), dtype=float),
        LOWER,
        UPPER,
        statistic,
        relation,
        beta,
        quantile=q,
        trim_fraction=trim,
    )
    assert profile.local_sensitivity == pytest.approx(brute[0])
    shown = {int(k): a for k, a in zip(profile.distances, profile.local_at_distance, strict=True)}
    for k in range(k_max + 1):
        if k in shown:
            assert shown[k] == pytest.approx(brute[k]), f"A({k})"
    assert np.allclose(profile.smoothed, profile.local_at_distance * np.exp(-beta * profile.distances))
    if relation == "replace":  # A is constant from k = n on: the smooth sensitivity is a finite max
        smooth = max(a * math.exp(-beta * k) for k, a in enumerate(brute))
        assert profile.smooth_sensitivity == pytest.approx(smooth)
        best = min(k for k, a in enumerate(brute) if a * math.exp(-beta * k) >= smooth * (1 - 1e-9))
        assert profile.argmax_k == best
    if statistic == "median":
        first_unstable = min(k for k, a in enumerate(brute) if a > 0)
        assert profile.distance_to_instability == first_unstable


def test_global_sensitivity_is_the_largest_local_sensitivity_under_replace():
    f = _statistic("median")
    brute = max(_ls(d, f, "replace") for d in itertools.combinations_with_replacement(GRID, 4))
    profile = sensitivity_profile(np.array([1.0, 2.0, 3.0, 4.0]), LOWER, UPPER, "median", "replace", 0.1)
    assert profile.global_sensitivity == pytest.approx(brute) == UPPER - LOWER


def test_statistics_without_a_k_curve_get_global_and_local_only():
    profile = sensitivity_profile(np.array([1.0, 2.0, 6.0]), LOWER, UPPER, "mean", "replace", 0.1)
    assert profile.smooth_sensitivity is None and profile.distances.size == 0
    assert profile.local_sensitivity == pytest.approx((UPPER - 1.0) / 3)
    assert "mean" in profile.note


def test_the_curve_reaches_where_it_stops_mattering():
    values = np.sort(np.random.default_rng(1).integers(0, 101, 2001)).astype(float)
    profile = sensitivity_profile(values, 0, 100, "median", "replace", 0.05)
    assert profile.distances[0] == 0 and len(profile.distances) <= 400
    tail = profile.smoothed[-1]
    assert tail <= 1e-3 * profile.smooth_sensitivity * 1.0001 or profile.distances[-1] == len(values) + 1
    assert profile.smoothed.max() <= profile.smooth_sensitivity * (1 + 1e-12)


def test_distance_grid_and_bad_beta():
    assert list(distance_grid(4)) == [0, 1, 2, 3, 4]
    grid = distance_grid(10_000, 50)
    assert grid[0] == 0 and grid[-1] == 10_000 and len(grid) == 50
    with pytest.raises(InvalidParameterError):
        sensitivity_profile(np.array([1.0]), 0, 1, "median", "replace", -1.0)
