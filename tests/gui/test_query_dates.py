"""A date column in the window: the Data tab shows its first and last day; in the query panel's
conditions the value field asks for YYYY-MM-DD, and the condition built compares it as dates."""

from __future__ import annotations

import pytest

from dpexplorer.data import queries as q
from dpexplorer.data.answers import true_answer
from dpexplorer.data.load import load_dataset
from dpexplorer.gui.query_panel import QueryPanel


@pytest.fixture
def panel(qtbot, tmp_path):
    path = tmp_path / "visits.csv"
    path.write_text("day,ward\n2021-03-01,a\n2021-12-01,b\n,a\n2020-06-30,b\n")
    dataset = load_dataset(path)
    widget = QueryPanel()
    qtbot.addWidget(widget)
    widget.set_dataset(dataset)
    widget.select_kind("predicate_count")
    return widget, dataset


def test_a_date_condition_asks_for_a_date_and_compares_dates(panel) -> None:
    widget, dataset = panel
    row = widget.conditions[0]
    row.column.setCurrentText("ward")
    assert row.value.placeholderText() == "value"
    row.column.setCurrentText("day")
    assert row.value.placeholderText() == "YYYY-MM-DD"
    row.op.setCurrentText(">=")
    row.value.setText("2021-03-01")
    query = widget.build()
    assert isinstance(query, q.PredicateCount)
    assert query.predicate == q.Compare("day", ">=", "2021-03-01")
    assert true_answer(dataset, query) == 2


def test_the_data_tab_shows_a_date_column_with_its_first_and_last_day(qtbot, panel) -> None:
    from dpexplorer.gui.dataset_view import DatasetView

    view = DatasetView()
    qtbot.addWidget(view)
    view.show_dataset(panel[1])
    assert view.schema.item(0, 1).text() == "date, 2020-06-30 to 2021-12-01"
    assert view.schema.item(1, 1).text() == "categorical"


def test_a_long_condition_value_shows_its_start_when_not_being_edited(qtbot, panel) -> None:
    """A value wider than its field (Adult's default 'Amer-Indian-Eskimo') showed its tail,
    'dian-Eskimo', because QLineEdit leaves the view at the cursor, at the end. The view scrolls
    when the field paints, so each check paints it first (grab)."""
    widget, _ = panel
    widget.resize(360, 400)
    widget.show()
    qtbot.waitExposed(widget)
    field = widget.conditions[0].value
    long_value = "Amer-Indian-Eskimo-and-more-words-than-fit"
    assert field.fontMetrics().horizontalAdvance(long_value) > 2 * field.width()

    def first_character_in_view() -> bool:
        field.grab()
        return field.cursorPosition() == 0 and field.cursorRect().left() <= field.contentsRect().left() + 8

    field.setText(long_value)
    assert first_character_in_view()
    widget.activateWindow()
    field.setFocus()
    qtbot.waitUntil(field.hasFocus)
    field.end(False)  # while it has the focus, the view follows the cursor as usual
    field.grab()
    assert field.contentsRect().left() < field.cursorRect().center().x() <= field.contentsRect().right()
    field.clearFocus()
    assert not field.hasFocus() and first_character_in_view()
