"""Memory of the window over many random changes (issue 32: flat memory).

    python benchmarks/soak.py --json [--changes 10000] [--seed 32]

The window opens the bundled dataset offscreen; then ``--changes`` random changes are made as
fast as the event loop takes them (a parameter slider, the mechanism, the query's statistic and
column, the visible tab), with the event loop run after each. Every ``--every`` changes the
window is let settle (views idle), Python's cyclic garbage collected, and the resident set
read. As the app (``run_app``), glibc's mmap threshold is fixed first (``bound_heap``);
``--dynamic-heap`` leaves it as glibc sets it, to compare. Printed: RSS after the first 500
changes and after the last, and ``soak_rss_growth_mb`` = RSS(after ``--changes``) - RSS(after
500), with the series of samples. On a loaded machine run a smaller ``--changes`` and say so."""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time
from collections.abc import Sequence

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication

from dpexplorer.data.default import default_dataset_path
from dpexplorer.gui.app import bound_heap, main_thread_garbage_collection, wait_for_views
from dpexplorer.gui.main_window import MainWindow
from dpexplorer.gui.param_controls import NumberControl

BASELINE = 500
KINDS = (
    ("count", None),
    ("mean", "age"),
    ("mean", "hours_per_week"),
    ("median", "hours_per_week"),
    ("median", "age"),
    ("argmax", "occupation"),
    ("argmax", "education"),
)


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def random_change(
    window: MainWindow,
    chooser: random.Random,
    kinds: Sequence[tuple[str, str | None]] = KINDS,
    tabs: bool = True,
) -> str:
    """One change a user could make, the query's among ``kinds`` (``tabs``: the visible tab
    too); returns its kind."""
    roll = chooser.random()
    panel = window.mechanism_panel
    if roll < 0.05:
        kind, column = chooser.choice(kinds)
        window.query_panel.select_kind(kind, column)
        return "query"
    if roll < 0.15 and panel.picker.count() > 1:
        panel.picker.setCurrentIndex(chooser.randrange(panel.picker.count()))
        return "mechanism"
    if roll < 0.20 and tabs:
        window.tabs.setCurrentIndex(chooser.randrange(window.tabs.count()))
        return "tab"
    sliders = [c for n, c in panel.params.controls.items() if isinstance(c, NumberControl) and n != "k"]
    if not sliders:
        return "none"
    control = chooser.choice(sliders)
    control.slider.setValue(chooser.randint(control.slider.minimum(), control.slider.maximum()))
    return "slider"


def settle(window: MainWindow) -> float:
    """Wait for the views, collect garbage, return the RSS in MB."""
    wait_for_views(window, 300.0)
    for _ in range(5):
        QCoreApplication.processEvents()
    gc.collect()
    return rss_mb()


def close_and_print(app: QApplication, window: MainWindow, result: dict[str, object], one_line: bool) -> int:
    """Close the window, let Qt finish, print ``result`` as JSON (one line, or indented); 0."""
    window.close()
    app.processEvents()
    print(json.dumps(result, indent=None if one_line else 2))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--dynamic-heap",
        action="store_true",
        help="leave glibc's mmap threshold dynamic (as before issue 32)",
    )
    args = parser.parse_args()
    bounded = False if args.dynamic_heap else bound_heap()  # as run_app does
    app = QApplication.instance() or QApplication(sys.argv[:1])
    collector = main_thread_garbage_collection()
    window = MainWindow(interactive=False, restore_layout=False)
    window.resize(1440, 900)
    window.show()
    window.open_file(default_dataset_path())
    start_rss = settle(window)
    chooser = random.Random(args.seed)
    samples: list[tuple[int, float]] = [(0, start_rss)]
    started = time.monotonic()
    for number in range(1, args.changes + 1):
        random_change(window, chooser)
        QCoreApplication.processEvents()
        if number % args.every == 0 or number == args.changes:
            samples.append((number, round(settle(window), 1)))
            if not args.json:
                print(f"{number:>6} changes: {samples[-1][1]:.1f} MB", flush=True)
    elapsed = time.monotonic() - started
    base = next((rss for n, rss in samples if n >= min(BASELINE, args.changes)), start_rss)
    result = {
        "changes": args.changes,
        "bounded_heap": bounded,
        "seconds": round(elapsed, 1),
        "rss_start_mb": round(start_rss, 1),
        "rss_after_500_mb": round(base, 1),
        "rss_end_mb": samples[-1][1],
        "soak_rss_growth_mb": round(samples[-1][1] - base, 1),
        "samples": samples,
    }
    collector.timer.stop()  # type: ignore[attr-defined]
    return close_and_print(app, window, result, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
