"""Render two steps of every lesson at 1280 x 720 in teaching mode, as a class sees them:

    QT_QPA_PLATFORM=offscreen python docs/lessons/make_screenshots.py [OUT_DIR]

Writes OUT_DIR/<lesson file>-step<N>.png (default: this directory)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication

from dpexplorer.data.default import default_dataset_path
from dpexplorer.gui.app import main_thread_garbage_collection, wait_for_views
from dpexplorer.gui.main_window import MainWindow

SHOWN_STEPS = {
    "01_counting_laplace": (2, 3),
    "02_exam_day": (2, 3),
    "03_gaussian": (1, 2, 3),
    "04_median_sensitivity": (1, 4),
    "05_k_queries": (1, 4),
    "06_random_walk": (2, 4),
    "08_blr_to_aim": (4, 6),
}
"""1-based steps shot per lesson file (the Gaussian lesson's third step too: it shows the budget view)."""


def settle(window: MainWindow, runner_busy: object) -> None:
    deadline = time.monotonic() + 300
    while runner_busy() and time.monotonic() < deadline:  # type: ignore[operator]
        QCoreApplication.processEvents()
        time.sleep(0.01)
    if not wait_for_views(window, 300):
        raise TimeoutError("views did not finish")
    for _ in range(30):  # let the last results paint
        QCoreApplication.processEvents()
        time.sleep(0.01)


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
    out.mkdir(exist_ok=True)
    app = QApplication([])
    collector = main_thread_garbage_collection()
    window = MainWindow(interactive=False, restore_layout=False)
    window.resize(1280, 720)
    window.show()
    window.open_file(default_dataset_path())
    settle(window, lambda: False)
    window.teaching_action.setChecked(True)
    runner = window.lessons
    ready: list[int] = []
    runner.step_ready.connect(ready.append)
    for number, lesson in enumerate(runner.lessons):
        wanted = SHOWN_STEPS.get(lesson.path.stem, (1, len(lesson.steps)))
        for index in range(max(wanted)):
            ready.clear()
            runner.start(number) if index == 0 else runner.next()
            settle(window, lambda: not ready)
            if index + 1 in wanted:
                path = out / f"{lesson.path.stem}-step{index + 1}.png"
                window.grab().save(str(path))
                size = window.size()
                # The window cannot be narrower than its widest tab or panel allows.
                note = "" if size.toTuple() == (1280, 720) else " (not 1280 x 720: its minimum size)"
                print(f"{path} {size.width()} x {size.height()}{note}")
        runner.leave()
    window.close()
    collector.timer.stop()
    del app


if __name__ == "__main__":
    main()
