"""The release report (issue 21): what a run released, as a page a person reads.

:func:`render_html` writes a self-contained HTML page from a
:class:`~dpexplorer.release.report_model.Report` (built by
:func:`~dpexplorer.release.report_model.build_report` from released values and declared facts
only): page one the summary, then the dataset and the budget, a section per statistic with its
values table, plot (inline SVG, :mod:`dpexplorer.release.report_plots`) and facts, the
appendices (other accountants, helper values) and the reproducibility page. The number of rows
is shown only where a count was released, since under add/remove it is private.

The PDF is drawn by Qt (``dpexplorer/report_pdf.py``), because ``release`` must not import Qt;
it renders the same HTML with ``pdf=True``, where each plot is an ``<img>`` naming one of
:func:`~dpexplorer.release.report_plots.plots`."""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpexplorer.core.accounting.guarantees import ZCDP, ApproxDP, Guarantee, LaplaceNoise, PureDP
from dpexplorer.release.costs import cost_words
from dpexplorer.release.deployments import caveat, epsilon_text
from dpexplorer.release.export import atomic_write
from dpexplorer.release.ledger import guarantee_to_dict
from dpexplorer.release.presentation import BOTTOM, level_text, privacy_number, show
from dpexplorer.release.public_facts import BOUND_BY_CONTENT
from dpexplorer.release.published import HELPER_SUFFIX
from dpexplorer.release.report_model import SYNTHETIC, BudgetLine, Report, ReportItem
from dpexplorer.release.report_plots import PDF_PLOT_WIDTH, RISK_PLOT, WIDTH, plot_height, plot_name, plots

STATISTICS_PER_PAGE = 3
"""At most this many statistics on one PDF page (each has two tables and a plot)."""
PAGE_HEIGHT = 940
"""Height of an A4 page within 15 mm margins in Qt rich-text pixels (267 mm at 96 per inch),
less what the layout adds around images."""

COUNT_STATISTICS = frozenset({"count"})
SUMMARY_VALUES = 6
"""At most this many values of a statistic in the summary's table (its section lists all)."""


# ------------------------------------------------------------------ words
def _num(value: float | None, digits: int = 3) -> str:
    """ε, δ, ρ and other declared figures: ``digits`` significant digits (the one rule for
    privacy figures, :func:`~dpexplorer.release.presentation.privacy_number`)."""
    return privacy_number(value, digits)


def value_text(value: float | str, interval: tuple[float, float] | None = None, level: float = 0.95) -> str:
    """A released value as the report prints it: rounded to the digits its interval supports
    (dpexplorer/release/presentation.py); without an interval, six significant digits."""
    return show(value, interval, level).value


def guarantee_words(item: ReportItem) -> str:
    """What the charged guarantee means for one person, in words (Dwork & Roth 2014, Def. 2.4;
    Bun & Steinke 2016, Def. 1.1 for zCDP)."""
    g = item.guarantee
    if isinstance(item.query.get("unit"), dict):
        unit = "adding or removing one person with all their rows"
    elif item.relation == "add_remove":
        unit = "adding or removing one person's row"
    else:
        unit = "changing one person's row"
    if isinstance(g, PureDP | LaplaceNoise):
        eps = g.epsilon if isinstance(g, PureDP) else g.sensitivity / g.scale
        return (
            f"ε = {_num(eps)}: {unit} changes the probability of any outcome of this release "
            f"by at most a factor e^ε = {_num(math.exp(eps), 4)}."
        )
    if isinstance(g, ApproxDP):
        return (
            f"(ε, δ) = ({_num(g.epsilon)}, {_num(g.delta, 3)}): {unit} changes the probability of "
            f"any outcome by at most a factor e^ε = {_num(math.exp(g.epsilon), 4)}, plus an "
            f"additive δ = {_num(g.delta, 3)} (the chance, roughly, that the bound fails)."
        )
    if isinstance(g, ZCDP):
        return (
            f"ρ = {_num(g.rho)} zero-concentrated DP: the privacy loss from {unit} is "
            f"sub-Gaussian; it implies (ε, δ) = ({_num(item.epsilon)}, {_num(item.delta, 3)})."
        )
    return f"(ε, δ) = ({_num(item.epsilon)}, {_num(item.delta, 3)})."


def _charged(g: Guarantee) -> str:
    fields = {k: v for k, v in guarantee_to_dict(g).items() if k != "type"}
    shown = ", ".join(f"{k} = {_num(v) if isinstance(v, float) else v}" for k, v in fields.items())
    return f"{type(g).__name__} ({shown})"


# ------------------------------------------------------------------ HTML
_STYLE = """
body { font-family: sans-serif; max-width: 60em; margin: 2em auto; color: #222; line-height: 1.4; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #555; font-size: 90%; }
pre { background: #f6f6f6; padding: 0.6em; font-size: 85%; white-space: pre-wrap; }
"""


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    head = f"<tr>{head}</tr>" if any(headers) else ""
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num" align="right">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f'<table border="1" cellspacing="0" cellpadding="4">{head}{body}</table>'


def _released_rows(report: Report) -> str:
    counts = [i for i in report.items if i.statistic in COUNT_STATISTICS and i.numeric and i.values]
    if counts:
        shown = ", ".join(f"{i.shown(0)} (ledger row {i.row_id}, ε = {_num(i.epsilon)})" for i in counts)
        return f"{shown}: released with noise in this report"
    return (
        "not published: under add/remove the number of rows is itself private, and this "
        "report releases no count of rows"
    )


def unit_of(item: ReportItem) -> tuple[str, str]:
    """(privacy unit, contribution bound) of one statistic, in words: the declared privacy unit
    of a steward statistic (query ``unit``), else one row per person."""
    unit = item.query.get("unit")
    if isinstance(unit, dict) and unit.get("column"):
        return (
            f"rows sharing a value of {unit['column']} are one person; neighbouring datasets add or "
            "remove one person with all their rows",
            f"at most {unit.get('max_rows', 1)} row(s) in each of at most {unit.get('max_groups', 1)} "
            "group(s) per person, chosen at random",
        )
    if item.relation == "add_remove":
        return "one row is one person; neighbouring datasets add or remove one row", "one row per person"
    return "one row is one person; neighbouring datasets differ in one row", "one row per person"


def _dataset_section(report: Report) -> str:
    units: dict[tuple[str, str], list[int]] = {}
    for number, item in enumerate(report.items, start=1):
        units.setdefault(unit_of(item), []).append(number)
    rows = [
        ["Dataset", html.escape(report.dataset)],
        ["Dataset id (in the ledger)", f"<code>{html.escape(report.dataset_id)}</code>"],
        ["Rows", html.escape(_released_rows(report))],
    ]
    books = {str(i.codebook.get("sha256")): i.codebook for i in report.items if i.codebook}
    for digest, book in books.items():
        named = f", for dataset {book.get('dataset')}" if book.get("dataset") else ""
        if book.get("dataset") == BOUND_BY_CONTENT:
            named = ", checked against the data released (their fingerprint is not published)"
        where = f"{Path(str(book.get('file'))).name}, " if book.get("file") else ""  # not the local path
        rows.append(["Codebook", html.escape(f"{where}SHA-256 {digest}{named}")])
    for (unit, bound), numbers in units.items():
        plural = "s" if len(numbers) > 1 else ""
        which = "" if len(units) == 1 else f" (statistic{plural} {', '.join(map(str, numbers))})"
        rows.append([f"Privacy unit{which}", html.escape(unit)])
        rows.append([f"Contribution bound{which}", html.escape(bound)])
    return "<h2>Dataset</h2>" + _table(["", ""], rows)


def _ledger_line(report: Report) -> BudgetLine | None:
    budget = report.budget
    if budget is None:
        return None
    return next((line for line in report.budget_lines if line.method == budget.method), None)


def _spent_words(report: Report) -> str:
    """ε and δ spent under the ledger's accountant, in one sentence."""
    budget, line = report.budget, _ledger_line(report)
    if budget is None or line is None:
        return "No budget is set for this dataset in the ledger."
    if line.after is None:
        return f"Under the ledger's {budget.method} composition the total has no finite ε: {line.note}"
    run = line.after - (line.before or 0.0)
    left = max(budget.epsilon - line.after, 0.0)
    return (
        f"This report's releases cost ε = {_num(run)} at δ = {_num(budget.delta)} under the ledger's "
        f"accountant ({budget.method}), which decides: ε {_num(line.before)} was spent before, "
        f"{_num(line.after)} after, of a budget of ε = {_num(budget.epsilon)}; ε = {_num(left)} is left."
    )


def _budget_section(report: Report) -> str:
    budget = report.budget
    if budget is None:
        return "<h2>Budget</h2><p>No budget is set for this dataset in the ledger.</p>"
    line = _ledger_line(report)
    rows = []
    if line is not None:
        left = "—" if line.after is None else _num(max(budget.epsilon - line.after, 0.0))
        rows.append(
            [f"<b>{line.method}</b>", _num(line.before), _num(line.after), left, html.escape(line.note)]
        )
    return (
        "<h2>Budget</h2>"
        f"<p>Total budget for this dataset: ε = {_num(budget.epsilon)}, δ = {_num(budget.delta)}, "
        f"composed under <b>{budget.method}</b>, the ledger's accountant, which decides refusals. "
        f"This report's ledger rows: {', '.join(str(i.row_id) for i in report.items)} (each "
        "statistic below shows its charge). Other accountants' totals, for comparison only, are in "
        "the appendix.</p>"
        + _table(["accountant", "ε before", "ε after", "ε left", "note"], rows, numeric=(1, 2, 3))
    )


RISK_READ_AT = (0.001, 0.01, 0.1)
"""False-positive rates at which the budget page reads the attacker's trade-off curve."""


def _risk_words(report: Report) -> str:
    """The trade-off curve in words: what it is (exact or a bound), its reading at low
    false-positive rates, and the mu-GDP summary."""
    risk = report.risk
    if risk is None or risk.tradeoff is None:
        return f"<p>{html.escape(risk.note if risk else 'No risk was computed for this report.')}</p>"
    t = risk.tradeoff
    kind = "exact" if t.kind == "exact" else f"a {t.kind} (the attacker's true error is never below it)"
    rows = [[privacy_number(a, 2), f"{t.fnr_at(a):.3f}"] for a in RISK_READ_AT]
    gdp = (
        f"As one number: the releases are μ-GDP with μ = {_num(t.gdp_mu)} ({html.escape(t.gdp_kind or '')}"
        f"{'' if t.gdp_kind == 'exact' else ': a sound summary, the true μ may be smaller'}); the "
        "dashed curve is that Gaussian one."
        if t.gdp_mu is not None
        else f"No μ-GDP summary: {html.escape(t.gdp_note)}."
    )
    return (
        f"<p>An attacker who sees all {risk.releases} release(s) of this dataset and tests whether "
        "one person, say Alice, is in the data either says she is in when she is not (a false "
        "positive) or misses her (a false negative). The curve is the smallest false-negative rate "
        f"any test can reach at each false-positive rate: {kind}. {gdp}</p>"
        + _table(["false-positive rate", "false-negative rate at least"], rows, numeric=(0, 1))
    )


def _context_table(report: Report) -> str:
    """The dataset's total among published deployments, sorted by ε, its own row in bold; each
    source numbered once and listed under the table."""
    risk = report.risk
    if risk is None or not risk.context:
        return ""
    sources: dict[str, tuple[int, str]] = {}
    rows = []
    for row in risk.context:
        eps = epsilon_text(row, _num)
        if row.url:
            number = sources.setdefault(row.url, (len(sources) + 1, row.source))[0]
            cited = f"[{number}]"
        else:
            cited = html.escape(row.source)
        cells = [html.escape(row.label), eps, row.model, html.escape(row.unit), cited]
        rows.append([f"<b>{c}</b>" for c in cells] if row.own else cells)
    listed = "".join(
        f'<li>{html.escape(source)}: <a href="{html.escape(url)}">{html.escape(url)}</a></li>'
        for url, (_, source) in sources.items()
    )
    return (
        "<h3>ε in context: published deployments</h3>"
        + _table(["deployment", "ε (as published)", "DP model", "privacy unit", "source"], rows, numeric=(1,))
        + f'<p class="note">{html.escape(caveat())}</p><ol class="note">{listed}</ol>'
    )


def _risk_section(report: Report, plot: str) -> str:
    """The budget page's risk: the trade-off curve of everything released, in words and as a
    plot (``plot``: inline SVG or an image tag), and the total among published deployments."""
    if report.risk is None:
        return ""
    return (
        "<h3>Risk of everything released from this dataset</h3>"
        + _risk_words(report)
        + (plot if report.risk.tradeoff is not None else "")
        + _context_table(report)
    )


def _accountants_appendix(report: Report) -> str:
    """Every other accountant's total, for comparison: an upper bound under its own theorem;
    it decides nothing, so it is never compared with the budget."""
    budget = report.budget
    if budget is None:
        return ""
    rows = [
        [line.method, _num(line.before), _num(line.after), html.escape(line.note)]
        for line in report.budget_lines
        if line.method != budget.method
    ]
    if not rows:
        return ""
    return (
        '<h2 style="page-break-before: always">Appendix A: other accountants</h2>'
        f"<p>The same releases composed under the other accountants, at δ = {_num(budget.delta)}: "
        "each number is an upper bound on ε under its own theorem. They are shown for comparison "
        f"only: the budget is composed under {budget.method}, and only that total is charged.</p>"
        + _table(["accountant", "ε before", "ε after", "note"], rows, numeric=(1, 2))
    )


def _helpers_appendix(report: Report) -> str:
    """The helper values some mechanisms publish beside their statistic (a noisy mean's noisy
    count and centred sum): released, so listed, but apart from the statistics."""
    rows = []
    for number, item in enumerate(report.items, start=1):
        for i, label in enumerate(item.labels):
            if label.endswith(HELPER_SUFFIX):
                shown = item.shown(i)
                rows.append(
                    [str(number), html.escape(label), html.escape(shown.value), html.escape(shown.interval)]
                )
    if not rows:
        return ""
    return (
        "<h2>Appendix B: helper values</h2>"
        "<p>Some mechanisms release noisy parts from which the statistic is computed (a noisy "
        "mean's noisy count and noisy centred sum, the values minus the middle of the declared "
        "range). They are DP outputs like the statistics, listed here for completeness.</p>"
        + _table(["statistic", "part", "released value", "interval"], rows, numeric=(2,))
    )


def _summary_section(report: Report) -> str:
    """Page one: what was released (each statistic's values, rounded, with intervals), ε and δ
    spent under the ledger's accountant, the widest interval."""
    rows = []
    widest: tuple[float, str] | None = None
    for number, item in enumerate(report.items, start=1):
        main = item.main_indices()
        parts = []
        for i in main[:SUMMARY_VALUES]:
            shown = item.shown(i)
            label = "" if len(main) == 1 else f"{item.labels[i]}: "
            parts.append(f"{label}{shown}")
            pair = item.intervals[i] if item.intervals else None
            kind = item.interval_kinds[i] if i < len(item.interval_kinds) else "noise"
            if pair is not None and kind == "noise":
                half = (pair[1] - pair[0]) / 2
                if widest is None or half > widest[0]:
                    widest = (
                        half,
                        f"statistic {number} ({item.labels[i]}): {shown}, {shown.reach}",
                    )
        if len(main) > SUMMARY_VALUES:
            parts.append(f"… {len(main) - SUMMARY_VALUES} more (section {number})")
        if not main:
            parts.append("no value (no key kept)")
        rows.append(
            [
                str(number),
                html.escape(item.description[:1].upper() + item.description[1:]),
                html.escape(item.mechanism),
                "<br/>".join(html.escape(p) for p in parts),
                html.escape(_num(item.epsilon))
                + (f" (ledger: {html.escape(_num(item.subtracted))})" if _ledger_words(item, report) else ""),
            ]
        )
    level = report.items[0].ci_level if report.items else 0.95
    widest_words = (
        f"The widest interval from noise: {html.escape(widest[1])}."
        if widest is not None
        else "No interval from noise was published."
    )
    return (
        "<h2>Summary</h2>"
        f"<p>{html.escape(_spent_words(report))}</p>"
        + _table(["#", "statistic", "mechanism", f"released value [{level_text(level)} interval]", "ε"], rows)
        + f"<p>{widest_words} Values are rounded to the digits their interval supports (the second "
        "significant digit of its half-width); each interval is rounded outward. The JSON files "
        "keep full precision.</p>"
    )


def _values_table(item: ReportItem) -> str:
    """The statistic's own values (helpers are in an appendix), rounded by the one rule, each
    with its interval and the plain sentence."""
    has_ci = item.intervals is not None or BOTTOM in item.values  # ⊥: said to have none
    headers = ["label", "released value"] + (
        [f"{level_text(item.ci_level)} interval", "in words"] if has_ci else []
    )
    rows = []
    for i in item.main_indices():
        shown = item.shown(i)
        row = [html.escape(item.labels[i]), html.escape(shown.value)]
        if has_ci:
            words = shown.sentence  # the presentation module's, for every kind of interval
            if item.values[i] == BOTTOM:
                row += ["none (no number released)", html.escape(shown.sentence)]
            else:
                row += [html.escape(shown.interval or "none"), html.escape(words)]
        rows.append(row)
    if not rows:  # private keys, none kept: a DP output like any other
        rows.append(
            ["(no group)", "no key was kept by the private selection"] + (["—", ""] if has_ci else [])
        )
    return _table(headers, rows, numeric=(1,))


def _interval_fact(item: ReportItem) -> str:
    if item.statistic.startswith(SYNTHETIC):
        return "none: the records are drawn from a model fitted to the noisy marginals (post-processing)"
    if item.intervals is None:
        return "none published for this release (a selection)"
    kinds = set(item.interval_kinds) - {None}
    words = []
    if "noise" in kinds or not kinds:
        words.append(
            f"covers the true answer with probability {level_text(item.ci_level)} over the noise alone "
            "(clipping bias not included), after the declared post-processing"
        )
    if "range" in kinds:
        words.append("the declared range where a value interval would need the data (covers always)")
    if "exact" in kinds:
        words.append("a point where the mechanism released the exact answer")
    if item.rank_within is not None:
        words.append(
            f"in ranks: with probability {level_text(item.ci_level)}, the rows below the released value "
            f"differ from q·n by at most {item.rank_within} more than at the best point of the grid"
        )
    return "; ".join(words)


def _ledger_words(item: ReportItem, report: Report | None) -> str:
    """What the ledger subtracted, beside the ε declared, where they differ (release/costs.py)."""
    if report is None or report.budget is None:
        return ""
    declared = item.parameters.get("epsilon", item.epsilon)
    budget = report.budget
    return cost_words(
        float(declared),
        item.subtracted,
        method=budget.method,
        budget_delta=budget.delta,
        rho=item.rho,
        verb="subtracted",
    )


def _item_section(
    number: int, item: ReportItem, plot: str, page_break: bool, report: Report | None = None
) -> str:
    params = ", ".join(f"{k} = {v}" for k, v in item.parameters.items())
    rho = "" if item.rho is None else f", ρ = {_num(item.rho)}"
    charged = f"ε = {_num(item.epsilon)}, δ = {_num(item.delta)}{rho}; ledger: {_charged(item.guarantee)}"
    subtracted = _ledger_words(item, report)
    charged += f"; {subtracted}" if subtracted else ""
    facts = [
        ["Mechanism", f"{html.escape(item.mechanism)} ({html.escape(params)})"],
        ["Privacy charged", html.escape(charged)],
        ["What it means", html.escape(guarantee_words(item))],
        ["Interval", html.escape(_interval_fact(item))],
    ]
    if item.fact_origins:
        facts.extend(_fact_rows(item))
    elif item.public_facts.get("bounds"):
        low, high = item.public_facts["bounds"]
        facts.append(["Declared bounds", html.escape(f"[{_num(low, 6)}, {_num(high, 6)}]")])
    helpers = len(item.labels) - len(item.main_indices())
    if helpers:
        facts.append(["Helper values", f"{helpers} noisy part(s) released with it: Appendix B"])
    style = ' style="page-break-before: always"' if page_break else ""
    return (
        f"<h3{style}>{number}. {html.escape(item.description[:1].upper() + item.description[1:])}</h3>"
        + _values_table(item)
        + (
            _table(["", ""], facts) + _quality_table(item) + f"<div>{plot}</div>"  # the table first
            if item.statistic.startswith(SYNTHETIC)
            else f"<div>{plot}</div>" + _table(["", ""], facts)
        )
    )


ORIGIN_WORDS = {
    "declared": "declared by the steward",
    "shipped": "shipped with dpexplorer",
    "estimated": "estimated privately",
}


def fact_value_text(fact: Mapping[str, Any], limit: int = 8) -> str:
    """A public fact's value in words: bounds as [lo, hi], a list's first ``limit`` items."""
    value = fact.get("value")
    if fact.get("fact") == "bounds" and isinstance(value, list) and len(value) == 2:
        return f"[{_num(value[0], 6)}, {_num(value[1], 6)}]"
    if isinstance(value, list):
        shown = ", ".join(_num(v, 6) if isinstance(v, int | float) else str(v) for v in value[:limit])
        return shown + (f", … ({len(value)} in all)" if len(value) > limit else "")
    return "" if value is None else str(value)


def fact_origin_text(fact: Mapping[str, Any]) -> str:
    """Where a public fact comes from, in words: its origin, where it is recorded, its
    citation, and the ledger row of a privately estimated one."""
    origin = ORIGIN_WORDS.get(str(fact.get("origin")), str(fact.get("origin")))
    words = f"{origin}, in {fact.get('source', 'the plan')}"
    citation = fact.get("citation")
    if citation and citation != fact.get("source"):
        words += f" ({citation})"
    if fact.get("ledger_id") is not None:
        words += f"; paid for by ledger row {fact['ledger_id']}"
    return words


def _fact_rows(item: ReportItem) -> list[list[str]]:
    """One row per public fact of a release: what it is, its value, its origin."""
    rows = []
    for fact in item.fact_origins:
        what = str(fact.get("fact", "fact")).replace("_", " ")
        column = fact.get("column")
        name = f"{what[:1].upper()}{what[1:]}" + (f" of {column}" if column else "")
        value = fact_value_text(fact)
        text = f"{value}: {fact_origin_text(fact)}" if value else fact_origin_text(fact)
        rows.append([html.escape(name), html.escape(text)])
    return rows


def _quality_table(item: ReportItem) -> str:
    """A synthetic table's quality table: DP facts only (module docstring of
    :mod:`dpexplorer.release.synthetic_tables`); its error against the data is not published."""
    rows = [
        [
            html.escape(" × ".join(r.marginal)),
            "—" if r.cells is None else f"{r.cells:,}",
            _num(r.sigma, 4),
            _num(r.rho_measure),
            "—" if r.rho_select is None else _num(r.rho_select),
        ]
        for r in item.marginals
    ]
    total = sum(r.rho_measure + (r.rho_select or 0.0) for r in item.marginals)
    grid = item.grid
    workload = grid.get("workload") or []
    estimator = grid.get("estimator_resolved") or grid.get("estimator") or "?"
    spent = item.dp_outputs.get("rho_spent")
    spent_words = f"ρ spent by the run: {_num(float(spent))}; " if isinstance(spent, int | float) else ""
    words = (
        f"{len(item.marginals)} marginal(s) measured with Gaussian noise; {len(workload)} in the "
        f"declared workload. Their ρ adds up to {_num(total)} ({spent_words}charged: "
        f"{_num(item.rho)}). The records were drawn from a model fitted to these noisy "
        f"marginals ({html.escape(str(estimator))} estimator): post-processing, no further privacy "
        "cost. This table states DP facts only: how far the synthetic table's marginals are from "
        "the data's (the workload's error) is not published, since computing it needs the true data."
    )
    return (
        "<h4>Quality: the measured marginals</h4>"
        + _table(["marginal", "cells", "noise σ", "ρ measurement", "ρ selection"], rows, numeric=(1, 2, 3, 4))
        + f'<p class="note">{words}</p>'
    )


def _reproducibility(report: Report) -> str:
    plan = "[\n" + ",\n".join(f"  {json.dumps(entry)}" for entry in report.plan) + "\n]"
    grids = [
        [
            str(i.row_id),
            html.escape(i.mechanism),
            html.escape(i.sampler),
            html.escape("; ".join(f"{k} = {v}" for k, v in sorted(i.grid.items()))),
        ]
        for i in report.items
    ]
    return (
        '<h2 style="page-break-before: always">Reproducibility</h2>'
        + _table(
            ["", ""],
            [
                ["Software", html.escape(report.software)],
                ["Report written", html.escape(report.time)],
                ["Ledger", html.escape(Path(report.ledger_path).name)],  # the file, not the local path
                ["Randomness", "the operating system's CSPRNG through exact discrete samplers"],
            ],
        )
        + "<p>Sampler, grid and discretisation of each release (fixed before the charge, from "
        "declared facts only):</p>"
        + _table(["ledger row", "mechanism", "sampler", "grid"], grids)
        + "<p>The plan, one statistic a line:</p>"
        + f"<pre>{html.escape(plan)}</pre>"
    )


def _estimated_height(item: ReportItem) -> float:
    """Rough height of one statistic in the PDF, in Qt rich-text pixels at 8 pt (heading, values
    table, plot, facts table): used only to decide where pages break."""
    per_row = 40 if item.intervals is not None else 28  # the sentence wraps onto a second line
    rows = per_row * (len(item.main_indices()) + 1)
    plot = plot_height(item) * PDF_PLOT_WIDTH / WIDTH + 40
    facts = (
        200
        + (28 * len(item.marginals) + 180 if item.marginals else 0)
        + (30 * len(item.fact_origins) if item.fact_origins else 30 if item.public_facts.get("bounds") else 0)
        + (30 if len(item.main_indices()) < len(item.labels) else 0)
    )
    return 50 + rows + plot + facts


def page_starts(items: Sequence[ReportItem], per_page: int = STATISTICS_PER_PAGE) -> set[int]:
    """Indices of the statistics that start a PDF page: at most ``per_page`` a page, fewer when
    their estimated height would overflow one (so a plot and its tables stay together)."""
    starts, used, on_page = set(), 0.0, 0
    for index, item in enumerate(items):
        height = _estimated_height(item)
        if index and (on_page == per_page or used + height > PAGE_HEIGHT):
            starts.add(index)
            used, on_page = 0.0, 0
        used += height
        on_page += 1
    return starts


def render_html(report: Report, *, pdf: bool = False, per_page: int = STATISTICS_PER_PAGE) -> str:
    """The report as one HTML document. With ``pdf`` the plots are ``<img>`` tags naming
    :func:`~dpexplorer.release.report_plots.plots` (for Qt's rich text, which draws no inline
    SVG) and pages break before the statistics :func:`page_starts` picks; otherwise the SVG is
    inline (self-contained page)."""
    drawn = plots(report)
    starts = page_starts(report.items, per_page)
    sections = []
    for number, item in enumerate(report.items, start=1):
        name = plot_name(item)
        plot = f'<img src="{name}" width="{PDF_PLOT_WIDTH}"/>' if pdf else drawn[name]
        sections.append(_item_section(number, item, plot, page_break=number - 1 in starts, report=report))
    title = f"Release report: {report.dataset}"
    count = len(report.items)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>{count} statistic{'s' if count != 1 else ''} released with differential privacy on "
        f"{html.escape(report.time)} by {html.escape(report.software)}. Every number in this report "
        "is a released (noisy) value or a declared fact; no value computed on the data without "
        "noise appears.</p>"
        + _summary_section(report)
        + '<h2 style="page-break-before: always">Dataset</h2>'
        + _dataset_section(report).removeprefix("<h2>Dataset</h2>")
        + _budget_section(report)
        + _risk_section(
            report, f'<img src="{RISK_PLOT}" width="{PDF_PLOT_WIDTH}"/>' if pdf else drawn.get(RISK_PLOT, "")
        )
        + '<h2 style="page-break-before: always">Statistics</h2>'
        + "".join(sections)
        + _accountants_appendix(report)
        + _helpers_appendix(report)
        + _reproducibility(report)
        + "</body></html>\n"
    )


def write_html(report: Report, out_dir: str | os.PathLike[str], name: str = "report.html") -> Path:
    """Write :func:`render_html` to ``out_dir/name`` atomically; returns the path."""
    path = Path(out_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, render_html(report))
    return path
