"""Selection / synthetic-data benchmarks (issue 5).

- BLR: candidates per second of the streaming exact sampler on ~1.2e8 candidates (18 cells,
  m = 13, 8 queries), against a naive implementation (enumerate every multiset with itertools,
  hold all weights, normalise, sample) on a smaller universe in the same run.
- PMW: seconds to answer 1e4 counting queries (3-way conjunctions over 16 binary attributes,
  i.e. a universe of 2^16 cells, sparse workload) for a dataset of 50,000 rows.

Usage: python benchmarks/selection.py [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time

import numpy as np
from scipy import sparse
from scipy.special import softmax

from dpexplorer.core.mechanisms.base import WorkloadInput
from dpexplorer.core.mechanisms.blr import BLR
from dpexplorer.core.mechanisms.pmw import PMW


def blr_input(n_cells: int, k: int, seed: int) -> WorkloadInput:
    rng = np.random.default_rng(seed)
    hist = rng.integers(0, 200, n_cells)
    workload = (rng.random((k, n_cells)) < 0.4).astype(np.int64)
    labels = tuple(map(str, range(n_cells)))
    return WorkloadInput(labels, tuple(f"q{i}" for i in range(k)), hist, hist, workload, int(hist.sum()))


def blr_fast(epsilon: float = 1.0) -> tuple[float, int, float]:
    """(candidates per second, candidates, estimated seconds) of BLR.run."""
    query = blr_input(18, 8, 0)
    mech = BLR()
    params = mech.validate({"epsilon": epsilon, "m": 13, "max_candidates": 1e9})
    estimate = mech.estimate_seconds(params, query)
    start = time.perf_counter()
    result = mech.run(params, query, np.random.default_rng(1))
    return result.candidates / (time.perf_counter() - start), result.candidates, estimate


def blr_naive(epsilon: float = 1.0) -> float:
    """Candidates per second of the naive normalise-everything sampler (12 cells, m = 8)."""
    query = blr_input(12, 8, 0)
    m, n_cells = 8, 12
    start = time.perf_counter()
    histograms = np.array(
        [
            np.bincount(c, minlength=n_cells)
            for c in itertools.combinations_with_replacement(range(n_cells), m)
        ]
    )
    truth = query.workload @ query.histogram_d / query.n
    errors = np.abs(histograms @ query.workload.T / m - truth).max(axis=1)
    pmf = softmax(-epsilon * query.n * errors / 2)
    np.random.default_rng(2).choice(len(pmf), p=pmf)
    return len(histograms) / (time.perf_counter() - start)


def conjunction_workload(k: int, bits: int, rng: np.random.Generator) -> sparse.csr_matrix:
    """k random 3-way conjunctions (attribute a = v_a and b = v_b and c = v_c) over ``bits``
    binary attributes; cell j has attribute i equal to bit i of j."""
    cells = np.arange(1 << bits)
    table = ((cells[None, :] >> np.arange(bits)[:, None]) & 1).astype(bool)
    indices = []
    for _ in range(k):
        attrs, values = rng.choice(bits, 3, replace=False), rng.integers(0, 2, 3).astype(bool)
        mask = (
            (table[attrs[0]] == values[0]) & (table[attrs[1]] == values[1]) & (table[attrs[2]] == values[2])
        )
        indices.append(np.flatnonzero(mask).astype(np.int32))
    indptr = np.concatenate([[0], np.cumsum([i.size for i in indices])])
    return sparse.csr_matrix((np.ones(indptr[-1]), np.concatenate(indices), indptr), shape=(k, 1 << bits))


def pmw_seconds() -> tuple[float, int, int]:
    """(seconds, answered queries, updates) for PMW on 1e4 queries over 2^16 cells."""
    rng = np.random.default_rng(3)
    workload = conjunction_workload(10_000, 16, rng)
    hist = rng.multinomial(50_000, rng.dirichlet(np.full(1 << 16, 0.05)))
    query = WorkloadInput((), tuple(map(str, range(10_000))), hist, hist, workload, 50_000)
    mech = PMW()
    params = mech.validate({"epsilon": 1.0, "threshold": 0.05, "updates": 100})
    start = time.perf_counter()
    transcript = mech.run(params, query, np.random.default_rng(4))
    seconds = time.perf_counter() - start
    answered = int(np.count_nonzero(~np.isnan(transcript.answers)))
    return seconds, answered, int(transcript.updates_used[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    fast, candidates, estimate = blr_fast()
    naive = blr_naive()
    pmw, answered, updates = pmw_seconds()
    figures = {
        "blr_candidates_per_s": fast,
        "blr_speedup_vs_naive": fast / naive,
        "pmw_1e4_queries_2p16_s": pmw,
        "blr_candidates": candidates,
        "blr_seconds": candidates / fast,
        "blr_estimated_seconds": estimate,
        "blr_naive_candidates_per_s": naive,
        "pmw_answered": answered,
        "pmw_updates": updates,
        "cpu_count": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key:28s} {value:,.4g}" if isinstance(value, float) else f"{key:28s} {value}")


if __name__ == "__main__":
    main()
