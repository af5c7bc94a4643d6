"""Slider-to-repaint latency of the explorer window, per mechanism, and a soak test.

    python benchmarks/latency.py --json [--repeats 25] [--soak-seconds 10]

For each mechanism (on a query it applies to), the epsilon slider is moved to a new position
and the clock runs until the visible view (neighbouring datasets) has been recomputed on the
worker, delivered, and its canvas (both plots) has finished a paint after the delivery (an
event filter on its viewport); hidden tabs are computed only when shown, so they are not on this
path. Closed-form: that view. Monte-Carlo: the same move followed by 1e5 simulated draws on D
and D' overlaid and painted (where the noise is too small for float64 to resolve, the view
does not overlay them and only its note under the plots repaints). Moves start from rest (50 ms
apart, past the 16 ms throttle).
Soak: a feeder thread posts 1000 slider moves per second to the main thread for N seconds (as a
drag delivers them); reported: moves posted and handled per second, how long after the last
post the last one was handled, memory growth (resident set, after the last result is in) and
threads left after the window closes."""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import threading
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import (
    Q_ARG,
    QAbstractEventDispatcher,
    QCoreApplication,
    QEvent,
    QEventLoop,
    QMetaObject,
    QObject,
    Qt,
    QTimer,
)
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


class PaintWatch(QObject):
    """When the neighbouring-datasets view's canvas (both of its plots) last finished painting,
    and when the explorer last delivered a result or draws: a move is timed until it has painted
    after the delivery (``view.repaint()`` does not paint a pyqtgraph viewport)."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__()
        view = window.neighbours_view
        self.canvas, self.label = view.canvas.viewport(), view.delta_label
        self.painted: dict[int, float] = {}
        self.delivered = 0.0
        for widget in (self.canvas, self.label):
            widget.installEventFilter(self)
        window.explorer.views_updated.connect(self._delivered)

    def _delivered(self, _view: str) -> None:
        self.delivered = time.perf_counter()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.painted[id(watched)] = time.perf_counter()  # the paint runs after the filter
        return False

    def repainted(self, *, canvas: bool = True) -> bool:
        """The canvas (both plots) has painted since the last delivery, or with ``canvas``
        False the numbers under it (draws the view cannot overlay change only those). Called
        after processEvents returns, so the paint that set the stamp has finished."""
        widget = self.canvas if canvas else self.label
        return self.painted.get(id(widget), 0.0) > self.delivered


def settle(seconds: float = 0.05) -> None:
    """Let the throttle's interval and any pending paint pass: each move starts from rest."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        QCoreApplication.processEvents()


def move_and_time(window: MainWindow, watch: PaintWatch, position: int, draws: bool) -> float:
    """Milliseconds from the slider move until both plots have painted the new value (and, for
    Monte Carlo, 1e5 fresh draws overlaid). Hidden tabs are drawn when shown, so they are not on
    this path; the jobs still pending for them are waited out before the next move."""
    view = window.neighbours_view
    control = window.mechanism_panel.params.controls["epsilon"]
    value = control.value_at(position)
    start = time.perf_counter()
    control.slider.setValue(position)
    spin_until(lambda: view.result is not None and view.result.params.get("epsilon") == value)
    if draws:
        window.explorer.draw()
        spin_until(lambda: view.draws is not None)
    canvas = not draws or view.overlays_draws()
    spin_until(lambda: watch.repainted(canvas=canvas), timeout=5.0)
    elapsed = (time.perf_counter() - start) * 1000
    wait_idle(window)
    settle()
    return elapsed


def pick_query(window: MainWindow, kind: str) -> None:
    window.query_panel.select_kind(kind)
    if kind == "median":
        window.query_panel.column.setCurrentText("age")
    if kind == "workload":
        window.query_panel.column.setCurrentText("sex")
    wait_idle(window)
    settle()


def percentile_95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1] if len(samples) >= 2 else samples[0]


def measure(window: MainWindow, repeats: int) -> dict[str, dict[str, float]]:
    watch = PaintWatch(window)
    results: dict[str, dict[str, float]] = {}
    for kind in ("predicate_count", "median", "argmax"):
        pick_query(window, kind)
        panel = window.mechanism_panel
        for index, mechanism in enumerate(panel.mechanisms):
            if mechanism.name in results or "epsilon" not in {p.name for p in mechanism.params}:
                continue
            panel.picker.setCurrentIndex(index)
            wait_idle(window)
            settle(0.2)  # the window repaints the new mechanism's controls: not part of a move
            control = panel.params.controls["epsilon"]
            positions = [300 + (37 * i) % 500 for i in range(repeats)]
            positions = [
                p
                for i, p in enumerate(positions)
                if i == 0 or control.value_at(p) != control.value_at(positions[i - 1])
            ]
            closed = [move_and_time(window, watch, p, draws=False) for p in positions]
            monte = [
                move_and_time(window, watch, p + 1, draws=True) for p in positions[: max(5, repeats // 3)]
            ]
            results[mechanism.name] = {
                "p50_ms": statistics.median(closed),
                "p95_ms": percentile_95(closed),
                "p50_ms_monte_carlo": statistics.median(monte),
                "p95_ms_monte_carlo": percentile_95(monte),
            }
    return results


def soak(window: MainWindow, seconds: float, rate: float = 1000.0) -> dict[str, float]:
    """A feeder thread posts ``rate`` slider moves per second to the main thread (queued, as a
    drag delivers them) for ``seconds``; the main thread handles them between its paints.
    Returns the resident-memory growth once everything is handled, the rates posted and
    handled, and how long after the last post the last move was handled."""
    pick_query(window, "predicate_count")
    slider = window.mechanism_panel.params.controls["epsilon"].slider
    handled = {"n": 0, "last": 0.0}

    def count(_value: int) -> None:
        handled["n"] += 1
        handled["last"] = time.perf_counter()

    slider.valueChanged.connect(count)
    gc.collect()
    before = rss_mb()
    posted = {"n": 0, "done": False}

    def feed() -> None:
        start = time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            while posted["n"] < elapsed * rate:
                posted["n"] += 1
                value = 100 + (posted["n"] * 7) % 800
                QMetaObject.invokeMethod(
                    slider, "setValue", Qt.ConnectionType.QueuedConnection, Q_ARG(int, value)
                )
            time.sleep(0.0005)
        posted["done"] = True

    feeder = threading.Thread(target=feed)
    feeder.start()
    spin_until(lambda: posted["done"] and handled["n"] >= posted["n"], timeout=seconds + 120)
    finished = time.perf_counter()
    feeder.join()
    wait_idle(window)
    slider.valueChanged.disconnect(count)
    gc.collect()
    return {
        "mem_growth_mb": rss_mb() - before,
        "posted_per_s": posted["n"] / seconds,
        "handled_per_s": handled["n"] / seconds,
        "lag_after_last_post_ms": max(0.0, (handled["last"] - finished) * 1000) if handled["n"] else 0.0,
    }


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
    soaked = soak(window, args.soak_seconds)
    window.close()
    QCoreApplication.processEvents()
    threads_left = threading.active_count() - threads_before
    closed_form = [v["p95_ms"] for v in per_mechanism.values()]
    monte = [v["p95_ms_monte_carlo"] for v in per_mechanism.values()]
    result = {
        "p95_ms_closed_form": round(max(closed_form), 1),
        "p95_ms_monte_carlo": round(max(monte), 1),
        "soak_mem_growth_mb": round(soaked["mem_growth_mb"], 1),
        "soak_threads_left": threads_left,
        "soak_events_per_s": round(soaked["posted_per_s"]),
        "soak_handled_per_s": round(soaked["handled_per_s"]),
        "soak_lag_after_last_post_ms": round(soaked["lag_after_last_post_ms"], 1),
        "per_mechanism": {k: {m: round(x, 1) for m, x in v.items()} for k, v in per_mechanism.items()},
        "cores": os.cpu_count(),
    }
    collector.timer.stop()
    del app
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
