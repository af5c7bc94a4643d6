"""Render the README's pictures: the window on each main tab, with a small plan in the budget.

    QT_QPA_PLATFORM=offscreen python docs/make_screenshots.py [OUT_DIR]

(``dpexplorer --screenshot OUT.png`` renders the first tab; this script also visits the others.)"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication

from dpexplorer.data.default import default_dataset_path
from dpexplorer.gui.app import main_thread_garbage_collection, wait_for_views
from dpexplorer.gui.main_window import MainWindow
from dpexplorer.gui.views.synthetic import MarginalErrorView


def wait(window: MainWindow, timeout: float = 120.0) -> None:
    if not wait_for_views(window, timeout):
        raise TimeoutError("views did not finish")
    for _ in range(20):  # let the last results paint
        QCoreApplication.processEvents()


def shoot(window: MainWindow, tab: str, path: Path) -> None:
    for i in range(window.tabs.count()):
        if window.tabs.tabText(i) == tab:
            window.tabs.setCurrentIndex(i)
    wait(window)
    window.grab().save(str(path))
    print(path)


FIXED: tuple[tuple[str, str | None, str, dict[str, object], str, str], ...] = (
    # (query kind, column, mechanism, parameters, tab, file): one picture per screen of issue 19
    ("median", "age", "smooth_lln", {}, "Accuracy", "fixed_smooth_accuracy.png"),
    ("median", "age", "smooth_lln", {}, "Neighbouring datasets", "fixed_lln_claim.png"),
    ("median", "age", "dist2instability", {}, "Neighbouring datasets", "fixed_d2i_median.png"),
    ("argmax", "occupation", "exponential", {}, "Neighbouring datasets", "fixed_exponential_delta.png"),
    ("workload", "age", "pmw", {}, "Neighbouring datasets", "fixed_pmw_neighbours.png"),
    ("workload", "age", "pmw", {}, "Transcript", "fixed_pmw_transcript.png"),
    ("workload", "age", "sparse_vector", {}, "Transcript", "fixed_svt_transcript.png"),
    ("workload", "age", "sparse_vector", {}, "Accuracy", "fixed_svt_accuracy.png"),
    ("workload", "sex", "blr", {}, "Neighbouring datasets", "fixed_blr_neighbours.png"),
    ("top_k", "occupation", "topk", {"k": 6}, "Selection", "fixed_topk.png"),
)


def fixed_items(window: MainWindow, out: Path) -> None:
    """The screens issue 19 fixed, each as a newcomer first sees it."""
    for kind, column, mechanism, params, tab, name in FIXED:
        window.query_panel.select_kind(kind, column)
        wait(window)
        window.mechanism_panel.select(mechanism)
        if params:
            window.mechanism_panel.set_values(params)
        wait(window)
        shoot(window, tab, out / name)


def teaching_shot(window: MainWindow, out: Path) -> None:
    """Teaching mode at 1280 x 720 (a projector: it must fit), a draw of the mean age with the
    true value revealed; the window is left out of teaching mode."""
    window.resize(1280, 720)
    window.query_panel.select_kind("mean", "age")
    wait(window)
    window.teaching_action.setChecked(True)
    window.teaching_panel.reveal.setChecked(True)
    shoot(window, "Neighbouring datasets", out / "teaching.png")
    window.teaching_action.setChecked(False)


def appearance_shots(window: MainWindow, out: Path) -> None:
    """Dark and high-contrast appearances (issue 34) on the neighbouring-datasets view, at the
    size of a laptop screen; the window is left light."""
    window.resize(1280, 800)
    for appearance, name in (("dark", "dark.png"), ("high-contrast", "high_contrast.png")):
        window.set_appearance(appearance)
        shoot(window, "Neighbouring datasets", out / name)
    window.set_appearance("light")


def _compare(
    window: MainWindow, size: tuple[int, int], pinned: str, other: str, tab: str, path: Path
) -> None:
    """Compare mode on the mean age: ``pinned`` drawn over ``other`` on ``tab``."""
    window.resize(*size)
    window.query_panel.select_kind("mean", "age")
    wait(window)
    window.mechanism_panel.select(pinned)
    wait(window)
    window.comparison.pin()
    window.mechanism_panel.select(other)
    wait(window)
    shoot(window, tab, path)
    window.comparison.stop()


def compare_shot(window: MainWindow, out: Path) -> None:
    """Compare mode (issue 34): Laplace pinned against noisy sum / noisy count on the mean age,
    on the accuracy view (the neighbours view shows Laplace as a flat line at that scale)."""
    _compare(window, (1280, 800), "laplace", "noisy_mean", "Accuracy", out / "compare.png")


def compare_budget_shot(window: MainWindow, out: Path) -> None:
    """Compare mode on the budget tab (issue 34): Laplace pinned against the Gaussian on the mean
    age, the total ε of k releases of each under four accountants, at 1440 x 900."""
    _compare(window, (1440, 900), "laplace", "gaussian", "Budget", out / "compare_budget.png")


def release_card_shots(window: MainWindow, out: Path) -> None:
    """Issue 28: the group-by neighbours view (clamped masses at the bounds, labels clear of each
    other) and a result card, released through the dialog into a throwaway ledger and folder
    (never the user's): the dialog after Release, and the window's Released tab."""
    import tempfile

    from dpexplorer.release.ledger import Ledger

    window.resize(1280, 720)
    panel = window.query_panel
    panel.select_kind("group_mean", "age")  # by sex: Female, Male and the empty group '(any other)'
    panel.group1.setCurrentText("sex")
    panel.emit_query()
    wait(window)
    window.mechanism_panel.select("noisy_mean")
    shoot(window, "Neighbouring datasets", out / "groupby_neighbours.png")
    window.query_panel.select_kind("mean", "age")
    wait(window)
    window.mechanism_panel.select("noisy_mean")
    wait(window)
    scratch = Path(tempfile.mkdtemp(prefix="dpexplorer-screenshots-"))
    window.ledger_path = lambda: scratch / "ledger.sqlite"  # type: ignore[method-assign]
    with Ledger(scratch / "ledger.sqlite") as ledger:
        ledger.set_budget(window.dataset.content_fingerprint, 2.0, 1e-6, "basic")  # type: ignore[union-attr]
    window.open_release_dialog()
    dialog = window.release_dialog
    dialog.out_dir.setText(str(scratch / "releases"))
    while dialog.preview is None or not dialog.release_button.isEnabled():
        QCoreApplication.processEvents()
    dialog.release_button.click()
    while dialog.card is None:
        QCoreApplication.processEvents()
    wait(window)
    dialog.grab().save(str(out / "result_card.png"))
    print(out / "result_card.png")
    dialog.done(0)
    shoot(window, "Released", out / "released_tab.png")


SYNTHETIC_SETTINGS = {"estimator": "dense", "iterations": 100}
"""AIM's settings for the synthetic-data pictures: the dense estimator (no JAX compile) and a
fifth of the default iterations, so that the run and the curve (MST and AIM at four ε) take
seconds; ε = 1, δ = 1e-9 and the panel's seed (20261121) as the window opens."""
SYNTHETIC_PICKED = "sex × income"
"""The marginal the true-against-synthetic picture shows: a 2-way one of the workload, with few
enough cells (9) to draw as bars, true beside synthetic."""


def synthetic_shots(window: MainWindow, out: Path) -> None:
    """Issue 30: AIM on Adult's default synthetic-data query (five columns, their 10 two-way
    marginals), one picture per page of its view: each 2-way marginal, the error against ε
    (the curve run, seeded), the run's rounds, a true against synthetic marginal; at 1400 x 860."""
    window.resize(1400, 860)
    window.query_panel.select_kind("marginals")
    wait(window)
    window.mechanism_panel.select("aim")
    window.mechanism_panel.set_values(SYNTHETIC_SETTINGS)
    tab = "Synthetic data (marginals)"
    shoot(window, tab, out / "synthetic_marginal_errors.png")
    assert window.workspace is not None
    view = window.workspace.specific["aim"][1]
    assert isinstance(view, MarginalErrorView)
    curve = view.curve_page
    view.pages.setCurrentWidget(curve)
    curve.run_button.click()
    deadline = time.monotonic() + 300
    while curve.running:
        if time.monotonic() > deadline:
            raise TimeoutError("the curve against ε did not finish in 5 minutes")
        QCoreApplication.processEvents()
    shoot(window, tab, out / "synthetic_curve.png")
    view.pages.setCurrentWidget(view.rounds_page)
    shoot(window, tab, out / "synthetic_rounds.png")
    view.picker_page.picker.setCurrentText(SYNTHETIC_PICKED)
    view.pages.setCurrentWidget(view.picker_page)
    shoot(window, tab, out / "synthetic_picker.png")


def tour_shots(window: MainWindow, out: Path) -> None:
    """The README's five-minute tour (issue 33): the Data tab just after opening the default
    dataset, the query panel set to a mean of age, and the mechanism panel with its ranking of
    the mechanisms that apply (noisy sum / noisy count chosen); at 1440 x 900 as the README's
    screenshot, where every tab's name fits."""
    window.resize(1440, 900)
    shoot(window, "Data", out / "tour_open.png")
    window.query_panel.select_kind("mean", "age")
    wait(window)
    window.mechanism_panel.select("noisy_mean")
    wait(window)
    shoot(window, "Neighbouring datasets", out / "tour_mean.png")
    for widget, name in (
        (window.query_panel, "tour_query.png"),
        (window.mechanism_panel, "tour_mechanism.png"),
    ):
        widget.grab().save(str(out / name))
        print(out / name)


def codebook_shots(window: MainWindow, out: Path) -> None:
    """The codebook page's pictures (issue 40), under docs/guide: the query panel on a fact the
    shipped codebook does not declare (Adult's fnlwgt: adult.names states no bound), the
    Codebook dialog at that column, and the release refused for it (nothing priced, nothing
    charged)."""
    guide = out / "guide"
    guide.mkdir(exist_ok=True)
    window.resize(1440, 900)
    window.query_panel.select_kind("mean", "fnlwgt")
    wait(window)
    window.query_panel.grab().save(str(guide / "codebook_panel.png"))
    dialog = window.open_codebook_dialog("fnlwgt", "bounds")
    assert dialog is not None
    wait(window)
    dialog.grab().save(str(guide / "codebook_dialog.png"))
    dialog.close()
    window.open_release_dialog()
    window.release_dialog.grab().save(str(guide / "codebook_refused.png"))
    window.release_dialog.done(0)
    for name in ("codebook_panel.png", "codebook_dialog.png", "codebook_refused.png"):
        print(guide / name)


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs")
    out.mkdir(exist_ok=True)
    app = QApplication([])
    collector = main_thread_garbage_collection()
    window = MainWindow(interactive=False, restore_layout=False)
    window.show()
    window.open_file(default_dataset_path())
    wait(window)
    only = {
        "tour": tour_shots,
        "synthetic": synthetic_shots,
        "teaching": teaching_shot,
        "codebook": codebook_shots,
    }.get(os.environ.get("DPEXPLORER_SHOTS", ""))
    if only is not None:  # only the tour's pictures, or only the synthetic-data view's
        only(window, out)
        window.close()
        return
    shoot(window, "Neighbouring datasets", out / "screenshot.png")
    shoot(window, "Accuracy", out / "accuracy.png")
    assert window.workspace is not None
    budget = window.workspace.budget_view
    budget.add_requested.emit()
    window.query_panel.select_kind("mean", "age")
    wait(window)
    window.mechanism_panel.select("gaussian")
    window.mechanism_panel.set_values({"epsilon": 0.5})
    wait(window)
    budget.add_requested.emit()
    window.query_panel.select_kind("argmax", "occupation")
    wait(window)
    window.mechanism_panel.select("exponential")
    window.mechanism_panel.set_values({"epsilon": 0.3})
    wait(window)
    budget.add_requested.emit()
    wait(window)
    shoot(window, "Selection", out / "selection.png")
    shoot(window, "Budget", out / "budget.png")
    shoot(window, "Risk", out / "risk.png")
    window.query_panel.select_kind("sum", "hours_per_week")
    wait(window)
    window.mechanism_panel.select("laplace")
    window.mechanism_panel.set_values({"epsilon": 0.05})
    wait(window)
    shoot(window, "Where to clip", out / "clipping.png")
    shoot(window, "Neighbouring datasets", out / "audit.png")  # shows the tab, then audits it
    window.audit_panel.run()
    wait(window)
    window.grab().save(str(out / "audit.png"))
    window.query_panel.select_kind("median", "capital_gain")
    wait(window)
    window.mechanism_panel.select("ptr")
    wait(window)
    shoot(window, "Neighbouring datasets", out / "ptr.png")
    shoot(window, "Distance to instability", out / "ptr_view.png")
    fixed_items(window, out)
    teaching_shot(window, out)
    appearance_shots(window, out)
    compare_shot(window, out)
    compare_budget_shot(window, out)
    release_card_shots(window, out)
    synthetic_shots(window, out)
    tour_shots(window, out)
    window.close()
    collector.timer.stop()
    del app


if __name__ == "__main__":
    main()
