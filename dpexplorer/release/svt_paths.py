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

Shares of rows: the counts are divided by a denominator, the public n under replace, else a noisy
row count bought with a declared share of epsilon (:mod:`.row_count`); the grid, the scales and
the threshold in grid units are built from it after the charge and published under
``dp_outputs``. The mechanism runs at the epsilon left (epsilon' below).

* Sparse vector (Algorithm 2, c runs of AboveThreshold, each at epsilon' / c): charged
  PureDP(epsilon) (the count at <= epsilon_n plus epsilon' = epsilon - epsilon_n).
* PMW via NumericSparse (Dwork & Roth 2014, Algorithm 3; the module :mod:`pmw`): the test value
  |q_i(x) - q_i(D_t)| (q_i(D_t) public) rounded on the grid, discrete Laplace on the threshold
  and the tests with epsilon_1 = 8 epsilon' / 9, and on the update answers with
  epsilon_2 = 2 epsilon' / 9 (sensitivity L Delta_g per answer, L answers); the multiplicative
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
from dpexplorer.release.row_count import Denominator
from dpexplorer.release.samplers import BitSource

TOP, HALTED = "⊤", "—"


def _counts(query: WorkloadInput) -> list[int]:
    """(W h)_i, the true counts (integers by construction; PRIVATE: used only in ``draw``). The
    shape check depends on the declared query only."""
    workload = dense_workload(query.workload)
    histogram = np.asarray(query.histogram_d)
    if workload.ndim != 2 or workload.shape[1] != histogram.size or workload.shape[0] == 0:
        raise InvalidParameterError("the workload must be a (k, N) matrix over the cells; rebuild the query")
    return [int(c) for c in np.rint(workload @ histogram)]


def _shares(counts: list[int], denominator: int) -> list[Fraction]:
    return [Fraction(c, denominator) for c in counts]


class _Laplace:
    """A discrete Laplace noise of scale >= ``target`` grid steps, drawn one at a time."""

    def __init__(self, target: Fraction) -> None:
        self.t, self.s = discrete_scale(target)

    def __call__(self, bits: BitSource, size: int) -> np.ndarray:
        return samplers.discrete_laplace_array(self.t, self.s, size, bits)

    def describe(self) -> str:
        return f"{self.t}/{self.s}"


def sparse_vector_release(query: WorkloadInput, params: Mapping[str, Any]) -> ExactRelease:
    """Sparse vector on the grid: the responses ⊤ / ⊥ / — (halted) per query. The denominator,
    the grid and the noise scales are drawn or built after the charge (module docstring)."""
    epsilon, c = float(params["epsilon"]), int(params["c"])
    counts, rows = _counts(query), Denominator.for_query(query, params)
    per_run = rows.rest / c
    threshold_value = Fraction(float(params["threshold"]))
    facts: dict[str, Any] = {}

    def draw(bits: BitSource) -> list[Value]:
        n_hat = rows.draw(bits)
        delta = Fraction(1, n_hat)
        grid = make_grid(_shares(counts, n_hat), 2 * delta / per_run, delta, integral=False, norm="each")
        rho = _Laplace(2 * grid.sensitivity / per_run)
        nu = _Laplace(4 * grid.sensitivity / per_run)
        threshold = ceil_fraction(threshold_value / grid.spacing)
        facts.update(
            denominator=n_hat,
            **grid.describe(),
            threshold_grid_units=threshold,
            threshold_noise_scale_grid_units=rho.describe(),
            query_noise_scale_grid_units=nu.describe(),
        )
        # all noises drawn up front (independent, so the same law): c thresholds at most
        thresholds, tests = iter(rho(bits, c).tolist()), nu(bits, len(counts)).tolist()
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
        provenance=rows.describe(),
        dp_outputs=facts,
    )


def _grid_round(value: float, grid: Grid) -> int:
    (exact,) = finite_fractions([value], "public answer")
    return math.floor(exact / grid.spacing + Fraction(1, 2))


def pmw_release(query: WorkloadInput, params: Mapping[str, Any]) -> ExactRelease:
    """PMW (NumericSparse) on the grid: per query its answer, or ⊥ after L updates. The
    denominator, the grid and the noise scales are drawn or built after the charge."""
    epsilon, limit = float(params["epsilon"]), int(params["updates"])
    threshold_value, eta = Fraction(float(params["threshold"])), float(params["threshold"]) / 4
    counts, rows = _counts(query), Denominator.for_query(query, params)
    workload = dense_workload(query.workload)
    eps_tests, eps_answers = rows.rest * 8 / 9, rows.rest * 2 / 9
    facts: dict[str, Any] = {}

    def draw(bits: BitSource) -> list[Value]:
        n_hat = rows.draw(bits)
        delta = Fraction(1, n_hat)
        noise = 2 * limit * delta / eps_tests
        grid = make_grid(_shares(counts, n_hat), noise, delta, integral=False, norm="each")
        rho = _Laplace(2 * limit * grid.sensitivity / eps_tests)
        nu = _Laplace(4 * limit * grid.sensitivity / eps_tests)
        answer_noise = _Laplace(limit * grid.sensitivity / eps_answers)
        threshold = ceil_fraction(threshold_value / grid.spacing)
        facts.update(
            denominator=n_hat,
            **grid.describe(),
            threshold_grid_units=threshold,
            threshold_noise_scale_grid_units=rho.describe(),
            test_noise_scale_grid_units=nu.describe(),
            answer_noise_scale_grid_units=answer_noise.describe(),
        )
        return _pmw_transcript(workload, grid, (rho, nu, answer_noise), threshold, eta, limit, bits)

    return ExactRelease.pure(
        epsilon,
        sampler="PMW (NumericSparse) with discrete Laplace noises (CKS 2020 Algorithm 2) on a grid",
        labels=tuple(query.query_labels),
        draw=draw,
        provenance=rows.describe(),
        dp_outputs=facts,
    )


def _pmw_transcript(
    workload: np.ndarray,
    grid: Grid,
    noises: tuple[_Laplace, _Laplace, _Laplace],
    threshold: int,
    eta: float,
    limit: int,
    bits: BitSource,
) -> list[Value]:
    """One PMW run on the grid (the multiplicative update is post-processing, floats allowed)."""
    rho, nu, answer_noise = noises
    spacing = float(grid.spacing)
    distribution = np.full(workload.shape[1], 1.0 / workload.shape[1])
    # all noises drawn up front (independent, so the same law): L thresholds, L answers
    thresholds, answers = iter(rho(bits, limit).tolist()), iter(answer_noise(bits, limit).tolist())
    tests = nu(bits, len(grid.centres)).tolist()
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
