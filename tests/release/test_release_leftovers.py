"""Issue 43: a release into ``--out DIR`` removes only the app's own leftovers. A value file goes
only when its name has the exact shape the app writes AND a journal the app wrote before it lists
it (a killed writer's); a hidden temporary file only when its name is exactly one of the app's.
A user's ``release-notes.csv``, ``release-schedule.json``, look-alike names (wrong digits, wrong
token, right shape but never journaled) and a journal that is not the app's all survive."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dpexplorer.cli import main
from dpexplorer.release import export
from dpexplorer.release.export import JOURNAL_SUFFIX, KINDS, export_release, remove_partial_files

TOKEN = "0123456789abcdef"

USERS = {
    # a user's own files beside the releases: the old cleanup took each for a killed run's
    "release-notes.csv": "what we published, and when\n",
    "release-schedule.json": '{"next": "monday"}\n',
    "release-2024.parquet": "PAR1",
    # look-alikes: the app's prefix with the wrong digits, token or mechanism
    f"release-12-{TOKEN}-laplace.csv": "label,value\n",
    f"release-000001-{TOKEN.upper()}-laplace.csv": "label,value\n",
    f"release-000001-{TOKEN[:15]}-laplace.json": "{}\n",
    f"release-000001-{TOKEN}-Laplace.csv": "label,value\n",
    f"release-000001-{TOKEN}-laplace.csv.bak": "label,value\n",
    # exactly the app's shape, but no journal of the app lists them: the user's (or an old run's)
    f"release-000001-{TOKEN}-laplace.csv": "label,value\nmine,1\n",
    f"release-000002-{TOKEN}-mst-synthetic.parquet": "PAR1",
    # hidden names that are not exactly one of the app's temporary files
    ".release-notes.tmp": "draft",
    f".release-000001-{TOKEN}-laplace.csv.tmp": "no pid",
    ".report-draft.html.12.tmp": "draft",
    # a journal named like the app's whose content is not the app's: it marks nothing
    f".release-000003-{TOKEN}-laplace{JOURNAL_SUFFIX}": json.dumps(
        {"files": [f"release-000003-{TOKEN}-laplace.csv"]}
    ),
    f"release-000003-{TOKEN}-laplace.csv": "label,value\n",
}


def _place(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def _unchanged(folder: Path, files: dict[str, str]) -> list[str]:
    """The names of ``files`` that are gone or changed."""
    return [n for n, t in files.items() if not (folder / n).is_file() or (folder / n).read_text() != t]


class _Killed(BaseException):
    """The writer dying (SIGKILL runs no handler: nothing it wrote is removed)."""


@contextlib.contextmanager
def _killed_before_its_sidecar(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A release written in this block dies just before linking its sidecar, leaving what a
    SIGKILL there leaves: its journal and its value files, written by the app's own code."""
    atomic_write = export.atomic_write

    def write(path: Path, text: str | bytes) -> None:
        if path.name.endswith(KINDS["provenance"]):
            raise _Killed
        atomic_write(path, text)

    with monkeypatch.context() as patch, pytest.raises(_Killed):
        patch.setattr(export, "atomic_write", write)
        patch.setattr(export, "remove_release", lambda paths: None)
        yield


def test_a_release_keeps_every_file_that_is_not_a_leftover_of_the_app(tmp_path: Path) -> None:
    data, plan, out = tmp_path / "people.csv", tmp_path / "plan.json", tmp_path / "out"
    data.write_text("age\n" + "".join(f"{20 + i % 50}\n" for i in range(100)))
    plan.write_text(
        json.dumps([{"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.5}}])
    )
    _place(out, USERS)
    ledger = tmp_path / "ledger.sqlite"
    argv = ["release", str(plan), "--data", str(data), "--out", str(out), "--ledger", str(ledger)]
    assert main([*argv, "--budget-epsilon", "2", "--budget-delta", "0"]) == 0
    assert not _unchanged(out, USERS)
    assert len(list(out.glob("*.provenance.json"))) == 1  # and the release itself was written
    assert not [p for p in out.iterdir() if p.name not in USERS and p.name.startswith(".")]  # no journal left


def test_a_killed_writers_files_go_and_only_they(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    _place(out, USERS)
    killed = f"release-000007-{'ab' * 8}-laplace"
    with _killed_before_its_sidecar(monkeypatch):
        export_release(out, killed, ["n"], [1.0], {"mechanism": "laplace"})
    left = {f"{killed}.csv", f"{killed}.json", f".{killed}{JOURNAL_SUFFIX}"}
    assert left <= {p.name for p in out.iterdir()}
    # killed after its sidecar was linked, before its journal was removed: the release is complete
    complete = f"release-000008-{'cd' * 8}-gaussian"
    export_release(out, complete, ["n"], [2.0], {"mechanism": "gaussian"})
    (out / f".{complete}{JOURNAL_SUFFIX}").write_text(
        json.dumps({"journal": export.JOURNAL_MARK, "stem": complete, "files": [f"{complete}.csv"]})
    )
    temporary = {  # the app's own temporary names: a value file's, a journal's, a report's, the probe's
        f".{killed}.csv.4242.tmp",
        f"..{killed}{JOURNAL_SUFFIX}.4242.tmp",
        f".report-{'ef' * 8}-2.pdf.4242.tmp",
        f".release-probe.4242.{'01' * 8}.tmp",
    }
    _place(out, dict.fromkeys(temporary, "half"))

    removed = {p.name for p in remove_partial_files(out)}

    assert removed == left | temporary | {f".{complete}{JOURNAL_SUFFIX}"}
    assert not _unchanged(out, USERS)
    assert {f"{complete}{suffix}" for suffix in KINDS.values()} <= {p.name for p in out.iterdir()}
    assert remove_partial_files(out) == []  # nothing more is ever taken


def test_a_synthetic_tables_parquet_is_journaled_and_removed_like_its_csv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stem = f"release-000001-{TOKEN}-mst-synthetic"
    paths = {**export.release_paths(tmp_path, stem), "parquet": tmp_path / f"{stem}.parquet"}
    texts: dict[str, str | bytes] = {"parquet": b"PAR1", "json": "{}\n", "provenance": "{}\n"}
    with _killed_before_its_sidecar(monkeypatch):
        export.write_release_files(tmp_path, stem, paths, texts)
    kept = tmp_path / f"release-000002-{TOKEN}-mst-synthetic.parquet"  # the app's shape, never journaled
    kept.write_bytes(b"PAR1")
    removed = remove_partial_files(tmp_path)
    assert [p.name for p in removed] == [f"{stem}.parquet", f"{stem}.json", f".{stem}{JOURNAL_SUFFIX}"]
    assert kept.exists() and [p.name for p in tmp_path.iterdir()] == [kept.name]


def test_a_failed_write_leaves_no_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stem = f"release-000001-{TOKEN}-laplace"
    atomic_write = export.atomic_write

    def full_disk(path: Path, text: str | bytes) -> None:
        if path.name.endswith(".json"):
            raise OSError(28, "No space left on device")
        atomic_write(path, text)

    monkeypatch.setattr(export, "atomic_write", full_disk)
    with pytest.raises(OSError):
        export_release(tmp_path, stem, ["n"], [1.0], {})
    assert list(tmp_path.iterdir()) == []
