"""Categories from the query panel (issue 19): while a column's categories are not declared, the
views can explore with all its values or the most common N, up to 10,000 (the scale top-k and
the exponential mechanism handle), never declaring them (issue 40: observed, not public); a
column with more values says so and cannot be taken whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from dpexplorer.data.answers import query_input
from dpexplorer.gui import jobs
from dpexplorer.gui.jobs import CATEGORY_LIMIT
from dpexplorer.gui.query_panel import QueryPanel


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> jobs.LoadedDataset:
    """'many': 9,000 values; 'huge': 10,050 values."""
    rng = np.random.default_rng(3)
    many = [f"m{i:05d}" for i in range(9_000)] + [f"m{i:05d}" for i in rng.integers(0, 100, 1_050)]
    huge = [f"h{i:05d}" for i in range(10_050)]
    path = Path(tmp_path_factory.mktemp("categories")) / "many.csv"
    pl.DataFrame({"many": many, "huge": huge}).write_csv(path)
    return jobs.load_dataset(str(path))


def _panel(qtbot, loaded: jobs.LoadedDataset, column: str) -> QueryPanel:  # type: ignore[no-untyped-def]
    panel = QueryPanel()
    qtbot.addWidget(panel)
    panel.set_dataset(loaded.dataset, {"ranges": loaded.ranges, "top_values": loaded.top_values})
    panel.kind.setCurrentIndex(panel.kind.findData("top_k"))
    panel.column.setCurrentText(column)
    return panel


def test_take_all_values_of_a_column(qtbot, loaded) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, loaded, "many")
    assert panel.category_note.text() == "of 9,000 in the data (observed: not public)"
    assert panel.take_all.text() == "Take all 9,000" and panel.take_all.isEnabled()
    with qtbot.waitSignal(panel.changed) as signal:
        panel.take_all.click()
    query = signal.args[0]
    assert query.categories == tuple(loaded.top_values["many"]) and len(query.categories) == 9_000
    assert "(9,000 categories)" in panel.description.text()  # named by their number, not listed
    assert panel.categories.text() == "" and panel.observed == {("many", "categories")}
    assert panel.codebook.fact("many", "categories") is None  # explored, never declared
    selection = query_input(loaded.dataset, query, "add_remove")
    assert len(selection.candidates) == 9_000


def test_type_how_many(qtbot, loaded) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, loaded, "many")
    panel.category_count.setValue(250)
    with qtbot.waitSignal(panel.changed) as signal:
        panel.category_count.editingFinished.emit()
    assert len(signal.args[0].categories) == 250


def test_more_values_than_the_limit_are_refused_clearly(qtbot, loaded) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, loaded, "huge")
    assert not panel.take_all.isEnabled()
    assert f"more than {CATEGORY_LIMIT:,} values" in panel.category_note.text()
    panel.category_count.setValue(CATEGORY_LIMIT)  # the most a number can say
    with qtbot.waitSignal(panel.changed) as signal:
        panel.category_count.editingFinished.emit()
    assert len(signal.args[0].categories) == CATEGORY_LIMIT
    panel.categories.setText(", ".join(loaded.top_values["huge"]))  # 10,001 typed (or pasted)
    panel.emit_query()
    assert panel.error.isVisibleTo(panel) and f"at most {CATEGORY_LIMIT:,} can be" in panel.error.text()


def test_the_neighbours_note_says_the_keys_were_selected_privately(tmp_path) -> None:
    """By private keys the claim is the statistic's epsilon plus the selection's: the view's
    note says where the larger epsilon comes from (it used to credit Laplace's theorem)."""
    import polars as pl

    from dpexplorer.core.mechanisms.registry import get
    from dpexplorer.data.answers import query_input
    from dpexplorer.data.load import load_dataset
    from dpexplorer.data.queries import GroupBy, PrivateKeys
    from dpexplorer.gui.jobs import neighbours

    pl.DataFrame({"g": ["a"] * 40 + ["b"] * 25 + ["c"]}).write_csv(tmp_path / "k.csv")
    query = GroupBy((), "count", private=PrivateKeys(("g",), 0.5, 1e-6))
    built = query_input(load_dataset(tmp_path / "k.csv"), query, "add_remove")
    laplace = get("laplace")
    result = neighbours(laplace, laplace.validate({"epsilon": 1.0}), built)
    assert (result.epsilon, result.delta_claim) == (1.5, 1e-6)
    assert "selected privately at ε = 0.5, δ = 1e-06" in result.claim_note
    assert "theorem" not in result.claim_note
