"""Issue 44 in the window: the Risk tab draws the trade-off curve of everything the ledger holds
for the open dataset (read with the budget), as core.tradeoff composes it; rendered offscreen."""

from __future__ import annotations

import numpy as np

from dpexplorer.core.accounting.guarantees import GaussianNoise, LaplaceNoise
from dpexplorer.core.tradeoff import tradeoff_of
from dpexplorer.gui.views.risk import RELEASED_ALPHAS
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.release import dataset_key
from tests.gui.conftest import wait_idle

HELD = (LaplaceNoise(2.0), GaussianNoise(5.0), LaplaceNoise(4.0))


def test_the_risk_tab_shows_the_ledgers_releases_for_the_open_dataset(
    qtbot, window, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    ledger_path = tmp_path / "ledger.sqlite"
    monkeypatch.setattr(window, "ledger_path", lambda: ledger_path)
    with Ledger(ledger_path) as ledger:
        key = dataset_key(window.dataset, ledger)
        ledger.set_budget(key, 5.0, 1e-6, "pld")
        for guarantee in HELD:
            ledger.charge(
                key, query={"type": "count"}, mechanism="laplace", parameters={}, guarantee=guarantee
            )
    window.reload_ledger()
    view = window.workspace.risk_view
    window.tabs.setCurrentWidget(view)
    qtbot.waitUntil(lambda: view.result is not None and view.result.released is not None, timeout=60_000)
    wait_idle(qtbot, window)
    released = view.result.released
    expected = tradeoff_of(list(HELD), RELEASED_ALPHAS)
    assert released.releases == len(HELD) and released.tradeoff.kind == expected.kind
    np.testing.assert_array_equal(released.tradeoff.fnr, expected.fnr)
    names = [c.name() for c in view.tradeoff.getPlotItem().listDataItems()]
    assert "everything released (lower bound)" in names
    assert "3 release(s) in the ledger" in view.sentence.text()
    assert view.grab().save(str(tmp_path / "risk-tab.png"))
