"""Issue 20's loading reproductions: the delimiter is sniffed (and said), files in Windows-1252 or
Latin-1 are read with a note, single-quoted headers lose their quotes, list columns are left out
with a note, NUL bytes anywhere and corrupt gzip streams are clean DataErrors."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from dpexplorer.data.answers import true_answer
from dpexplorer.data.engine import POLARS
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import content_fingerprint_v1, load_dataset
from dpexplorer.data.queries import Compare, PredicateCount, where
from dpexplorer.data.sniff import sniff_separator


def _write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# scikit-learn's linnerud_exercise.csv, whose columns are separated by single spaces
LINNERUD = "Chins Situps Jumps\n5 162 60\n2 110 60\n12 101 101\n12 105 37\n13 155 58\n"


def test_space_delimited_file_has_its_columns(tmp_path) -> None:
    ds = load_dataset(_write(tmp_path, "linnerud_exercise.csv", LINNERUD))
    assert ds.column_names == ("Chins", "Situps", "Jumps") and ds.n_rows == 5
    assert ds.frame["Situps"].to_list() == [162, 110, 101, 105, 155]
    assert any("whitespace" in w for w in ds.warnings)


@pytest.mark.parametrize(
    ("separator", "word"),
    [(";", "semicolons"), ("|", "pipes"), ("\t", "tabs")],
    ids=["semicolon", "pipe", "tab"],
)
def test_delimiter_is_sniffed_and_said(tmp_path, separator, word) -> None:
    # commas inside the values (decimal commas, a list in a cell) must not win
    rows = ["name;amount;note", "a;1,5;x, y", "b;2,5;z, w", "c;3,0;v, u"]
    text = "\n".join(row.replace(";", separator) for row in rows) + "\n"
    ds = load_dataset(_write(tmp_path, "data.csv", text))
    assert ds.column_names == ("name", "amount", "note")
    assert any(word in w and "detected" in w for w in ds.warnings)


def test_a_comma_file_gets_no_note(tmp_path) -> None:
    ds = load_dataset(_write(tmp_path, "plain.csv", "a,b\n1,2\n3,4\n"))
    assert ds.column_names == ("a", "b") and ds.warnings == ()


def test_sniffer_prefers_the_consistent_separator() -> None:
    assert sniff_separator(["a;b;c", "1,5;2;x,y", "2;3;z"]) == ";"
    assert sniff_separator(["a b c", "1 2 3", "4 5 6"]) == " "
    assert sniff_separator(["single", "1", "2"]) == ","
    assert sniff_separator(["first name", "John Smith", "Ada Lovelace"]) == ","  # one column of text


@pytest.mark.parametrize(
    ("raw", "encoding", "expected"),
    [
        ("name,city\nJosé,Paris\nZoë,Köln\n".encode("latin-1"), "cp1252", "José"),
        ("name,price\nbook,\u20ac5\n".encode("cp1252"), "cp1252", "\u20ac5"),
        (b"name,x\nab\x81c,1\n", "Latin-1", "ab\x81c"),  # 0x81 is undefined in cp1252
    ],
    ids=["latin-1 text", "cp1252 euro", "latin-1 only"],
)
def test_non_utf8_text_is_read_with_a_note(tmp_path, raw, encoding, expected) -> None:
    ds = load_dataset(_write(tmp_path, "legacy.csv", raw))
    assert ds.frame[ds.column_names[0]][0] == expected or ds.frame[ds.column_names[1]][0] == expected
    assert any(encoding in w and "not UTF-8" in w for w in ds.warnings)


def test_single_quoted_headers_lose_their_quotes(tmp_path) -> None:
    ds = load_dataset(_write(tmp_path, "quoted.csv", "'age','city'\n30,a\n40,b\n"))
    assert ds.column_names == ("age", "city")


def test_list_columns_are_left_out_with_a_note(tmp_path) -> None:
    path = tmp_path / "lists.parquet"
    pl.DataFrame({"x": [1, 2, 3], "tags": [["a"], ["b", "c"], []]}).write_parquet(path)
    ds = load_dataset(path)
    assert ds.column_names == ("x",) and any("'tags'" in w and "lists" in w for w in ds.warnings)


def test_nul_byte_after_the_head_is_refused(tmp_path) -> None:
    body = "x,c\n" + "".join(f"{i % 10},abc\n" for i in range(20_000))
    assert len(body) > 1 << 16
    path = _write(tmp_path, "late_nul.csv", body.encode() + b"5,a\x00b\n")
    with pytest.raises(DataError, match="NUL"):
        load_dataset(path)


def test_nul_is_found_in_the_bytes_of_any_text(tmp_path) -> None:
    """The NUL check reads the UTF-8 bytes: multi-byte characters are no NUL, a NUL in Parquet
    text is refused like one in a CSV."""
    clean, dirty = tmp_path / "clean.parquet", tmp_path / "dirty.parquet"
    pl.DataFrame({"c": ["é", "日本", "\u0100", None, "a"]}).write_parquet(clean)
    pl.DataFrame({"c": ["é", "日\x00本"]}).write_parquet(dirty)
    assert load_dataset(clean).n_rows == 5
    with pytest.raises(DataError, match="NUL"):
        load_dataset(dirty)


def test_corrupt_gzip_stream_is_a_data_error(tmp_path) -> None:
    packed = gzip.compress(("x,c\n" + "".join(f"{i % 10},abc\n" for i in range(20_000))).encode())
    corrupt = packed[:10] + b"\xff" * 30 + packed[40:]  # zlib.error: invalid block type
    with pytest.raises(DataError, match="corrupt"):
        load_dataset(_write(tmp_path, "broken.csv.gz", corrupt))


# dates: a column is typed as dates only when every value is a day in an unambiguous spelling
# (ISO, ISO with a time, 2021/03/01, 2021.03.01: issue 41)
DATES = (
    "d,slash,short,impossible,stamp,empty\n"
    "2021-03-01,01/03/2021,2021-3-1,2021-02-30,2021-03-01T10:00,\n"
    ",02/03/2021,2021-01-01,2021-01-01,2021-03-02T10:00,\n"
    "1999-12-31,,2021-12-01,,,\n"
)
DATES_FINGERPRINT = (
    "cc695556c354e09ff56dc5c4c13bdc91889f650710ef0e80e4df780a841dbeb0"  # before dates were typed
)


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_only_whole_columns_of_unambiguous_days_become_dates(tmp_path, lazy) -> None:
    ds = load_dataset(_write(tmp_path, "dates.csv", DATES), lazy=lazy)
    assert ds.schema["d"] == pl.Date and ds.kind_of("d") == "date"
    assert ds.kind_of("stamp") == "date"  # ISO with a time: read as its day
    for name in ("slash", "short", "impossible", "empty"):  # ambiguous, not padded, no such day
        assert ds.kind_of(name) != "date", name
    assert ds.preview(3)["d"].cast(pl.String).to_list() == ["2021-03-01", None, "1999-12-31"]
    assert ds.preview(3)["stamp"].cast(pl.String).to_list() == ["2021-03-01", "2021-03-02", None]
    spans = {c.name: c.span for c in POLARS.summary(ds).columns}  # the steward sees the first and last day
    days = {"d": ("1999-12-31", "2021-03-01"), "stamp": ("2021-03-01", "2021-03-02")}
    assert spans == days | dict.fromkeys(spans.keys() - days.keys())


def test_typing_dates_keeps_the_content_fingerprint(tmp_path) -> None:
    """A date column's identity does not depend on how the file stores it: the CSV's ISO text
    and a Parquet file with the column stored as text are both read as dates (one key); the
    content-v1 key older ledgers hold for it is still found (recorded before dates were typed)."""
    path = _write(tmp_path, "dates.csv", DATES)
    ds = load_dataset(path)
    assert content_fingerprint_v1(ds.read_before().frame) == DATES_FINGERPRINT  # ISO days only then
    as_text = ds.frame.with_columns(pl.col("d").cast(pl.String))
    parquet = tmp_path / "dates.parquet"
    as_text.write_parquet(parquet)
    assert load_dataset(parquet).content_fingerprint == ds.content_fingerprint


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_a_date_column_is_compared_as_dates(tmp_path, lazy) -> None:
    ds = load_dataset(_write(tmp_path, "dates.csv", DATES), lazy=lazy)
    cases = {
        where("d") >= "2021-03-01": 1,
        where("d") < "2021-03-01": 1,
        ~(where("d") == "1999-12-31"): 2,  # the missing date counts under not
        where("d").isin(["1999-12-31", "2000-01-01"]): 1,
        (where("d") > "1999-01-01") & (where("d") != "2021-03-01"): 1,
    }
    for predicate, count in cases.items():
        PredicateCount(predicate).check(ds.schema)
        assert true_answer(ds, PredicateCount(predicate)) == count, predicate.describe()


@pytest.mark.parametrize("value", ["2021-3-1", "2021-02-30", "1/3/2021", " 2021-03-01", 2021])
def test_a_date_compared_with_what_is_not_a_date(tmp_path, value) -> None:
    """An ordered comparison with text that is not a day is refused from the query alone; a day
    column compared with a number or with other text (which no day cell can equal) is refused
    from the column's type, before anything is read or charged (issue 41: never a silent empty
    set); ``2021/03/01`` and ``2021.03.01`` are days too."""
    ds = load_dataset(_write(tmp_path, "dates.csv", DATES))
    if isinstance(value, str):
        with pytest.raises(DataError, match=r"compares numbers or days.*e\.g\. 2021-03-01"):
            Compare("d", "<=", value)
    else:
        with pytest.raises(DataError, match="'d' holds days, and the number 2021 is never a day"):
            true_answer(ds, PredicateCount(where("d") <= value))
    with pytest.raises(DataError, match=r"'d' holds days, and .* is not one|the number 2021 is never a day"):
        true_answer(ds, PredicateCount(where("d").isin(["2021-03-01", value])))
    assert true_answer(ds, PredicateCount(where("d").isin(["2021/03/01", "1999.12.31"]))) == 2
