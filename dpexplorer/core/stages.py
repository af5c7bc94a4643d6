"""Named stages of a long step, for whoever shows progress (issue 41, item 5: the command line).

Code that may run for seconds (a synthetic table's fits, PMW's transcript, reading a large file,
a plan's true answers) wraps the step in :func:`stage`, which yields a
:data:`~dpexplorer.core.cancel.ProgressFn` to report the share done; :func:`within` names what
the stages inside belong to ("entry 2 of 5"), prefixed to their names. Nothing is shown unless a
:class:`Reporter` is installed (:func:`reporting`): the command line installs one
(dpexplorer/commands/progress.py); the window, the API and the tests install none, and then a
stage costs a global read. The reporter is process-wide, not per thread: the command line reads
its data on a helper thread while the main thread prepares.

Pure Python: no numpy, no terminal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from dpexplorer.core.cancel import ProgressFn


class Stage(Protocol):
    """One stage being shown."""

    def update(self, fraction: float) -> None:
        """The share of the stage done (0 to 1)."""

    def end(self) -> None:
        """The stage is over (done, failed or cancelled)."""


class Reporter(Protocol):
    """What shows stages (a progress bar, a line on a log)."""

    def begin(self, name: str, measured: bool) -> Stage:
        """A stage called ``name`` starts; ``measured`` when it will report its share done (else
        only its time can be shown)."""


_reporter: Reporter | None = None
_context: list[str] = []


def _ignore(fraction: float) -> None:
    """A ProgressFn that shows nothing."""


@contextmanager
def reporting(reporter: Reporter | None) -> Iterator[None]:
    """Show the stages begun inside the block with ``reporter`` (None: show none)."""
    global _reporter
    previous, _reporter = _reporter, reporter
    try:
        yield
    finally:
        _reporter = previous


@contextmanager
def within(name: str) -> Iterator[None]:
    """Stages begun inside the block are named ``"name: their name"``."""
    _context.append(name)
    try:
        yield
    finally:
        _context.pop()


@contextmanager
def stage(name: str, *, measured: bool = True) -> Iterator[ProgressFn]:
    """A stage called ``name`` (prefixed by the :func:`within` blocks around it), shown by the
    installed reporter from its start to the end of the block; yields the function to report
    the share done (one that does nothing when no reporter is installed). ``measured``: whether
    the stage will report its share (else only its time is shown)."""
    reporter = _reporter
    if reporter is None:
        yield _ignore
        return
    shown = reporter.begin(": ".join([*_context, name]), measured)
    try:
        yield shown.update
    finally:
        shown.end()
