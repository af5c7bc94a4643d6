"""The query panel builds the synthetic-data query (issue 30): the columns on public domains
(Adult's documented bins and categories by default), every ``ways``-way marginal, the privacy
unit's rows per person; bad input is a message, never a traceback; sessions restore it."""

from __future__ import annotations

import math

import pytest

from dpexplorer.core.marginals import DENSE_LIMIT
from dpexplorer.data import queries as q
from dpexplorer.data.marginals import adult_marginals
from dpexplorer.gui.query_panel import ADULT_SYNTHETIC_COLUMNS, QueryPanel


def _documented(columns: tuple[str, ...]) -> tuple[q.Axis, ...]:
    axes = {a.column: a for a in adult_marginals().axes}
    return tuple(axes[c] for c in columns)


@pytest.fixture
def panel(qtbot, adult_with_summary):
    widget = QueryPanel()
    qtbot.addWidget(widget)
    widget.set_dataset(*adult_with_summary)
    widget.select_kind("marginals")
    return widget


def test_the_default_on_adult_is_five_documented_columns_that_the_dense_estimator_fits(panel, qtbot) -> None:
    with qtbot.waitSignal(panel.changed) as signal:
        panel.ways.setValue(3)
    query, relation = signal.args
    assert query == q.Marginals(_documented(ADULT_SYNTHETIC_COLUMNS), ways=3) and relation == "add_remove"
    assert panel.form.isRowVisible(panel.marginal_columns) and panel.form.isRowVisible(panel.ways)
    assert not panel.form.isRowVisible(panel.column) and not panel.form.isRowVisible(panel.max_groups)
    assert "synthetic table" in panel.description.text()
    cells = math.prod(len(a.categories) + 1 if a.categories else len(a.edges or ()) for a in query.axes)
    assert cells == 8568 <= DENSE_LIMIT


def test_other_columns_are_binned_or_take_their_common_values_and_a_unit_bounds_rows(
    panel, adult_with_summary
) -> None:
    _, summary = adult_with_summary
    panel.marginal_columns.setText("age, fnlwgt, occupation")
    panel.bins.setValue(4)
    panel.unit.setCurrentText("education")
    panel.max_rows.setValue(3)
    assert panel.form.isRowVisible(panel.max_rows)
    query = panel.build()
    assert isinstance(query, q.Marginals) and [a.column for a in query.axes] == [
        "age",
        "fnlwgt",
        "occupation",
    ]
    assert query.axes[0] == adult_marginals().axes[0]  # documented bins
    low, high = summary["ranges"]["fnlwgt"]
    assert query.axes[1].edges == pytest.approx([low + (high - low) * i / 4 for i in range(5)])
    assert query.axes[2].categories == tuple(summary["top_values"]["occupation"][:16])
    assert query.unit == q.PrivacyUnit("education", 1, 3) and query.ways == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [("age", "at least two columns"), ("age, nonsense", "no column 'nonsense'"), ("", "at least two")],
)
def test_bad_columns_are_a_message(panel, text: str, message: str) -> None:
    panel.marginal_columns.setText(text)
    panel.emit_query()
    assert message in panel.error.text() and not panel.error.isHidden()


def test_sessions_restore_the_marginals_query(panel, qtbot, adult_with_summary) -> None:
    panel.marginal_columns.setText("sex, race, income")
    panel.ways.setValue(1)
    state = panel.state()
    other = QueryPanel()
    qtbot.addWidget(other)
    other.set_dataset(*adult_with_summary)
    other.set_state(state)
    assert other.build() == panel.build() and other.current_kind() == "marginals"


def test_the_description_shows_declared_categories_with_angle_brackets(panel) -> None:
    panel.marginal_columns.setText("sex, income")
    panel.emit_query()
    assert "&lt;=50K, &gt;50K" in panel.description.text()  # shown as text, not taken for a tag


def test_the_window_runs_mst_on_a_marginals_query_without_a_traceback(qtbot, window) -> None:
    """pytest-qt fails the test on an exception in a slot (the error-against-k view read a
    marginals query's cliques as a matrix)."""
    from tests.gui.conftest import wait_idle

    window.query_panel.select_kind("marginals")
    window.query_panel.marginal_columns.setText("age, sex, income")
    window.query_panel.emit_query()
    qtbot.waitUntil(lambda: [m.name for m in window.mechanism_panel.mechanisms] == ["mst", "aim"])
    window.mechanism_panel.select("mst")
    wait_idle(qtbot, window)
    assert window.query_panel.error.isHidden()


def test_a_lesson_state_without_columns_keeps_adult_s_documented_ones(panel) -> None:
    from dpexplorer.gui.lesson_files import QUERY_DEFAULTS

    panel.set_state({**QUERY_DEFAULTS, "kind": "marginals", "ways": 3})
    assert panel.build() == q.Marginals(_documented(ADULT_SYNTHETIC_COLUMNS), ways=3)
