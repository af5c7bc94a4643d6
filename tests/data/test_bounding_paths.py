"""Contribution bounding on the polars engine chooses in numpy (run starts of a sorted person
column, a direct index of compact integer ids, or a dense rank; k successive minima or a sort of
the pair keys; ranks only in groups with more than r rows). Checked here against the window
path it replaced (kept as an oracle below: the same seeded keys must keep exactly the same rows)
on sorted and unsorted data, integer and text ids, missing ids and groups, ties, and persons
with fewer groups or rows than the bounds; and the selection itself against brute force."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from dpexplorer.data.engine import POLARS, BoundContributions
from dpexplorer.data.engine import polars_engine as engine
from dpexplorer.data.queries import Axis

AXIS = Axis("g", categories=("a", "b", "c", "d", "e", "f"))  # and "other": "x", "y", missing


def _windows_bound(frame: pl.LazyFrame, step: BoundContributions) -> pl.LazyFrame:
    """The polars window path of main at 13d1fec, with the whole 64-bit pair key (it kept the
    group's cell index in the key's low bits; the engine now breaks the key's ties by the cell
    instead, which no two groups of these tests need: their keys do not tie)."""
    seeds = step.hash_seeds()
    unit = pl.col(step.unit)
    cell = engine.cell_index_expr(step.keys, step.shape).alias("__cell")
    frame = frame.filter(unit.is_not_null()).with_row_index("__row").with_columns(cell)
    pair_key = pl.struct(step.unit, "__cell").hash(seeds[0])
    if step.max_groups > 4:  # (either path keeps the same rows)
        frame = frame.filter(pair_key.rank("dense").over(step.unit) <= step.max_groups)
    else:
        frame = frame.with_columns(pair_key.alias("__pair"))
        minima: list[str] = []
        for j in range(step.max_groups):
            above = (
                pl.when(pl.col("__pair") > pl.col(minima[-1])).then("__pair") if minima else pl.col("__pair")
            )
            frame = frame.with_columns(above.min().over(step.unit).alias(f"__min{j}"))
            minima.append(f"__min{j}")
        frame = frame.filter(pl.any_horizontal(pl.col("__pair") == pl.col(m) for m in minima))
        frame = frame.drop("__pair", *minima)
    row_key = pl.col("__row").hash(seeds[1])
    frame = frame.filter(row_key.rank("ordinal").over([step.unit, "__cell"]) <= step.max_rows)
    return frame.drop("__row", "__cell")


def _data(rows: int, seed: int) -> pl.DataFrame:
    """``rows`` rows with groups among a-f, two "other" values and missing ones, many repeated
    (person, group) pairs and identical rows (ties of content) once the ids are added."""
    rng = np.random.default_rng(seed)
    names = ["a", "b", "c", "d", "e", "f", "x", "y", None]
    groups = [names[i] for i in rng.choice(len(names), rows, p=[0.3] + [0.0875] * 8)]
    return pl.DataFrame(
        {"g": pl.Series(groups, dtype=pl.String), "v": rng.integers(0, 3, rows)}
    ).with_row_index("i")


def _ids(kind: str, seed: int) -> pl.Series:
    """Person ids of 3,000 rows (about 190 persons of 1 to 30 rows), in the layout named."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 31, 400)
    ids = np.repeat(np.arange(400), sizes)[:3000]
    if kind == "sorted":
        return pl.Series("p", ids)
    if kind == "sorted text":
        return pl.Series("p", [f"person {i:04d}" for i in ids])
    if kind == "sorted float":  # the last persons' ids NaN: one person, as polars groups them
        return pl.Series("p", np.where(ids < 150, ids / 7, np.nan))
    rng.shuffle(ids)
    if kind == "shuffled":  # compact integers: the direct index
        return pl.Series("p", ids)
    if kind == "sparse":  # integers far apart: the dense rank
        return pl.Series("p", ids * 10_000_019 - 2**40)
    if kind == "text":
        return pl.Series("p", [f"person {i}" for i in ids])
    if kind == "float":
        return pl.Series("p", np.where(ids < 150, ids / 7, np.nan))
    assert kind == "missing"  # some ids missing: dropped before the choice
    missing = rng.random(ids.size) < 0.1
    return pl.Series("p", [None if m else int(i) for m, i in zip(missing, ids, strict=True)], dtype=pl.Int64)


KINDS = ["sorted", "sorted text", "sorted float", "shuffled", "sparse", "text", "float", "missing"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("k", "r"), [(1, 1), (2, 3), (3, 1), (4, 2), (5, 2), (8, 40)])
def test_keeps_the_same_rows_as_the_window_path(kind: str, k: int, r: int) -> None:
    frame = _data(3000, 4).with_columns(_ids(kind, 3))
    for seed in (0, 1):
        step = BoundContributions("p", (AXIS,), k, r, seed)
        new = POLARS._bound(frame.lazy(), step).collect().sort("i")
        old = _windows_bound(frame.lazy(), step).collect().sort("i")
        assert new.equals(old)
        with_id = int(frame["p"].is_not_null().sum())
        everything = (k, r) == (8, 40) and "float" not in kind  # (the NaN person has > 40 rows)
        assert new.height == with_id if everything else 0 < new.height < with_id


@pytest.mark.parametrize("kind", ["sorted", "shuffled", "text"])
def test_the_sort_of_pair_keys_keeps_the_same_rows_as_the_window_path(kind: str, monkeypatch) -> None:
    """Above SMALL_GROUP_BOUND groups per person, the groups are chosen by a sort: the window
    path's dense rank keeps the same rows (checked here with the bound lowered)."""
    monkeypatch.setattr(engine, "SMALL_GROUP_BOUND", 1)
    frame = _data(3000, 6).with_columns(_ids(kind, 7))
    for k, r in ((2, 1), (5, 2)):
        step = BoundContributions("p", (AXIS,), k, r, 3)
        new = POLARS._bound(frame.lazy(), step).collect().sort("i")
        assert new.equals(_windows_bound(frame.lazy(), step).collect().sort("i"))


def test_each_naming_of_the_persons_is_taken_where_it_should_be() -> None:
    """Sorted ids give run starts; shuffled compact integers a direct index; sparse integers and
    unsorted text a dense rank; each a one-to-one naming of the persons."""
    for kind, runs in (("sorted", True), ("shuffled", False), ("sparse", False)):
        ids = _ids(kind, 5)
        people = engine._person_runs(ids)
        assert (people.starts is not None) == runs
        span = int(ids.max()) - int(ids.min()) + 1  # the direct index counts the ids in the range
        assert people.count == (span if kind == "shuffled" else ids.n_unique())
        pairs = pl.DataFrame({"id": ids, "code": people.codes}).unique()
        assert pairs["id"].n_unique() == pairs["code"].n_unique() == pairs.height
    text = engine._person_runs(_ids("text", 5))
    assert text.starts is None and text.count == _ids("text", 5).n_unique()


def _brute_kept(
    codes: np.ndarray, pairs: tuple[np.ndarray, np.ndarray], row_key: np.ndarray, k: int, r: int
) -> set[int]:
    """Per person: the k smallest distinct (pair key, cell); in each, the r rows of smallest
    (row key, row number)."""
    pair, cell = pairs
    kept: set[int] = set()
    for person in np.unique(codes):
        rows = np.flatnonzero(codes == person)
        for key in sorted({(int(pair[i]), int(cell[i])) for i in rows})[:k]:
            group = [int(i) for i in rows if (int(pair[i]), int(cell[i])) == key]
            kept.update(sorted(group, key=lambda i: (int(row_key[i]), i))[:r])
    return kept


EDGES = np.array(
    [0, 1, 2, 2**62, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 3, 2**64 - 2, 2**64 - 1], dtype=np.uint64
)


@pytest.mark.parametrize("sort", [False, True])
@pytest.mark.parametrize("keys", ["spread", "edges", "tied"])
@pytest.mark.parametrize("layout", ["runs", "index", "rank", "wide"])
@pytest.mark.parametrize(("k", "r"), [(1, 1), (2, 2), (3, 1), (4, 3), (6, 1)])
def test_the_choice_against_brute_force(
    keys: str, layout: str, k: int, r: int, sort: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random pair keys with few distinct values (several rows per group), spread over the range
    or at its ends (where "no key left", 2^64 - 1, is also a key), or (``tied``) shared by
    different cells of a person (the cell breaks the tie), row keys with ties (broken by row
    number, as an ordinal rank), persons with one row or one group; the groups chosen by
    successive minima or (``sort``) by a sort of (person, pair key, cell); the rows per pair
    counted in a table or (``wide``: 3,000 ids for 600 rows) by a sort of the pairs."""
    if sort:
        monkeypatch.setattr(engine, "SMALL_GROUP_BOUND", 0)
    rng = np.random.default_rng(k * 10 + r)
    codes = np.sort(rng.integers(0, 60, 600)) if layout == "runs" else rng.integers(0, 60, 600)
    if layout == "wide":  # ids over 3,000 values (a direct index of 3,000 persons for 600 rows)
        codes = rng.integers(0, 3000, 600)
    if keys == "spread":
        pair = rng.integers(0, 12, 600).astype(np.uint64) * np.uint64(2**59) + codes.astype(np.uint64) % 3
    else:
        pair = EDGES[rng.integers(0, EDGES.size, 600)]
    # a cell per row: one per key (distinct keys, as hashes are), or three per key (ties)
    cell = np.unique(pair, return_inverse=True)[1].reshape(-1) * 3
    if keys == "tied":
        pair = rng.integers(0, 4, 600).astype(np.uint64)
        cell = rng.integers(0, 3, 600) + 10 * (pair == 0)
    row_key = rng.integers(0, 5, 600).astype(np.uint64)
    people = engine._person_runs(pl.Series(codes if layout != "rank" else codes.astype(str)))
    assert (people.starts is not None) == (layout == "runs")
    assert (people.count * k > 2 * 600 + 1024) == (layout == "wide")  # the pairs counted by a sort
    kept = engine._kept_rows(people, (pair, cell), k, r, lambda rows: row_key[rows])
    assert kept.size == len(set(kept.tolist()))
    assert set(kept.tolist()) == _brute_kept(codes, (pair, cell), row_key, k, r)


def test_a_pair_key_of_all_ones_is_ranked_once() -> None:
    """The largest 64-bit key stands for "no key left" in the successive minima; a real key of
    that value is still one group, ranked once."""
    top = np.uint64(2**64 - 1)
    for layout in (np.array([0, 0, 0, 1]), np.array([1, 0, 0, 0])):
        people = engine._person_runs(pl.Series(layout))
        pair = np.array([top, 5, top, top], dtype=np.uint64)
        rows, ranks = engine._group_ranks(people, (pair, (pair == 5).astype(np.int64)), 3)
        assert rows.tolist() == [0, 1, 2, 3]
        person_zero = layout == 0
        assert sorted(ranks[person_zero & (pair == top)].tolist()) == [1, 1]
        assert ranks[pair == 5].tolist() == [0]
        assert ranks[~person_zero].tolist() == [0]


def test_no_rows_with_an_identifier() -> None:
    frame = pl.DataFrame({"p": [None, None], "g": ["a", "b"]}, schema={"p": pl.Int64, "g": pl.String})
    step = BoundContributions("p", (AXIS,), 2, 2, 0)
    assert POLARS._bound(frame.lazy(), step).collect().height == 0


def test_a_file_gone_before_the_bounding_is_a_data_error(tmp_path) -> None:
    """The keys are collected when the plan is built: a lazily scanned file that has gone is a
    DataError there, as in any other evaluation."""
    from dpexplorer.data.errors import DataError
    from dpexplorer.data.load import load_dataset

    path = tmp_path / "rows.parquet"
    _data(300, 1).with_columns(_ids("sorted", 1).head(300)).write_parquet(path)
    dataset = load_dataset(path, lazy=True)
    path.unlink()
    with pytest.raises(DataError, match="bound the contributions"):
        POLARS._rows(dataset, (BoundContributions("p", (AXIS,), 2, 2, 0),))


@pytest.mark.parametrize("kind", ["sorted", "sorted float", "text", "missing"])
def test_parts_of_the_persons_keep_the_same_rows(
    kind: str, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above BOUND_PART_ROWS rows, the persons are chosen in parts by a hash of their id (here
    3,000 rows in parts of 500 and of 60, in memory and from a Parquet file scanned lazily): the
    same rows as in one part and as the window path; one person with every seventh row (429
    rows over every group) bounded like the others: each person in at most k groups and r rows
    per group."""
    frame = _data(3000, 8).with_columns(_ids(kind, 9))
    many = {pl.String: "many", pl.Float64: 1e6}.get(frame["p"].dtype, 10**6)
    frame = frame.with_columns(pl.when(pl.col("i") % 7 == 0).then(pl.lit(many)).otherwise("p").alias("p"))
    frame.write_parquet(tmp_path / "rows.parquet")
    step = BoundContributions("p", (AXIS,), 3, 2, 11)
    whole = POLARS._bound(frame.lazy(), step).collect()
    assert whole.sort("i").equals(_windows_bound(frame.lazy(), step).collect().sort("i"))
    for rows in (500, 60):
        monkeypatch.setattr(engine, "BOUND_PART_ROWS", rows)
        assert POLARS._bound(frame.lazy(), step).collect().equals(whole)
        assert POLARS._bound(pl.scan_parquet(tmp_path / "rows.parquet"), step).collect().equals(whole)
    cells = whole.with_columns(engine.cell_index_expr(step.keys, step.shape))  # "x", "y", missing: one cell
    per_group = cells.group_by("p", "cell").len()
    assert per_group.filter(pl.col("p") == many)["len"].sum() == 6
    assert per_group["len"].max() <= 2 and per_group.group_by("p").len()["len"].max() <= 3
