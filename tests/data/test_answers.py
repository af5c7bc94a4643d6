"""True answers on D and D': the facts of shared/data/README.md, and D' against brute force."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from dpexplorer.core.mechanisms.base import NumericInput, SelectionInput, WorkloadInput
from dpexplorer.data.answers import query_input, true_answer
from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import (
    ArgMax,
    Axis,
    Count,
    Histogram,
    Mean,
    Median,
    PredicateCount,
    Quantile,
    Sum,
    TopK,
    TrimmedMean,
    marginal_workload,
    where,
)

RICH = where("income") == ">50K"
OCCUPATIONS = ("Prof-specialty", "Craft-repair", "Exec-managerial", "Adm-clerical", "Sales")


@pytest.fixture(scope="module")
def adult():
    return load_dataset(default_dataset_path())


def test_readme_facts(adult):
    assert true_answer(adult, Count()) == 48_842
    assert true_answer(adult, PredicateCount(RICH)) == 11_687
    assert true_answer(adult, PredicateCount(RICH & (where("sex") == "Female"))) == 1_769
    assert true_answer(adult, PredicateCount(RICH & (where("race") == "Amer-Indian-Eskimo"))) == 55
    assert true_answer(adult, Mean("age", 0, 100)) == pytest.approx(38.64358543876172, rel=1e-13)
    assert true_answer(adult, Median("hours_per_week", 0, 168)) == 40
    assert true_answer(adult, Quantile("capital_gain", 0, 200_000, 1.0)) == 99_999
    assert true_answer(adult, TopK("occupation", OCCUPATIONS, 3)) == OCCUPATIONS[:3]
    assert true_answer(adult, ArgMax("occupation", OCCUPATIONS)) == "Prof-specialty"
    sel = query_input(adult, TopK("occupation", OCCUPATIONS, 3))
    assert list(sel.scores_d[:3]) == [6_172, 6_112, 6_086]


def test_count_inputs(adult):
    q = PredicateCount(RICH & (where("race") == "Amer-Indian-Eskimo"))
    add = query_input(adult, q, "add_remove")
    assert isinstance(add, NumericInput)
    assert (add.value_d[0], add.value_d_prime[0], add.sensitivity_l1, add.n) == (55, 56, 1.0, 48_842)
    assert add.differing_row == "D' = D plus one row where income is >50K and race is Amer-Indian-Eskimo"
    rep = query_input(adult, q, "replace")
    assert rep.value_d_prime[0] == 56 and rep.differing_row.startswith("D' = D with one row changed")
    total = query_input(adult, Count(), "replace")
    assert total.sensitivity_l1 == 0.0 and total.value_d_prime[0] == total.value_d[0]


def test_mean_age_input(adult):
    inp = query_input(adult, Mean("age", 17, 90), "replace")
    n = 48_842
    assert inp.sensitivity_l1 == pytest.approx(73 / n)
    assert inp.value_d_prime[0] - inp.value_d[0] == pytest.approx(73 / n)  # an age-17 row made 90
    assert inp.differing_row == "D' = D with one row changed: age 17 -> 90"
    assert inp.bounds == (17.0, 90.0) and inp.output_range == (17.0, 90.0)


def test_median_input_carries_sorted_values(adult):
    inp = query_input(adult, Median("hours_per_week", 0, 99), "add_remove")
    assert inp.statistic == "median" and inp.sorted_values_d is not None
    assert len(inp.sorted_values_d) == 48_842 and len(inp.sorted_values_d_prime) == 48_843
    assert np.all(np.diff(inp.sorted_values_d_prime) >= 0)


def test_histogram_selection_and_workload(adult):
    h = query_input(adult, Histogram(Axis("sex", categories=("Male", "Female"))), "replace")
    assert h.labels == ("Male", "Female", "(any other)") and h.value_d.sum() == 48_842
    assert np.abs(h.value_d - h.value_d_prime).sum() == h.sensitivity_l1 == 2.0
    s = query_input(adult, ArgMax("occupation", OCCUPATIONS), "replace")
    assert isinstance(s, SelectionInput) and not s.monotone and s.sensitivity == 1.0
    assert s.differing_row == "D' = D with one row changed: occupation Prof-specialty -> Craft-repair"
    assert query_input(adult, ArgMax("occupation", OCCUPATIONS)).monotone
    wq = marginal_workload([Axis("sex", categories=("Male", "Female")), Axis("age", edges=(0, 40, 100))])
    w = query_input(adult, wq, "add_remove")
    assert isinstance(w, WorkloadInput)
    assert w.histogram_d.sum() == 48_842 and w.histogram_d_prime.sum() == 48_843
    assert w.workload.shape == (len(wq.queries), len(w.cell_labels))
    assert np.allclose(w.workload @ w.histogram_d, true_answer(adult, wq))
    assert list(w.workload[:2] @ w.histogram_d) == [32_650, 16_192]  # Male, Female


# ---------------------------------------------------------------- D' against brute force
GRID = (0.0, 1.0, 2.5, 4.0, 7.0, 10.0)
LOWER, UPPER = 1.0, 7.0


def independent(query, x: list[float]) -> float:
    """The statistic computed by numpy/scipy, independently of dpexplorer."""
    v = np.clip(np.array(x, dtype=float), LOWER, UPPER)
    if isinstance(query, Sum):
        return float(v.sum())
    if isinstance(query, Mean):
        return float(v.mean())
    if isinstance(query, Quantile):
        return float(np.quantile(v, query.q, method="inverted_cdf"))
    return float(stats.trim_mean(v, query.trim_fraction))


def neighbours(x: list[float], relation: str):
    for i in range(len(x)):
        rest = x[:i] + x[i + 1 :]
        if relation == "add_remove":
            yield rest
        else:
            yield from ([*rest, g] for g in GRID)
    if relation == "add_remove":
        yield from ([*x, g] for g in GRID)


CLIPPED = [
    Sum("x", LOWER, UPPER),
    Mean("x", LOWER, UPPER),
    Median("x", LOWER, UPPER),
    Quantile("x", LOWER, UPPER, 0.3),
    TrimmedMean("x", LOWER, UPPER, 0.2),
]


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
@pytest.mark.parametrize("query", CLIPPED, ids=lambda q: q.kind)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(x=st.lists(st.sampled_from(GRID), min_size=2, max_size=6))
def test_worst_case_neighbour_and_sensitivity_by_brute_force(tmp_path: Path, relation, query, x):
    p = tmp_path / "small.csv"
    p.write_text("x\n" + "\n".join(f"{v:g}" for v in x) + "\n")
    inp = query_input(load_dataset(p), query, relation)
    f_d = independent(query, x)
    diffs = [abs(independent(query, e) - f_d) for e in neighbours(x, relation) if e]
    assert inp.value_d[0] == pytest.approx(f_d)
    assert abs(inp.value_d_prime[0] - inp.value_d[0]) == pytest.approx(max(diffs))  # exact local sensitivity
    assert max(diffs) <= inp.sensitivity_l1 + 1e-12  # the global sensitivity bounds every neighbour
    if inp.sorted_values_d_prime is not None:
        assert inp.value_d_prime[0] == pytest.approx(independent(query, list(inp.sorted_values_d_prime)))
    assert math.isfinite(inp.sensitivity_l2)


@pytest.mark.parametrize("lazy", [False, True])
def test_missing_values_and_lazy_frames(tmp_path: Path, lazy):
    p = tmp_path / "m.csv"
    p.write_text("x,c\n1,a\n,b\n3,\n5,a\n")
    ds = load_dataset(p, lazy=lazy)
    assert true_answer(ds, PredicateCount(where("x") >= 1)) == 3  # missing is not >= 1
    assert true_answer(ds, PredicateCount(~(where("x") >= 3))) == 2  # ... so "not" counts it
    assert true_answer(ds, PredicateCount(~((where("x") > 0) & (where("c") == "a")))) == 2
    assert true_answer(ds, PredicateCount((where("x") > 2) | (where("c") == "b"))) == 3
    # missing -> the midpoint 2, and 5 is clipped to 4
    assert true_answer(ds, Mean("x", 0, 4)) == pytest.approx((1 + 2 + 3 + 4) / 4)
    # "other" holds b and the missing value
    assert list(true_answer(ds, Histogram(Axis("c", categories=("a",))))) == [2, 2]
