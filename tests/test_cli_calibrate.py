"""`dpexplorer calibrate gaussian`: output, JSON keys, and one-line errors with exit code 2."""

from __future__ import annotations

import argparse
import json
import math

import pytest

from dpexplorer.commands import calibrate


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dpexplorer calibrate")
    calibrate.add_arguments(parser)
    return parser.parse_args(argv)


def test_json_output_has_both_sigmas(capsys):
    code = calibrate.run(parse(["gaussian", "--epsilon", "1", "--delta", "1e-5", "--json"]))
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert round(result["sigma_analytic"], 4) == 3.7306  # checked by quadrature in test_gaussian.py
    assert result["sigma_classical"] == pytest.approx(math.sqrt(2 * math.log(1.25e5)))
    assert result["classical_proven"] is False


def test_sensitivity_scales_sigma(capsys):
    calibrate.run(parse(["gaussian", "--epsilon", "0.5", "--delta", "1e-6", "--sensitivity", "3", "--json"]))
    scaled = json.loads(capsys.readouterr().out)
    calibrate.run(parse(["gaussian", "--epsilon", "0.5", "--delta", "1e-6", "--json"]))
    unit = json.loads(capsys.readouterr().out)
    assert scaled["sigma_analytic"] == pytest.approx(3 * unit["sigma_analytic"], rel=1e-9)
    assert scaled["classical_proven"] is True


def test_text_output(capsys):
    assert calibrate.run(parse(["gaussian", "--epsilon", "2", "--delta", "1e-5"])) == 0
    out = capsys.readouterr().out
    assert "sigma_analytic" in out and "sigma_classical" in out and "NOT proven" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["--epsilon", "0", "--delta", "1e-5"],
        ["--epsilon", "-1", "--delta", "1e-5"],
        ["--epsilon", "1", "--delta", "0"],
        ["--epsilon", "1", "--delta", "1"],
        ["--epsilon", "1", "--delta", "1e-5", "--sensitivity", "0"],
        ["--epsilon", "abc", "--delta", "1e-5"],
        ["--epsilon", "nan", "--delta", "1e-5"],
    ],
)
def test_bad_input_one_line_exit_2(capsys, argv):
    assert calibrate.run(parse(["gaussian", *argv])) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1


def test_through_the_cli_entry_point(capsys):
    cli = pytest.importorskip("dpexplorer.cli")
    code = cli.main(["calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--json"])
    assert code == 0
    assert round(json.loads(capsys.readouterr().out)["sigma_analytic"], 4) == 3.7306
    assert cli.main(["calibrate", "gaussian", "--epsilon", "0", "--delta", "1e-5"]) == 2
