"""A quick CLI (issue 29): `dpexplorer release|account|calibrate` import nothing of Qt or
pyqtgraph (a release only for a PDF report), `account` and `calibrate` not polars, numpy or
scipy until they compute, and the version needs no package metadata lookup."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import dpexplorer

HEAVY = (
    "PySide6",
    "pyqtgraph",
    "polars",
    "numpy",
    "scipy",
    "pyarrow",
    "scipy.stats",
    "scipy.optimize",
    "mpmath",
)


def _loaded_after(code: str) -> set[str]:
    """The heavy packages (:data:`HEAVY`) in sys.modules of a fresh interpreter after ``code``."""
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.strip().splitlines()[-1])) & set(HEAVY)


def test_the_version_is_the_installed_one() -> None:
    assert dpexplorer.__version__ == version("dpexplorer")


def test_account_and_calibrate_start_without_qt_polars_or_numpy() -> None:
    """Their modules and parsers (what `--help` and a bad argument reach) load none of them; the
    accountant's numpy and scipy come when `account` computes, still without Qt or polars."""
    start = (
        "import argparse\n"
        "from dpexplorer import cli\n"
        "from dpexplorer.commands import account, calibrate\n"
        "for m in (account, calibrate):\n"
        "    m.add_arguments(argparse.ArgumentParser())\n"
    )
    assert _loaded_after(start) == set()
    assert _loaded_after("from dpexplorer.cli import main\nmain(['--version'])") == set()
    computed = _loaded_after(
        "from dpexplorer.cli import main\nmain(['account', 'laplace:scale=1:k=3', '--json'])"
    )
    assert "PySide6" not in computed and "pyqtgraph" not in computed and "polars" not in computed
    calibrated = _loaded_after(
        "from dpexplorer.cli import main\n"
        "main(['calibrate', 'gaussian', '--epsilon', '1', '--delta', '1e-6'])"
    )
    assert not calibrated & {"PySide6", "pyqtgraph", "polars"}


def test_a_release_without_a_report_loads_no_qt(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("x\n" + "".join(f"{i % 7}\n" for i in range(50)))
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps([{"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 1}}])
    )
    argv = [
        "release",
        str(plan),
        "--data",
        str(data),
        "--out",
        str(tmp_path / "out"),
        "--ledger",
        str(tmp_path / "l.sqlite"),
        "--budget-epsilon",
        "5",
    ]
    loaded = _loaded_after(f"from dpexplorer.cli import main\nassert main({argv!r}) == 0")
    assert "polars" in loaded, "the release did run"
    assert not loaded & {"PySide6", "pyqtgraph"}
    # nor what only other mechanisms need (scipy.stats and scipy.optimize: about 1 s to import)
    assert not loaded & {"scipy.stats", "scipy.optimize", "scipy.special", "mpmath"}
