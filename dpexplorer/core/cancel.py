"""Cancellation and progress for long computations (the Mechanism contract of DESIGN.md).

A long function takes ``cancel: CancelToken | None`` and ``progress: ProgressFn | None`` and
calls :func:`checkpoint` between chunks."""

from __future__ import annotations

import threading
from collections.abc import Callable

from dpexplorer.core.errors import CancelledError

ProgressFn = Callable[[float], None]
"""Receives the fraction done, in [0, 1]."""


class CancelToken:
    """A thread-safe flag: the GUI sets it, the worker polls it between chunks."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


def checkpoint(
    cancel: CancelToken | None, progress: ProgressFn | None = None, fraction: float | None = None
) -> None:
    """Raise :class:`CancelledError` if cancelled; otherwise report ``fraction`` done."""
    if cancel is not None and cancel.cancelled:
        raise CancelledError("cancelled")
    if progress is not None and fraction is not None:
        progress(min(max(fraction, 0.0), 1.0))
