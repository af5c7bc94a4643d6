"""Exact release paths of the sparse-vector family: every Laplace noise (thresholds, tests,
answers) becomes discrete Laplace on a grid (:mod:`.exact`), with scales rounded up.

Why the proofs still hold: AboveThreshold's privacy proof (Dwork & Roth 2014, Theorem 3.23)
fixes the query noises, shifts the threshold noise by the sensitivity Delta and the k-th query
noise by 2 Delta, and bounds the density ratios by e^(epsilon/2) each. On the grid the rounded
queries have integer sensitivity Delta_g = ceil(Delta/g) (as for every released answer), the
shifts are by integers, hence bijections of Z, and the discrete Laplace pmf ratio under a shift
by j is at most e^(j / scale), so the same bounds hold with scales 2 c Delta_g / epsilon and
4 c Delta_g / epsilon (rounded up). A real threshold T becomes the integer ceil(T/g): with
integer noisy values, "v + nu >= T/g + rho" is "v + nu - rho >= ceil(T/g)".

* Sparse vector (Algorithm 2, c runs of AboveThreshold): charged PureDP(epsilon).
* PMW via NumericSparse (Dwork & Roth 2014, Algorithm 3; the module :mod:`pmw`): the test value
  |q_i(x) - q_i(D_t)| (q_i(D_t) public) rounded on the grid, discrete Laplace on the threshold
  and the tests with epsilon_1 = 8 epsilon / 9, and on the update answers with
  epsilon_2 = 2 epsilon / 9 (sensitivity L Delta_g per answer, L answers); the multiplicative
  update of the public distribution is post-processing (floats allowed). Charged PureDP(epsilon).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.base import WorkloadInput
from dpexplorer.core.mechanisms.pmw import dense_workload
from dpexplorer.release import samplers
from dpexplorer.release.exact import (
    BOTTOM,
    ExactRelease,
    Grid,
    Value,
    discrete_scale,
    finite_fractions,
    make_grid,
)
from dpexplorer.release.rational import ceil_fraction
from dpexplorer.release.samplers import BitSource

TOP, HALTED = "⊤", "—"


def _fractions_of_rows(query: WorkloadInput) -> list[Fraction]:
    """q_i(D) = (W h)_i / sum(h), exactly (integer counts, rational result)."""
    workload = dense_workload(query.workload)
    histogram = np.asarray(query.histogram_d)
    if workload.ndim != 2 or workload.shape[1] != histogram.size or workload.shape[0] == 0:
        raise InvalidParameterError("the workload must be a (k, N) matrix over the cells; rebuild the query")
    if query.n < 2:
        raise InvalidParameterError(f"the dataset needs at least 2 rows; it has {query.n}")
    counts = [int(c) for c in finite_fractions(workload @ histogram, "workload answer")]
    total = max(int(sum(finite_fractions(histogram, "histogram"))), 1)
    return [Fraction(c, total) for c in counts]


class _Laplace:
    """A discrete Laplace noise of scale >= ``target`` grid steps, drawn one at a time."""

    def __init__(self, target: Fraction) -> None:
        self.t, self.s = discrete_scale(target)

    def __call__(self, bits: BitSource, size: int) -> np.ndarray:
        return samplers.discrete_laplace_array(self.t, self.s, size, bits)

    def describe(self) -> str:
        return f"{self.t}/{self.s}"


def sparse_vector_release(query: WorkloadInput, params: Mapping[str, Any]) -> ExactRelease:
    """Sparse vector on the grid: the responses ⊤ / ⊥ / — (halted) per query."""
    epsilon, c = float(params["epsilon"]), int(params["c"])
    values = _fractions_of_rows(query)
    delta = Fraction(1, query.n)
    per_run = Fraction(epsilon) / c
    grid = make_grid(values, 2 * delta / per_run, delta, integral=False, norm="each")
    rho = _Laplace(2 * grid.sensitivity / per_run)
    nu = _Laplace(4 * grid.sensitivity / per_run)
    threshold = ceil_fraction(Fraction(float(params["threshold"])) / grid.spacing)

    def draw(bits: BitSource) -> list[Value]:
        # all noises drawn up front (independent, so the same law): c thresholds at most
        thresholds, tests = iter(rho(bits, c).tolist()), nu(bits, len(values)).tolist()
        out: list[Value] = []
        positives, noisy = 0, next(thresholds)
        for v, z in zip(grid.centres, tests, strict=True):
            if positives >= c:
                out.append(HALTED)
            elif v + z - noisy >= threshold:
                out.append(TOP)
                positives += 1
                noisy = next(thresholds, 0)
            else:
                out.append(BOTTOM)
        return out

    return ExactRelease.pure(
        epsilon,
        sampler="sparse vector with discrete Laplace noises (CKS 2020 Algorithm 2) on a grid",
        labels=tuple(query.query_labels),
        draw=draw,
        provenance={
            **grid.describe(),
            "threshold_grid_units": threshold,
            "threshold_noise_scale_grid_units": rho.describe(),
            "query_noise_scale_grid_units": nu.describe(),
        },
    )


def _grid_round(value: float, grid: Grid) -> int:
    (exact,) = finite_fractions([value], "public answer")
    return math.floor(exact / grid.spacing + Fraction(1, 2))


def pmw_release(query: WorkloadInput, params: Mapping[str, Any]) -> ExactRelease:
    """PMW (NumericSparse) on the grid: per query its answer, or ⊥ after L updates."""
    epsilon, limit = float(params["epsilon"]), int(params["updates"])
    threshold_value, eta = Fraction(float(params["threshold"])), float(params["threshold"]) / 4
    truth = _fractions_of_rows(query)
    workload = dense_workload(query.workload)
    delta = Fraction(1, query.n)
    eps_tests, eps_answers = Fraction(epsilon) * 8 / 9, Fraction(epsilon) * 2 / 9
    grid = make_grid(truth, 2 * limit * delta / eps_tests, delta, integral=False, norm="each")
    rho = _Laplace(2 * limit * grid.sensitivity / eps_tests)
    nu = _Laplace(4 * limit * grid.sensitivity / eps_tests)
    answer_noise = _Laplace(limit * grid.sensitivity / eps_answers)
    threshold = ceil_fraction(threshold_value / grid.spacing)
    spacing = float(grid.spacing)

    def draw(bits: BitSource) -> list[Value]:
        distribution = np.full(workload.shape[1], 1.0 / workload.shape[1])
        # all noises drawn up front (independent, so the same law): L thresholds, L answers
        thresholds, answers = iter(rho(bits, limit).tolist()), iter(answer_noise(bits, limit).tolist())
        tests = nu(bits, len(truth)).tolist()
        out: list[Value] = []
        updates, noisy = 0, next(thresholds)
        for i, centre in enumerate(grid.centres):
            if updates >= limit:
                out.append(BOTTOM)
                continue
            approx = float(workload[i] @ distribution)
            if abs(centre - _grid_round(approx, grid)) + tests[i] - noisy < threshold:
                out.append(approx)
                continue
            answer = (centre + next(answers)) * spacing
            direction = 1.0 if answer > approx else -1.0
            distribution = distribution * np.exp(direction * eta * workload[i])
            distribution /= distribution.sum()
            out.append(answer)
            updates += 1
            noisy = next(thresholds, 0)
        return out

    return ExactRelease.pure(
        epsilon,
        sampler="PMW (NumericSparse) with discrete Laplace noises (CKS 2020 Algorithm 2) on a grid",
        labels=tuple(query.query_labels),
        draw=draw,
        provenance={
            **grid.describe(),
            "threshold_grid_units": threshold,
            "threshold_noise_scale_grid_units": rho.describe(),
            "test_noise_scale_grid_units": nu.describe(),
            "answer_noise_scale_grid_units": answer_noise.describe(),
        },
    )
