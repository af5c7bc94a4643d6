"""The floating-point test of issue 7 (Mironov 2012): for neighbouring true answers 0 and 1, the
sets of possible outputs must be identical. The release path passes (every output of either
input is a grid point, and the discrete Laplace gives every grid point positive probability);
numpy's float Laplace fails: most outputs on true answer 1 are floats that numpy's sampler can
never produce on true answer 0."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpexplorer.core.accounting.guarantees import GaussianNoise, LaplaceNoise
from dpexplorer.core.mechanisms.base import NumericInput
from dpexplorer.release.numeric_paths import gaussian_release, laplace_release
from dpexplorer.release.samplers import SeededBitSource

SCALE = 1.0  # epsilon = 1 for sensitivity 1
N_DRAWS = 400


def _numpy_laplace(u: float) -> float:
    """numpy's Generator.laplace(0, SCALE) as a function of its uniform double U
    (numpy/random/src/distributions/distributions.c, random_laplace), with the same libm log."""
    if u >= 0.5:
        return 0.0 - SCALE * math.log(2.0 - u - u)
    return 0.0 + SCALE * math.log(u + u)


def _numpy_can_output(x: float) -> bool:
    """Is ``x`` in the image of numpy's Laplace(0, SCALE)? U ranges over the doubles k 2^-53,
    k = 1 .. 2^53 - 1; the map is non-decreasing in k on each branch, so binary search decides."""
    low, high = (2**52, 2**53 - 1) if x >= 0 else (1, 2**52 - 1)
    while low <= high:
        mid = (low + high) // 2
        y = _numpy_laplace(mid / 2**53)
        if y == x:
            return True
        if y < x:
            low = mid + 1
        else:
            high = mid - 1
    return False


def _query(true_answer: float) -> NumericInput:
    return NumericInput(
        value_d=np.array([true_answer]),
        value_d_prime=np.array([1.0 - true_answer]),
        sensitivity_l1=1.0,
        sensitivity_l2=1.0,
        n=100,
        statistic="mean",
    )


def test_numpy_float_laplace_fails_the_test() -> None:
    assert all(_numpy_can_output(x) for x in np.random.default_rng(1).laplace(0.0, SCALE, 50))
    outputs_on_1 = np.random.default_rng(2).laplace(1.0, SCALE, N_DRAWS)
    impossible_on_0 = sum(not _numpy_can_output(float(x)) for x in outputs_on_1)
    assert impossible_on_0 > N_DRAWS * 0.5  # about 80% here; Mironov 2012 reports about 81%


@pytest.mark.parametrize("path", ["laplace", "gaussian"])
def test_release_path_passes_the_test(path: str) -> None:
    """Every output of either input lies on the same grid g * Z, and both the discrete Laplace
    and the discrete Gaussian give every point of Z positive probability: the sets of possible
    outputs are identical (g * Z for both)."""
    grids = set()
    for true_answer in (0.0, 1.0):
        if path == "laplace":
            release = laplace_release(_query(true_answer), LaplaceNoise(SCALE, 1.0), 0.95)
        else:
            release = gaussian_release(_query(true_answer), GaussianNoise(3.0, 1.0), 1e-6, 0.95)
        spacing = Fraction(release.provenance["grid_spacing"])
        grids.add(spacing)
        bits = SeededBitSource(int(true_answer) + 7)
        for _ in range(N_DRAWS // 4):
            (value,) = release.draw(bits)
            assert (Fraction(value) / spacing).denominator == 1  # on the grid spacing * Z
    assert len(grids) == 1  # same grid: both inputs can output every point of it
