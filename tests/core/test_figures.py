"""Privacy figures (core/figures.py): three significant digits, each rounding's guarantee, and
what is left of a budget (issue 41's leftover readouts: "leaving ε = 1.368e-06" for a plan that
fills its budget, "0.3" beside "0.299" for one ε, "2.80618" in a refusal)."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from dpexplorer.core import planning
from dpexplorer.core.accounting.compose import compose
from dpexplorer.core.accounting.guarantees import ApproxDP, PureDP
from dpexplorer.core.figures import left_of, privacy_down, privacy_number, privacy_up


@pytest.mark.parametrize(
    ("x", "shown"),
    [
        (0.3, "0.3"),
        (0.29990234375, "0.3"),
        (0.7999414176918571, "0.8"),
        (2.80618, "2.81"),
        (1.368e-06, "1.37e-6"),
        (1e-06, "1e-6"),
        (0.0009995, "9.99e-4"),  # the double is 0.00099949999...: rounded exactly
        (1234.0, "1234"),
        (0.0, "0"),
        (None, "—"),
        (float("inf"), "∞"),
    ],
)
def test_three_significant_digits_to_nearest(x, shown) -> None:
    assert privacy_number(x) == shown


def test_directed_roundings_bound_the_exact_figure() -> None:
    rng = random.Random(41)
    for _ in range(2000):
        x = 10 ** rng.uniform(-9, 3)
        up, down = Decimal(privacy_up(x)), Decimal(privacy_down(x))
        tolerance = Decimal(x) * Decimal("1e-9")  # a float's own error is not rounded away
        assert up >= Decimal(x) - tolerance and down <= Decimal(x) + tolerance, x
        assert len(privacy_up(x).split("e")[0].replace(".", "").lstrip("0")) <= 3
    assert privacy_up(0.2994) == "0.3" and privacy_up(0.99902) == "1"  # charged: never below
    assert privacy_up(0.2) == "0.2" and privacy_down(0.8) == "0.8"  # 0.2 is 0.2000000000000000111


def test_what_is_left_adds_up_to_the_budget_and_reads_0_when_filled() -> None:
    assert left_of(1.0, 1.0 - 1.368e-06) == "0"  # the shared plan
    assert left_of(3.0, 2.999146) == "0" and privacy_up(2.999146) == "3"
    assert left_of(1.0, 0.2) == "0.8" and left_of(3.0, 2.9) == "0.1"
    assert left_of(1.0, 1.5) == "0"  # over: nothing left, never negative


def test_a_plan_that_fills_the_budget_leaves_0() -> None:
    """A shared plan's total falls short of the budget by the solver's slack: the sentence said
    "leaving ε = 1.368e-06"."""
    best = planning.MethodTotal("basic", 0.0, 1.0 - 1.368e-06, "", True)
    message = planning._budget_message(best, 1.0, 1e-6)
    assert (
        message == "The plan fits: it uses ε = 1 of the budget ε = 1 under basic composition, leaving ε = 0."
    )


def test_an_accountant_that_does_not_apply_names_the_guarantee_in_words() -> None:
    """Appendix A and the Budget tab printed "ApproxDP (epsilon=0.7999414176918571, delta=1e-06)"."""
    report = compose([PureDP(0.5), ApproxDP(0.7999414176918571, 1e-06)], delta=1e-5, methods=("zcdp", "rdp"))
    zcdp, rdp = report.results
    assert (
        zcdp.epsilon is None and zcdp.reason == "an (ε, δ)-DP guarantee (ε = 0.8, δ = 1e-6) has no zCDP bound"
    )
    assert rdp.reason == "an (ε, δ)-DP guarantee (ε = 0.8, δ = 1e-6) has no Rényi-DP bound"
