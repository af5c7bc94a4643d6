"""A histogram of many declared categories that spell numbers (issue 43).

    python benchmarks/number_categories.py --json [--categories 1000,10000] [--rows 10000]
                                          [--repeat 3] [--before DIR] [--timeout 600]

Writes a small CSV (``rows`` rows of one column ``a``, the numbers 0 .. 1,499 as text) and a plan
of one histogram of ``a`` over the categories "0", "1", ... (``n`` of them; ``text`` plans spell
them "w0", "w1", ... instead, which matched no cell and always took one Enum cast), released with
Laplace at epsilon 1. Each release is a fresh ``python -m dpexplorer release`` process with a
fresh ledger, run ``--repeat`` times, interleaved over the plans; wall time is the median, peak
RSS the child's largest (``wait4``). Before issue 43 a category spelling a number was one
when/then in a chain as long as the categories: 1,000 took 35 s and 4.6 GB, 3,000 over 200 s and
11 GB. ``--before DIR`` runs the same plans from the package in DIR (``git archive REV | tar -x
-C DIR``), each killed after ``--timeout`` seconds (reported as ``null`` with ``timed_out``).

Keys, per plan ``numbers_<n>`` and ``text_<n>``: ``seconds`` (median), ``peak_rss_mb`` (largest),
``exit`` (the children's exit codes), and with ``--before`` the same under ``before``."""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
"""This tree (the package the releases import)."""


def _plan(directory: Path, name: str, categories: list[str]) -> Path:
    entry = {
        "query": {"type": "histogram", "axis": {"column": "a", "categories": categories}},
        "mechanism": "laplace",
        "parameters": {"epsilon": 1.0},
    }
    path = directory / f"{name}.json"
    path.write_text(json.dumps([entry]))
    return path


def _release(tree: Path, plan: Path, data: Path, scratch: Path, timeout: float) -> dict[str, Any]:
    """One release in a fresh process from ``tree``: wall seconds, the child's peak RSS (MB) and
    exit code (None, killed, past ``timeout``)."""
    run = Path(tempfile.mkdtemp(dir=scratch))
    args = [sys.executable, "-m", "dpexplorer", "release", str(plan), "--data", str(data)]
    args += ["--out", str(run / "out"), "--ledger", str(run / "l.sqlite"), "--budget-epsilon", "10"]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    child = subprocess.Popen(args, cwd=run, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            child.send_signal(signal.SIGKILL)
            _, status, usage = os.wait4(child.pid, 0)
            return {"seconds": None, "peak_rss_mb": usage.ru_maxrss / 1024, "exit": None}
        time.sleep(0.05)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "exit": os.waitstatus_to_exitcode(status),
    }


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    done = [r["seconds"] for r in runs if r["seconds"] is not None]
    return {
        "seconds": statistics.median(done) if len(done) == len(runs) else None,
        "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1),
        "exit": [r["exit"] for r in runs],
        **({"timed_out": True} if len(done) < len(runs) else {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--categories", default="1000,10000")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    sizes = [int(n) for n in args.categories.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        data = scratch / "numbers.csv"
        data.write_text("a\n" + "".join(f"{i % 1_500}\n" for i in range(args.rows)))
        plans = {}
        for n in sizes:
            plans[f"numbers_{n}"] = _plan(scratch, f"numbers_{n}", [str(i) for i in range(n)])
            plans[f"text_{n}"] = _plan(scratch, f"text_{n}", [f"w{i}" for i in range(n)])
        trees = {"after": HERE, **({"before": args.before.resolve()} if args.before else {})}
        _release(HERE, plans[next(iter(plans))], data, scratch, args.timeout)  # warm the caches
        runs: dict[str, dict[str, list[dict[str, Any]]]] = {t: {p: [] for p in plans} for t in trees}
        for _ in range(args.repeat):
            for name, plan in plans.items():
                for tree, root in trees.items():
                    if runs[tree][name] and runs[tree][name][-1]["seconds"] is None:
                        continue  # timed out once: not again
                    runs[tree][name].append(_release(root, plan, data, scratch, args.timeout))
    out: dict[str, Any] = {
        "rows": args.rows,
        "repeat": args.repeat,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average": os.getloadavg()[0],
    }
    for name in plans:
        out[name] = _summary(runs["after"][name])
        if "before" in runs:
            out[name]["before"] = _summary(runs["before"][name])
    print(json.dumps(out, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
