"""Issue 20's loading reproductions: the delimiter is sniffed (and said), files in Windows-1252 or
Latin-1 are read with a note, single-quoted headers lose their quotes, list columns are left out
with a note, NUL bytes anywhere and corrupt gzip streams are clean DataErrors."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from dpexplorer.data.errors import DataError
from dpexplorer.data.load import load_dataset, sniff_separator


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


def test_corrupt_gzip_stream_is_a_data_error(tmp_path) -> None:
    packed = gzip.compress(("x,c\n" + "".join(f"{i % 10},abc\n" for i in range(20_000))).encode())
    corrupt = packed[:10] + b"\xff" * 30 + packed[40:]  # zlib.error: invalid block type
    with pytest.raises(DataError, match="corrupt"):
        load_dataset(_write(tmp_path, "broken.csv.gz", corrupt))
