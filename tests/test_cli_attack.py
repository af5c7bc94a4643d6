"""`dpexplorer attack reconstruct|differencing|membership`: the JSON, and one-line errors with
exit code 2. Attacks release nothing: no ledger is opened."""

from __future__ import annotations

import json

import pytest

from dpexplorer.cli import main

RECONSTRUCT = [
    "attack",
    "reconstruct",
    "--column",
    "sex",
    "--value",
    "Female",
    "--rows",
    "500",
    "--queries",
    "1000",
]


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main([*argv, "--seed", "3", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_reconstruct_exact_and_under_epsilon_one(capsys):
    exact = _json(capsys, RECONSTRUCT)
    assert exact["recovered"] >= 0.99
    assert (exact["rows"], exact["queries"], exact["noise"]) == (500, 1000, 0.0)
    private = _json(capsys, [*RECONSTRUCT, "--epsilon", "1"])
    # 500 rows: sd of the fraction <= 0.022; 0.05 is over 2 sd (see tests/core/test_attacks.py)
    assert private["recovered"] <= private["baseline"] + 0.05
    assert private["epsilon"] == 1.0 and "noise" not in private
    assert private["baseline"] == exact["baseline"]  # same seed: the same sample


def test_differencing_reveals_the_row_and_laplace_stays_under_the_bound(capsys):
    exact = _json(capsys, ["attack", "differencing", "--column", "sex", "--value", "Female", "--row", "0"])
    assert exact["count_all"] - exact["count_others"] == exact["guess"]
    noisy = _json(capsys, ["attack", "differencing", "--column", "sex", "--row", "0", "--epsilon", "1"])
    assert noisy["value"] == "Female"  # the column's smallest value by default
    assert noisy["posterior"] <= noisy["bound"] < 1


def test_membership_stays_in_the_region(capsys):
    result = _json(capsys, ["attack", "membership", "--column", "sex", "--epsilon", "1", "--trials", "40000"])
    assert result["largest_excess"] <= 4 * ((1 + 2.718281828**2) / (4 * 40_000)) ** 0.5
    assert result["tpr"] > result["fpr"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--column", "gender", "--rows", "10", "--queries", "5"], "no column 'gender'"),
        (["--column", "sex", "--rows", "48843", "--queries", "5"], "from 1 to 48,842"),
        (["--column", "sex", "--rows", "ten", "--queries", "5"], "--rows must be a whole number"),
        (["--column", "sex", "--rows", "10", "--queries", "0"], "--queries must be"),
        (["--column", "sex", "--rows", "10", "--queries", "5", "--epsilon", "-1"], "--epsilon must be"),
        (["--column", "sex", "--rows", "10", "--queries", "5", "--noise", "2", "--epsilon", "1"], "not both"),
        (["--column", "sex", "--value", "Fem", "--rows", "10", "--queries", "5"], "no row has sex == 'Fem'"),
        (["--rows", "10", "--queries", "5"], "--column"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, extra, message):
    assert main(["attack", "reconstruct", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_bad_row_and_data(capsys, tmp_path):
    assert main(["attack", "differencing", "--column", "sex", "--row", "48842"]) == 2
    assert "from 0 to 48,841" in capsys.readouterr().err
    assert (
        main(
            ["attack", "membership", "--data", str(tmp_path / "no.csv"), "--column", "sex", "--epsilon", "1"]
        )
        == 2
    )
    assert capsys.readouterr().err.count("\n") == 1
