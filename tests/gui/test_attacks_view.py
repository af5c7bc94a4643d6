"""The Attacks tab (issue 45): each page computes through the compute service, differencing on
exact counts recovers the chosen person's value and under Laplace at ε = 1 its posteriors stay
under the e^ε bound; teaching mode hides the truth until Reveal; Lesson 09 walks in teaching
mode at 1280 x 720. Set DPX_LESSON_SHOTS=DIR to save each step's window as a PNG."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from dpexplorer.core.risk import posterior_bound
from tests.gui.conftest import wait_idle
from tests.gui.test_lessons import PROJECTOR, _check_step, _walk_to

TIMEOUT_MS = 120_000


def _page(qtbot, window, page, settings):
    window.tabs.setCurrentWidget(window.attack_views.tab)
    window.attack_views.show_page(page)
    view = window.attack_views.page_view(page)
    view.set_settings(settings)
    qtbot.waitUntil(lambda: window.views_idle() and view.result is not None, timeout=TIMEOUT_MS)
    wait_idle(qtbot, window)
    assert view.error.isHidden(), view.error.text()
    return view


def test_differencing_reveals_the_person_and_laplace_stays_under_the_bound(qtbot, window):
    sexes = window.dataset.frame["sex"].to_numpy()
    for row in (0, int(np.flatnonzero(sexes != sexes[0])[0])):
        view = _page(
            qtbot, window, "differencing", {"row": row, "noise": "exact", "column": "sex", "value": "Female"}
        )
        shown = view.result
        assert shown.result.guess == shown.result.truth == int(sexes[row] == "Female")
        assert shown.result.count_all - shown.result.count_others == shown.result.truth
    view = _page(qtbot, window, "differencing", {"noise": "laplace", "epsilon": 1.0, "prior": 0.5})
    shown = view.result
    bound = posterior_bound(1.0, 0.0, 0.5)
    assert shown.result.bound == bound and shown.posteriors.max() <= bound and shown.result.posterior <= bound
    assert f"{bound:.3f}" in view.summary.text()


def test_teaching_mode_hides_the_truth_until_revealed(qtbot, window):
    view = _page(qtbot, window, "membership", {"noise": "laplace", "epsilon": 1.0, "trials": 2000})
    count = f"{view.result.count:,}"
    assert count in view.summary.text()
    window.teaching_action.setChecked(True)
    assert (
        view.reveal.isVisibleTo(window)
        and count not in view.summary.text()
        and "hidden" in view.summary.text()
    )
    view.reveal.setChecked(True)
    assert count in view.summary.text()
    window.teaching_action.setChecked(False)


def test_reconstruction_runs_in_a_worker_with_progress_and_cancel(qtbot, window):
    progress = []
    window.compute.progress.connect(
        lambda job, f: progress.append(f) if job == "attack reconstruction" else None
    )
    view = _page(qtbot, window, "reconstruction", {"rows": 40, "queries": 80, "noise": "exact"})
    assert view.result.run.recovered == 1.0 and progress and view.columns
    view.set_settings({"rows": 400, "queries": 800, "noise": "bounded", "magnitude": 3.0})
    qtbot.waitUntil(lambda: view.run.running, timeout=TIMEOUT_MS)
    view.run.cancel_button.click()
    qtbot.waitUntil(window.views_idle, timeout=TIMEOUT_MS)
    assert not view.run.running and view.result.run.rows == 40  # nothing new drawn


def test_lesson_09_walks_in_teaching_mode(qtbot, window):
    runner = window.lessons
    number = next(i for i, lesson in enumerate(runner.lessons) if lesson.path.name == "09_why_dp.toml")
    lesson = runner.lessons[number]
    assert any("Why DP" in a.text() for a in runner.menu.actions())
    window.teaching_action.setChecked(True)
    window.resize(PROJECTOR)
    shots = os.environ.get("DPX_LESSON_SHOTS")
    for index in range(len(lesson.steps)):
        _walk_to(
            qtbot,
            window,
            runner,
            (lambda: runner.start(number)) if index == 0 else runner.next_action.trigger,
        )
        _check_step(window, runner, lesson, index)
        page = window.attack_views.tab.currentWidget()
        assert page is window.attack_views.page_view(lesson.steps[index].tab.removeprefix("attack_"))
        assert page.result is not None and page.error.isHidden(), page.error.text()
        page.reveal.setChecked(True)
        assert page.columns, f"step {index + 1} drew nothing"
        if shots:
            window.grab().save(str(Path(shots) / f"why_dp_{index + 1}.png"))
    window.teaching_action.setChecked(False)
