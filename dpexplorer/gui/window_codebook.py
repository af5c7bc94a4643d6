"""The main window's codebook (issue 40): the public description of the dataset shown (Adult's
shipped one for the bundled data, else the one the steward opens or declares here), kept per
dataset for the window's life; Release > Codebook…; the query panel's "Declare…" and "Estimate
privately…" actions; and the banner over the views while a query explores a fact the codebook
does not declare ("observed: not public").

:class:`WindowCodebook` is a mixin of :class:`~dpexplorer.gui.main_window.MainWindow`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QLabel

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.data.codebook import EMPTY, Codebook, Fact, shipped_codebook
from dpexplorer.gui import palette
from dpexplorer.gui.query_facts import OBSERVED, release_blockers

if TYPE_CHECKING:
    from dpexplorer.data.load import Dataset
    from dpexplorer.gui.codebook_dialog import CodebookDialog
    from dpexplorer.gui.window_parts import WindowParts as _Window
else:
    _Window = object


def initial_codebook(dataset: Dataset) -> Codebook:
    """The codebook a dataset opens with: the shipped one for the bundled Adult, else none."""
    return shipped_codebook(dataset.path) or EMPTY


class WindowCodebook(_Window):
    """The codebook of the dataset shown, for the main window."""

    identity_known: Callable[[], bool]
    open_private_bounds_dialog: Callable[[str], None]
    codebook_dialog: CodebookDialog | None

    def _codebook_init(self) -> None:
        self._codebooks: dict[str, Codebook] = {}
        """Each dataset's codebook this window has shown (by its path), as the steward left it."""
        self.codebook_dialog = None
        self.observed_banner = QLabel()
        self.observed_banner.setWordWrap(True)
        self.observed_banner.setStyleSheet(
            f"color: {palette.css(palette.WARNING_TEXT)}; padding: 4px; font-weight: bold;"
        )
        self.observed_banner.hide()
        panel = self.query_panel
        panel.codebook_changed.connect(self._codebook_changed)
        panel.changed.connect(lambda _q, _r: self._show_observed())
        panel.facts.declare_requested.connect(self.open_codebook_dialog)
        panel.facts.estimate_requested.connect(self.estimate_fact)

    @property
    def codebook(self) -> Codebook:
        """The shown dataset's codebook (the query panel's)."""
        return self.query_panel.codebook

    def codebook_for(self, dataset: Dataset) -> Codebook:
        """The codebook to show ``dataset`` with: the one this window last had for it, else
        :func:`initial_codebook`."""
        return self._codebooks.get(str(dataset.path)) or initial_codebook(dataset)

    def set_codebook(self, codebook: Codebook) -> None:
        """Make ``codebook`` the shown dataset's (the query panel, the dialog and the views
        follow)."""
        self._codebook_changed(codebook)
        self.query_panel.set_codebook(codebook)

    def _codebook_changed(self, codebook: Codebook) -> None:
        if self.dataset is not None:
            self._codebooks[str(self.dataset.path)] = codebook
        if self.codebook_dialog is not None and self.codebook_dialog.codebook is not codebook:
            self.codebook_dialog.set_codebook(codebook)

    def _show_observed(self) -> None:
        """The banner over the views: which facts they explore with the data's own values."""
        observed = self.query_panel.observed_facts()
        self.observed_banner.setText(
            f"{OBSERVED.capitalize()}: the views explore {', '.join(observed)} as the data has "
            "them. Release is refused until each is declared (Release > Codebook…) or estimated "
            "privately."
        )
        self.observed_banner.setVisible(bool(observed))

    def codebook_identity(self) -> str | None:
        """The shown dataset's ledger identity once computed (a codebook ties to it)."""
        if self.dataset is None or not self.identity_known():
            return None
        return str(getattr(self.dataset, "content_fingerprint", "") or "") or None

    def open_codebook_dialog(self, column: str = "", field: str = "") -> CodebookDialog | None:
        """Release > Codebook… (and the query panel's Declare…): the codebook of the dataset
        shown, at ``column``'s ``field`` when given."""
        if self.dataset is None:
            self.show_error("Open a dataset first: a codebook describes one.")
            return None
        from dpexplorer.gui.codebook_dialog import CodebookDialog

        if self.codebook_dialog is None:
            kinds = {c.name: str(c.kind) for c in self.dataset.columns}
            dialog = CodebookDialog(
                self.codebook,
                kinds,
                dataset_name=self.dataset.path.name,
                identity=self.codebook_identity(),
                parent=self,
            )
            dialog.codebook_changed.connect(self.set_codebook)
            dialog.finished.connect(lambda _code: setattr(self, "codebook_dialog", None))
            self.codebook_dialog = dialog
        self.codebook_dialog.show()
        self.codebook_dialog.raise_()
        if column:
            self.codebook_dialog.select(column, field)
        return self.codebook_dialog

    def estimate_fact(self, column: str, field: str) -> None:
        """The query panel's "Estimate privately…": bounds by two DP quantiles (charged, then
        written into the codebook as estimated, with the ledger row)."""
        if field == "bounds":
            self.open_private_bounds_dialog(column)
        elif field == "categories":
            self.open_private_categories_dialog(column)

    def open_private_categories_dialog(self, column: str) -> None:
        raise NotImplementedError  # WindowRelease's

    def use_estimated(self, column: str, field: str, value: Any, ledger_id: int, citation: str) -> None:
        """A privately estimated fact (already charged: ``ledger_id``) into the codebook."""
        fact = Fact(value, "estimated", citation, ledger_id, complete=False)
        self.set_codebook(self.codebook.with_fact(column, field, fact))

    def blockers(self, query: Any) -> list[str]:
        """What stops ``query``'s release under the shown codebook (empty: it may go ahead):
        each fact it uses that the codebook does not declare."""
        return release_blockers(query, self.codebook)

    def codebook_mismatch(self) -> str:
        """Why the shown codebook cannot describe the dataset shown (it names another), or ""."""
        if self.codebook_identity() is None:  # checked once the identity is known (no work then)
            return ""
        from dpexplorer.release.public_facts import check_dataset

        try:
            check_dataset(self.codebook, self.dataset, None)
        except DPExplorerError as exc:
            return str(exc)
        return ""
