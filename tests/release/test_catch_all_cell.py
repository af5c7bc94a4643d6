"""Issue 41, item 3: the catch-all cell of declared categories is "(any other)", named so that
no reader takes it for a category of the data (Adult's race has its own "Other"; the catch-all
was "other"). A data category spelled "other" is a cell of its own; the catch-all's own name
cannot be declared; files released under the old name still rebuild their report."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from dpexplorer.cli import main
from dpexplorer.data.axes import OLD_OTHER, OTHER, Axis, Histogram
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict


def test_the_catch_all_cell_is_any_other_and_a_category_other_is_its_own() -> None:
    axis = Axis("race", categories=("White", "Other", "other"))
    assert OTHER == "(any other)" and axis.labels == ("White", "Other", "other", "(any other)")
    assert len(set(axis.labels)) == len(axis.labels)  # "other" was twice before
    assert Histogram(axis).describe().endswith("race in {White, Other, other, (any other)}")
    with pytest.raises(DataError, match=r"declares the category '\(any other\)'"):
        Axis("race", categories=("White", OTHER))


def test_a_category_other_counts_its_own_rows(tmp_path: Path) -> None:
    """Rows spelled "other" land in the declared category "other", the rest in "(any other)"."""
    from dpexplorer.data.answers import true_answer

    path = tmp_path / "d.csv"
    path.write_text("c\n" + "a\n" * 3 + "other\n" * 2 + "zzz\n" * 4)
    query = query_from_dict({"type": "histogram", "axis": {"column": "c", "categories": ["a", "other"]}})
    assert query.labels == ("a", "other", OTHER)
    assert [float(v) for v in true_answer(load_dataset(path), query)] == [3.0, 2.0, 4.0]


def test_files_released_with_the_old_name_still_rebuild_their_report(tmp_path: Path) -> None:
    """A run released before the rename spelled the catch-all "other" in its JSON: ``dpexplorer
    report`` rebuilds its report from the ledger and those files, each value under the label it
    was written with (the query's description is the query's own, in today's words)."""
    data = tmp_path / "d.csv"
    data.write_text("c\n" + "a\nb\n" * 20)
    histogram = {"type": "histogram", "axis": {"column": "c", "categories": ["a"]}}
    plan = [{"query": histogram, "mechanism": "laplace", "parameters": {"epsilon": 1.0}}]
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    ledger, out = str(tmp_path / "l.sqlite"), tmp_path / "out"
    args = ["release", str(tmp_path / "plan.json"), "--data", str(data), "--out", str(out)]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*args, "--ledger", ledger, "--budget-epsilon", "5"]) == 0
    (values,) = out.glob("release-*-laplace.json")
    document = json.loads(values.read_text())
    assert [v["label"] for v in document["values"]] == ["a", OTHER]
    for v in document["values"]:
        v["label"] = OLD_OTHER if v["label"] == OTHER else v["label"]
    values.write_text(json.dumps(document))
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", "--ledger", ledger, "--row", "1", "--out", str(tmp_path / "again")]) == 0
    (report,) = (tmp_path / "again").glob("report-*.html")
    text = report.read_text(encoding="utf-8")
    assert f"<td>{OLD_OTHER}</td>" in text and f"<br/>{OLD_OTHER}: " in text  # values table, summary
    assert f"<td>{OTHER}</td>" not in text
