"""Group-by mean with contribution bounding (issue 16) against a plain polars group-by.

    python benchmarks/groupby.py [--json] [--rows 10000000] [--persons 1000000] [--groups 100]
                                 [--repeat 3] [--before DIR]

A Parquet file of ``rows`` rows (``persons`` persons with 1 to 2 * rows / persons - 1 rows each,
a group among ``groups`` per row, a value) is written once to a temporary directory, sorted by
person (as many exports are), and the same rows again in a random order. Each measurement runs
in a fresh process (so its peak RSS is its own), interleaved, ``repeat`` times, timed after the
imports:

* ``polars``: ``scan_parquet(...).group_by("group").agg(mean)``, collected (no bounding);
* ``bounded``: what a release of the mean by group computes from the rows: the file loaded by
  ``load_dataset`` (``load_s``), the engine's :class:`~dpexplorer.data.engine.GroupedCentredSums`
  after :class:`~dpexplorer.data.engine.BoundContributions` (2 groups per person, 3 rows per
  group; ``aggregate_s``), then the exact release path (``noisy_mean``) drawn (``draw_s``);
* ``polars_shuffled``, ``bounded_shuffled``: the same on the shuffled file (the bounding then
  names the persons by a direct index instead of run starts);
* ``bounded_before`` (with ``--before DIR``, a source tree of another commit, e.g. from
  ``git archive``): ``bounded`` with that tree's ``dpexplorer`` first on ``PYTHONPATH``.

Printed: medians of wall time, of each phase, and peak RSS; ``groupby_ratio_vs_polars``
(bounded / polars median time, sorted file) and ``groupby_peak_rss_mb`` (bounded's largest peak
RSS), ``shuffled_ratio_vs_polars``, and ``load_ratio_vs_polars`` (``load_dataset`` alone against
the whole plain group-by: a floor under the ratio). Targets: ratio <= 3, peak <= 2,048 MB."""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def write_data(path: Path, rows: int, persons: int, groups: int, seed: int = 0) -> None:
    """The rows sorted by person to ``path``, and in a random order to shuffled.parquet beside it."""
    import polars as pl

    rng = np.random.default_rng(seed)
    mean_rows = rows / persons
    per_person = rng.integers(1, max(2, int(2 * mean_rows)), persons)
    per_person = np.maximum(1, np.round(per_person * rows / per_person.sum())).astype(np.int64)
    person = np.repeat(np.arange(persons, dtype=np.int64), per_person)[:rows]
    frame = pl.DataFrame(
        {
            "person": person,
            "group": np.char.add("g", rng.integers(0, groups, person.size).astype(str)),
            "value": rng.normal(50.0, 20.0, person.size),
        }
    )
    frame.write_parquet(path)
    frame[rng.permutation(frame.height)].write_parquet(path.with_name("shuffled.parquet"))


def child(mode: str, path: str, groups: int) -> dict[str, float]:
    """One measurement in this process: wall seconds (and of each phase) and peak RSS (MB)."""
    import polars as pl

    phases: dict[str, float] = {}
    if mode.startswith("polars"):
        start = time.perf_counter()
        pl.scan_parquet(path).group_by("group").agg(pl.col("value").mean()).collect()
    else:
        from dpexplorer.core.mechanisms.base import NumericInput
        from dpexplorer.core.mechanisms.registry import get
        from dpexplorer.data.engine import POLARS, BoundContributions, GroupedCentredSums
        from dpexplorer.data.load import load_dataset
        from dpexplorer.data.queries import Axis
        from dpexplorer.release.plans import exact_release
        from dpexplorer.release.samplers import default_bit_source

        get("noisy_mean")  # imports (scipy, the registry) are not timed, as polars' own are not
        start = time.perf_counter()
        keys = (Axis("group", categories=tuple(f"g{g}" for g in range(groups))),)
        dataset = load_dataset(path)
        phases["load_s"] = time.perf_counter() - start
        steps = (BoundContributions("person", keys, 2, 3, None),)
        moments = POLARS.aggregate(dataset, GroupedCentredSums("value", 0.0, 100.0, keys), steps)
        phases["aggregate_s"] = time.perf_counter() - start - phases["load_s"]
        value = np.array([50 + m.centred_sum / max(m.count, 1) for m in moments])
        query = NumericInput(
            value, value, 150.0, 150.0, sum(m.count for m in moments), "mean", bounds=(0.0, 100.0),
            moments=moments, moments_prime=moments, moment_sensitivities=(2 * 3 * 50.0, 6.0),
        )  # fmt: skip
        mechanism = get("noisy_mean")
        exact_release(mechanism, mechanism.validate({"epsilon": 1.0}), query).draw(default_bit_source())
    seconds = time.perf_counter() - start
    if phases:
        phases["draw_s"] = seconds - phases["load_s"] - phases["aggregate_s"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "peak_rss_mb": peak, **phases}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--persons", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", metavar="DIR", help="a source tree to measure side by side")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--write", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.groups)))
        return
    if args.write:
        write_data(Path(args.write), args.rows, args.persons, args.groups)
        return
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"sorted": Path(tmp) / "rows.parquet", "shuffled": Path(tmp) / "shuffled.parquet"}
        # written by another process: Linux keeps a process's peak RSS across fork and exec, so
        # the children must not be forked from one that held the generated columns
        sizes = ["--rows", str(args.rows), "--persons", str(args.persons), "--groups", str(args.groups)]
        subprocess.run([sys.executable, __file__, *sizes, "--write", str(paths["sorted"])], check=True)
        modes = ["polars", "bounded", "polars_shuffled", "bounded_shuffled"]
        modes += ["bounded_before"] if args.before else []
        runs: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
        for _ in range(args.repeat):
            for mode in runs:
                path = paths["shuffled" if mode.endswith("shuffled") else "sorted"]
                command = [sys.executable, __file__, "--groups", str(args.groups), "--child", mode, str(path)]
                env = dict(os.environ)
                if mode == "bounded_before":
                    env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.before, env.get("PYTHONPATH")]))
                out = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
                runs[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
    medians = {m: statistics.median(r["seconds"] for r in runs[m]) for m in runs}

    def phase(mode: str, name: str) -> float:
        return statistics.median(r[name] for r in runs[mode])

    result = {
        "rows": args.rows,
        "persons": args.persons,
        "groups": args.groups,
        "repeat": args.repeat,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "polars_seconds": medians["polars"],
        "bounded_seconds": medians["bounded"],
        "bounded_load_s": phase("bounded", "load_s"),
        "bounded_aggregate_s": phase("bounded", "aggregate_s"),
        "bounded_draw_s": phase("bounded", "draw_s"),
        "polars_peak_rss_mb": max(r["peak_rss_mb"] for r in runs["polars"]),
        "groupby_peak_rss_mb": max(r["peak_rss_mb"] for r in runs["bounded"] + runs["bounded_shuffled"]),
        "groupby_ratio_vs_polars": medians["bounded"] / medians["polars"],
        "load_ratio_vs_polars": phase("bounded", "load_s") / medians["polars"],
        "polars_shuffled_seconds": medians["polars_shuffled"],
        "bounded_shuffled_seconds": medians["bounded_shuffled"],
        "bounded_shuffled_aggregate_s": phase("bounded_shuffled", "aggregate_s"),
        "shuffled_ratio_vs_polars": medians["bounded_shuffled"] / medians["polars_shuffled"],
        "runs": runs,
    }
    if args.before:
        result["before_seconds"] = medians["bounded_before"]
        result["before_aggregate_s"] = phase("bounded_before", "aggregate_s")
        result["before_ratio_vs_polars"] = medians["bounded_before"] / medians["polars"]
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            if key != "runs":
                print(f"{key}: {value:.4g}" if isinstance(value, float) else f"{key}: {value}")


if __name__ == "__main__":
    main()
