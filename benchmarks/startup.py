"""Start-up time: a new process from start to the main window painted with the default dataset
loaded, median of 5, beside the import-only floor (PySide6 + pyqtgraph) measured the same way.
Also, for the record, the time until every view has finished computing (what --screenshot
waits for): the mechanisms are imported on a worker after the data is painted.

    python benchmarks/startup.py --json

Each figure is wall time seen by the parent, from spawning the child to reading its "ready"
line, so interpreter start-up is included in both. Target: startup_s_median <= 1.5 s on 2 cores."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

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


def time_child(code: str) -> list[float]:
    """Seconds from spawning the child to each line it prints ("ready", then maybe "idle")."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env, text=True)
    assert proc.stdout is not None
    times = []
    for line in proc.stdout:
        times.append(time.perf_counter() - start)
        if line.strip() not in ("ready", "idle"):
            raise SystemExit(f"unexpected output from the child: {line!r}")
    proc.wait(timeout=120)
    if not times or proc.returncode != 0:
        raise SystemExit(f"child did not get ready (exit {proc.returncode})")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args()
    time_child(APP_CHILD)  # warm the file cache once, not counted
    app_times, idle_times, floor_times = [], [], []
    for _ in range(RUNS):  # interleaved, so drift on a noisy machine hits both alike
        ready, idle = time_child(APP_CHILD)
        app_times.append(ready)
        idle_times.append(idle)
        floor_times.append(time_child(FLOOR_CHILD)[0])
    result = {
        "startup_s_median": round(statistics.median(app_times), 3),
        "import_floor_s": round(statistics.median(floor_times), 3),
        "all_views_computed_s_median": round(statistics.median(idle_times), 3),
        "runs": RUNS,
        "cores": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>18}: {value}")


if __name__ == "__main__":
    main()
