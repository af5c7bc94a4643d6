"""Epsilon in context (issue 44): the shipped table of published deployments cites a source for
every figure, says local or central, and quotes the figure it lists; the steward's totals are
drawn among them in order of epsilon."""

from __future__ import annotations

import math
import re

import pytest

from dpexplorer.release import deployments as d


def _figures(text: str) -> set[float]:
    return {
        float(x.replace("^", "e"))
        for x in re.findall(r"\d+(?:\.\d+)?(?:e-?\d+)?", text.replace("10^-", "1e-"))
    }


def test_every_row_cites_a_source_and_quotes_its_figures() -> None:
    rows = d.deployments()
    assert len(rows) >= 5
    for row in rows:
        assert row.url.startswith("https://") and row.source and row.unit
        assert row.model in ("central", "local")
        stated = _figures(row.stated)
        assert row.epsilon in stated, f"{row.name}: epsilon {row.epsilon} is not in what the source states"
        if row.delta:
            assert row.delta in stated, f"{row.name}: delta {row.delta} is not in what the source states"
        if row.rho is not None:
            assert row.rho in stated
    assert {r.model for r in rows} == {"central", "local"}
    assert "Units differ" in d.caveat() and "local-DP" in d.caveat()


def test_the_steward_is_drawn_among_them_in_order() -> None:
    rows = d.in_context([("mine", 3.0, 1e-6), ("not finite", math.inf, 1e-6)], "a person")
    assert [r.epsilon for r in rows] == sorted(r.epsilon for r in rows)
    (own,) = [r for r in rows if r.own]
    assert own.label == "mine" and own.unit == "a person" and own.delta == 1e-6
    assert len(rows) == len(d.deployments()) + 1  # an infinite total is left out, not drawn


def test_epsilon_text() -> None:
    row = d.ContextRow("x", 1.0, 1e-7, "central", "u", "s", "https://x", rho=0.015)
    assert d.epsilon_text(row, lambda v: f"{v:g}") == "ρ = 0.015 (≈ ε 1, δ = 1e-07)"
    pure = d.ContextRow("y", 1.68, 0.0, "central", "u", "s", "https://y")
    assert d.epsilon_text(pure, lambda v: f"{v:g}") == "1.68"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model": "hybrid"}, "model must be one of"),
        ({"epsilon": -1}, "epsilon must be a positive number"),
        ({"url": "http://insecure"}, "an https URL"),
        ({"extra": 1}, "other fields"),
    ],
)
def test_a_malformed_row_is_refused(change: dict, message: str) -> None:  # type: ignore[type-arg]
    good = d.deployments()[0].__dict__
    with pytest.raises(d.DeploymentsFileError, match=message):
        d._deployment({**good, **change})
