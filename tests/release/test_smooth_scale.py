"""The beta-smooth upper bound S' (dpexplorer.release.smooth_scale): close to the core's S*,
never below it, and, by brute force over every neighbour of small datasets, an upper bound on
the local sensitivity with S'(x) <= e^beta S'(y)."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.sensitivity import smooth_sensitivity
from dpexplorer.release.lazy import context, fraction_bounds
from dpexplorer.release.smooth_scale import FLOOR, decay_ratio, smooth_upper_bound

LOWER, UPPER = 0.0, 10.0
VALUES = (0.0, 0.5, 1.0, 2.5, 3.0, 7.25, 10.0)
"""Values of the small datasets (the bounds included: worst-case neighbours move a row there)."""
CASES = (
    ("median", "replace", {}),
    ("median", "add_remove", {}),
    ("quantile", "replace", {"quantile": 0.8}),
    ("trimmed_mean", "replace", {"trim_fraction": 0.2}),
)


def _statistic(x: list[Fraction], statistic: str, options: dict[str, float]) -> Fraction:
    """f in exact rationals, written from the conventions (independent of the code under test)."""
    n = len(x)
    if n == 0:
        return Fraction(LOWER)
    x = sorted(x)
    if statistic == "trimmed_mean":
        m = math.floor(options["trim_fraction"] * n + 1e-12)
        return sum(x[m : n - m], Fraction(0)) / (n - 2 * m)
    q = options.get("quantile", 0.5)
    return x[max(1, math.ceil(q * n - 1e-12)) - 1]


def _neighbours(x: list[float], relation: str) -> list[list[float]]:
    """Every neighbour whose new value (if any) is in VALUES."""
    out = []
    for i in range(len(x)):
        rest = x[:i] + x[i + 1 :]
        if relation == "add_remove":
            out.append(rest)
        else:
            out.extend(sorted([*rest, v]) for v in VALUES)
    if relation == "add_remove":
        out.extend(sorted([*x, v]) for v in VALUES)
    return out


def _bound(x: list[float], beta: float, statistic: str, relation: str, options: dict[str, float]) -> Fraction:
    return smooth_upper_bound(np.array(x), LOWER, UPPER, beta, statistic, relation=relation, **options)


@pytest.mark.parametrize(("statistic", "relation", "options"), CASES)
def test_bound_is_smooth_and_above_local_sensitivity_by_brute_force(
    statistic: str, relation: str, options: dict[str, float]
) -> None:
    rng = np.random.default_rng(5)
    for beta in (0.1, 0.7):
        ctx = context(200)
        e_beta = fraction_bounds(ctx.exp(ctx.mpf(beta)))[0]  # a rigorous lower bound on e^beta
        for _ in range(6):
            x = sorted(rng.choice(VALUES, size=int(rng.integers(4, 8))).tolist())
            s_x = _bound(x, beta, statistic, relation, options)
            f_x = _statistic([Fraction(v) for v in x], statistic, options)
            for y in _neighbours(x, relation):
                s_y = _bound(y, beta, statistic, relation, options)
                assert s_x <= e_beta * s_y and s_y <= e_beta * s_x
                assert abs(f_x - _statistic([Fraction(v) for v in y], statistic, options)) <= s_x


@pytest.mark.parametrize(("statistic", "relation", "options"), CASES)
def test_bound_is_at_least_the_core_smooth_sensitivity_and_tight(
    statistic: str, relation: str, options: dict[str, float]
) -> None:
    rng = np.random.default_rng(11)
    for beta in (0.02, 0.3, 1.5):
        for n in (40, 333):
            x = np.sort(np.clip(rng.normal(5, 2.5, n), LOWER, UPPER).round(int(rng.integers(0, 3))))
            core = smooth_sensitivity(x, LOWER, UPPER, beta, statistic, relation=relation, **options)
            ours = _bound(x.tolist(), beta, statistic, relation, options)
            if core < 1e-280:
                assert ours >= FLOOR
                continue
            assert ours >= Fraction(core)
            assert float(ours) / core - 1 < 1e-9


def test_decay_ratio_is_rigorous_and_rejects_bad_beta() -> None:
    for beta in (1e-4, 0.25, 3.0, 20.0):
        r = decay_ratio(beta)
        with mpmath.workprec(300):
            exact = mpmath.exp(-mpmath.mpf(beta))
            assert mpmath.mpf(r) * (1 - mpmath.mpf(2) ** -53) >= exact
            assert mpmath.mpf(r) <= exact * (1 + mpmath.mpf(2) ** -46)
    for bad in (0.0, 1e-12, -1.0, math.inf, math.nan, 1e3):
        with pytest.raises(InvalidParameterError):
            decay_ratio(bad)


def test_constant_column_is_fast_and_floored() -> None:
    """Ties everywhere: A(k) = 0 up to k ~ n/2; the galloping search skips the flat stretch."""
    x = np.r_[LOWER, np.full(20_001, 4.0), UPPER]
    for relation in ("replace", "add_remove"):
        s = _bound(x.tolist(), 0.002, "median", relation, {})
        core = smooth_sensitivity(x, LOWER, UPPER, 0.002, "median", relation=relation)
        assert Fraction(core) <= s and float(s) / core - 1 < 1e-9
        assert _bound(x.tolist(), 1.0, "median", relation, {}) == FLOOR
