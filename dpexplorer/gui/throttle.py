"""Slider input throttling: at most one call per interval, and always the last one.

superqt's ``qthrottled`` does the same but does not say whether a trailing call is pending,
which ``--screenshot`` needs in order to wait for every view; this is its 30-line core."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer


class Throttle(QObject):
    """``throttle(*args)`` calls ``func`` at once if idle, else once when the interval ends
    with the latest arguments. ``pending`` is True while a trailing call waits."""

    def __init__(
        self, func: Callable[..., Any], interval_ms: int = 30, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._func = func
        self._args: tuple[Any, ...] | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._fire)

    def __call__(self, *args: Any) -> None:
        if self._timer.isActive():
            self._args = args
            return
        self._func(*args)
        self._timer.start()

    @property
    def pending(self) -> bool:
        return self._args is not None

    def _fire(self) -> None:
        if self._args is not None:
            args, self._args = self._args, None
            self._func(*args)
            self._timer.start()

    def stop(self) -> None:
        """Drop any pending call and stop the timer."""
        self._args = None
        self._timer.stop()
