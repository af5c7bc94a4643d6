"""The release report (issue 21): every statistic, released value and epsilon charged appears in
the HTML, no true answer does; the plots are well-formed SVG; the PDF has a page per few
statistics and every page renders with ink on it; `dpexplorer release --report` writes both."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from html import escape as html_escape
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pytest

from dpexplorer.cli import main
from dpexplorer.data.answers import query_input
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.presentation import privacy_number, show
from dpexplorer.release.release import execute, prepare
from dpexplorer.release.report import render_html, value_text, write_html
from dpexplorer.release.report_model import Report, build_report
from dpexplorer.release.report_plots import svg_plot
from dpexplorer.release.samplers import SeededBitSource

N = 4321
PLAN = [
    {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.3}},
    {
        "query": {"type": "sum", "column": "income", "lower": 0, "upper": 100},
        "mechanism": "laplace",
        "parameters": {"epsilon": 0.25},
    },
    {
        "query": {"type": "mean", "column": "income", "lower": 0, "upper": 100},
        "mechanism": "gaussian",
        "parameters": {"epsilon": 0.5, "delta": 1e-7},
    },
    {
        "query": {"type": "histogram", "axis": {"column": "city", "categories": ["north", "south", "east"]}},
        "mechanism": "laplace",
        "parameters": {"epsilon": 0.2},
    },
    {
        "query": {"type": "argmax", "column": "city", "categories": ["north", "south", "east"]},
        "mechanism": "exponential",
        "parameters": {"epsilon": 0.15},
    },
]


class _Text(HTMLParser):
    """The text a reader sees (SVG <text> included), and every <svg> element's source span."""

    def __init__(self) -> None:
        super().__init__()
        self.chunks: list[str] = []
        self.svgs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.svgs += tag == "svg"

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)


def _text(page: str) -> tuple[str, int]:
    parser = _Text()
    parser.feed(page)
    return " ".join(parser.chunks), parser.svgs


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text))


def _spellings(value: float) -> set[str]:
    """Ways a number might be printed (the report's own formats among them)."""
    out = {value_text(value), f"{value:.6g}", f"{value:.4g}", repr(float(value))}
    if float(value).is_integer():
        out.add(str(int(value)))
    return out


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("report")
    rng = np.random.default_rng(21)
    income = np.round(rng.uniform(0, 100, N), 3)
    cities = rng.choice(["north", "south", "east"], N, p=[0.5, 0.3, 0.2])
    data = root / "people.csv"
    data.write_text("income,city\n" + "".join(f"{x},{c}\n" for x, c in zip(income, cities, strict=True)))
    dataset = load_dataset(data)
    bits = SeededBitSource(7)
    truths = []
    with Ledger(root / "ledger.sqlite") as ledger:
        ledger.set_budget(dataset.content_fingerprint, 3.0, 1e-6, "basic")
        before = [m.guarantee for m in ledger.measurements(dataset.content_fingerprint)]
        pairs = []
        for entry in PLAN:
            query = query_from_dict(entry["query"])
            answer = query_input(dataset, query, "add_remove", exact_sums=True)
            truths += [float(v) for v in getattr(answer, "value_d", [])]
            prepared = prepare(dataset, query, entry["mechanism"], entry["parameters"])
            pairs.append((prepared, execute(prepared, ledger=ledger, out_dir=root / "out", bits=bits)))
        spent = ledger.spent(dataset.content_fingerprint)
        report = build_report(
            dataset=data.name,
            fingerprint=dataset.content_fingerprint,
            released=pairs,
            ledger=ledger,
            before=before,
        )
    truths += [N, float(np.clip(income, 0, 100).mean())]
    truths += [int((cities == c).sum()) for c in ("north", "south", "east")]
    fingerprint = dataset.content_fingerprint
    return {
        "report": report,
        "pairs": pairs,
        "truths": truths,
        "root": root,
        "spent": spent,
        "fingerprint": fingerprint,
    }


def test_every_statistic_value_and_epsilon_appears(released: dict) -> None:
    report: Report = released["report"]
    text, svgs = _text(render_html(report))
    numbers = _numbers(text)
    assert svgs == len(PLAN) + 1  # and the budget page's trade-off curve
    for item, (prepared, result) in zip(report.items, released["pairs"], strict=True):
        assert item.description[1:] in text  # the heading capitalises the first letter
        for index, label in enumerate(result.labels):  # rounded by the one rule, with intervals
            assert label in text
            shown = item.shown(index)
            assert shown.value in text and shown.interval in text
        assert f"ε = {privacy_number(result.epsilon)}" in text
        assert prepared.mechanism in text
    assert report.dataset_id in text
    assert released["fingerprint"][:8] not in text  # the rows' hash is never published
    ledger_line = report.budget_lines[0]
    assert ledger_line.method == "basic"
    assert math.isclose(ledger_line.after, released["spent"], rel_tol=1e-9)
    assert privacy_number(ledger_line.after) in numbers
    assert "over by" not in text  # other accountants are compared with nothing (an appendix)


def test_no_true_answer_appears(released: dict) -> None:
    text, _ = _text(render_html(released["report"]))
    numbers = _numbers(text)
    # 0 and small counts are spelled by axis ticks and deltas too; every other truth is checked
    for truth in [t for t in released["truths"] if abs(t) >= 100 or not float(t).is_integer()]:
        leaked = _spellings(truth) & numbers
        assert not leaked, f"the true answer {truth} appears in the report as {leaked}"


def test_the_leak_check_sees_a_true_answer(released: dict) -> None:
    """The check above can fail: a report whose first value is the true count is caught."""
    report: Report = released["report"]
    first = report.items[0]
    leaky = Report(
        **{**report.__dict__, "items": (first.__class__(**{**first.__dict__, "values": (float(N),)}),)}
    )
    numbers = _numbers(_text(render_html(leaky))[0])
    assert _spellings(N) & numbers


def test_plots_are_well_formed_svg_with_one_mark_per_value(released: dict) -> None:
    for item in released["report"].items:
        root = ET.fromstring(svg_plot(item))
        assert root.tag.endswith("svg")
        marks = [e for e in root.iter() if e.tag.endswith(("circle", "rect"))]
        if item.statistic == "histogram":
            assert len([m for m in marks if m.get("fill-opacity")]) == len(item.labels)
        elif item.numeric:
            assert len([m for m in marks if m.tag.endswith("circle")]) == len(item.labels)


def test_pdf_pages_render(released: dict, qapp: object) -> None:
    from dpexplorer.report_pdf import write_pdf

    path = write_pdf(released["report"], released["root"] / "report.pdf")
    pdf = pdfium.PdfDocument(str(path))
    # the summary, dataset and budget, about two statistics a page, the appendices,
    # reproducibility (two pages): 9 pages in six local runs, 10 once in a clean-clone CI run
    # (cause not found; the document's font is fixed), so the bound catches a runaway layout,
    # not one page more or less
    assert 2 <= len(pdf) <= math.ceil(len(PLAN) / 2) + 7
    text = "".join(pdf[i].get_textpage().get_text_range() for i in range(len(pdf)))
    assert "Release report" in text and "Reproducibility" in text
    for index in range(len(pdf)):
        pixels = pdf[index].render(scale=0.5).to_numpy()
        ink = (pixels[..., :3] < 128).any(axis=-1).mean()
        assert 1e-5 < ink < 0.5, f"page {index + 1}: {ink:.4f} of its pixels are ink"


def test_cli_release_report(tmp_path: Path, qapp: object) -> None:
    data = tmp_path / "people.csv"
    data.write_text("income,city\n" + "".join(f"{i % 97},{'ab'[i % 2]}\n" for i in range(200)))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN[:2]))
    out = tmp_path / "out"
    code = main(
        [
            "release", str(plan), "--data", str(data), "--out", str(out),
            "--ledger", str(tmp_path / "l.sqlite"), "--budget-epsilon", "1", "--report",
        ]
    )  # fmt: skip
    assert code == 0
    (pdf,) = out.glob("report-*.pdf")  # named with the run's token, as the releases' files
    assert len(pdfium.PdfDocument(str(pdf))) >= 1
    token = pdf.name.removeprefix("report-").removesuffix(".pdf")
    assert len(list(out.glob(f"release-*-{token}-*.provenance.json"))) == 2
    text, svgs = _text(pdf.with_suffix(".html").read_text(encoding="utf-8"))
    assert svgs == 2 + 1 and "The sum of income" in text  # + the budget page's trade-off curve


def test_write_html_is_atomic_and_self_contained(released: dict, tmp_path: Path) -> None:
    path = write_html(released["report"], tmp_path)
    page = path.read_text(encoding="utf-8")
    assert not list(tmp_path.glob(".*tmp*"))
    page = page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    # nothing is fetched: the only addresses are the deployments' sources, as links to follow
    assert not re.search(r"(src|url)\W{0,3}http|<link|<script", page)
    assert re.sub(r'<a href="https://[^"]*">https://[^<]*</a>', "", page).count("http") == 0


def test_group_by_report_shows_the_unit_and_intervals(tmp_path: Path) -> None:
    """A steward statistic (issue 16): the privacy unit and contribution bounds appear, the
    intervals computed after the charge (dp_outputs) are in the table, and the plot draws the
    means by group only (the noisy counts and sums sit on another scale)."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "visits.csv"
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            [
                {
                    "query": {
                        "type": "group_by",
                        "keys": [{"column": "department", "categories": ["GP", "Cardiology"]}],
                        "statistic": "mean", "column": "cost", "lower": 0, "upper": 500,
                        "unit": {"column": "patient_id", "max_groups": 2, "max_rows": 3},
                    },
                    "mechanism": "noisy_mean",
                    "parameters": {"epsilon": 1.0},
                }
            ]
        )
    )  # fmt: skip
    out = tmp_path / "out"
    args = ["release", str(plan), "--data", str(fixture), "--out", str(out), "--ledger"]
    assert main([*args, str(tmp_path / "l.sqlite"), "--budget-epsilon", "2", "--report"]) == 0
    (html_path,) = out.glob("report-*.html")
    page = html_path.read_text(encoding="utf-8")
    text, _ = _text(page)
    assert "rows sharing a value of patient_id are one person" in text
    assert "at most 3 row(s) in each of at most 2 group(s) per person" in text
    assert "one person with all their rows" in text
    provenance = json.loads(next(out.glob("*.provenance.json")).read_text())
    intervals = provenance["dp_outputs"]["confidence_intervals"]
    values = json.loads(next(p for p in out.glob("*.json") if ".provenance" not in p.name).read_text())
    for full, (low, high) in zip(values["values"], intervals, strict=True):
        shown = show(full["value"], (low, high), integral=full["label"].endswith("count (noisy)"))
        assert shown.interval in text  # rounded by the one rule
    start = page.index("<svg", page.index("Statistics</h2>"))  # the budget page has its own plot
    svg = ET.fromstring(page[start : page.index("</svg>", start) + 6])
    labels = [e.text for e in svg.iter() if e.tag.endswith("text") and e.text and "department" in e.text]
    assert labels == ["department = GP", "department = Cardiology", "department = (any other)"]


def test_a_mean_plots_only_the_mean_not_its_helper_sums_and_counts() -> None:
    """A noisy_mean release also publishes its noisy count and centred sum; on one axis with the
    mean (38) they squashed it against -700,000 (the user guide's example report, looked at)."""
    from dpexplorer.core.accounting.guarantees import PureDP
    from dpexplorer.release.report_model import ReportItem
    from dpexplorer.release.report_plots import _plotted

    item = ReportItem(
        1, "mean", {"type": "mean"}, "mean", "noisy_mean", {},
        ("mean", "count (noisy)", "centred sum (noisy)"),
        (38.6, 48840.0, -725654.4), ((38.5, 38.7), (48825.0, 48855.0), (-726000.0, -725000.0)), 0.95,
        0.5, 0.0, None, PureDP(0.5), "", {}, {}, {}, "add_remove",
    )  # fmt: skip
    plotted = _plotted(item)
    assert plotted.labels == ("mean",) and plotted.values == (38.6,) and plotted.intervals == ((38.5, 38.7),)


def test_group_by_values_are_a_dot_plot_and_helpers_go_to_an_appendix() -> None:
    """A count by group is drawn as dots with intervals (not bars); a noisy mean's helper values
    (noisy count, centred sum) are listed in Appendix B, not beside the means; an empty group
    is said, not drawn."""
    from dpexplorer.core.accounting.guarantees import PureDP
    from dpexplorer.release.report import _helpers_appendix, _item_section
    from dpexplorer.release.report_model import ReportItem

    counts = ReportItem(
        1, "count by city", {"type": "group_by", "statistic": "count"}, "histogram", "laplace", {},
        ("city = a", "city = b"), (12.0, 30.0), ((9.0, 15.0), (27.0, 33.0)), 0.95,
        1.0, 0.0, None, PureDP(1.0), "", {}, {}, {}, "add_remove", ("noise", "noise"),
    )  # fmt: skip
    svg = svg_plot(counts)
    assert svg.count("<circle") == 2 and "<rect x" not in svg.replace("<rect width", "")
    means = ReportItem(
        2, "mean by city", {"type": "group_by", "statistic": "mean"}, "mean", "noisy_mean", {},
        ("city = a: mean", "city = a: count (noisy)", "city = a: centred sum (noisy)",
         "city = d: mean", "city = d: count (noisy)", "city = d: centred sum (noisy)"),
        (41.23456, 120.0, 300.5, "empty", "empty", "empty"),
        ((40.1, 42.3), (110.0, 130.0), (-200.0, 800.0), None, None, None), 0.95,
        1.0, 0.0, None, PureDP(1.0), "", {}, {}, {}, "add_remove",
        ("noise", "noise", "noise", None, None, None),
    )  # fmt: skip
    section, _ = _text(_item_section(2, means, svg_plot(means), False))
    assert "41.2" in section and "41.23456" not in section and "[40.1, 42.3]" in section
    assert "count (noisy)" not in section.split("Helper values")[0] and "empty" in section
    report = Report("d.csv", "f", (counts, means), None, (), [], "l")
    appendix, _ = _text(_helpers_appendix(report))
    assert "count (noisy)" in appendix and "[110, 130]" in appendix and "[-200, 800]" in appendix
    assert "<circle" in svg_plot(means) and "empty" in svg_plot(means)


def _budget_page(page: str) -> str:
    return page[page.index("<h2>Budget</h2>") : page.index("Statistics</h2>")]


def test_the_budget_page_carries_the_risk_of_everything_released(released: dict) -> None:
    """Issue 44: the trade-off curve of every release the ledger holds for the dataset (as
    core.tradeoff composes them), its kind, its reading at low false-positive rates and its
    mu-GDP summary, drawn on the budget page; the plot's curve is the computed one."""
    from dpexplorer.core.tradeoff import tradeoff_of
    from dpexplorer.release.report_plots import RISK_PLOT, plots

    report: Report = released["report"]
    with Ledger(released["root"] / "ledger.sqlite") as ledger:
        held = [m.guarantee for m in ledger.measurements(released["fingerprint"])]
    expected = tradeoff_of(held)
    risk = report.risk
    assert risk is not None and risk.releases == len(PLAN) == len(held)
    # the discrete Gaussian mean is charged as zCDP, which has no PLD: the other accountants'
    # profiles bound the curve, and no mu-GDP is claimed
    assert risk.tradeoff.kind == expected.kind == "lower bound from the accountants' profiles"
    np.testing.assert_allclose(risk.tradeoff.fnr, expected.fnr, atol=1e-12)
    assert risk.tradeoff.gdp_mu is None is expected.gdp_mu
    budget = _budget_page(render_html(report))
    text, svgs = _text(budget)
    assert svgs == 1 and "Risk of everything released from this dataset" in text
    assert f"all {len(PLAN)} release(s)" in text and expected.kind in text
    for fpr in (0.001, 0.01, 0.1):
        assert f"{expected.fnr_at(fpr):.3f}" in text
    assert "No μ-GDP summary" in text
    # the blue path, mapped back to rates, is the curve (to the drawing's 0.1 px)
    svg = ET.fromstring(plots(report)[RISK_PLOT])
    (path,) = [e for e in svg.iter() if e.tag.endswith("path") and e.get("stroke-width") == "2.5"]
    points = np.array([[float(v) for v in p[1:].split(",")] for p in path.get("d").split()])
    left, top, right, bottom = 70, 20, 330, 280
    np.testing.assert_allclose((points[:, 0] - left) / (right - left), expected.fpr, atol=0.1 / 260)
    np.testing.assert_allclose((bottom - points[:, 1]) / (bottom - top), expected.fnr, atol=0.1 / 260)
    labels = [e.text for e in svg.iter() if e.tag.endswith("text")]
    assert "all releases (lower bound)" in labels and "random guessing (nothing learnt)" in labels


def test_a_report_of_laplace_releases_gives_their_mu_gdp(released: dict, tmp_path: Path) -> None:
    """Pure-DP releases compose in the PLD: the budget page gives the sound mu-GDP summary and
    draws its Gaussian curve (dashed, below the curve)."""
    from dpexplorer.core.accounting.guarantees import PureDP
    from dpexplorer.core.tradeoff import tradeoff_of

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN[:2]))
    argv = [
        "release",
        str(plan),
        "--data",
        str(released["root"] / "people.csv"),
        "--out",
        str(tmp_path / "out"),
    ]
    assert main([*argv, "--ledger", str(tmp_path / "l.sqlite"), "--budget-epsilon", "1", "--report"]) == 0
    (page,) = (tmp_path / "out").glob("report-*.html")
    text, _ = _text(_budget_page(page.read_text(encoding="utf-8")))
    with Ledger(tmp_path / "l.sqlite") as ledger:
        (key,) = _keys(ledger)
        held = [m.guarantee for m in ledger.measurements(key)]
    assert all(isinstance(g, PureDP) for g in held)
    expected = tradeoff_of(held)
    assert expected.gdp_mu is not None and expected.gdp_kind == "upper bound"
    assert f"μ-GDP with μ = {privacy_number(expected.gdp_mu)} (upper bound" in text


def _keys(ledger: Ledger) -> list[str]:
    import sqlite3

    with sqlite3.connect(ledger.path) as db:
        return [row[0] for row in db.execute("SELECT DISTINCT fingerprint FROM measurements")]


def test_the_budget_page_puts_the_total_among_published_deployments(released: dict) -> None:
    """Issue 44: every deployment of the shipped file with its source, local and central said,
    and the dataset's own total (the ledger's accountant, at the budget's delta) in bold."""
    from dpexplorer.release.deployments import deployments

    report: Report = released["report"]
    budget = _budget_page(render_html(report))
    total = report.budget_lines[0].after
    assert report.budget is not None and total is not None
    own = f"<b>{privacy_number(total)}, δ = {privacy_number(report.budget.delta)}</b>"
    assert own in budget and "<b>everything released from this dataset</b>" in budget
    for d in deployments():
        assert html_escape(d.name) in budget and f'href="{d.url}"' in budget
    assert ">local<" in budget and ">central<" in budget and "Units differ" in budget
    context = budget[budget.index("ε in context") :]
    rows = re.findall(r'<td class="num" align="right">(?:<b>)?(?:ρ = [\d.]+ \(≈ ε )?([\d.]+)', context)
    assert len(rows) == len(deployments()) + 1
    assert [float(r) for r in rows] == sorted(float(r) for r in rows)  # sorted by epsilon


def test_the_pdf_budget_page_draws_the_curve(released: dict, qapp: object) -> None:
    """The PDF draws the trade-off plot as one more image, on the page that says it."""
    import pypdfium2.raw as raw

    from dpexplorer.report_pdf import write_pdf

    pdf = pdfium.PdfDocument(str(write_pdf(released["report"], released["root"] / "risk.pdf")))
    pages = [pdf[i] for i in range(len(pdf))]
    images = [sum(o.type == raw.FPDF_PAGEOBJ_IMAGE for o in page.get_objects()) for page in pages]
    assert sum(images) == len(PLAN) + 1
    said = next(
        i
        for i, page in enumerate(pages)
        if "Risk of everything released" in page.get_textpage().get_text_range()
    )
    assert images[said] + (images[said + 1] if said + 1 < len(pages) else 0) >= 1
