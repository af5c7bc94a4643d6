"""Nothing a release publishes is a hash of the rows. The provenance named the dataset by its
content fingerprint (a hash of every row), and a codebook bound to the data by that fingerprint
was published with it: whoever knows every row but one can hash each guess of the last one and
compare, which no epsilon bounds. The published files name the dataset by the ledger's public id
(random, kept in the ledger) and say only that a codebook's binding was checked."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from dpexplorer.cli import main
from dpexplorer.data.load import load_dataset
from dpexplorer.release.ledger import Ledger

PLAN = [
    {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.2}},
    {"query": {"type": "mean", "column": "age"}, "mechanism": "laplace", "parameters": {"epsilon": 0.5}},
]


def _release(tmp_path: Path, rows: list[str], name: str) -> tuple[Path, str, str]:
    """Release PLAN on ``rows`` with a codebook bound by content; (out folder, content
    fingerprint, file SHA-256)."""
    data = tmp_path / f"{name}.csv"
    data.write_text("age,city\n" + "".join(f"{r}\n" for r in rows))
    fingerprint = load_dataset(data).content_fingerprint
    book = tmp_path / f"{name}.codebook.json"
    book.write_text(
        json.dumps(
            {
                "codebook": 1,
                "dataset": fingerprint,
                "columns": {"age": {"kind": "number", "bounds": {"value": [0, 120], "origin": "declared"}}},
            }
        )
    )
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    out = tmp_path / f"{name}-out"
    args = ["release", str(plan), "--data", str(data), "--out", str(out), "--codebook", str(book)]
    args += ["--ledger", str(tmp_path / "ledger.sqlite"), "--budget-epsilon", "3", "--report"]
    assert main(args) == 0
    return out, fingerprint, hashlib.sha256(data.read_bytes()).hexdigest()


def _published(out: Path) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace") for p in sorted(out.rglob("*")) if p.is_file()
    )


def test_no_published_file_holds_a_hash_of_the_rows(tmp_path: Path) -> None:
    rows = [f"{20 + i % 50},{'abc'[i % 3]}" for i in range(200)]
    out, fingerprint, file_sha = _release(tmp_path, rows, "d")
    text = _published(out)
    assert len(list(out.glob("*.provenance.json"))) == 2 and list(out.rglob("*.html"))
    for secret in (fingerprint, file_sha):
        assert secret[:12] not in text, "a hash of the rows is published"
    sidecar = json.loads(next(out.glob("*-laplace.provenance.json")).read_text())
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        assert sidecar["dataset_id"] == ledger.public_id(fingerprint)
    report = "\n".join(p.read_text(encoding="utf-8") for p in out.rglob("*.html"))
    assert str(tmp_path) not in report, "the report prints a local path (the ledger's, the codebook's)"
    assert "checked against the data released" in report


def test_the_public_id_is_the_ledgers_not_the_datas(tmp_path: Path) -> None:
    """The same rows in two ledgers get two ids (drawn, not computed from the rows); one ledger
    gives one dataset the same id every time, and its neighbour another."""
    rows = [f"{20 + i % 50},{'abc'[i % 3]}" for i in range(200)]
    fingerprint = None
    ids = []
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        out, fingerprint, _ = _release(tmp_path / folder, rows, "d")
        ids.append(json.loads(next(out.glob("*-laplace.provenance.json")).read_text())["dataset_id"])
    assert ids[0] != ids[1] and all(len(i) == 16 and i not in str(fingerprint) for i in ids)
    with Ledger(tmp_path / "one" / "ledger.sqlite") as ledger:
        assert ledger.public_id(str(fingerprint)) == ids[0]
        neighbour = load_dataset_fingerprint(tmp_path, [*rows, "90,z"])
        assert ledger.public_id(neighbour) not in ids


def load_dataset_fingerprint(tmp_path: Path, rows: list[str]) -> str:
    path = tmp_path / "neighbour.csv"
    path.write_text("age,city\n" + "".join(f"{r}\n" for r in rows))
    return load_dataset(path).content_fingerprint
