"""The query panel builds the synthetic-data query (issue 30): the columns on public domains
(the codebook's bins and categories: Adult's shipped codebook by default), every ``ways``-way
marginal, the privacy unit's rows per person; a column the codebook does not describe is
explored on the data's own domain, marked observed (issue 40); bad input is a message, never a
traceback; sessions restore it."""

from __future__ import annotations

import math

import pytest

from dpexplorer.core.marginals import DENSE_LIMIT
from dpexplorer.data import queries as q
from dpexplorer.data.codebook import Fact, shipped_codebook
from dpexplorer.data.default import default_dataset_path
from dpexplorer.gui.query_panel import ADULT_SYNTHETIC_COLUMNS, QueryPanel


def _documented(columns: tuple[str, ...]) -> tuple[q.Axis, ...]:
    """Each column on its domain in Adult's shipped codebook: its edges, else its categories."""
    codebook = shipped_codebook(default_dataset_path())
    assert codebook is not None
    axes = []
    for column in columns:
        edges = codebook.fact(column, "edges")
        if edges is not None:
            axes.append(q.Axis(column, edges=edges.value))
        else:
            axes.append(q.Axis(column, categories=codebook.fact(column, "categories").value))
    return tuple(axes)


@pytest.fixture
def panel(qtbot, adult_with_summary):
    widget = QueryPanel()
    qtbot.addWidget(widget)
    widget.set_dataset(*adult_with_summary)
    widget.select_kind("marginals")
    return widget


def test_the_default_on_adult_is_five_shipped_columns_that_the_dense_estimator_fits(panel, qtbot) -> None:
    with qtbot.waitSignal(panel.changed) as signal:
        panel.ways.setValue(3)
    query, relation = signal.args
    assert query == q.Marginals(_documented(ADULT_SYNTHETIC_COLUMNS), ways=3) and relation == "add_remove"
    assert panel.form.isRowVisible(panel.marginal_columns) and panel.form.isRowVisible(panel.ways)
    assert not panel.form.isRowVisible(panel.column) and not panel.form.isRowVisible(panel.max_groups)
    assert "synthetic table" in panel.description.text()
    cells = math.prod(len(a.categories) + 1 if a.categories else len(a.edges or ()) for a in query.axes)
    assert cells <= DENSE_LIMIT and not panel.observed
    assert "shipped with dpexplorer" in panel.facts.text() and "not declared" not in panel.facts.text()


def test_a_column_the_codebook_lacks_is_explored_on_the_data_s_domain_marked_observed(
    panel, adult_with_summary
) -> None:
    """fnlwgt has no shipped bounds (adult.names documents none): the views explore it in equal
    bins over the data's range, and the panel says so; the codebook's bounds replace them."""
    _, summary, codebook = adult_with_summary
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
    assert query.axes[0] == _documented(("age",))[0]  # the codebook's bins
    assert query.axes[2].categories == codebook.fact("occupation", "categories").value
    low, high = summary["ranges"]["fnlwgt"]
    assert query.axes[1].edges == pytest.approx([low + (high - low) * i / 4 for i in range(5)])
    assert panel.observed == {("fnlwgt", "edges")}
    panel.emit_query()
    assert "the bin edges of fnlwgt</b>: not declared" in panel.facts.text()
    assert "observed: not public" in panel.facts.text()
    assert query.unit == q.PrivacyUnit("education", 1, 3) and query.ways == 2
    # declared bounds: 4 equal bins over them, public
    panel.set_codebook(panel.codebook.with_fact("fnlwgt", "bounds", Fact((0.0, 1.6e6), "declared")))
    assert panel.build().axes[1].edges == (0.0, 4e5, 8e5, 1.2e6, 1.6e6) and not panel.observed


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
    assert "&gt;50K, &lt;=50K" in panel.description.text()  # shown as text, not taken for a tag


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


def test_a_lesson_state_without_columns_keeps_adult_s_shipped_ones(panel) -> None:
    from dpexplorer.gui.lesson_files import QUERY_DEFAULTS

    panel.set_state({**QUERY_DEFAULTS, "kind": "marginals", "ways": 3})
    assert panel.build() == q.Marginals(_documented(ADULT_SYNTHETIC_COLUMNS), ways=3)
