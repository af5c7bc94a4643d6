"""Stress: 2,000 random parameter, query and mechanism changes as fast as the event loop takes
them; then the window reaches idle, its views equal a fresh computation at the final state (no
stale result shown: every result delivered was its view's latest request), and no job is left
behind (none pending, no worker inside a job).

How fast is not asserted here (a loaded machine took 113 s for what takes 20 s on an idle one):
``benchmarks/stress.py`` times the same path, the changes and the wait for idle. The waits
below are hang guards. Query kinds whose every mechanism answers in well under a second are
used (the workload mechanisms' worst parameters take seconds by design; their cancellation is
tested in test_cancel.py)."""

from __future__ import annotations

import random

import numpy as np
from conftest import IDLE_TIMEOUT_MS, wait_idle
from PySide6.QtCore import QCoreApplication

from dpexplorer.core.mechanisms.base import CategoricalOutput
from dpexplorer.gui import jobs
from dpexplorer.gui.param_controls import NumberControl

CHANGES = 2_000
KINDS = (("count", None), ("mean", "age"), ("median", "hours_per_week"), ("argmax", "occupation"))


def _random_change(window, chooser: random.Random) -> None:
    roll = chooser.random()
    panel = window.mechanism_panel
    if roll < 0.03:
        kind, column = chooser.choice(KINDS)
        window.query_panel.select_kind(kind, column)
    elif roll < 0.15 and panel.picker.count() > 1:
        panel.picker.setCurrentIndex(chooser.randrange(panel.picker.count()))
    else:
        sliders = [c for n, c in panel.params.controls.items() if isinstance(c, NumberControl) and n != "k"]
        if sliders:
            control = chooser.choice(sliders)
            control.slider.setValue(chooser.randint(control.slider.minimum(), control.slider.maximum()))


def test_two_thousand_random_changes_end_idle_on_a_fresh_result(qtbot, window):
    chooser = random.Random(19)
    compute = window.compute
    delivered: list[tuple[str, int, int]] = []  # view, the result's generation, the view's latest
    compute.finished.connect(
        lambda view, gen, _r: delivered.append((view, gen, compute.current_generation(view)))
    )
    for _ in range(CHANGES):
        _random_change(window, chooser)
        QCoreApplication.processEvents()
    qtbot.waitUntil(window.views_idle, timeout=IDLE_TIMEOUT_MS)
    wait_idle(qtbot, window)
    assert delivered, "the views were computed"
    stale = [(view, gen, latest) for view, gen, latest in delivered if gen != latest]
    assert not stale, f"results delivered after a newer request: {stale[:5]}"
    assert len(delivered) < CHANGES, "latest wins: superseded requests deliver nothing"
    qtbot.waitUntil(lambda: compute.running == 0, timeout=IDLE_TIMEOUT_MS)  # cancelled jobs end

    explorer = window.explorer
    assert explorer.query.to_dict() == window.query_panel.build().to_dict()
    mechanism, query = explorer.mechanism, explorer.query_input
    params = mechanism.validate(explorer.params)
    shown = window.neighbours_view.result
    if shown is None:  # the final state was refused: the view says why
        assert window.neighbours_view.error.isVisible()
        return
    fresh = jobs.neighbours(mechanism, params, query)
    assert shown.mechanism == fresh.mechanism and shown.params == fresh.params
    assert shown.epsilon == fresh.epsilon and shown.delta_exact == fresh.delta_exact
    if isinstance(fresh.output, CategoricalOutput):
        np.testing.assert_array_equal(shown.output.pmf_d, fresh.output.pmf_d)
        np.testing.assert_array_equal(shown.output.pmf_d_prime, fresh.output.pmf_d_prime)
    else:
        np.testing.assert_array_equal(shown.output.density_d, fresh.output.density_d)
        np.testing.assert_array_equal(shown.output.density_d_prime, fresh.output.density_d_prime)
    assert window.compute.pending_views() == ()
