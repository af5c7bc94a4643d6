"""Fuzz test of the command line (issue 20): hypothesis feeds ``main`` (in-process, so that ten
thousand cases take seconds, not hours) malformed and extreme plans, ``calibrate`` arguments and
data files. Every case must end with a documented exit code other than 70 (an internal error is
a bug) and, when it fails, exactly one line on stderr: never a traceback.

Case counts: :data:`CASES`, 10,000 CLI runs in all at ``DPX_FUZZ_SCALE=1`` (the campaign, run by
hand before a release of the app: ``DPX_FUZZ_SCALE=1 python -m pytest -q tests/test_cli_fuzz.py``);
the suite runs a quarter of them (the same first cases: the search is derandomised), which keeps
the whole suite within its five minutes. ``DPX_FUZZ_REPORT=path`` writes what was
run (cases, clean errors, successes, internal errors) as JSON, for BENCHMARKS.md (under
pytest-xdist each worker writes ``path.gwN`` with its share; ``-n0`` writes one file).

``account`` specs with extreme and malformed numbers (e.g. ``gaussian:sigma=1e-300``) are fuzzed
too (:func:`account_argv`)."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpexplorer.cli import main
from dpexplorer.commands.errors import DOCUMENTED, EXIT_INTERNAL
from dpexplorer.release.ledger import Ledger

SCALE = float(os.environ.get("DPX_FUZZ_SCALE", 0.25))
"""Share of the campaign's cases this run makes (1 = the whole campaign)."""
CASES = {
    name: max(1, round(count * SCALE))
    for name, count in {"plans": 3500, "calibrate": 2250, "data": 2000, "account": 1000}.items()
}
"""Examples per fuzzed input at the scale; each calibrate example runs the CLI twice: 10,000 runs
in all at scale 1."""

COUNTS: Counter[str] = Counter()
WORK = Path(tempfile.mkdtemp(prefix="dpexplorer-fuzz-"))
DATA = WORK / "data.csv"
DATA.write_text("x,c\n" + "".join(f"{i % 10},{'abc'[i % 3]}\n" for i in range(60)))
LEDGER = WORK / "ledger.sqlite"
with Ledger(LEDGER) as _ledger:
    from dpexplorer.data.load import load_dataset

    _ledger.set_budget(load_dataset(DATA).content_fingerprint, 1e9, 0.5, "basic")

FUZZ = settings(
    deadline=None,  # a loaded CI machine must not turn slowness into a failure
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
    derandomize=True,  # the same cases on every run: a failure here is reproducible
)


def _run(argv: list[str]) -> tuple[int, str]:
    """``main(argv)`` with stdout and stderr captured; asserts the one-error-path contract."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    text = err.getvalue()
    COUNTS["cases"] += 1
    assert code in DOCUMENTED and code != EXIT_INTERNAL, f"{argv}: exit {code}: {text}"
    failures = [line for line in text.splitlines() if ": note: " not in line]
    if code == 0:
        COUNTS["succeeded"] += 1
        assert not failures, text
    else:
        COUNTS["clean errors"] += 1
        assert len(failures) == 1 and "Traceback" not in text, f"{argv}: {text}"
    return code, text


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    path = os.environ.get("DPX_FUZZ_REPORT")
    if path and os.environ.get("PYTEST_XDIST_WORKER"):  # parallel workers: one part each, to sum
        path = f"{path}.{os.environ['PYTEST_XDIST_WORKER']}"
    if path:
        Path(path).write_text(json.dumps({**COUNTS, "internal errors": 0}, indent=2) + "\n")


# ---------------------------------------------------------------- values
EXTREME = [0, -1, 1e-300, 5e-324, 1e-20, 1e308, -1e308, 0.5, 1, 2, 10, 1e6, 10**400, 2**63]
numbers = st.one_of(
    st.sampled_from(EXTREME),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
)
anything = st.one_of(
    numbers, st.booleans(), st.none(), st.text(max_size=6), st.sampled_from(["0.1", "x", "c"])
)
values = st.one_of(numbers, numbers, anything)
columns = st.one_of(st.sampled_from(["x", "c", "missing"]), st.text(max_size=4))
MECHANISMS = [
    "noisy_mean", "laplace", "gaussian", "exponential", "noisy_max", "topk", "ptr", "dist2instability",
    "dist2instability_mode", "smooth_cauchy", "smooth_student_t", "smooth_lln", "sparse_vector",
    "pmw", "blr", "mwem",
]  # fmt: skip
PARAMETERS = ["epsilon", "delta", "bound", "k", "noise", "rounds", "alpha", "beta", "threshold", "cutoff"]


def _query() -> st.SearchStrategy[dict]:
    clipped = st.fixed_dictionaries(
        {
            "type": st.sampled_from(["sum", "mean", "quantile", "trimmed_mean"]),
            "column": columns,
            "lower": values,
            "upper": values,
        },
        optional={"q": values, "trim_fraction": values},
    )
    categories = st.lists(st.one_of(st.sampled_from(["a", "b", "c", "3"]), anything), max_size=4)
    compare = st.fixed_dictionaries(
        {"compare": st.sampled_from(["==", "<", ">=", "in", "~"]), "column": columns, "value": anything}
    )
    return st.one_of(
        st.just({"type": "count"}),
        st.fixed_dictionaries({"type": st.just("predicate_count"), "predicate": compare}),
        clipped,
        st.fixed_dictionaries(
            {
                "type": st.just("histogram"),
                "axis": st.fixed_dictionaries({"column": columns, "categories": categories}),
            }
        ),
        st.fixed_dictionaries(
            {"type": st.sampled_from(["argmax", "top_k"]), "column": columns, "categories": categories},
            optional={"k": values},
        ),
        st.fixed_dictionaries(
            {
                "type": st.just("group_by"),
                "keys": st.lists(
                    st.fixed_dictionaries({"column": columns, "categories": categories}), max_size=2
                ),
                "statistic": st.sampled_from(["mean", "sum", "count", "x"]),
                "column": columns,
                "lower": values,
                "upper": values,
            },
            optional={
                "unit": st.fixed_dictionaries({"column": columns, "max_groups": values, "max_rows": values})
            },
        ),
        st.dictionaries(st.text(max_size=5), anything, max_size=3),
    )


entries = st.fixed_dictionaries(
    {
        "query": _query(),
        "mechanism": st.one_of(st.sampled_from(MECHANISMS), st.text(max_size=5)),
        "parameters": st.dictionaries(st.sampled_from(PARAMETERS), values, max_size=4),
    }
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=5)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
plans = st.one_of(
    st.lists(entries, min_size=1, max_size=3).map(json.dumps),
    st.lists(entries, min_size=1, max_size=2).map(json.dumps).map(lambda t: t.encode()),
    json_values.map(json.dumps),
    st.binary(max_size=40),
    st.tuples(
        st.lists(entries, min_size=1, max_size=2).map(json.dumps), st.integers(0, 400), st.text(max_size=3)
    ).map(
        lambda t: t[0][: t[1]] + t[2] + t[0][t[1] :]  # a valid plan with a few characters dropped in
    ),
)


def _write_plan(plan: str | bytes) -> Path:
    path = WORK / "plan.json"
    if isinstance(plan, bytes):
        path.write_bytes(plan)
    else:
        path.write_text(plan, encoding="utf-8", errors="surrogatepass")
    return path


@settings(FUZZ, max_examples=CASES["plans"])
@given(plan=plans, budget=st.sampled_from([[], ["--budget-epsilon", "1e9", "--budget-delta", "0.5"]]))
def test_plans(plan: str | bytes, budget: list[str]) -> None:
    path = _write_plan(plan)
    _run(
        [
            "release",
            str(path),
            "--data",
            str(DATA),
            "--out",
            str(WORK / "out"),
            "--ledger",
            str(LEDGER),
            *budget,
        ]
    )


# ---------------------------------------------------------------- calibrate
tokens = st.one_of(
    st.sampled_from(["1", "0", "-1", "1e308", "1e-300", "5e-324", "nan", "inf", "0.5", "1e-5", "x", ""]),
    numbers.map(str),
    st.text(max_size=6),
)
options = st.sampled_from(["--epsilon", "--delta", "--sensitivity", "--json", "--help", "-x"])


@settings(FUZZ, max_examples=CASES["calibrate"])
@given(
    mechanism=st.sampled_from(["gaussian", "gaussian", "laplace", ""]),
    rest=st.lists(st.one_of(options, tokens), max_size=8),
    complete=st.tuples(tokens, tokens, tokens, st.booleans()),
)
def test_calibrate(mechanism: str, rest: list[str], complete: tuple[str, str, str, bool]) -> None:
    epsilon, delta, sensitivity, as_json = complete
    argv = ["calibrate", mechanism, "--epsilon", epsilon, "--delta", delta, "--sensitivity", sensitivity]
    _run([*argv, *(["--json"] if as_json else [])])
    _run(["calibrate", mechanism, *rest])


# ---------------------------------------------------------------- data files
cells = st.one_of(
    st.sampled_from(["1", "2.5", "", "NaN", "inf", "x", '"q"', "'a'", "1e308", "\x00", "é", "a b"]),
    st.text(max_size=4),
)


@st.composite
def data_files(draw: st.DrawFn) -> tuple[str, bytes]:
    separator = draw(st.sampled_from([",", ";", "\t", "|", " ", "  "]))
    width = draw(st.integers(1, 4))
    header = draw(
        st.sampled_from([["x", "c", "d", "e"][:width], draw(st.lists(cells, min_size=1, max_size=4))])
    )
    rows = draw(st.lists(st.lists(cells, min_size=0, max_size=5), max_size=8))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = newline.join(separator.join(row) for row in [header, *rows]) + draw(st.sampled_from(["", newline]))
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "latin-1", "utf-16"]))
    raw = text.encode(encoding, errors="replace")
    raw = draw(st.one_of(st.just(raw), st.binary(max_size=60), st.just(raw).map(lambda b: b[: len(b) // 2])))
    suffix = draw(st.sampled_from([".csv", ".tsv", ".csv.gz", ".parquet", ".txt"]))
    if suffix == ".csv.gz":
        packed = gzip.compress(raw)
        at = draw(st.integers(10, max(10, len(packed) - 1)))
        damaged = packed[:at] + b"\xff" * 30 + packed[at + 30 :]  # zlib.error or a CRC error
        raw = draw(st.sampled_from([packed, packed[: len(packed) // 2], damaged]))
    return suffix, raw


PLAN = WORK / "data-plan.json"
PLAN.write_text(
    json.dumps(
        [
            {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.1}},
            {
                "query": {"type": "mean", "column": "x", "lower": 0, "upper": 10},
                "mechanism": "laplace",
                "parameters": {"epsilon": 0.1},
            },
        ]
    )
)


@settings(FUZZ, max_examples=CASES["data"])
@given(data=data_files())
def test_data_files(data: tuple[str, bytes]) -> None:
    suffix, raw = data
    path = WORK / f"fuzzed{suffix}"
    path.write_bytes(raw)
    argv = ["release", str(PLAN), "--data", str(path), "--out", str(WORK / "out"), "--ledger", str(LEDGER)]
    _run([*argv, "--budget-epsilon", "1e9", "--budget-delta", "0.5"])


# ---------------------------------------------------------------- account
def account_argv() -> st.SearchStrategy[list[str]]:
    """``account`` command lines: SPECs with extreme and malformed numbers."""
    kinds = st.sampled_from(["laplace:scale", "gaussian:sigma", "pure:epsilon", "zcdp:rho", "approx:epsilon"])
    repeats = st.sampled_from(
        ["", ":k=2", ":k=0", ":k=1e8", ":k=99999999999999", ":q=0.01", ":q=2", ":sample=5/7"]
    )
    spec = st.builds(lambda k, v, rep: f"{k}={v}{rep}", kinds, tokens, repeats)
    return st.lists(spec, min_size=1, max_size=3).map(lambda specs: ["account", *specs])


@settings(FUZZ, max_examples=CASES["account"])
@given(argv=account_argv())
def test_account_specs(argv: list[str]) -> None:
    _run(argv)
