"""The same people, one budget, under the common disguises (issue 40, deliver 6): the ledger
keeps each dataset's column fingerprints; a dataset new to it whose columns match a known one's
(renamed columns, a projection, a constant column added) is refused by ``dpexplorer release``
before any budget is set, with one line naming the dataset and the two choices; ``--tie-to``
charges the known budget (and is remembered), ``--distinct`` declares other people (remembered);
a genuinely different dataset is released as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import dpexplorer as dpx
from dpexplorer.cli import main
from dpexplorer.data.load import load_dataset
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.release import dataset_key

ADULT = Path(dpx.example_path())
PLAN = '[{"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.1}}]'


@pytest.fixture
def run(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """``run(data, *options)`` -> (exit code, stderr) of ``dpexplorer release`` of a count into
    one ledger; Adult already has a budget of 2 there (set through the API: every path keeps its
    columns) and one release."""
    plan = tmp_path / "plan.json"
    plan.write_text(PLAN)
    ledger = tmp_path / "ledger.sqlite"
    adult = dpx.open_dataset(ADULT)
    dpx.set_budget(adult, 2.0, 1e-6, ledger=ledger)

    def release(data: Path, *options: str) -> tuple[int, str]:
        command = ["release", str(plan), "--data", str(data), "--out", str(tmp_path / "out")]
        code = main([*command, "--ledger", str(ledger), *options])
        return code, capsys.readouterr().err.strip()

    assert release(ADULT) == (0, "")
    release.ledger = ledger  # type: ignore[attr-defined]
    release.key = adult.content_fingerprint  # type: ignore[attr-defined]
    return release


def _left(ledger: Path, key: str) -> float:
    with Ledger(ledger) as book:
        return book.remaining(key)


def _charges(ledger: Path) -> int:
    with Ledger(ledger) as book:
        return int(book._read("SELECT count(*) FROM measurements", ())[0][0])


def _copies(tmp_path: Path) -> dict[str, Path]:
    """Adult renamed (CSV, rows shuffled), projected (Parquet, four columns) and padded (a
    constant column added)."""
    frame = pl.read_parquet(ADULT)
    paths = {
        "renamed": tmp_path / "renamed.csv",
        "projected": tmp_path / "projected.parquet",
        "padded": tmp_path / "padded.csv",
    }
    frame.rename({"age": "years", "sex": "gender"}).sample(fraction=1.0, shuffle=True, seed=3).write_csv(
        paths["renamed"]
    )
    frame.select("age", "education", "sex", "income").write_parquet(paths["projected"])
    frame.with_columns(pl.lit("2024").alias("wave")).write_csv(paths["padded"])
    return paths


@pytest.mark.parametrize("disguise", ["renamed", "projected", "padded"])
def test_a_disguised_copy_of_adult_is_tied_to_adults_budget(run, tmp_path: Path, disguise: str) -> None:
    copy = _copies(tmp_path)[disguise]
    before, charged = _left(run.ledger, run.key), _charges(run.ledger)
    code, said = run(copy, "--budget-epsilon", "5", "--budget-delta", "1e-6")
    assert code == 2 and "\n" not in said
    assert f"holds the same people as dataset {run.key} of the ledger" in said
    assert f"--tie-to {run.key}" in said and "--distinct" in said
    if disguise == "renamed":
        assert "years (its age)" in said and "gender (its sex)" in said
    with Ledger(run.ledger) as book:  # no budget was set, nothing charged
        copy_key = dataset_key(load_dataset(copy), book)
        assert book.budget(copy_key) is None
    assert _charges(run.ledger) == charged and _left(run.ledger, run.key) == before
    assert run(copy, "--tie-to", run.key) == (0, "")
    assert _left(run.ledger, run.key) == pytest.approx(before - 0.1, abs=1e-3)  # Adult's budget
    assert run(copy) == (0, "")  # remembered: the copy is filed under Adult's key
    assert _left(run.ledger, run.key) == pytest.approx(before - 0.2, abs=1e-3)
    with Ledger(run.ledger) as book:
        assert dataset_key(load_dataset(copy), book) == run.key


def test_other_people_are_not_asked_and_distinct_is_remembered(run, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    other = tmp_path / "other.csv"
    frame = pl.read_parquet(ADULT)
    n = 2_000  # another survey: the same columns, other people
    pl.DataFrame(
        {c: frame[c].sample(n, with_replacement=True, seed=int(rng.integers(1 << 30))) for c in frame.columns}
    ).write_csv(other)
    assert run(other, "--budget-epsilon", "1", "--budget-delta", "1e-6") == (0, "")
    projected = _copies(tmp_path)["projected"]
    assert run(projected, "--distinct", "--budget-epsilon", "1", "--budget-delta", "1e-6") == (0, "")
    assert run(projected) == (0, "")  # declared other people: not asked again
    with Ledger(run.ledger) as book:
        key = dataset_key(load_dataset(projected), book)
    assert key != run.key and _left(run.ledger, key) == pytest.approx(0.8, abs=1e-3)


def test_the_whole_table_after_a_projection_of_it_is_asked_too(tmp_path: Path, capsys) -> None:
    """The ledger knew the projection first (a synthetic table's columns): Adult itself holds
    its columns, so it is the same people."""
    plan = tmp_path / "plan.json"
    plan.write_text(PLAN)
    projected = _copies(tmp_path)["projected"]
    base = ["release", str(plan), "--out", str(tmp_path / "out"), "--ledger", str(tmp_path / "l.sqlite")]
    assert main([*base, "--data", str(projected), "--budget-epsilon", "1", "--budget-delta", "1e-6"]) == 0
    assert main([*base, "--data", str(ADULT), "--budget-epsilon", "1", "--budget-delta", "1e-6"]) == 2
    assert "holds the same people as dataset" in capsys.readouterr().err
    assert main([*base, "--data", str(ADULT), "--tie-to", "nosuch"]) == 2
    assert "--tie-to nosuch: the ledger has no dataset 'nosuch'" in capsys.readouterr().err
