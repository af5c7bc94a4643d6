"""Speed of the stress path (tests/gui/test_stress.py): many random changes as fast as the event
loop takes them, then the wait until every view is idle.

    QT_QPA_PLATFORM=offscreen python benchmarks/stress.py --json [--changes 2000] [--seed 19]

The window opens the bundled dataset offscreen and settles; then ``--changes`` random changes
(a parameter slider, the mechanism, the query among the kinds the stress test uses, whose every
mechanism answers in well under a second; never the tab) are made with the event loop run
after each (benchmarks/soak.py's ``random_change``), without waiting for any view. Printed:
``changes_s`` (the changes, the views' work they start included), ``idle_after_s`` (from the
last change until the views are idle), the results delivered (latest wins: far fewer than the
changes) and any delivered after a newer request for its view (``stale_results``, always 0).

Targets, on an idle machine (what test_stress.py asserted before it left the speed here):
``changes_s`` < 60 and ``idle_after_s`` < 10 for 2,000 changes."""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication
from soak import close_and_print, random_change

from dpexplorer.data.default import default_dataset_path
from dpexplorer.gui.app import wait_for_views
from dpexplorer.gui.main_window import MainWindow

KINDS = (("count", None), ("mean", "age"), ("median", "hours_per_week"), ("argmax", "occupation"))
"""The stress test's query kinds."""
IDLE_TIMEOUT_S = 600.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = MainWindow(interactive=False, restore_layout=False)
    window.resize(1440, 900)
    window.show()
    window.open_file(default_dataset_path())
    if not wait_for_views(window, IDLE_TIMEOUT_S):
        raise SystemExit("the window did not settle after opening the dataset")
    compute = window.compute
    delivered: list[tuple[str, int, int]] = []
    compute.finished.connect(
        lambda view, gen, _r: delivered.append((view, gen, compute.current_generation(view)))
    )
    chooser = random.Random(args.seed)
    kinds: dict[str, int] = {}
    started = time.perf_counter()
    for _ in range(args.changes):
        kind = random_change(window, chooser, KINDS, tabs=False)
        kinds[kind] = kinds.get(kind, 0) + 1
        QCoreApplication.processEvents()
    changed = time.perf_counter()
    idle = wait_for_views(window, IDLE_TIMEOUT_S)
    settled = time.perf_counter()
    result = {
        "changes": args.changes,
        "seed": args.seed,
        "kinds": kinds,
        "changes_s": round(changed - started, 2),
        "changes_per_s": round(args.changes / (changed - started), 1),
        "idle_after_s": round(settled - changed, 2) if idle else None,
        "results_delivered": len(delivered),
        "stale_results": sum(1 for _v, gen, latest in delivered if gen != latest),
        "load_average": os.getloadavg()[0],
    }
    return close_and_print(app, window, result, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
