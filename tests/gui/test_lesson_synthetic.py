"""Lesson 08 (issue 30, deliverable 5): BLR, MWEM and AIM on the same query set (the one- and
two-way marginals of sex and income), then AIM on five columns of Adult, with the pages of the
synthetic-data view as steps. The whole walk in the window, and the mechanisms' parameters
against the registry, are tests/gui/test_lessons.py's."""

from __future__ import annotations

from dpexplorer.gui.lesson_files import LESSONS_DIR, PAGES, TABS, load_lesson
from dpexplorer.gui.views.synthetic import MarginalErrorView


def test_the_lesson_goes_from_blr_to_mwem_to_aim_on_the_same_cells_then_adult(qtbot) -> None:
    lesson = load_lesson(LESSONS_DIR / "08_blr_to_aim.toml")
    steps = lesson.steps
    assert [s.mechanism for s in steps[:3]] == ["blr", "mwem", "aim"]
    # the same query set: the workload of sex and income, then the marginals of the same columns
    assert {steps[0].query["column"], steps[0].query["column2"]} == {"sex", "income"}
    assert steps[1].query == steps[0].query
    assert steps[2].query["kind"] == "marginals" and steps[2].query["marginal_columns"] == "sex, income"
    adult = [
        s for s in steps if s.query["kind"] == "marginals" and s.query["marginal_columns"] != "sex, income"
    ]
    assert adult and adult[0].mechanism == "aim"
    assert len(adult[0].query["marginal_columns"].split(",")) == 5
    assert {"synthetic_curve", "synthetic_rounds", "synthetic_picker"} <= {s.tab for s in steps}
    # every page a lesson may name is a page of the synthetic-data view
    view = MarginalErrorView()
    qtbot.addWidget(view)
    for tab, page in PAGES.items():
        assert tab in TABS and view.pages.indexOf(getattr(view, page)) >= 0
