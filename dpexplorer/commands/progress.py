"""Progress on the command line (issue 41, item 5) for any stage that runs longer than
:data:`DELAY_S` (:mod:`dpexplorer.core.stages`: a synthetic table's fits, PMW's transcript,
reading a large file, a plan's true answers, Spark): on a terminal (stderr a TTY) a progress bar
per stage, drawn by tqdm (imported only then), with its share done, the time spent and an
estimate of the time left, or only the time for a stage that reports no share; otherwise (stderr
a file or a pipe, as under a scheduler) one line per such stage, ``dpexplorer release: NAME…``.
A stage that ends sooner shows nothing, so short commands print what they did before. The
environment variable ``DPEXPLORER_PROGRESS_DELAY`` sets that delay in seconds (``0``: show every
stage; ``inf``: none)."""

from __future__ import annotations

import math
import os
import sys
import threading
from typing import Any, TextIO

DELAY_S = 2.0
"""A stage shows nothing before it has run this long (unless :data:`DELAY_ENV` says otherwise)."""
DELAY_ENV = "DPEXPLORER_PROGRESS_DELAY"
"""The environment variable that sets the delay (seconds; ``inf`` shows nothing)."""
TICK_S = 0.5
"""How often a bar shown redraws its time while its stage reports nothing."""
STEPS = 1000
"""A bar's resolution: a share is shown to 0.1 %."""
MEASURED_BAR = "{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}"
"""A stage that reports its share: the share, the bar, the time spent and the time left."""
TIMED_BAR = "{desc}: {elapsed}"
"""A stage that reports no share: the time spent."""
UNSIZED = (100, 24)
"""The columns and rows assumed of a terminal that gives no size."""


def delay_s() -> float:
    """The delay before a stage is shown: :data:`DELAY_ENV` when it holds a number >= 0 (``inf``
    included), else :data:`DELAY_S`."""
    try:
        chosen = float(os.environ.get(DELAY_ENV, ""))
    except ValueError:
        return DELAY_S
    return chosen if chosen >= 0 else DELAY_S


def _width(stream: TextIO) -> int:
    """The terminal's width in columns (0 when it says none)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 0


def is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no such method, or closed
        return False


class CommandProgress:
    """A :class:`~dpexplorer.core.stages.Reporter` writing to ``stream`` (stderr by default),
    each line starting with ``command``; ``delay`` seconds (:func:`delay_s` by default) before a
    stage is shown."""

    def __init__(self, command: str, stream: TextIO | None = None, *, delay: float | None = None) -> None:
        self.command = command
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = is_terminal(self.stream)
        self.delay = delay_s() if delay is None else delay

    def begin(self, name: str, measured: bool) -> _Shown | _Hidden:
        return _Hidden() if math.isinf(self.delay) else _Shown(self, name, measured)


class _Hidden:
    """A stage never shown (an infinite delay)."""

    def update(self, fraction: float) -> None:
        pass

    def end(self) -> None:
        pass


class _Shown:
    """One stage: shown after the owner's delay (at once with none) by a daemon thread, which
    then redraws a bar's time every :data:`TICK_S` until the stage ends."""

    def __init__(self, owner: CommandProgress, name: str, measured: bool) -> None:
        self.owner, self.name, self.measured = owner, name, measured
        self.steps = 0
        self.bar: Any = None
        self.over = threading.Event()
        self.lock = threading.Lock()
        if owner.delay <= 0:
            self._show()
            if owner.terminal:
                threading.Thread(target=self._tick, name="progress", daemon=True).start()
        else:
            threading.Thread(target=self._wait, name="progress", daemon=True).start()

    def _wait(self) -> None:
        if self.over.wait(self.owner.delay):
            return
        with self.lock:
            if self.over.is_set():
                return
            self._show()
        self._tick()

    def _tick(self) -> None:
        while self.bar is not None and not self.over.wait(TICK_S):
            with self.lock:
                if self.bar is not None:
                    self.bar.refresh()

    def _show(self) -> None:
        """The bar (a terminal) or the line (else); called with the lock held, or before the
        thread starts."""
        stream = self.owner.stream
        if not self.owner.terminal:
            print(f"{self.owner.command}: {self.name}…", file=stream, flush=True)
            return
        from tqdm import tqdm  # a terminal only: a line needs no library

        sized = _width(stream) > 0  # a pseudo-terminal nobody sized says 0 x 0: tqdm drew nothing
        self.bar = tqdm(
            total=STEPS if self.measured else None,
            initial=self.steps,
            desc=self.name,
            file=stream,
            bar_format=MEASURED_BAR if self.measured else TIMED_BAR,
            dynamic_ncols=sized,
            ncols=None if sized else UNSIZED[0],
            nrows=None if sized else UNSIZED[1],  # tqdm hides a bar below a screen of 0 rows
            leave=None,  # the outermost stage's bar stays, inner ones go when done
            mininterval=0,
        )

    def update(self, fraction: float) -> None:
        steps = round(min(max(float(fraction), 0.0), 1.0) * STEPS)
        with self.lock:
            if steps == self.steps:
                return
            self.steps = steps
            if self.bar is not None and self.measured:
                self.bar.n = steps
                self.bar.refresh()

    def end(self) -> None:
        with self.lock:
            self.over.set()
            if self.bar is not None:
                self.bar.close()
                self.bar = None
