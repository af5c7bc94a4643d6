"""Cancellation and progress for long computations (the Mechanism contract of DESIGN.md).

A long function takes ``cancel: CancelToken | None`` and ``progress: ProgressFn | None`` and
calls :func:`checkpoint` between chunks."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from dpexplorer.core.errors import CancelledError

ProgressFn = Callable[[float], None]
"""Receives the fraction done, in [0, 1]."""


_ambient = threading.local()
"""The current thread's token (see :func:`ambient`)."""


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
    """Raise :class:`CancelledError` if cancelled (``cancel``, or when it is None the thread's
    ambient token, :func:`ambient`); otherwise report ``fraction`` done."""
    if cancel is None:
        cancel = getattr(_ambient, "token", None)
    if cancel is not None and cancel.cancelled:
        raise CancelledError("cancelled")
    if progress is not None and fraction is not None:
        progress(min(max(fraction, 0.0), 1.0))


@contextmanager
def ambient(token: CancelToken | None) -> Iterator[None]:
    """Make ``token`` the calling thread's current token for the ``with`` block: the compute
    service runs every job inside one, so that code deep in a mechanism (an integrand scipy
    calls, a simulation loop) can :func:`poll` without a token threaded through every
    signature."""
    previous = getattr(_ambient, "token", None)
    _ambient.token = token
    try:
        yield
    finally:
        _ambient.token = previous


def poll() -> None:
    """Raise :class:`CancelledError` if the thread's current token (see :func:`ambient`) is
    cancelled; free (one attribute read) when there is none."""
    token = getattr(_ambient, "token", None)
    if token is not None and token.cancelled:
        raise CancelledError("cancelled")
