"""Issue 28, item 5 in the window: beside the mechanism picker, every applicable mechanism's
expected 95 % error at the current ε, sorted, the best marked; choosing Laplace on a mean says
how many times more accurate Noisy sum / noisy count is there."""

from __future__ import annotations

import math


def _mean_of_age(qtbot, window, mechanism: str) -> None:
    window.query_panel.select_kind("mean", "age")
    panel = window.mechanism_panel
    qtbot.waitUntil(lambda: "noisy_mean" in [m.name for m in panel.mechanisms], timeout=20_000)
    panel.select(mechanism)
    view = window.mechanism_ranking
    qtbot.waitUntil(
        lambda: (
            view.ranking is not None
            and view._chosen == mechanism
            and "noisy_mean" in [e.name for e in view.ranking.entries]
        ),
        timeout=20_000,
    )


def test_the_ranking_beside_the_picker_puts_noisy_mean_first_and_says_how_much_better(qtbot, window):
    _mean_of_age(qtbot, window, "laplace")
    ranking_view = window.mechanism_ranking
    qtbot.waitUntil(
        lambda: ranking_view.ranking is not None and ranking_view._chosen == "laplace", timeout=20_000
    )
    ranking = ranking_view.ranking
    names = [e.name for e in ranking.entries]
    assert names[0] == "noisy_mean" and ranking.best == ("noisy_mean",)
    assert set(names) == {m.name for m in window.mechanism_panel.mechanisms}, "every applicable one"
    assert ranking.epsilon == window.explorer.params["epsilon"]
    assert ranking_view.isVisibleTo(window)
    text = ranking_view.text()
    assert "★" in text and text.index("noisy_mean") < text.index("laplace")
    times = ranking.times_best("laplace")
    assert times > 10_000 and "more accurate on this query" in text
    # the accuracy view's half-width for the chosen mechanism is the ranking's figure for it
    window.tabs.setCurrentWidget(window.accuracy_view)
    qtbot.waitUntil(lambda: window.accuracy_view.result is not None, timeout=20_000)
    laplace = next(e for e in ranking.entries if e.name == "laplace")
    assert math.isclose(window.accuracy_view.result.report.ci_halfwidth, laplace.halfwidth, rel_tol=1e-9)
    # a name is a link that chooses the mechanism; the best chosen, no hint
    ranking_view.linkActivated.emit("noisy_mean")
    assert window.mechanism_panel.current().name == "noisy_mean"
    qtbot.waitUntil(
        lambda: ranking_view._chosen == "noisy_mean" and "◀ chosen" in ranking_view.text(), timeout=20_000
    )
    qtbot.waitUntil(lambda: "more accurate" not in ranking_view.text(), timeout=20_000)


def test_the_ranking_follows_epsilon(qtbot, window):
    _mean_of_age(qtbot, window, "laplace")
    ranking_view = window.mechanism_ranking
    qtbot.waitUntil(lambda: ranking_view.ranking is not None, timeout=20_000)
    before = next(e.halfwidth for e in ranking_view.ranking.entries if e.name == "laplace")
    window.mechanism_panel.set_values({"epsilon": 0.5})
    qtbot.waitUntil(lambda: ranking_view.ranking.epsilon == 0.5, timeout=20_000)
    after = next(e.halfwidth for e in ranking_view.ranking.entries if e.name == "laplace")
    assert math.isclose(after, 2 * before, rel_tol=1e-9), "Laplace's error is Δ ln 20 / ε"
    assert "ε = 0.5" in ranking_view.text()
