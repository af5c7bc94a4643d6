"""Crash test (issue 7): a release process is killed with SIGKILL at random points, over at least
100 releases; afterwards the ledger opens, the spent budget covers every release whose files
exist, and no partial output file is left (final names hold complete files; the hidden
temporary files of an interrupted write are all that a kill leaves, and they are removed)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

from dpexplorer.release.export import TMP_SUFFIX, remove_partial_files
from dpexplorer.release.ledger import Ledger

FP = "ef" * 32
EPSILON = 0.001
MAX_KILLS = 2_000
"""Kills before the test gives up on reaching 100 releases (about 20 suffice on an idle machine)."""

SERVER = """
import os, sys, numpy as np
from dpexplorer.core.accounting.guarantees import LaplaceNoise
from dpexplorer.core.mechanisms.base import NumericInput
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.numeric_paths import laplace_release
from dpexplorer.release.release import PreparedRelease, execute
query = NumericInput(value_d=np.array([41.5]), value_d_prime=np.array([42.5]), sensitivity_l1=1.0,
                     sensitivity_l2=1.0, n=100, statistic="mean")
exact = laplace_release(query, LaplaceNoise(1 / float(sys.argv[3]), 1.0), 0.95)
prepared = PreparedRelease(sys.argv[4], {"type": "mean"}, "laplace", {}, "add_remove", exact, {}, 0.95)
for _ in sys.stdin:  # one line = one release process, forked so that imports are paid once
    pid = os.fork()
    if pid == 0:
        ledger = Ledger(sys.argv[1])
        while True:
            execute(prepared, ledger=ledger, out_dir=sys.argv[2])
    print(pid, flush=True)
    os.waitpid(pid, 0)
    print("reaped", flush=True)
"""


class _Server:
    """Imports once, then forks one release process per :meth:`run_and_kill`, which the test
    kills with SIGKILL after a random delay (landing anywhere: opening the ledger, charging,
    sampling, writing, renaming)."""

    def __init__(self, ledger_path: Path, out: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(ledger_path), str(out), repr(EPSILON), FP],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path.cwd())},
        )

    def run_and_kill(self, delay: float) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        pid = int(self.process.stdout.readline())
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        assert self.process.stdout.readline().strip() == "reaped"

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _complete(path: Path) -> bool:
    text = path.read_text()
    if path.suffix == ".csv":
        lines = text.splitlines()
        return len(lines) == 2 and lines[0] == "label,value,ci_low,ci_high,interval" and text.endswith("\n")
    json.loads(text)
    return True


def test_sigkill_at_random_points(tmp_path: Path) -> None:
    ledger_path, out = tmp_path / "ledger.sqlite", tmp_path / "out"
    with Ledger(ledger_path) as ledger:
        ledger.set_budget(FP, 1e6, 0.0, "basic")
    rng = random.Random(7)
    server, kills = _Server(ledger_path, out), 0
    try:
        while kills < MAX_KILLS:  # a guard by count: on a slow machine each kill lets fewer through
            server.run_and_kill(rng.uniform(0.0, 0.25))
            kills += 1
            with Ledger(ledger_path) as ledger:  # opens after every kill
                rows = ledger.measurements(FP)
            if len(rows) >= 100 and kills >= 20:
                break
    finally:
        server.close()
    assert len(rows) >= 100, f"only {len(rows)} releases in {kills} kills"
    finals = [p for p in out.glob("release-*") if not p.name.endswith(TMP_SUFFIX)] if out.exists() else []
    assert all(_complete(p) for p in finals)
    released_ids = {int(p.name.split("-")[1]) for p in finals}
    charged = {row.id: row for row in rows}
    assert released_ids <= charged.keys()  # every release with files was charged
    with Ledger(ledger_path) as ledger:
        spent = Fraction(ledger.spent(FP))
    assert spent >= len(released_ids) * Fraction(charged[min(charged)].guarantee.epsilon)
    assert spent >= sum(Fraction(row.guarantee.epsilon) for row in rows)
    remove_partial_files(out)
    assert not [p for p in out.iterdir() if p.name.endswith(TMP_SUFFIX)]
