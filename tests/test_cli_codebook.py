"""`dpexplorer release --codebook FILE` and the API's `codebook=` (issue 40): the codebook supplies
the public facts a plan leaves out, refuses a plan that contradicts it, a fact neither declares
and a codebook of another dataset (exit 2, one line, nothing charged), and every provenance and
report lists each public fact with its origin."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import dpexplorer.api as dpx
from dpexplorer.cli import main
from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.load import load_dataset
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.public_facts import BOUND_BY_CONTENT

BOOK: dict[str, Any] = {
    "codebook": 1,
    "dataset": "",
    "citation": "the survey's questionnaire",
    "columns": {
        "age": {
            "kind": "number",
            "bounds": {"value": [0, 120], "origin": "declared", "citation": "questionnaire, item 2"},
        },
        "city": {
            "kind": "category",
            "categories": {"value": ["a", "b", "c"], "origin": "declared", "complete": True},
        },
        "income": {
            "kind": "number",
            "bounds": {"value": [0, 50], "origin": "estimated", "ledger_id": 4, "citation": "DP bounds"},
        },
    },
}
MEAN_AGE = {
    "query": {"type": "mean", "column": "age"},
    "mechanism": "laplace",
    "parameters": {"epsilon": 0.5},
}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "people.csv"
    rows = ["age,city,income,zip"] + [f"{20 + i % 50},{'abc'[i % 3]},{i % 40},{i % 7}" for i in range(300)]
    data.write_text("\n".join(rows) + "\n")
    book = tmp_path / "people.codebook.json"
    book.write_text(json.dumps(BOOK))
    return {"data": data, "book": book, "out": tmp_path / "out", "ledger": tmp_path / "ledger.sqlite"}


def _plan(tmp_path: Path, *entries: dict[str, Any]) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(list(entries)))
    return path


def _release(files: dict[str, Path], plan: Path, *extra: str, data: Path | None = None) -> int:
    args = ["release", str(plan), "--data", str(data or files["data"]), "--out", str(files["out"])]
    return main([*args, "--ledger", str(files["ledger"]), "--budget-epsilon", "5", *extra])


def _charged(files: dict[str, Path], data: Path | None = None) -> int:
    if not files["ledger"].exists():
        return 0
    fingerprint = load_dataset(data or files["data"]).content_fingerprint
    with Ledger(files["ledger"]) as ledger:
        return len(ledger.measurements(fingerprint))


def _sidecars(files: dict[str, Path]) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(files["out"].glob("*.provenance.json"))]


def _one_line_refusal(capsys: pytest.CaptureFixture[str], code: int) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    return err


# ---------------------------------------------------------------- the CLI
def test_the_codebook_supplies_a_missing_bound_and_the_provenance_names_its_origin(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _plan(
        tmp_path,
        MEAN_AGE,
        {
            "query": {"type": "histogram", "axis": {"column": "city"}},
            "mechanism": "laplace",
            "parameters": {"epsilon": 0.5},
        },
        {
            "query": {"type": "sum", "column": "income"},
            "mechanism": "laplace",
            "parameters": {"epsilon": 0.5},
        },
    )
    code = _release(files, plan, "--codebook", str(files["book"]))
    assert code == 0, capsys.readouterr().err
    mean, histogram, total = _sidecars(files)
    assert (mean["query"]["lower"], mean["query"]["upper"]) == (0, 120)
    assert mean["bounds"] == [0, 120]
    assert mean["fact_origins"] == [
        {
            "column": "age",
            "fact": "bounds",
            "value": [0.0, 120.0],
            "origin": "declared",
            "source": "the codebook",
            "citation": "questionnaire, item 2",
            "ledger_id": None,
        }
    ]
    assert mean["codebook"] == {
        "sha256": hashlib.sha256(files["book"].read_bytes()).hexdigest(),
        "dataset": "",
        "file": str(files["book"]),
        "citation": "the survey's questionnaire",
    }
    assert histogram["query"]["axis"]["categories"] == ["a", "b", "c"]
    assert histogram["fact_origins"][0]["fact"] == "categories"
    assert [(f["origin"], f["ledger_id"]) for f in total["fact_origins"]] == [("estimated", 4)]
    assert _charged(files) == 3


def test_a_fact_the_plan_writes_is_declared_by_the_plan(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = {**MEAN_AGE, "query": {"type": "mean", "column": "age", "lower": 18, "upper": 80}}
    assert _release(files, _plan(tmp_path, entry)) == 0, capsys.readouterr().err
    (sidecar,) = _sidecars(files)
    assert sidecar["fact_origins"] == [
        {
            "column": "age",
            "fact": "bounds",
            "value": [18, 80],
            "origin": "declared",
            "source": "the plan",
            "citation": "the plan",
            "ledger_id": None,
        }
    ]
    assert sidecar["codebook"] is None


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            {"type": "mean", "column": "age", "lower": -10, "upper": 120},
            "the bounds of 'age' [-10, 120] contradict",
        ),
        (
            {"type": "histogram", "axis": {"column": "city", "categories": ["a", "Zzyzx"]}},
            "the category 'Zzyzx' of 'city' contradicts the codebook",
        ),
    ],
)
def test_a_plan_that_contradicts_the_codebook_exits_2_in_one_line_and_charges_nothing(
    files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    query: dict[str, Any],
    message: str,
) -> None:
    plan = _plan(
        tmp_path,
        {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.5}},
        {**MEAN_AGE, "query": query},
    )
    err = _one_line_refusal(capsys, _release(files, plan, "--codebook", str(files["book"])))
    assert "plan entry 2: " in err and message in err
    assert not files["ledger"].exists() and not files["out"].exists()


def test_an_undeclared_fact_is_refused_naming_it(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _plan(
        tmp_path,
        {
            "query": {"type": "quantile", "column": "zip", "q": 0.5},
            "mechanism": "dp_quantile",
            "parameters": {"epsilon": 1},
        },
    )
    err = _one_line_refusal(capsys, _release(files, plan, "--codebook", str(files["book"])))
    assert (
        "plan entry 1: the release uses the bounds of zip, which neither the plan nor the codebook declares"
        in err
    )
    assert not files["ledger"].exists()
    # without a codebook the same plan is refused the same way
    err = _one_line_refusal(capsys, _release(files, plan))
    assert "the bounds of zip" in err and "--codebook FILE" in err


BAD_BOOKS = [
    ("not json {", "is not valid JSON"),
    (json.dumps({**BOOK, "columns": {"age": {"kind": "decimal"}}}), "column 'age': kind must be one of"),
    (
        json.dumps({**BOOK, "columns": {"age": {"kind": "number", "bounds": {"value": [90, 17]}}}}),
        "bounds are inverted or empty",
    ),
    (
        json.dumps({**BOOK, "columns": {"city": {"kind": "category", "categories": {"value": ["a", "a"]}}}}),
        "categories repeat 'a'",
    ),
    (json.dumps({**BOOK, "owner": "me"}), "unknown field 'owner'"),
]


@pytest.mark.parametrize(("text", "message"), BAD_BOOKS, ids=[m for _, m in BAD_BOOKS])
def test_a_bad_codebook_file_exits_2_in_one_line(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    files["book"].write_text(text)
    err = _one_line_refusal(
        capsys, _release(files, _plan(tmp_path, MEAN_AGE), "--codebook", str(files["book"]))
    )
    assert str(files["book"]) in err and message in err
    assert not files["ledger"].exists()


def test_a_codebook_of_another_dataset_is_refused(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files["book"].write_text(json.dumps({**BOOK, "dataset": "0123456789abcdef0123456789abcdef"}))
    err = _one_line_refusal(
        capsys, _release(files, _plan(tmp_path, MEAN_AGE), "--codebook", str(files["book"]))
    )
    assert "the codebook describes dataset '0123456789abcdef0123456789abcdef', not this data" in err
    assert _charged(files) == 0
    # naming this data (its ledger identity, or the name it is released under) is accepted
    identity = load_dataset(files["data"]).content_fingerprint
    files["book"].write_text(json.dumps({**BOOK, "dataset": identity}))
    assert _release(files, _plan(tmp_path, MEAN_AGE), "--codebook", str(files["book"])) == 0
    sidecar = _sidecars(files)[0]  # the binding was checked; the rows' hash is not published
    assert sidecar["codebook"]["dataset"] == BOUND_BY_CONTENT and identity not in json.dumps(sidecar)
    assert sidecar["codebook"]["sha256"] != hashlib.sha256(files["book"].read_bytes()).hexdigest()


def test_the_bundled_adult_uses_its_shipped_codebook(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    adult = default_dataset_path()
    plan = _plan(
        tmp_path,
        MEAN_AGE,
        {
            "query": {"type": "top_k", "column": "race", "k": 1},
            "mechanism": "topk",
            "parameters": {"epsilon": 0.5},
        },
    )
    assert _release(files, plan, data=adult) == 0, capsys.readouterr().err
    mean, top = _sidecars(files)
    assert mean["bounds"] == [17, 90]
    assert mean["fact_origins"][0]["origin"] == "shipped"
    assert "adult.names" in mean["fact_origins"][0]["citation"]
    assert mean["codebook"]["dataset"] == BOUND_BY_CONTENT
    assert top["query"]["categories"][0] == "White"
    contradicting = _plan(
        tmp_path, {**MEAN_AGE, "query": {"type": "mean", "column": "age", "lower": 0, "upper": 100}}
    )
    err = _one_line_refusal(capsys, _release(files, contradicting, data=adult))
    assert "contradict the codebook's [17, 90] (shipped)" in err
    # the shipped codebook names Adult: on other data it is refused
    shipped = str(Path(dpx.__file__).parent / "resources" / "adult.codebook.json")
    err = _one_line_refusal(capsys, _release(files, _plan(tmp_path, MEAN_AGE), "--codebook", shipped))
    assert "not this data" in err


def test_the_report_lists_each_fact_with_its_origin(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dpexplorer.release.report import render_html
    from dpexplorer.release.report_run import report_of_run

    assert _release(files, _plan(tmp_path, MEAN_AGE), "--codebook", str(files["book"])) == 0
    row = _sidecars(files)[0]["ledger_row_id"]
    with Ledger(files["ledger"]) as ledger:
        page = render_html(report_of_run(ledger, row))
    assert "Bounds of age" in page
    assert "[0, 120]: declared by the steward, in the codebook (questionnaire, item 2)" in page
    assert hashlib.sha256(files["book"].read_bytes()).hexdigest() in page


# ---------------------------------------------------------------- the API
def test_the_api_takes_a_codebook(files: dict[str, Path], tmp_path: Path) -> None:
    book = dpx.load_codebook(files["book"])
    assert isinstance(book, dpx.Codebook)
    plan = dpx.Plan.from_json([MEAN_AGE], codebook=book)
    assert plan.measurements[0].query == dpx.Mean("age", 0, 120)
    data = dpx.open_dataset(files["data"])
    dpx.set_budget(data, 2.0, ledger=files["ledger"])
    (result,) = dpx.release_plan(data, plan, out=files["out"], ledger=files["ledger"], codebook=book)
    sidecar = json.loads(result.files["provenance"].read_text())
    assert sidecar["fact_origins"][0]["source"] == "the codebook"
    assert sidecar["codebook"]["sha256"] == hashlib.sha256(files["book"].read_bytes()).hexdigest()


def test_the_api_refuses_what_the_cli_refuses(files: dict[str, Path]) -> None:
    book = dpx.load_codebook(files["book"])
    with pytest.raises(dpx.PlanError, match=r"plan entry 1: the bounds of 'age' \[-1, 50\] contradict"):
        dpx.Plan.from_json(
            [{**MEAN_AGE, "query": {"type": "mean", "column": "age", "lower": -1, "upper": 50}}],
            codebook=book,
        )
    with pytest.raises(
        dpx.PlanError, match="the bounds of zip, which neither the plan nor the codebook declares"
    ):
        dpx.Plan.from_json([{**MEAN_AGE, "query": {"type": "mean", "column": "zip"}}], codebook=book)
    data = dpx.open_dataset(files["data"])
    dpx.set_budget(data, 2.0, ledger=files["ledger"])
    wide = dpx.Measurement(dpx.Mean("age", -1, 50), "laplace", {"epsilon": 0.5})
    with pytest.raises(dpx.PlanError, match="contradict the codebook's"):
        dpx.release_plan(data, [wide], out=files["out"], ledger=files["ledger"], codebook=book)
    other = dpx.Codebook(book.columns, dataset="0123456789abcdef0123456789abcdef")
    with pytest.raises(dpx.PlanError, match="not this data"):
        dpx.release_plan(
            data,
            [dpx.Measurement(dpx.Count(), "laplace", {"epsilon": 0.5})],
            out=files["out"],
            ledger=files["ledger"],
            codebook=other,
        )
    assert _charged(files) == 0 and not files["out"].exists()
    with pytest.raises(dpx.DataError, match="bounds are inverted"):
        files["book"].write_text(
            json.dumps({"codebook": 1, "columns": {"age": {"kind": "number", "bounds": {"value": [5, 1]}}}})
        )
        dpx.load_codebook(files["book"])


def test_a_synthetic_entry_takes_its_domain_from_the_codebook(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    book = {
        **BOOK,
        "columns": {
            **BOOK["columns"],
            "age": {"kind": "number", "edges": {"value": [0, 40, 120], "origin": "declared"}},
        },
    }
    files["book"].write_text(json.dumps(book))
    synthetic: dict[str, Any] = {
        "kind": "synthetic",
        "query": {"type": "marginals", "axes": [{"column": "city"}, {"column": "age"}], "ways": 2},
        "mechanism": "mst",
        "parameters": {"epsilon": 2.0, "estimator": "dense", "iterations": 50},
    }
    code = main(
        [
            "release",
            str(_plan(tmp_path, synthetic)),
            "--data",
            str(files["data"]),
            "--out",
            str(files["out"]),
            "--ledger",
            str(files["ledger"]),
            "--budget-epsilon",
            "4",
            "--budget-delta",
            "1e-6",
            "--codebook",
            str(files["book"]),
        ]
    )
    assert code == 0, capsys.readouterr().err
    (sidecar,) = _sidecars(files)
    assert sidecar["query"]["axes"] == [
        {"column": "city", "categories": ["a", "b", "c"]},
        {"column": "age", "edges": [0.0, 40.0, 120.0]},
    ]
    assert [(f["column"], f["fact"], f["source"]) for f in sidecar["fact_origins"]] == [
        ("city", "categories", "the codebook"),
        ("age", "edges", "the codebook"),
    ]
    # an axis the codebook cannot fill is named
    synthetic["query"]["axes"] = [{"column": "city"}, {"column": "zip"}]
    err = _one_line_refusal(
        capsys, _release(files, _plan(tmp_path, synthetic), "--codebook", str(files["book"]))
    )
    assert "the categories or bin edges of zip" in err
