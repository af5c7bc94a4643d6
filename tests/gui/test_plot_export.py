"""Plots save as PNG, SVG (via QSvgGenerator) and CSV, atomically."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from PySide6.QtGui import QImage

from dpexplorer.gui.views.base import View, new_plot


@pytest.fixture
def view(qtbot):
    v = View("test")
    plot = new_plot("x", "y")
    x = np.linspace(0, 1, 11)
    plot.plot(x, x**2)
    v.body.addWidget(plot)
    v.columns = {"x": list(x), "y": list(x**2)}
    v.resize(400, 300)
    qtbot.addWidget(v)
    return v


def test_png(view, tmp_path):
    path = view.save(tmp_path / "p.png")
    image = QImage(str(path))
    assert image.width() == 400 and image.height() == 300
    assert list(tmp_path.iterdir()) == [path]


def test_svg_is_a_real_drawing(view, tmp_path):
    path = view.save(tmp_path / "p.svg")
    text = path.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert "<path" in text or "<polyline" in text


def test_csv_holds_the_plotted_data(view, tmp_path):
    path = view.save(tmp_path / "p.csv")
    rows = list(csv.reader(path.open()))
    assert rows[0] == ["x", "y"]
    assert float(rows[-1][1]) == pytest.approx(1.0)
    assert len(rows) == 12


def test_unknown_suffix_is_refused(view, tmp_path):
    with pytest.raises(ValueError, match="png"):
        view.save(tmp_path / "p.jpg")


def test_log_ticks_label_powers_of_ten_and_leave_crowded_multiples_blank():
    import math

    from dpexplorer.gui.views.base import log_ticks

    major, minor = log_ticks([[350.0, 48_842.0]])
    assert [p for p, _ in major] == [2.0, 3.0, 4.0, 5.0]
    assert [t for _, t in major] == ["10²", "10³", "10⁴", "10⁵"]
    assert all(t == "" for _, t in minor)  # three decades: multiples unlabelled
    _, minor = log_ticks([[0.2, 5.0]])  # under two decades: 2· and 5· labelled
    labels = dict(minor)
    assert labels[math.log10(2) - 1] == "0.2" and labels[math.log10(3)] == ""
    assert log_ticks([[0.0, -1.0, float("nan")]]) is None


def test_log_ticks_stay_few_over_any_number_of_decades():
    """The smooth-sensitivity accuracy tab spans 120 decades: one label a decade piled up."""
    import math

    from dpexplorer.gui.views.base import MAX_LOG_LABELS, log_ticks

    for low, high in ((1e-120, 2.0), (1e-300, 1e300), (3.0, 4.0), (1e-5, 1e5)):
        major, minor = log_ticks([[low, high]])
        labelled = [p for p, t in major + minor if t]
        assert 2 <= len(labelled) <= MAX_LOG_LABELS, (low, high, labelled)
        assert len(minor) <= 100
        positions = [p for p, _ in major]
        assert min(positions) <= math.log10(low) + 20 and max(positions) >= math.log10(high) - 20


def test_sticky_range_keeps_a_range_that_still_fits_and_refits_otherwise():
    from dpexplorer.gui.views.base import sticky_range

    assert sticky_range((0.0, 10.0), 1.0, 9.0) is None  # fits, fills 80 %
    assert sticky_range((0.0, 10.0), 1.0, 4.0) == pytest.approx((0.76, 4.24))  # fills 30 %: refit
    assert sticky_range((0.0, 10.0), -1.0, 9.0) == pytest.approx((-3.3, 9.8))  # spills left: room there
    assert sticky_range((0.0, 10.0), 0.0, 12.0) == pytest.approx((-0.96, 14.76))  # spills right
    assert sticky_range((0.0, 1.0), 2.0, 2.0) == pytest.approx((1.42, 2.58))  # a point, elsewhere
    assert sticky_range((0.0, 1.0), float("nan"), 1.0) is None
