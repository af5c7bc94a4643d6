"""The query builder: the data layer's queries, put together through widgets (no text is
ever evaluated). Bounds, categories, bin edges and the privacy unit are public facts: they come
from the dataset's codebook or are declared by typing them here (written into the codebook),
never from the data (:mod:`dpexplorer.gui.query_declared`); under each query, its facts and their
origins (:class:`dpexplorer.gui.query_facts.FactsBox`)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.data import queries as q
from dpexplorer.data.codebook import EMPTY, Codebook, codebook_from_dict
from dpexplorer.gui import palette
from dpexplorer.gui.jobs import CATEGORY_LIMIT
from dpexplorer.gui.query_declared import DeclaredFacts, listed
from dpexplorer.gui.query_facts import FIELD_WORDS, OBSERVED, FactsBox, categories_of, edges_of, facts_of
from dpexplorer.gui.query_groups import EACH_ROW, GROUP_KINDS, MAX_CATEGORIES, GroupControls
from dpexplorer.gui.query_widgets import (
    ConditionRow,
    HeadFirstLineEdit,
    WholeCombo,
    control_value,
    number_box,
    set_control_value,
    shortened,
)

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
CATEGORY_KINDS = {"argmax", "top_k"}
RELATIONS = {
    "add_remove": "add or remove one person",
    "replace": "replace one person's row",
}
SAVED_BY_DATA = {"relation", "key_origin"}
"""The combos a session saves by their item's key (the others: by their text)."""
STATE_DEFAULTS: dict[str, Any] = {
    "group2": "(none)",
    "unit": EACH_ROW,
    "max_groups": 1,
    "max_rows": 1,
    "key_origin": "declared",
    "key_epsilon": 0.5,
    "key_delta": "1e-6",
    "ways": 2,
}
"""What a session saved before these controls existed restores them to."""
KEPT_WHEN_MISSING = {"group1", "group_categories", "marginal_columns"}
"""Controls such a session leaves as the dataset set them."""
ADULT_SYNTHETIC_COLUMNS = ("age", "education", "sex", "hours_per_week", "income")
"""The synthetic-data query's default columns on Adult (with the bins and categories of its
shipped codebook): a few thousand cells, so the dense estimator fits them in about a second (all
of Adult's columns need Private-PGM on JAX: minutes)."""


class QueryPanel(GroupControls, DeclaredFacts, QGroupBox):
    """Emits ``changed(query, relation)`` for every valid query the user builds, and
    ``codebook_changed(codebook)`` when a fact is declared in it."""

    changed = Signal(object, str)
    codebook_changed = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Query", parent)
        self.dataset: Dataset | None = None
        self.kinds: dict[str, str] = {}
        self.ranges: dict[str, tuple[float, float]] = {}
        """The data's observed ranges: exploration only, never a public fact."""
        self.top_values: dict[str, list[str]] = {}
        """The data's commonest values: exploration only, never a public fact."""
        self.kind = shortened(QComboBox())
        for key, text in QUERY_KINDS.items():
            self.kind.addItem(text, key)
        self.column = shortened(QComboBox())
        self.columns2 = shortened(QComboBox())
        self.columns2.setToolTip("Second column of the workload's universe (optional)")
        self._statistic_widgets()
        self._category_widgets()
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
        self.facts = FactsBox()
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet(f"color: {palette.css(palette.ERROR_TEXT)};")
        self._facts_init()
        self._layout()
        self._connect()
        self._update_visibility()

    def _statistic_widgets(self) -> None:
        """The declared bounds and the statistics' own settings (quantile, trim, k, bins, the
        synthetic table's columns and marginals)."""
        bounds_tip = (
            "Declared bounds: values are clipped to [lower, upper] before the statistic, and the "
            "sensitivity follows from them. They come from the codebook; typing them here declares "
            "them there. Choose them from what you know about the column, never from the data. "
            "'not declared': the views explore with the data's own range (observed: not public) "
            "and Release is refused."
        )
        self.lower_bound = number_box(QDoubleSpinBox(), -1e12, 1e12, tooltip=bounds_tip)
        self.upper_bound = number_box(QDoubleSpinBox(), -1e12, 1e12, tooltip=bounds_tip)
        for box in (self.lower_bound, self.upper_bound):
            box.setDecimals(3)
        self.q_value = number_box(QDoubleSpinBox(), 0.01, 1.0, 0.5, step=0.05)
        self.trim = number_box(QDoubleSpinBox(), 0.0, 0.49, 0.1, step=0.05)
        # top-k reports up to 100 (the mechanism's own k declaration)
        self.k = number_box(QSpinBox(), 1, 100, 3)
        self.bins = number_box(
            QSpinBox(),
            2,
            64,
            8,
            tooltip="Equal bins over the declared bounds (public edges; the synthetic table takes the "
            "codebook's edges where it declares them); values outside the bounds fall in the first "
            "or last bin, missing values in a cell of their own.",
        )
        self.marginal_columns = HeadFirstLineEdit()
        self.marginal_columns.setToolTip(
            "The synthetic table's columns, separated by commas, each on its domain in the "
            "codebook: a number column on its declared bin edges (else 'Bins' equal bins over its "
            "declared bounds), other columns on their declared categories, plus 'other' and "
            "'missing' cells. A column the codebook does not describe is explored with the data's "
            "own values (observed: not public) and cannot be released."
        )
        self.ways = number_box(
            QSpinBox(), 1, 3, 2, tooltip="The workload: every 1-, 2- or 3-way marginal of the columns"
        )

    def _category_widgets(self) -> None:
        """The declared categories (the codebook's; typed here: declared into it), and, while
        none are declared, how many of the data's commonest values the views explore with."""
        self.categories = HeadFirstLineEdit()
        self.categories.setToolTip(
            "Declared categories, separated by commas: the codebook's, and typing them here "
            "declares them there. Rows with any other value count as 'other'. Never taken from the "
            "data: while none are declared the views explore with the data's most common values "
            "(observed: not public) and Release is refused."
        )
        self.categories.setMaxLength(2**24)  # 10,000 values (Qt's default stops at 32,767 characters)
        self.category_count = number_box(
            QSpinBox(),
            1,
            CATEGORY_LIMIT,
            MAX_CATEGORIES,
            tooltip=f"Explore with this many of the column's most common values (up to {CATEGORY_LIMIT:,}; "
            "observed: not public, so they are never released); type a number, or take them all.",
        )
        self.take_all = QPushButton("Take all")
        self.take_all.clicked.connect(self._take_all_categories)
        self.category_note = QLabel()
        self.category_note.setWordWrap(True)  # beside the count and the button at teaching fonts

    def _layout(self) -> None:
        self.category_row = QWidget()
        row = QHBoxLayout(self.category_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("explore with the most common"))
        row.addWidget(self.category_count)
        row.addWidget(self.take_all)
        row.addWidget(self.category_note, 1)
        self.form = QFormLayout()
        # (name, field) in order; no name: the field goes across the panel (beside no name the
        # category row fits teaching fonts, and the form under-counts a wrapped key rule)
        rows: tuple[tuple[str, QWidget], ...] = (
            ("Statistic", self.kind),
            ("Column", self.column),
            ("Second column", self.columns2),
            ("Columns", self.marginal_columns),
            ("Marginals of", self.ways),
            ("Lower bound", self.lower_bound),
            ("Upper bound", self.upper_bound),
            ("Quantile q", self.q_value),
            ("Trimmed fraction", self.trim),
            ("k", self.k),
            ("Bins", self.bins),
            ("Categories", self.categories),
            ("", self.category_row),
            ("Group by", self.group1),
            ("and by", self.group2),
            ("Groups", self.key_origin),
            ("Declared groups", self.group_categories),
            ("Selection ε", self.key_epsilon),
            ("Selection δ", self.key_delta),
            ("", self.key_rule),
            ("Privacy unit", self.unit),
            ("Groups per person", self.max_groups),
            ("Rows per person, per group", self.max_rows),
            ("Join conditions with", self.joiner),
        )
        for name, field in rows:
            if name:
                self.form.addRow(name, field)
            else:
                self.form.addRow(field)
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
        layout.addWidget(self.facts)
        layout.addWidget(self.error)

    def _connect(self) -> None:
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.column.currentTextChanged.connect(self._column_changed)
        for signal in (
            self.columns2.currentTextChanged,
            self.relation.currentIndexChanged,
            self.joiner.currentIndexChanged,
            self.q_value.valueChanged,
            self.trim.valueChanged,
            self.k.valueChanged,
            self.bins.valueChanged,
            self.group2.currentTextChanged,
            self.key_epsilon.valueChanged,
            self.key_delta.currentIndexChanged,
            self.marginal_columns.editingFinished,
            self.ways.valueChanged,
        ):
            signal.connect(self.emit_query)
        for box in (self.lower_bound, self.upper_bound):
            box.editingFinished.connect(self._bounds_edited)
        self.categories.editingFinished.connect(
            lambda: self._categories_edited(self.categories, self.column.currentText())
        )
        self.group_categories.editingFinished.connect(
            lambda: self._categories_edited(self.group_categories, self.group1.currentText())
        )
        for signal in (
            self.unit.currentTextChanged,
            self.max_groups.valueChanged,
            self.max_rows.valueChanged,
        ):
            signal.connect(self._unit_edited)
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
    def set_dataset(
        self, dataset: Dataset, summary: dict[str, Any] | None = None, codebook: Codebook = EMPTY
    ) -> None:
        """Offer the dataset's columns, with the public facts of ``codebook``; ``summary`` holds
        the data's observed ranges and common values (exploration only, never a public fact)."""
        self.dataset = dataset
        self.codebook = codebook
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
        self._show_unit()
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

    def _saved(self) -> dict[str, QWidget]:
        """The controls a session saves after the statistic, by their key in :meth:`state`."""
        return {
            "column": self.column,
            "column2": self.columns2,
            "lower": self.lower_bound,
            "upper": self.upper_bound,
            "q": self.q_value,
            "trim_fraction": self.trim,
            "k": self.k,
            "bins": self.bins,
            "categories": self.categories,
            "joiner": self.joiner,
            "relation": self.relation,
            "group1": self.group1,
            "group2": self.group2,
            "group_categories": self.group_categories,
            "unit": self.unit,
            "max_groups": self.max_groups,
            "max_rows": self.max_rows,
            "key_origin": self.key_origin,
            "key_epsilon": self.key_epsilon,
            "key_delta": self.key_delta,
            "marginal_columns": self.marginal_columns,
            "ways": self.ways,
        }

    def state(self) -> dict[str, Any]:
        """Every control's value and the codebook, JSON-safe (for sessions and undo)."""
        saved = {key: control_value(w, by_data=key in SAVED_BY_DATA) for key, w in self._saved().items()}
        conditions = [
            [row.negate.isChecked(), row.column.currentText(), row.op.currentText(), row.value.text()]
            for row in self.conditions
        ]
        return {
            "kind": self.current_kind(),
            **saved,
            "conditions": conditions,
            "codebook": self.codebook.to_dict(),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state` (signals held back), then emit the query once. A key an older
        session lacks takes its :data:`STATE_DEFAULTS` value, or keeps the panel's own
        (:data:`KEPT_WHEN_MISSING`, and an empty list of marginal columns); a state without a
        codebook (an older session, a lesson) keeps the panel's. Values it sets that the
        codebook does not declare stay undeclared: they are explored, not released."""
        saved = self._saved()
        widgets = [self.kind, *saved.values()]
        if "codebook" in state:
            self.codebook = codebook_from_dict(state["codebook"])
        for w in widgets:
            w.blockSignals(True)
        try:
            self.kind.setCurrentIndex(self.kind.findData(state["kind"]))
            self.blockSignals(True)
            self._kind_changed()
            self.blockSignals(False)
            for key, widget in saved.items():
                if key not in state and key in KEPT_WHEN_MISSING:
                    continue
                value = state[key] if key in state or key not in STATE_DEFAULTS else STATE_DEFAULTS[key]
                if key == "marginal_columns" and not value:
                    continue
                set_control_value(widget, value, by_data=key in SAVED_BY_DATA)
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
        self.show_declared()
        self._show_category_count(column)
        self._update_visibility()
        self.emit_query()

    def _show_category_count(self, column: str) -> None:
        """How many values the column has (the steward's own, non-private view), and whether all
        of them can be explored with."""
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
            f"{column} has more than {CATEGORY_LIMIT:,} values: at most {CATEGORY_LIMIT:,} can be explored"
            if over
            else f"of {len(values):,} in the data ({OBSERVED})"
        )
        self.category_note.setStyleSheet(f"color: {palette.css(palette.ERROR_TEXT)};" if over else "")

    def _category_count_changed(self) -> None:
        """Explore with the number of commonest values typed (never declared: the line stays
        as the codebook has it)."""
        self._wanted_count = self.category_count.value()  # the steward's number, for the next column
        if self.top_values.get(self.column.currentText()):
            self.emit_query()

    def _take_all_categories(self) -> None:
        values = self.top_values.get(self.column.currentText(), [])
        if 0 < len(values) <= CATEGORY_LIMIT:
            self.category_count.setValue(len(values))
            self._category_count_changed()

    def _update_visibility(self) -> None:
        kind = self.current_kind()
        numeric_column = self.kinds.get(self.column.currentText()) == "numeric"
        binned = kind in ("histogram", "workload")
        show: dict[QWidget, bool] = {
            self.column: kind not in ("count", "predicate_count", "marginals", "group_count"),
            self.marginal_columns: kind == "marginals",
            self.ways: kind == "marginals",
            self.columns2: kind == "workload",
            self.lower_bound: kind in NUMERIC_KINDS or (binned and numeric_column),
            self.upper_bound: kind in NUMERIC_KINDS or (binned and numeric_column),
            self.q_value: kind in ("quantile", "group_quantile"),
            self.trim: kind == "trimmed_mean",
            self.k: kind == "top_k",
            self.bins: (binned and numeric_column) or kind in ("group_histogram", "marginals"),
            self.categories: kind in CATEGORY_KINDS or (binned and not numeric_column),
            self.category_row: (kind in CATEGORY_KINDS or (binned and not numeric_column))
            and not listed(self.categories.text()),
            self.joiner: kind == "predicate_count",
            **self.group_visibility(kind),
        }
        for row in (*self.conditions, *self.condition_labels):
            show[row] = kind == "predicate_count"
        for widget, visible in show.items():
            self.form.setRowVisible(widget, visible)

    # ------------------------------------------------------------------ building
    def _categories(self) -> tuple[Any, ...]:
        """The current column's categories (typed, the codebook's, or explored: observed)."""
        column = self.column.currentText()
        declared = self.categories_for(column, self.categories, self.category_count.value())
        if len(declared) > CATEGORY_LIMIT:
            raise DPExplorerError(
                f"{len(declared):,} categories are declared; at most {CATEGORY_LIMIT:,} can be: "
                "group rare values together"
            )
        return declared

    def _axis(self, column: str) -> q.Axis:
        """A histogram's or workload's axis: the current column on equal bins over its bounds
        (or its categories), another on its codebook domain (or explored: observed)."""
        current = column == self.column.currentText()
        if self.kinds.get(column) == "numeric":
            return q.Axis(column, edges=self.edges_for(column, bounds_first=current))
        if current:
            return q.Axis(column, categories=self._categories())
        return q.Axis(column, categories=self.categories_for(column, None, max(2, min(MAX_CATEGORIES, 6))))

    def build(self) -> q.Query:
        """The query the widgets describe; DPExplorerError with the reason if they do not.
        :attr:`observed` then lists the facts it explores with the data's own value."""
        self.observed = set()
        kind, column = self.current_kind(), self.column.currentText()
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
        if kind == "histogram":
            return q.Histogram(self._axis(column))
        if kind == "argmax":
            return q.ArgMax(column, self._categories())
        if kind == "top_k":
            return q.TopK(column, self._categories(), self.k.value())
        if kind == "group_histogram":
            return self._group_histogram(self._axis(column))
        if kind == "marginals":
            return self._marginals()
        if kind == "workload":
            second = self.columns2.currentText()
            axes = [self._axis(column)] + (
                [self._axis(second)] if second not in ("(none)", column, "") else []
            )
            return q.marginal_workload(axes, ways=(1, 2) if len(axes) == 2 else (1,))
        return self._clipped(kind, column)

    def _clipped(self, kind: str, column: str) -> q.Query:
        """A statistic of ``column`` clipped to its bounds (by group too)."""
        statistic = GROUP_KINDS.get(kind, kind)
        low, high = (0.0, 1.0) if statistic == "count" else self.bounds_for(column)  # a count: none
        if kind in GROUP_KINDS:
            return self._group_by(statistic, column, low, high, round(self.q_value.value(), 4))
        simple: dict[str, type[q.Sum] | type[q.Mean]] = {"sum": q.Sum, "mean": q.Mean}
        if kind in simple:
            return simple[kind](column, low, high)
        if kind == "median":
            return q.Median(column, low, high)
        if kind == "quantile":
            return q.Quantile(column, low, high, round(self.q_value.value(), 4))
        if kind == "trimmed_mean":
            return q.TrimmedMean(column, low, high, round(self.trim.value(), 4))
        return q.Variance(column, low, high, std=kind == "std")

    def _default_marginal_columns(self) -> list[str]:
        """:data:`ADULT_SYNTHETIC_COLUMNS` when the data has them all, else the first four."""
        adult = list(ADULT_SYNTHETIC_COLUMNS)
        return adult if all(c in self.kinds for c in adult) else list(self.kinds)[:4]

    def _marginal_axis(self, column: str) -> q.Axis:
        """A synthetic table's column on its domain in the codebook: a number column on its
        declared edges, else on its declared categories (coded values), else on ``bins`` equal
        bins over its declared bounds; another column on its declared categories (each with
        its "(any other)" and "missing" cells). Where the codebook has none, the data's own range or
        commonest values, for exploration only (recorded in :attr:`observed`)."""
        if self.kinds.get(column) == "numeric":
            if edges_of(self.codebook, column) is None and categories_of(self.codebook, column) is not None:
                return q.Axis(column, categories=self.categories_for(column, None, MAX_CATEGORIES))
            return q.Axis(column, edges=self.edges_for(column, bounds_first=False))
        return q.Axis(column, categories=self.categories_for(column, None, MAX_CATEGORIES))

    def _marginals(self) -> q.Marginals:
        """The synthetic-data query: the declared columns, every ``ways``-way marginal, the
        privacy unit's rows per person."""
        columns = [c.strip() for c in self.marginal_columns.text().split(",") if c.strip()]
        unknown = [c for c in columns if c not in self.kinds]
        if unknown:
            raise DPExplorerError(f"no column {unknown[0]!r} in the data: list columns separated by commas")
        if len(columns) < 2:
            raise DPExplorerError("list at least two columns for a synthetic table")
        unit = self.privacy_unit(1)  # a person keeps at most max_rows rows (one group: the table)
        axes = tuple(self._marginal_axis(c) for c in dict.fromkeys(columns))
        return q.Marginals(axes, ways=min(self.ways.value(), len(axes)), unit=unit)

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
        described = html.escape(query.describe())  # "<=50K" is text
        own = ", ".join(sorted({FIELD_WORDS[f] for _, f in self.observed}))
        self.description.setText(
            f"<i>Exploring {described}, with the data's own {own} ({OBSERVED}): not releasable.</i>"
            if self.observed
            else f"<i>Releasing {described}.</i>"
        )
        self.facts.show_facts(facts_of(query, self.codebook), self.observed)
        self.changed.emit(query, str(self.relation.currentData()))

    def observed_facts(self) -> list[str]:
        """The facts the last query explores with the data's own value, in words."""
        words = {"bounds": "bounds", "categories": "categories", "edges": "bin edges"}
        return [f"the {words.get(field, field)} of {column}" for column, field in sorted(self.observed)]
