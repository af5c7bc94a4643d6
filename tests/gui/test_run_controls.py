"""The Run / Cancel / progress row (dpexplorer/gui/views/run_controls.py): the time a job has
left is estimated from the share done and the time since it started (a fake clock here: no
wall time), said in the status line once there is enough to go on; a bound job's progress and
its cancellation by anyone reach the controls."""

from __future__ import annotations

import pytest

from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.views.run_controls import TIME_LEFT_AFTER_S, RunControls, TimeLeft


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_time_left_is_the_rate_so_far_held() -> None:
    clock = Clock()
    left = TimeLeft(clock)
    left.start()
    clock.now += 10.0
    assert left.seconds(0.25) == pytest.approx(30.0)  # 10 s for a quarter: 30 s for the rest
    assert left.words(0.25) == "about 30 s left"
    assert left.words(0.3) == "about 25 s left"  # 23.3 s, up to 5 s
    clock.now += 290.0  # 300 s for 10 %
    assert left.words(0.1) == "about 45 min left"
    assert left.words(0.02) == "about 4 h 5 min left"  # 14,700 s: 245 min
    assert left.words(0.05) == "about 1 h 35 min left"  # 5,700 s
    assert left.words(0.5) == "about 5 min left"


def test_no_estimate_too_early_or_when_done() -> None:
    clock = Clock()
    left = TimeLeft(clock)
    clock.now += TIME_LEFT_AFTER_S / 2
    assert left.seconds(0.5) is None and left.words(0.5) == ""  # too soon after the start
    clock.now += TIME_LEFT_AFTER_S
    assert left.seconds(0.001) is None  # too little done to say
    assert left.seconds(1.0) is None and left.seconds(0.5) is not None
    assert left.words(0.999) == "about 5 s left"  # never "0 s"


def test_the_status_says_the_time_left_while_a_bound_job_runs(qtbot) -> None:
    clock = Clock()
    compute = ComputeService()
    controls = RunControls("Run", "", "", "%p% done", busy="Fitting…", clock=clock)
    qtbot.addWidget(controls)
    controls.bind(compute, "fits")
    controls.set_ready(True)
    controls.press_run()
    compute.progress.emit("fits", 0.1)
    assert controls.progress.value() == 100 and controls.status.text() == "Fitting…"  # too early
    clock.now += 20.0
    compute.progress.emit("other view", 0.9)  # another job's progress is not this one's
    assert controls.progress.value() == 100
    compute.progress.emit("fits", 0.4)
    assert controls.status.text() == "Fitting… About 30 s left."
    compute.cancelled.emit("other view")
    assert controls.running
    compute.cancelled.emit("fits")  # whoever cancelled it (Esc): back to rest
    assert not controls.running and controls.run_button.isEnabled() and not controls.cancel_button.isEnabled()
    assert not controls.progress.isVisibleTo(controls) and "About" not in controls.status.text()
    compute.shutdown()
