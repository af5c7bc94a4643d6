"""The window on a large file: ``dpexplorer --screenshot`` on a generated Parquet file, timed.

    python benchmarks/screenshot.py --json [--rows 100000000] [--file PATH] [--dir DIR] [--keep]

One child process mirrors ``dpexplorer --screenshot OUT.png FILE`` (dpexplorer.gui.app.run_app:
offscreen, the window shown, the file opened, the event loop run until the dataset is in and no
view is computing, the window saved) and stamps three moments, each after a repaint, as wall
time since the parent spawned it (interpreter start-up and imports included):

* ``first_paint_s``: the first look painted (schema and the first 200 rows,
  dpexplorer.data.scan.peek), target <= 3 s;
* ``loaded_s``: the dataset in (row count, missing values, the steward summary);
* ``views_done_s``: every view computed (what --screenshot waits for);
* ``identified_s``: the dataset's content fingerprint (its key in the budget ledger) computed,
  by its own job after the load (Release waits for it, the views do not);

and ``peak_rss_mb``: the child's peak resident memory (VmHWM), target <= 2048. The file is the
Adult-shaped file of benchmarks/scale.py (``--file`` takes an existing one; the generated one is
deleted unless ``--keep``)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import os, sys, time
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtWidgets import QApplication
from dpexplorer.gui.app import main_thread_garbage_collection, wait_for_views
from dpexplorer.gui.main_window import MainWindow
path, out = sys.argv[1], sys.argv[2]
app = QApplication(sys.argv[:1])
collector = main_thread_garbage_collection()
window = MainWindow(interactive=False, restore_layout=False)
show_peek = window._show_peek
def peeked(peek):
    show_peek(peek)
    window.repaint()
    print("first_paint", time.time(), flush=True)
window._show_peek = peeked
window.dataset_loaded.connect(lambda _d: (window.repaint(), print("loaded", time.time(), flush=True)))
window.show()
window.open_file(path)
idle = wait_for_views(window, 3600, stop=lambda: window.last_error is not None, identity=False)
window.repaint()
print("views_done" if idle else "failed", time.time(), flush=True)
window.grab().save(out, "PNG")
if idle and wait_for_views(window, 3600, stop=lambda: window.last_error is not None):
    print("identified", time.time(), flush=True)
peak = [int(line.split()[1]) / 1024 for line in open("/proc/self/status") if line.startswith("VmHWM")]
print("peak_rss_mb", peak[0])
window.close()
collector.timer.stop()
"""


def measure(path: Path, out: Path) -> dict:
    start = time.time()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(out)], capture_output=True, text=True, timeout=7200
    )
    stamps = dict(line.split()[:2] for line in done.stdout.splitlines() if len(line.split()) == 2)
    if "views_done" not in stamps:
        raise SystemExit(f"the window did not finish: {done.stdout[-500:]} {done.stderr[-2000:]}")
    result = {
        k: round(float(stamps[k]) - start, 2)
        for k in ("first_paint", "loaded", "views_done", "identified")
        if k in stamps
    }
    return {f"{k}_s": v for k, v in result.items()} | {"peak_rss_mb": round(float(stamps["peak_rss_mb"]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--file", type=Path, default=None)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="dpx-screenshot-"))
    try:
        if args.file is None:
            sys.path.insert(0, str(Path(__file__).parent))
            from scale import generate

            path = generate(base / "main", args.rows, ("parquet",))["parquet"]
        else:
            path = args.file
        report = {
            "file": path.name,
            "file_mb": round(path.stat().st_size / 2**20),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            **measure(path, base / "screenshot.png"),
        }
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(report, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
