"""A statistic by two privately selected key columns of many values whose rows occupy few of
their combinations (issue 16): the candidates must be found without the cross product.

    python benchmarks/private_key_pairs.py [--json] [--values 3000]

Writes a CSV where person i has two rows, (a_i, b_i) and (a_i, b_i+1): each column has
``values`` distinct values (a cross product of values**2 cells), 2 x ``values`` combinations
occur. Then builds the release's input (``query_input`` with exact sums) for a count without a
privacy unit and a mean and a median with one (2 groups, 1 row per person: every row kept), each
in a fresh process, and prints its wall seconds and peak RSS (MB) and the candidates found."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CASES = (("count", False), ("mean", True), ("quantile", True))

CHILD = """
import json, resource, sys, time
from pathlib import Path
from dpexplorer.data.answers import query_input
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import GroupBy, PrivacyUnit, PrivateKeys

path, statistic, unit = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
dataset = load_dataset(Path(path))
bounds = (None, None, None) if statistic == "count" else ("x", 0.0, 10.0)
query = GroupBy((), statistic, *bounds, PrivacyUnit("p", 2, 1) if unit else None,
                PrivateKeys(("a", "b"), 1.0, 1e-6))
start = time.perf_counter()
built = query_input(dataset, query, "add_remove", bounding_seed=1, exact_sums=True)
seconds = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_rss_mb": rss, "candidates": len(built.labels)}))
"""


def write_data(path: Path, values: int) -> None:
    import polars as pl

    i = np.arange(values)
    pl.DataFrame(
        {
            "p": np.repeat(i, 2),
            "a": np.char.add("a", np.repeat(i, 2).astype(str)),
            "b": np.char.add("b", np.c_[i, (i + 1) % values].ravel().astype(str)),
            "x": np.linspace(0, 10, 2 * values),
        }
    ).write_csv(path)


def run(folder: Path, values: int) -> dict[str, object]:
    data = folder / "pairs.csv"
    write_data(data, values)
    out: dict[str, object] = {"values_per_column": values, "cross_product_cells": values**2}
    for statistic, unit in CASES:
        command = [sys.executable, "-c", CHILD, str(data), statistic, "1" if unit else "0"]
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        name = f"{statistic}_{'unit' if unit else 'rows'}"
        out[f"{name}_seconds"] = round(result["seconds"], 3)
        out[f"{name}_peak_rss_mb"] = round(result["peak_rss_mb"])
        out[f"{name}_candidates"] = result["candidates"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--values", type=int, default=3_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = run(Path(tmp), args.values)
    print(json.dumps(result) if args.json else "\n".join(f"{k}: {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
