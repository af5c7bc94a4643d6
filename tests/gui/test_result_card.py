"""Issue 28, item 1: after a release the window and the dialog show a result card (the value
rounded to the digits its interval supports, the interval, the plain sentence, epsilon charged
and left, links to the files); the Released tab keeps every release of the session; the dialog
never clips its text."""

from __future__ import annotations

import math
import re
from decimal import Decimal

import pytest
from PySide6.QtWidgets import QWidget

from dpexplorer.gui.main_window import MainWindow
from dpexplorer.release.ledger import Ledger


@pytest.fixture
def ledger_path(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setattr(MainWindow, "ledger_path", lambda self: path)
    return path


def _outside(dialog: QWidget) -> list[str]:
    """The dialog's visible widgets that do not lie wholly inside it."""
    frame = dialog.rect()
    bad = []
    for child in dialog.findChildren(QWidget):
        if not child.isVisibleTo(dialog) or child.isWindow():
            continue
        rect = child.rect().translated(child.mapTo(dialog, child.rect().topLeft()))
        if not frame.contains(rect):
            bad.append(f"{type(child).__name__} {child.objectName()} at {rect} outside {frame}")
    return bad


def _release_mean(qtbot, window, ledger_path, out_dir, mechanism: str):
    window.resize(1280, 720)
    window.query_panel.select_kind("mean", "age")
    qtbot.waitUntil(lambda: getattr(window.explorer.query, "column", None) == "age", timeout=20_000)
    panel = window.mechanism_panel
    qtbot.waitUntil(lambda: mechanism in [m.name for m in panel.mechanisms], timeout=20_000)
    panel.select(mechanism)
    qtbot.waitUntil(lambda: window.explorer.mechanism.name == mechanism, timeout=20_000)
    with Ledger(ledger_path) as ledger:
        ledger.set_budget(window.dataset.content_fingerprint, 3.0, 1e-6, "basic")
    window.open_release_dialog()
    dialog = window.release_dialog
    dialog.out_dir.setText(str(out_dir))
    qtbot.waitUntil(lambda: dialog.preview is not None and dialog.release_button.isEnabled(), timeout=20_000)
    qtbot.waitUntil(lambda: not _outside(dialog), timeout=5_000)  # priced: every line shown whole
    dialog.release_button.click()
    qtbot.waitUntil(lambda: dialog.card is not None, timeout=60_000)
    return dialog


def _unit(low: float, high: float) -> Decimal:
    """The rounding step a half-width supports, written out here from the README's rule:
    the place of the half-width's second significant digit."""
    half = (high - low) / 2
    return Decimal(1).scaleb(math.floor(math.log10(half)) - 1)


@pytest.mark.parametrize("mechanism", ["laplace", "noisy_mean"])
def test_a_released_mean_is_shown_rounded_with_its_interval_and_cost(
    qtbot, window, ledger_path, tmp_path, mechanism
):
    dialog = _release_mean(qtbot, window, ledger_path, tmp_path / "out", mechanism)
    result = dialog.result
    value, (low, high) = result.values[0], result.confidence_intervals[0]
    assert result.labels[0] == "mean"
    unit = _unit(low, high)
    text = dialog.card.text()
    # the value: to the unit's digits, no more
    shown, *ends = re.search(r"\nmean\s+(-?[\d.]+)\s+\[(-?[\d.]+), (-?[\d.]+)\]", text).groups()
    decimals = max(-unit.as_tuple().exponent, 0)
    got = len(shown.split(".")[1]) if "." in shown else 0
    assert got == decimals, (shown, unit)
    assert abs(Decimal(shown) - Decimal(value)) <= unit / 2, (shown, value, unit)
    # the interval, rounded outward to the same unit
    a, b = (Decimal(x) for x in ends)
    assert a <= Decimal(low) < a + unit and b - unit < Decimal(high) <= b, (a, b, low, high, unit)
    assert "95 % interval" in text
    if (low, high) == (17.0, 90.0):  # Laplace's (90 - 17) / 2 / ε noise fills the range (issue 41)
        assert "[17, 90] (declared range)" in text and "No estimate better than the declared range" in text
    else:  # ± when symmetric, each side when the clamp cut one end
        assert "With 95 % probability the noise moved this by at most ±" in text or " below and " in text
    # epsilon charged (1, the slider's default) and what is left of 3 under basic composition
    assert "Charged ε = 1 under basic composition; ε = 2 is left of this dataset's budget of ε = 3" in text
    assert "values (CSV)" in text and "report (PDF)" in text
    for path in result.files.values():  # every link points to a file the release wrote
        assert path.exists() and path.as_uri() in dialog.card.label.text()
    # the dialog: nothing clipped, within a 1280 x 720 screen
    qtbot.waitUntil(lambda: not _outside(dialog), timeout=5_000)
    assert dialog.height() <= 720 - 40 and dialog.width() <= 1280
    assert dialog.card.isVisibleTo(dialog) and not dialog.out_row.isVisibleTo(dialog)
    dialog.done(0)
    # the window: the Released tab shows the same card, and keeps it
    assert window.tabs.currentWidget() is window.released_view
    assert window.released_view.cards[0].text() == text


def test_the_released_tab_keeps_every_release_of_the_session(qtbot, window, ledger_path, tmp_path):
    first = _release_mean(qtbot, window, ledger_path, tmp_path / "one", "noisy_mean")
    first.done(0)
    second = _release_mean(qtbot, window, ledger_path, tmp_path / "two", "noisy_mean")
    second.done(0)
    cards = window.released_view.cards
    assert [c.released.result.row_id for c in cards] == [second.result.row_id, first.result.row_id]
    assert "ε = 1 is left" in cards[0].text() and "ε = 2 is left" in cards[1].text()


def _released(labels, values, intervals, kinds=(), rank=None, integral=False):
    from pathlib import Path

    from dpexplorer.core.accounting.guarantees import PureDP
    from dpexplorer.gui.jobs import Released
    from dpexplorer.release.release import ReleaseResult

    result = ReleaseResult(
        row_id=7,
        labels=tuple(labels),
        values=tuple(values),
        confidence_intervals=intervals,
        ci_level=0.95,
        guarantee=PureDP(0.5),
        epsilon=0.5,
        delta=0.0,
        rho=None,
        sampler="test",
        files={"csv": Path("released", "r.csv")},  # a link only: nothing is written
        interval_kinds=tuple(kinds),
        rank_within=rank,
    )
    return Released(result, "a query", "A mechanism", "data.csv", "basic", 0.5, 1.5, 2.0, integral)


def test_an_interval_that_is_not_the_noise_is_said_so_and_a_rank_interval_in_words(qtbot):
    from dpexplorer.gui.result_card import ResultCard

    card = ResultCard(_released(["median"], [38.0], ((17.0, 90.0),), kinds=("range",), rank=1200))
    qtbot.addWidget(card)
    text = card.text()
    assert "[17, 90] (declared range)" in text and "No estimate better than the declared range" in text
    assert "noise moved this" not in text, "the range is not the noise's interval"
    assert "within 1,200 rows of the quantile's own rank" in text


def test_a_grouped_mean_lists_the_means_and_its_parts_apart_and_says_the_widest_interval(qtbot):
    from dpexplorer.gui.result_card import ResultCard

    labels = ["sex = F: mean", "sex = M: mean", "sex = F: count (noisy)", "sex = M: count (noisy)"]
    values = [36.8512, 39.4371, 16193.0, 32650.0]
    intervals = ((36.81, 36.89), (39.02, 39.85), (16187.0, 16199.0), (32644.0, 32656.0))
    card = ResultCard(_released(labels, values, intervals, kinds=("noise",) * 4))
    qtbot.addWidget(card)
    text = card.text()
    table, parts = text.split("Released with it as its parts")
    assert "36.85" in table and "39.4" in table and "16193" not in table
    assert "count (noisy) 16193" in parts
    assert (
        "The widest interval (sex = M: mean): with 95 % probability the noise moved this by at most ±0.42"
        in text
    )


def test_a_mean_by_many_groups_counts_its_parts_rather_than_listing_them(qtbot):
    from dpexplorer.gui.result_card import MAX_PARTS, ResultCard

    groups = [f"g{i}" for i in range(MAX_PARTS)]
    labels = [f"{g}: mean" for g in groups] + [
        f"{g}: {part}" for g in groups for part in ("count (noisy)", "centred sum (noisy)")
    ]
    values = [40.0] * len(groups) + [100.0, -50.0] * len(groups)
    intervals = tuple((v - 1.0, v + 1.0) for v in values)
    card = ResultCard(_released(labels, values, intervals, kinds=("noise",) * len(values)))
    qtbot.addWidget(card)
    text = card.text()
    assert f"{2 * MAX_PARTS} values (centred sum (noisy), count (noisy) of each group)" in text
    assert "g0: count (noisy) 100" not in text


def test_a_selected_category_says_why_it_has_no_interval(qtbot):
    from dpexplorer.gui.result_card import ResultCard

    card = ResultCard(_released(["selected"], ["Prof-specialty"], None))
    qtbot.addWidget(card)
    text = card.text()
    assert "Prof-specialty" in text and "a category has no interval" in text and "95 % interval" not in text


def test_a_synthetic_tables_counts_read_as_whole_counts(qtbot, tmp_path):
    """The card of a synthetic table read '48830' records: its values were not flagged whole
    (release/published.py's integral_flags), so not written as every count of rows is."""
    import numpy as np

    from dpexplorer.core.marginals import MarginalInput
    from dpexplorer.gui.jobs import release_and_account
    from dpexplorer.gui.result_card import ResultCard
    from dpexplorer.release.synthetic_tables import prepare_table

    counts = {(0,): np.array([30_000, 18_842]), (1,): np.array([40_000, 8_842])}
    counts[(0, 1)] = np.array([26_000, 4_000, 14_000, 4_842])
    marginals = MarginalInput(("c", "k"), (("a", "b"), ("u", "v")), ((0, 1),), counts, 48_842)
    params = {"epsilon": 2.0, "estimator": "dense", "iterations": 20, "rows": 12_345}
    prepared = prepare_table(marginals, "mst", params, fingerprint="f" * 32, query={})
    ledger = tmp_path / "ledger.sqlite"
    with Ledger(ledger) as book:
        book.set_budget("f" * 32, 5.0, 1e-6, "zcdp")
    released = release_and_account(prepared, str(ledger), str(tmp_path / "out"), "d.csv", "a table")
    assert released.result.rows == 12_345 and released.integral == (True, True)
    card = ResultCard(released)
    qtbot.addWidget(card)
    text = card.text()
    assert re.search(r"synthetic records\s+12,345\n", text), text
    assert re.search(r"measured marginals\s+\d\n", text), text


def test_an_empty_group_and_a_range_mean_are_no_bold_finding(qtbot):
    """Issue 41: "Species = other: mean **6300** [2700, 6300]" in bold, and "±3600" for a clamp to
    the range. An empty group shows "empty", a mean whose interval is the declared range says so,
    neither in bold; a noise interval's mean stays bold."""
    from dpexplorer.gui.result_card import card_html
    from dpexplorer.release.presentation import EMPTY

    labels = ["g = a: mean", "g = b: mean", "g = c: mean"]
    released = _released(
        labels,
        [EMPTY, 6300.0, 4100.0],
        (None, (2700.0, 6300.0), (4000.0, 4200.0)),
        kinds=(None, "range", "noise"),
    )
    html = card_html(released)
    assert "<b style='font-size: large'>4100</b>" in html
    assert "<b style='font-size: large'>6300</b>" not in html and ">6300<" in html
    assert "<b style='font-size: large'>empty</b>" not in html and ">empty<" in html
    assert "±3600" not in html
    alone = card_html(_released(["mean"], [6300.0], ((2700.0, 6300.0),), kinds=("range",)))
    assert "No estimate better than the declared range" in alone and "noise moved this" not in alone
