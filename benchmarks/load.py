"""Loading a large CSV: dpexplorer's load_dataset against a plain polars.read_csv of the same file.

    python benchmarks/load.py --json [--rows 10000000] [--runs 3]

Generates a CSV of ``--rows`` rows shaped like UCI Adult (age, sex, income, hours_per_week,
capital_gain) in a temporary directory (deleted afterwards), then, in fresh child processes
alternating the two, measures:

* load_ratio_vs_polars: median load-to-queryable time of ``load_dataset`` (its checks, schema,
  row count, warnings) over the median time of ``polars.read_csv`` (target <= 1.2);
* peak_rss_mb: the largest peak resident memory of a ``load_dataset`` child (target <= 1024);
* predicate_count_ms: median of 5 timings of the true answer of
  PredicateCount(age > 40 and sex == "Female") on the loaded dataset (target <= 50 ms);
  predicate_count_first_ms is the first of them, which also dictionary-encodes the text column
  "sex" once (Dataset caches it for later queries).

Each child runs alone, so its peak RSS is that of one load (and of the queries after it)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD_POLARS = r"""
import resource, sys, time
import polars as pl
t = time.perf_counter()
df = pl.read_csv(sys.argv[1])
t = time.perf_counter() - t
print(t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, df.height)
"""

CHILD_OURS = r"""
import resource, statistics, sys, time
from dpexplorer.data.load import load_dataset
from dpexplorer.data.answers import true_answer
from dpexplorer.data.queries import PredicateCount, where
t = time.perf_counter()
ds = load_dataset(sys.argv[1])
t = time.perf_counter() - t
q = PredicateCount((where("age") > 40) & (where("sex") == "Female"))
times = []
for _ in range(5):
    s = time.perf_counter()
    true_answer(ds, q)
    times.append((time.perf_counter() - s) * 1000)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(t, rss, ds.n_rows, statistics.median(times), times[0])
"""


def generate(path: Path, rows: int, seed: int = 7) -> None:
    """An Adult-shaped CSV written in chunks of one million rows (bounded memory)."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    with open(path, "wb") as fh:
        for start in range(0, rows, 1_000_000):
            m = min(1_000_000, rows - start)
            chunk = pl.DataFrame(
                {
                    "age": rng.integers(17, 91, m),
                    "sex": np.where(rng.random(m) < 0.33, "Female", "Male"),
                    "income": np.where(rng.random(m) < 0.24, ">50K", "<=50K"),
                    "hours_per_week": rng.integers(1, 100, m),
                    "capital_gain": np.where(rng.random(m) < 0.92, 0, rng.integers(1, 100_000, m)),
                }
            )
            chunk.write_csv(fh, include_header=start == 0)


def run_child(code: str, path: Path) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, check=True
    )
    return [float(v) for v in out.stdout.split()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dpexplorer-bench-") as tmp:
        path = Path(tmp) / "big.csv"
        generate(path, args.rows)
        size_mb = path.stat().st_size / 2**20
        polars_runs, ours_runs = [], []
        for _ in range(args.runs):
            polars_runs.append(run_child(CHILD_POLARS, path))
            ours_runs.append(run_child(CHILD_OURS, path))
    assert all(r[2] == args.rows for r in polars_runs + ours_runs)
    polars_s = statistics.median(r[0] for r in polars_runs)
    ours_s = statistics.median(r[0] for r in ours_runs)
    result = {
        "load_ratio_vs_polars": round(ours_s / polars_s, 3),
        "peak_rss_mb": round(max(r[1] for r in ours_runs), 1),
        "predicate_count_ms": round(statistics.median(r[3] for r in ours_runs), 2),
        "predicate_count_first_ms": round(statistics.median(r[4] for r in ours_runs), 2),
        "load_s": round(ours_s, 3),
        "polars_read_csv_s": round(polars_s, 3),
        "polars_peak_rss_mb": round(max(r[1] for r in polars_runs), 1),
        "rows": args.rows,
        "file_mb": round(size_mb, 1),
        "runs": args.runs,
        "cpu_count": os.cpu_count(),
    }
    print(json.dumps(result) if args.json else "\n".join(f"{k}: {v}" for k, v in result.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
