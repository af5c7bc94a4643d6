"""Kill -9 over the release window (issue 20): `dpexplorer release` runs a 20-entry plan and is
killed with SIGKILL at 50 random moments (loading, pricing, charging, sampling, writing,
linking). After every kill the ledger opens and has charged at least every release whose sidecar
exists, and a sidecar exists only beside complete value files; after the next run into the same
directory, every release file is complete with its sidecar and no temporary file is left."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from dpexplorer.cli import main
from dpexplorer.data.load import load_dataset
from dpexplorer.release.export import KINDS, TMP_SUFFIX
from dpexplorer.release.ledger import Ledger

KILLS = 50
ENTRIES = 20

SERVER = """
import os, sys
from dpexplorer.cli import main
import dpexplorer.commands.release, dpexplorer.data.load, dpexplorer.release.release  # paid once
argv = sys.argv[1:]
for _ in sys.stdin:  # one line = one release run, forked so that imports are paid once
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os._exit(main(argv))
    print(pid, flush=True)
    _, status = os.waitpid(pid, 0)
    print(status, flush=True)
"""


class _Server:
    """Imports once, then forks one `dpexplorer release` run per :meth:`run`."""

    def __init__(self, argv: list[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path.cwd())},
        )

    def run(self, kill_after: float | None) -> float:
        """Start a run; kill it after ``kill_after`` seconds (None: let it finish). Returns how
        long it ran."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        pid, started = int(self.process.stdout.readline()), time.monotonic()
        if kill_after is not None:
            time.sleep(kill_after)
            with contextlib.suppress(ProcessLookupError):  # it finished first
                os.kill(pid, signal.SIGKILL)
        status = int(self.process.stdout.readline())
        assert kill_after is not None or status == 0, f"an uninterrupted run failed ({status})"
        return time.monotonic() - started

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def _releases(out: Path) -> dict[str, set[str]]:
    """Release stem -> the kinds of its files on disk."""
    found: dict[str, set[str]] = {}
    for path in out.glob("release-*"):
        for kind, suffix in sorted(KINDS.items(), key=lambda item: -len(item[1])):
            if path.name.endswith(suffix):
                found.setdefault(path.name[: -len(suffix)], set()).add(kind)
                break
    return found


def _check(out: Path, ledger_path: Path, key: str) -> tuple[int, int]:
    """Charged >= released, and every sidecar sits beside complete value files. Returns
    (charged rows, releases with a sidecar)."""
    with Ledger(ledger_path) as ledger:  # opens after every kill
        rows = {row.id: row for row in ledger.measurements(key)}
    released = 0
    for stem, kinds in _releases(out).items() if out.exists() else []:
        if "provenance" not in kinds:
            continue
        released += 1
        assert kinds == set(KINDS), f"{stem}: a sidecar without its values"
        sidecar = json.loads((out / f"{stem}.provenance.json").read_text())
        assert sidecar["ledger_row_id"] in rows
        assert json.loads((out / f"{stem}.json").read_text())["values"]
        assert (out / f"{stem}.csv").read_text().startswith("label,value,ci_low,ci_high,interval\n")
    assert len(rows) >= released
    return len(rows), released


def test_sigkill_during_a_plan(tmp_path: Path) -> None:
    data = tmp_path / "people.csv"
    data.write_text("age\n" + "".join(f"{20 + i % 50}\n" for i in range(200)))
    plan = tmp_path / "plan.json"
    entry = {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.001}}
    plan.write_text(json.dumps([entry] * ENTRIES))
    out, ledger_path = tmp_path / "out", tmp_path / "ledger.sqlite"
    argv = ["release", str(plan), "--data", str(data), "--out", str(out), "--ledger", str(ledger_path)]
    assert main([*argv, "--budget-epsilon", "1e6", "--budget-delta", "0"]) == 0
    key = load_dataset(data).content_fingerprint
    rng, server = random.Random(20), _Server(argv)
    try:
        whole = max(server.run(None) for _ in range(2))  # how long one uninterrupted plan takes
        for _ in range(KILLS):
            server.run(rng.uniform(0.0, 1.2 * whole))
            _check(out, ledger_path, key)
    finally:
        server.close()
    assert main(argv) == 0  # the next run cleans up what the kills left
    charged, released = _check(out, ledger_path, key)
    assert all(kinds == set(KINDS) for kinds in _releases(out).values())
    assert not [p for p in out.iterdir() if p.name.endswith(TMP_SUFFIX)]
    assert charged >= released >= 4 * ENTRIES  # the four complete runs at least
