"""The main window's release side: the shown dataset's identity in the budget ledger (its
content fingerprint, computed on a worker after the load), the Release menu's dialog (refused,
charging nothing, while the query uses a public fact the codebook does not declare), the
private bounds and categories dialogs (their estimates go into the codebook, origin
"estimated"), the Released tab, and the budget plan read from and added to the ledger.

:class:`WindowRelease` is a mixin of :class:`~dpexplorer.gui.main_window.MainWindow`; nothing
here is charged or read from the ledger under any key but the dataset's own, and nothing before
that key is known (:meth:`WindowRelease.identity_known`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.gui import jobs
from dpexplorer.gui.teaching import RELEASE_BLOCKED

if TYPE_CHECKING:
    from dpexplorer.data.codebook import Codebook
    from dpexplorer.gui.window_parts import WindowParts as _Window
else:
    _Window = object

IDENTITY_VIEW = "dataset-identity"
"""The job computing the dataset's content fingerprint (its key in the budget ledger), after the load."""
IDENTITY_PENDING = (
    "The dataset's identity for the budget ledger (its content fingerprint) is being computed: "
    "releases are charged under it, so they wait until it is known."
)
RELEASE_TIP = "Charge the budget ledger, draw exact noise and write the files"


def releases_dir() -> Path:
    """Where the window's release dialogs write their files by default (read at each release:
    the home directory may change, as in the tests)."""
    return Path.home() / "dpexplorer-releases"


def peeked_bounds_warning(query: Any, observed: dict[str, tuple[float, float]]) -> str:
    """A warning for the steward when a query's clipping bounds, declared by typing them, are
    the column's own observed minimum or maximum: published bounds then reveal the data's
    extremes unless they are known from outside it. Empty when the bounds differ from both (or
    the query has none)."""
    column, lower, upper = (getattr(query, name, None) for name in ("column", "lower", "upper"))
    if column not in observed or lower is None or upper is None:
        return ""
    low, high = observed[column]
    peeked = [
        f"{name} {value:g}"
        for name, value, seen in (("lower", lower, low), ("upper", upper, high))
        if value == seen
    ]
    if not peeked:
        return ""
    return (
        f"The {' and '.join(peeked)} bound{'s are' if len(peeked) == 2 else ' is'} the observed "
        f"{'extremes' if len(peeked) == 2 else 'extreme'} of {column} in this file. The release "
        "publishes its bounds: unless they are known from outside the data (a documented range), "
        "they would reveal the smallest or largest value of a real person. Declare bounds known "
        "from outside the data, or estimate them privately (Estimate privately… under the query)."
    )


class WindowRelease(_Window):
    """Identity, release dialogs and the ledger's plan, for the main window."""

    error_shown: Signal
    release_action: QAction
    codebook: Codebook
    blockers: Callable[[Any], list[str]]
    codebook_mismatch: Callable[[], str]
    use_estimated: Callable[[str, str, Any, int, str], None]
    open_codebook_dialog: Callable[..., object]
    engine_label: QLabel
    last_error: str | None
    _identified: object | None
    """The dataset whose ledger identity is known (the shown one once computed)."""

    def open_plan_audit_dialog(self) -> None:
        """The Budget tab's "Audit this plan…": the replay audit of the plan as it would be
        exported (File > Export Analysis), on the open data with the window's codebook. A plan
        that cannot be exported (no statistic, an undeclared fact) is named in the error box."""
        from dpexplorer.core.errors import DPExplorerError
        from dpexplorer.gui.analysis_files import window_analysis
        from dpexplorer.gui.plan_audit_dialog import PlanAuditDialog
        from dpexplorer.release.plan_run import plan_entries

        if self.dataset is None:
            return
        try:
            entries, rate = plan_entries(window_analysis(self).plan_json())
        except DPExplorerError as exc:
            self.show_error(f"Could not audit the plan: {exc}")
            return
        self.plan_audit_dialog = PlanAuditDialog(
            self.compute,
            dataset=self.dataset,
            entries=entries,
            rate=rate,
            codebook=self.codebook,
            parent=self,
        )
        self.plan_audit_dialog.open()

    def open_private_bounds_dialog(self, column: str) -> None:
        """Release DP quantiles of ``column`` as bounds, then put them in the codebook (origin
        "estimated", with the ledger rows) and so in the query. The coarse range the quantiles
        search starts at the codebook's bounds or the query's own, never the data's range."""
        query = self.explorer.query
        if self.dataset is None or not column:
            return
        if not self.identity_known():
            self.show_error(IDENTITY_PENDING)
            return
        from dpexplorer.gui.private_bounds_dialog import PrivateBoundsDialog
        from dpexplorer.gui.query_facts import bounds_of

        declared = bounds_of(self.codebook, column)
        explored = (column, "bounds") in self.query_panel.observed
        if declared is None and getattr(query, "column", None) == column and not explored:
            declared = (float(getattr(query, "lower")), float(getattr(query, "upper")))  # noqa: B009
        self.private_bounds_dialog = PrivateBoundsDialog(
            self.compute,
            dataset=self.dataset,
            column=column,
            declared=declared or (0.0, 0.0),  # the steward types the range
            ledger_path=self.ledger_path(),
            out_dir=releases_dir(),
            parent=self,
        )
        self.private_bounds_dialog.bounds_chosen.connect(
            lambda low, high: self._use_bounds(column, low, high)
        )
        self.private_bounds_dialog.finished.connect(lambda _code: self.reload_ledger())
        self.private_bounds_dialog.open()

    def _use_bounds(self, column: str, lower: float, upper: float) -> None:
        """The private bounds into the codebook: estimated, paid for by the dialog's releases."""
        result = self.private_bounds_dialog.result
        rows = [r.row_id for _, r in result.releases]
        citation = (
            f"two DP quantiles (ledger rows {', '.join(map(str, rows))}, ε = {result.epsilon:g} in all)"
        )
        self.use_estimated(column, "bounds", (lower, upper), rows[0], citation)

    def open_private_categories_dialog(self, column: str) -> None:
        """Select ``column``'s categories privately (a count by privately selected keys, charged),
        then put the released keys in the codebook (origin "estimated", with the ledger row)."""
        if self.dataset is None or not column:
            return
        if not self.identity_known():
            self.show_error(IDENTITY_PENDING)
            return
        from dpexplorer.gui.private_categories_dialog import PrivateCategoriesDialog

        dialog = PrivateCategoriesDialog(
            self.compute,
            dataset=self.dataset,
            column=column,
            ledger_path=self.ledger_path(),
            out_dir=releases_dir(),
            parent=self,
        )
        dialog.categories_chosen.connect(
            lambda values, row, citation: self.use_estimated(column, "categories", values, row, citation)
        )
        dialog.finished.connect(lambda _code: self.reload_ledger())
        self.private_categories_dialog = dialog
        dialog.open()

    def ledger_path(self) -> Path:
        from dpexplorer.release.ledger import default_ledger_path

        return default_ledger_path()

    def identity_known(self) -> bool:
        """True once the shown dataset's ledger identity (content fingerprint) is computed:
        until then nothing reads or charges the ledger for it (never under another key)."""
        return self.dataset is not None and self._identified is self.dataset

    def _identify_shown(self) -> None:
        """Compute the shown dataset's ledger identity on a worker, unless known or under way."""
        if self.dataset is None or self.identity_known() or IDENTITY_VIEW in self.compute.pending_views():
            return
        self._update_release_action()
        if self.workspace is not None:
            self.workspace.budget_view.set_identity_note(IDENTITY_PENDING)
        self.compute.submit(IDENTITY_VIEW, jobs.identify_dataset, self.dataset)

    def _show_identity(self, result: tuple[object, str]) -> None:
        dataset, _key = result
        if dataset is not self.dataset:
            return  # another file's (opened since)
        self._identified = dataset
        if self.workspace is not None:
            self.workspace.budget_view.set_identity_note(None)
        self._update_release_action()
        self.reload_ledger()
        if self._loading is None:
            self.statusBar().showMessage(f"{self._loaded_text()} Identified for the budget ledger.", 5000)

    def _loaded_text(self) -> str:
        dataset = self.dataset
        return f"Loaded {dataset.path.name}: {dataset.n_rows:,} rows." if dataset is not None else ""

    def _identity_failed(self, message: str) -> None:
        text = f"Could not identify the dataset for the budget ledger: {message}. Releases stay disabled."
        if self.workspace is not None:
            self.workspace.budget_view.set_identity_note(text)
        self.release_action.setToolTip(text)
        self.last_error = text
        self.statusBar().showMessage(text)
        self.error_shown.emit(text)

    def _update_release_action(self) -> None:
        """Release is available outside teaching mode once the dataset's identity is known;
        otherwise disabled, its tooltip saying why."""
        teaching = self.teaching_action.isChecked()
        pending = self.dataset is not None and not self.identity_known()
        self.release_action.setEnabled(not teaching and not pending)
        tip = RELEASE_BLOCKED if teaching else IDENTITY_PENDING if pending else RELEASE_TIP
        self.release_action.setToolTip(tip)

    def open_release_dialog(self) -> None:
        if self.teaching_action.isChecked():
            self.show_error(RELEASE_BLOCKED)
            return
        if self.dataset is not None and not self.identity_known():
            self.show_error(IDENTITY_PENDING)
            return
        explorer = self.explorer
        if self.dataset is None or explorer.query is None or explorer.mechanism is None:
            self.show_error("Choose a query and a mechanism before releasing.")
            return
        if mismatch := self.codebook_mismatch():
            self.show_error(f"Release refused: {mismatch}. Nothing was charged.")
            return
        from dpexplorer.gui.query_facts import bounds_of
        from dpexplorer.gui.release_dialog import ReleaseDialog

        query = explorer.query
        column = str(getattr(query, "column", ""))
        fact = self.codebook.fact(column, "bounds")
        used = (getattr(query, "lower", None), getattr(query, "upper", None))
        typed = fact is not None and fact.origin == "declared" and bounds_of(self.codebook, column) == used
        self.release_dialog = ReleaseDialog(
            self.compute,
            dataset=self.dataset,
            query=explorer.query,
            mechanism=explorer.mechanism.name,
            params=explorer.mechanism.validate(explorer.params),
            relation=explorer.relation,
            ledger_path=self.ledger_path(),
            out_dir=releases_dir(),
            warning=peeked_bounds_warning(query, self.query_panel.ranges) if typed else "",
            sampling_rate=self.dataset_view.sampling_rate,
            refused=tuple(self.blockers(query)),
            codebook=self.codebook,
            parent=self,
        )
        self.release_dialog.codebook_requested.connect(lambda: self.open_codebook_dialog())
        self.release_dialog.finished.connect(lambda _code: self.reload_ledger())
        self.release_dialog.released.connect(self.show_released)
        self.release_dialog.open()

    def show_released(self, released: object) -> None:
        """A release's result card, at the top of the Released tab (made at the first release of
        the session), which the window then shows."""
        from dpexplorer.gui.result_card import ReleasedView

        if getattr(self, "released_view", None) is None:
            self.released_view = ReleasedView()
            self.tabs.insertTab(self.tabs.indexOf(self.dataset_view), self.released_view, "Released")
        self.released_view.add(released)  # type: ignore[arg-type]
        self.tabs.setCurrentWidget(self.released_view)

    def _sampling_changed(self, rate: float | None) -> None:
        """The Data tab's sampling claim: the budget view composes the plan as it would be charged."""
        if self.workspace is not None:
            self.workspace.budget_view.set_sampling_rate(rate)

    def reload_ledger(self) -> None:
        """Show the dataset's budget and released measurements (from the ledger) in the plan,
        once the dataset's identity (its key there) is known; until then the panel says so."""
        if self.dataset is None or self.workspace is None:
            return
        if not self.identity_known():
            self.workspace.budget_view.set_identity_note(IDENTITY_PENDING)
            return
        from dpexplorer.release.ledger import Ledger
        from dpexplorer.release.release import dataset_key

        try:
            with Ledger(self.ledger_path()) as ledger:
                self.workspace.budget_view.load_ledger(ledger, dataset_key(self.dataset, ledger))
        except DPExplorerError as exc:
            self.show_error(f"Could not read the budget ledger: {exc}")

    def add_current_to_plan(self) -> None:
        explorer = self.explorer
        if self.workspace is None:
            return
        if explorer.mechanism is None or explorer.query_input is None or explorer.query is None:
            self.show_error("Choose a query and a mechanism before adding it to the plan.")
            return
        number = len(self.workspace.budget_view.plan) + 1
        label = f"#{number} {explorer.query.describe()}"  # type: ignore[attr-defined]
        params = explorer.mechanism.validate(explorer.params)
        self.plan_queries[label] = (explorer.query.to_dict(), explorer.relation)  # type: ignore[attr-defined]
        self.workspace.budget_view.add_measurement(
            self.workspace.planned(explorer.mechanism, params, explorer.query_input, label)
        )
