"""The frame the "estimate privately" dialogs share (bounds: :mod:`private_bounds_dialog`,
categories: :mod:`private_categories_dialog`): a form of the estimate's parameters, Release
(charged to the ledger on the compute service), then Use. The privacy math is in
``dpexplorer.release``; this only lays out, dispatches and shows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLabel, QVBoxLayout, QWidget

from dpexplorer.gui import palette
from dpexplorer.gui.compute import ComputeService


class PrivateEstimateDialog(QDialog):
    """Release one private estimate of ``column`` (the compute service's view ``job``), then
    offer it; a subclass builds the form (:meth:`_lay_out`), starts the release
    (:meth:`_submit`) and shows its result (:meth:`_show_result`)."""

    job = ""

    def __init__(
        self,
        compute: ComputeService,
        *,
        dataset: Any,
        column: str,
        ledger_path: Path,
        out_dir: Path,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.compute, self.dataset, self.column = compute, dataset, column
        self.ledger_path, self.out_dir = ledger_path, out_dir
        self.result: Any = None

    def _lay_out(self, intro: QLabel, form: QFormLayout, noun: str) -> None:
        """The intro, the form, the message line and Release / Use / Close, wired."""
        intro.setWordWrap(True)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.release_button = self.buttons.addButton(
            f"Release {noun}", QDialogButtonBox.ButtonRole.ActionRole
        )
        self.use_button = self.buttons.addButton(f"Use these {noun}", QDialogButtonBox.ButtonRole.AcceptRole)
        self.use_button.setEnabled(False)
        self.release_button.clicked.connect(self.release)
        self.use_button.clicked.connect(self._use)
        self.buttons.rejected.connect(self.reject)
        self.compute.finished.connect(self._on_result)
        self.compute.failed.connect(self._on_failure)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)

    def release(self) -> None:
        raise NotImplementedError

    def _use(self) -> None:
        raise NotImplementedError

    def _show_result(self, result: Any) -> None:
        raise NotImplementedError

    def _submit(self, waiting: str, function: Callable[..., Any], *args: Any) -> None:
        """Run ``function(*args, ledger_path, out_dir)`` on the compute service, saying ``waiting``."""
        self.release_button.setEnabled(False)
        self.message.setStyleSheet("")
        self.message.setText(waiting)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.compute.submit(self.job, function, *args, str(self.ledger_path), str(self.out_dir))

    def _on_result(self, view: str, generation: int, result: object) -> None:
        if view == self.job:
            self.result = result
            self._show_result(result)

    def _on_failure(self, view: str, generation: int, message: str) -> None:
        if view == self.job:
            self.message.setStyleSheet(f"color: {palette.css(palette.ERROR_TEXT)};")
            self.message.setText(message)
            self.release_button.setEnabled(True)

    def done(self, result: int) -> None:
        self.compute.finished.disconnect(self._on_result)
        self.compute.failed.disconnect(self._on_failure)
        super().done(result)
