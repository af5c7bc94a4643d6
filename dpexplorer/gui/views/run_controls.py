"""Run / Cancel / progress for a view's long job (a BLR run, the synthetic-data curve, the
reconstruction attack, the audit): one row with a line of text (what the run will cost), the
buttons and a progress bar, and a status line under it (or beside them). The widget keeps its
own state (idle or running); the view connects :attr:`RunControls.run_requested` and
:attr:`RunControls.cancel_requested` to the workspace's job and passes results and failures
back through :meth:`idle`.

**One mechanism for Cancel** (issue 41, item 4): :meth:`RunControls.bind` names the compute
service's view the job runs under; from then on the controls follow that job themselves: its
progress moves the bar (with an estimate of the time left, :class:`TimeLeft`), and whatever
cancels it (the panel's own Cancel, a new query, the window's Esc through
:meth:`~dpexplorer.gui.compute.ComputeService.cancel`, which emits ``cancelled``) returns them
to rest. No panel routes either by hand, so none can be forgotten (tests/gui/test_cancel_walk.py
walks every RunControls the window makes)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from dpexplorer.gui.views.live_text import LiveText

if TYPE_CHECKING:
    from dpexplorer.gui.compute import ComputeService

PROGRESS_STEPS = 1000
TIME_LEFT_AFTER_S = 2.0
"""No estimate of the time left before a job has run this long (too early to say)."""
TIME_LEFT_FROM = 0.02
"""... nor before it has done this share."""


class TimeLeft:
    """How long a job has left, from the share it has done and the time since :meth:`start`:
    elapsed × (1 − f) / f, the rate so far held (an estimate: a job whose steps differ in cost,
    as AIM's fits do from MST's, makes it rough). ``clock`` returns seconds (monotonic)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started = clock()

    def start(self) -> None:
        self.started = self.clock()

    def seconds(self, fraction: float) -> float | None:
        """The estimate in seconds; None until the job has run :data:`TIME_LEFT_AFTER_S` and done
        :data:`TIME_LEFT_FROM` of its work, or once it is done."""
        elapsed = self.clock() - self.started
        if not TIME_LEFT_FROM <= fraction < 1.0 or elapsed < TIME_LEFT_AFTER_S:
            return None
        return elapsed * (1.0 - fraction) / fraction

    def words(self, fraction: float) -> str:
        """ "about 40 s left", "about 3 min left", "about 1 h 20 min left" ("" without an
        estimate): seconds rounded up to 5 s below a minute, minutes up to whole ones."""
        left = self.seconds(fraction)
        if left is None:
            return ""
        if left < 60:
            return f"about {max(5, 5 * math.ceil(left / 5))} s left"
        minutes = math.ceil(left / 60)
        if minutes < 60:
            return f"about {minutes} min left"
        hours, rest = divmod(minutes, 60)
        return f"about {hours} h {rest} min left" if rest else f"about {hours} h left"


class RunControls(QWidget):
    """``info`` (rich text) beside Run, Cancel and the progress bar; ``status`` below (beside
    them with ``status_beside``, ``info`` then hidden). Run is enabled when the owner said the job
    can run (:meth:`set_ready`) and nothing runs; Cancel while something runs. Pressing Run
    (or :meth:`press_run`) shows ``busy`` and emits :attr:`run_requested`; pressing Cancel
    returns to idle at once with ``cancelled`` (a cancelled job reports nothing) and emits
    :attr:`cancel_requested`. Once bound (:meth:`bind`), the job's progress and its cancellation
    by anyone reach the controls directly."""

    run_requested = Signal()
    cancel_requested = Signal()
    job = ""
    """The compute service's view the controlled job runs under (:meth:`bind`); "" unbound."""

    def __init__(
        self,
        run_text: str,
        run_tip: str,
        cancel_tip: str,
        progress_format: str,
        parent: QWidget | None = None,
        *,
        busy: str = "Running…",
        cancelled: str = "Cancelled: nothing was drawn.",
        status_beside: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(parent)
        self.busy, self.cancelled = busy, cancelled
        """The status while a job runs, and after Cancel."""
        self.info = LiveText()
        self.run_button = QPushButton(run_text)
        self.run_button.setToolTip(run_tip)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip(cancel_tip)
        self.progress = QProgressBar()
        self.progress.setRange(0, PROGRESS_STEPS)
        self.progress.setFormat(progress_format)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.time_left = TimeLeft(clock)
        self._status, self._fraction = "", 0.0
        row = QHBoxLayout()
        row.addWidget(self.info, 3)
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        row.addWidget(self.progress, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        if status_beside:
            self.info.hide()
            row.addWidget(self.status, 4)
        else:
            layout.addWidget(self.status)
        self.running = False
        self.ready = False
        self.run_button.clicked.connect(self.press_run)
        self.cancel_button.clicked.connect(self._on_cancel)
        self.idle("")

    def bind(self, compute: ComputeService, job: str) -> None:
        """Follow the compute service's view ``job``: its progress moves the bar, and its
        cancellation, by whoever asks (Esc included), returns the controls to rest with
        ``cancelled``."""
        self.job = job
        compute.progress.connect(self._on_job_progress)
        compute.cancelled.connect(self._on_job_cancelled)

    def set_ready(self, ready: bool) -> None:
        """Whether the job can run now (Run stays disabled while one runs)."""
        self.ready = ready
        if not self.running:
            self.run_button.setEnabled(ready)

    def idle(self, status: str) -> None:
        """Nothing runs: Run as ready allows, Cancel off, no progress bar; ``status`` shown."""
        self.running = False
        self.run_button.setEnabled(self.ready)
        self.cancel_button.setEnabled(False)
        self.progress.setValue(0)
        self.progress.setVisible(False)
        self.status.setText(status)

    def started(self, status: str) -> None:
        """A job runs: Run off, Cancel on, the progress bar at 0; ``status`` shown (and, once
        the job has run a while, the time it has left)."""
        self.running = True
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setValue(0)
        self.progress.setVisible(True)
        self.status.setText(status)
        self._status, self._fraction = status, 0.0
        self.time_left.start()

    def set_progress(self, fraction: float) -> None:
        """The share of the job done (0 to 1), while it runs; the status adds the time left."""
        if not self.running:
            return
        self._fraction = min(max(fraction, 0.0), 1.0)
        self.progress.setValue(round(self._fraction * PROGRESS_STEPS))
        left = self.time_left.words(self._fraction)
        text = f"{self._status} {left[:1].upper()}{left[1:]}." if left else self._status
        if text != self.status.text():
            self.status.setText(text)

    def press_run(self) -> None:
        """What pressing Run does (when ready and idle): busy, then :attr:`run_requested`."""
        if self.ready and not self.running:
            self.started(self.busy)
            self.run_requested.emit()

    def _on_cancel(self) -> None:
        if self.running:
            self.idle(self.cancelled)
            self.cancel_requested.emit()

    def _on_job_progress(self, view: str, fraction: float) -> None:
        if view == self.job:
            self.set_progress(fraction)

    def _on_job_cancelled(self, view: str) -> None:
        if view == self.job and self.running:
            self.idle(self.cancelled)
