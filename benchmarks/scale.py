"""Past one machine: the app's engine on a large generated file against plain polars and duckdb.

    python benchmarks/scale.py --json [--rows 100000000] [--spark-rows 10000000] [--dir DIR]
                               [--formats parquet,csv] [--keep] [--repeat N] [--queries q1,q2]

Generates an Adult-shaped file of ``--rows`` rows (age and hours_per_week with ~2% missing,
sex, occupation, income; written in chunks, bounded memory) as Parquet and CSV in ``--dir``
(a temporary directory by default, deleted unless ``--keep``), then for each query runs, each
in a fresh child process so that its peak resident memory is its own:

* ours: ``load_dataset(path)`` (a file larger than a quarter of memory is scanned lazily; the
  child forces ``lazy=True`` so that smaller runs measure the same path), timed apart as
  ``open_s`` (once per file: the loader's checks, row count, missing values), then the query's
  ``query_input`` (true answers on D and on the worst-case D': what the app computes per query),
  timed as ``s``;
* polars: ``pl.scan_*`` and the same aggregate, streaming;
* duckdb: the same aggregate in SQL on the file.

With ``--repeat N`` each query runs N times per side, the three sides interleaved; the median
run is reported (its time, the largest peak RSS of the N, and every run's time).

Queries: count, predicate count (age > 40 and sex = Female), clipped mean (hours in [0, 99]),
median (same column: ours finds the order statistics around its rank by selection, no sort),
histogram (age in 8 bins), group-by mean (hours per occupation, declared categories). The
rivals' times are scan + answer from nothing. ``median_sorted`` (ours only, against the rivals'
median, reported apart in ``sorted_column_ratios``): the median's input with its sorted column
of D and D' read too, as smooth sensitivity, PTR and the exponential quantile read it.

Keys: ``scale_worst_ratio`` (the largest ours ``s`` / min(polars, duckdb) over queries and
formats; target <= 1.5), ``scale_worst_ratio_with_open`` (the same with ``open_s`` added),
``scale_peak_rss_mb`` (largest peak RSS of an ``ours`` child over count, predicate count,
clipped mean, histogram and group-by mean; target <= 2048; order statistics are reported apart, in
``order_statistic_peak_rss_mb``: the median selects, ``median_sorted`` holds the sorted
column of D and D'), and per query and format the
three times and RSS. With ``--spark-rows`` > 0: the same queries through the Spark engine
(``local[2]``) against polars on a Parquet file of that many rows (no target; the driver's
RSS only: the JVM is a separate process)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

OCCUPATIONS = [
    "Prof-specialty",
    "Craft-repair",
    "Exec-managerial",
    "Adm-clerical",
    "Sales",
    "Other-service",
    "Machine-op-inspct",
    "Transport-moving",
    "Handlers-cleaners",
    "Farming-fishing",
    "Tech-support",
    "Protective-serv",
    "Priv-house-serv",
    "Armed-Forces",
]
QUERIES = ("count", "predicate_count", "clipped_mean", "median", "median_sorted", "histogram", "groupby_mean")
ORDER = ("median", "median_sorted")
SORTED = {"median_sorted": "median"}
"""Ours only, against the rivals' plain median: the median's input with its sorted column of D
and D' read as well (what smooth sensitivity, PTR and the exponential quantile read). Not a
query of its own: reported apart, outside ``scale_worst_ratio``."""
AGE_EDGES = (17, 25, 32, 40, 48, 56, 64, 72, 91)


def generate(directory: Path, rows: int, formats: tuple[str, ...], seed: int = 17) -> dict[str, Path]:
    """Chunks of 5M rows as Parquet parts, then one streaming sink per format (files already
    in ``directory`` from a ``--keep`` run of the same size are reused)."""
    import numpy as np
    import polars as pl

    names = {fmt: directory / f"scale.{fmt}" for fmt in formats}
    if all(p.exists() for p in names.values()) and all(
        pl.scan_parquet(p).select(pl.len()).collect().item() == rows if fmt == "parquet" else True
        for fmt, p in names.items()
    ):
        return names

    parts = directory / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    chunk = 5_000_000
    for i, start in enumerate(range(0, rows, chunk)):
        n = min(chunk, rows - start)
        age = rng.integers(17, 91, n).astype(float)
        age[rng.random(n) < 0.02] = np.nan
        hours = np.round(rng.normal(40, 12, n), 1)
        hours[rng.random(n) < 0.02] = np.nan
        pl.DataFrame(
            {
                "age": pl.Series(age).fill_nan(None).cast(pl.Int64),
                "hours_per_week": pl.Series(hours).fill_nan(None),
                "sex": rng.choice(["Male", "Female"], n),
                "occupation": rng.choice(OCCUPATIONS, n),
                "income": rng.choice(["<=50K", ">50K"], n, p=[0.76, 0.24]),
            }
        ).write_parquet(parts / f"{i:04d}.parquet")
    out = {}
    scan = pl.scan_parquet(parts / "*.parquet")
    if "parquet" in formats:
        out["parquet"] = directory / "scale.parquet"
        scan.sink_parquet(out["parquet"])
    if "csv" in formats:
        out["csv"] = directory / "scale.csv"
        scan.sink_csv(out["csv"])
    shutil.rmtree(parts)
    return out


OURS = r"""
import json, sys, time
from dpexplorer.data.answers import query_input
from dpexplorer.data.queries import Axis, Count, GroupBy, Histogram, Mean, Median, PredicateCount, where
path, query, engine = sys.argv[1], sys.argv[2], sys.argv[3]
queries = {
    "count": Count(),
    "predicate_count": PredicateCount((where("age") > 40) & (where("sex") == "Female")),
    "clipped_mean": Mean("hours_per_week", 0, 99),
    "median": Median("hours_per_week", 0, 99),
    "median_sorted": Median("hours_per_week", 0, 99),
    "histogram": Histogram(Axis("age", edges=EDGES)),
    "groupby_mean": GroupBy((Axis("occupation", categories=OCCUPATIONS),), "mean", "hours_per_week", 0, 99),
}
t = time.perf_counter()
if engine == "spark":
    from dpexplorer.data.engine.spark_engine import open_spark, spark_session
    spark_session("local[2]").sparkContext.setLogLevel("ERROR")
    t = time.perf_counter()  # the session's start is not the query's
    ds = open_spark(path)
else:
    from dpexplorer.data.load import load_dataset
    ds = load_dataset(path, lazy=True)
opened = time.perf_counter() - t
inp = query_input(ds, queries[query])
if query == "median_sorted":
    import numpy
    numpy.asarray(inp.sorted_values_d), numpy.asarray(inp.sorted_values_d_prime)
total = time.perf_counter() - t
rss = PEAK
print(json.dumps({"s": total - opened, "open_s": opened, "rss_mb": rss}))
""".replace("EDGES", repr(AGE_EDGES)).replace("OCCUPATIONS", repr(tuple(OCCUPATIONS)))

POLARS = r"""
import json, sys, time
import polars as pl
path, query = sys.argv[1], sys.argv[2]
t = time.perf_counter()
lf = pl.scan_parquet(path) if path.endswith(".parquet") else pl.scan_csv(path)
hours = pl.col("hours_per_week").fill_null(49.5).clip(0, 99)
edges = EDGES
age_bin = pl.col("age").cut(list(edges[1:-1]), left_closed=True)
plans = {
    "count": lf.select(pl.len()),
    "predicate_count": lf.select(((pl.col("age") > 40) & (pl.col("sex") == "Female")).sum()),
    "clipped_mean": lf.select(hours.mean()),
    "median": lf.select(hours.quantile(0.5, "lower")),
    "histogram": lf.group_by(age_bin.alias("b")).len(),
    "groupby_mean": lf.group_by("occupation").agg(hours.mean()),
}
plans[query].collect(engine="streaming")
total = time.perf_counter() - t
print(json.dumps({"s": total, "rss_mb": PEAK}))
""".replace("EDGES", repr(AGE_EDGES))

DUCKDB = r"""
import json, sys, time
import duckdb
path, query = sys.argv[1], sys.argv[2]
t = time.perf_counter()
src = f"read_parquet('{path}')" if path.endswith(".parquet") else f"read_csv('{path}')"
hours = "least(greatest(coalesce(hours_per_week, 49.5), 0), 99)"
sql = {
    "count": f"select count(*) from {src}",
    "predicate_count": f"select count(*) filter (where age > 40 and sex = 'Female') from {src}",
    "clipped_mean": f"select avg({hours}) from {src}",
    "median": f"select quantile_disc({hours}, 0.5) from {src}",
    "histogram": f"select case EDGES_CASE end as b, count(*) from {src} group by b",
    "groupby_mean": f"select occupation, avg({hours}) from {src} group by occupation",
}
con = duckdb.connect()
con.execute("PRAGMA disable_progress_bar")
con.execute(sql[query]).fetchall()
total = time.perf_counter() - t
print(json.dumps({"s": total, "rss_mb": PEAK}))
"""


PEAK = "[int(line.split()[1]) / 1024 for line in open('/proc/self/status') if line.startswith('VmHWM')][0]"
"""The child's own peak resident memory in MiB (VmHWM: reset by exec, unlike ru_maxrss, which
on Linux carries the parent's peak across exec)."""


def _duckdb_child() -> str:
    cases = " ".join(f"when age >= {e} then {i}" for i, e in reversed(list(enumerate(AGE_EDGES[1:-1], 1))))
    return DUCKDB.replace("EDGES_CASE", f"when age is null then -1 {cases} else 0")


def _child(code: str, *args: str) -> dict | None:
    done = subprocess.run(
        [sys.executable, "-c", code.replace("PEAK", PEAK), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])


def measure(
    path: Path, queries: tuple[str, ...], engine: str = "polars", rivals: bool = True, repeat: int = 1
) -> dict:
    """Per query, each side's run with the median time of ``repeat`` runs (the three sides
    interleaved, so a burst of load falls on all of them), its peak RSS the largest of its runs,
    and every run's time under ``runs``."""
    out = {}
    for q in queries:
        sides: dict[str, list[dict]] = {"ours": [], "polars": []}
        if rivals and q not in SORTED:
            sides["duckdb"] = []
        for _ in range(repeat):
            sides["ours"].append(_child(OURS, str(path), q, engine))
            sides["polars"].append(_child(POLARS, str(path), SORTED.get(q, q)))
            if "duckdb" in sides:
                sides["duckdb"].append(_child(_duckdb_child(), str(path), q))
        row = {side: _median_run(runs) for side, runs in sides.items()}
        print(f"{engine} {path.suffix} {q}: {json.dumps(row)}", file=sys.stderr)
        out[q] = row
    return out


def _median_run(runs: list[dict | None]) -> dict | None:
    """The run of median time (the upper median of an even count), with the largest peak RSS
    of all the runs and their times; None when a run failed."""
    done = [r for r in runs if r is not None]
    if not done or len(done) < len(runs):
        return None
    middle = sorted(done, key=lambda r: r["s"])[len(done) // 2]
    return {**middle, "rss_mb": max(r["rss_mb"] for r in done), "runs": [round(r["s"], 3) for r in done]}


def summarise(results: dict) -> dict:
    """Ratios of ours (the answer on the opened dataset; and open + answer) to the faster rival."""
    ratios, with_open, rss, order_rss, sorted_ratios = {}, {}, [], [], {}
    for fmt, per_query in results.items():
        for q, row in per_query.items():
            rivals = [row[k]["s"] for k in ("polars", "duckdb") if row.get(k)]
            if q in SORTED and row["ours"] and rivals:
                sorted_ratios[f"{fmt}/{q}"] = round(row["ours"]["s"] / min(rivals), 2)
                order_rss.append(row["ours"]["rss_mb"])
            elif row["ours"] and rivals:
                ratios[f"{fmt}/{q}"] = round(row["ours"]["s"] / min(rivals), 2)
                with_open[f"{fmt}/{q}"] = round((row["ours"]["s"] + row["ours"]["open_s"]) / min(rivals), 2)
                (order_rss if q in ORDER else rss).append(row["ours"]["rss_mb"])
    return {
        "scale_worst_ratio": max(ratios.values()) if ratios else None,
        "scale_ratios": ratios,
        "scale_worst_ratio_with_open": max(with_open.values()) if with_open else None,
        "scale_ratios_with_open": with_open,
        "scale_peak_rss_mb": round(max(rss)) if rss else None,
        "order_statistic_peak_rss_mb": round(max(order_rss)) if order_rss else None,
        "sorted_column_ratios": sorted_ratios,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--spark-rows", type=int, default=10_000_000)
    parser.add_argument("--formats", default="parquet,csv")
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="runs per query and side (medians reported)")
    parser.add_argument("--queries", default=",".join(QUERIES), help="comma-separated names of QUERIES")
    args = parser.parse_args()
    formats = tuple(f for f in args.formats.split(",") if f)
    queries = tuple(q for q in args.queries.split(",") if q)
    if unknown := set(queries) - set(QUERIES):
        parser.error(f"unknown queries: {', '.join(sorted(unknown))}")
    base = args.dir or Path(tempfile.mkdtemp(prefix="dpx-scale-"))
    try:
        files = generate(base / "main", args.rows, formats)
        results = {fmt: measure(path, queries, repeat=args.repeat) for fmt, path in files.items()}
        report = {
            "rows": args.rows,
            "repeat": args.repeat,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "file_mb": {fmt: round(p.stat().st_size / 2**20) for fmt, p in files.items()},
            **summarise(results),
            "results": results,
        }
        if args.spark_rows > 0:
            spark_file = generate(base / "spark", args.spark_rows, ("parquet",))["parquet"]
            spark = measure(spark_file, queries, engine="spark", rivals=False, repeat=args.repeat)
            report["spark"] = {"rows": args.spark_rows, "results": spark}
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(report, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
