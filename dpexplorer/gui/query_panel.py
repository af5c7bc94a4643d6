"""The query builder: the data layer's queries, put together through widgets (no text is
ever evaluated). Bounds and categories are declared by the steward; the prefill from the data
is labelled as such, since bounds taken from the data are themselves not private."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import polars as pl
from PySide6.QtCore import QEvent, QSize, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QStyle,
    QStyleOptionComboBox,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.data import queries as q
from dpexplorer.gui import palette
from dpexplorer.gui.jobs import CATEGORY_LIMIT

if TYPE_CHECKING:
    from dpexplorer.data.load import Dataset

QUERY_KINDS: dict[str, str] = {
    "count": "Count of rows",
    "predicate_count": "Count of rows where…",
    "sum": "Sum of a column",
    "mean": "Mean of a column",
    "median": "Median of a column",
    "quantile": "Quantile of a column",
    "trimmed_mean": "Trimmed mean of a column",
    "variance": "Variance of a column",
    "std": "Standard deviation of a column",
    "histogram": "Histogram of a column",
    "argmax": "Most common category",
    "top_k": "Top-k categories",
    "workload": "Workload: marginals of columns (BLR, PMW)",
    "marginals": "Synthetic data: marginals of columns (MST, AIM)",
    "group_count": "Count by group",
    "group_sum": "Sum of a column by group",
    "group_mean": "Mean of a column by group",
    "group_quantile": "Quantile of a column by group",
    "group_histogram": "Histogram of a column by group",
}
GROUP_KINDS = {
    "group_count": "count",
    "group_sum": "sum",
    "group_mean": "mean",
    "group_quantile": "quantile",
    "group_histogram": "count",
}
"""Statistic by group -> its statistic (a histogram by group: a count by the group and the
column binned over its declared bounds)."""
NUMERIC_KINDS = {
    "sum",
    "mean",
    "median",
    "quantile",
    "trimmed_mean",
    "variance",
    "std",
    "group_sum",
    "group_mean",
    "group_quantile",
    "group_histogram",
}
EACH_ROW = "(each row is a person)"
KEY_ORIGINS = {
    "declared": "a list I declare",
    "schema": "all categories of the column (public knowledge)",
    "private": "selected privately (noisy threshold)",
}
KEY_DELTAS = ("1e-5", "1e-6", "1e-7", "1e-8", "1e-9")
CATEGORY_KINDS = {"argmax", "top_k"}
RELATIONS = {
    "add_remove": "add or remove one person",
    "replace": "replace one person's row",
}
OPS = ("==", "!=", "<", "<=", ">", ">=")
VALUE_WIDTH_TEXT = "YYYY-MM-DD"
"""A condition's value field is at least this wide (the date hint), at the current font."""
SHORT_COMBO_CHARACTERS = 12
"""Characters a long combo (statistic, groups, privacy unit, column) shows at least: narrower
than its longest item, whose text it then elides (its list shows every item whole), so that
teaching mode's font does not push the controls past the side panel at 1280 x 720."""
MAX_CATEGORIES = 16
ADULT_SYNTHETIC_COLUMNS = ("age", "education", "sex", "hours_per_week", "income")
"""The synthetic-data query's default columns on Adult (with their documented bins and
categories): 8,568 cells, so the dense estimator fits them in about a second (all 8 documented
columns need Private-PGM on JAX: minutes)."""
"""How many of a column's commonest values the categories are prefilled with."""


class WholeCombo(QComboBox):
    """A combo box never narrower than its longest item at its current font (never elided).
    QComboBox's own minimum stays the one of its first show: after teaching mode enlarged the
    font, '==' showed as '=:' and 'add or remove one person' lost its last letters."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model().rowsInserted.connect(self._fit)
        self.model().rowsRemoved.connect(self._fit)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit()

    def _fit(self) -> None:
        metrics = self.fontMetrics()
        text = max((metrics.horizontalAdvance(self.itemText(i)) for i in range(self.count())), default=0)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        size = self.style().sizeFromContents(
            QStyle.ContentsType.CT_ComboBox, option, QSize(text, metrics.height()), self
        )
        self.setMinimumWidth(size.width())


def _shortened(combo: QComboBox, characters: int = SHORT_COMBO_CHARACTERS) -> QComboBox:
    """``combo``, asking for room for ``characters`` characters rather than its longest item."""
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(characters)
    return combo


def _number(text: str) -> Any:
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() and "." not in text else value


class ConditionRow(QWidget):
    """``[not] column op value`` for the predicate builder. The operator is never elided (at
    teaching mode's font in a narrow panel '==' showed as '=:') and the value field is at least
    as wide as a date at the current font; the column's name gives way first."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.negate = QCheckBox("not")
        self.column = _shortened(QComboBox(), 8)
        self.op = WholeCombo()
        self.op.addItems(OPS)
        self.value = QLineEdit()
        for widget, name in ((self.negate, "Condition: not"), (self.column, "Condition column")):
            widget.setAccessibleName(name)
        self.op.setAccessibleName("Condition operator")
        self.value.setAccessibleName("Condition value")
        self._fit_value()
        self.kinds: dict[str, str] = {}
        self.column.currentTextChanged.connect(self._hint)
        self._hint()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for w, stretch in ((self.negate, 0), (self.column, 1), (self.op, 0), (self.value, 2)):
            layout.addWidget(w, stretch)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.FontChange:  # teaching mode enlarges the font
            self._fit_value()
        super().changeEvent(event)

    def _fit_value(self) -> None:
        margins = self.value.textMargins()
        frame = 2 * self.value.style().pixelMetric(self.value.style().PixelMetric.PM_DefaultFrameWidth)
        text = self.value.fontMetrics().horizontalAdvance(VALUE_WIDTH_TEXT)
        # + 8: QLineEdit's own 2 px inner margin on each side, and a little air
        self.value.setMinimumWidth(text + margins.left() + margins.right() + frame + 8)

    def set_columns(self, kinds: dict[str, str]) -> None:
        """Offer the columns of ``kinds`` (name -> kind), without emitting a change."""
        self.kinds = kinds
        self.column.blockSignals(True)
        self.column.clear()
        self.column.addItems(list(kinds))
        self.column.blockSignals(False)
        self._hint()

    def _hint(self) -> None:
        """A date column is compared as dates, written year-month-day: say so in the field."""
        if self.kinds.get(self.column.currentText()) == "date":
            self.value.setPlaceholderText("YYYY-MM-DD")
            self.value.setToolTip("A date written year-month-day, e.g. 2021-03-01 (compared as dates)")
        else:
            self.value.setPlaceholderText("value")
            self.value.setToolTip("A number, or text compared as is (no quotes needed)")

    def predicate(self, kinds: dict[str, str]) -> q.Predicate | None:
        text = self.value.text().strip()
        if not text:
            return None
        column = self.column.currentText()
        value = _number(text) if kinds.get(column) == "numeric" else text
        pred: q.Predicate = q.Compare(column, self.op.currentText(), value)  # type: ignore[arg-type]
        return q.Not(pred) if self.negate.isChecked() else pred


class QueryPanel(QGroupBox):
    """Emits ``changed(query, relation)`` for every valid query the user builds."""

    changed = Signal(object, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Query", parent)
        self.dataset: Dataset | None = None
        self.kinds: dict[str, str] = {}
        self.ranges: dict[str, tuple[float, float]] = {}
        self.top_values: dict[str, list[str]] = {}
        self.kind = _shortened(QComboBox())
        for key, text in QUERY_KINDS.items():
            self.kind.addItem(text, key)
        self.column = _shortened(QComboBox())
        self.columns2 = _shortened(QComboBox())
        self.columns2.setToolTip("Second column of the workload's universe (optional)")
        self.lower_bound = QDoubleSpinBox()
        self.upper_bound = QDoubleSpinBox()
        for box in (self.lower_bound, self.upper_bound):
            box.setRange(-1e12, 1e12)
            box.setDecimals(3)
            box.setToolTip(
                "Declared bounds: values are clipped to [lower, upper] before the statistic, "
                "and the sensitivity follows from them. Choose them from what you know about "
                "the column, not from the data: the prefill is the data's own range, which is "
                "itself not private."
            )
        self.q_value = QDoubleSpinBox()
        self.q_value.setRange(0.01, 1.0)
        self.q_value.setSingleStep(0.05)
        self.q_value.setValue(0.5)
        self.trim = QDoubleSpinBox()
        self.trim.setRange(0.0, 0.49)
        self.trim.setSingleStep(0.05)
        self.trim.setValue(0.1)
        self.k = QSpinBox()
        self.k.setRange(1, 100)  # top-k reports up to 100 (the mechanism's own k declaration)
        self.k.setValue(3)
        self.bins = QSpinBox()
        self.bins.setRange(2, 64)
        self.bins.setValue(8)
        self.bins.setToolTip(
            "Equal bins over the declared bounds (public edges); values outside the bounds fall "
            "in the first or last bin, missing values in a cell of their own."
        )
        self.categories = QLineEdit()
        self.categories.setToolTip(
            "Declared categories, separated by commas. Rows with any other value count as "
            "'other'. The prefill lists the most common values in the data (not private)."
        )
        self.categories.setMaxLength(2**24)  # 10,000 values (Qt's default stops at 32,767 characters)
        self.category_count = QSpinBox()
        self.category_count.setRange(1, CATEGORY_LIMIT)
        self.category_count.setValue(MAX_CATEGORIES)
        self.category_count.setToolTip(
            f"Declare this many of the column's most common values (up to {CATEGORY_LIMIT:,}); "
            "type a number, or take them all."
        )
        self.take_all = QPushButton("Take all")
        self.take_all.clicked.connect(self._take_all_categories)
        self.category_note = QLabel()
        self.category_note.setWordWrap(True)  # beside the count and the button at teaching fonts
        self.marginal_columns = QLineEdit()
        self.marginal_columns.setToolTip(
            "The synthetic table's columns, separated by commas. Numeric columns are cut into "
            "'Bins' equal bins over the data's range (prefill: not private; on Adult, documented "
            "public bins), other columns keep their most common values plus 'other' (on Adult, "
            "the documented categories)."
        )
        self.ways = QSpinBox()
        self.ways.setRange(1, 3)
        self.ways.setValue(2)
        self.ways.setToolTip("The workload: every 1-, 2- or 3-way marginal of the columns")
        self._group_widgets()
        self.conditions = [ConditionRow(), ConditionRow()]
        self.joiner = QComboBox()
        self.joiner.addItems(["and", "or"])
        self.relation = WholeCombo()
        for key, text in RELATIONS.items():
            self.relation.addItem(text, key)
        self.relation.setToolTip(
            "Neighbouring datasets D and D' differ in one person: either one person is added "
            "or removed (unbounded DP), or one person's row is replaced (bounded DP)."
        )
        self.description = QLabel()
        self.description.setWordWrap(True)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet(f"color: {palette.css(palette.ERROR_TEXT)};")
        self._layout()
        self._connect()
        self._update_visibility()

    def _group_widgets(self) -> None:
        """Keys and privacy unit of the statistics by group."""
        self.group1 = _shortened(QComboBox())
        self.group2 = _shortened(QComboBox())
        self.group_categories = QLineEdit()
        self.group_categories.setToolTip(
            "The groups of the first key, declared (public) and separated by commas: every one is "
            "released, empty or not; rows with any other value form the group 'other'. The "
            "prefill lists the most common values in the data (not private)."
        )
        self.group2.setToolTip("A second key (optional): its most common values, plus 'other'")
        self.unit = _shortened(QComboBox())
        self.unit.setToolTip(
            "The privacy unit: the column that identifies a person (or household, patient...). "
            "All of a person's rows are protected together; their contribution is bounded first."
        )
        self.max_groups = QSpinBox()
        self.max_groups.setRange(1, 10_000)
        self.max_groups.setToolTip(
            "Groups per person: a person with rows in more groups keeps this many, chosen at "
            "random. Larger keeps more data (less bias) but multiplies the noise."
        )
        self.max_rows = QSpinBox()
        self.max_rows.setRange(1, 10_000)
        self.max_rows.setToolTip(
            "Rows per person in each group: extra rows are dropped at random. Larger keeps more "
            "data (less bias) but multiplies the noise."
        )
        self._key_widgets()

    def _key_widgets(self) -> None:
        """Where the groups come from: declared, every category of the column (declared public
        knowledge), or selected privately with a noisy threshold (its own epsilon and delta)."""
        self.key_origin = _shortened(QComboBox())
        for key, text in KEY_ORIGINS.items():
            self.key_origin.addItem(text, key)
        self.key_origin.setToolTip(
            "Which groups are released. Declared groups are public: every one is released, "
            "empty or not. 'All categories' declares every category of the column public "
            "knowledge (a code list, a survey's documented answers): choose it only if the list "
            "is known without the data. Otherwise select the groups privately: a group is "
            "released only if its noisy number of persons passes a threshold, at an extra "
            "(ε, δ) charged with the statistic."
        )
        self.key_epsilon = QDoubleSpinBox()
        self.key_epsilon.setRange(0.01, 10.0)
        self.key_epsilon.setSingleStep(0.1)
        self.key_epsilon.setValue(0.5)
        self.key_epsilon.setToolTip("ε spent on choosing the groups (on top of the statistic's)")
        self.key_delta = QComboBox()
        self.key_delta.addItems(KEY_DELTAS)
        self.key_delta.setCurrentText("1e-6")
        self.key_delta.setToolTip(
            "δ of the group selection: an upper bound on the chance that a group held by one "
            "person alone is released. Keep it well below 1 / (number of persons)."
        )
        self.key_rule = QLabel()
        self.key_rule.setWordWrap(True)

    def _layout(self) -> None:
        self.form = QFormLayout()
        self.form.addRow("Statistic", self.kind)
        self.form.addRow("Column", self.column)
        self.form.addRow("Second column", self.columns2)
        self.form.addRow("Columns", self.marginal_columns)
        self.form.addRow("Marginals of", self.ways)
        self.form.addRow("Lower bound", self.lower_bound)
        self.form.addRow("Upper bound", self.upper_bound)
        self.form.addRow("Quantile q", self.q_value)
        self.form.addRow("Trimmed fraction", self.trim)
        self.form.addRow("k", self.k)
        self.form.addRow("Bins", self.bins)
        self.form.addRow("Categories", self.categories)
        self.category_row = QWidget()
        row = QHBoxLayout(self.category_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("the most common"))
        row.addWidget(self.category_count)
        row.addWidget(self.take_all)
        row.addWidget(self.category_note, 1)
        self.form.addRow(self.category_row)  # across the panel: beside no name it fits teaching fonts
        self.form.addRow("Group by", self.group1)
        self.form.addRow("and by", self.group2)
        self.form.addRow("Groups", self.key_origin)
        self.form.addRow("Declared groups", self.group_categories)
        self.form.addRow("Selection ε", self.key_epsilon)
        self.form.addRow("Selection δ", self.key_delta)
        self.form.addRow(self.key_rule)  # across the panel: the form under-counts a wrapped field
        self.form.addRow("Privacy unit", self.unit)
        self.form.addRow("Groups per person", self.max_groups)
        self.form.addRow("Rows per person, per group", self.max_rows)
        self.form.addRow("Join conditions with", self.joiner)
        # each condition on a line of its own under its name, across the panel: beside its name
        # the four fields did not fit at teaching mode's font (the operator and value were cut)
        self.condition_labels = [QLabel(f"Condition {i + 1}") for i in range(len(self.conditions))]
        for label, condition in zip(self.condition_labels, self.conditions, strict=True):
            self.form.addRow(label)
            self.form.addRow(condition)
        self.form.addRow("Neighbours", self.relation)
        layout = QVBoxLayout(self)
        layout.addLayout(self.form)
        layout.addWidget(self.description)
        layout.addWidget(self.error)

    def _connect(self) -> None:
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.column.currentTextChanged.connect(self._column_changed)
        for signal in (
            self.columns2.currentTextChanged,
            self.relation.currentIndexChanged,
            self.joiner.currentIndexChanged,
            self.lower_bound.editingFinished,
            self.upper_bound.editingFinished,
            self.q_value.valueChanged,
            self.trim.valueChanged,
            self.k.valueChanged,
            self.bins.valueChanged,
            self.categories.editingFinished,
            self.group2.currentTextChanged,
            self.group_categories.editingFinished,
            self.unit.currentTextChanged,
            self.max_groups.valueChanged,
            self.max_rows.valueChanged,
            self.key_epsilon.valueChanged,
            self.key_delta.currentIndexChanged,
            self.marginal_columns.editingFinished,
            self.ways.valueChanged,
        ):
            signal.connect(self.emit_query)
        self.group1.currentTextChanged.connect(self._group_changed)
        self.key_origin.currentIndexChanged.connect(self._group_changed)
        self.category_count.editingFinished.connect(self._category_count_changed)
        self.unit.currentTextChanged.connect(self._update_visibility)
        for row in self.conditions:
            row.value.editingFinished.connect(self.emit_query)
            row.op.currentIndexChanged.connect(self.emit_query)
            row.column.currentIndexChanged.connect(self.emit_query)
            row.negate.toggled.connect(self.emit_query)

    # ------------------------------------------------------------------ dataset
    def set_dataset(self, dataset: Dataset, summary: dict[str, Any] | None = None) -> None:
        """Offer the dataset's columns; ``summary`` holds prefill ranges and common values."""
        self.dataset = dataset
        self.kinds = {c.name: c.kind for c in dataset.columns}
        summary = summary or {}
        self.ranges = summary.get("ranges", {})
        self.top_values = summary.get("top_values", {})
        for row in self.conditions:
            row.set_columns(self.kinds)
        categorical = [c for c, k in self.kinds.items() if k != "numeric"]
        for combo, items in (
            (self.group1, categorical),
            (self.group2, ["(none)", *categorical]),
            (self.unit, [EACH_ROW, *self.kinds]),
        ):
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(items)
            combo.blockSignals(False)
        self.marginal_columns.setText(", ".join(self._default_marginal_columns()))
        self._group_changed()
        self._kind_changed()

    def preset_default_example(self) -> None:
        """On the bundled Adult data: a small group where noise visibly matters (55 people)."""
        self.select_kind("predicate_count")
        for row, (column, value) in zip(
            self.conditions, (("race", "Amer-Indian-Eskimo"), ("income", ">50K")), strict=True
        ):
            row.column.setCurrentText(column)
            row.op.setCurrentText("==")
            row.value.setText(value)
        self.emit_query()

    def state(self) -> dict[str, Any]:
        """Every control's value, JSON-safe (for sessions)."""
        return {
            "kind": self.current_kind(),
            "column": self.column.currentText(),
            "column2": self.columns2.currentText(),
            "lower": self.lower_bound.value(),
            "upper": self.upper_bound.value(),
            "q": self.q_value.value(),
            "trim_fraction": self.trim.value(),
            "k": self.k.value(),
            "bins": self.bins.value(),
            "categories": self.categories.text(),
            "joiner": self.joiner.currentText(),
            "conditions": [
                [row.negate.isChecked(), row.column.currentText(), row.op.currentText(), row.value.text()]
                for row in self.conditions
            ],
            "relation": str(self.relation.currentData()),
            "group1": self.group1.currentText(),
            "group2": self.group2.currentText(),
            "group_categories": self.group_categories.text(),
            "unit": self.unit.currentText(),
            "max_groups": self.max_groups.value(),
            "max_rows": self.max_rows.value(),
            "key_origin": str(self.key_origin.currentData()),
            "key_epsilon": self.key_epsilon.value(),
            "key_delta": self.key_delta.currentText(),
            "marginal_columns": self.marginal_columns.text(),
            "ways": self.ways.value(),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state` (signals held back), then emit the query once."""
        widgets = [self.kind, self.column, self.columns2, self.lower_bound, self.upper_bound, self.q_value]
        widgets += [self.trim, self.k, self.bins, self.categories, self.joiner, self.relation]
        widgets += [
            self.group1,
            self.group2,
            self.group_categories,
            self.unit,
            self.max_groups,
            self.max_rows,
            self.key_origin,
            self.key_epsilon,
            self.key_delta,
            self.marginal_columns,
            self.ways,
        ]
        for w in widgets:
            w.blockSignals(True)
        try:
            self.kind.setCurrentIndex(self.kind.findData(state["kind"]))
            self.blockSignals(True)
            self._kind_changed()
            self.blockSignals(False)
            self.column.setCurrentText(state["column"])
            self.columns2.setCurrentText(state["column2"])
            self.lower_bound.setValue(state["lower"])
            self.upper_bound.setValue(state["upper"])
            self.q_value.setValue(state["q"])
            self.trim.setValue(state["trim_fraction"])
            self.k.setValue(state["k"])
            self.bins.setValue(state["bins"])
            self.categories.setText(state["categories"])
            self.joiner.setCurrentText(state["joiner"])
            self.relation.setCurrentIndex(self.relation.findData(state["relation"]))
            self.group1.setCurrentText(state.get("group1", self.group1.currentText()))
            self.group2.setCurrentText(state.get("group2", "(none)"))
            self.group_categories.setText(state.get("group_categories", self.group_categories.text()))
            self.unit.setCurrentText(state.get("unit", EACH_ROW))
            self.max_groups.setValue(state.get("max_groups", 1))
            self.max_rows.setValue(state.get("max_rows", 1))
            self.key_origin.setCurrentIndex(
                max(0, self.key_origin.findData(state.get("key_origin", "declared")))
            )
            self.key_epsilon.setValue(state.get("key_epsilon", 0.5))
            self.key_delta.setCurrentText(state.get("key_delta", "1e-6"))
            self.marginal_columns.setText(state.get("marginal_columns") or self.marginal_columns.text())
            self.ways.setValue(state.get("ways", 2))
            for row, (negate, column, op, value) in zip(self.conditions, state["conditions"], strict=True):
                row.negate.setChecked(negate)
                row.column.setCurrentText(column)
                row.op.setCurrentText(op)
                row.value.setText(value)
        finally:
            self.blockSignals(False)
            for w in widgets:
                w.blockSignals(False)
        self._update_visibility()
        self.emit_query()

    def current_kind(self) -> str:
        return str(self.kind.currentData())

    def select_kind(self, kind: str, column: str | None = None) -> None:
        self.kind.setCurrentIndex(self.kind.findData(kind))
        if column is not None:
            self.column.setCurrentText(column)

    def _columns_for(self, kind: str) -> list[str]:
        if kind in NUMERIC_KINDS:
            return [c for c, k in self.kinds.items() if k == "numeric"]
        if kind in CATEGORY_KINDS:
            return [c for c, k in self.kinds.items() if k != "numeric"]
        return list(self.kinds)

    def _kind_changed(self) -> None:
        kind = self.current_kind()
        previous = self.column.currentText()
        names = self._columns_for(kind)
        for combo, extra in ((self.column, []), (self.columns2, ["(none)"])):
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(extra + names)
            combo.blockSignals(False)
        if previous in names:
            self.column.setCurrentText(previous)
        self._update_visibility()
        self._column_changed()

    def _column_changed(self) -> None:
        column = self.column.currentText()
        if column in self.ranges:
            low, high = self.ranges[column]
            self.lower_bound.setValue(low)
            self.upper_bound.setValue(high)
        self._show_category_count(column)
        if column in self.top_values:
            self.categories.setText(", ".join(self.top_values[column][: self.category_count.value()]))
        self._update_visibility()
        self.emit_query()

    def _show_category_count(self, column: str) -> None:
        """How many values the column has (the steward's own, non-private view), and whether all
        of them can be declared."""
        values = self.top_values.get(column, [])
        over = len(values) > CATEGORY_LIMIT
        # never "the most common 16" beside "of 14 in the data": at most as many as there are
        wanted = getattr(self, "_wanted_count", self.category_count.value())
        self._wanted_count = wanted
        most = min(len(values), CATEGORY_LIMIT) if values else CATEGORY_LIMIT
        blocked = self.category_count.blockSignals(True)
        self.category_count.setMaximum(max(most, 1))
        self.category_count.setValue(min(wanted, most))
        self.category_count.blockSignals(blocked)
        self.take_all.setEnabled(bool(values) and not over)
        self.take_all.setText("Take all" if over or not values else f"Take all {len(values):,}")
        self.category_note.setText(
            f"{column} has more than {CATEGORY_LIMIT:,} values: at most {CATEGORY_LIMIT:,} can be declared"
            if over
            else f"of {len(values):,} in the data"
        )
        self.category_note.setStyleSheet(f"color: {palette.css(palette.ERROR_TEXT)};" if over else "")

    def _category_count_changed(self) -> None:
        """Declare the number of commonest values typed."""
        values = self.top_values.get(self.column.currentText(), [])
        self._wanted_count = self.category_count.value()  # the steward's number, for the next column
        if values:
            self.categories.setText(", ".join(values[: self.category_count.value()]))
            self.emit_query()

    def _take_all_categories(self) -> None:
        values = self.top_values.get(self.column.currentText(), [])
        if 0 < len(values) <= CATEGORY_LIMIT:
            self.category_count.setValue(len(values))
            self._category_count_changed()

    def _group_changed(self) -> None:
        column, origin = self.group1.currentText(), self.key_origin.currentData()
        self.group_categories.setReadOnly(origin == "schema")
        if origin == "schema":
            every = self.all_categories(column)
            self.group_categories.setText(", ".join(every) if every is not None else "")
        elif column in self.top_values:
            self.group_categories.setText(", ".join(self.top_values[column][:MAX_CATEGORIES]))
        self._update_visibility()
        self.emit_query()

    def all_categories(self, column: str) -> list[str] | None:
        """Every category of ``column``: an Enum's own list (the schema declares it), or every
        value the summary lists when it lists them all (as many as the column's exact number of
        distinct values; a streamed file's count is an estimate, so it never qualifies). None
        when that is not known."""
        if self.dataset is None or column not in self.kinds:
            return None
        dtype = self.dataset.schema.get(column)
        if isinstance(dtype, pl.Enum):
            return [str(c) for c in dtype.categories]
        if getattr(self.dataset, "lazy", True):
            return None
        values = self.top_values.get(column, [])
        exact = {c.name: c.distinct for c in self.dataset.columns}
        return list(values) if values and exact.get(column) == len(values) else None

    def _update_visibility(self) -> None:
        kind = self.current_kind()
        numeric_column = self.kinds.get(self.column.currentText()) == "numeric"
        show = {
            self.column: kind not in ("count", "predicate_count", "marginals"),
            self.marginal_columns: kind == "marginals",
            self.ways: kind == "marginals",
            self.columns2: kind == "workload",
            self.lower_bound: kind in NUMERIC_KINDS or (kind in ("histogram", "workload") and numeric_column),
            self.upper_bound: kind in NUMERIC_KINDS or (kind in ("histogram", "workload") and numeric_column),
            self.q_value: kind in ("quantile", "group_quantile"),
            self.trim: kind == "trimmed_mean",
            self.k: kind == "top_k",
            self.bins: (kind in ("histogram", "workload") and numeric_column)
            or kind in ("group_histogram", "marginals"),
            self.categories: kind in CATEGORY_KINDS
            or (kind in ("histogram", "workload") and not numeric_column),
            self.category_row: kind in CATEGORY_KINDS,
            self.joiner: kind == "predicate_count",
        }
        for row in (*self.conditions, *self.condition_labels):
            show[row] = kind == "predicate_count"
        grouped = kind in GROUP_KINDS
        show[self.column] = show[self.column] and kind != "group_count"
        private = self.key_origin.currentData() == "private"
        widget: QWidget
        for widget in (self.group1, self.group2, self.key_origin, self.unit):
            show[widget] = grouped
        show[self.group2] = grouped and kind != "group_histogram"  # its second key is the binned column
        show[self.group_categories] = grouped and not private
        for widget in (self.key_epsilon, self.key_delta, self.key_rule):
            show[widget] = grouped and private
        for widget in (self.max_groups, self.max_rows):
            show[widget] = grouped and self.unit.currentText() not in ("", EACH_ROW)
        if kind == "marginals":  # a person keeps at most max_rows rows (one group: the table)
            show[self.unit] = True
            show[self.max_rows] = self.unit.currentText() not in ("", EACH_ROW)
        for widget, visible in show.items():
            self.form.setRowVisible(widget, visible)

    # ------------------------------------------------------------------ building
    def _categories(self) -> tuple[Any, ...]:
        declared = tuple(c.strip() for c in self.categories.text().split(",") if c.strip())
        if len(declared) > CATEGORY_LIMIT:
            raise DPExplorerError(
                f"{len(declared):,} categories are declared; at most {CATEGORY_LIMIT:,} can be: "
                "keep the most common ones (type a number) or group rare values together"
            )
        return declared

    def _axis(self, column: str) -> q.Axis:
        if self.kinds.get(column) == "numeric":
            low, high = self.lower_bound.value(), self.upper_bound.value()
            if column != self.column.currentText() and column in self.ranges:
                low, high = self.ranges[column]
            n = self.bins.value()
            edges = tuple(low + (high - low) * i / n for i in range(n + 1))
            return q.Axis(column, edges=edges)
        values = self.top_values.get(column, [])[: max(2, min(MAX_CATEGORIES, 6))]
        if column == self.column.currentText():
            values = list(self._categories())
        return q.Axis(column, categories=tuple(values))

    def build(self) -> q.Query:
        """The query the widgets describe; DPExplorerError with the reason if they do not."""
        kind, column = self.current_kind(), self.column.currentText()
        low, high = self.lower_bound.value(), self.upper_bound.value()
        if kind == "count":
            return q.Count()
        if kind == "predicate_count":
            parts = [p for row in self.conditions if (p := row.predicate(self.kinds)) is not None]
            if not parts:
                raise DPExplorerError("type a value in condition 1 to count the rows that match it")
            joined = (
                parts[0]
                if len(parts) == 1
                else (q.And if self.joiner.currentText() == "and" else q.Or)(tuple(parts))
            )
            return q.PredicateCount(joined)
        simple: dict[str, type[q.Sum] | type[q.Mean]] = {"sum": q.Sum, "mean": q.Mean}
        if kind in simple:
            return simple[kind](column, low, high)
        if kind == "median":
            return q.Median(column, low, high)
        if kind == "quantile":
            return q.Quantile(column, low, high, round(self.q_value.value(), 4))
        if kind == "trimmed_mean":
            return q.TrimmedMean(column, low, high, round(self.trim.value(), 4))
        if kind in ("variance", "std"):
            return q.Variance(column, low, high, std=kind == "std")
        if kind == "histogram":
            return q.Histogram(self._axis(column))
        if kind == "argmax":
            return q.ArgMax(column, self._categories())
        if kind == "top_k":
            return q.TopK(column, self._categories(), self.k.value())
        if kind == "group_histogram":
            return self._group_histogram(column)
        if kind in GROUP_KINDS:
            return self._group_by(GROUP_KINDS[kind], column, low, high)
        if kind == "marginals":
            return self._marginals()
        second = self.columns2.currentText()
        axes = [self._axis(column)] + ([self._axis(second)] if second not in ("(none)", column, "") else [])
        return q.marginal_workload(axes, ways=(1, 2) if len(axes) == 2 else (1,))

    def _default_marginal_columns(self) -> list[str]:
        """:data:`ADULT_SYNTHETIC_COLUMNS` when the data has them all, else the first four."""
        adult = list(ADULT_SYNTHETIC_COLUMNS)
        return adult if all(c in self.kinds for c in adult) else list(self.kinds)[:4]

    def _marginal_axis(self, column: str) -> q.Axis:
        """A synthetic table's column on a public domain: Adult's documented axis when the
        column is one of them with the same kind, else ``bins`` equal bins over the prefilled
        range (numeric) or the most common values (others; the rest is 'other')."""
        from dpexplorer.data.marginals import adult_marginals

        documented = {a.column: a for a in adult_marginals().axes}
        numeric = self.kinds.get(column) == "numeric"
        axis = documented.get(column)
        if axis is not None and (axis.edges is not None) == numeric:
            return axis
        if numeric:
            if column not in self.ranges:
                raise DPExplorerError(f"{column!r} has no range to bin over: declare other columns")
            low, high = self.ranges[column]
            n = self.bins.value()
            return q.Axis(column, edges=tuple(low + (high - low) * i / n for i in range(n + 1)))
        return q.Axis(column, categories=tuple(self.top_values.get(column, [])[:MAX_CATEGORIES]))

    def _marginals(self) -> q.Marginals:
        """The synthetic-data query: the declared columns, every ``ways``-way marginal, the
        privacy unit's rows per person."""
        columns = [c.strip() for c in self.marginal_columns.text().split(",") if c.strip()]
        unknown = [c for c in columns if c not in self.kinds]
        if unknown:
            raise DPExplorerError(f"no column {unknown[0]!r} in the data: list columns separated by commas")
        if len(columns) < 2:
            raise DPExplorerError("list at least two columns for a synthetic table")
        unit = None
        if self.unit.currentText() not in ("", EACH_ROW):
            unit = q.PrivacyUnit(self.unit.currentText(), 1, self.max_rows.value())
        axes = tuple(self._marginal_axis(c) for c in dict.fromkeys(columns))
        return q.Marginals(axes, ways=min(self.ways.value(), len(axes)), unit=unit)

    def _group_by(self, statistic: str, column: str, low: float, high: float) -> q.GroupBy:
        """The statistic by the groups (declared, every category, or selected privately), with
        the privacy unit if one is chosen."""
        first, second = self.group1.currentText(), self.group2.currentText()
        columns = [first] + ([second] if second not in ("(none)", first, "") else [])
        unit = None
        if self.unit.currentText() not in ("", EACH_ROW):
            unit = q.PrivacyUnit(self.unit.currentText(), self.max_groups.value(), self.max_rows.value())
        origin = self.key_origin.currentData()
        keys: list[q.Axis] = []
        private = None
        if origin == "private":
            private = q.PrivateKeys(
                tuple(columns), round(self.key_epsilon.value(), 4), float(self.key_delta.currentText())
            )
            self.key_rule.setText(self._selection_rule(private, unit))
        else:
            declared = tuple(c.strip() for c in self.group_categories.text().split(",") if c.strip())
            if origin == "schema" and self.all_categories(first) is None:
                raise DPExplorerError(
                    f"{first!r} has more categories than the summary lists: declare the groups "
                    "or select them privately"
                )
            keys.append(q.Axis(first, categories=declared))
            if len(columns) == 2:
                every = self.all_categories(second) if origin == "schema" else None
                values = every if every is not None else self.top_values.get(second, [])[:MAX_CATEGORIES]
                keys.append(q.Axis(second, categories=tuple(values)))
        if statistic == "count":
            return q.GroupBy(tuple(keys), "count", unit=unit, private=private)
        return q.GroupBy(
            tuple(keys), statistic, column, low, high, unit, private, round(self.q_value.value(), 4)
        )

    def _group_histogram(self, column: str) -> q.GroupBy:
        """A histogram of ``column`` by group: the count by two keys, the first group column and
        ``column`` in ``bins`` equal bins over its declared bounds (public edges; values outside
        fall in the first or last bin)."""
        if self.key_origin.currentData() == "private":
            raise DPExplorerError(
                "a histogram by group needs declared groups (a list, or all categories of the "
                "column): privately selected groups are available for a count, sum, mean or quantile"
            )
        by = self._group_by("count", column, 0.0, 1.0)
        keys = (by.keys[0], self._axis(column))
        return q.GroupBy(keys, "count", unit=by.unit)

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

    def emit_query(self) -> None:
        if self.dataset is None:
            return
        try:
            query = self.build()
            query.check(self.dataset.schema)
        except DPExplorerError as exc:
            self.error.setText(str(exc))
            self.error.show()
            return
        self.error.hide()
        self.description.setText(f"<i>Releasing {html.escape(query.describe())}.</i>")  # "<=50K" is text
        self.changed.emit(query, str(self.relation.currentData()))
