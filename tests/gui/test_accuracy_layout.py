"""The Accuracy tab on a projector (issue 34, item 3: no plot squeezed while space stays empty):
noisy sum / noisy count's long summary sat beside the confidence-level control in a third of the
width, 315 px tall at 1280 x 720 in teaching mode, which left 97 px to each plot."""

from __future__ import annotations

from test_render_audit import _open, _select_tab, wait

from dpexplorer.data.default import default_dataset_path
from dpexplorer.gui.views.accuracy import AccuracyView


def test_a_long_summary_runs_across_the_view_and_the_plots_keep_their_height(qapp):
    window = _open(qapp, default_dataset_path())
    try:
        window.query_panel.select_kind("mean", "age")
        wait(window)
        window.mechanism_panel.select("noisy_mean")
        wait(window)
        window.resize(1280, 720)
        window.teaching_action.setChecked(True)
        wait(window)
        assert _select_tab(window, "Accuracy")
        wait(window)
        (view,) = window.findChildren(AccuracyView)
        assert len(view.summary.text()) > 400  # the long summary this is about
        assert view.summary.width() >= 0.9 * view.vs_n.width()
        for plot in (view.vs_epsilon, view.tail, view.vs_n):
            assert plot.height() >= 140, (plot.getPlotItem().titleLabel.text, plot.height())
    finally:
        window.teaching_action.setChecked(False)  # teaching mode's font is the application's
        window.close()
        window.compute.wait_for_workers(30.0)
