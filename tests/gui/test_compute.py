"""The compute service: latest wins, stale results dropped, errors and cancellation delivered."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from dpexplorer.core.cancel import CancelToken, checkpoint
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.gui.compute import ComputeService

HANG_S = 120.0
"""How long a wait may last before the test calls it a hang (not a speed target)."""


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


def _held_when_cancelled(stopped: threading.Event, gate: threading.Event) -> str:
    """:func:`_spin_until_cancelled`, which, once its ambient token stops it, waits for
    ``gate`` before it raises (``stopped`` says it got there)."""
    from dpexplorer.core.errors import CancelledError

    try:
        return _spin_until_cancelled()
    except CancelledError:
        stopped.set()
        gate.wait(HANG_S)
        raise


def test_shutdown_returns_at_once_and_the_ambient_token_stops_the_worker(qtbot):
    """The old shutdown joined the workers: closing the window waited for a sparse-vector
    integral for more than 95 s. Here the job, once stopped by its token, waits for a gate:
    shutdown must return while the job is still inside it."""
    svc = ComputeService()
    stopped, gate = threading.Event(), threading.Event()
    svc.submit("view", _held_when_cancelled, stopped, gate)
    qtbot.waitUntil(lambda: svc.running == 1, timeout=int(HANG_S * 1000))
    svc.shutdown()
    assert svc.running == 1, "shutdown waited for the worker"
    assert stopped.wait(HANG_S), "the ambient token stops the job at its next poll"
    gate.set()
    assert svc.wait_for_workers(HANG_S)


def test_a_background_view_waits_for_the_others_results_and_their_paint(qtbot, service):
    """The mechanism ranking's case: its job starts once the plots' job has ended and the window
    has painted that result (a background job holding the GIL would slow the drawing)."""
    from PySide6.QtWidgets import QWidget

    stamps: dict[str, int] = {}
    tick = itertools.count()  # the order of events, not their time

    class Canvas(QWidget):
        def paintEvent(self, _event: object) -> None:
            stamps.setdefault("painted", next(tick))

    canvas = Canvas()
    qtbot.addWidget(canvas)
    canvas.show()
    qtbot.waitUntil(lambda: "painted" in stamps, timeout=10_000)  # shown and painted: at rest
    qtbot.wait(50)

    def delivered(view: str, _gen: int, _result: object) -> None:
        if view == "plots":
            stamps["delivered"] = next(tick)
            stamps.pop("painted", None)
            canvas.update()

    def ranking() -> str:
        stamps["ranking started"] = next(tick)
        return "ranked"

    service.set_background("ranking")
    service.finished.connect(delivered)
    service.submit("plots", _slow_identity, 1, 0.05)
    service.submit("ranking", ranking)
    assert service.pending_views() == ("plots", "ranking") and service.busy
    qtbot.waitUntil(lambda: not service.busy, timeout=60_000)
    assert stamps["delivered"] < stamps["painted"] < stamps["ranking started"]


def test_a_background_job_waits_no_longer_than_its_bound_and_the_latest_wins(qtbot, service):
    """A background job submitted while another view's job runs is held, then started when
    its bound has passed (after a timer of half the bound has fired), while the long job still
    runs (it waits for a gate); with nothing else pending one starts at once (never held)."""
    from PySide6.QtCore import QTimer

    from dpexplorer.gui.compute import BACKGROUND_WAIT_MS

    events: list[str] = []
    received: list[tuple[str, object]] = []
    gate = threading.Event()
    service.finished.connect(lambda view, _gen, result: received.append((view, result)))
    service.set_background("ranking")

    def ranking(value: str) -> str:
        events.append(f"ranking {value} started")
        return value

    def long_job() -> str:
        gate.wait(HANG_S)
        return "identified"

    QTimer.singleShot(BACKGROUND_WAIT_MS // 2, lambda: events.append("half the bound"))
    service.submit("identity", long_job)
    service.submit("ranking", ranking, "first")
    service.submit("ranking", ranking, "second")
    assert service.held_views() == ("ranking",)
    qtbot.waitUntil(lambda: received == [("ranking", "second")], timeout=int(HANG_S * 1000))
    assert events == ["half the bound", "ranking second started"]  # the latest, after its wait
    assert service.pending_views() == ("identity",), "it did not wait for the long job"
    gate.set()
    qtbot.waitUntil(lambda: not service.busy, timeout=int(HANG_S * 1000))
    assert received[-1] == ("identity", "identified")
    service.submit("ranking", ranking, "alone")  # nothing else pending: starts at once
    assert service.held_views() == ()
    qtbot.waitUntil(lambda: not service.busy, timeout=int(HANG_S * 1000))
    assert received[-1] == ("ranking", "alone")


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
