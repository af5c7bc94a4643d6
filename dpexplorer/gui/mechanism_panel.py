"""The Mechanism panel: a picker over the registry (only mechanisms that apply to the current
query) and the parameter controls built from the chosen mechanism's declarations."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QGroupBox, QLabel, QSpinBox, QVBoxLayout, QWidget

from dpexplorer.core.mechanisms.base import Mechanism, QueryInput
from dpexplorer.gui import palette
from dpexplorer.gui.param_controls import ParamPanel


class MechanismPanel(QGroupBox):
    """Emits ``changed(mechanism, params)`` whenever the choice or a valid parameter changes."""

    changed = Signal(object, dict)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Mechanism", parent)
        self.mechanisms: tuple[Mechanism, ...] = ()
        self.picker = QComboBox()
        self.picker.setToolTip("Mechanisms that apply to the current query")
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setStyleSheet(f"color: {palette.css(palette.MUTED_TEXT)};")
        self.params = ParamPanel()
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setValue(20261121)
        self.seed.setToolTip(
            "Seed of the exploration random generator used for simulated draws, so a picture "
            "can be reproduced. Releases never use it: they draw from the operating system's "
            "secure generator."
        )
        self.unavailable = QLabel()
        self.unavailable.setWordWrap(True)
        self.unavailable.setStyleSheet(f"color: {palette.css(palette.MUTED_TEXT)}; font-style: italic;")
        layout = QVBoxLayout(self)
        layout.addWidget(self.picker)
        layout.addWidget(self.summary)
        layout.addWidget(self.params)
        seed_row = QLabel("Simulation seed:")
        seed_row.setToolTip(self.seed.toolTip())
        layout.addWidget(seed_row)
        layout.addWidget(self.seed)
        layout.addWidget(self.unavailable)
        layout.addStretch(1)
        self._values: dict[str, dict[str, Any]] = {}
        self.fixed: dict[str, Any] = {}
        """Parameters the query sets (top-k's k): their controls are hidden, asked once."""
        self.picker.currentIndexChanged.connect(self._picked)
        self.params.changed.connect(self._params_changed)

    def current(self) -> Mechanism | None:
        index = self.picker.currentIndex()
        return self.mechanisms[index] if 0 <= index < len(self.mechanisms) else None

    def set_choices(self, mechanisms: tuple[Mechanism, ...], query: QueryInput | None) -> None:
        """Offer the mechanisms that accept ``query``; keep the current one if it still applies."""
        previous = self.current()
        applicable = tuple(m for m in mechanisms if query is not None and m.accepts(query) is None)
        skipped = [
            f"{m.label}: {m.accepts(query)}" for m in mechanisms if query is not None and m.accepts(query)
        ]
        self.unavailable.setText(
            f"{len(skipped)} other mechanisms need a different kind of query (hover for which)."
        )
        self.unavailable.setToolTip("<br>".join(skipped))
        self.unavailable.setVisible(bool(skipped))
        self.picker.blockSignals(True)
        self.picker.clear()
        self.mechanisms = applicable
        for mechanism in applicable:
            self.picker.addItem(mechanism.label)
            self.picker.setItemData(self.picker.count() - 1, mechanism.summary, role=3)  # tooltip
        names = [m.name for m in applicable]
        index = names.index(previous.name) if previous is not None and previous.name in names else 0
        self.picker.setCurrentIndex(index if applicable else -1)
        self.picker.blockSignals(False)
        self._picked(self.picker.currentIndex())

    def select(self, name: str) -> None:
        for i, mechanism in enumerate(self.mechanisms):
            if mechanism.name == name:
                self.picker.setCurrentIndex(i)
                return
        raise KeyError(f"mechanism {name!r} does not apply to the current query")

    def values(self) -> dict[str, Any]:
        return self.params.values()

    def follow_query(self, query: object, *_: object) -> None:
        """Take the parameters the query already sets: top-k's k is asked once, in the query
        panel (the mechanism's own k control is hidden and follows it; they used to differ)."""
        fixed = {"k": int(query.k)} if getattr(query, "kind", "") == "top_k" else {}  # type: ignore[attr-defined]
        if fixed == self.fixed:
            return
        self.fixed = fixed
        mechanism = self.current()
        self._apply_fixed()
        if mechanism is not None and any(p.name in fixed for p in mechanism.params):
            self._params_changed(self.params.values())

    def _apply_fixed(self) -> None:
        for name, control in self.params.controls.items():
            fixed = name in self.fixed
            if fixed:
                control.set_value(self.fixed[name])
            control.setVisible(not fixed)
            label = self.params.form.labelForField(control)
            if label is not None:
                label.setVisible(not fixed)

    def chosen_values(self) -> dict[str, dict[str, Any]]:
        """The parameters last chosen for each mechanism shown this session, by name."""
        return {name: dict(values) for name, values in self._values.items()}

    def set_values(self, values: dict[str, Any]) -> None:
        self.params.set_values(values)
        self._apply_fixed()
        self._params_changed(self.params.values())

    def _picked(self, index: int) -> None:
        mechanism = self.current()
        if mechanism is None:
            self.summary.setText("No mechanism applies to this query.")
            self.params.build(())
            return
        self.summary.setText(mechanism.summary)
        self.params.build(mechanism.params, self._values.get(mechanism.name))
        self._apply_fixed()
        self.changed.emit(mechanism, self.params.values())

    def _params_changed(self, values: dict[str, Any]) -> None:
        mechanism = self.current()
        if mechanism is not None:
            self._values[mechanism.name] = dict(values)
            self.changed.emit(mechanism, dict(values))
