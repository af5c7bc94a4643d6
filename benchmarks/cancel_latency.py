"""Cancellation latency (issue 19): every job the window submits (neighbours, accuracy, draws,
the mechanism's own view, BLR's run) for every registered mechanism, at the low and the high end
of each of its parameters, on Adult. A job still running after CANCEL_AFTER_S is cancelled the
way Esc does it (its token, ambient on the worker); we measure how long the worker takes to stop.

    QT_QPA_PLATFORM=offscreen python benchmarks/cancel_latency.py [--json]

Prints, per mechanism, its slowest job and the longest stop after cancel; target: every stop
within 0.5 s on an idle machine."""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from functools import partial
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

CANCEL_AFTER_S = 0.3
KINDS = (("median", "age"), ("argmax", "occupation"), ("workload", "age"), ("top_k", "occupation"))


def _inputs() -> dict[str, Any]:
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtWidgets import QApplication

    from dpexplorer.data.default import default_dataset_path
    from dpexplorer.gui.app import wait_for_views
    from dpexplorer.gui.main_window import MainWindow

    _app = QApplication.instance() or QApplication([])
    window = MainWindow(interactive=False, restore_layout=False)
    window.open_file(default_dataset_path())
    wait_for_views(window, 120)
    inputs = {}
    for kind, column in KINDS:
        window.query_panel.select_kind(kind, column)
        wait_for_views(window, 120)
        QCoreApplication.processEvents()
        inputs[kind] = window.explorer.query_input
    window.close()
    return inputs


def _extremes(mechanism: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in mechanism.params:
        if p.type in ("float", "int"):
            out += [{p.name: p.low}, {p.name: p.high}]
        elif p.type == "choice":
            out += [{p.name: c} for c in p.choices]
    return out


def _timed(fn: Any) -> dict[str, float | str]:
    from dpexplorer.core.cancel import CancelToken, ambient
    from dpexplorer.core.errors import CancelledError, DPExplorerError

    token, out = CancelToken(), {}

    def target() -> None:
        start = time.perf_counter()
        try:
            with ambient(token):
                fn()
            out["status"] = "done"
        except CancelledError:
            out["status"] = "cancelled"
        except DPExplorerError:
            out["status"] = "refused"
        out["seconds"] = time.perf_counter() - start

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(CANCEL_AFTER_S)
    if thread.is_alive():
        token.cancel()
        cancelled = time.perf_counter()
        thread.join(120)
        out["stop_after_cancel_s"] = time.perf_counter() - cancelled
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from dpexplorer.core.mechanisms.registry import all_mechanisms
    from dpexplorer.gui import jobs
    from dpexplorer.gui.views import blr, pmw, ptr, selection

    views = {m: module for module in (blr, pmw, ptr, selection) for m in module.MECHANISMS}
    inputs = _inputs()
    report: dict[str, Any] = {}
    for mechanism in all_mechanisms():
        worst: dict[str, Any] = {"stop_after_cancel_s": 0.0, "longest_job_s": 0.0}
        for kind, query in inputs.items():
            if mechanism.accepts(query) is not None:
                continue
            for override in _extremes(mechanism):
                try:
                    params = mechanism.validate(override)
                except Exception:  # an extreme the declaration itself refuses
                    continue
                call_args = (mechanism, params, query)
                calls = {
                    "neighbours": partial(jobs.neighbours, *call_args),
                    "accuracy": partial(jobs.accuracy, *call_args, 0.95),
                    "draws": partial(jobs.draws, *call_args, 1, "D"),
                }
                if mechanism.name in views:
                    calls["view"] = partial(views[mechanism.name].job, *call_args, 1)
                if mechanism.name == "blr":
                    calls["blr_run"] = partial(blr.run_job, *call_args, 1)
                for job, call in calls.items():
                    result = _timed(call)
                    stop = float(result.get("stop_after_cancel_s", 0.0))
                    worst["longest_job_s"] = max(worst["longest_job_s"], float(result.get("seconds", 0.0)))
                    if stop >= worst["stop_after_cancel_s"] and "stop_after_cancel_s" in result:
                        worst.update(stop_after_cancel_s=stop, job=job, query=kind, params=override)
        report[mechanism.name] = worst
    summary = {
        "cancel_after_s": CANCEL_AFTER_S,
        "max_stop_after_cancel_s": max(r["stop_after_cancel_s"] for r in report.values()),
        "mechanisms": report,
    }
    if args.json:
        print(json.dumps(summary, indent=2, default=float))
        return
    for name, row in report.items():
        where = f"{row.get('job', '-')} {row.get('params', '')}"
        print(f"{name:24s} stop {row['stop_after_cancel_s']:.3f} s  {where}")
    print(f"max stop after cancel: {summary['max_stop_after_cancel_s']:.3f} s")


if __name__ == "__main__":
    main()
