"""Appearance and scale (issue 34): every plot colour from gui/palette.py, M(D) and M(D')
distinguishable under colour-vision deficiencies, pens at least 2 device pixels at a device
pixel ratio of 2, plot fonts that grow with teaching mode, and no white plot in dark mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyqtgraph as pg
import pytest
from conftest import wait_idle
from cvd import MACHADO_2009, contrast, delta_e, simulate, to_linear

from dpexplorer.gui import palette

MIN_DELTA_E = 40.0
"""CIE ΔE*ab between M(D) and M(D') as a dichromat sees them (2.3 is a just-noticeable
difference; 40 keeps them apart at a glance, on thin lines)."""
MIN_CONTRAST = 3.0
"""WCAG 2's minimum for graphics (1.4.11, non-text contrast) against the plot background."""


@pytest.mark.parametrize("scheme", list(palette.SCHEMES.values()), ids=lambda s: s.name)
@pytest.mark.parametrize("deficiency", list(MACHADO_2009))
def test_d_and_d_prime_stay_apart_for_colour_blind_viewers(scheme, deficiency):
    d, d_prime, background = (
        simulate(scheme.get(role), deficiency)
        for role in (palette.D, palette.D_PRIME, palette.PLOT_BACKGROUND)
    )
    assert delta_e(d, d_prime) >= MIN_DELTA_E
    assert contrast(d, background) >= MIN_CONTRAST
    assert contrast(d_prime, background) >= MIN_CONTRAST


def test_the_simulation_tells_a_red_green_pair_apart_from_a_safe_one():
    """The check above can fail: pure red against pure green is one colour to a deuteranope."""
    red, green = (simulate(c, "deuteranopia") for c in ((220, 40, 40), (40, 160, 40)))
    assert delta_e(to_linear((220, 40, 40)), to_linear((40, 160, 40))) > 60  # far apart normally
    assert delta_e(red, green) < 20


def test_every_role_has_a_colour_in_every_scheme():
    for scheme in (palette.DARK, palette.HIGH_CONTRAST):
        assert set(scheme.colours) == set(palette.LIGHT.colours)


def _plot_pens(window) -> list[tuple[str, float]]:
    """Every visible pen of every plot item under ``window``: (what, width in device pixels)."""
    pens = []
    for view in window.findChildren(pg.GraphicsView):
        for item in view.scene().items():
            if isinstance(item, (pg.PlotDataItem, pg.PlotCurveItem)) and item.isVisible():
                pen = pg.mkPen(item.opts["pen"])
                what = f"curve {item.name() if isinstance(item, pg.PlotDataItem) else ''}"
            elif isinstance(item, pg.InfiniteLine) and item.isVisible():
                pen, what = item.pen, "line"
            elif isinstance(item, pg.ErrorBarItem) and item.isVisible():
                pen, what = pg.mkPen(item.opts["pen"]), "error bars"
            else:
                continue
            if pen.style() != pg.QtCore.Qt.PenStyle.NoPen:
                assert pen.isCosmetic(), what
                pens.append((what, pen.widthF()))
    return pens


SCALED_WINDOW = textwrap.dedent(
    """
    import json, sys, time
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from dpexplorer.data.default import default_dataset_path
    from dpexplorer.gui.main_window import MainWindow
    sys.path.insert(0, sys.argv[1])
    from test_palette import _plot_pens

    window = MainWindow(interactive=False, restore_layout=False)
    window.show()
    window.open_file(default_dataset_path())

    def settle():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            app.processEvents()
            time.sleep(0.02)
            if window.dataset is not None and window.views_idle() and window.explorer.mechanism:
                for _ in range(20):
                    app.processEvents()
                return

    settle()
    for i in range(window.tabs.count()):
        window.tabs.setCurrentIndex(i)
        settle()
    print(json.dumps({"ratio": window.devicePixelRatioF(), "pens": _plot_pens(window)}))
    window.close()
    """
)


def test_plot_pens_are_at_least_two_device_pixels_at_twice_the_scale(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "QT_SCALE_FACTOR": "2"}
    script = tmp_path / "scaled.py"
    script.write_text(SCALED_WINDOW)
    done = subprocess.run(
        [sys.executable, str(script), str(Path(__file__).parent)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["ratio"] == 2.0
    widths = result["pens"]
    assert len(widths) >= 10  # curves and lines of the neighbours, accuracy, budget, risk views
    thin = [(what, width) for what, width in widths if width < 2.0]
    assert not thin


def test_pen_widths_scale_with_the_device_pixel_ratio(qapp, monkeypatch):
    monkeypatch.setattr(palette, "device_pixel_ratio", lambda: 2.0)
    assert palette.pen(palette.D, 2).widthF() == 4.0
    assert palette.pen(palette.D, 0).widthF() == 2.0  # never thinner than one logical pixel
    assert palette.pen(palette.D, 1).isCosmetic()
    monkeypatch.setattr(palette, "device_pixel_ratio", lambda: 1.0)
    assert palette.pen(palette.D, 2).widthF() == 2.0


def _axis_points(window) -> float:
    plot = window.accuracy_view.vs_epsilon.getPlotItem()
    return plot.getAxis("bottom").style["tickFont"].pointSizeF()


def test_teaching_mode_enlarges_plot_fonts(qtbot, window):
    normal = _axis_points(window)
    window.teaching_action.setChecked(True)
    wait_idle(qtbot, window)
    try:
        assert _axis_points(window) >= 1.4 * normal
        label = window.accuracy_view.vs_epsilon.getPlotItem().getAxis("bottom").labelStyle["font-size"]
        assert float(label.removesuffix("pt")) <= palette.LABEL_MAX_POINTS  # long titles fit
    finally:
        window.teaching_action.setChecked(False)
    assert _axis_points(window) == pytest.approx(normal)


def _backgrounds(window) -> list[int]:
    return [view.backgroundBrush().color().lightness() for view in window.findChildren(pg.GraphicsView)]


@pytest.mark.parametrize("appearance", ["dark", "high-contrast"])
def test_dark_appearances_leave_no_plot_white(qtbot, window, appearance, tmp_path):
    for i in range(window.tabs.count()):  # build and draw every view first
        window.tabs.setCurrentIndex(i)
        wait_idle(qtbot, window)
    window.tabs.setCurrentIndex(0)
    try:
        window.set_appearance(appearance)
        wait_idle(qtbot, window)
        backgrounds = _backgrounds(window)
        assert backgrounds and max(backgrounds) < 60
        scheme = palette.current()
        items = window.neighbours_view.outputs.listDataItems()
        colours = {pg.mkPen(item.opts["pen"]).color().getRgb()[:3] for item in items}
        assert scheme.get(palette.D) in colours  # curves drawn before the switch were recoloured
        window.grab().save(str(tmp_path / f"{appearance}.png"))
    finally:
        window.set_appearance("light")
    assert min(_backgrounds(window)) > 250
