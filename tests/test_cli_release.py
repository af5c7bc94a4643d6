"""`dpexplorer release PLAN.json --data FILE --out DIR ...`: a plan released end to end, the
ledger persisting across runs, and refusals (bad plan, unknown mechanism, over budget) that
exit non-zero with one line on stderr and charge nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpexplorer.cli import main
from dpexplorer.data.load import load_dataset
from dpexplorer.release.ledger import Ledger

PLAN = [
    {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.5}},
    {
        "query": {"type": "mean", "column": "age", "lower": 0, "upper": 100},
        "mechanism": "gaussian",
        "parameters": {"epsilon": 0.5, "delta": 1e-6},
    },
    {
        "query": {"type": "argmax", "column": "city", "categories": ["a", "b", "c"]},
        "mechanism": "exponential",
        "parameters": {"epsilon": 0.25},
    },
]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "people.csv"
    rows = ["age,city"] + [f"{20 + i % 50},{'abc'[i % 3]}" for i in range(300)]
    data.write_text("\n".join(rows) + "\n")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    return {"data": data, "plan": plan, "out": tmp_path / "out", "ledger": tmp_path / "ledger.sqlite"}


def _run(files: dict[str, Path], *extra: str, plan: Path | None = None) -> int:
    return main(
        [
            "release",
            str(plan or files["plan"]),
            "--data",
            str(files["data"]),
            "--out",
            str(files["out"]),
            "--ledger",
            str(files["ledger"]),
            *extra,
        ]
    )


def _charged(files: dict[str, Path]) -> int:
    fingerprint = load_dataset(files["data"]).content_fingerprint
    with Ledger(files["ledger"]) as ledger:
        return len(ledger.measurements(fingerprint))


def test_plan_is_released(files, capsys) -> None:
    code = _run(files, "--budget-epsilon", "3", "--budget-delta", "1e-5", "--accountant", "zcdp")
    out = capsys.readouterr()
    assert code == 0, out.err
    assert len(list(files["out"].glob("*.provenance.json"))) == 3
    assert len(list(files["out"].glob("*.csv"))) == 3 and _charged(files) == 3
    assert "epsilon left" in out.out
    sidecar = json.loads(next(files["out"].glob("*exponential.provenance.json")).read_text())
    fingerprint = load_dataset(files["data"]).content_fingerprint
    with Ledger(files["ledger"]) as ledger:  # the ledger's random id, never the rows' hash
        assert sidecar["dataset_id"] == ledger.public_id(fingerprint)
    assert fingerprint[:8] not in json.dumps(sidecar)
    assert sidecar["query"]["type"] == "argmax"


def test_over_budget_plan_charges_nothing(files, capsys) -> None:
    code = _run(files, "--budget-epsilon", "1", "--budget-delta", "1e-5", "--accountant", "zcdp")
    err = capsys.readouterr().err
    assert code == 3 and len(err.strip().splitlines()) == 1 and "left" in err
    assert _charged(files) == 0 and not files["out"].exists()


def test_no_budget_is_refused(files, capsys) -> None:
    assert _run(files) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--budget-epsilon" in err


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ("not json", "not valid JSON"),
        ("[]", "non-empty"),
        ('[{"query": {"type": "count"}, "mechanism": "nope"}]', "unknown mechanism"),
        ('[{"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": -1}}]', "entry 1"),
        (
            '[{"query": {"type": "mean", "column": "nope", "lower": 0, "upper": 1}, "mechanism": "laplace"}]',
            "entry 1",
        ),
        ('[{"query": {"type": "count"}, "mechanism": "noisy_max"}]', "entry 1"),
    ],
)
def test_bad_plans_exit_2_and_charge_nothing(files, tmp_path, capsys, plan, message) -> None:
    good_then_bad = tmp_path / "bad.json"
    good_then_bad.write_text(plan)
    assert _run(files, "--budget-epsilon", "5", plan=good_then_bad) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err
    assert _charged(files) == 0


def test_second_entry_invalid_charges_nothing(files, tmp_path, capsys) -> None:
    plan = tmp_path / "half.json"
    plan.write_text(
        json.dumps(
            [PLAN[0], {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0}}]
        )
    )
    assert _run(files, "--budget-epsilon", "5", plan=plan) == 2
    assert "entry 2" in capsys.readouterr().err and _charged(files) == 0


def test_missing_data_file(files, capsys) -> None:
    files["data"] = files["data"].with_name("absent.csv")
    assert _run(files, "--budget-epsilon", "1") == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_bad_plan_is_reported_before_a_bad_data_file(files, tmp_path, capsys) -> None:
    """The dataset is opened on a thread from the command's start, yet its error comes after the
    plan's own: a bad plan with a bad data file says what is wrong with the plan; a good plan
    with the same file says what is wrong with the file, in one line, and neither charges."""
    broken = tmp_path / "broken.csv"
    broken.write_bytes(b"a,b\n1,\x00\n")  # a NUL byte: refused by the loader
    files["data"] = broken
    bad_plan = tmp_path / "bad.json"
    bad_plan.write_text("[{]")
    assert _run(files, "--budget-epsilon", "1", plan=bad_plan) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "bad.json" in err and "broken.csv" not in err
    assert _run(files, "--budget-epsilon", "1") == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "broken.csv" in err and "Traceback" not in err
    if files["ledger"].exists():
        with Ledger(files["ledger"]) as ledger:
            assert ledger.measurement(1) is None  # nothing charged


def test_the_documented_example_plan_validates(tmp_path) -> None:
    """The plan in PLAN_FORMAT.md (pasted into docs/guide/cli.md) is valid against the bundled data."""
    import re

    from dpexplorer.commands.release import read_plan
    from dpexplorer.data.default import default_dataset_path
    from dpexplorer.data.queries import query_from_dict
    from dpexplorer.release.release import prepare

    doc = (Path(__file__).parents[1] / "dpexplorer" / "release" / "PLAN_FORMAT.md").read_text()
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(re.search(r"```json\n(.*?)```", doc, re.S).group(1))
    dataset = load_dataset(default_dataset_path())
    for entry in read_plan(plan_path):
        prepared = prepare(dataset, query_from_dict(entry["query"]), entry["mechanism"], entry["parameters"])
        assert prepared.exact.guarantee is not None
