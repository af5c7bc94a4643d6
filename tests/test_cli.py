"""The `dpexplorer` command itself: --version, --help, --screenshot and its errors, run as a user
would, in a new process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PySide6.QtGui import QImage

from dpexplorer import __version__


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    return subprocess.run(
        [sys.executable, "-m", "dpexplorer", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def test_version_and_help():
    assert _run("--version").stdout.strip() == f"dpexplorer {__version__}"
    help_text = _run("--help").stdout
    for tool in ("account", "calibrate", "release", "--screenshot"):
        assert tool in help_text


def test_screenshot_of_the_default_dataset(tmp_path):
    out = tmp_path / "window.png"
    done = _run("--screenshot", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    image = QImage(str(out))
    assert image.width() >= 1000 and image.height() >= 700


@pytest.mark.parametrize("kind", ["missing", "binary", "empty"])
def test_screenshot_of_a_bad_file_is_one_line_on_stderr(tmp_path, kind):
    path = tmp_path / f"{kind}.csv"
    if kind == "binary":
        path.write_bytes(bytes(range(256)) * 32)
    elif kind == "empty":
        path.write_bytes(b"")
    done = _run("--screenshot", str(tmp_path / "x.png"), str(path))
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpexplorer: ") and path.name in lines[0]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "x.png").exists()


def test_screenshot_must_be_png(tmp_path):
    done = _run("--screenshot", str(tmp_path / "x.jpg"))
    assert done.returncode != 0 and ".png" in done.stderr


@pytest.mark.parametrize("worker", [False, True], ids=["alone", "with a worker thread"])
def test_a_tool_ends_as_the_interpreter_would(worker: bool) -> None:
    """A tool run as the process's entry point skips the interpreter's teardown (cli._exit_now)
    but not what can be seen: its output flushed (stdout is a pipe: block-buffered), the atexit
    handlers run, a thread that is not a daemon (still sleeping when the tool is done, on an idle
    machine) finishes, the exit code kept."""
    thread = (
        "import threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(0.5), print('worker done'))).start()\n"
    )
    code = (
        "import atexit, sys\n"
        "from dpexplorer.cli import main\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        "sys.argv = ['dpexplorer', 'account', 'pure:epsilon=0.5:k=3', '--method', 'basic']\n"
        f"{thread if worker else ''}"
        "raise SystemExit(main())\n"
    )
    for spec, status, shown in (("pure:", 0, "1.5"), ("nonsense:", 2, "")):
        done = subprocess.run(
            [sys.executable, "-c", code.replace("pure:", spec)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == status, done.stderr
        lines = done.stdout.splitlines()
        assert shown in done.stdout and lines[-1] == "atexit ran"
        assert ("worker done" in lines) == worker
