"""A plan that declares the data a secret Poisson sample (issue 18): the ledger is charged the
amplified guarantee, the provenance records the claim, and a claim that cannot be honoured is
refused before anything is charged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpexplorer.cli import main
from dpexplorer.core.accounting.compose import epsilon_at
from dpexplorer.core.accounting.guarantees import Subsampled
from dpexplorer.data.load import load_dataset
from dpexplorer.release.ledger import Ledger

COUNT = {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.5}}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "people.csv"
    data.write_text("\n".join(["age"] + [str(20 + i % 50) for i in range(200)]) + "\n")
    return {"data": data, "out": tmp_path / "out", "ledger": tmp_path / "ledger.sqlite", "dir": tmp_path}


def _release(files: dict[str, Path], plan: object) -> int:
    path = files["dir"] / "plan.json"
    path.write_text(json.dumps(plan))
    return main(
        ["release", str(path), "--data", str(files["data"]), "--out", str(files["out"]),
         "--ledger", str(files["ledger"]), "--budget-epsilon", "5", "--budget-delta", "1e-6",
         "--accountant", "pld"]
    )  # fmt: skip


def _measurements(files: dict[str, Path]) -> list:
    with Ledger(files["ledger"]) as ledger:
        return ledger.measurements(load_dataset(files["data"]).content_fingerprint)


def test_a_declared_rate_charges_the_amplified_guarantee(files, capsys):
    assert _release(files, {"sampling": {"rate": 0.01}, "measurements": [COUNT]}) == 0
    (measurement,) = _measurements(files)
    assert isinstance(measurement.guarantee, Subsampled) and measurement.guarantee.rate == 0.01
    charged = epsilon_at([measurement.guarantee], "pld", 1e-6)
    assert charged < 0.01  # log(1 + 0.01 (e^0.5 - 1)) = 0.0065, against 0.5 without the claim
    sidecar = json.loads(next(files["out"].glob("*.provenance.json")).read_text())
    assert sidecar["sampling_claim"]["poisson_rate"] == 0.01
    assert sidecar["guarantee_charged"]["type"] == "Subsampled"


def test_a_plain_list_still_charges_the_unamplified_guarantee(files):
    assert _release(files, [COUNT]) == 0
    (measurement,) = _measurements(files)
    assert not isinstance(measurement.guarantee, Subsampled)


@pytest.mark.parametrize(
    "plan",
    [
        {"sampling": {"rate": 0}, "measurements": [COUNT]},
        {"sampling": {"rate": 1.5}, "measurements": [COUNT]},
        {"sampling": {"rate": "0.1"}, "measurements": [COUNT]},
        {"sampling": {"population": 1000}, "measurements": [COUNT]},
        {"sampling": {"rate": 0.1}, "measurements": [COUNT], "extra": 1},
    ],
)
def test_a_bad_claim_is_refused_before_any_charge(files, capsys, plan):
    assert _release(files, plan) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not files["ledger"].exists() or _measurements(files) == []


def test_a_path_without_amplification_is_refused(files, capsys):
    # the Gaussian path is exact discrete Gaussian noise, charged as zCDP or (epsilon, delta)
    mean = {
        "query": {"type": "mean", "column": "age", "lower": 0, "upper": 100},
        "mechanism": "gaussian",
        "parameters": {"epsilon": 0.5, "delta": 1e-6},
    }
    assert _release(files, {"sampling": {"rate": 0.1}, "measurements": [COUNT, mean]}) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "amplification" in err
    assert not files["ledger"].exists() or _measurements(files) == []
