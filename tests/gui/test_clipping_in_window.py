"""Where to clip, in the window (issue 21 items 2 and 3): a clipped statistic fills the tab;
its button opens the private-bounds dialog, which releases two DP quantiles through the ledger
and puts them into the codebook (origin "estimated", the ledger row: issue 40) and so into the
query's bounds."""

from __future__ import annotations

from dpexplorer.gui.views.clipping import ClippingResult
from dpexplorer.release.ledger import Ledger


def _mean_of_age(window) -> None:
    state = window.query_panel.state()
    state.update(kind="mean", column="age", lower=0.0, upper=150.0)
    window.query_panel.set_state(state)


def test_tab_then_private_bounds_fill_the_query(qtbot, window, tmp_path, monkeypatch) -> None:
    ledger_path = tmp_path / "ledger.sqlite"
    monkeypatch.setattr(window, "ledger_path", lambda: ledger_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    _mean_of_age(window)
    window.tabs.setCurrentWidget(window.clipping_view)
    view = window.clipping_view
    qtbot.waitUntil(lambda: isinstance(view.result, ClippingResult), timeout=60_000)
    assert view.result.statistic == "mean" and view.result.column == "age"
    assert (view.result.lower, view.result.upper) == (0.0, 150.0)

    with Ledger(ledger_path) as ledger:
        ledger.set_budget(window.dataset.content_fingerprint, 1.0, 0.0, "basic")
    view.private_button.click()
    dialog = window.private_bounds_dialog
    dialog.epsilon.setValue(0.2)
    dialog.bins.setValue(150)
    dialog.release_button.click()
    qtbot.waitUntil(lambda: dialog.result is not None, timeout=60_000)
    low, high = dialog.result.lower, dialog.result.upper
    assert 15 <= low <= 25 and 55 <= high <= 70, (low, high)  # Adult ages: 5% ~19, 95% ~63
    with Ledger(ledger_path) as ledger:
        rows = ledger.measurements(window.dataset.content_fingerprint)
    assert [r.mechanism for r in rows] == ["dp_quantile", "dp_quantile"]
    dialog.use_button.click()
    qtbot.waitUntil(
        lambda: window.explorer.query.lower == low and window.explorer.query.upper == high, timeout=10_000
    )
    qtbot.waitUntil(lambda: view.result is not None and view.result.upper == high, timeout=60_000)
    fact = window.codebook.fact("age", "bounds")
    assert (fact.value, fact.origin, fact.ledger_id) == ((low, high), "estimated", rows[0].id)
    assert window.blockers(window.explorer.query) == []  # estimated privately: releasable
