"""Run / Cancel / progress for a view's long job (a BLR run, the synthetic-data curve): one row
with a line of text (what the run will cost), the buttons and a progress bar, and a status line
under it. The widget keeps its own state (idle or running); the view connects
:attr:`RunControls.run_requested` and :attr:`RunControls.cancel_requested` to the workspace's
job, and passes progress, cancellation and failure back through :meth:`started`,
:meth:`set_progress` and :meth:`idle`."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from dpexplorer.gui.views.live_text import LiveText

PROGRESS_STEPS = 1000


class RunControls(QWidget):
    """``info`` (rich text) beside Run, Cancel and the progress bar; ``status`` below. Run is
    enabled when the owner said the job can run (:meth:`set_ready`) and nothing runs; Cancel
    while something runs. Pressing Run shows ``busy`` and emits :attr:`run_requested`; pressing
    Cancel returns to idle at once with ``cancelled`` (a cancelled job reports nothing) and emits
    :attr:`cancel_requested`."""

    run_requested = Signal()
    cancel_requested = Signal()

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
        row = QHBoxLayout()
        row.addWidget(self.info, 3)
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        row.addWidget(self.progress, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.status)
        self.running = False
        self.ready = False
        self.run_button.clicked.connect(self._on_run)
        self.cancel_button.clicked.connect(self._on_cancel)
        self.idle("")

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
        """A job runs: Run off, Cancel on, the progress bar at 0; ``status`` shown."""
        self.running = True
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setValue(0)
        self.progress.setVisible(True)
        self.status.setText(status)

    def set_progress(self, fraction: float) -> None:
        """The share of the job done (0 to 1), while it runs."""
        if self.running:
            self.progress.setValue(round(min(max(fraction, 0.0), 1.0) * PROGRESS_STEPS))

    def _on_run(self) -> None:
        if self.ready and not self.running:
            self.started(self.busy)
            self.run_requested.emit()

    def _on_cancel(self) -> None:
        if self.running:
            self.idle(self.cancelled)
            self.cancel_requested.emit()
