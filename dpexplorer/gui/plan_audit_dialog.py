"""The Budget tab's "Audit this plan…" (issue 44): the replay audit of the window's plan on the
open dataset (:func:`dpexplorer.release.replay.audit_plan`, run by ``gui.jobs.plan_audit`` on
the compute service), shown as a table, an entry a row, and a verdict worded as evidence. The
audit releases the plan on D and on neighbours through throwaway ledgers: nothing is charged to
the window's. This module only lays out, dispatches and shows."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHeaderView,
    QLabel,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.core.figures import privacy_number
from dpexplorer.gui import palette
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.views.run_controls import RunControls

JOB = "plan-audit"
"""The compute service's view the audit runs under (Esc and Cancel stop it)."""
DEFAULT_DRAWS = 2_000
"""Outputs sampled per side for the black box: ``dpexplorer audit``'s default."""
COLUMNS = ("#", "statistic", "replay", "sensitivity", "black box: ε at least", "claimed ε", "verdict")
INTRO = (
    "The replay audit releases this plan, by the code a release runs, on the open data and on "
    "neighbours built to stress each statistic (a row added or removed, a value at a clipping "
    "bound, a new category, a tie at the median, a person with many rows), with the same random "
    "bits on every side. Everything published except the noisy values must be identical; the values "
    "must move by at most the declared sensitivity; a lower bound on ε from sampled outputs must "
    "stay under the claim. <b>Nothing is charged</b>: every side has a throwaway ledger. It is "
    "evidence for the neighbours tried, not a proof."
)


def verdict_words(audit: Any) -> str:
    """The one-line verdict of a :class:`~dpexplorer.release.replay.PlanAudit`."""
    found = [e for e in audit.entries if not e.passed]
    tried = f"{len(audit.neighbours)} neighbours"
    if not found:
        return (
            f"Every statistic passed on {tried} ({audit.draws:,} draws per side, "
            f"{audit.confidence:.0%} confidence): no published field depends on the data, and no "
            "lower bound exceeds its claim."
        )
    numbers = ", ".join(str(e.entry) for e in found)
    return f"Findings on statistic {numbers} (rows in red): read each row's replay and bound columns."


def entry_cells(entry: Any) -> tuple[str, ...]:
    """A table row of an :class:`~dpexplorer.release.replay.EntryAudit`."""
    bound = "not run" if entry.lower_bound is None else privacy_number(max(entry.lower_bound, 0.0))
    claim = "—" if entry.claimed_epsilon is None else privacy_number(entry.claimed_epsilon)
    replay = "pass" if entry.replay == "pass" else f"differs at {entry.replay}"
    return (
        str(entry.entry),
        f"{entry.mechanism} on {entry.statistic}",
        replay,
        entry.sensitivity,
        bound,
        claim,
        "pass" if entry.passed else "FINDING",
    )


class PlanAuditDialog(QDialog):
    """Run the replay audit of ``entries`` (plan entries, ``rate`` its sampling claim) on
    ``dataset`` with ``codebook``, on the compute service; show each entry's audit."""

    def __init__(
        self,
        compute: ComputeService,
        *,
        dataset: Any,
        entries: list[dict[str, Any]],
        rate: float | None,
        codebook: Any,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Audit this plan")
        self.compute, self.dataset, self.entries = compute, dataset, entries
        self.rate, self.codebook = rate, codebook
        self.audit: Any = None
        intro = QLabel(INTRO)
        intro.setWordWrap(True)
        self.draws = QSpinBox()
        self.draws.setRange(0, 1_000_000)
        self.draws.setSingleStep(1_000)
        self.draws.setValue(DEFAULT_DRAWS)
        self.draws.setMaximumWidth(140)
        self.draws.setToolTip(
            "Outputs sampled per side for the black-box lower bound on ε (0: the replay only). More "
            "draws give a tighter bound and take longer."
        )
        form = QFormLayout()
        form.addRow("Draws per side:", self.draws)
        self.controls = RunControls(
            "Run the audit",
            "Release the plan on the data and on each neighbour with throwaway ledgers, and compare.",
            "Stop the audit (nothing is charged either way).",
            "%p % of the audit done",
            busy="Auditing: releasing the plan on each neighbour…",
            cancelled="Cancelled: no audit result.",
        )
        self.controls.bind(compute, JOB)
        self.controls.set_ready(bool(entries))
        self.controls.info.setText(f"{len(entries)} statistic(s) in the plan")
        self.controls.run_requested.connect(self._submit)
        self.controls.cancel_requested.connect(lambda: compute.cancel(JOB))
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.controls)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.verdict)
        layout.addWidget(buttons)
        compute.finished.connect(self._on_result)
        compute.failed.connect(self._on_failure)
        self.resize(1000, 560)

    def _submit(self) -> None:
        from dpexplorer.gui.jobs import plan_audit

        self.table.setRowCount(0)
        self.verdict.setText("")
        self.compute.submit(
            JOB, plan_audit, self.dataset, self.entries, self.rate, self.codebook, self.draws.value()
        )

    def _on_result(self, view: str, generation: int, result: object) -> None:
        if view != JOB:
            return
        self.audit = result
        self.show_audit(result)
        self.controls.idle("Audit done.")

    def _on_failure(self, view: str, generation: int, message: str) -> None:
        if view == JOB:
            self.controls.idle(f"The audit could not run: {message}")

    def show_audit(self, audit: Any) -> None:
        """Fill the table and the verdict from a :class:`~dpexplorer.release.replay.PlanAudit`."""
        self.table.setRowCount(len(audit.entries))
        for row, entry in enumerate(audit.entries):
            for column, text in enumerate(entry_cells(entry)):
                cell = QTableWidgetItem(text)
                cell.setToolTip(self._tip(entry))
                if not entry.passed:
                    cell.setForeground(QColor(*palette.colour(palette.ERROR_TEXT)))
                self.table.setItem(row, column, cell)
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        colour = palette.css(palette.ERROR_TEXT) if not audit.passed else ""
        self.verdict.setStyleSheet(f"color: {colour};" if colour else "")
        self.verdict.setText(verdict_words(audit))

    @staticmethod
    def _tip(entry: Any) -> str:
        lines = [f"neighbours replayed: {', '.join(entry.neighbours) or 'none'}"]
        if entry.test:
            lines.append(
                f"black box: {entry.test}" + (f", bounded on {entry.bounded_on}" if entry.bounded_on else "")
            )
        if entry.detail:
            lines.append(str(entry.detail.get("what", "")))
        if entry.refused:
            lines.append(f"refused on D: {entry.refused}")
        return "\n".join(lines)

    def done(self, result: int) -> None:
        self.compute.cancel(JOB)
        self.compute.finished.disconnect(self._on_result)
        self.compute.failed.disconnect(self._on_failure)
        super().done(result)
