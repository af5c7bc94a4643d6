"""The compute service of DESIGN.md: the only way the GUI computes.

``submit(view, fn, ...)`` runs ``fn`` on a worker thread. Per view the latest request wins:
submitting again cancels the older job (through its CancelToken) and bumps the view's
generation; a result whose generation is not the view's current one is dropped, so a stale
result never reaches the screen. Results, errors and progress come back to the main thread as
Qt signals (emitted from the worker, delivered queued to this object's thread).

Background views (:meth:`ComputeService.set_background`) wait for the others: their job starts
once the jobs pending when it was submitted have ended, the window has painted their results and
:data:`BACKGROUND_QUIET_MS` more have passed, so that a figure beside the plots does not hold the
GIL while the main thread draws them, nor between the frames of a slider drag."""

from __future__ import annotations

import contextlib
import inspect
import os
import threading
import traceback
import types
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QTimer, Signal

from dpexplorer.core.cancel import CancelToken, ambient
from dpexplorer.core.errors import CancelledError, DPExplorerError
from dpexplorer.core.mechanisms.runs import Job


def error_log_path() -> Path:
    """Where the window writes the traceback of an error no code anticipated (a bug):
    ``$XDG_STATE_HOME/dpexplorer/errors.log`` (``~/.local/state/...``), never stderr."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base) / "dpexplorer" / "errors.log"


def _log_traceback(view: str) -> Path:
    """Append the exception being handled, with its traceback, to :func:`error_log_path`."""
    path = error_log_path()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"--- {datetime.now(UTC).isoformat(timespec='seconds')} in {view}\n")
            log.write(traceback.format_exc())
    return path


BACKGROUND_WAIT_MS = 100
"""The longest a background view's job waits for the others (a long one, as a file's ledger
identity, does not hold it back)."""
BACKGROUND_QUIET_MS = 30
"""How long after those paints a background view's job starts: longer than a slider drag's
frame (the explorer's throttle: 16 ms), so during a drag it starts only when the drag pauses.
Started at once, the mechanism ranking took the GIL from the main thread right after each
frame: the next slider event's handler (and, in ``benchmarks/latency.py``, the check that the
frame was painted) waited up to the interpreter's 5 ms switch interval for it (the benchmark's
worst moves were 6-11 ms later than their paint)."""
_START_HELD = QEvent.Type(QEvent.registerEventType())
"""Posted at low priority behind the paints a result queued: then the held jobs start, after
:data:`BACKGROUND_QUIET_MS`."""


_CALL = QEvent.Type(QEvent.registerEventType())


class _Deferred(QObject):
    """One call of :func:`after_paint`: a child of the caller's object (dropped with it)."""

    def __init__(self, fn: Callable[[], object], parent: QObject) -> None:
        super().__init__(parent)
        self._fn = fn

    def event(self, event: QEvent) -> bool:
        if event.type() == _CALL:
            self.setParent(None)
            self.deleteLater()
            self._fn()
            return True
        return super().event(event)


def after_paint(parent: QObject, fn: Callable[[], object]) -> None:
    """Call ``fn`` on ``parent``'s thread once the events queued now, the paints of what was just
    changed included, have been handled (a low-priority posted event; a zero-delay timer would
    run before the paint); never if ``parent`` is deleted first. For work that would hold the
    GIL while the window paints, as a job's start does."""
    QCoreApplication.postEvent(_Deferred(fn, parent), QEvent(_CALL), Qt.EventPriority.LowEventPriority.value)


@dataclass
class _Job:
    generation: int
    token: CancelToken
    future: Future[Any] | None = None
    held: tuple[Callable[..., Any], tuple, dict, set[tuple[str, int]]] | None = None
    """A background view's job not started yet: fn, args, kwargs, and the other views' jobs
    (view, generation) it waits for."""


_PARAMETERS: weakref.WeakKeyDictionary[Callable[..., Any], frozenset[str]] = weakref.WeakKeyDictionary()
"""The parameter names of each plain function submitted so far (inspect.signature took about 0.05
ms, three times a job and two jobs a slider move)."""


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` has a parameter called ``name`` (False if it has no signature)."""
    cached = isinstance(fn, types.FunctionType)
    names = _PARAMETERS.get(fn) if cached else None
    if names is None:
        try:
            names = frozenset(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            names = frozenset()
        if cached:
            _PARAMETERS[fn] = names
    return name in names


class ComputeService(QObject):
    """Runs pure functions off the main thread, latest-wins per view."""

    finished = Signal(str, int, object)
    """view, generation, result (only for the view's current generation)."""
    failed = Signal(str, int, str)
    """view, generation, message for the user (DPExplorerError text, or a one-line summary)."""
    progress = Signal(str, float)
    """view, fraction done."""
    busy_changed = Signal(bool)
    """True when the first job starts, False when the last one ends."""
    cancelled = Signal(str)
    """view: its running job was cancelled by :meth:`cancel` (not when a newer request for the
    same view replaced it), e.g. by Esc: a view showing "working…" goes back to rest."""
    _done = Signal(str, int, object, object)

    def __init__(self, parent: QObject | None = None, max_workers: int = 2) -> None:
        super().__init__(parent)
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="dpx-compute")
        self._jobs: dict[str, _Job] = {}
        self._generation: dict[str, int] = {}
        self._shut_down = False
        self._background: frozenset[str] = frozenset()
        self._running = 0  # jobs inside fn on a worker now (for tests and benchmarks)
        self._running_lock = threading.Lock()
        self._done.connect(self._on_done)

    # ------------------------------------------------------------------ main-thread API
    def set_background(self, *views: str) -> None:
        """Make ``views`` background views: a job of one of them submitted while other views'
        jobs are pending is held until those have ended (or been cancelled or replaced), the
        events their results queued, paints included, have been handled and
        :data:`BACKGROUND_QUIET_MS` have passed; at most :data:`BACKGROUND_WAIT_MS` in all.
        Latest wins as for any view; a held job counts as pending (``busy``, ``pending_views``)."""
        self._background = frozenset(views)

    def submit(self, view: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
        """Run ``fn(*args, **kwargs)`` for ``view``; returns the job's generation.

        If ``fn`` takes ``cancel`` or ``progress`` keyword arguments they are supplied: a
        :class:`CancelToken` and a callback emitting :attr:`progress`; a ``job`` keyword argument
        gets both as one :class:`~dpexplorer.core.mechanisms.runs.Job`. After :meth:`shutdown`
        (the window is closing) nothing runs and -1 is returned."""
        if self._shut_down:
            return -1
        self._drop(view)
        generation = self._generation.get(view, 0) + 1
        self._generation[view] = generation
        job = _Job(generation, CancelToken())

        def report(fraction: float) -> None:
            self.progress.emit(view, float(fraction))

        if _accepts(fn, "cancel"):
            kwargs["cancel"] = job.token
        if _accepts(fn, "progress"):
            kwargs["progress"] = report
        if _accepts(fn, "job"):  # both at once, as core's long runs take them (core.mechanisms.runs.Job)
            kwargs["job"] = Job(job.token, report)
        was_idle = not self._jobs
        waits = set()
        if view in self._background:
            waits = {(v, j.generation) for v, j in self._jobs.items() if v not in self._background}
        self._jobs[view] = job
        if waits:
            job.held = (fn, args, kwargs, waits)
            QTimer.singleShot(BACKGROUND_WAIT_MS, self, lambda: self._start_held(view, generation))
        else:
            job.future = self._pool.submit(self._run, view, generation, job.token, fn, args, kwargs)
        if was_idle:
            self.busy_changed.emit(True)
        return generation

    def _start_held(self, view: str, generation: int) -> None:
        """Start ``view``'s held job, if it is still the view's current one and not started."""
        job = self._jobs.get(view)
        if job is None or job.generation != generation or job.held is None or self._shut_down:
            return
        fn, args, kwargs, _waits = job.held
        job.held = None
        job.future = self._pool.submit(self._run, view, generation, job.token, fn, args, kwargs)

    def _others_ended(self) -> None:
        """A job ended or was dropped: held jobs waiting only for ended ones start after the
        events queued now (the results' paints), through a low-priority posted event."""
        ready = False
        for job in self._jobs.values():
            if job.held is not None:
                waits = job.held[3]
                waits -= {w for w in waits if (j := self._jobs.get(w[0])) is None or j.generation != w[1]}
                ready = ready or not waits
        if ready:
            QCoreApplication.postEvent(self, QEvent(_START_HELD), Qt.EventPriority.LowEventPriority.value)

    def event(self, event: QEvent) -> bool:
        if event.type() == _START_HELD:
            QTimer.singleShot(BACKGROUND_QUIET_MS, self, self._start_ready)
            return True
        return super().event(event)

    def _start_ready(self) -> None:
        """Start the held jobs that wait for nothing any more."""
        for view, job in list(self._jobs.items()):
            if job.held is not None and not job.held[3]:
                self._start_held(view, job.generation)

    def cancel(self, view: str) -> None:
        """Cancel the view's running job, if any; its result will be dropped, and
        :attr:`cancelled` says so."""
        if self._drop(view):
            self.cancelled.emit(view)

    def _drop(self, view: str) -> bool:
        """Cancel the view's job, if any (True if there was one)."""
        job = self._jobs.pop(view, None)
        if job is None:
            return False
        job.token.cancel()
        if job.future is not None:
            job.future.cancel()
        self._generation[view] = self._generation.get(view, 0) + 1
        if not self._jobs:
            self.busy_changed.emit(False)
        elif view not in self._background:
            self._others_ended()
        return True

    @property
    def running(self) -> int:
        """How many jobs are inside their function on a worker now (cancelled ones included,
        until they reach their next checkpoint)."""
        return self._running

    def current_generation(self, view: str) -> int:
        return self._generation.get(view, 0)

    @property
    def busy(self) -> bool:
        return bool(self._jobs)

    def pending_views(self) -> tuple[str, ...]:
        return tuple(self._jobs)

    def held_views(self) -> tuple[str, ...]:
        """The background views whose job is held, not yet started (:meth:`set_background`);
        for tests and benchmarks."""
        return tuple(view for view, job in self._jobs.items() if job.held is not None)

    def shutdown(self) -> None:
        """Cancel everything and return at once (call when the window closes): a worker still
        inside a long step finishes it in the background, its result dropped (the jobs poll
        their token, so that is a fraction of a second). Never joins a worker: a window that
        waited on one could hang for as long as a computation takes."""
        self._shut_down = True
        for view in list(self._jobs):
            self.cancel(view)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def wait_for_workers(self, timeout: float) -> bool:
        """True once every worker thread has ended (within ``timeout`` seconds); for tests and
        for the process's exit, never for the window."""
        import time

        deadline = time.monotonic() + timeout
        for thread in list(getattr(self._pool, "_threads", ())):
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in getattr(self._pool, "_threads", ()))

    # ------------------------------------------------------------------ worker side
    def _run(
        self,
        view: str,
        generation: int,
        token: CancelToken,
        fn: Callable[..., Any],
        args: tuple,
        kwargs: dict,
    ) -> None:
        try:
            if token.cancelled:  # cancelled while queued: start nothing
                return
            with self._running_lock:
                self._running += 1
            try:
                with ambient(token):  # core code deep in a job polls it (core.cancel.poll)
                    result: object = fn(*args, **kwargs)
            finally:
                with self._running_lock:
                    self._running -= 1
            error: object = None
        except CancelledError:
            return
        except DPExplorerError as exc:
            result, error = None, str(exc)
        except Exception as exc:  # a bug: say so in one line, keep the trace in the log (not stderr)
            log = _log_traceback(view)
            result, error = None, f"internal error in {view}: {type(exc).__name__}: {exc} (details in {log})"
        with contextlib.suppress(RuntimeError):  # the window closed, taking this service: drop it
            self._done.emit(view, generation, result, error)

    def _on_done(self, view: str, generation: int, result: object, error: object) -> None:
        if self._shut_down:
            return
        job = self._jobs.get(view)
        if job is None or job.generation != generation:
            return  # stale: a newer request superseded this one
        del self._jobs[view]
        if error is None:
            self.finished.emit(view, generation, result)
        else:
            self.failed.emit(view, generation, str(error))
        if not self._jobs:
            self.busy_changed.emit(False)
        elif view not in self._background:
            self._others_ended()
