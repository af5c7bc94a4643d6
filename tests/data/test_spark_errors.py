"""Issue 32: the Spark engine's failures in words. No Java, a Java too old, a session that cannot
start: one line on stderr, exit 2, nothing charged. A file deleted while Spark reads it says so.
Spark's own output (log4j WARN lines, progress bars) goes to a log file, not to the CLI's stderr.

The CLI runs in subprocesses with PATH, JAVA_HOME and XDG_STATE_HOME set per test; the
file-gone test uses the shared session (tests/conftest.py: these tests run on one worker)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("pyspark")

from dpexplorer.release.ledger import Ledger

COUNT = [{"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.5}}]


@pytest.fixture
def work(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "d.csv"
    data.write_text("x\n1\n2\n3\n4\n")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(COUNT))
    return {
        "dir": tmp_path,
        "data": data,
        "plan": plan,
        "ledger": tmp_path / "l.sqlite",
        "state": tmp_path / "state",
    }


def _run(work: dict[str, Path], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable, "-m", "dpexplorer.cli", "release", str(work["plan"]), "--data", str(work["data"]),
        "--engine", "spark", "--spark-master", "local[1]", "--out", str(work["dir"] / "out"),
        "--ledger", str(work["ledger"]), "--budget-epsilon", "1",
    ]  # fmt: skip
    base = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PATH")}
    return subprocess.run(
        argv,
        env={**base, "XDG_STATE_HOME": str(work["state"]), **env},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=work["dir"],
    )


def _nothing_charged(work: dict[str, Path]) -> bool:
    if not work["ledger"].exists():
        return True
    with Ledger(work["ledger"]) as ledger:
        return ledger._read("SELECT COUNT(*) FROM measurements", ())[0][0] == 0


def _fake_java(folder: Path, version: str) -> Path:
    """A JAVA_HOME whose bin/java says it is ``version`` and then fails."""
    java = folder / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2021-10-19' >&2\nexit 1\n")
    java.chmod(0o755)
    return folder


def test_no_java_is_one_line_and_exit_2(work) -> None:
    empty = work["dir"] / "empty-path"
    empty.mkdir()
    done = _run(work, {"PATH": str(empty)})
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("dpexplorer release: the Spark engine needs Java")
    assert "none was found" in line and "JAVA_HOME" in line and "Traceback" not in done.stderr
    assert done.stdout == "" and _nothing_charged(work)


def test_a_java_too_old_is_one_line_and_exit_2(work) -> None:
    home = _fake_java(work["dir"] / "jdk11", "11.0.2")
    done = _run(work, {"PATH": os.environ["PATH"], "JAVA_HOME": str(home)})
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "is Java 11" in line and "needs Java" in line
    assert _nothing_charged(work)


def test_a_session_that_cannot_start_is_one_line_naming_the_log(work) -> None:
    home = _fake_java(work["dir"] / "jdk17", "17.0.1")  # says 17, then dies: the gateway never starts
    done = _run(work, {"PATH": os.environ["PATH"], "JAVA_HOME": str(home)})
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    log = work["state"] / "dpexplorer" / "spark.log"
    assert "Spark could not start a session" in line and str(log) in line
    assert log.is_file() and log.stat().st_size > 0  # the launcher's own words went there
    assert _nothing_charged(work)


def test_spark_s_own_logging_stays_out_of_stderr(work) -> None:
    """A CSV read on Spark makes log4j warn ('CSV header does not conform to the schema'): the
    run's stderr is empty, the warning is in the log file."""
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java")
    done = _run(
        work,
        {
            "PATH": os.environ["PATH"],
            **({"JAVA_HOME": os.environ["JAVA_HOME"]} if "JAVA_HOME" in os.environ else {}),
        },
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "[1/1]" in done.stdout
    log = (work["state"] / "dpexplorer" / "spark.log").read_text(errors="replace")
    assert "WARN" in log


def test_a_file_gone_mid_run_says_so(spark, tmp_path: Path) -> None:
    from dpexplorer.data.engine import open_dataset
    from dpexplorer.data.errors import DataError

    folder = tmp_path / "ds1"
    folder.mkdir()
    pl.DataFrame({"x": [1.0, 2.0, 3.0]}).write_parquet(folder / "part-0.parquet")
    dataset = open_dataset(str(folder), "spark")
    shutil.rmtree(folder)
    with pytest.raises(DataError, match=r"ds1 is gone: it was deleted or moved while Spark was reading it"):
        _ = dataset.content_fingerprint


def test_spark_measures_a_text_column_as_polars_does(spark, tmp_path: Path) -> None:
    """Issue 32 (tests/data/test_measured_columns.py): a statistic with bounds reads text as
    numbers, the rest missing, on Spark as on polars."""
    from dpexplorer.data.engine import engine_of, open_dataset
    from dpexplorer.data.engine.base import ClippedMoments
    from dpexplorer.data.load import load_dataset

    data = tmp_path / "t.csv"
    data.write_text("x,y\n1,abc\n2, 4 \n3,\n4,7.5\n")
    request = ClippedMoments("y", 0.0, 10.0)
    on_spark = open_dataset(str(data), "spark")
    on_polars = load_dataset(data)
    assert engine_of(on_spark).aggregate(on_spark, request) == engine_of(on_polars).aggregate(
        on_polars, request
    )
