"""The Attacks tab (why DP): the differencing, reconstruction and membership views as its three
pages, their jobs through the compute service (latest wins, progress, cancel), computed when a
page is shown and out of date. Exploration: they read the open dataset's true rows, release
nothing and charge nothing; teaching mode makes each page hide its truth until revealed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QTabWidget

from dpexplorer.gui.throttle import Throttle
from dpexplorer.gui.window_parts import WindowParts

if TYPE_CHECKING:
    from dpexplorer.gui.views.attacks import AttackView

PAGES = ("differencing", "reconstruction", "membership")
JOB_PREFIX = "attack "
"""A page's job is the compute service's view ``attack <page>``."""


class AttackViews(QObject):
    """Owns the Attacks tab and its pages' jobs."""

    def __init__(self, window: WindowParts) -> None:
        super().__init__(window)
        self.window = window
        self.tab: QTabWidget | None = None
        self.views: dict[str, AttackView] = {}
        self._stale = set(PAGES)
        self._pending: dict[str, dict[str, Any]] = {}
        self._throttle = Throttle(self.submit_visible, 16, self)
        window.explorer.registry_ready.connect(self._build)

    def _build(self) -> None:
        """Insert the Attacks tab before the Data tab."""
        if self.tab is not None:
            return
        from dpexplorer.gui.views.attacks import VIEWS

        window = self.window
        self.tab = QTabWidget()
        self.tab.setDocumentMode(True)
        for page in PAGES:
            view = VIEWS[page]()
            self.views[page] = view
            self.tab.addTab(view, page.capitalize())
            view.settings_changed.connect(lambda p=page: self._changed(p))
            view.set_teaching(window.teaching_action.isChecked())
            if page in self._pending:
                view.set_settings(self._pending.pop(page))
        rec = self.views["reconstruction"]
        rec.run.bind(window.compute, JOB_PREFIX + "reconstruction")  # type: ignore[attr-defined]
        rec.run_requested.connect(lambda: self._changed("reconstruction"))  # type: ignore[attr-defined]
        rec.cancel_requested.connect(lambda: window.compute.cancel(JOB_PREFIX + "reconstruction"))  # type: ignore[attr-defined]
        window.tabs.insertTab(window.tabs.indexOf(window.dataset_view), self.tab, "Attacks")
        window.teaching_action.toggled.connect(self._teaching)
        window.dataset_loaded.connect(lambda _d: self._all_stale())
        window.tabs.currentChanged.connect(lambda _i: self.submit_visible())
        self.tab.currentChanged.connect(lambda _i: self.submit_visible())
        window.compute.finished.connect(self._on_result)
        window.compute.failed.connect(self._on_failure)
        self.submit_visible()

    def page_view(self, page: str) -> AttackView | None:
        return self.views.get(page)

    def show_page(self, page: str) -> None:
        if self.tab is not None and page in self.views:
            self.tab.setCurrentWidget(self.views[page])

    def set_settings(self, page: str, values: dict[str, Any]) -> None:
        """A lesson step's settings for one page (kept until the page exists)."""
        view = self.views.get(page)
        if view is None:
            self._pending[page] = {**self._pending.get(page, {}), **values}
        else:
            view.set_settings(values)

    def _teaching(self, on: bool) -> None:
        for view in self.views.values():
            view.set_teaching(on)

    def _all_stale(self) -> None:
        self._stale.update(PAGES)
        self._throttle()

    def _changed(self, page: str) -> None:
        self.window.compute.cancel(JOB_PREFIX + page)
        self._stale.add(page)
        self._throttle()

    def submit_visible(self) -> None:
        from dpexplorer.gui.views.attacks import JOBS

        dataset = self.window.dataset
        if dataset is None:
            return
        seed = self.window.mechanism_panel.seed.value()
        for page, view in self.views.items():
            if page in self._stale and view.isVisible():
                self._stale.discard(page)
                column, value = view.target()
                if page == "reconstruction":
                    view.run_started()  # type: ignore[attr-defined]
                self.window.compute.submit(
                    JOB_PREFIX + page, JOBS[page], dataset, column, value, view.settings(), seed
                )

    @property
    def pending(self) -> bool:
        return self._throttle.pending

    def stop(self) -> None:
        self._throttle.stop()

    def _view(self, job: str) -> AttackView | None:
        return self.views.get(job[len(JOB_PREFIX) :]) if job.startswith(JOB_PREFIX) else None

    def _on_result(self, job: str, _generation: int, result: object) -> None:
        view = self._view(job)
        if view is not None:
            view.deliver(result)

    def _on_failure(self, job: str, _generation: int, message: str) -> None:
        view = self._view(job)
        if view is not None:
            view.show_error(message)
