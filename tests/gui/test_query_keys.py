"""The query panel's choices for statistics by group: where the groups come from (a declared
list, every category of the column, selected privately with the rule shown) and the variance and
standard deviation."""

from __future__ import annotations

import pytest

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.partition_selection import selection_rule
from dpexplorer.data import queries as q
from dpexplorer.gui.query_panel import QueryPanel


@pytest.fixture
def panel(qtbot, adult_with_summary):
    widget = QueryPanel()
    qtbot.addWidget(widget)
    widget.set_dataset(*adult_with_summary)
    widget.select_kind("group_mean", "age")
    widget.group1.setCurrentText("education")
    return widget


def _origin(panel: QueryPanel, origin: str) -> None:
    panel.key_origin.setCurrentIndex(panel.key_origin.findData(origin))


def test_private_keys_build_a_private_selection_and_show_its_rule(panel) -> None:
    panel.unit.setCurrentText("(each row is a person)")
    _origin(panel, "private")
    panel.key_epsilon.setValue(0.5)
    panel.key_delta.setCurrentText("1e-7")
    query = panel.build()
    assert isinstance(query, q.GroupBy) and query.keys == ()
    assert query.private == q.PrivateKeys(("education",), 0.5, 1e-7)
    _, _, threshold, delta = selection_rule(0.5, 1e-7, 1)
    assert f"reaches {threshold:,}" in panel.key_rule.text()
    assert f"δ = {delta:.3g}" in panel.key_rule.text()
    assert panel.form.isRowVisible(panel.key_rule) and not panel.form.isRowVisible(panel.group_categories)
    panel.group2.setCurrentText("sex")
    assert panel.build().private.columns == ("education", "sex")  # type: ignore[union-attr]


def test_every_category_of_the_column_is_the_codebook_s_complete_list(panel, adult_with_summary) -> None:
    _origin(panel, "schema")
    dataset, _, codebook = adult_with_summary
    every = sorted(dataset.frame["education"].drop_nulls().unique().to_list())
    query = panel.build()
    assert query.keys[0].categories == codebook.fact("education", "categories").value  # type: ignore[union-attr]
    assert sorted(query.keys[0].categories) == every  # type: ignore[arg-type]  # adult.names' 16 are the data's
    assert panel.group_categories.isReadOnly() and not panel.observed
    # a codebook without the countries: 'all categories' is refused, never the values that occur
    panel.set_codebook(codebook.with_fact("native_country", "categories", None))
    panel.group1.setCurrentText("native_country")
    with pytest.raises(DPExplorerError, match="does not list every category of 'native_country'"):
        panel.build()
    _origin(panel, "declared")
    assert not panel.group_categories.isReadOnly() and panel.group_categories.text() == ""
    assert len(panel.build().keys[0].categories) == 16  # type: ignore[union-attr, arg-type]
    assert panel.observed == {("native_country", "categories")}  # explored with the data's 16: not public


@pytest.mark.parametrize(("kind", "std"), [("variance", False), ("std", True)])
def test_variance_and_standard_deviation_are_offered(panel, kind, std) -> None:
    panel.select_kind(kind, "age")
    panel.lower_bound.setValue(17)
    panel.upper_bound.setValue(90)
    assert panel.build() == q.Variance("age", 17.0, 90.0, std=std)


def test_the_key_choices_survive_a_session(qtbot, panel, adult_with_summary) -> None:
    _origin(panel, "private")
    panel.key_epsilon.setValue(0.3)
    state = panel.state()
    other = QueryPanel()
    qtbot.addWidget(other)
    other.set_dataset(*adult_with_summary)
    other.set_state(state)
    assert other.build() == panel.build()


def test_a_quantile_by_group_is_offered(panel) -> None:
    panel.select_kind("group_quantile", "age")
    panel.lower_bound.setValue(17)
    panel.upper_bound.setValue(90)
    panel.q_value.setValue(0.9)
    query = panel.build()
    assert isinstance(query, q.GroupBy) and (query.statistic, query.q, query.column) == (
        "quantile",
        0.9,
        "age",
    )
    assert panel.form.isRowVisible(panel.q_value)


def test_a_quantile_by_privately_selected_groups_is_built(panel) -> None:
    """The panel's private groups with a quantile: a GroupBy of the quantile with private keys
    (refused by the query itself before issue 16's private-key quantile)."""
    panel.select_kind("group_quantile", "age")
    panel.group1.setCurrentText("education")
    _origin(panel, "private")
    panel.lower_bound.setValue(17)
    panel.upper_bound.setValue(90)
    query = panel.build()
    assert isinstance(query, q.GroupBy) and query.statistic == "quantile" and query.keys == ()
    assert query.private is not None and query.private.columns == ("education",)
    assert panel.form.isRowVisible(panel.key_rule) and panel.form.isRowVisible(panel.q_value)


def test_a_histogram_by_group_is_a_count_by_the_group_and_the_binned_column(panel) -> None:
    """The panel's "Histogram of a column by group": the count by the first group column and the column in
    equal bins over its declared bounds (public edges); no second group, no quantile; private
    groups refused from the panel's choices alone; the choice survives a session."""
    panel.select_kind("group_histogram", "age")
    panel.group1.setCurrentText("sex")
    panel.group_categories.setText("Male, Female")
    panel.lower_bound.setValue(17)
    panel.upper_bound.setValue(90)
    panel.bins.setValue(4)
    query = panel.build()
    assert query == q.GroupBy(
        (q.Axis("sex", categories=("Male", "Female")), q.Axis("age", edges=(17, 35.25, 53.5, 71.75, 90))),
        "count",
    )
    assert "age in 4 bins from 17 to 90" in query.describe()
    assert panel.form.isRowVisible(panel.bins) and panel.form.isRowVisible(panel.group1)
    assert not panel.form.isRowVisible(panel.group2) and not panel.form.isRowVisible(panel.q_value)
    state = panel.state()
    _origin(panel, "private")
    with pytest.raises(DPExplorerError, match="needs declared groups"):
        panel.build()
    panel.set_state(state)
    assert panel.build() == query
