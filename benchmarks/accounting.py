"""Tight accounting benchmark (issue 6): 100 Laplace (b = 10), 100 Gaussian (sigma = 5) and
50 Gaussian (sigma = 1), epsilon at delta = 1e-6, dpexplorer's PLD against dp_accounting's
PLDAccountant (if installed) in the same run.

    python benchmarks/accounting.py [--json] [--repeat N]

Our time is the median of N cold calls (the PLD cache cleared before each; also their median
CPU time, which is what a quiet machine would show when others load it); the reference is timed
once per repeat up to 3 (it takes seconds)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from dpexplorer.core.accounting import compose as compose_module
from dpexplorer.core.accounting.guarantees import GaussianNoise, LaplaceNoise

DELTA = 1e-6
GUARANTEES = [LaplaceNoise(10.0)] * 100 + [GaussianNoise(5.0)] * 100 + [GaussianNoise(1.0)] * 50


def ours() -> tuple[float, float, float]:
    """(epsilon, wall ms, CPU ms) of one cold call."""
    compose_module._pld.cache_clear()
    start, cpu = time.perf_counter(), time.process_time()
    eps = compose_module.epsilon_at(GUARANTEES, "pld", DELTA)
    return eps, (time.perf_counter() - start) * 1e3, (time.process_time() - cpu) * 1e3


def reference() -> tuple[float, float] | None:
    try:
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant
    except ImportError:
        return None
    start = time.perf_counter()
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dp_accounting.LaplaceDpEvent(10.0), 100)
    accountant.compose(dp_accounting.GaussianDpEvent(5.0), 100)
    accountant.compose(dp_accounting.GaussianDpEvent(1.0), 50)
    eps = accountant.get_epsilon(DELTA)
    return eps, (time.perf_counter() - start) * 1e3


def _reference_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("dp-accounting")
    except Exception:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    ours()  # warm-up: imports, FFT plans
    runs = [ours() for _ in range(args.repeat)]
    refs = [r for r in (reference() for _ in range(min(args.repeat, 3))) if r is not None]
    result: dict[str, object] = {
        "pld_eps": runs[0][0],
        "pld_ms": statistics.median(t for _, t, _ in runs),
        "pld_ms_min": min(t for _, t, _ in runs),
        "pld_cpu_ms": statistics.median(c for _, _, c in runs),
        "load_average_1min": os.getloadavg()[0],
        "reference_eps": refs[0][0] if refs else None,
        "reference_ms": statistics.median(t for _, t in refs) if refs else None,
        "reference": f"dp_accounting {_reference_version()} PLDAccountant" if refs else None,
        "cpu_count": os.cpu_count(),
    }
    if refs:
        tighter = min(runs[0][0], refs[0][0])
        result["relative_above_tighter"] = runs[0][0] / tighter - 1
        result["speedup"] = result["reference_ms"] / result["pld_ms"]  # type: ignore[operator]
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>24}: {value}")


if __name__ == "__main__":
    main()
