"""Error against the number k of counting queries: BLR's synthetic database against PMW's online
answers (seeds 000 and 004; Dwork & Roth 2014, sections 4.1 and 4.2).

For k on a grid, on the data's histogram over N cells, ``replicates`` workloads of k random
counting queries are drawn (each cell in each query with probability 1/2; the workload of k is
the first k queries of one workload of the largest k, so the curves are nested). For each:

* **BLR** with m synthetic rows (the largest m whose C(N+m-1, m) candidates fit
  ``max_candidates``, the same m for every k): its expected max error, computed *exactly* over
  all candidates (the exponential mechanism's weights exp(-(eps/2) n err), as in
  :mod:`.mechanisms.blr`); and the best candidate's max error OPT.
* **PMW** at the given threshold T and update rounds L: one simulated run, its max error over
  the answered queries, and the share of queries answered ⊥.

The curves are means over the replicates with their standard errors (the spread of workloads and,
for PMW, of its noise). Beside them, the theory:

* BLR, a bound on the mean (upper bound): E[max error] <= OPT + (2/(n eps))(ln|R| + 1), from the
  exponential mechanism's tail P[err >= OPT + (2/(n eps))(ln|R| + t)] <= e^-t (Dwork & Roth 2014,
  Theorem 3.11, with Delta u = 1 on counts) integrated over t >= 0; and OPT <= gamma_m =
  sqrt(ln(2k) / (2m)) (seed 000, section 12.4: Hoeffding and a union bound over the k queries).
* PMW, a bound that holds with probability >= 1 - beta for every *answered* query (upper bound):
  the union bound over NumericSparse's noises (Dwork & Roth 2014, Theorem 3.28, made concrete for
  :mod:`.mechanisms.pmw`'s scales), see :func:`pmw_error_bound`. It says nothing of ⊥ (after L
  updates PMW stops answering).

k enters both bounds only through ln k."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms.blr import all_multisets, multiset_count
from dpexplorer.core.mechanisms.pmw import answered_max_error, pmw_run
from dpexplorer.core.row_count import split_epsilon

K_GRID = (1, 2, 4, 8, 16, 32, 64, 128, 256)
REPLICATES = 20
MAX_CANDIDATES = 8_000
"""BLR's candidates for this view (its exact mean is a pass over all of them for every k)."""
MAX_M = 64


@dataclass(frozen=True, eq=False)
class ErrorAgainstK:
    """Means over ``replicates`` random workloads at each k of ``ks`` (errors as shares of n)."""

    ks: np.ndarray
    m: int
    candidates: int
    n: float
    epsilon: float
    beta: float
    replicates: int
    blr_mean: np.ndarray
    """Mean over workloads of BLR's exact expected max error."""
    blr_se: np.ndarray
    blr_opt: np.ndarray
    """Mean over workloads of the best candidate's max error."""
    blr_bound: np.ndarray
    """gamma_m + (2/(n eps))(ln|R| + 1): an upper bound on BLR's expected max error."""
    pmw_mean: np.ndarray
    """Mean over runs of PMW's max error over its answered queries (0 when none is answered)."""
    pmw_se: np.ndarray
    pmw_bottom: np.ndarray
    """Mean share of the k queries that PMW answers ⊥."""
    pmw_bound: np.ndarray
    """Holds with probability >= 1 - beta for every answered query (:func:`pmw_error_bound`)."""


def random_workload(rng: np.random.Generator, k: int, n_cells: int) -> np.ndarray:
    """k random counting queries: each cell in each query with probability 1/2 (0/1 matrix)."""
    return (rng.random((k, n_cells)) < 0.5).astype(np.int64)


def blr_size(n_cells: int, max_candidates: int = MAX_CANDIDATES) -> int:
    """The largest m <= MAX_M whose C(N+m-1, m) candidates fit ``max_candidates``."""
    if multiset_count(n_cells, 1) > max_candidates:
        raise NotApplicableError(
            f"the universe has {n_cells:,} cells: BLR's exact error is computed here for at most "
            f"{max_candidates:,} candidate synthetic datasets"
        )
    m = 1
    while m < MAX_M and multiset_count(n_cells, m + 1) <= max_candidates:
        m += 1
    return m


def blr_expected_errors(
    candidates: np.ndarray, histogram: np.ndarray, workload: np.ndarray, epsilon: float, ks: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each k of ``ks``: BLR's exact expected max error over the first k queries of
    ``workload`` and the best candidate's (OPT). ``candidates`` are all histograms of size m."""
    m = float(candidates[0].sum())
    hist = np.asarray(histogram, dtype=float)
    n = hist.sum()
    queries = np.asarray(workload, dtype=float)
    truth = queries @ hist / n
    errors = queries @ (candidates.T / m)  # (k_max, candidates); in place from here on
    np.subtract(errors, truth[:, None], out=errors)
    np.abs(errors, out=errors)
    means, best = np.empty(len(ks)), np.empty(len(ks))
    err, done = np.zeros(errors.shape[1]), 0
    for j, k in enumerate(ks):  # the max over the first k queries, from the max over the first k'
        err = np.maximum(err, errors[done:k].max(axis=0)) if k > done else err
        done = max(done, int(k))
        best[j] = err.min()
        weights = np.exp(-epsilon * n * (err - best[j]) / 2)  # score n * err, sensitivity 1
        means[j] = float(weights @ err / weights.sum())
    return means, best


def blr_mean_bound(ks: np.ndarray, m: int, n_cells: int, n: float, epsilon: float) -> np.ndarray:
    """gamma_m(k) + (2/(n eps))(ln C(N+m-1, m) + 1): an upper bound on BLR's expected max error
    (module docstring)."""
    gamma = np.sqrt(np.log(2 * np.asarray(ks, dtype=float)) / (2 * m))
    return gamma + 2.0 / (n * epsilon) * (math.log(multiset_count(n_cells, m)) + 1.0)


def pmw_error_bound(
    ks: np.ndarray, n: float, params: Mapping[str, float], relation: str, beta: float
) -> np.ndarray:
    """With probability >= 1 - beta, every query PMW answers (of k) is within this of its true
    share (upper bound). beta is split in four by the union bound:

    * the row count (add/remove): |n_hat - n| <= z = ln(4/beta) / eps_n, so n_hat >= n - z and a
      share moves by |c/n - c/n_hat| <= z / (n - z);
    * the L + 1 threshold noises Lap(sigma): each within sigma ln(4(L+1)/beta);
    * the k deciding test noises Lap(2 sigma): each within 2 sigma ln(4k/beta);
    * the L answer noises Lap(b): each within b ln(4L/beta);

    with sigma = 2L/(n_hat eps_1) and b = L/(n_hat eps_2) taken at n_hat = n - z. A lazy answer
    passed the test, so it is within T + |threshold noise| + |test noise| of the shares it was
    tested on; an update is within its answer noise. (Dwork & Roth 2014, Theorem 3.28.)"""
    k = np.asarray(ks, dtype=float)
    threshold, updates = float(params["threshold"]), int(params["updates"])
    spent, rest = split_epsilon(params, relation)
    z = math.log(4 / beta) / spent if spent > 0 else 0.0
    low = n - z
    if low < 1:
        return np.full(k.shape, np.inf)
    shift = z / low
    sigma = 2 * updates / (low * 8 * rest / 9)
    answer = updates / (low * 2 * rest / 9)
    lazy = threshold + sigma * math.log(4 * (updates + 1) / beta) + 2 * sigma * np.log(4 * k / beta)
    return shift + np.maximum(lazy, answer * math.log(4 * updates / beta))


def pmw_max_error(
    workload: np.ndarray,
    histogram: np.ndarray,
    params: Mapping[str, float],
    rng: np.random.Generator,
    relation: str,
) -> tuple[float, float]:
    """One PMW run: (max error over the answered queries, 0 if none; share answered ⊥)."""
    answers, _, _, _, truth = pmw_run(workload, histogram, params, rng, relation)
    return answered_max_error(answers, truth), float(1.0 - (~np.isnan(answers)).mean())


def error_against_k(
    histogram: np.ndarray,
    *,
    epsilon: float,
    threshold: float,
    updates: int,
    count_share: float,
    relation: str,
    seed: int,
    beta: float = 0.05,
    ks: tuple[int, ...] = K_GRID,
    replicates: int = REPLICATES,
    max_candidates: int = MAX_CANDIDATES,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> ErrorAgainstK:
    """BLR and PMW against k on ``histogram`` (module docstring); exploration generator, seeded."""
    hist = np.asarray(histogram, dtype=float)
    n_cells, n = hist.size, float(hist.sum())
    if n < 1:
        raise NotApplicableError("the data have no rows: there is no error to show")
    grid = np.asarray(ks, dtype=np.int64)
    m = blr_size(n_cells, max_candidates)
    candidates = all_multisets(n_cells, m).astype(float)
    pmw_params = {"epsilon": epsilon, "threshold": threshold, "updates": updates, "count_share": count_share}
    rng = np.random.default_rng(seed)
    blr = np.empty((replicates, grid.size, 2))
    pmw = np.empty((replicates, grid.size, 2))
    for r in range(replicates):
        checkpoint(cancel, progress, r / replicates)
        workload = random_workload(rng, int(grid.max()), n_cells)
        blr[r, :, 0], blr[r, :, 1] = blr_expected_errors(candidates, hist, workload, epsilon, grid)
        for j, k in enumerate(grid):
            pmw[r, j] = pmw_max_error(workload[:k], hist, pmw_params, rng, relation)
    checkpoint(cancel, progress, 1.0)
    root = math.sqrt(replicates)
    return ErrorAgainstK(
        ks=grid,
        m=m,
        candidates=len(candidates),
        n=n,
        epsilon=epsilon,
        beta=beta,
        replicates=replicates,
        blr_mean=blr[:, :, 0].mean(axis=0),
        blr_se=blr[:, :, 0].std(axis=0, ddof=1) / root,
        blr_opt=blr[:, :, 1].mean(axis=0),
        blr_bound=blr_mean_bound(grid, m, n_cells, n, epsilon),
        pmw_mean=pmw[:, :, 0].mean(axis=0),
        pmw_se=pmw[:, :, 0].std(axis=0, ddof=1) / root,
        pmw_bottom=pmw[:, :, 1].mean(axis=0),
        pmw_bound=pmw_error_bound(grid, n, pmw_params, relation, beta),
    )
