"""Start the application: `dpexplorer [FILE]` and `dpexplorer --screenshot OUT.png [FILE]`."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCREENSHOT_TIMEOUT_S = 120.0
IDENTITY_GRACE_S = 2.0
"""How long --screenshot waits, after the views, for the dataset's ledger identity."""
_POLL_MS = 30


def _fail(message: str) -> int:
    print(f"dpexplorer: {message}", file=sys.stderr)
    return 1


_QT_NOISE = ("This plugin does not support propagateSizeHints()",)
"""Qt messages that say nothing to a user (the offscreen platform's), kept off stderr so that an
error is the one line there."""


def _qt_message(mode: object, context: object, message: str) -> None:
    if not message.startswith(_QT_NOISE):
        print(f"qt: {message}", file=sys.stderr)


def _no_display() -> bool:
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


MMAP_THRESHOLD = 128 * 1024
"""Bytes from which glibc serves an allocation by its own mmap (returned whole on free)."""


def bound_heap() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD` (``mallopt(M_MMAP_THRESHOLD)``),
    which turns its dynamic adjustment off; True if set (glibc only; elsewhere nothing is done).

    glibc raises the threshold each time a mapped block is freed (up to 32 MB), after which the
    window's arrays of 0.1-10 MB (a column, a density grid, a curve) come from the heap, and the
    heap keeps the holes they leave: the window's resident set grew by 60 MB over the first
    2,500 random changes (43 MB of it free heap; malloc_trim gave back 10), flat after this call
    (benchmarks/soak.py, BENCHMARKS.md). Each large array is then mapped fresh (page faults), a
    cost the window's views do not notice. Called once by :func:`run_app`, before any thread."""
    import ctypes
    import ctypes.util

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    m_mmap_threshold = -3
    return bool(mallopt(m_mmap_threshold, MMAP_THRESHOLD))


def run_app(file: str | None, *, screenshot: str | None = None) -> int:
    """Open the main window on ``file`` (or the default dataset) and run the event loop.

    With ``screenshot``: offscreen, wait until the dataset is in and no view is computing, save
    the window as PNG and return 0; on any error, one line on stderr and return 1."""
    if screenshot is not None:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        if not screenshot.lower().endswith(".png"):
            return _fail(f"the screenshot must be a .png file, not {screenshot!r}")
    elif _no_display():
        print(
            "dpexplorer: no display found (DISPLAY and WAYLAND_DISPLAY are unset); the window "
            "runs offscreen. Run it from a desktop session or under xvfb-run to see it, or use "
            "--screenshot OUT.png. Ctrl+C quits.",
            file=sys.stderr,
        )
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    bound_heap()
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    qInstallMessageHandler(_qt_message)

    from dpexplorer.data.default import default_dataset_path
    from dpexplorer.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    collector = main_thread_garbage_collection()
    app.setApplicationName("dpexplorer")
    app.setOrganizationName("dpexplorer")
    window = MainWindow(interactive=screenshot is None, restore_layout=screenshot is None)
    path = Path(file) if file else default_dataset_path()
    window.show()
    window.open_file(path)
    if screenshot is None:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl+C quits even inside Qt's loop
        code = app.exec()
    else:
        code = _screenshot(app, window, Path(screenshot))
    collector.timer.stop()
    return code


def main_thread_garbage_collection() -> Any:
    """Collect cyclic garbage on a timer in the main thread only (pyqtgraph's GarbageCollector).

    Python's collector runs in whichever thread happens to allocate; when it frees a Qt object
    in a worker thread, Qt's object mutex and the GIL can deadlock (seen in this project's
    tests: a worker collecting a closed window's QMenu while the main thread deleted a QAction).
    Call once, after the QApplication exists; stop ``.timer`` before exiting."""
    from pyqtgraph.util.garbage_collector import GarbageCollector

    return GarbageCollector(interval=1.0)


def wait_for_views(
    window: object, timeout_s: float, stop: Callable[[], bool] = lambda: False, identity: bool = True
) -> bool:
    """Run the event loop until ``window`` has its dataset and no view is computing (True), or
    until ``timeout_s`` passes or ``stop()`` is true (False); with ``identity`` False, without
    waiting for the dataset's ledger identity (MainWindow.views_idle). For --screenshot, the
    benchmarks and the README's pictures; tests use qtbot.waitUntil instead."""
    from PySide6.QtCore import QCoreApplication

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        QCoreApplication.processEvents()
        if stop():
            return False
        if window.dataset is not None and window.views_idle(identity):  # type: ignore[attr-defined]
            return True
        time.sleep(_POLL_MS / 1000)
    return False


def _screenshot(app: object, window: object, out: Path) -> int:
    from PySide6.QtCore import QCoreApplication

    from dpexplorer.gui.main_window import MainWindow

    assert isinstance(window, MainWindow)
    idle = wait_for_views(
        window, SCREENSHOT_TIMEOUT_S, stop=lambda: window.last_error is not None, identity=False
    )
    # the ledger identity of a small file is in by now or soon; a large file's would take
    # minutes (4 s per million rows): the picture then says it is being computed
    wait_for_views(window, IDENTITY_GRACE_S, stop=lambda: window.last_error is not None)
    if window.last_error is not None:
        window.close()
        return _fail(window.last_error)
    if not idle:
        window.close()
        return _fail(f"the views did not finish within {SCREENSHOT_TIMEOUT_S:.0f} s")
    QCoreApplication.processEvents()
    image = window.grab()
    out.parent.mkdir(parents=True, exist_ok=True)
    ok = image.save(str(out), "PNG")
    window.close()
    if not ok:
        return _fail(f"could not write {out}")
    return 0
