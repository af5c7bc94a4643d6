"""Issue 41, item 5: `dpexplorer release` shows its long steps on stderr (an AIM release on Adult
printed nothing for five minutes): on a terminal a progress bar per stage (tqdm), with stderr a
file or a pipe one line per stage. A tiny plan (a synthetic table by AIM on 300 rows, and a
count) with the delay before a stage is shown set to zero (DPEXPLORER_PROGRESS_DELAY=0), so every
stage shows, in process: the terminal is a pseudo-terminal (python's pty) standing in for
stderr."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import pty
import struct
import sys
import termios
import threading
from pathlib import Path

import numpy as np
import pytest

from dpexplorer.cli import main
from dpexplorer.commands import progress

STAGES = (
    "reading d.csv",
    "checking the plan and computing its answers (nothing charged yet)",
    "entry 1 of 2: aim (charged): drawing and writing",
    "entry 1 of 2: AIM: choosing and measuring the marginals",
    "entry 1 of 2: AIM: fitting the model and drawing the records",
    "entry 2 of 2: laplace (charged): drawing and writing",
)
"""The stages of the plan, in order (each prefixed by the command on its line)."""


@pytest.fixture
def release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The command line of the tiny plan; every stage shown at once (the tests' configuration
    shows none: tests/conftest.py)."""
    monkeypatch.setenv(progress.DELAY_ENV, "0")
    rng = np.random.default_rng(41)
    rows = [
        f"{'abc'[rng.integers(0, 3)]},{'uv'[rng.integers(0, 2)]},{rng.integers(0, 10)}" for _ in range(300)
    ]
    (tmp_path / "d.csv").write_text("c,k,x\n" + "\n".join(rows) + "\n")
    axes = [
        {"column": "c", "categories": ["a", "b", "c"]},
        {"column": "k", "categories": ["u", "v"]},
        {"column": "x", "edges": [0, 5, 10]},
    ]
    synthetic = {
        "kind": "synthetic",
        "query": {"type": "marginals", "axes": axes, "ways": 2},
        "mechanism": "aim",
        "parameters": {"epsilon": 2.0, "delta": 1e-6, "estimator": "dense", "iterations": 20, "rows": 100},
    }
    plan = [synthetic, {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 1.0}}]
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    args = ["release", str(tmp_path / "plan.json"), "--data", str(tmp_path / "d.csv")]
    args += ["--out", str(tmp_path / "out"), "--ledger", str(tmp_path / "l.sqlite")]
    return [*args, "--budget-epsilon", "5", "--budget-delta", "1e-5"]


def test_without_a_terminal_each_stage_is_one_line(release, capsys) -> None:
    assert main(release) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines == [f"dpexplorer release: {name}…" for name in STAGES], captured.err
    assert "\r" not in captured.err and "%|" not in captured.err  # no bar drawn into a log
    assert "synthetic records = 100" in captured.out  # stdout as before


@pytest.mark.parametrize("size", [(24, 120), (0, 0)], ids=["sized", "unsized"])
def test_a_terminal_shows_a_bar_for_each_stage(release, monkeypatch, size: tuple[int, int]) -> None:
    """Sized as a terminal window is, and unsized (0 x 0, as ``script`` makes one when its own
    input is no terminal: tqdm then hid every bar)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    received: list[bytes] = []

    def drain() -> None:  # a full pty would block the writer
        with contextlib.suppress(OSError):
            while chunk := os.read(master, 65536):
                received.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    terminal = open(slave, "w", encoding="utf-8", buffering=1)  # noqa: SIM115 (closed below)
    monkeypatch.setattr(sys, "stderr", terminal)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(release) == 0
    finally:
        terminal.close()  # the reader sees the end
        reader.join(30)
        os.close(master)
    shown = b"".join(received).decode("utf-8", errors="replace")
    for name in STAGES:
        assert f"{name}: " in shown, (name, shown)
    assert "AIM: choosing and measuring the marginals: 100%|" in shown  # a bar, to its end
    assert "\r" in shown and "dpexplorer release: " not in shown  # redrawn in place, no log lines


def test_a_stage_shorter_than_the_delay_shows_nothing() -> None:
    """Only steps that run a while are shown: a stage ended before the delay prints nothing; one
    still running at the delay prints its line then (a hang guard waits for it, no clock)."""
    from dpexplorer.core.stages import reporting, stage

    out = io.StringIO()
    with reporting(progress.CommandProgress("dpexplorer release", out, delay=3600.0)), stage("quick"):
        pass
    assert out.getvalue() == ""
    with reporting(progress.CommandProgress("dpexplorer release", out, delay=0.01)), stage("slow"):
        waited = threading.Event()
        for _ in range(3000):  # at most 30 s
            if out.getvalue():
                break
            waited.wait(0.01)
    assert out.getvalue() == "dpexplorer release: slow…\n"


def test_the_delay_is_read_from_the_environment(monkeypatch) -> None:
    for text, delay in (
        ("0", 0.0),
        ("inf", float("inf")),
        ("3.5", 3.5),
        ("soon", progress.DELAY_S),
        ("-1", progress.DELAY_S),
    ):
        monkeypatch.setenv(progress.DELAY_ENV, text)
        assert progress.delay_s() == delay
    monkeypatch.delenv(progress.DELAY_ENV)
    assert progress.delay_s() == progress.DELAY_S == 2.0
