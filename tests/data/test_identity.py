"""The ledger key content-v2 (dpexplorer/data/identity.py, issue 29): the vectorised hash equals
a slow reference written row by row from the definition in the module docstring and
PLAN_FORMAT.md; it does not depend on row order, line endings, quoting, how a missing value is
spelled, CSV or Parquet, eager or streamed, batching or threads; a one-cell change changes it;
older ledgers' keys move to it."""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import math
import struct
import sys
import threading

import numpy as np
import polars as pl
import pytest

from dpexplorer.data import fingerprints, identity
from dpexplorer.data.load import content_fingerprint, content_fingerprint_v1, load_dataset
from dpexplorer.release.ledger import Ledger

M = (1 << 64) - 1


# ---------------------------------------------------------------- the slow reference
def _fmix(x: int) -> int:  # MurmurHash3's fmix64
    x ^= x >> 33
    x = x * 0xFF51AFD7ED558CCD & M
    x ^= x >> 33
    x = x * 0xC4CEB9FE1A85EC53 & M
    return x ^ x >> 33


def _splitmix(x: int) -> int:  # SplitMix64's finaliser
    x ^= x >> 30
    x = x * 0xBF58476D1CE4E5B9 & M
    x ^= x >> 27
    x = x * 0x94D049BB133111EB & M
    return x ^ x >> 31


MIXERS = (_fmix, _splitmix)
SEEDS = (0x243F6A8885A308D3, 0x13198A2E03707344)
ROWS = (0xA4093822299F31D0, 0x082EFA98EC4E6C89)
TAGS = {"missing": 0, "text": 1, "int": 2, "float": 3, "bool": 4, "date": 5, "datetime": 6}


def _canonical(value: object) -> tuple[str, int | bytes]:
    """A cell's canonical (tag, word or bytes), straight from the definition."""
    if value is None or value in ("", "NA"):
        return "missing", 0
    if isinstance(value, bool):
        return "bool", int(value)
    if isinstance(value, int):
        if -(1 << 63) <= value < 1 << 63:
            return "int", value & M
        return _canonical(float(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "float", 0x7FF8000000000000
        if value.is_integer() and abs(value) < 2.0**63:
            return "int", int(value) & M
        return "float", struct.unpack("<Q", struct.pack("<d", value))[0]
    if isinstance(value, dt.datetime):
        epoch = dt.datetime(1970, 1, 1, tzinfo=value.tzinfo)
        return "datetime", (value - epoch) // dt.timedelta(microseconds=1) & M
    if isinstance(value, dt.date):
        return "date", (value - dt.date(1970, 1, 1)).days & M
    if isinstance(value, bytes):
        return ("missing", 0) if value in (b"", b"NA") else ("text", value)
    return "text", str(value).encode("utf-8")


def _cell(lane: int, value: object) -> int:
    mix, seed = MIXERS[lane], SEEDS[lane]
    tag, word = _canonical(value)
    if tag == "missing":
        return mix(seed)
    if tag != "text":
        assert isinstance(word, int)
        return mix(mix(seed ^ TAGS[tag] << 56) ^ word)
    assert isinstance(word, bytes)
    h = mix(seed ^ TAGS["text"] << 56 ^ len(word) * 0x9E3779B97F4A7C15 & M)
    padded = word + b"\0" * (-len(word) % 8)
    for i in range(0, len(padded), 8):
        h = mix(h ^ int.from_bytes(padded[i : i + 8], "little"))
    return h


def reference(frame: pl.DataFrame, kinds: dict[str, str]) -> str:
    """content-v2 of ``frame`` row by row (``kinds``: each column's kind, for the header)."""
    names = sorted(frame.columns)
    sums = [0, 0]
    for row in frame.select(names).iter_rows():
        for lane in (0, 1):
            acc = ROWS[lane]
            for position, value in enumerate(row):
                k = MIXERS[lane](SEEDS[lane] ^ position + 1) | 1
                acc = acc + k * _cell(lane, value) & M
            sums[lane] = sums[lane] + MIXERS[lane](acc) & M
    header = "\x1e".join(f"{len(c)}:{c}:{kinds[c]}" for c in names)
    digest = hashlib.sha256(f"content-v2\x1d{header}\x1d".encode())
    digest.update(frame.height.to_bytes(8, "big") + sums[0].to_bytes(8, "big") + sums[1].to_bytes(8, "big"))
    return digest.hexdigest()[:32]


def _mixed(n: int, seed: int = 0) -> pl.DataFrame:
    """Every canonical case: integers, integral and fractional floats, NaN-free floats, -0.0,
    huge values, booleans, dates, date-times, text of 0 to 40 bytes (the 8- and 12-byte edges,
    multi-byte UTF-8), missing values, and "NA"."""
    rng = np.random.default_rng(seed)
    words = ["", "NA", "a", "abcdefgh", "abcdefghi", "abcdefghijkl", "abcdefghijklm", "é日本", "x" * 40, "na"]
    return pl.DataFrame(
        {
            "i": [None if k % 7 == 0 else int(v) for k, v in enumerate(rng.integers(-5, 5, n))],
            "f": [[-0.0, 39.0, 0.1, 1e300, -2.5, 2.0**63, None][k % 7] for k in range(n)],
            "b": [[True, False, None][k % 3] for k in range(n)],
            "d": [None if k % 5 == 0 else dt.date(2020, 1, 1) + dt.timedelta(days=k) for k in range(n)],
            "t": [dt.datetime(2021, 3, 1, 10) + dt.timedelta(seconds=k * 977) for k in range(n)],
            "s": [None if k % 11 == 0 else words[int(rng.integers(0, len(words)))] for k in range(n)],
            "big": [[(1 << 62) + 1, -(1 << 63), 7][k % 3] for k in range(n)],
        },
        schema={
            "i": pl.Int64,
            "f": pl.Float64,
            "b": pl.Boolean,
            "d": pl.Date,
            "t": pl.Datetime("us"),
            "s": pl.String,
            "big": pl.Int64,
        },
    )


KINDS = {
    "i": "numeric",
    "f": "numeric",
    "b": "boolean",
    "d": "date",
    "t": "categorical",
    "s": "categorical",
    "big": "numeric",
}


def test_the_reference_mixers_are_the_published_ones() -> None:
    """fmix64(1) and SplitMix64's first output from seed 0 (x = golden ratio) as published."""
    assert _fmix(1) == 0xB456BCFC34C2CB2C
    assert _splitmix(0x9E3779B97F4A7C15) == 0xE220A8397B1DCDAF
    assert identity.mix_int(0, 1) == _fmix(1) and identity.mix_int(1, 12345) == _splitmix(12345)


@pytest.fixture(params=["numpy", "kernels"])
def hashing(request, monkeypatch) -> str:
    """Each way of computing the sums, for the whole test: numpy, or the compiled kernels
    (skipped without llvmlite), whatever the table's size."""
    if request.param == "kernels":
        pytest.importorskip("llvmlite")
        assert identity.kernels() is not None, "llvmlite is installed: the kernels must load"
    else:
        monkeypatch.setitem(identity._kernel_state, "module", None)
    return request.param


@pytest.mark.parametrize("rows", [1, 7, 300])
def test_vectorised_key_equals_the_slow_reference(rows: int, hashing: str) -> None:
    frame = _mixed(rows, seed=rows)
    assert content_fingerprint(frame) == reference(frame, KINDS)


def test_key_is_pinned(hashing: str) -> None:
    """The key of a fixed table, computed when content-v2 was defined: it must never change
    (an upgrade of polars, pyarrow or numpy that changed it would give every dataset a second
    budget)."""
    frame = pl.DataFrame({"age": [39, 50, None], "sex": ["Male", "Female", "NA"], "w": [1.5, 2.0, -0.0]})
    pinned = "470767a7b6caadbe1aaed76dbde2f6c1"
    assert reference(frame, {"age": "numeric", "sex": "categorical", "w": "numeric"}) == pinned
    assert content_fingerprint(frame) == pinned


def test_batches_threads_and_string_layouts_do_not_matter(monkeypatch) -> None:
    frame = _mixed(5_000, seed=3)
    key = content_fingerprint(frame)
    monkeypatch.setattr(identity, "BATCH_ROWS", 333)
    assert identity.batch_sums(frame, threads=3) == identity.batch_sums(frame, threads=1)
    assert content_fingerprint(frame) == key
    monkeypatch.setattr(fingerprints, "HASH_BATCH", 1_000)  # five batches, cancel polled between
    assert content_fingerprint(frame) == key
    assert content_fingerprint(frame.lazy()) == key
    # the same text through Arrow's offsets layout (large_string) rather than views
    column, plain = identity._Column(frame["s"]), identity._Column(frame["s"], views=False)
    assert column.views is not None and plain.views is None
    for start, stop in ((0, 5_000), (17, 4_000)):
        a, b = column.words(start, stop), plain.words(start, stop)
        for lane in (0, 1):
            assert np.array_equal(identity._cell_hashes(a, lane), identity._cell_hashes(b, lane))


SPELLINGS = ["NA", "N/A", "n/a", "#N/A", "#N/A N/A", "#NA", "<NA>", "NULL", "null", "None", "NaN", "-NaN",
             "nan", "-nan", "1.#IND", "-1.#IND", "1.#QNAN", "-1.#QNAN"]  # fmt: skip
"""Every spelling of a missing value the loader reads (issue 43: before, ``null``, ``N/A``,
``None``... were text, and the same table spelled so had a fresh key, a fresh budget)."""


def _csv_variants(tmp_path, frame: pl.DataFrame) -> dict[str, object]:
    """The same table written as CSV in several ways (missing cells empty, quoted, and in every
    other spelling the loader reads; CR, CRLF line endings), and as Parquet and .csv.gz."""
    header = ",".join(frame.columns)
    rows = [["" if v is None else str(v) for v in row] for row in frame.iter_rows()]
    plain = header + "\n" + "".join(",".join(r) + "\n" for r in rows)
    quoted = ",".join(f'"{c}"' for c in frame.columns) + "\n"
    quoted += "".join(",".join(f'"{v}"' for v in r) + "\n" for r in rows)
    na = header + "\n" + "".join(",".join(v or "NA" for v in r) + "\n" for r in rows)
    shuffled = header + "\n" + "".join(",".join(r) + "\n" for r in reversed(rows))
    paths = {}
    for name, text in {
        "plain.csv": plain,
        "crlf.csv": plain.replace("\n", "\r\n"),
        "quoted.csv": quoted,
        "na.csv": na,
        "shuffled.csv": shuffled,
        "cr.csv": plain.replace("\n", "\r"),
        **{
            f"spelled {i}.csv": header + "\n" + "".join(",".join(v or word for v in r) + "\n" for r in rows)
            for i, word in enumerate(SPELLINGS)
        },
    }.items():
        paths[name] = tmp_path / name
        paths[name].write_text(text)
    paths["plain.csv.gz"] = tmp_path / "plain.csv.gz"
    paths["plain.csv.gz"].write_bytes(gzip.compress(plain.encode()))
    paths["table.parquet"] = tmp_path / "table.parquet"
    frame.sample(fraction=1.0, shuffle=True, seed=1).select(reversed(frame.columns)).write_parquet(
        paths["table.parquet"]
    )
    return paths


def test_one_table_one_key_however_it_is_written(tmp_path) -> None:
    """Row order, CRLF, CR alone, every field quoted with "" for missing, NA, null, N/A, None and
    each other spelling of pandas' for missing, gzip, Parquet with the columns in another order,
    eager or streamed: one key. A one-cell change: another."""
    frame = pl.DataFrame(
        {
            "age": [39, None, 52, 39, 17],
            "hours": [40.5, 20.0, None, 40.5, 10.25],
            "sex": ["Male", None, "Female", "Male", "Female"],
            "day": [
                dt.date(2021, 3, 1),
                dt.date(2020, 2, 29),
                None,
                dt.date(2021, 3, 1),
                dt.date(1999, 12, 31),
            ],
        }
    )
    expected = reference(frame, {"age": "numeric", "hours": "numeric", "sex": "categorical", "day": "date"})
    for name, path in _csv_variants(tmp_path, frame).items():
        for lazy in (False, True) if name not in ("plain.csv.gz", "cr.csv") else (False,):
            dataset = load_dataset(path, lazy=lazy)
            assert dataset.content_fingerprint == expected, (name, lazy, path.read_text()[:80])
    changed = frame.with_columns(
        pl.when(pl.int_range(5) == 3).then(pl.lit("Female")).otherwise("sex").alias("sex")
    )
    path = tmp_path / "changed.parquet"
    changed.write_parquet(path)
    assert load_dataset(path).content_fingerprint != expected


@pytest.mark.parametrize(
    "edit",
    [
        lambda f: f.with_columns(pl.Series("x", [1, 2, 4])),  # one number
        lambda f: f.with_columns(pl.Series("s", ["a", "b", "cc"])),  # one text
        lambda f: f.with_columns(pl.Series("s", ["a", "b", None])),  # a value made missing
        lambda f: f.with_columns(pl.Series("x", [1.0, 2.0, 3.5])),  # 3 -> 3.5
        lambda f: f.rename({"x": "y"}),  # a name
        lambda f: f.with_columns(pl.Series("x", [1, 2, 3]).cast(pl.String)),  # a kind
        lambda f: f.vstack(f.slice(0, 1)),  # a row repeated
        lambda f: f.slice(1),  # a row removed
        lambda f: f.with_columns(pl.Series("s", ["b", "a", "c"])),  # values swapped between rows
    ],
)
def test_any_change_changes_the_key(edit) -> None:
    frame = pl.DataFrame({"x": [1, 2, 3], "s": ["a", "b", "c"]})
    assert content_fingerprint(edit(frame)) != content_fingerprint(frame)


def test_a_value_moved_to_another_column_changes_the_key() -> None:
    frame = pl.DataFrame({"x": [1, 2, 3], "y": [4, 5, 6]})
    assert content_fingerprint(frame) != content_fingerprint(pl.DataFrame({"x": [4, 2, 3], "y": [1, 5, 6]}))


def test_integers_and_integral_floats_are_one_value() -> None:
    ints = pl.DataFrame({"x": pl.Series([39, -1, 0], dtype=pl.Int32)})
    floats = pl.DataFrame({"x": [39.0, -1.0, -0.0]})
    assert content_fingerprint(ints) == content_fingerprint(floats)
    assert content_fingerprint(pl.DataFrame({"x": [39.5, -1.0, 0.0]})) != content_fingerprint(floats)


# ---------------------------------------------------------------- older ledgers
def test_older_keys_move_to_the_content_v2_key(tmp_path, monkeypatch) -> None:
    """A ledger of content-v1 (and one of file SHA-256) keys: the first release's key lookup
    moves the budget and measurements to the v2 key, once; a ledger with no older keys never
    computes them (content-v1 is slow)."""
    from dpexplorer.core.accounting.guarantees import PureDP
    from dpexplorer.release import release as release_module
    from dpexplorer.release.release import dataset_key

    path = tmp_path / "t.csv"
    path.write_text("a,s\n1,x\n2,\n3,NA\n")
    dataset = load_dataset(path)
    v1, v2 = content_fingerprint_v1(dataset.frame), dataset.content_fingerprint
    assert len(v1) == 64 and len(v2) == 32
    with Ledger(tmp_path / "old.sqlite") as book:
        book.set_budget(v1, 2.0, 1e-6, "basic")
        book.charge(v1, query={}, mechanism="laplace", parameters={}, guarantee=PureDP(0.5))
        book.set_budget("f" * 64, 9.0, 1e-6, "basic")  # another dataset's older key, left alone
        assert book.legacy_pending(v2)
        assert dataset_key(dataset, book) == v2
        assert book.budget(v2) is not None and book.budget(v2).epsilon == 2.0
        assert len(book.measurements(v2)) == 1 and book.budget(v1) is None
        assert not book.legacy_pending(v2), "looked for once per dataset and ledger"
        monkeypatch.setattr(release_module, "legacy_keys", lambda d: pytest.fail("computed again"))
        assert dataset_key(dataset, book) == v2
    with Ledger(tmp_path / "sha.sqlite") as book:
        book.set_budget(dataset.fingerprint, 3.0, 1e-6, "basic")  # the file's SHA-256, older still
        monkeypatch.undo()
        assert dataset_key(dataset, book) == v2 and book.budget(v2).epsilon == 3.0
    with Ledger(tmp_path / "new.sqlite") as book:
        monkeypatch.setattr(release_module, "legacy_keys", lambda d: pytest.fail("no older keys"))
        book.set_budget("name:other", 1.0, 0.0, "basic")
        assert dataset_key(dataset, book) == v2


EARLIER = (
    "age,sex,score\n39,Male,1.5\nnull,NULL,N/A\n52,None,NaN\n9007199254740993,Female,#N/A\n17,n/a,<NA>\n"
)
EARLIER_KEY = "265993d033924aae2b34f43ef405fad2"
"""The content-v2 key dpexplorer gave :data:`EARLIER` while only empty fields and ``NA`` were
missing (commit bd3dcd2: its three columns were text then)."""


def test_a_file_spelling_missing_values_otherwise_keeps_its_earlier_budget(tmp_path, monkeypatch) -> None:
    """The file is read with ``null``, ``N/A``, ``None``... missing (a new key: that of the same
    table with empty cells); its first release in a ledger of content-v2 keys moves what was
    filed under the key it had before (loaded once more the earlier way, once per dataset and
    ledger), so reading the spellings as missing gives no budget back."""
    from dpexplorer.core.accounting.guarantees import PureDP
    from dpexplorer.release import release as release_module
    from dpexplorer.release.release import dataset_key

    path = tmp_path / "t.csv"
    path.write_text(EARLIER)
    dataset = load_dataset(path)
    assert dataset.schema["age"] == pl.Int64 and dataset.frame["age"].to_list()[3] == 9007199254740993
    assert load_dataset(path, missing_text=["", "NA"]).content_fingerprint == EARLIER_KEY
    key = dataset.content_fingerprint
    assert key != EARLIER_KEY and dataset.earlier_content_fingerprint() == EARLIER_KEY
    with Ledger(tmp_path / "l.sqlite") as book:
        book.set_budget(EARLIER_KEY, 1.0, 0.0, "basic")
        book.charge(EARLIER_KEY, query={}, mechanism="laplace", parameters={}, guarantee=PureDP(0.75))
        book.set_budget("ab" * 16, 9.0, 0.0, "basic")  # another dataset, left alone
        assert dataset_key(dataset, book) == key
        assert book.spent(key) == 0.75 and book.budget(key).epsilon == 1.0
        assert book.budget(EARLIER_KEY) is None and book.budget("ab" * 16).epsilon == 9.0
        monkeypatch.setattr(release_module, "earlier_keys", lambda d: pytest.fail("computed again"))
        assert dataset_key(dataset, book) == key
    with Ledger(tmp_path / "new.sqlite") as book:  # no content-v2 keys: never computed
        assert dataset_key(load_dataset(path), book) == key


def test_content_v1_is_reproduced_for_the_migration(tmp_path) -> None:
    """content_fingerprint_v1 gives the key content-v1 gave (pinned on a file whose v1 key was
    recorded before content-v2: tests/data/test_load_formats.py's dates)."""
    from tests.data.test_load_formats import DATES, DATES_FINGERPRINT

    path = tmp_path / "dates.csv"
    path.write_text(DATES)
    # read as content-v1 read it: by the type rules of before issue 41 (a time of day was text)
    assert content_fingerprint_v1(load_dataset(path).read_before().frame) == DATES_FINGERPRINT
    assert content_fingerprint_v1(load_dataset(path, lazy=True).read_before().frame) == DATES_FINGERPRINT


def test_spark_gives_the_polars_key_however_the_file_is_written(tmp_path, spark) -> None:
    """Spark reads quoted fields with "" for missing, NA, null or N/A for missing, CRLF and CR as
    the loader does,
    and its aggregation of the per-batch sums gives the polars key; a Parquet file of the same
    rows in another order too."""
    from dpexplorer.data.engine.spark_engine import open_spark

    frame = pl.DataFrame(
        {
            "age": [39, None, 52, 39, 17],
            "hours": [40.5, 20.0, None, 40.5, 10.25],
            "sex": ["Male", None, "Female", "Male", "a longer text value é"],
            "day": [
                dt.date(2021, 3, 1),
                dt.date(2020, 2, 29),
                None,
                dt.date(2021, 3, 1),
                dt.date(1999, 12, 31),
            ],
        }
    )
    expected = reference(frame, {"age": "numeric", "hours": "numeric", "sex": "categorical", "day": "date"})
    paths = _csv_variants(tmp_path, frame)
    spelled = [f"spelled {SPELLINGS.index(m)}.csv" for m in ("null", "N/A", "None", "NaN")]
    for name in ("quoted.csv", "na.csv", "crlf.csv", "cr.csv", *spelled, "table.parquet"):
        assert open_spark(paths[name]).content_fingerprint == expected, name


def test_long_text_over_several_arrow_buffers() -> None:
    """Values longer than 12 bytes live in Arrow's data buffers (several for a large column, and
    more in a frame of chunks): the views path reads them as the offsets path does."""
    lengths = np.random.default_rng(0).integers(0, 60, 200_000)
    series = pl.Series("s", [("x" * int(n)) + str(i) for i, n in enumerate(lengths)])
    series = pl.concat([series, series.slice(0, 1_000)], rechunk=False)
    views, offsets = identity._Column(series), identity._Column(series, views=False)
    assert views.views is not None and len(views.bases) > 1
    for start, stop in ((0, series.len()), (12_345, 150_000)):
        a, b = views.words(start, stop), offsets.words(start, stop)
        for lane in (0, 1):
            assert np.array_equal(identity._cell_hashes(a, lane), identity._cell_hashes(b, lane))


# ---------------------------------------------------------------- the compiled kernels
def _random_table(rng: np.random.Generator, n: int) -> pl.DataFrame:
    """A table of every column type the kernels treat apart, with the edge values: text of 0 to
    40 bytes (multi-byte UTF-8, "", "NA", "na", the 8- and 12-byte edges), missing cells,
    integers at the int64 limits, uint64 of 2^63 and more, NaN, -0.0, infinities, integral and
    huge floats, booleans, dates, date-times, durations, times, a column of nulls, bytes."""
    alphabet = ["a", "b", "é", "日", "N", "A", "\x00", " "]
    texts = ["", "NA", "na", "abcdefgh", "abcdefghijkl", "abcdefghijklm"]
    texts += ["".join(rng.choice(alphabet, int(k))) for k in rng.integers(0, 41, 40)]

    def some(values: list, missing: float = 0.2) -> list:
        picked = [values[int(i)] for i in rng.integers(0, len(values), n)]
        return [None if rng.random() < missing else v for v in picked]

    floats = [-0.0, 0.0, 39.0, 0.1, -2.5, 1e300, 2.0**63, -(2.0**63), 2.0**64, math.nan, math.inf, -math.inf]
    ints = [0, -1, 7, (1 << 63) - 1, -(1 << 63), (1 << 62) + 1]
    day = dt.date(1970, 1, 1)
    return pl.DataFrame(
        {
            "text": some(texts),
            "bytes": [None if t is None else t.encode() for t in some(texts)],
            "i64": some(ints),
            "i8": some([-128, 0, 127]),
            "u64": some([0, 5, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, (1 << 63) + 12345]),
            "u32": some([0, (1 << 32) - 1]),
            "f64": some(floats, 0.1),
            "f32": some([0.5, -0.0, 3.0, math.nan, math.inf]),
            "bool": some([True, False]),
            "date": some([day, dt.date(2024, 2, 29), dt.date(1900, 1, 1)]),
            "time": some([dt.datetime(2021, 3, 1, 10, 0, 0, 123456), dt.datetime(1969, 12, 31, 23, 59)]),
            "zoned": some([dt.datetime(2021, 3, 1, 10, tzinfo=dt.UTC)]),
            "span": some([dt.timedelta(seconds=-3), dt.timedelta(days=2, microseconds=7)]),
            "clock": some([dt.time(0, 0), dt.time(23, 59, 59, 999999)]),
            "none": [None] * n,
            "full": some(["x", "yy"], 0.0),
        },
        schema={
            "text": pl.String,
            "bytes": pl.Binary,
            "i64": pl.Int64,
            "i8": pl.Int8,
            "u64": pl.UInt64,
            "u32": pl.UInt32,
            "f64": pl.Float64,
            "f32": pl.Float32,
            "bool": pl.Boolean,
            "date": pl.Date,
            "time": pl.Datetime("ns"),
            "zoned": pl.Datetime("us", "Europe/Paris"),
            "span": pl.Duration("us"),
            "clock": pl.Time,
            "none": pl.Null,
            "full": pl.Categorical,
        },
    )


def test_kernels_give_numpys_sums_on_random_tables(monkeypatch) -> None:
    """On random tables of every type and edge value, in both Arrow text layouts (views and
    offsets), in blocks, ranges and threads: the compiled kernels' sums are numpy's."""
    pytest.importorskip("llvmlite")
    compiled = identity.kernels()
    assert compiled is not None
    monkeypatch.setattr(identity, "KERNEL_BLOCK", 64)  # several blocks and ranges per table
    rng = np.random.default_rng(29)
    for trial in range(12):
        frame = _random_table(rng, int(rng.integers(1, 400)))
        for views in (True, False):
            columns = [identity._Column(frame[c], views) for c in sorted(frame.columns)]
            expected = identity.column_sums(columns, frame.height, 1, None)
            for threads in (1, 3):
                assert identity.column_sums(columns, frame.height, threads, compiled) == expected, (
                    trial,
                    views,
                )
    # and a slice of a column whose long values sit in several Arrow data buffers
    long = pl.Series("s", [("x" * int(k)) + str(i) for i, k in enumerate(rng.integers(0, 60, 70_000))])
    long = pl.concat([long, long.slice(0, 500)], rechunk=False).slice(1_000, 60_000)
    column = identity._Column(long)
    assert len(column.buffers) > 1
    assert identity.column_sums([column], long.len(), 2, compiled) == identity.column_sums(
        [column], long.len()
    )


def test_a_chunked_frame_and_its_slices_give_one_key(hashing: str, monkeypatch) -> None:
    """A frame in chunks, the same for every column or not, is hashed a chunk (or a batch) at a
    time: the key is the one-chunk frame's."""
    frame = _mixed(3_000, seed=5)
    key = reference(frame, KINDS)
    monkeypatch.setattr(fingerprints, "HASH_BATCH", 700)
    chunked = pl.concat([frame.slice(0, 1_000), frame.slice(1_000, 5), frame.slice(1_005)], rechunk=False)
    assert chunked["s"].n_chunks() == 3
    assert content_fingerprint(chunked) == key
    mixed = chunked.with_columns(frame["i"].rechunk())  # one column in one chunk: batches instead
    assert content_fingerprint(mixed) == key


def test_without_the_kernels_the_key_is_the_same(monkeypatch) -> None:
    """When the kernels cannot be imported (no llvmlite, or it fails to compile), numpy computes
    the same key, and the failure is not retried at every batch."""
    frame = pl.DataFrame({"age": [39, 50, None], "sex": ["Male", "Female", "NA"], "w": [1.5, 2.0, -0.0]})
    monkeypatch.setattr(identity, "_kernel_state", {})
    monkeypatch.setitem(sys.modules, "dpexplorer.data.identity_llvm", None)  # import fails
    monkeypatch.setattr(fingerprints, "KERNEL_CELLS", 1)  # asks for them
    assert content_fingerprint(frame) == "470767a7b6caadbe1aaed76dbde2f6c1"
    assert identity._kernel_state == {"module": None}
    identity.preload()  # a no-op now
    assert identity.kernels(wait=False) is None


def test_a_failing_kernel_falls_back_to_numpy(monkeypatch, caplog) -> None:
    """A kernel that raises (e.g. a layout it does not expect) costs the speed, not the key: the
    batch is hashed by numpy, the failure logged, and the kernels are not used again."""

    class Broken:
        def block(self, rows: int) -> None:
            raise IndexError("a text view points outside its data buffers")

    monkeypatch.setattr(identity, "_kernel_state", {"module": Broken()})
    frame = _mixed(50, seed=2)
    assert content_fingerprint(frame) == reference(frame, KINDS)
    assert identity.kernels() is None and "hashing with numpy instead" in caplog.text


def test_kernels_machine_code_is_cached_checked_and_optional(tmp_path, monkeypatch) -> None:
    """The kernels' machine code is compiled once and read back by the next process; a damaged
    cache file is compiled again (never loaded); where the first place cannot be written the
    second serves, and where none can the code is compiled all the same."""
    pytest.importorskip("llvmlite")
    from dpexplorer.data import identity_llvm

    machine = identity_llvm._machine()
    first, second = identity_llvm._cache_paths(machine)  # the real places: bytecode's, the user's
    assert first.name == second.name and first.name.startswith("identity_llvm.") and first.suffix == ".o"
    assert second.parent.name == "dpexplorer" and first.parent != second.parent
    blocked = tmp_path / "a file"
    blocked.write_text("not a directory")
    cache = tmp_path / "cache" / "kernels.o"
    monkeypatch.setattr(identity_llvm, "_cache_paths", lambda machine: [blocked / "kernels.o", cache])
    code = identity_llvm._object_code(machine)
    assert cache.read_bytes()[:-32] == code and len(code) > 1_000  # in the second place
    compiled = []
    real = identity_llvm._module
    monkeypatch.setattr(identity_llvm, "_module", lambda: compiled.append(1) or real())
    assert identity_llvm._object_code(machine) == code and not compiled  # read, not compiled
    damaged = bytearray(cache.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    cache.write_bytes(bytes(damaged))
    assert identity_llvm._object_code(machine) == code and compiled == [1]  # compiled again
    assert cache.read_bytes()[:-32] == code  # and the file mended
    monkeypatch.setattr(identity_llvm, "_cache_paths", lambda machine: [blocked / "kernels.o"])
    assert identity_llvm._object_code(machine) == code and compiled == [1, 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a file", "cache"]  # no stray file


def test_text_kernels_refuse_buffers_they_would_overrun() -> None:
    """A view or an offset pointing outside its data buffers raises IndexError, never reads
    past the buffer (the key then falls back to numpy, which fails on it as well)."""
    pytest.importorskip("llvmlite")
    from dpexplorer.data import identity_llvm

    acc = identity_llvm.block(2)
    data = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", np.uint8)
    n, index, offset = 20, 0, 10  # 20 bytes from offset 10 of a 26-byte buffer: 4 too many
    views = np.array([[n | (0x64636261 << 32), index | (offset << 32)]] * 2, dtype=np.uint64)
    kernel = identity_llvm.view_text(
        views, np.array([data.ctypes.data]), np.array([data.size]), np.zeros(0, bool), 3, 5
    )
    with pytest.raises(IndexError, match="outside its data buffers"):
        kernel(0, 2, acc)
    views[:, 1] = 1 | (0 << 32)  # buffer 1 of 1
    with pytest.raises(IndexError):
        kernel(0, 2, acc)
    views[:, 1] = 0 | (6 << 32)  # bytes 6..25: inside
    kernel(0, 2, acc)
    none = np.zeros(0, np.int64)  # a column without data buffers, whose view claims 20 bytes
    with pytest.raises(IndexError):
        identity_llvm.view_text(views, none, none, np.zeros(0, bool), 3, 5)(0, 2, acc)
    offsets = np.array([0, 5, 30], dtype=np.int64)  # the second value ends past the buffer
    kernel = identity_llvm.offset_text(offsets, data.ctypes.data, data.size, np.zeros(0, bool), 3, 5)
    kernel(0, 1, acc)
    with pytest.raises(IndexError, match="outside its data buffer"):
        kernel(0, 2, acc)


def test_preload_loads_the_kernels_once_in_the_background(tmp_path, monkeypatch) -> None:
    """preload() loads the kernels on a daemon thread, once however often it is called; for a
    small file (or one that is not there) it does nothing: numpy hashes it sooner."""
    pytest.importorskip("llvmlite")
    monkeypatch.setattr(identity, "_kernel_state", {})
    monkeypatch.setattr(identity, "_preloading", threading.Event())
    small = tmp_path / "small.csv"
    small.write_text("a\n1\n")
    identity.preload(small)
    identity.preload(tmp_path / "missing.parquet")
    assert not identity._preloading.is_set() and identity.kernels(wait=False) is None
    identity.preload()
    identity.preload()
    loaders = [t for t in threading.enumerate() if t.name == "identity-kernels"]
    assert len(loaders) <= 1 and all(t.daemon for t in loaders)
    for t in loaders:
        t.join(30)
    assert identity.kernels(wait=False) is not None
