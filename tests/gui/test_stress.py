"""Stress: 2,000 random parameter, query and mechanism changes as fast as the event loop takes
them, then the window is idle within 10 s and its views equal a fresh computation at the final
state (no stale result, no job left behind).

Query kinds whose every mechanism answers in well under a second are used (the workload
mechanisms' worst parameters take seconds by design; their cancellation is tested in
test_cancel.py), so that "idle within 10 s" measures the window, not a slow exact view."""

from __future__ import annotations

import random
import time

import numpy as np
from conftest import wait_idle
from PySide6.QtCore import QCoreApplication

from dpexplorer.core.mechanisms.base import CategoricalOutput
from dpexplorer.gui import jobs
from dpexplorer.gui.param_controls import NumberControl

CHANGES = 2_000
BUDGET_S = 60.0
IDLE_S = 10.0
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
    start = time.monotonic()
    for _ in range(CHANGES):
        _random_change(window, chooser)
        QCoreApplication.processEvents()
    elapsed = time.monotonic() - start
    assert elapsed < BUDGET_S, f"{CHANGES} changes took {elapsed:.1f} s"
    settle = time.monotonic()
    qtbot.waitUntil(window.views_idle, timeout=int(IDLE_S * 1000))
    assert time.monotonic() - settle < IDLE_S
    wait_idle(qtbot, window)

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
