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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpexplorer.core.cancel import ProgressFn
from dpexplorer.core.mechanisms.base import WorkloadInput
from dpexplorer.core.mechanisms.pmw import dense_workload
from dpexplorer.core.stages import stage
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
from dpexplorer.release.row_count import Denominator, true_counts
from dpexplorer.release.samplers import BitSource

TOP, HALTED = "⊤", "—"


class _Laplace:
    """A discrete Laplace noise of scale >= ``target`` grid steps, drawn one at a time."""

    def __init__(self, target: Fraction) -> None:
        self.t, self.s = discrete_scale(target)

    def __call__(self, bits: BitSource, size: int) -> np.ndarray:
        return samplers.discrete_laplace_array(self.t, self.s, size, bits)

    def describe(self) -> str:
        return f"{self.t}/{self.s}"


@dataclass(frozen=True)
class _Tests:
    """AboveThreshold's part of a release at ``per_run`` epsilon per run (Dwork & Roth 2014,
    Theorem 3.23), built after the charge from the drawn denominator n_hat: the grid of the shares
    c_i / n_hat (Delta = 1 / n_hat), the threshold noise (2 Delta_g / per_run grid steps), the
    test noise (4 Delta_g / per_run) and the threshold in grid units."""

    grid: Grid
    rho: _Laplace
    nu: _Laplace
    threshold: int

    @classmethod
    def build(cls, counts: tuple[int, ...], n_hat: int, per_run: Fraction, threshold: Fraction) -> _Tests:
        delta = Fraction(1, n_hat)
        shares = [Fraction(c, n_hat) for c in counts]
        grid = make_grid(shares, 2 * delta / per_run, delta, integral=False, norm="each")
        rho = _Laplace(2 * grid.sensitivity / per_run)
        nu = _Laplace(4 * grid.sensitivity / per_run)
        return cls(grid, rho, nu, ceil_fraction(threshold / grid.spacing))

    def describe(self, n_hat: int) -> dict[str, Any]:
        """Published under ``dp_outputs`` (the test noise's key is the caller's)."""
        return {
            "denominator": n_hat,
            **self.grid.describe(),
            "threshold_grid_units": self.threshold,
            "threshold_noise_scale_grid_units": self.rho.describe(),
        }


def sparse_vector_release(query: WorkloadInput, params: Mapping[str, Any]) -> ExactRelease:
    """Sparse vector on the grid: the responses ⊤ / ⊥ / — (halted) per query. The denominator,
    the grid and the noise scales are drawn or built after the charge (module docstring)."""
    epsilon, c = float(params["epsilon"]), int(params["c"])
    counts, rows = true_counts(query), Denominator.for_query(query, params)
    threshold_value = Fraction(float(params["threshold"]))
    facts: dict[str, Any] = {}

    def draw(bits: BitSource) -> list[Value]:
        n_hat = rows.draw(bits)
        tests = _Tests.build(counts, n_hat, rows.rest / c, threshold_value)
        facts.update(tests.describe(n_hat), query_noise_scale_grid_units=tests.nu.describe())
        # all noises drawn up front (independent, so the same law): c thresholds at most
        thresholds, noises = iter(tests.rho(bits, c).tolist()), tests.nu(bits, len(counts)).tolist()
        out: list[Value] = []
        positives, noisy = 0, next(thresholds)
        for v, z in zip(tests.grid.centres, noises, strict=True):
            if positives >= c:
                out.append(HALTED)
            elif v + z - noisy >= tests.threshold:
                out.append(TOP)
                positives += 1
                noisy = next(thresholds, 0)
            else:
                out.append(BOTTOM)
        return out

    sampler = "sparse vector with discrete Laplace noises (CKS 2020 Algorithm 2) on a grid"
    return _over_workload(epsilon, query, rows, sampler, draw, facts)


def _over_workload(
    epsilon: float,
    query: WorkloadInput,
    rows: Denominator,
    sampler: str,
    draw: Callable[[BitSource], list[Value]],
    facts: dict[str, Any],
) -> ExactRelease:
    """A pure epsilon-DP release of one value per query of the workload (sparse vector, PMW):
    labelled by the queries, its provenance the noisy denominator's (fixed before the charge),
    ``facts`` the grid and noise scales ``draw`` fills in after it."""
    return ExactRelease.pure(
        epsilon,
        sampler=sampler,
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
    counts, rows = true_counts(query), Denominator.for_query(query, params)
    workload = dense_workload(query.workload)
    eps_tests, eps_answers = rows.rest * 8 / 9, rows.rest * 2 / 9
    facts: dict[str, Any] = {}

    def draw(bits: BitSource) -> list[Value]:
        n_hat = rows.draw(bits)
        tests = _Tests.build(counts, n_hat, eps_tests / limit, threshold_value)  # L runs of AboveThreshold
        answer_noise = _Laplace(limit * tests.grid.sensitivity / eps_answers)
        facts.update(
            tests.describe(n_hat),
            test_noise_scale_grid_units=tests.nu.describe(),
            answer_noise_scale_grid_units=answer_noise.describe(),
        )
        noises = (tests.rho, tests.nu, answer_noise)
        with stage("PMW: answering the workload's queries") as report:
            return _pmw_transcript(workload, tests.grid, noises, tests.threshold, eta, limit, bits, report)

    sampler = "PMW (NumericSparse) with discrete Laplace noises (CKS 2020 Algorithm 2) on a grid"
    return _over_workload(epsilon, query, rows, sampler, draw, facts)


def _pmw_transcript(
    workload: np.ndarray,
    grid: Grid,
    noises: tuple[_Laplace, _Laplace, _Laplace],
    threshold: int,
    eta: float,
    limit: int,
    bits: BitSource,
    progress: ProgressFn | None = None,
) -> list[Value]:
    """One PMW run on the grid (the multiplicative update is post-processing, floats allowed);
    ``progress`` hears the share of the queries answered."""
    rho, nu, answer_noise = noises
    spacing = float(grid.spacing)
    distribution = np.full(workload.shape[1], 1.0 / workload.shape[1])
    # all noises drawn up front (independent, so the same law): L thresholds, L answers
    thresholds, answers = iter(rho(bits, limit).tolist()), iter(answer_noise(bits, limit).tolist())
    tests = nu(bits, len(grid.centres)).tolist()
    out: list[Value] = []
    updates, noisy = 0, next(thresholds)
    every = max(1, len(grid.centres) // 200)
    for i, centre in enumerate(grid.centres):
        if progress is not None and i % every == 0:
            progress(i / len(grid.centres))
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
