"""Issue 32: the report belongs to the release. Every ``--report`` run that charged exits 0,
every report exists once under its run's token, nothing is ever replaced, what a report needs is
checked before the charge, a report that cannot be written after it is a warning naming the
command that writes it, and ``dpexplorer report --ledger L --row N`` writes the same report again
(up to its time stamp)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpexplorer.cli import main
from dpexplorer.data.load import load_dataset
from dpexplorer.release.export import ExportError
from dpexplorer.release.ledger import Ledger

COUNT = {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.25}}
MEAN = {
    "query": {"type": "mean", "column": "x", "lower": 0, "upper": 10},
    "mechanism": "laplace",
    "parameters": {"epsilon": 0.25},
}
PTR = {  # 32 threes and 32 sevens: the median is unstable and PTR answers ⊥
    "query": {"type": "quantile", "column": "x", "lower": 0, "upper": 10, "q": 0.5},
    "mechanism": "ptr",
    "parameters": {"epsilon": 1.0, "delta": 1e-6, "bound": 1.0},
}
NO_KEY = {  # three people in three groups: a threshold at delta 1e-6 keeps none
    "query": {
        "type": "group_by",
        "keys": [],
        "private_keys": {"columns": ["g"], "epsilon": 1.0, "delta": 1e-6},
        "statistic": "mean",
        "column": "x",
        "lower": 0,
        "upper": 10,
    },
    "mechanism": "noisy_mean",
    "parameters": {"epsilon": 1.0},
}
BUDGET = ("--budget-epsilon", "20", "--budget-delta", "1e-4")


@pytest.fixture
def work(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "threes_and_sevens.csv"
    data.write_text("g,x\n" + "a,3\n" * 32 + "b,7\n" * 32)
    small = tmp_path / "three_people.csv"
    small.write_text("g,x\na,1\nb,2\nc,3\n")
    return {
        "data": data,
        "small": small,
        "out": tmp_path / "out",
        "ledger": tmp_path / "ledger.sqlite",
        "dir": tmp_path,
    }


def _plan(work: dict[str, Path], entries: list[dict]) -> Path:
    path = work["dir"] / f"plan-{len(list(work['dir'].glob('plan-*')))}.json"
    path.write_text(json.dumps(entries))
    return path


def _args(work: dict[str, Path], entries: list[dict], data: Path | None = None) -> list[str]:
    plan = _plan(work, entries)
    return [
        "release", str(plan), "--data", str(data or work["data"]), "--out", str(work["out"]),
        "--ledger", str(work["ledger"]), *BUDGET, "--report",
    ]  # fmt: skip


def _snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    """Every file's inode and content hash: a replaced file changes one of them."""
    return {
        p.name: (p.stat().st_ino, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def _reports(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("report-*"))


def _tokens(folder: Path) -> set[str]:
    return {re.match(r"report-([0-9a-f]{16})", n).group(1) for n in _reports(folder)}  # type: ignore[union-attr]


def _statuses(work: dict[str, Path], data: Path | None = None) -> list[str]:
    key = load_dataset(data or work["data"]).content_fingerprint
    with Ledger(work["ledger"]) as ledger:
        return [m.status for m in ledger.measurements(key)]


def _without_time(page: str) -> str:
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", "TIME", page)


def test_two_report_runs_into_one_folder_both_succeed_and_replace_nothing(work, capsys) -> None:
    assert main(_args(work, [COUNT, MEAN])) == 0
    first = _snapshot(work["out"])
    assert len(_reports(work["out"])) == 2
    assert main(_args(work, [COUNT])) == 0, capsys.readouterr().err
    second = _snapshot(work["out"])
    assert {k: second[k] for k in first} == first  # nothing replaced
    assert len(_reports(work["out"])) == 4 and len(_tokens(work["out"])) == 2
    for token in _tokens(work["out"]):  # each report beside its own releases
        assert list(work["out"].glob(f"release-*-{token}-*.provenance.json"))
    assert _statuses(work) == ["released"] * 3
    assert "warning" not in capsys.readouterr().err


def test_three_concurrent_report_runs_into_one_folder(work) -> None:
    commands = [[sys.executable, "-m", "dpexplorer.cli", *_args(work, [COUNT, MEAN])] for _ in range(3)]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    runs = [
        subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for c in commands
    ]
    results = [(r.wait(timeout=240), r.stderr.read() if r.stderr else "") for r in runs]
    assert [code for code, _ in results] == [0, 0, 0], results
    assert all(not err.strip() for _, err in results), results
    names = _reports(work["out"])
    assert len(names) == 6 and len(_tokens(work["out"])) == 3
    assert len(list(work["out"].glob("*.provenance.json"))) == 6
    assert _statuses(work) == ["released"] * 6


KILL_BETWEEN_HTML_AND_PDF = """
import os, signal, sys
import dpexplorer.report_pdf as report_pdf
def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
report_pdf.write_pdf = killed
from dpexplorer.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_rerun_after_a_kill_between_the_html_and_the_pdf(work, capsys) -> None:
    args = _args(work, [COUNT])
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    killed = subprocess.run(
        [sys.executable, "-c", KILL_BETWEEN_HTML_AND_PDF, *args], env=env, capture_output=True, timeout=240
    )
    assert killed.returncode == -9
    (html_path,) = work["out"].glob("report-*.html")
    assert not list(work["out"].glob("report-*.pdf"))  # killed before the PDF
    before = _snapshot(work["out"])
    assert main(args) == 0, capsys.readouterr().err  # the rerun: a new run, its own report
    after = _snapshot(work["out"])
    assert {k: after[k] for k in before} == before
    assert len(_reports(work["out"])) == 3
    # the killed run's report, written again from the ledger: beside, never over the HTML
    assert main(["report", "--ledger", str(work["ledger"]), "--row", "1"]) == 0
    assert html_path.with_name(html_path.stem + "-2.pdf").is_file()
    assert _snapshot(work["out"])[html_path.name] == before[html_path.name]
    assert _statuses(work) == ["released"] * 2


@pytest.mark.parametrize("case", ["ptr bottom", "no key kept"])
def test_every_dp_output_gets_a_report(work, capsys, case) -> None:
    entry, data = (PTR, work["data"]) if case == "ptr bottom" else (NO_KEY, work["small"])
    assert main(_args(work, [entry], data=data)) == 0, capsys.readouterr().err
    (html_path,) = work["out"].glob("report-*.html")
    assert len(_reports(work["out"])) == 2
    page = html_path.read_text(encoding="utf-8")
    if case == "ptr bottom":
        assert '<td class="num" align="right">⊥</td>' in page  # the released value, shown
    else:
        assert "no key was kept by the private selection" in page
    assert _statuses(work, data) == ["released"]


def test_the_report_command_reproduces_the_report(work, capsys) -> None:
    assert main(_args(work, [COUNT, MEAN, PTR])) == 0
    (original,) = work["out"].glob("report-*.html")
    regenerated = work["dir"] / "again"
    assert main(["report", "--ledger", str(work["ledger"]), "--row", "2", "--out", str(regenerated)]) == 0
    (copy,) = regenerated.glob("report-*.html")
    assert copy.name == original.name and (regenerated / original.with_suffix(".pdf").name).is_file()
    first, second = original.read_text(encoding="utf-8"), copy.read_text(encoding="utf-8")
    assert _without_time(first) == _without_time(second)
    # a later run into the same folder does not change what the first run's report says
    assert main(_args(work, [COUNT])) == 0
    again = work["dir"] / "again2"
    assert main(["report", "--ledger", str(work["ledger"]), "--row", "1", "--out", str(again)]) == 0
    assert _without_time(next(again.glob("report-*.html")).read_text(encoding="utf-8")) == _without_time(
        first
    )


def test_a_report_failing_after_the_charge_is_a_warning_with_the_command(work, capsys, monkeypatch) -> None:
    import dpexplorer.report_pdf as report_pdf

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report_pdf, "write_pdf", broken)
    assert main(_args(work, [COUNT, MEAN])) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "warning" in err[0] and "No space left on device" in err[0]
    command = err[0].split("write it with: ", 1)[1]
    assert command == f"dpexplorer report --ledger {work['ledger']} --row 1"
    assert _statuses(work) == ["released", "released"]
    monkeypatch.undo()
    assert main(command.split()[1:]) == 0  # the command it names works
    assert len(list(work["out"].glob("report-*.pdf"))) == 1


def test_a_report_that_cannot_be_made_is_refused_before_the_charge(work, capsys, monkeypatch) -> None:
    import dpexplorer.report_pdf as report_pdf

    def no_fonts() -> None:
        raise ExportError("Qt finds no font to draw the report's PDF with: install fonts (fontconfig)")

    monkeypatch.setattr(report_pdf, "check_renderer", no_fonts)
    assert main(_args(work, [COUNT])) == 2
    assert "no font" in capsys.readouterr().err
    assert _statuses(work) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--row", "7"], "has no row 7"),
        (["--row", "x"], "must be a ledger row number"),
        (["--row", "2"], "was not released"),
    ],
)
def test_the_report_command_refuses_in_one_line(work, capsys, monkeypatch, argv, message) -> None:
    from dpexplorer.release import release as release_module

    assert main(_args(work, [COUNT])) == 0

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(release_module, "export_release", full_disk)
    assert main(_args(work, [COUNT])) == 4  # row 2: charged, failed
    capsys.readouterr()
    assert main(["report", "--ledger", str(work["ledger"]), *argv]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert message in line


def test_what_a_killed_report_writer_leaves_is_removed_by_the_next_release(work, capsys) -> None:
    """A writer killed while drawing the PDF leaves its hidden temporary file; reports are
    written under the folder's lock, so the next release into the folder may remove it."""
    work["out"].mkdir()
    leftover = work["out"] / ".report-0123456789abcdef.pdf.99999.tmp"
    leftover.write_bytes(b"%PDF-1.4 half")
    assert main(_args(work, [COUNT])) == 0, capsys.readouterr().err
    assert not leftover.exists()
    assert len(_reports(work["out"])) == 2 and not list(work["out"].glob(".*.tmp"))
