"""Per-column fingerprints (dpexplorer/data/identity.py, fingerprints.py; issue 40): a column's
print is the multiset of its cells (the content key's cell hashes summed), so a renamed column,
a projection, another row order or file format keep it; a changed cell changes its column's
print only; a constant column is said to be one; numpy and the compiled kernels agree."""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl
import pytest

from dpexplorer.data import fingerprints, identity
from dpexplorer.data.fingerprints import column_fingerprints
from dpexplorer.data.load import load_dataset
from tests.data.test_identity import _cell, _mixed, _random_table, hashing  # noqa: F401 (the fixture: numpy, kernels)

M = (1 << 64) - 1


def reference(values: list) -> str:
    """A column's print cell by cell from the definition: SHA-256 of column-v1, the number of
    cells and each lane's sum of the cells' hashes (tests/data/test_identity.py's ``_cell``)."""
    sums = [sum(_cell(lane, v) for v in values) & M for lane in (0, 1)]
    digest = hashlib.sha256(b"column-v1\x1d")
    for value in (len(values), *sums):
        digest.update(value.to_bytes(8, "big"))
    return digest.hexdigest()[:32]


@pytest.mark.usefixtures("hashing")
def test_a_column_print_is_the_multiset_of_its_cells() -> None:
    frame = _mixed(300, seed=4)
    prints = column_fingerprints(frame)
    for name in frame.columns:
        assert prints[name].fingerprint == reference(frame[name].to_list()), name
        assert not prints[name].constant
    disguised = frame.rename({"i": "years", "s": "label"}).sample(fraction=1.0, shuffle=True, seed=1)
    kept = column_fingerprints(disguised.select("label", "f", "years"))
    assert kept == {"label": prints["s"], "f": prints["f"], "years": prints["i"]}
    changed = frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 5).then(99).otherwise(pl.col("i")).alias("i")
    )
    after = column_fingerprints(changed)
    assert after["i"] != prints["i"] and all(after[c] == prints[c] for c in frame.columns if c != "i")


@pytest.mark.usefixtures("hashing")
def test_a_constant_column_is_said_to_be_one() -> None:
    frame = pl.DataFrame({"k": ["x"] * 50, "none": [None] * 50, "two": ["x"] * 49 + ["y"], "n": [7] * 50})
    prints = column_fingerprints(frame)
    assert [prints[c].constant for c in frame.columns] == [True, True, False, True]
    assert column_fingerprints(frame.head(0))["k"].constant  # no cell: says nothing either


def test_kernels_numpy_batches_formats_and_streaming_give_the_same_prints(tmp_path, monkeypatch) -> None:
    pytest.importorskip("llvmlite")
    assert identity.kernels() is not None
    monkeypatch.setattr(identity, "KERNEL_BLOCK", 64)  # several blocks a batch
    monkeypatch.setattr(fingerprints, "HASH_BATCH", 97)  # several batches, the first cell in one
    monkeypatch.setattr(fingerprints, "KERNEL_CELLS", 0)  # the kernels for every batch
    rng = np.random.default_rng(40)
    for _ in range(4):
        frame = _random_table(rng, int(rng.integers(1, 400)))
        by_kernels = column_fingerprints(frame)
        with monkeypatch.context() as numpy_only:
            numpy_only.setitem(identity._kernel_state, "module", None)
            assert column_fingerprints(frame) == by_kernels
        assert column_fingerprints(frame.lazy()) == by_kernels  # streamed in batches
    adult = pl.DataFrame(
        {"age": [39, 50, None, 38], "sex": ["Male", "Female", "NA", ""], "w": [1.5, 2.0, -0.0, 3]}
    )
    adult.write_parquet(tmp_path / "a.parquet")
    adult.write_csv(tmp_path / "a.csv")
    assert (
        load_dataset(tmp_path / "a.csv").column_prints == load_dataset(tmp_path / "a.parquet").column_prints
    )
