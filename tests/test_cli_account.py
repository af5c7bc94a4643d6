"""`dpexplorer account`: SPEC parsing, JSON shape, errors (one line on stderr, exit 2)."""

from __future__ import annotations

import argparse
import json
import math

import pytest

from dpexplorer.commands import account
from dpexplorer.core.accounting.compose import METHODS, epsilon_at
from dpexplorer.core.accounting.guarantees import (
    ZCDP,
    ApproxDP,
    GaussianNoise,
    LaplaceNoise,
    PureDP,
    Subsampled,
)


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="dpexplorer account")
    account.add_arguments(parser)
    return account.run(parser.parse_args(argv))


def test_json_has_every_method_with_null_where_not_applicable(capsys):
    assert run(["--json", "--delta", "1e-5", "gaussian:sigma=2:k=10", "laplace:scale=4:sensitivity=2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["delta"] == 1e-5
    assert list(out["epsilon"]) == list(METHODS)
    assert out["epsilon"]["optimal"] is None
    gs = [GaussianNoise(2.0)] * 10 + [LaplaceNoise(4.0, 2.0)]
    assert out["epsilon"]["pld"] == pytest.approx(epsilon_at(gs, "pld", 1e-5))


def test_methods_repeatable_and_comma_separated(capsys):
    assert run(["--json", "--method", "pld", "--method", "optimal,basic", "pure:epsilon=0.1:k=100"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["epsilon"]) == ["pld", "optimal", "basic"]
    assert out["epsilon"]["basic"] == pytest.approx(10.0)
    assert out["epsilon"]["optimal"] == pytest.approx(epsilon_at([PureDP(0.1)] * 100, "optimal", 1e-6))


def test_every_spec_kind_parses():
    assert account.parse_spec("approx:epsilon=0.5:delta=1e-7:k=3") == (ApproxDP(0.5, 1e-7), 3)
    assert account.parse_spec("zcdp:rho=0.2") == (ZCDP(0.2), 1)
    assert account.parse_spec("gaussian:sigma=3:sensitivity=2") == (GaussianNoise(3.0, 2.0), 1)
    assert account.parse_spec("gaussian:sigma=1:q=0.01:k=10") == (Subsampled(GaussianNoise(1.0), 0.01), 10)
    assert account.parse_spec("pure:epsilon=1:sample=10/1000") == (
        Subsampled(PureDP(1.0), 0.01, "without_replacement"),
        1,
    )
    assert account.parse_spec("laplace:scale=2:q=1") == (LaplaceNoise(2.0), 1)  # q = 1: no sampling


def test_table_output(capsys):
    assert run(["zcdp:rho=0.1", "pure:epsilon=1"]) == 0
    out = capsys.readouterr().out
    assert "n/a" in out and "tightest: basic" in out


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("laplace:scal=1", "'scal'"),
        ("laplace:sensitivity=1", "'scale'"),
        ("lapalce:scale=1", "'lapalce'"),
        ("gaussian:sigma", "'sigma'"),
        ("gaussian:sigma=abc", "sigma='abc'"),
        ("pure:epsilon=1:k=0", "k='0'"),
        ("pure:epsilon=1:k=2.5", "k='2.5'"),
        ("approx:epsilon=1:delta=1.5", "delta"),
        ("laplace:scale=-1", "scale"),
        ("pure:epsilon=1:epsilon=2", "'epsilon'"),
        ("pure:epsilon=nan", "epsilon='nan'"),
        ("laplace:scale=1:k=99999999999999999999", "k="),
        ("laplace:scale=1:k=-5", "k="),
        ("laplace:scale=1:q=0", "q=0"),
        ("laplace:scale=1:q=1.5", "q=1.5"),
        ("laplace:scale=1:q=0.1:sample=1/10", "not both"),
        ("laplace:scale=1:sample=11/10", "sample='11/10'"),
        ("laplace:scale=1:sample=0.5", "sample='0.5'"),
        ("zcdp:rho=1:q=0.5", "'q'"),
        ("approx:epsilon=1:delta=1e-6:q=0.5", "'q'"),
    ],
)
def test_bad_spec_one_line_on_stderr_exit_2(capsys, spec, named):
    assert run(["pure:epsilon=1", spec]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert spec in err and named in err


@pytest.mark.parametrize(
    "argv", [["--delta", "1", "pure:epsilon=1"], ["--method", "magic", "pure:epsilon=1"]]
)
def test_bad_delta_or_method_exit_2(capsys, argv):
    assert run(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_through_the_cli_entry_point(capsys):
    from dpexplorer.cli import main

    assert main(["account", "--json", "--method", "basic", "laplace:scale=10:k=100"]) == 0
    assert json.loads(capsys.readouterr().out)["epsilon"]["basic"] == pytest.approx(10.0)
    assert main(["account", "laplace:scale=x"]) == 2


def test_k_is_a_count_not_a_list_length(capsys):
    # ten to the eight Laplace releases: every method answers from the count (a list that long
    # would take gigabytes). Laplace(1) is dominated by randomized response with epsilon 1, whose
    # k-fold composition KOV gives exactly: the PLD (even on its coarsest grid) stays below it.
    assert run(["--json", "laplace:scale=1:k=100000000"]) == 0
    out = json.loads(capsys.readouterr().out)["epsilon"]
    assert out["basic"] == pytest.approx(1e8)
    assert out["pld"] <= out["optimal"] < out["basic"]
    assert out["rdp"] < out["zcdp"] < out["basic"]


def test_mixing_poisson_and_without_replacement_is_refused(capsys):
    assert run(["laplace:scale=1:q=0.1", "laplace:scale=1:sample=1/10"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "neighbouring relations" in err


def test_subsampled_gaussian_matches_the_api(capsys):
    assert run(["--json", "--method", "pld,rdp", "gaussian:sigma=1:q=0.01:k=1000"]) == 0
    out = json.loads(capsys.readouterr().out)["epsilon"]
    assert out["pld"] == pytest.approx(
        epsilon_at([(Subsampled(GaussianNoise(1.0), 0.01), 1000)], "pld", 1e-6)
    )
    assert out["pld"] < out["rdp"] < 3.0  # dp_accounting: 2.1245 (PLD)


def test_the_largest_count_answers_or_says_why(capsys):
    assert run(["--json", "pure:epsilon=0.5:k=1000000000000000"]) == 0
    out = json.loads(capsys.readouterr().out)["epsilon"]
    assert out["basic"] == pytest.approx(5e14)
    assert out["optimal"] is None and out["pld"] is None  # too many outcomes: refused, not swapped
    assert out["rdp"] < out["basic"]


# ------------------------------------------------------------------ --risk (issue 44)
def _risk(argv: list[str], capsys) -> dict:  # type: ignore[no-untyped-def,type-arg]
    assert run(["--json", "--risk", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def _fnr(out: dict, fpr: float) -> float:  # type: ignore[type-arg]
    return next(p["fnr"] for p in out["tradeoff"] if abs(p["fpr"] - fpr) < 1e-12)


def test_risk_json_of_a_gaussian_composition(capsys):
    """The issue's acceptance: gdp_mu 1.0 and fnr(0.01) = Phi(Phi^-1(0.99) - 1), both exact."""
    from scipy import stats

    out = _risk(["gaussian:sigma=10:k=100"], capsys)
    assert out["gdp_mu"] == pytest.approx(1.0, abs=0.01) and out["gdp_kind"] == "exact"
    assert out["tradeoff_kind"] == "exact"
    assert _fnr(out, 0.01) == pytest.approx(stats.norm.cdf(stats.norm.ppf(0.99) - 1), abs=0.005)
    near_zero = [p["fpr"] for p in out["tradeoff"] if 0 < p["fpr"] <= 0.1]
    assert all(any(abs(f - i / 1000) < 1e-12 for f in near_zero) for i in range(1, 101))
    assert list(out["epsilon"]) == list(METHODS)  # the epsilons are still there


@pytest.mark.parametrize(
    ("spec", "curve"),
    [
        ("pure:epsilon=1", lambda a: max(0.0, 1 - math.e * a, (1 - a) / math.e)),
        (
            "laplace:scale=1",
            lambda a: (
                1 - math.e * a
                if a < 0.5 / math.e
                else (1 / (4 * math.e * a) if a <= 0.5 else (1 - a) / math.e)
            ),
        ),
    ],
)
def test_risk_json_of_pure_and_laplace_match_their_closed_forms(spec, curve, capsys):  # type: ignore[no-untyped-def]
    out = _risk([spec], capsys)
    assert out["tradeoff_kind"] == "exact"
    for point in out["tradeoff"]:
        assert point["fnr"] == pytest.approx(curve(point["fpr"]), abs=0.005)
    assert out["gdp_kind"] == "upper bound" and out["gdp_mu"] > 1


def test_risk_json_says_a_bound_is_a_bound(capsys):
    out = _risk(["laplace:scale=1:k=10", "zcdp:rho=0.1"], capsys)
    assert out["tradeoff_kind"] == "lower bound from the accountants' profiles"
    assert out["gdp_mu"] is None and "zCDP" in out["gdp_note"]
    out = _risk(["laplace:scale=1:k=10"], capsys)
    assert out["tradeoff_kind"] == "lower bound from the PLD" and out["gdp_kind"] == "upper bound"


def test_risk_text_reads_the_curve(capsys):
    assert run(["--risk", "gaussian:sigma=10:k=100"]) == 0
    text = capsys.readouterr().out
    assert "attacker's trade-off (exact" in text
    assert "false-positive rate 0.01 : false-negative rate at least 0.9076" in text
    assert "mu-GDP: mu = 1 (exact" in text


def _ledger(tmp_path, name: str = "people"):  # type: ignore[no-untyped-def]
    from dpexplorer.release.ledger import NAME_PREFIX, Ledger

    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget(NAME_PREFIX + name, 10.0, 1e-6, "pld")
        for guarantee in (GaussianNoise(10.0), GaussianNoise(10.0), LaplaceNoise(2.0)):
            ledger.charge(
                NAME_PREFIX + name, query={"type": "count"}, mechanism="x", parameters={}, guarantee=guarantee
            )
    return path


def test_ledger_risk_composes_the_datasets_releases(tmp_path, capsys):
    path = _ledger(tmp_path)
    out = _risk(["--ledger", str(path), "--dataset", "people"], capsys)
    assert out["dataset"] == "name:people" and out["releases"] == 3
    listed = [GaussianNoise(10.0), GaussianNoise(10.0), LaplaceNoise(2.0)]
    assert out["epsilon"]["pld"] == pytest.approx(epsilon_at(listed, "pld", 1e-6))
    from dpexplorer.core.tradeoff import tradeoff_of

    expected = tradeoff_of(listed)
    assert out["tradeoff_kind"] == expected.kind == "lower bound from the PLD"
    assert [p["fnr"] for p in out["tradeoff"]] == pytest.approx(list(expected.fnr), abs=1e-12)
    assert out["gdp_mu"] == pytest.approx(expected.gdp_mu)
    # a SPEC is composed beside them: "what if I release this too?"
    more = _risk(["--ledger", str(path), "--dataset", "name:people", "gaussian:sigma=1"], capsys)
    assert more["releases"] == 3 and _fnr(more, 0.1) < _fnr(out, 0.1)


def test_ledger_risk_text(tmp_path, capsys):
    assert run(["--risk", "--ledger", str(_ledger(tmp_path)), "--dataset", "people"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("dataset name:people: 3 release(s) in the ledger")
    assert "lower bound from the PLD" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--risk"], "give a SPEC to compose, or --dataset KEY"),
        (["--ledger", "L.sqlite", "pure:epsilon=1"], "give the dataset with --dataset KEY"),
        (["--dataset", "people", "--ledger", "{missing}"], "there is no ledger at"),
        (["--dataset", "nobody", "--ledger", "{ledger}"], "has no dataset 'nobody'"),
    ],
)
def test_ledger_errors_are_one_line(argv, message, tmp_path, capsys):  # type: ignore[no-untyped-def]
    path = _ledger(tmp_path)
    argv = [a.format(missing=tmp_path / "none.sqlite", ledger=path) for a in argv]
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "none.sqlite").exists()  # never created to be read
