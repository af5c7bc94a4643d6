"""Issue 32: no traceback on stderr for any input. The window's first look at a corrupt .csv.gz
(the peek, before the loader) raised zlib.error, which the compute service printed as a bug's
traceback; and a bug's traceback goes to the error log, not to stderr."""

from __future__ import annotations

import gzip
import random
import zlib
from pathlib import Path

import pytest
from conftest import wait_idle

from dpexplorer.data.errors import DataError
from dpexplorer.data.scan import peek
from dpexplorer.gui.compute import ComputeService


def _corrupt_gz(path: Path) -> Path:
    """A .csv.gz with a valid header whose deflate stream is damaged (zlib.error, not OSError)."""
    text = "x,y\n" + "".join(f"{i},{random.Random(i).random()}\n" for i in range(3000))
    data = bytearray(gzip.compress(text.encode()))
    for i in range(20, 60):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(zlib.error):
        gzip.decompress(bytes(data))
    return path


def test_peek_of_a_corrupt_gzip_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"bad\.csv\.gz could not be read"):
        peek(_corrupt_gz(tmp_path / "bad.csv.gz"))


def test_the_window_opens_a_corrupt_gzip_without_a_traceback(qtbot, tmp_path: Path, capfd) -> None:
    from dpexplorer.gui.main_window import MainWindow

    window = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(window)
    window.show()
    window.open_file(_corrupt_gz(tmp_path / "bad.csv.gz"))
    qtbot.waitUntil(lambda: window.last_error is not None, timeout=60_000)
    qtbot.waitUntil(lambda: not window.compute.busy, timeout=60_000)
    assert "could not be read" in window.last_error
    err = capfd.readouterr().err
    assert "Traceback" not in err and "zlib.error" not in err


def test_a_bug_in_a_job_is_one_line_and_its_traceback_goes_to_the_log(
    qtbot, tmp_path: Path, capfd, monkeypatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    service = ComputeService()
    try:

        def buggy() -> None:
            raise ZeroDivisionError("division by zero")

        with qtbot.waitSignal(service.failed, timeout=60_000) as blocker:
            service.submit("view", buggy)
    finally:
        service.shutdown()
        service.wait_for_workers(30.0)
    log = tmp_path / "state" / "dpexplorer" / "errors.log"
    assert str(log) in blocker.args[2] and "\n" not in blocker.args[2]
    assert "Traceback" in log.read_text() and "ZeroDivisionError" in log.read_text()
    assert "Traceback" not in capfd.readouterr().err


def test_the_default_window_still_loads(qtbot, capfd) -> None:
    """The check above is not vacuous: a window that loads prints no traceback either."""
    from dpexplorer.data.default import default_dataset_path
    from dpexplorer.gui.main_window import MainWindow

    window = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(window)
    window.show()
    window.open_file(default_dataset_path())
    wait_idle(qtbot, window)
    assert window.last_error is None
    assert "Traceback" not in capfd.readouterr().err
