"""The compute service: latest wins, stale results dropped, errors and cancellation delivered."""

from __future__ import annotations

import threading
import time

import pytest

from dpexplorer.core.cancel import CancelToken, checkpoint
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.gui.compute import ComputeService


@pytest.fixture
def service(qtbot):
    svc = ComputeService()
    yield svc
    svc.shutdown()
    svc.wait_for_workers(30.0)


def _slow_identity(value: int, delay: float) -> int:
    time.sleep(delay)
    return value


def test_latest_request_wins_and_stale_results_never_arrive(qtbot, service):
    received: list[int] = []
    service.finished.connect(lambda view, gen, result: received.append(result))
    for value in range(200):
        service.submit("view", _slow_identity, value, 0.002)
    qtbot.waitUntil(lambda: not service.busy, timeout=60_000)
    assert received == [199]


def test_views_are_independent(qtbot, service):
    received: dict[str, object] = {}
    service.finished.connect(lambda view, gen, result: received.__setitem__(view, result))
    service.submit("a", _slow_identity, 1, 0.05)
    service.submit("b", _slow_identity, 2, 0.0)
    qtbot.waitUntil(lambda: not service.busy, timeout=60_000)
    assert received == {"a": 1, "b": 2}


def test_project_errors_reach_the_failed_signal_with_their_message(qtbot, service):
    def bad() -> None:
        raise DPExplorerError("epsilon must be greater than 0")

    with qtbot.waitSignal(service.failed, timeout=60_000) as blocker:
        service.submit("view", bad)
    assert blocker.args[2] == "epsilon must be greater than 0"


def test_bugs_are_reported_in_one_line_not_lost(qtbot, service, capsys):
    def buggy() -> None:
        raise ZeroDivisionError("division by zero")

    with qtbot.waitSignal(service.failed, timeout=60_000) as blocker:
        service.submit("view", buggy)
    message = blocker.args[2]
    assert "ZeroDivisionError" in message and "\n" not in message


def test_cancel_stops_a_long_job_and_drops_its_result(qtbot, service):
    started = threading.Event()
    stopped = threading.Event()

    def long_job(cancel: CancelToken, progress) -> str:
        started.set()
        for i in range(1000):
            time.sleep(0.005)
            try:
                checkpoint(cancel, progress, i / 1000)
            except Exception:
                stopped.set()
                raise
        return "finished"

    received: list[object] = []
    service.finished.connect(lambda view, gen, result: received.append(result))
    service.submit("long", long_job)
    assert started.wait(2)
    service.cancel("long")
    assert stopped.wait(2), "the worker did not see the cancellation"
    qtbot.wait(50)
    assert received == [] and not service.busy


def test_progress_is_reported(qtbot, service):
    def job(progress) -> int:
        for i in range(5):
            progress(i / 4)
        return 1

    fractions: list[float] = []
    service.progress.connect(lambda view, f: fractions.append(f))
    with qtbot.waitSignal(service.finished, timeout=60_000):
        service.submit("p", job)
    qtbot.waitUntil(lambda: len(fractions) == 5, timeout=30_000)
    assert fractions == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_a_job_argument_gets_the_token_and_the_progress_at_once(qtbot, service):
    """A long view job takes one ``job`` (core.mechanisms.runs.Job), as core's long runs do:
    its progress reaches the view and cancelling the view's job stops it at its checkpoint."""
    from dpexplorer.core.mechanisms.runs import NO_JOB, Job

    started, stopped = threading.Event(), threading.Event()
    tokens: list[object] = []

    def long_view_job(job: Job = NO_JOB) -> str:
        tokens.append(job.cancel)
        try:
            job.checkpoint(0.25)
            started.set()
            for i in range(100_000):  # 100 s unless cancelled
                time.sleep(0.001)
                job.checkpoint(0.25 + i / 400_000)
            return "finished"
        finally:
            stopped.set()

    fractions: list[float] = []
    received: list[object] = []
    service.progress.connect(lambda view, f: fractions.append(f))
    service.finished.connect(lambda view, gen, result: received.append(result))
    service.submit("run", long_view_job)
    assert started.wait(30.0)
    qtbot.waitUntil(lambda: bool(fractions), timeout=30_000)
    assert fractions[0] == 0.25 and isinstance(tokens[0], CancelToken)
    service.cancel("run")
    assert stopped.wait(30.0), "the job stops at its next checkpoint"
    qtbot.wait(50)
    assert received == [] and not service.busy


def _spin_until_cancelled() -> str:
    """Never returns by itself: stops only through the ambient token (core.cancel.poll), the
    way a scipy integrand or a simulation loop deep in a mechanism stops."""
    from dpexplorer.core.cancel import poll

    while True:
        poll()
        time.sleep(0.001)


def test_shutdown_returns_at_once_and_the_ambient_token_stops_the_worker(qtbot):
    """The old shutdown joined the workers: closing the window waited for a sparse-vector
    integral for more than 95 s."""
    svc = ComputeService()
    svc.submit("view", _spin_until_cancelled)
    qtbot.wait(50)
    start = time.perf_counter()
    svc.shutdown()
    assert time.perf_counter() - start < 0.5
    assert svc.wait_for_workers(10.0)


def test_a_background_view_waits_for_the_others_results_and_their_paint(qtbot, service):
    """The mechanism ranking's case: its job starts once the plots' job has ended and the window
    has painted that result (a background job holding the GIL would slow the drawing)."""
    from PySide6.QtWidgets import QWidget

    stamps: dict[str, float] = {}

    class Canvas(QWidget):
        def paintEvent(self, _event: object) -> None:
            stamps.setdefault("painted", time.perf_counter())

    canvas = Canvas()
    qtbot.addWidget(canvas)
    canvas.show()
    qtbot.waitUntil(lambda: "painted" in stamps, timeout=10_000)  # shown and painted: at rest
    qtbot.wait(50)

    def delivered(view: str, _gen: int, _result: object) -> None:
        if view == "plots":
            stamps["delivered"] = time.perf_counter()
            stamps.pop("painted", None)
            canvas.update()

    def ranking() -> str:
        stamps["ranking started"] = time.perf_counter()
        return "ranked"

    service.set_background("ranking")
    service.finished.connect(delivered)
    service.submit("plots", _slow_identity, 1, 0.05)
    service.submit("ranking", ranking)
    assert service.pending_views() == ("plots", "ranking") and service.busy
    qtbot.waitUntil(lambda: not service.busy, timeout=60_000)
    assert stamps["delivered"] < stamps["painted"] < stamps["ranking started"]


def test_a_background_job_waits_no_longer_than_its_bound_and_the_latest_wins(qtbot, service):
    from dpexplorer.gui.compute import BACKGROUND_WAIT_MS

    received: list[tuple[str, object, float]] = []
    service.finished.connect(lambda view, _gen, result: received.append((view, result, time.perf_counter())))
    service.set_background("ranking")
    start = time.perf_counter()
    service.submit("identity", _slow_identity, "identified", 0.6)  # a long job of another view
    service.submit("ranking", _slow_identity, "first", 0.0)
    service.submit("ranking", _slow_identity, "second", 0.0)
    qtbot.waitUntil(lambda: not service.busy, timeout=60_000)
    assert [r[1] for r in received] == ["second", "identified"]
    # it waited for its bound (a coarse Qt timer may fire up to 5 % early), not for the long job:
    # "second" came before "identified", which took 0.6 s
    assert received[0][2] - start >= 0.9 * BACKGROUND_WAIT_MS / 1000
    service.submit("ranking", _slow_identity, "alone", 0.0)  # nothing else pending: starts at once
    qtbot.waitUntil(lambda: not service.busy, timeout=60_000)
    assert received[-1][1] == "alone" and received[-1][2] - received[-2][2] < 0.5


def test_after_paint_calls_once_the_queued_paints_are_done_and_never_for_a_deleted_parent(qtbot):
    from PySide6.QtCore import QObject, QTimer
    from PySide6.QtWidgets import QWidget

    from dpexplorer.gui.compute import after_paint

    order: list[str] = []

    class Canvas(QWidget):
        def paintEvent(self, _event: object) -> None:
            order.append("paint")

    canvas = Canvas()
    qtbot.addWidget(canvas)
    canvas.show()
    qtbot.waitUntil(lambda: "paint" in order, timeout=10_000)  # shown and painted: at rest
    qtbot.wait(50)
    order.clear()
    canvas.update()
    after_paint(canvas, lambda: order.append("after paint"))
    QTimer.singleShot(0, lambda: order.append("zero timer"))
    gone = QObject()
    after_paint(gone, lambda: order.append("deleted parent"))
    gone.deleteLater()
    qtbot.waitUntil(lambda: "after paint" in order, timeout=10_000)
    qtbot.wait(50)
    assert order == ["zero timer", "paint", "after paint"]
