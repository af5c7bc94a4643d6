"""The query panel's statistics by group: the keys, where the groups come from (a declared list,
every category of the column as public knowledge, or selected privately with a noisy threshold at
its own ε and δ) and the privacy unit with its contribution bounds; and the group-by query they
describe. A mixin of :class:`dpexplorer.gui.query_panel.QueryPanel`, which owns the dataset, the
codebook the groups are declared in (:mod:`dpexplorer.gui.query_declared`) and emits the query."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QLabel, QLineEdit, QSpinBox, QWidget

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.data import queries as q
from dpexplorer.gui.query_facts import categories_of, complete_categories_of
from dpexplorer.gui.query_widgets import HeadFirstLineEdit, number_box, shortened

if TYPE_CHECKING:
    from dpexplorer.data.codebook import Codebook
    from dpexplorer.data.load import Dataset

GROUP_KINDS = {
    "group_count": "count",
    "group_sum": "sum",
    "group_mean": "mean",
    "group_quantile": "quantile",
    "group_histogram": "count",
}
"""Statistic by group -> its statistic (a histogram by group: a count by the group and the
column binned over its declared bounds)."""
EACH_ROW = "(each row is a person)"
KEY_ORIGINS = {
    "declared": "a list I declare",
    "schema": "all categories of the column (the codebook's complete list)",
    "private": "selected privately (noisy threshold)",
}
KEY_DELTAS = ("1e-5", "1e-6", "1e-7", "1e-8", "1e-9")
MAX_CATEGORIES = 16
"""How many of a column's commonest values a query explores with while its categories are not
declared (observed: not public)."""


class GroupControls:
    """The widgets and the query of the statistics by group (see the module's docstring)."""

    # the panel's: its dataset, the columns' kinds, the codebook and the data's commonest values
    # (exploration only)
    dataset: Dataset | None
    kinds: dict[str, str]
    top_values: dict[str, list[str]]
    codebook: Codebook
    categories_for: Callable[[str, QLineEdit | None, int], tuple[Any, ...]]  # DeclaredFacts'

    def emit_query(self) -> None:
        raise NotImplementedError  # the panel's

    def _update_visibility(self) -> None:
        raise NotImplementedError  # the panel's

    def _group_widgets(self) -> None:
        """Keys and privacy unit of the statistics by group."""
        self.group1 = shortened(QComboBox())
        self.group2 = shortened(QComboBox())
        self.group_categories = HeadFirstLineEdit()
        self.group_categories.setToolTip(
            "The groups of the first key, declared (public) and separated by commas: every one is "
            "released, empty or not; rows with any other value form the group 'other'. They are "
            "the codebook's categories of the column, and typing them here declares them there; "
            "never taken from the data (while none are declared the views explore with its most "
            "common values, observed: not public, and Release is refused)."
        )
        self.group2.setToolTip("A second key (optional): its categories in the codebook, plus '(any other)'")
        self.unit = shortened(QComboBox())
        self.unit.setToolTip(
            "The privacy unit: the column that identifies a person (or household, patient...). "
            "All of a person's rows are protected together; their contribution is bounded first."
        )
        self.max_groups = number_box(
            QSpinBox(),
            1,
            10_000,
            tooltip="Groups per person: a person with rows in more groups keeps this many, chosen "
            "at random. Larger keeps more data (less bias) but multiplies the noise.",
        )
        self.max_rows = number_box(
            QSpinBox(),
            1,
            10_000,
            tooltip="Rows per person in each group: extra rows are dropped at random. Larger keeps "
            "more data (less bias) but multiplies the noise.",
        )
        self._key_widgets()

    def _key_widgets(self) -> None:
        """Where the groups come from: declared, every category of the column (declared public
        knowledge), or selected privately with a noisy threshold (its own epsilon and delta)."""
        self.key_origin = shortened(QComboBox())
        for key, text in KEY_ORIGINS.items():
            self.key_origin.addItem(text, key)
        self.key_origin.setToolTip(
            "Which groups are released. Declared groups are public: every one is released, "
            "empty or not. 'All categories' takes the codebook's complete list of the column's "
            "categories (a code list, a survey's documented answers). Otherwise select the groups "
            "privately: a group is "
            "released only if its noisy number of persons passes a threshold, at an extra "
            "(ε, δ) charged with the statistic."
        )
        self.key_epsilon = number_box(
            QDoubleSpinBox(),
            0.01,
            10.0,
            0.5,
            step=0.1,
            tooltip="ε spent on choosing the groups (on top of the statistic's)",
        )
        self.key_delta = QComboBox()
        self.key_delta.addItems(KEY_DELTAS)
        self.key_delta.setCurrentText("1e-6")
        self.key_delta.setToolTip(
            "δ of the group selection: an upper bound on the chance that a group held by one "
            "person alone is released. Keep it well below 1 / (number of persons)."
        )
        self.key_rule = QLabel()
        self.key_rule.setWordWrap(True)

    def _group_changed(self) -> None:
        column, origin = self.group1.currentText(), self.key_origin.currentData()
        self.group_categories.setReadOnly(origin == "schema")
        every = self.all_categories(column) if origin == "schema" else None
        declared = every if every is not None else categories_of(self.codebook, column)
        self.group_categories.setText(", ".join(declared or ()))
        self._update_visibility()
        self.emit_query()

    def all_categories(self, column: str) -> list[str] | None:
        """Every category of ``column``: the codebook's list of them when it says the list is
        complete; None otherwise (never the values that occur in the data)."""
        every = complete_categories_of(self.codebook, column)
        return None if every is None else list(every)

    def has_unit(self) -> bool:
        """Whether a column identifies a person (else each row is one)."""
        return self.unit.currentText() not in ("", EACH_ROW)

    def privacy_unit(self, max_groups: int) -> q.PrivacyUnit | None:
        """The chosen privacy unit, a person keeping at most ``max_groups`` groups and the rows
        per group typed; None when each row is a person."""
        if not self.has_unit():
            return None
        return q.PrivacyUnit(self.unit.currentText(), max_groups, self.max_rows.value())

    def group_visibility(self, kind: str) -> dict[QWidget, bool]:
        """Which group-by controls the statistic ``kind`` shows (the marginals' query keeps a
        privacy unit and its rows per person: one group, the table)."""
        grouped = kind in GROUP_KINDS
        private = self.key_origin.currentData() == "private"
        bounded = self.has_unit()
        show: dict[QWidget, bool] = {
            self.group1: grouped,
            self.group2: grouped and kind != "group_histogram",  # its second key: the binned column
            self.key_origin: grouped,
            self.unit: grouped or kind == "marginals",
            self.group_categories: grouped and not private,
            self.max_groups: grouped and bounded,
            self.max_rows: (grouped or kind == "marginals") and bounded,
        }
        for widget in (self.key_epsilon, self.key_delta, self.key_rule):
            show[widget] = grouped and private
        return show

    def _group_by(self, statistic: str, column: str, low: float, high: float, quantile: float) -> q.GroupBy:
        """The statistic by the groups (declared, every category, or selected privately), with
        the privacy unit if one is chosen."""
        first, second = self.group1.currentText(), self.group2.currentText()
        columns = [first] + ([second] if second not in ("(none)", first, "") else [])
        unit = self.privacy_unit(self.max_groups.value())
        origin = self.key_origin.currentData()
        keys: list[q.Axis] = []
        private = None
        if origin == "private":
            private = q.PrivateKeys(
                tuple(columns), round(self.key_epsilon.value(), 4), float(self.key_delta.currentText())
            )
            self.key_rule.setText(self._selection_rule(private, unit))
        else:
            if origin == "schema" and self.all_categories(first) is None:
                raise DPExplorerError(
                    f"the codebook does not list every category of {first!r}: declare the groups, "
                    "mark the codebook's list complete, or select the groups privately"
                )
            keys.append(
                q.Axis(first, categories=self.categories_for(first, self.group_categories, MAX_CATEGORIES))
            )
            if len(columns) == 2:
                every = self.all_categories(second) if origin == "schema" else None
                values = (
                    tuple(every) if every is not None else self.categories_for(second, None, MAX_CATEGORIES)
                )
                keys.append(q.Axis(second, categories=values))
        if statistic == "count":
            return q.GroupBy(tuple(keys), "count", unit=unit, private=private)
        return q.GroupBy(tuple(keys), statistic, column, low, high, unit, private, quantile)

    def _group_histogram(self, binned: q.Axis) -> q.GroupBy:
        """A histogram by group: the count by two keys, the first group column and the column
        ``binned`` over its declared bounds (public edges; values outside fall in the first or
        last bin)."""
        if self.key_origin.currentData() == "private":
            raise DPExplorerError(
                "a histogram by group needs declared groups (a list, or all categories of the "
                "column): privately selected groups are available for a count, sum, mean or quantile"
            )
        by = self._group_by("count", binned.column, 0.0, 1.0, 0.5)
        return q.GroupBy((by.keys[0], binned), "count", unit=by.unit)

    @staticmethod
    def _selection_rule(private: q.PrivateKeys, unit: q.PrivacyUnit | None) -> str:
        """The selection's public rule in words: threshold and exact delta (from the declared
        epsilon, delta and groups per person only: core.partition_selection.selection_rule)."""
        from dpexplorer.core.partition_selection import selection_rule

        k = unit.max_groups if unit is not None else 1
        _, _, threshold, delta = selection_rule(private.epsilon, private.delta, k)
        return (
            f"A group is released if its noisy number of persons reaches {threshold:,}; exact "
            f"δ = {delta:.3g} (at most {private.delta:g}), ε = {private.epsilon:g} on top of the "
            "statistic's. Which groups pass is itself a private output."
        )
