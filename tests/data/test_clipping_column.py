"""The clipping view's column (dpexplorer.data.clipping): through the engine, unclipped, missing
values left out, sorted; the bias on it equals the bias on the values themselves."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpexplorer.data.clipping import bias_grid, clipping_bias, column_values
from dpexplorer.data.load import load_dataset


def test_column_values_are_unclipped_sorted_and_skip_missing(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("x,y\n5,a\n,b\n-3.5,c\n1e6,d\n2,e\n")
    dataset = load_dataset(path)
    np.testing.assert_array_equal(column_values(dataset, "x"), [-3.5, 2.0, 5.0, 1e6])
    lows, highs = np.array([0.0, 1.0]), np.array([4.0, 10.0])
    bias, n = clipping_bias(dataset, "x", "sum", lows, highs)
    assert n == 4
    np.testing.assert_allclose(bias, bias_grid(np.array([-3.5, 2.0, 5.0, 1e6]), "sum", lows, highs))
    # [0, 4]: -3.5 -> 0, 5 -> 4, 1e6 -> 4: (0 + 2 + 4 + 4) - (1e6 + 3.5)
    assert bias[0, 0] == (0 + 2 + 4 + 4) - (-3.5 + 2 + 5 + 1e6)
