"""Throughput of the exact release samplers with the OS CSPRNG (issue 7; target >= 1e5/s).

    python benchmarks/release.py --json

Discrete Laplace (CKS 2020 Algorithm 2) at scale t/s = 2048/1 and discrete Gaussian (Algorithm 3)
at sigma^2 = 1449^2 (t = 1449), the sizes the release path uses (the grid makes the noise
2^10..2^21 grid steps wide). Samples per second: best of 3 runs of 1e6 draws each, so the
figure is the sampler's, not the machine's other load. Also the scalar (one draw at a time,
Fraction arithmetic) Laplace sampler for comparison.

``--paths`` adds the release paths built on lazy uniforms and interval arithmetic, on the bundled
Adult data at epsilon = 1: milliseconds per draw (median of 30) of smooth sensitivity (Cauchy,
Laplace-log-normal) on the median age and of report-noisy-max with Laplace noise over the 16
education values, and seconds for one whole BLR and one MWEM release (preparation and draw) on
a 1-way marginal of age in 8 bins."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from fractions import Fraction

from dpexplorer.release import samplers

SIZE = 1_000_000
RUNS = 3


def _best_rate(draw: Callable[[int], object], size: int) -> float:
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        draw(size)
        best = min(best, time.perf_counter() - start)
    return size / best


def measure() -> dict[str, float | int]:
    bits = samplers.SystemBitSource()
    return {
        "dlap_per_s": _best_rate(lambda n: samplers.discrete_laplace_array(2048, 1, n, bits), SIZE),
        "dgauss_per_s": _best_rate(lambda n: samplers.discrete_gaussian_array(1449, 1449, 1, n, bits), SIZE),
        "dlap_scalar_per_s": _best_rate(
            lambda n: [samplers.discrete_laplace(Fraction(2048), bits) for _ in range(n)], 20_000
        ),
        "cores": os.cpu_count() or 0,
        "samples": SIZE,
    }


def _median_ms(draw: Callable[[], object], runs: int = 30) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        draw()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure_paths() -> dict[str, float]:
    """Per-draw and per-release times of the lazy-real release paths (module docstring)."""
    from dpexplorer.data import queries as q
    from dpexplorer.data.default import default_dataset_path
    from dpexplorer.data.load import load_dataset
    from dpexplorer.release.release import prepare

    dataset = load_dataset(default_dataset_path())
    bits = samplers.SystemBitSource()
    education = tuple(sorted(dataset.frame["education"].drop_nulls().unique().to_list()))
    median_age = q.Median("age", 17, 90)
    cases = {
        "smooth_cauchy_draw_ms": (median_age, "smooth_cauchy", {"epsilon": 1.0}),
        "smooth_lln_draw_ms": (median_age, "smooth_lln", {"epsilon": 1.0}),
        "noisy_max_laplace_draw_ms": (
            q.ArgMax("education", education),
            "noisy_max",
            {"epsilon": 1.0, "noise": "laplace"},
        ),
    }
    result = {}
    for key, (query, mechanism, params) in cases.items():
        exact = prepare(dataset, query, mechanism, params).exact
        result[key] = _median_ms(lambda exact=exact: exact.draw(bits))
    workload = q.marginal_workload([q.Axis("age", edges=tuple(range(17, 91, 9)))], ways=(1,))
    for mechanism in ("blr", "mwem"):
        result[f"{mechanism}_release_s"] = (
            _median_ms(
                lambda m=mechanism: prepare(dataset, workload, m, {"epsilon": 1.0}).exact.draw(bits), 3
            )
            / 1000
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--paths", action="store_true", help="also time the lazy-real release paths")
    args = parser.parse_args()
    result = measure()
    if args.paths:
        result.update(measure_paths())
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>18}: {value:,.0f}")


if __name__ == "__main__":
    main()
