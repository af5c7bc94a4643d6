"""Slider-to-repaint latency of the explorer window, per mechanism, and a soak test.

    python benchmarks/latency.py --json [--repeats 25] [--soak-seconds 10]

For each mechanism (on a query it applies to), the epsilon slider is moved to a new position
and the clock runs until every view it feeds (neighbouring datasets and accuracy) has been
recomputed on the worker and repainted on the screen (``repaint()`` of the visible tab).
Closed-form: those two views. Monte-Carlo: the same move followed by 1e5 simulated draws on D
and D' overlaid on the plot. Soak: 1000 slider events per second for N seconds; memory growth
(resident set, after the last result is in) and threads left after the window closes."""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import threading
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QAbstractEventDispatcher, QCoreApplication, QEventLoop, QTimer
from PySide6.QtWidgets import QApplication

from dpexplorer.data.default import default_dataset_path
from dpexplorer.gui.app import main_thread_garbage_collection, wait_for_views
from dpexplorer.gui.main_window import MainWindow

QUERY_FOR = {"numeric": "predicate_count", "median": "median", "selection": "argmax", "workload": "workload"}


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def wait_idle(window: MainWindow, timeout: float = 120.0) -> None:
    if not wait_for_views(window, timeout):
        raise TimeoutError("views did not finish")


def spin_until(condition, timeout: float = 120.0) -> None:
    """Run the event loop until ``condition()`` holds, sleeping between events as the app's own
    loop does. (A busy ``processEvents()`` loop keeps the GIL on the main thread and slowed the
    workers it waits for: 45 ms of a 100 ms Monte-Carlo update was that loop, not the app.)"""
    deadline = time.perf_counter() + timeout
    dispatcher = QAbstractEventDispatcher.instance()
    wake = QTimer()
    wake.start(2)  # the blocking wait below returns at least every 2 ms
    try:
        while not condition():
            dispatcher.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
            if time.perf_counter() > deadline:
                raise TimeoutError("the view did not update")
    finally:
        wake.stop()


def move_and_time(window: MainWindow, position: int, draws: bool) -> float:
    """Milliseconds from the slider move to the visible view repainted with the new value (and,
    for Monte Carlo, with 1e5 fresh draws overlaid). Hidden tabs are drawn when shown, so they
    are not on this path; the jobs still pending for them are waited out before the next move."""
    view = window.neighbours_view
    control = window.mechanism_panel.params.controls["epsilon"]
    value = control.value_at(position)
    start = time.perf_counter()
    control.slider.setValue(position)
    spin_until(lambda: view.result is not None and view.result.params.get("epsilon") == value)
    if draws:
        window.explorer.draw()
        spin_until(lambda: view.draws is not None)
    view.repaint()
    elapsed = (time.perf_counter() - start) * 1000
    wait_idle(window)
    settle = time.perf_counter() + 0.05  # let the throttle's interval pass: moves are independent
    while time.perf_counter() < settle:
        QCoreApplication.processEvents()
    return elapsed


def pick_query(window: MainWindow, kind: str) -> None:
    window.query_panel.select_kind(kind)
    if kind == "median":
        window.query_panel.column.setCurrentText("age")
    if kind == "workload":
        window.query_panel.column.setCurrentText("sex")
    wait_idle(window)


def measure(window: MainWindow, repeats: int) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    for kind in ("predicate_count", "median", "argmax"):
        pick_query(window, kind)
        panel = window.mechanism_panel
        for index, mechanism in enumerate(panel.mechanisms):
            if mechanism.name in results or "epsilon" not in {p.name for p in mechanism.params}:
                continue
            panel.picker.setCurrentIndex(index)
            wait_idle(window)
            control = panel.params.controls["epsilon"]
            positions = [300 + (37 * i) % 500 for i in range(repeats)]
            positions = [
                p
                for i, p in enumerate(positions)
                if i == 0 or control.value_at(p) != control.value_at(positions[i - 1])
            ]
            closed = [move_and_time(window, p, draws=False) for p in positions]
            monte = [move_and_time(window, p + 1, draws=True) for p in positions[: max(5, repeats // 3)]]
            results[mechanism.name] = {
                "p50_ms": statistics.median(closed),
                "p95_ms": statistics.quantiles(closed, n=20)[-1],
                "p50_ms_monte_carlo": statistics.median(monte),
                "p95_ms_monte_carlo": statistics.quantiles(monte, n=20)[-1] if len(monte) >= 2 else monte[0],
            }
    return results


def soak(window: MainWindow, seconds: float) -> float:
    pick_query(window, "predicate_count")
    control = window.mechanism_panel.params.controls["epsilon"]
    gc.collect()
    before = rss_mb()
    events = {"n": 0}

    def tick() -> None:
        events["n"] += 1
        control.slider.setValue(100 + (events["n"] * 7) % 800)

    timer = QTimer()
    timer.setInterval(1)
    timer.timeout.connect(tick)
    timer.start()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        QCoreApplication.processEvents()
    timer.stop()
    wait_idle(window)
    gc.collect()
    return rss_mb() - before, events["n"] / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--soak-seconds", type=float, default=10.0)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    collector = main_thread_garbage_collection()
    threads_before = threading.active_count()
    window = MainWindow(interactive=False, restore_layout=False)
    window.show()
    window.open_file(default_dataset_path())
    wait_idle(window)
    per_mechanism = measure(window, args.repeats)
    growth, rate = soak(window, args.soak_seconds)
    window.close()
    QCoreApplication.processEvents()
    threads_left = threading.active_count() - threads_before
    closed_form = [v["p95_ms"] for v in per_mechanism.values()]
    monte = [v["p95_ms_monte_carlo"] for v in per_mechanism.values()]
    result = {
        "p95_ms_closed_form": round(max(closed_form), 1),
        "p95_ms_monte_carlo": round(max(monte), 1),
        "soak_mem_growth_mb": round(growth, 1),
        "soak_threads_left": threads_left,
        "soak_events_per_s": round(rate),
        "per_mechanism": {k: {m: round(x, 1) for m, x in v.items()} for k, v in per_mechanism.items()},
        "cores": os.cpu_count(),
    }
    collector.timer.stop()
    del app
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
