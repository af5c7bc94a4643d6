"""Loading: the shipped dataset, every bad-file case of issue 3, and a fuzz of malformed files."""

from __future__ import annotations

import gzip
import hashlib
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpexplorer.data import load
from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import ColumnInfo, fingerprint_file, load_dataset, text_layout


@pytest.fixture(scope="module")
def adult():
    return load_dataset(default_dataset_path())


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def test_default_dataset(adult):
    assert adult.n_rows == 48_842
    assert adult.warnings == ()
    assert not adult.lazy
    names = [c.name for c in adult.columns]
    assert names[:2] == ["age", "workclass"] and len(names) == 15
    info = {c.name: c for c in adult.columns}
    assert info["age"] == ColumnInfo("age", "numeric", "Int64", 0, info["age"].distinct)
    assert info["occupation"].missing == 2_809 and info["workclass"].missing == 2_799
    assert info["native_country"].missing == 857
    assert info["income"].kind == "categorical" and info["income"].distinct == 2
    assert adult.preview(5).height == 5
    assert adult.fingerprint == hashlib.sha256(default_dataset_path().read_bytes()).hexdigest()
    assert "NON-PRIVATE" in (ColumnInfo.__doc__ or "")


def test_load_module_is_import_light():
    code = "import sys, dpexplorer.data.load; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_formats_agree(tmp_path, adult):
    df = adult.frame
    assert isinstance(df, pl.DataFrame)
    csv = tmp_path / "a.csv"
    df.write_csv(csv)
    tsv = tmp_path / "a.tsv"
    df.write_csv(tsv, separator="\t")
    gz = tmp_path / "a.csv.gz"
    gz.write_bytes(gzip.compress(csv.read_bytes()))
    for p in (csv, tsv, gz):
        ds = load_dataset(p)
        assert ds.n_rows == 48_842 and ds.warnings == ()
        assert ds.frame.equals(df)
    lazy = load_dataset(csv, lazy=True)
    assert lazy.lazy and lazy.n_rows == 48_842
    assert [c.missing for c in lazy.columns] == [c.missing for c in adult.columns]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.csv", b"", "empty"),
        ("header.csv", "a,b,c\n", "header but no data rows"),
        ("blankname.csv", "a,,c\n1,2,3\n", "column 2 has a blank name"),
        ("dup.csv", "a,b,a\n1,2,3\n", "columns 1 and 3 are both named 'a'"),
        ("binary.csv", b"PK\x03\x04\x00\x00\x01\x02", "binary"),
        ("broken.parquet", b"PAR1garbage", "could not be read"),
        ("broken.csv.gz", b"\x1f\x8b\x08garbage", "could not be read"),
        ("blankheader.csv", "\n1,2\n", r"header\) is blank"),
    ],
)
def test_bad_files_raise_specific_errors(tmp_path, name, content, message):
    with pytest.raises(DataError, match=message):
        load_dataset(write(tmp_path, name, content))


def test_late_non_utf8_is_read_as_cp1252_with_its_line(tmp_path):
    body = "a,b\n" + "".join(f"{i},x\n" for i in range(30_000))
    ds = load_dataset(write(tmp_path, "late.csv", body.encode() + b"7,\xff\n"))
    assert ds.frame["b"][-1] == "ÿ" and ds.n_rows == 30_001
    assert any("cp1252" in w and "line 30,002" in w for w in ds.warnings)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        load_dataset(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="not a file"):
        load_dataset(tmp_path)
    with pytest.raises(DataError, match="fingerprint"):
        fingerprint_file(tmp_path / "nope.csv")


@pytest.mark.parametrize("lazy", [False, True])
def test_ragged_rows_are_set_aside_and_counted(tmp_path, lazy):
    p = write(tmp_path, "r.csv", "a,b,c\n1,2,3\n4,5\n6,7,8\n9,10,11,12\n13,14,15\n")
    ds = load_dataset(p, lazy=lazy)
    assert ds.n_rows == 3
    (w,) = ds.warnings
    assert w.startswith("2 rows set aside: wrong number of fields") and "line 3: 2 fields, expected 3" in w
    assert ds.select(pl.col("a"))["a"].to_list() == [1, 6, 13]


@pytest.mark.parametrize("lazy", [False, True])
def test_blank_lines_hold_no_row_except_in_a_file_of_one_column(tmp_path, lazy):
    """Polars reads a blank line as a row of missing values: a count one too high for a file
    that ends in an empty line. It is skipped (as Python's csv, pandas and Spark do), with a
    note; in a file of one column it is a missing value, as polars writes one."""
    p = write(tmp_path, "b.csv", "a,b\n1,x\n\n2,y\n3,\n\n")
    ds = load_dataset(p, lazy=lazy)
    assert ds.n_rows == 3 and ds.warnings == ("2 blank lines skipped (no record)",)
    assert ds.select(pl.col("a"))["a"].to_list() == [1, 2, 3]
    one = load_dataset(write(tmp_path, "one.csv", "a\n1\n\n2\n"), lazy=lazy)
    assert one.n_rows == 3 and one.warnings == ()


@pytest.mark.parametrize("lazy", [False, True])
def test_text_nan_inf_and_all_missing(tmp_path, lazy):
    rows = "".join(f"{i},{i}.5,\n" for i in range(12_000))
    p = write(tmp_path, "t.csv", "a,b,c\n" + rows + "oops,inf,\n7,inf,\n8,-inf,\n")  # ("nan" is missing)
    ds = load_dataset(p, lazy=lazy)
    assert ds.n_rows == 12_003
    text, nonfinite, empty = ds.warnings
    assert "column 'a'" in text and "'oops'" in text and "1 row " in text
    assert "column 'b'" in nonfinite and "3 rows" in nonfinite
    assert "column 'c': all 12,003 rows are missing" in empty
    info = {c.name: c for c in ds.columns}
    assert info["a"].kind == "numeric" and info["a"].missing == 1
    assert info["b"].missing == 3


def test_file_changed_after_loading(tmp_path):
    p = write(tmp_path, "f.csv", "a\n1\n2\n")
    ds = load_dataset(p)
    p.write_text("a\n1\n2\n3\n")
    with pytest.raises(DataError, match="changed since it was loaded"):
        _ = ds.fingerprint


def test_a_layout_passed_on_is_not_sniffed_again_unless_the_file_changed(tmp_path, monkeypatch):
    """The Spark engine sniffs the header (text_layout) and passes it to load_dataset: one sniff
    per open. A layout of a file changed since is not reused: the new separator is read."""
    p = write(tmp_path, "f.csv", "a;b\n1;2\n")
    layout = text_layout(p)
    sniffs: list[Path] = []
    real = load.header

    def counted(path, head):
        sniffs.append(path)
        return real(path, head)

    monkeypatch.setattr(load, "header", counted)
    ds = load_dataset(p, layout=layout)
    assert sniffs == [] and ds.column_names == ("a", "b") and ds.n_rows == 1
    p.write_text("a|b|c\n1|2|3\n4|5|6\n")
    ds = load_dataset(p, layout=layout)
    assert len(sniffs) == 1 and ds.column_names == ("a", "b", "c") and ds.n_rows == 2
    assert load_dataset(p).warnings == ds.warnings and len(sniffs) == 2


def test_file_disappears_before_lazy_query(tmp_path):
    p = write(tmp_path, "g.csv", "a\n1\n2\n")
    ds = load_dataset(p, lazy=True)
    p.unlink()
    with pytest.raises(DataError):
        ds.select(pl.col("a").sum())


def test_kind_of_unknown_column(adult):
    with pytest.raises(DataError, match="no column 'agee'"):
        adult.kind_of("agee")


lines = st.lists(
    st.lists(
        st.sampled_from(["1", "2.5", "x", "", "nan", "inf", '"q,1"', "é", "\xff", "\x00", "true"]),
        min_size=0,
        max_size=4,
    ),
    min_size=0,
    max_size=6,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=lines,
    sep=st.sampled_from([",", "\t", ";"]),
    suffix=st.sampled_from([".csv", ".tsv", ".csv.gz", ".txt"]),
    garbage=st.binary(max_size=40),
)
def test_fuzz_only_data_errors_escape(tmp_path, rows, sep, suffix, garbage):
    text = "\n".join(sep.join(r) for r in rows)
    raw = (
        text.encode("utf-8", errors="surrogateescape")
        if "\xff" not in text
        else text.encode("latin-1", "replace")
    )
    raw = raw + garbage if garbage[:1] != b"\x00" else garbage + raw
    if suffix == ".csv.gz":
        raw = gzip.compress(raw)
    p = tmp_path / f"fuzz{suffix}"
    p.write_bytes(raw)
    try:
        ds = load_dataset(p)
    except DataError as exc:
        assert str(exc).strip()
    else:
        assert ds.n_rows >= 1
        assert all(w.strip() for w in ds.warnings)
        _ = ds.columns


def test_file_disappears_while_being_read(tmp_path, monkeypatch):
    p = write(tmp_path, "h.csv", "a\n1\n2\n")
    real = pl.read_csv

    def read_then_delete(*args, **kwargs):
        out = real(*args, **kwargs)
        p.unlink()
        return out

    monkeypatch.setattr(pl, "read_csv", read_then_delete)
    with pytest.raises(DataError, match="moved or deleted"):
        load_dataset(p)


def test_identify_is_the_content_fingerprint_and_polls_its_token(tmp_path, monkeypatch):
    """Dataset.identify (the window's background job) gives the ledger key content_fingerprint
    gives, eager or streamed, in batches or whole, reports progress, and stops at a cancelled
    token."""
    from dpexplorer.core.cancel import CancelToken
    from dpexplorer.core.errors import CancelledError
    from dpexplorer.data import fingerprints
    from dpexplorer.data.load import content_fingerprint

    path = tmp_path / "t.parquet"
    table = pl.DataFrame({"x": range(120_000), "s": ["a", None, "c"] * 40_000, "r": [1.5, None, 2] * 40_000})
    table.write_parquet(path)
    key = content_fingerprint(table)  # one batch: the whole table
    monkeypatch.setattr(fingerprints, "HASH_BATCH", 50_000)
    assert content_fingerprint(table) == key
    fractions: list[float] = []
    assert load_dataset(path).identify(progress=fractions.append) == key
    assert fractions and fractions == sorted(fractions) and 0 < fractions[-1] < 1
    assert load_dataset(path, lazy=True).identify() == key
    token = CancelToken()
    token.cancel()
    dataset = load_dataset(path)
    with pytest.raises(CancelledError):
        dataset.identify(cancel=token)
    assert "content_fingerprint" not in dataset.__dict__, "nothing cached from a cancelled run"
    assert dataset.content_fingerprint == key


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_the_prefix_word_count_reads_each_value_as_every_row_does(lazy) -> None:
    """load._not_surely_text counts the words of the first rows by their distinct values, each
    weighted by its rows: exactly the count over every row, whatever the spelling (padded
    numbers, true/false in any case, NaN, infinities, words with spaces or hex): 40,000 values
    of which the first 10,000 rows hold 2,001 words keep the column (2,001 <= 5% of 40,000 + 1),
    one word more settles it as text."""
    import random

    rng = random.Random(29)
    numbers = [" 1.5 ", "TRUE", "false", "NaN", "-inf", "1e3", "3", "+7"]
    words = ["abc", "x y", " word ", "0x1", "w17", "1,5", "--1"]
    for extra, kept in ((0, ["a"]), (1, [])):
        prefix = [rng.choice(words) for _ in range(2_001 + extra)]
        prefix += [rng.choice(numbers) for _ in range(10_000 - len(prefix))]
        rng.shuffle(prefix)
        cells = prefix + [rng.choice(numbers) for _ in range(30_000)] + [None] * 500
        frame = pl.DataFrame({"a": cells}).lazy() if lazy else pl.DataFrame({"a": cells})
        assert load._not_surely_text(frame, ["a"]) == kept, extra


# ---------------------------------------------------------------- missing values spelled (issue 43)
PANDAS_NA = ["NA", "N/A", "n/a", "#N/A", "#N/A N/A", "#NA", "<NA>", "NULL", "null", "None", "NaN", "-NaN",
             "nan", "-nan", "1.#IND", "-1.#IND", "1.#QNAN", "-1.#QNAN"]  # fmt: skip
"""pandas' default spellings of a missing value other than the empty field
(``pandas._libs.parsers.STR_NA_VALUES``), written out: the loader must read each."""


def test_the_loader_reads_pandas_default_spellings() -> None:
    assert sorted(m for m in load.MISSING_TEXT if m) == sorted(PANDAS_NA)


@pytest.mark.parametrize("spelling", PANDAS_NA)
@pytest.mark.parametrize("lazy", [False, True])
def test_numbers_and_a_spelled_missing_value_read_as_numbers(tmp_path, spelling, lazy):
    """Integers with 30% of their cells spelled ``N/A`` (or ``null``, ``None``, ...): an integer
    column (2^53 + 1 exact) with those cells missing, and a note naming the spelling, as the
    same column with empty cells but for the note; a text column so spelled too."""
    cells = ["9007199254740993", spelling, "3", spelling, "7", "5", spelling, "1", "2", "4"]
    spelled = write(
        tmp_path,
        "s.csv",
        "x,t\n" + "".join(f"{c},{'a' if i % 3 else spelling}\n" for i, c in enumerate(cells)),
    )
    empty = write(
        tmp_path, "e.csv", spelled.read_text().replace(f"{spelling},", ",").replace(f",{spelling}\n", ",\n")
    )
    a, b = load_dataset(spelled, lazy=lazy), load_dataset(empty, lazy=lazy)
    assert a.schema == b.schema == pl.Schema({"x": pl.Int64, "t": pl.String})
    rows = a.frame.collect() if a.lazy else a.frame
    assert rows["x"].to_list()[:2] == [9007199254740993, None] and rows["t"].null_count() == 4
    assert a.content_fingerprint == b.content_fingerprint
    if spelling != "NA":  # read as missing before, without a note
        (note,) = a.warnings
        assert repr(spelling) in note and b.warnings == ()
        assert sum(int(n) for n in re.findall(r"\((\d+)\)", note)) == 7  # NaN in x: "NaN or -NaN"


def test_a_file_with_cr_line_endings_is_read(tmp_path):
    """Lines ending with CR alone (classic Mac OS): read as lines in memory, the table of the
    same file with LF (before: Python's csv message about "universal-newline mode"); scanned
    lazily, a one-line refusal saying how to re-save it."""
    text = 'x,s\n1,a\n2,"b c"\n,\n3,null\n'
    cr, lf = write(tmp_path, "cr.csv", text.replace("\n", "\r")), write(tmp_path, "lf.csv", text)
    assert load_dataset(cr).frame.equals(load_dataset(lf).frame)
    assert load_dataset(cr).content_fingerprint == load_dataset(lf).content_fingerprint
    with pytest.raises(DataError, match=r"carriage return alone .* LF or CRLF"):
        load_dataset(cr, lazy=True)
