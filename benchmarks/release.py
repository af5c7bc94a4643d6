"""Throughput of the exact release samplers with the OS CSPRNG (issue 7; target >= 1e5/s).

    python benchmarks/release.py --json

Discrete Laplace (CKS 2020 Algorithm 2) at scale t/s = 2048/1 and discrete Gaussian (Algorithm 3)
at sigma^2 = 1449^2 (t = 1449), the sizes the release path uses (the grid makes the noise
2^10..2^21 grid steps wide). Samples per second: best of 3 runs of 1e6 draws each, so the
figure is the sampler's, not the machine's other load. Also the scalar (one draw at a time,
Fraction arithmetic) Laplace sampler for comparison."""

from __future__ import annotations

import argparse
import json
import os
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = measure()
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>18}: {value:,.0f}")


if __name__ == "__main__":
    main()
