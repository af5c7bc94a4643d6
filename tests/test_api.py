"""The public API (`import dpexplorer as dpx`, dpexplorer/api.py): its names are the committed
list, `import dpexplorer` stays cheap, it runs without Qt, and it releases through the same
path as `dpexplorer release` (same ledger key, same refusals, same messages)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import dpexplorer
import dpexplorer.api as api
from dpexplorer.cli import main
from dpexplorer.release.ledger import Ledger

ROOT = Path(__file__).resolve().parents[1]
NAMES = ROOT / "docs" / "api" / "names.txt"


def _listed() -> list[str]:
    lines = NAMES.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_api_names_are_the_committed_list() -> None:
    listed = _listed()
    missing = [n for n in listed if n not in api.__all__]
    assert not missing, f"public API names removed (a promise broken): {missing}"
    unlisted = [n for n in api.__all__ if n not in listed]
    assert not unlisted, f"new API names: add them to {NAMES.relative_to(ROOT)}: {unlisted}"
    for name in listed:
        assert getattr(dpexplorer, name) is getattr(api, name)
        assert not (ROOT / "dpexplorer" / name).exists(), f"{name} is also a subpackage's name"
        assert not (ROOT / "dpexplorer" / f"{name}.py").exists(), f"{name} is also a module's name"
    with pytest.raises(AttributeError):
        dpexplorer.no_such_name  # noqa: B018


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\nprint(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return set(out.split())


def test_import_dpexplorer_and_version_stay_cheap() -> None:
    for code in (
        "import dpexplorer; dpexplorer.__version__",
        "from dpexplorer.cli import main; main(['--version'])",
    ):
        loaded = _modules_after(code)
        assert "polars" not in loaded and "dpexplorer.api" not in loaded, code
    # building queries and plans needs polars, not the planner's scipy or the samplers' mpmath
    loaded = _modules_after("import dpexplorer as dpx; dpx.Plan([dpx.Measurement(dpx.Count(), 'laplace')])")
    assert not {m for m in loaded if m.split(".")[0] in ("scipy", "mpmath")}


SCRIPT = """
import polars as pl, dpexplorer as dpx
frame = pl.DataFrame({"age": [20 + i % 50 for i in range(400)], "city": ["abc"[i % 3] for i in range(400)]})
data = dpx.open_dataset(frame, name="people")
seen = dpx.explore(data, dpx.Count(), "laplace", {"epsilon": 1.0})
plan = dpx.Plan([dpx.Measurement(dpx.Count(), "laplace", {"epsilon": 0.5})])
assert dpx.plan_budget(data, plan, epsilon=1.0).fits
dpx.set_budget(data, 1.0, ledger=LEDGER)
dpx.release_plan(data, plan, out=OUT, ledger=LEDGER)
"""


def test_the_api_runs_without_qt(tmp_path: Path) -> None:
    code = f"LEDGER, OUT = {str(tmp_path / 'l.sqlite')!r}, {str(tmp_path / 'out')!r}\n{SCRIPT}"
    loaded = _modules_after(code)
    assert not {m for m in loaded if m.split(".")[0] in ("PySide6", "pyqtgraph", "shiboken6", "superqt")}
    assert len(list((tmp_path / "out").glob("*.provenance.json"))) == 1


@pytest.fixture
def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    rows = ["age,city"] + [f"{20 + i % 50},{'abc'[i % 3]}" for i in range(300)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_frame_is_the_same_dataset_as_its_file(people: Path) -> None:
    """A polars or pandas frame of a file's rows has the file's ledger identity (content
    fingerprint), so a budget set through one is the budget of the other."""
    pandas = pytest.importorskip("pandas")
    from_file = dpexplorer.open_dataset(people)
    frame = pl.read_csv(people)
    for source in (frame, frame.lazy(), pandas.read_csv(people)):
        opened = dpexplorer.open_dataset(source)
        assert opened.n_rows == 300
        assert opened.content_fingerprint == from_file.content_fingerprint
    with pytest.raises(dpexplorer.DataError, match="cannot open a int"):
        dpexplorer.open_dataset(3)


def test_explore_gives_the_laplace_mechanism_s_exact_numbers(people: Path) -> None:
    data = dpexplorer.open_dataset(people)
    seen = dpexplorer.explore(data, dpexplorer.Count(), "laplace", {"epsilon": 0.5})
    assert seen.epsilon == 0.5 and seen.delta == 0.0
    assert seen.delta_exact == pytest.approx(0.0, abs=1e-9)
    finite = seen.privacy_loss[[math.isfinite(v) for v in seen.privacy_loss]]
    assert finite.max() == pytest.approx(0.5, abs=1e-6)  # the loss reaches epsilon, never more
    # Laplace with scale 1/epsilon: P(|error| > a) = exp(-a epsilon), so the 95% half-width is ln(20)/0.5
    assert seen.accuracy is not None
    assert seen.accuracy.ci_halfwidth == pytest.approx(math.log(20) / 0.5, rel=1e-6)
    assert seen.delta_at(0.25) > 0.0  # below its epsilon the pair has a positive delta
    with pytest.raises(dpexplorer.InvalidParameterError, match="unknown mechanism"):
        dpexplorer.explore(data, dpexplorer.Count(), "no-such")


def _cli(people: Path, plan: Path, tmp_path: Path, *extra: str) -> int:
    out, ledger = str(tmp_path / "cli-out"), str(tmp_path / "ledger.sqlite")
    return main(["release", str(plan), "--data", str(people), "--out", out, "--ledger", ledger, *extra])


def test_release_plan_charges_the_cli_s_ledger_with_the_cli_s_refusals(
    people: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    plan = dpexplorer.Plan(
        [
            dpexplorer.Measurement(dpexplorer.Count(), "laplace", {"epsilon": 0.5}),
            dpexplorer.Measurement(dpexplorer.Mean("age", 0, 100), "laplace", {"epsilon": 0.5}),
        ]
    )
    plan_file = plan.write(tmp_path / "plan.json")
    assert dpexplorer.Plan.read(plan_file) == plan
    assert _cli(people, plan_file, tmp_path, "--budget-epsilon", "1.5") == 0
    data = dpexplorer.open_dataset(people)
    assert dpexplorer.remaining_budget(data, ledger=ledger) == pytest.approx(0.5)
    # the API's refusal is the CLI's: same type of failure, same words, nothing charged
    with pytest.raises(dpexplorer.BudgetExceededError) as refused:
        dpexplorer.release_plan(data, plan, out=tmp_path / "api-out", ledger=ledger)
    capsys.readouterr()
    assert _cli(people, plan_file, tmp_path) == 3
    assert str(refused.value) in capsys.readouterr().err
    bad = dpexplorer.Plan([dpexplorer.Measurement(dpexplorer.Mean("nope", 0, 1), "laplace")])
    with pytest.raises(dpexplorer.PlanError) as wrong:
        dpexplorer.release_plan(data, bad, out=tmp_path / "api-out", ledger=ledger)
    assert _cli(people, bad.write(tmp_path / "bad.json"), tmp_path) == 2
    assert str(wrong.value).startswith("plan entry 1: ")
    assert str(wrong.value) in capsys.readouterr().err
    # what is left is released by the API and charged to the same dataset
    results = dpexplorer.release_plan(data, plan.measurements[0], out=tmp_path / "api-out", ledger=ledger)
    assert results[0].labels == ("count",) and results[0].epsilon <= 0.5
    assert dpexplorer.remaining_budget(data, ledger=ledger) == pytest.approx(0.0, abs=1e-9)
    provenance = json.loads(results[0].files["provenance"].read_text())
    with Ledger(ledger) as book:
        assert provenance["dataset_id"] == book.public_id(data.content_fingerprint)


def test_released_risk_is_the_clis_curve_of_the_ledgers_releases(
    people: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 44: dpx.released_risk composes what the ledger holds for the dataset, as
    `account --ledger L --dataset KEY --risk --json` does; nothing released is random guessing."""
    from dpexplorer.release.ledger import Ledger

    ledger = tmp_path / "ledger.sqlite"
    data = dpexplorer.open_dataset(people)
    nothing = dpexplorer.released_risk(data, ledger=ledger)
    assert nothing.kind == "exact" and nothing.gdp_mu == 0.0 and list(nothing.fnr) == list(1 - nothing.fpr)
    dpexplorer.set_budget(data, 2.0, ledger=ledger)
    plan = dpexplorer.Plan([dpexplorer.Measurement(dpexplorer.Count(), "laplace", {"epsilon": 0.5})] * 2)
    dpexplorer.release_plan(data, plan, out=tmp_path / "out", ledger=ledger)
    risk = dpexplorer.released_risk(data, ledger=ledger)
    assert isinstance(risk, dpexplorer.TradeOff)
    with Ledger(ledger) as book:
        (key,) = {m.fingerprint for m in book.measurements(data.content_fingerprint)}
    capsys.readouterr()
    assert main(["account", "--risk", "--json", "--ledger", str(ledger), "--dataset", key]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["releases"] == 2 and out["tradeoff_kind"] == risk.kind
    assert [p["fnr"] for p in out["tradeoff"]] == list(risk.fnr)
    assert out["gdp_mu"] == risk.gdp_mu and risk.fnr_at(0.01) < nothing.fnr_at(0.01)


def test_a_plan_s_mistakes_are_named() -> None:
    with pytest.raises(dpexplorer.PlanError, match=r"plan entry 1: unknown key query\.colum"):
        dpexplorer.Plan.from_json([{"query": {"type": "count", "colum": "x"}, "mechanism": "laplace"}])
    with pytest.raises(dpexplorer.PlanError, match="non-empty JSON list"):
        dpexplorer.Plan.from_json([])
    rated = dpexplorer.Plan.from_json(
        {"sampling": {"rate": 0.1}, "measurements": [{"query": {"type": "count"}, "mechanism": "laplace"}]}
    )
    assert rated.sampling_rate == 0.1 and rated.to_json()["sampling"] == {"rate": 0.1}
    table = dpexplorer.Measurement(dpexplorer.Count(), "mst", {}, kind="synthetic")
    assert table.to_dict()["kind"] == "synthetic" and "kind" not in rated.measurements[0].to_dict()
    assert dpexplorer.Plan.from_json([table.to_dict()]).measurements[0].kind == "synthetic"
    declared = dpexplorer.Measurement(dpexplorer.Count(), "laplace", post_processing={"non_negative": True})
    assert declared.to_dict()["post_processing"] == {"non_negative": True}


def test_the_api_s_examples_run() -> None:
    import doctest

    result = doctest.testmod(api, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 5 and result.failed == 0


def test_a_released_result_reads_as_the_cli_line(people: Path, tmp_path: Path) -> None:
    """ReleaseResult.text(): the values rounded by the one rule with their intervals (what an
    exported script prints), a count as a whole number; the fields keep full precision."""
    from dpexplorer.release.presentation import show

    data = dpexplorer.open_dataset(people)
    dpexplorer.set_budget(data, 2.0, ledger=tmp_path / "l.sqlite")
    plan = dpexplorer.Plan(
        [
            dpexplorer.Measurement(dpexplorer.Count(), "laplace", {"epsilon": 0.5}),
            dpexplorer.Measurement(dpexplorer.Mean("age", 0, 100), "laplace", {"epsilon": 0.5}),
        ]
    )
    count, mean = dpexplorer.release_plan(data, plan, out=tmp_path / "out", ledger=tmp_path / "l.sqlite")
    assert count.integral == (True,) and mean.integral == (False,)
    for result in (count, mean):
        value, interval = result.values[0], result.confidence_intervals[0]
        kind = result.interval_kinds[0]
        shown = show(value, interval, result.ci_level, integral=result.integral[0], kind=kind)
        # an interval that is the declared range says so (issue 41: words that match the numbers)
        said = " (declared range)" if kind == "range" else ""
        assert result.text() == f"{result.labels[0]} = {shown}{said} (95 % intervals)"


def test_star_import_brings_the_api_when_asked_for() -> None:
    """``from dpexplorer import *`` gives every API name (the root's ``__all__`` is
    ``__version__`` and ``dpexplorer.api.__all__``), while ``import dpexplorer`` alone still
    imports nothing of the API (test above)."""
    code = (
        "import dpexplorer, dpexplorer.api as api\n"
        "scope = {}\n"
        "exec('from dpexplorer import *', scope)\n"
        "assert dpexplorer.__all__ == ['__version__', *api.__all__], dpexplorer.__all__\n"
        "missing = [n for n in dpexplorer.__all__ if scope.get(n) is not getattr(dpexplorer, n)]\n"
        "assert not missing, missing\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True, text=True)
