"""Start-up time: a new process from start to the main window painted with the default dataset
loaded, median of 5, beside the import-only floor (PySide6 + pyqtgraph) measured the same way.
Also, for the record, the time until every view has finished computing (what --screenshot
waits for): the mechanisms are imported on a worker after the data is painted.

    python benchmarks/startup.py --json

Each figure is wall time seen by the parent, from spawning the child to reading its "ready"
line, so interpreter start-up is included in both. Target: startup_s_median <= 1.0 s on 2 cores
(issue 29).

Compiled code. An installed package starts from its cached bytecode (pip compiles it when
installing; an editable install writes __pycache__ on its first run). A development shell with
PYTHONDONTWRITEBYTECODE=1 (this project's sandbox sets it) compiles the package's ~13,000
imported lines from source at every start, about 0.15-0.2 s of it. So the children run with
bytecode caching on, in a private cache directory (PYTHONPYCACHEPREFIX, filled by the warm-up
run, nothing written into the tree): ``startup_s_median`` is the start a user sees. The same
start compiling from source every time is measured too, interleaved, as
``startup_s_median_compiling`` (what this benchmark reported before 2026-11-26 16:00 UTC when
run from such a shell).

Side by side: ``--before DIR`` runs the same children on the package in DIR (a tree from
``git archive REV | tar -x -C DIR``) alternately with this tree's, and reports both and their
ratios (after / before), with each child's process CPU time until it was ready (all its
threads): on a loaded machine the CPU time moves less than the wall time."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 5

# Mirrors dpexplorer.gui.app.run_app, then says "ready" once the loaded dataset is painted.
APP_CHILD = r"""
import sys
from PySide6.QtWidgets import QApplication
from dpexplorer.data.default import default_dataset_path
from dpexplorer.gui.main_window import MainWindow
from dpexplorer.gui.app import main_thread_garbage_collection
app = QApplication(sys.argv[:1])
collector = main_thread_garbage_collection()
window = MainWindow(interactive=False)
window.show()
from PySide6.QtCore import QTimer
def ready(_dataset):
    window.repaint()
    print("ready", flush=True)
    import time
    print(f"cpu {time.process_time():.4f}", flush=True)
def poll():
    shown = window.neighbours_view.result is not None
    if window.explorer.mechanisms is not None and shown and window.views_idle():
        window.repaint()
        print("idle", flush=True)
        timer.stop()
        window.close()
        app.quit()
timer = QTimer()
timer.timeout.connect(poll)
timer.start(5)
window.dataset_loaded.connect(ready)
window.open_file(default_dataset_path())
app.exec()
"""

FLOOR_CHILD = r"""
import PySide6.QtWidgets, pyqtgraph
print("ready", flush=True)
"""


HERE = Path(__file__).resolve().parent.parent
"""This tree (the package is imported from it, whatever is installed)."""


def time_child(code: str, bytecode_cache: str | None, tree: Path = HERE) -> dict[str, float]:
    """Seconds from spawning the child to each line it prints ("ready", then maybe "idle"), and
    the child's CPU seconds when ready ("cpu"); the package imported from ``tree``. With
    ``bytecode_cache`` a directory, the child caches compiled code there (and reads it), else it
    compiles every module of the package from source (PYTHONDONTWRITEBYTECODE)."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(tree))
    if bytecode_cache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = bytecode_cache
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env, text=True)
    assert proc.stdout is not None
    times: dict[str, float] = {}
    for line in proc.stdout:
        word, _, value = line.strip().partition(" ")
        if word not in ("ready", "idle", "cpu"):
            raise SystemExit(f"unexpected output from the child: {line!r}")
        times[word] = float(value) if value else time.perf_counter() - start
    proc.wait(timeout=120)
    if "ready" not in times or proc.returncode != 0:
        raise SystemExit(f"child did not get ready (exit {proc.returncode})")
    return times


def measure(trees: dict[str, Path], cache: str) -> dict[str, dict[str, float]]:
    """Each figure's median over RUNS for each tree, the runs interleaved (tree by tree, then
    the floor, then each tree compiling), so drift on a noisy machine hits all alike."""
    runs: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    floor: list[float] = []
    for _ in range(RUNS):
        for name, tree in trees.items():
            cached = time_child(APP_CHILD, cache, tree)
            for key, out in (("ready", "startup_s_median"), ("idle", "all_views_computed_s_median")):
                runs[name].setdefault(out, []).append(cached[key])
            runs[name].setdefault("cpu_s_to_ready_median", []).append(cached["cpu"])
        floor.append(time_child(FLOOR_CHILD, cache)["ready"])
        for name, tree in trees.items():
            runs[name].setdefault("startup_s_median_compiling", []).append(
                time_child(APP_CHILD, None, tree)["ready"]
            )
    medians = {name: {k: round(statistics.median(v), 3) for k, v in d.items()} for name, d in runs.items()}
    for figures in medians.values():
        figures["import_floor_s"] = round(statistics.median(floor), 3)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--before", type=Path, help="a tree to run alternately with this one")
    args = parser.parse_args()
    trees = {"after": HERE} if args.before is None else {"before": args.before, "after": HERE}
    with tempfile.TemporaryDirectory(prefix="dpx-startup-pyc-") as cache:
        for tree in trees.values():  # warm the file cache and fill the bytecode cache
            time_child(APP_CHILD, cache, tree)
            time_child(APP_CHILD, None, tree)
        time_child(FLOOR_CHILD, cache)
        medians = measure(trees, cache)
    result: dict[str, object] = dict(medians["after"])
    if args.before is not None:
        result["before"] = medians["before"]
        result["ratios_after_over_before"] = {
            key: round(value / medians["before"][key], 3)
            for key, value in medians["after"].items()
            if key != "import_floor_s"
        }
    result.update(runs=RUNS, cores=os.cpu_count(), load_average_1min=round(os.getloadavg()[0], 2))
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>28}: {value}")


if __name__ == "__main__":
    main()
