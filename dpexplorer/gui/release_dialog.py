"""The release dialog: what will be released, its cost under the dataset's accountant, the
budget left after it and where the files go. It calls the release module through the compute
service; the ledger's refusal messages are shown as they are.

For MST or AIM on a marginals query it offers a synthetic table (records drawn from the fitted
model, as CSV and/or Parquet: :mod:`dpexplorer.release.synthetic_tables`) or the noisy marginals
the mechanism measures (the generic release); both charge the same guarantee first.

A release that uses a public fact the codebook does not declare is refused before anything is
priced or charged: the dialog names each such fact and offers the codebook (issue 40)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.core.figures import left_of, privacy_number, privacy_up
from dpexplorer.core.mechanisms.params import Param
from dpexplorer.gui import jobs, palette
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.param_controls import format_value
from dpexplorer.gui.query_facts import release_refusal
from dpexplorer.release.costs import CONVERTED, cost_words, declared_epsilon

METHODS = ("basic", "advanced", "optimal", "zcdp", "rdp", "pld")
PREVIEW_JOB = "release-preview"
BUDGET_JOB = "release-budget"
RELEASE_JOB = "release-run"
SYNTHETIC_MECHANISMS = ("mst", "aim")
"""The mechanisms whose release on a marginals query may be a synthetic table."""


def _declared(mechanism: str) -> tuple[Param, ...]:
    from dpexplorer.core.mechanisms.registry import get

    return get(mechanism).params


def offers_table(query: Any, mechanism: str) -> bool:
    """Whether the release can be a synthetic table: MST or AIM on a marginals query."""
    from dpexplorer.data.queries import Marginals

    return mechanism in SYNTHETIC_MECHANISMS and isinstance(query, Marginals)


class ReleaseDialog(QDialog):
    """Opened with everything a release needs; computes through ``compute``. After the release
    it shows the result card (:mod:`dpexplorer.gui.result_card`) in place of the price and
    emits ``released`` with the :class:`jobs.Released` the window lists. Its content sits in a
    scroll area and the dialog is sized to it (never taller than the screen): wrapped text is
    never clipped."""

    released = Signal(object)
    codebook_requested = Signal()
    """A refused release's "Open the codebook…" button."""

    def __init__(
        self,
        compute: ComputeService,
        *,
        dataset: Any,
        query: Any,
        mechanism: str,
        params: dict[str, Any],
        relation: str,
        ledger_path: Path,
        out_dir: Path,
        warning: str = "",
        sampling_rate: float | None = None,
        refused: tuple[str, ...] = (),
        codebook: Any = None,
        parent: QWidget | None = None,
    ) -> None:
        """``refused``: the public facts the release uses that the codebook does not declare;
        when there are any, nothing is priced or charged and the dialog says which.
        ``codebook``: the one the release was checked against (its provenance lists each fact's
        origin in it)."""
        super().__init__(parent)
        self.refused = tuple(refused)
        self.codebook = codebook
        self.setWindowTitle("Release a statistic")
        self.setMinimumWidth(560)  # wrapped labels (the price, a failure's reason) need the room
        self.compute = compute
        self.request = (dataset, query, mechanism, dict(params), relation, str(ledger_path), sampling_rate)
        self.ledger_path = ledger_path
        self.dataset_name = dataset.path.name
        self.preview: jobs.ReleasePreview | None = None
        self.result: Any = None
        self.card: QWidget | None = None
        self.query_text = query.describe()
        self.failure = ""
        """The last release failure, kept on screen when the release is priced again after it."""
        settings = ", ".join(
            f"{k} = {format_value(p, params[p.name])}" for p in _declared(mechanism) for k in [p.label]
        )
        self.what = QLabel(
            f"<b>Releasing</b> {html.escape(query.describe())}<br><b>with</b> {mechanism} "
            f"({html.escape(settings)})"
            f"<br><b>from</b> {dataset.path.name}"
            + (
                ""
                if sampling_rate is None
                else f", declared a secret sample of its population (each person kept with "
                f"probability q = {sampling_rate:g}): charged the amplified guarantee, and the claim "
                "is recorded in the release's provenance"
                + (" (not for a synthetic table: see below)" if offers_table(query, mechanism) else "")
            )
        )
        self.what.setWordWrap(True)
        self.cost = QLabel("Pricing the release…")
        self.cost.setWordWrap(True)
        self.cost.setTextFormat(Qt.TextFormat.RichText)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.budget_box = self._budget_box()
        self.out_dir = QLineEdit(str(out_dir))
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._choose_dir)
        self.out_row = QWidget()
        out_row = QHBoxLayout(self.out_row)
        out_row.setContentsMargins(0, 0, 0, 0)
        out_row.addWidget(QLabel("Files go to:"))
        out_row.addWidget(self.out_dir, 1)
        out_row.addWidget(browse)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.release_button = self.buttons.addButton("Release", QDialogButtonBox.ButtonRole.AcceptRole)
        self.release_button.setEnabled(False)
        self.release_button.clicked.connect(self._release)
        self.buttons.rejected.connect(self.reject)
        self.content = QWidget()
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.what)
        self.table_box = self._table_box(offers_table(query, mechanism), sampling_rate is not None)
        layout.addWidget(self.table_box)
        self.warning = QLabel(warning)
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet(f"color: {palette.css(palette.WARNING_TEXT)};")
        self.warning.setVisible(bool(warning))
        layout.addWidget(self.warning)
        for w in (self.cost, self.budget_box):
            layout.addWidget(w)
        layout.addWidget(self.out_row)
        layout.addWidget(self.message)
        layout.addStretch(1)
        self.content_layout = layout
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QScrollArea.Shape.NoFrame)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll_area.setWidget(self.content)
        outer = self.outer = QVBoxLayout(self)
        outer.addWidget(self.scroll_area, 1)
        outer.addWidget(self.buttons)
        compute.finished.connect(self._on_result)
        compute.failed.connect(self._on_failure)
        if self.refused:
            self._refuse()
        else:
            self._price()
        self.fit()

    def _refuse(self) -> None:
        """Nothing priced, nothing charged: which facts are not declared, and the codebook."""
        self.setWindowTitle("Release refused: public facts not declared")
        self.what.setText(self.what.text().replace("<b>Releasing</b>", "<b>Asked to release</b>", 1))
        self.cost.setText("<b>Not priced:</b> this release would publish facts read from the data.")
        self.message.setText(release_refusal(self.refused))
        self.message.setStyleSheet(f"color: {palette.css(palette.ERROR_TEXT)};")
        for widget in (self.out_row, self.table_box, self.warning):
            widget.hide()
        self.codebook_button = self.buttons.addButton(
            "Open the codebook…", QDialogButtonBox.ButtonRole.ActionRole
        )
        self.codebook_button.clicked.connect(self.codebook_requested.emit)
        self.codebook_button.clicked.connect(self.reject)

    def _budget_box(self) -> QGroupBox:
        box = QGroupBox("This dataset has no budget yet: set the total the steward allows")
        self.budget_epsilon = QDoubleSpinBox()
        self.budget_epsilon.setRange(0.001, 100)
        self.budget_epsilon.setDecimals(3)
        self.budget_epsilon.setValue(1.0)
        self.budget_delta = QLineEdit("1e-6")
        self.budget_method = QComboBox()
        self.budget_method.addItems(list(METHODS))
        set_button = QPushButton("Set budget")
        set_button.clicked.connect(self._set_budget)
        form = QFormLayout(box)
        form.addRow("Total ε", self.budget_epsilon)
        form.addRow("Total δ", self.budget_delta)
        form.addRow("Accountant", self.budget_method)
        form.addRow(set_button)
        box.hide()
        return box

    def _table_box(self, offered: bool, sampled: bool) -> QGroupBox:
        """What to release for MST or AIM on a marginals query (hidden otherwise)."""
        box = QGroupBox("What to release")
        self.table_choice = QRadioButton(
            "A synthetic table: records drawn from the model fitted to the noisy marginals"
        )
        self.marginals_choice = QRadioButton("Only the noisy marginals the mechanism measures")
        self.table_choice.setChecked(offered)
        self.marginals_choice.setChecked(not offered)
        self.format_boxes = {"csv": QCheckBox("CSV"), "parquet": QCheckBox("Parquet")}
        self.format_boxes["csv"].setChecked(True)
        formats = QHBoxLayout()
        formats.addWidget(QLabel("Records as:"))
        for check in self.format_boxes.values():
            formats.addWidget(check)
            check.toggled.connect(lambda _on: self._price())
        formats.addStretch(1)
        note = QLabel(
            "Either way the same guarantee is charged first. The table also writes the measured "
            "marginals (JSON) and its provenance; fitting the model and drawing the records is "
            "post-processing."
            + (" A synthetic table claims no sampling amplification: charged without it." if sampled else "")
        )
        note.setWordWrap(True)
        self.table_note = note
        form = QVBoxLayout(box)
        form.addWidget(self.table_choice)
        form.addLayout(formats)
        form.addWidget(self.marginals_choice)
        form.addWidget(note)
        self.table_choice.toggled.connect(lambda _on: self._price())
        box.setVisible(offered)
        return box

    @property
    def formats(self) -> tuple[str, ...]:
        return tuple(f for f, check in self.format_boxes.items() if check.isChecked())

    def table_chosen(self) -> bool:
        return self.table_box.isVisibleTo(self) and self.table_choice.isChecked()

    def _choose_dir(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "Release files go to", self.out_dir.text())
        if chosen:
            self.out_dir.setText(chosen)

    def _price(self) -> None:
        if self.refused:
            return
        self.preview = None
        self.release_button.setEnabled(False)
        table = self.table_chosen()
        self.setWindowTitle("Release a synthetic table" if table else "Release a statistic")
        for check in self.format_boxes.values():
            check.setEnabled(table)
        if not table:
            self.compute.submit(PREVIEW_JOB, jobs.release_preview, *self.request, codebook=self.codebook)
            return
        if not self.formats:
            self.cost.setText("Choose CSV, Parquet or both for the synthetic records.")
            return
        self.cost.setText("Counting the marginals and pricing the release…")
        self.compute.submit(
            PREVIEW_JOB, jobs.release_preview, *self.request[:-1], None, self.formats, codebook=self.codebook
        )

    def _set_budget(self) -> None:
        try:
            delta = float(self.budget_delta.text())
        except ValueError:
            self.message.setText(f"δ must be a number, like 1e-6; got {self.budget_delta.text()!r}")
            return
        fingerprint = self.preview.prepared.fingerprint if self.preview else ""
        self.compute.submit(
            BUDGET_JOB,
            jobs.set_budget,
            str(self.ledger_path),
            fingerprint,
            self.budget_epsilon.value(),
            delta,
            self.budget_method.currentText(),
        )

    def _release(self) -> None:
        if self.preview is None:
            return
        self.release_button.setEnabled(False)
        # the directory is checked (made, writable, no clash) by the release job before the charge
        self.message.setText("Charging the ledger, drawing exact noise, writing files…")
        self.compute.submit(
            RELEASE_JOB,
            jobs.release_and_account,
            self.preview.prepared,
            str(self.ledger_path),
            self.out_dir.text(),
            self.dataset_name,
            self.query_text,
        )

    def _on_result(self, view: str, generation: int, result: object) -> None:
        if view == PREVIEW_JOB:
            self._show_preview(result)  # type: ignore[arg-type]
        elif view == BUDGET_JOB:
            self._price()
        elif view == RELEASE_JOB:
            self._show_released(result)  # type: ignore[arg-type]

    def _on_failure(self, view: str, generation: int, message: str) -> None:
        if view in (PREVIEW_JOB, BUDGET_JOB, RELEASE_JOB):
            self.message.setText(message)
            self.message.setStyleSheet(f"color: {palette.css(palette.ERROR_TEXT)};")
            if view == RELEASE_JOB:
                self.failure = message
                self._price()
            self.fit()

    def _show_released(self, released: jobs.Released) -> None:
        """The result card in place of the price: the values as a person reads them."""
        from dpexplorer.gui.result_card import ResultCard

        self.result = released.result
        for widget in (self.warning, self.cost, self.budget_box, self.out_row, self.table_box):
            widget.hide()
        self.what.setText(
            f"<b>Released</b> {html.escape(self.query_text)} (ledger row {released.result.row_id})."
        )
        self.message.setText("")
        self.message.setStyleSheet("")
        self.card = ResultCard(released)
        self.content_layout.insertWidget(self.content_layout.indexOf(self.message), self.card)
        self.card.show()  # now, not at the next event loop turn: fit() measures it
        self.buttons.clear()
        self.buttons.addButton(QDialogButtonBox.StandardButton.Close).clicked.connect(self.accept)
        self.fit()
        self.released.emit(released)

    def fit(self) -> None:
        """As tall as the content needs at the dialog's width (wrapped labels included), and
        never taller than the screen's free area: past that the content scrolls."""
        width = max(self.width(), self.minimumWidth())
        margins = self.outer.contentsMargins()
        inner = width - margins.left() - margins.right()
        needed = (
            self.content_layout.totalHeightForWidth(inner) if self.content_layout.hasHeightForWidth() else -1
        )
        if needed < 0:
            needed = self.content.sizeHint().height()
        height = (
            needed
            + self.buttons.sizeHint().height()
            + self.outer.spacing()
            + margins.top()
            + margins.bottom()
        )
        screen = self.screen().availableGeometry() if self.screen() is not None else None
        if screen is not None:
            height = min(height, screen.height() - 40)  # room for a title bar
        self.resize(width, height)

    def _show_preview(self, preview: jobs.ReleasePreview) -> None:
        self.preview = preview
        exact, price = preview.prepared.exact, preview.price
        guarantee = f"ε = {privacy_up(exact.epsilon)}, δ = {privacy_up(exact.delta)}"
        if preview.prepared.sampling_rate is not None:
            guarantee += " on the sample (less on the population: see the cost below)"
        if price.budget is None:
            self.budget_box.show()
            self.cost.setText(f"This release guarantees {guarantee}. Sampler: {exact.sampler}.")
            self.release_button.setEnabled(False)
            self.fit()
            return
        self.budget_box.hide()
        budget = price.budget
        cost = "not applicable" if price.cost_epsilon is None else privacy_up(price.cost_epsilon)
        # left after it: the budget less everything spent, as printed (rounded up)
        left = "—" if price.left_after is None else left_of(budget.epsilon, budget.epsilon - price.left_after)
        converted = cost_words(  # e.g. MST's rho at the budget's delta: not the epsilon declared
            declared_epsilon(preview.prepared),
            price.cost_epsilon if isinstance(price.guarantee, CONVERTED) else None,
            method=budget.method,
            budget_delta=budget.delta,
            rho=exact.rho,
        )
        self.cost.setText(
            f"This release guarantees {guarantee} (sampler: {exact.sampler}).<br>"
            f"Budget: ε = {privacy_number(budget.epsilon)}, δ = {privacy_number(budget.delta)} under "
            f"<b>{budget.method}</b> composition; already spent ε = {privacy_up(price.spent_epsilon)}.<br>"
            f"Cost of this release: ε = <b>{cost}</b>; left after it: ε = <b>{left}</b>."
            + (f"<br>{html.escape(converted[:1].upper() + converted[1:], quote=False)}." if converted else "")
        )
        shown = " ".join(t for t in (self.failure, price.refusal) if t)
        self.message.setText(shown)
        self.message.setStyleSheet(f"color: {palette.css(palette.ERROR_TEXT)};" if shown else "")
        self.fit()
        self.release_button.setEnabled(not price.refusal)

    def done(self, result: int) -> None:
        for job in (PREVIEW_JOB, BUDGET_JOB, RELEASE_JOB):
            if job != RELEASE_JOB:  # a release already charged runs to the end
                self.compute.cancel(job)
        self.compute.finished.disconnect(self._on_result)
        self.compute.failed.disconnect(self._on_failure)
        super().done(result)
