"""Issue 40's held-out neighbour pair, built through the window's query panel: D, and D' = D plus
one person with an extreme income (987654.25) and a city no one else has ("Zzyzx"). For every
query kind the window builds, what a release would publish about its domain (bounds, bin edges,
categories, keys) is the same on D and D', or the release is refused for an undeclared fact,
on D and D' alike, before anything is priced or charged. Before issue 40 the panel filled the
bounds with the data's extremes and the categories with its commonest values: D' published
bins ending at 987654.25 and the category "Zzyzx"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from dpexplorer.gui.main_window import MainWindow
from dpexplorer.gui.query_panel import QueryPanel
from dpexplorer.release.ledger import Ledger
from tests.gui.conftest import IDLE_TIMEOUT_MS, wait_idle

EXTREME, UNIQUE = 987654.25, "Zzyzx"


def _frame(rows: int = 300) -> pl.DataFrame:
    rng = np.random.default_rng(40)
    income = np.round(rng.uniform(1000, 4990, rows), 2)
    income[0] = 4993.4
    return pl.DataFrame(
        {
            "pid": np.arange(rows),
            "city": rng.choice(["Ames", "Boise", "Cary"], rows),
            "sex": rng.choice(["F", "M"], rows),
            "income": income,
        }
    )


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("neighbours")
    d = _frame()
    one = pl.DataFrame({"pid": [len(d)], "city": [UNIQUE], "sex": ["F"], "income": [EXTREME]})
    d.write_csv(folder / "d.csv")
    pl.concat([d, one]).write_csv(folder / "d_prime.csv")
    return folder / "d.csv", folder / "d_prime.csv"


def _condition(panel: QueryPanel) -> None:
    panel.select_kind("predicate_count")
    row = panel.conditions[0]
    row.column.setCurrentText("city")
    row.op.setCurrentText("==")
    row.value.setText("Ames")


def _grouped(kind: str) -> Callable[[QueryPanel], None]:
    def setup(panel: QueryPanel) -> None:
        panel.select_kind(kind, "income")
        panel.group1.setCurrentText("city")

    return setup


def _marginals(panel: QueryPanel) -> None:
    panel.select_kind("marginals")
    panel.marginal_columns.setText("income, city, sex")


KINDS: dict[str, Callable[[QueryPanel], None]] = {
    "count with a condition": _condition,
    "sum": lambda p: p.select_kind("sum", "income"),
    "mean": lambda p: p.select_kind("mean", "income"),
    "quantile": lambda p: p.select_kind("quantile", "income"),
    "histogram of a number": lambda p: p.select_kind("histogram", "income"),
    "histogram of a category": lambda p: p.select_kind("histogram", "city"),
    "top-k": lambda p: p.select_kind("top_k", "city"),
    "mean by group": _grouped("group_mean"),
    "count by group": _grouped("group_count"),
    "marginals": _marginals,
}


def _declared_codebook() -> Any:
    from dpexplorer.data.codebook import Codebook, ColumnFacts, Fact

    cities = Fact(("Ames", "Boise", "Cary"), "declared", "the survey's list of sites", complete=False)
    return Codebook(
        {
            "income": ColumnFacts(
                "income",
                "number",
                bounds=Fact((0.0, 10_000.0), "declared", "the survey's top-code"),
                edges=Fact((0.0, 2500.0, 5000.0, 10_000.0), "declared"),
            ),
            "city": ColumnFacts("city", "category", categories=cities),
            "sex": ColumnFacts("sex", "category", categories=Fact(("F", "M"), "declared")),
        }
    )


def _published(window: MainWindow, qtbot, setup: Callable[[QueryPanel], None]) -> tuple[dict, tuple]:
    """(the query the release dialog would publish, the facts it refuses for)."""
    setup(window.query_panel)
    window.query_panel.emit_query()
    wait_idle(qtbot, window)
    expected = window.query_panel.build()
    qtbot.waitUntil(lambda: window.explorer.query == expected, timeout=IDLE_TIMEOUT_MS)
    window.open_release_dialog()
    dialog = window.release_dialog
    published = dialog.request[1].to_dict()
    refused = tuple(getattr(dialog, "refused", ()))
    dialog.done(0)
    return published, refused


def _open(window: MainWindow, qtbot, path: Path) -> None:
    window.open_file(path)
    qtbot.waitUntil(
        lambda: window.dataset is not None and window.dataset.path == path and window.identity_known(),
        timeout=IDLE_TIMEOUT_MS,
    )
    wait_idle(qtbot, window)


@pytest.mark.parametrize("declared", [False, True], ids=["no codebook", "declared codebook"])
def test_the_published_domain_is_the_same_on_d_and_d_prime_or_the_release_is_refused(
    qtbot, pair: tuple[Path, Path], tmp_path: Path, monkeypatch, declared: bool
) -> None:
    ledger_path = tmp_path / "ledger.sqlite"
    monkeypatch.setattr(MainWindow, "ledger_path", lambda self: ledger_path)
    window = MainWindow(interactive=False, restore_layout=False)
    qtbot.addWidget(window)
    window.show()
    seen: dict[str, list[tuple[dict, tuple]]] = {kind: [] for kind in KINDS}
    for path in pair:
        _open(window, qtbot, path)
        if declared:
            window.set_codebook(_declared_codebook())
        for kind, setup in KINDS.items():
            seen[kind].append(_published(window, qtbot, setup))
    for kind, ((on_d, refused_d), (on_d_prime, refused_d_prime)) in seen.items():
        assert refused_d == refused_d_prime, kind  # the refusal reads the codebook, not the data
        if refused_d:
            assert not declared, kind
            continue
        assert on_d == on_d_prime, f"{kind}: the published domain moved with one person"
        assert UNIQUE not in repr(on_d_prime) and str(EXTREME) not in repr(on_d_prime), kind
    refused = {kind for kind, ((_, r), _) in seen.items() if r}
    if declared:
        assert not refused  # every fact is in the codebook: each release may go ahead
    else:
        assert refused == set(KINDS) - {"count with a condition"}  # it uses no public fact
        assert "the bounds of income" in seen["mean"][0][1]
        assert "the categories of city" in seen["top-k"][0][1]
    if ledger_path.exists():
        with Ledger(ledger_path) as ledger:
            for path in pair:
                from dpexplorer.data.load import load_dataset

                assert ledger.measurements(load_dataset(path).content_fingerprint) == []
