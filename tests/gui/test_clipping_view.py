"""The clipping trade-off view on a column of known distribution (Uniform(0, 100) quantiles):
what it shows is the core's closed-form decomposition; the bounds slider redraws; the warning
is there; the private-bounds button names the column."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.views.clipping import WARNING, ClippingResult, ClippingView

N = 2000


@pytest.fixture
def compute(qtbot):
    svc = ComputeService()
    yield svc
    svc.shutdown()


@pytest.fixture
def dataset(tmp_path: Path):
    path = tmp_path / "uniform.csv"
    x = 100.0 * (np.arange(N) + 0.5) / N
    path.write_text("x\n" + "".join(f"{v}\n" for v in x))
    return load_dataset(path)


def test_view_shows_bias_and_noise_against_closed_forms(qtbot, compute, dataset) -> None:
    view = ClippingView(compute)
    qtbot.addWidget(view)
    view.show()
    query = query_from_dict({"type": "mean", "column": "x", "lower": 10, "upper": 70})
    view.set_context(dataset, query, 0.5, "replace")
    qtbot.waitUntil(lambda: isinstance(view.result, ClippingResult), timeout=30_000)
    t = view.result.tradeoff
    i, j = t.at(10.0, 70.0)
    assert (t.lows[i], t.highs[j]) == (10.0, 70.0), "the current bounds are grid points"
    # Uniform(0, 100) clipped to [10, 70]: E = (10*10 + (70^2 - 10^2)/2 + 70*30)/100 = 46
    assert t.bias[i, j] == pytest.approx(46.0 - 50.0, abs=100.0 / N)
    assert t.noise[i, j] == pytest.approx(math.sqrt(2) * 60.0 / N / 0.5, rel=1e-12)
    assert "bias -4," in view.summary.text() and view.warning.text() == WARNING
    curve = view.upper_plot.getPlotItem().listDataItems()[0]
    np.testing.assert_allclose(curve.yData, np.where(t.rmse[i] > 0, t.rmse[i], np.nan), equal_nan=True)

    view.slider.setValue((0.0, 100.0))
    i, j = t.at(0.0, 100.0)
    curve = view.upper_plot.getPlotItem().listDataItems()[0]
    np.testing.assert_allclose(curve.yData, t.rmse[i], equal_nan=True)
    assert f"at [{t.lows[i]:.4g}, {t.highs[j]:.4g}] bias {t.bias[i, j]:.4g}," in view.summary.text()

    with qtbot.waitSignal(view.private_bounds_requested) as signal:
        view.private_button.click()
    assert signal.args == ["x"]
