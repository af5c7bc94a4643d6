"""Issue 41, item 3 (acceptance): a group mean with an empty declared group is marked empty in
the result card, the CSV, the JSON and the report, never a bold mean; a mean whose interval is
the declared range says "no estimate better than the declared range" in each place that has
words, and is no bold finding; the catch-all cell is "(any other)", which no data category
reads as. One window release (the GUI's path: card, files and report) per statistic."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict
from dpexplorer.gui import jobs
from dpexplorer.gui.result_card import card_html
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.presentation import EMPTY
from dpexplorer.release.release import prepare

CITIES = ["a", "b", "c", "d"]  # d holds no row, nor does the catch-all cell
AGE = {"column": "age", "lower": 17, "upper": 90}
RANGE_WORDS = "no estimate better than the declared range"


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory, qapp) -> dict[str, jobs.Released]:
    """A noisy mean by city at ε = 20 (the empty groups' noisy counts stay below one row: the
    count's Laplace scale is 0.1) and a Laplace mean at ε = 0.005 (its noise interval, ±1,600,
    holds the whole range [17, 90])."""
    folder = tmp_path_factory.mktemp("words")
    data = folder / "d.csv"
    data.write_text("age,city\n" + "".join(f"{20 + i % 60},{'abc'[i % 3]}\n" for i in range(90)))
    dataset = load_dataset(data)
    ledger_path = folder / "l.sqlite"
    entries = {
        "groups": ({"type": "group_by", "keys": [{"column": "city", "categories": CITIES}],
                    "statistic": "mean", **AGE}, "noisy_mean", {"epsilon": 20.0}),
        "range": ({"type": "mean", **AGE}, "laplace", {"epsilon": 0.005}),
    }  # fmt: skip
    out: dict[str, jobs.Released] = {}
    for name, (query, mechanism, params) in entries.items():
        with Ledger(ledger_path) as ledger:
            prepared = prepare(dataset, query_from_dict(query), mechanism, params, ledger=ledger)
            ledger.set_budget(prepared.fingerprint, 100.0, 0.0)
        out[name] = jobs.release_and_account(prepared, str(ledger_path), str(folder / "out"), "d.csv", name)
    return out


def _files(released: jobs.Released) -> tuple[list[dict[str, str]], list[dict], str]:
    files = released.result.files
    with open(files["csv"], newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    values = json.loads(Path(files["json"]).read_text(encoding="utf-8"))["values"]
    return rows, values, Path(files["report"]).read_text(encoding="utf-8")


def test_an_empty_group_is_marked_empty_everywhere_and_never_bold(released) -> None:
    item = released["groups"]
    labels = item.result.labels
    empty = {label.split(":")[0] for label, v in zip(labels, item.result.values, strict=True) if v == EMPTY}
    assert empty == {"city = d", "city = (any other)"}, item.result.values
    # the card: "empty" in plain type, never a bold number
    html = card_html(item)
    assert ">empty<" in html and "<b style='font-size: large'>empty</b>" not in html
    for row in re.findall(r"city = d: mean.*?</tr>", html, flags=re.S):
        assert "<b" not in row and "empty" in row
    rows, values, report = _files(item)
    # the CSV: the key columns, then "empty" with no interval
    marked = [r for r in rows if r["city"] in ("d", "(any other)")]
    assert len(marked) == 6 and {r["value"] for r in marked} == {EMPTY}
    assert all(r["ci_low"] == r["ci_high"] == r["interval"] == "" for r in marked)
    # the JSON: "empty", no interval ends
    json_marked = [v for v in values if v["label"].startswith(("city = d:", "city = (any other):"))]
    assert len(json_marked) == 6 and all(
        v["value"] == EMPTY and v["ci_low"] is None and v["ci_high"] is None for v in json_marked
    )
    # the report: its summary and its values table say empty, in words, and bold nothing
    assert "city = d: mean: empty" in report
    assert re.search(r"<td>city = d: mean</td><td[^>]*>empty</td><td>none</td><td>empty: ", report)
    assert "<b>empty" not in report and "<b>" not in report.split("<h2")[1]


def test_a_mean_whose_interval_is_the_declared_range_says_so(released) -> None:
    item = released["range"]
    assert item.result.interval_kinds == ("range",) and item.result.confidence_intervals == ((17.0, 90.0),)
    html = card_html(item)
    assert RANGE_WORDS.capitalize() in html and "noise moved this" not in html
    assert "<b style='font-size: large'>" not in html  # not a finding
    rows, values, report = _files(item)
    assert rows[0]["interval"] == "declared range" and (rows[0]["ci_low"], rows[0]["ci_high"]) == ("17", "90")
    assert (values[0]["ci_low"], values[0]["ci_high"]) == (17.0, 90.0)
    assert RANGE_WORDS in report and "noise moved this" not in report
    assert "The widest interval from noise" not in report  # the range is no noise interval
