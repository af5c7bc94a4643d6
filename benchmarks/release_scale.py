"""Releases end to end against the floor (issue 29).

    python benchmarks/release_scale.py --json [--rows 1000000,10000000] [--large]
                                       [--formats parquet,csv] [--repeat 5] [--dir DIR] [--keep]

Generates, per size, a file of ``rows`` rows (``person``: about rows / 10.5 persons with 1 to 20
rows each; ``group``: 50 groups g0..g49; ``value``: normal(50, 20)) as Parquet and CSV (written
in chunks: bounded memory), then runs, interleaved, ``--repeat`` times each:

* ours: a fresh ``python -m dpexplorer release`` process with a fresh ledger (the first release
  on the file: nothing cached) for each of: the row count (Laplace), the sum of ``value``
  clipped to [0, 100] (Laplace), the mean of ``value`` in [0, 100] by the 50 declared groups
  with ``person`` as the privacy unit (2 groups, 3 rows; noisy_mean), epsilon 1;
* the floor: a fresh ``python`` process that reads the whole file with polars (every column, as
  identifying the dataset must) and computes the same aggregate without DP (a plain group-by
  of the clipped mean for the third);
* identity: a fresh process that reads the file with polars and then computes the content
  fingerprint of the frame read (``identity_vs_read``: the fingerprint's time over the read's;
  each library loaded before its timed step, the fingerprint's compiled kernels as polars:
  their load, once a process, is ``identity_load`` in the medians).

Times are wall-clock medians; peak RSS is the child's (``wait4``), largest over the repeats.
Every child starts from cached bytecode, as an installed package does (pip compiles it on
install): the children cache compiled code in a private directory (``PYTHONPYCACHEPREFIX``,
filled by a warm-up run, nothing written into the tree) even when the shell sets
PYTHONDONTWRITEBYTECODE=1, which otherwise compiles the package's modules at every start (about
0.1 s of each release before 2026-11-26 18:30 UTC). ``--compiling`` measures that way instead.
The children run in a scratch directory, with ``PYTHONPATH`` set to the tree measured (the
current directory would come first on ``sys.path``); ``--before DIR`` runs the same releases
from the package in DIR (a ``git archive REV | tar -x -C DIR``) interleaved with this tree's and
reports them as ``before_*`` with the ratios after / before. ``--reuse`` keeps data files already
in ``--dir`` (same names and sizes) instead of writing them again.
Keys: ``release_count_ratio``, ``release_sum_ratio``, ``release_groupby_unit_ratio`` (ours over
the floor at 10M rows, the worse format; targets <= 2, 2, 3), ``release_peak_rss_mb_10m`` (and
``_100m`` with ``--large``; targets 1,000 and 2,048), ``identity_vs_read`` (at 10M, the worse
format; target <= 1), ``cli_import_s`` (a fresh interpreter importing the CLI and its
``account`` command: what ``dpexplorer account ...`` costs before it computes; target <= 0.3),
with ``version_s`` (``dpexplorer --version``) and ``release_import_s`` (the release command and
its path modules) beside it. A release repeated on the same file costs the same: nothing is
cached between processes."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GROUPS = 50
HERE = Path(__file__).resolve().parent.parent
"""This tree (the package the releases import, whatever is installed)."""
PLANS = {
    "count": {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 1.0}},
    "sum": {
        "query": {"type": "sum", "column": "value", "lower": 0, "upper": 100},
        "mechanism": "laplace",
        "parameters": {"epsilon": 1.0},
    },
    "groupby_unit": {
        "query": {
            "type": "group_by",
            "keys": [{"column": "group", "categories": [f"g{i}" for i in range(GROUPS)]}],
            "statistic": "mean",
            "column": "value",
            "lower": 0.0,
            "upper": 100.0,
            "unit": {"column": "person", "max_groups": 2, "max_rows": 3},
        },
        "mechanism": "noisy_mean",
        "parameters": {"epsilon": 1.0},
    },
}
FLOOR = {
    "count": "out = frame.height",
    "sum": "out = frame.select(pl.col('value').clip(0, 100).sum()).item()",
    "groupby_unit": "out = frame.group_by('group').agg(pl.col('value').clip(0, 100).mean())",
}
READ = {"parquet": "pl.read_parquet(path)", "csv": "pl.read_csv(path)"}


def write_data(directory: Path, rows: int, seed: int = 0, reuse: bool = False) -> dict[str, Path]:
    """The generated table as Parquet and CSV, written a million rows at a time (with ``reuse``,
    files of these names already in ``directory`` are kept as they are)."""
    import numpy as np
    import polars as pl
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    paths = {"parquet": directory / f"r{rows}.parquet", "csv": directory / f"r{rows}.csv"}
    if reuse and all(p.is_file() and p.stat().st_size for p in paths.values()):
        return paths
    writer = None
    person = 0
    with open(paths["csv"], "wb") as csv:
        for start in range(0, rows, 1_000_000):
            n = min(1_000_000, rows - start)
            counts = rng.integers(1, 21, n // 5 + 20)
            ids = np.repeat(np.arange(person, person + counts.size), counts)[:n]
            person = int(ids[-1]) + 1
            chunk = pl.DataFrame(
                {
                    "person": ids,
                    "group": np.char.add("g", rng.integers(0, GROUPS, n).astype(str)),
                    "value": np.round(rng.normal(50.0, 20.0, n), 3),
                }
            )
            table = chunk.to_arrow()
            writer = writer or pq.ParquetWriter(paths["parquet"], table.schema)
            writer.write_table(table)
            chunk.write_csv(csv, include_header=start == 0)
    assert writer is not None
    writer.close()
    return paths


ENV: dict[str, str] = {}
"""The children's environment besides the parent's (set by :func:`child_env`)."""


def child_env(scratch: Path, compiling: bool) -> None:
    """Children cache compiled code in ``scratch`` (or compile from source each time)."""
    ENV.clear()
    if compiling:
        ENV["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        ENV["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")


def _peak(argv: list[str], tree: Path = HERE, cwd: Path | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, stdout) of a child process (its own peak, from ``wait4``)
    importing the package from ``tree``; RuntimeError if it fails."""
    env = dict(os.environ, **ENV, PYTHONPATH=str(tree))
    if "PYTHONPYCACHEPREFIX" in ENV:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd or tempfile.gettempdir()
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{' '.join(argv[:5])}... failed: {err[-500:]}")
    LAST_CPU[0] = usage.ru_utime + usage.ru_stime
    return wall, usage.ru_maxrss / 1024, out


LAST_CPU = [0.0]
"""The CPU seconds (user + system, all threads) of the last child :func:`_peak` waited for: on a
loaded machine they move less than the wall time."""


def ours(path: Path, query: str, scratch: Path, tree: Path = HERE) -> tuple[float, float]:
    work = Path(tempfile.mkdtemp(dir=scratch))
    plan = work / "plan.json"
    plan.write_text(json.dumps([PLANS[query]]))
    argv = [sys.executable, "-m", "dpexplorer", "release", str(plan), "--data", str(path)]
    argv += ["--out", str(work / "out"), "--ledger", str(work / "ledger.sqlite"), "--budget-epsilon", "10"]
    try:
        wall, rss, _ = _peak(argv, tree, cwd=work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return wall, rss


def floor(path: Path, fmt: str, query: str) -> tuple[float, float]:
    code = f"import polars as pl\npath = {str(path)!r}\nframe = {READ[fmt]}\n{FLOOR[query]}\nprint(out)"
    wall, rss, _ = _peak([sys.executable, "-c", code])
    return wall, rss


def identity(path: Path, fmt: str) -> tuple[float, float, float]:
    """(read seconds, fingerprint seconds, kernels' load seconds) in one fresh process. Each
    library is loaded before its timed step, as ``import polars`` is before the read: the
    fingerprint is timed with its compiled kernels loaded (``identity.kernels``; numpy where
    llvmlite is missing), and their load (llvmlite and the cached machine code, once a process) is
    reported apart, as ``identity_load``. A release overlaps that load with its read
    (``identity.preload``); its cost is in the release's own time."""
    code = (
        "import time, polars as pl\n"
        "from dpexplorer.data import identity\n"
        "from dpexplorer.data.load import content_fingerprint\n"
        f"path = {str(path)!r}\n"
        "t = time.perf_counter(); identity.kernels(); load = time.perf_counter() - t\n"
        f"t = time.perf_counter(); frame = {READ[fmt]}; read = time.perf_counter() - t\n"
        "t = time.perf_counter(); content_fingerprint(frame); fp = time.perf_counter() - t\n"
        "print(read, fp, load)"
    )
    _, _, out = _peak([sys.executable, "-c", code])
    read, fp, load = (float(v) for v in out.split())
    return read, fp, load


RELEASE_IMPORT = (
    "import dpexplorer.cli, dpexplorer.commands.release, dpexplorer.release.release, "
    "dpexplorer.release.numeric_paths, dpexplorer.data.answers"
)


def startup(repeat: int, before: Path | None = None) -> dict[str, float]:
    """The import figures (medians of ``repeat``); with ``before``, that tree's
    ``release_import_s`` too, its children alternating with this tree's."""

    def median(code: str) -> float:
        return statistics.median(_peak([sys.executable, "-c", code])[0] for _ in range(repeat))

    out = {
        "cli_import_s": median("import dpexplorer.cli, dpexplorer.commands.account"),
        "version_s": median("from dpexplorer.cli import main; main(['--version'])"),
        "python_s": median("pass"),
    }
    trees = {"release_import_s": HERE, **({"before_release_import_s": before} if before else {})}
    runs: dict[str, list[float]] = {}
    for _ in range(repeat):
        for key, tree in trees.items():
            runs.setdefault(key, []).append(_peak([sys.executable, "-c", RELEASE_IMPORT], tree)[0])
            runs.setdefault(f"cpu_{key}", []).append(LAST_CPU[0])
    return {**out, **{k: statistics.median(v) for k, v in runs.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rows", default="1000000,10000000")
    parser.add_argument("--large", action="store_true", help="add 100,000,000 rows")
    parser.add_argument("--formats", default="parquet,csv")
    parser.add_argument("--queries", default=",".join(PLANS))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="keep data files already in --dir")
    parser.add_argument("--before", metavar="DIR", help="also release from the package in DIR, interleaved")
    parser.add_argument("--compiling", action="store_true", help="children compile the package each start")
    args = parser.parse_args()
    trees = {"ours": HERE, **({"before": Path(args.before).resolve()} if args.before else {})}
    sizes = [int(r) for r in args.rows.split(",")] + ([100_000_000] if args.large else [])
    formats, queries = args.formats.split(","), args.queries.split(",")
    directory = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="release_scale"))
    directory.mkdir(parents=True, exist_ok=True)
    results: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "repeat": args.repeat,
        "command": " ".join(["python", *sys.argv]),
        "load_average": os.getloadavg(),
    }
    runs: dict[str, dict[str, object]] = {}
    child_env(directory, args.compiling)
    try:
        for rows in sizes:
            paths = write_data(directory, rows, reuse=args.reuse)
            for fmt in formats:
                times: dict[str, list[float]] = {}
                peaks: dict[str, dict[str, float]] = {}
                for tree in trees.values():  # warm-up: the bytecode cache filled, the file in the page cache
                    ours(paths[fmt], queries[0], directory, tree)
                for _ in range(args.repeat):  # interleaved: ours (and before), floor, identity, per repeat
                    for query in queries:
                        for side, tree in trees.items():
                            wall, rss = ours(paths[fmt], query, directory, tree)
                            times.setdefault(f"{side}_{query}", []).append(wall)
                            times.setdefault(f"cpu_{side}_{query}", []).append(LAST_CPU[0])
                            peaks.setdefault(side, {})[query] = max(peaks.get(side, {}).get(query, 0.0), rss)
                        wall, rss = floor(paths[fmt], fmt, query)
                        times.setdefault(f"floor_{query}", []).append(wall)
                        times.setdefault(f"cpu_floor_{query}", []).append(LAST_CPU[0])
                    read, fp, load = identity(paths[fmt], fmt)
                    times.setdefault("read", []).append(read)
                    times.setdefault("identity", []).append(fp)
                    times.setdefault("identity_load", []).append(load)
                med = {k: statistics.median(v) for k, v in times.items()}
                runs[f"{fmt}_{rows}"] = {
                    "median_s": med,
                    "runs_s": times,
                    "ratios": {q: med[f"ours_{q}"] / med[f"floor_{q}"] for q in queries},
                    "cpu_ratios": {q: med[f"cpu_ours_{q}"] / med[f"cpu_floor_{q}"] for q in queries},
                    "identity_vs_read": med["identity"] / med["read"],
                    "peak_rss_mb": peaks["ours"],
                }
                if args.before:
                    runs[f"{fmt}_{rows}"].update(
                        before_ratios={q: med[f"before_{q}"] / med[f"floor_{q}"] for q in queries},
                        after_over_before={q: med[f"ours_{q}"] / med[f"before_{q}"] for q in queries},
                        cpu_after_over_before={
                            q: med[f"cpu_ours_{q}"] / med[f"cpu_before_{q}"] for q in queries
                        },
                        before_peak_rss_mb=peaks["before"],
                    )
            if not args.keep and not args.reuse:
                for p in paths.values():
                    p.unlink()
        results["runs"] = runs
        results.update(startup(max(args.repeat, 5), trees.get("before")))
        at = {fmt: runs.get(f"{fmt}_10000000") for fmt in formats}
        present = [r for r in at.values() if r]
        for query, key in (("count", "count"), ("sum", "sum"), ("groupby_unit", "groupby_unit")):
            if present and query in queries:
                results[f"release_{key}_ratio"] = max(r["ratios"][query] for r in present)  # type: ignore[index]
        if present:
            results["identity_vs_read"] = max(r["identity_vs_read"] for r in present)  # type: ignore[type-var]
            results["release_peak_rss_mb_10m"] = max(max(r["peak_rss_mb"].values()) for r in present)  # type: ignore[union-attr]
        big = [runs[k] for k in runs if k.endswith("_100000000")]
        if big:
            results["release_peak_rss_mb_100m"] = max(max(r["peak_rss_mb"].values()) for r in big)  # type: ignore[union-attr]
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(directory, ignore_errors=True)
    print(json.dumps(results, indent=2) if args.json else results)


if __name__ == "__main__":
    main()
