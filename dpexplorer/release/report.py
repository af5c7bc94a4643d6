"""The release report (issue 21): what a run released, as a page a person reads.

:func:`build_report` gathers, from the released results and the ledger, only what was published:
the released (noisy) values, their intervals, the declared query and mechanism, the guarantees
charged, the budget before and after. It never sees a true answer: :class:`ReportItem` is built
from :class:`~dpexplorer.release.release.ReleaseResult` (released values) and the public parts of
:class:`~dpexplorer.release.release.PreparedRelease` (query, parameters, provenance; never
``exact.draw``). The number of rows is shown only where a count was released, since under
add/remove it is private.

:func:`render_html` writes a self-contained HTML page (plots inline as SVG). The PDF is drawn by
Qt (``dpexplorer/report_pdf.py``), because ``release`` must not import Qt; it renders the same
HTML with ``pdf=True``, where each plot is an ``<img>`` naming one of :meth:`Report.plots`."""

from __future__ import annotations

import html
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dpexplorer
from dpexplorer.core.accounting.guarantees import ZCDP, ApproxDP, Guarantee, LaplaceNoise, PureDP
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.release.export import atomic_write
from dpexplorer.release.ledger import METHODS, Budget, Ledger, guarantee_to_dict, total_epsilon

STATISTICS_PER_PAGE = 3
"""At most this many statistics on one PDF page (each has two tables and a plot)."""
PAGE_HEIGHT = 940
"""Height of an A4 page within 15 mm margins in Qt rich-text pixels (267 mm at 96 per inch),
less what the layout adds around images."""

COUNT_STATISTICS = frozenset({"count"})


@dataclass(frozen=True)
class ReportItem:
    """One released statistic, as published: nothing here is a true answer."""

    row_id: int
    description: str
    query: dict[str, Any]
    statistic: str
    mechanism: str
    parameters: dict[str, Any]
    labels: tuple[str, ...]
    values: tuple[float | str, ...]
    intervals: tuple[tuple[float, float] | None, ...] | None
    """(low, high) per value; None in place of a value without one (⊥), None for no intervals."""
    ci_level: float
    epsilon: float
    delta: float
    rho: float | None
    guarantee: Guarantee
    sampler: str
    grid: dict[str, Any]
    dp_outputs: dict[str, Any]
    public_facts: dict[str, Any]
    relation: str

    @property
    def numeric(self) -> bool:
        """True when every released value is a number (not a category or ⊥)."""
        return all(isinstance(v, float | int) for v in self.values)


@dataclass(frozen=True)
class BudgetLine:
    """Epsilon spent before and after the run under one accountant (upper bounds), or the
    reason the accountant does not apply."""

    method: str
    before: float | None
    after: float | None
    note: str


@dataclass(frozen=True)
class Report:
    """Everything the report shows (all public: declared facts and DP outputs)."""

    dataset: str
    fingerprint: str
    items: tuple[ReportItem, ...]
    budget: Budget | None
    budget_lines: tuple[BudgetLine, ...]
    plan: list[dict[str, Any]]
    ledger_path: str
    software: str = field(default_factory=lambda: f"dpexplorer {dpexplorer.__version__}")
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def plots(self) -> dict[str, str]:
        """SVG text of each statistic's plot by name (``plot-<row id>.svg``)."""
        return {_plot_name(item): svg_plot(item) for item in self.items}


def _describe_query(query: Mapping[str, Any]) -> str:
    from dpexplorer.data.queries import query_from_dict

    try:
        return query_from_dict(dict(query)).describe()
    except (DPExplorerError, KeyError, TypeError, ValueError):
        return json.dumps(query, sort_keys=True)


def report_item(prepared: Any, result: Any) -> ReportItem:
    """The published parts of one release: ``prepared`` a PreparedRelease, ``result`` its
    ReleaseResult. Reads the released values, never ``prepared.exact.draw``."""
    exact = prepared.exact
    intervals = result.confidence_intervals
    if intervals is None and exact.dp_outputs.get("confidence_intervals"):
        # intervals computed after the charge from released values (e.g. a noisy mean)
        intervals = tuple(
            None if ci is None else (float(ci[0]), float(ci[1]))
            for ci in exact.dp_outputs["confidence_intervals"]
        )
    return ReportItem(
        row_id=result.row_id,
        description=_describe_query(prepared.query),
        query=dict(prepared.query),
        statistic=str(prepared.public_facts.get("statistic", prepared.query.get("type", ""))),
        mechanism=prepared.mechanism,
        parameters=dict(prepared.parameters),
        labels=tuple(result.labels),
        values=tuple(result.values),
        intervals=intervals,
        ci_level=float(exact.dp_outputs.get("confidence_level", result.ci_level)),
        epsilon=result.epsilon,
        delta=result.delta,
        rho=result.rho,
        guarantee=result.guarantee,
        sampler=result.sampler,
        grid=dict(exact.provenance),
        dp_outputs=dict(exact.dp_outputs),
        public_facts=dict(prepared.public_facts),
        relation=prepared.relation,
    )


def budget_lines(
    budget: Budget | None, before: Sequence[Guarantee], after: Sequence[Guarantee]
) -> tuple[BudgetLine, ...]:
    """Epsilon spent before and after, at the budget's delta, under the ledger's accountant
    (first; its exact total, :func:`~dpexplorer.release.ledger.total_epsilon`) and under every
    other accountant (:func:`dpexplorer.core.accounting.compose.compose`). Every number is an
    upper bound on the true epsilon under its theorem."""
    if budget is None:
        return ()
    from dpexplorer.core.accounting.compose import compose

    delta = budget.delta
    reports = [compose(list(g), delta=delta) if g else None for g in (before, after)]
    lines = []
    for method in (budget.method, *[m for m in METHODS if m != budget.method]):
        values: list[float | None] = []
        note = ""
        for guarantees, report in zip((before, after), reports, strict=True):
            if report is None:
                values.append(0.0)
                continue
            if method == budget.method:
                try:
                    values.append(float(total_epsilon(list(guarantees), method, delta)))
                except DPExplorerError as exc:
                    values.append(None)
                    note = str(exc)
                continue
            result = report.get(method)
            values.append(result.epsilon)
            if result.epsilon is None:
                note = result.reason
        lines.append(BudgetLine(method, values[0], values[1], note))
    return tuple(lines)


def build_report(
    *,
    dataset: str,
    fingerprint: str,
    released: Sequence[tuple[Any, Any]],
    ledger: Ledger,
    before: Sequence[Guarantee],
    plan: list[dict[str, Any]] | None = None,
) -> Report:
    """The report of one run: ``released`` the (PreparedRelease, ReleaseResult) pairs in order,
    ``before`` the guarantees the ledger held for the dataset before the run."""
    budget = ledger.budget(fingerprint)
    after = [m.guarantee for m in ledger.measurements(fingerprint)]
    items = tuple(report_item(p, r) for p, r in released)
    if plan is None:
        plan = [{"query": i.query, "mechanism": i.mechanism, "parameters": i.parameters} for i in items]
    return Report(
        dataset=dataset,
        fingerprint=fingerprint,
        items=items,
        budget=budget,
        budget_lines=budget_lines(budget, before, after),
        plan=plan,
        ledger_path=str(ledger.path),
    )


# ------------------------------------------------------------------ words
def _num(value: float | None, digits: int = 6) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and not math.isfinite(value):
        return "∞"
    return f"{value:.{digits}g}"


def value_text(value: float | str) -> str:
    """A released value as the report prints it (numbers to 10 significant digits, enough for
    the 2^k grid they were released on at these magnitudes)."""
    return f"{value:.10g}" if isinstance(value, float | int) else str(value)


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


# ------------------------------------------------------------------ plots (SVG)
WIDTH = 640
PDF_PLOT_WIDTH = 480
"""Width of a plot in the PDF, in Qt's rich-text pixels (the text column is about 680)."""
_INK, _ACCENT, _MUTED = "#222222", "#1f77b4", "#999999"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick positions covering [low, high] (1, 2, 5 times a power of ten)."""
    if not high > low:
        return [low]
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _span(item: ReportItem) -> tuple[float, float]:
    ends = [float(v) for v in item.values] or [0.0]
    if item.intervals:
        ends += [e for ci in item.intervals if ci is not None for e in ci]
    low, high = min(ends), max(ends)
    if item.statistic == "histogram":  # bars start at zero
        low, high = min(low, 0.0), max(high, 0.0)
    pad = (high - low) * 0.08 or max(abs(high), 1.0) * 0.1
    return low - pad, high + pad


def _svg(height: int, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">'
        f"<title>{html.escape(title)}</title>"
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>' + "".join(body) + "</svg>"
    )


def _dots(item: ReportItem) -> str:
    """One row per value: the released value as a dot and its interval as a bar."""
    return _rows(item, bars=False)


def _rows(item: ReportItem, *, bars: bool) -> str:
    left = min(320, max(90, 12 + 7 * max(len(label) for label in item.labels)))
    right, row = WIDTH - 20, 22
    height = 40 + row * len(item.labels) + 30
    low, high = _span(item)

    def x(v: float) -> float:
        return left + (v - low) / (high - low) * (right - left)

    body = []
    axis_y = 30 + row * len(item.labels)
    for tick in nice_ticks(low, high):
        body.append(f'<line x1="{x(tick):.1f}" y1="20" x2="{x(tick):.1f}" y2="{axis_y}" stroke="#eeeeee"/>')
        body.append(f'<text x="{x(tick):.1f}" y="{axis_y + 16}" text-anchor="middle">{_num(tick, 6)}</text>')
    body.append(f'<line x1="{left}" y1="{axis_y}" x2="{right}" y2="{axis_y}" stroke="{_INK}"/>')
    for i, (label, value) in enumerate(zip(item.labels, item.values, strict=True)):
        y = 36 + row * i
        body.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{html.escape(label)}</text>')
        if bars:
            ends = sorted((x(0.0), x(float(value))))
            body.append(
                f'<rect x="{ends[0]:.1f}" y="{y - 8}" width="{ends[1] - ends[0]:.1f}" height="16" '
                f'fill="{_ACCENT}" fill-opacity="0.5"/>'
            )
        if item.intervals and item.intervals[i] is not None:
            lo, hi = item.intervals[i]  # type: ignore[misc]
            colour, width = (_INK, 1.5) if bars else (_ACCENT, 3)
            body.append(
                f'<line x1="{x(lo):.1f}" y1="{y}" x2="{x(hi):.1f}" y2="{y}" stroke="{colour}" '
                f'stroke-width="{width}"/>'
            )
            if bars:
                body += [
                    f'<line x1="{x(e):.1f}" y1="{y - 5}" x2="{x(e):.1f}" y2="{y + 5}" stroke="{_INK}"/>'
                    for e in (lo, hi)
                ]
        if not bars:
            body.append(f'<circle cx="{x(float(value)):.1f}" cy="{y}" r="5" fill="{_INK}"/>')
    body.append(_legend(item, height - 6, bars=bars))
    return _svg(height, body, f"{item.description}: released values")


def _bars(item: ReportItem) -> str:
    """A histogram: one horizontal bar per category at its released count (labels stay legible
    however many there are), the interval as a whisker."""
    return _rows(item, bars=True)


def _choices(item: ReportItem) -> str:
    """A selection: the declared candidates, the released one(s) marked."""
    candidates = [str(c) for c in item.grid.get("candidates", item.query.get("categories", []))]
    chosen = {str(v) for v in item.values}
    candidates = candidates or sorted(chosen)
    row = 24
    height = 30 + row * len(candidates)
    body = [f'<text x="20" y="18" fill="{_MUTED}">candidates (declared); released:</text>']
    for i, name in enumerate(candidates):
        y = 38 + row * i
        picked = name in chosen
        body.append(
            f'<rect x="20" y="{y - 13}" width="16" height="16" fill="{_ACCENT if picked else "white"}" '
            f'stroke="{_INK}"/>'
        )
        weight = "bold" if picked else "normal"
        suffix = "  ← released" if picked else ""
        body.append(f'<text x="44" y="{y}" font-weight="{weight}">{html.escape(name + suffix)}</text>')
    return _svg(height, body, f"{item.description}: released selection")


def _legend(item: ReportItem, y: int, *, bars: bool = False) -> str:
    text = (
        f"{'bar' if bars else '●'}: released value;  {'whisker' if bars else 'line'}: "
        f"{item.ci_level:.0%} interval (noise only)"
        if item.intervals
        else f"{'bar' if bars else '●'}: released value (no interval published)"
    )
    return f'<text x="20" y="{y}" fill="{_MUTED}">{html.escape(text)}</text>'


def _plotted(item: ReportItem) -> ReportItem:
    """For a release that carries helper parts ("count (noisy)", "centred sum (noisy)" beside
    "mean", per group for a group-by), the statistic's own values only: one scale per plot."""
    statistic = str(item.query.get("statistic", ""))
    suffix = f": {statistic}" if item.query.get("type") == "group_by" and statistic else ""
    if suffix:
        keep = [i for i, label in enumerate(item.labels) if label.endswith(suffix)]
    else:
        keep = [i for i, label in enumerate(item.labels) if not label.endswith("(noisy)")]
    if not keep or len(keep) == len(item.labels):
        return item
    pick = {
        "labels": tuple(item.labels[i].removesuffix(suffix) if suffix else item.labels[i] for i in keep),
        "values": tuple(item.values[i] for i in keep),
        "intervals": tuple(item.intervals[i] for i in keep) if item.intervals else None,
    }
    return ReportItem(**{**item.__dict__, **pick})


def _nothing_kept(item: ReportItem) -> str:
    """A release that published no value (privately selected keys, none kept): a note."""
    body = [
        f'<text x="20" y="24" fill="{_MUTED}">no value released: the private selection of keys '
        "kept no group</text>"
    ]
    return _svg(40, body, f"{item.description}: no value released")


def svg_plot(item: ReportItem) -> str:
    """The statistic's plot: bars with intervals for a histogram, a dot plot with intervals for
    other numbers (a group-by's values by group), the candidates with the released one marked
    for a selection or ⊥, a note for a release of no value (no private key kept)."""
    if not item.values:
        return _nothing_kept(item)
    if not item.numeric:
        return _choices(item)
    item = _plotted(item)
    if item.statistic == "histogram" and len(item.labels) > 1:
        return _bars(item)
    return _dots(item)


def _plot_name(item: ReportItem) -> str:
    return f"plot-{item.row_id:06d}.svg"


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
        shown = ", ".join(
            f"{value_text(i.values[0])} (ledger row {i.row_id}, ε = {_num(i.epsilon)})" for i in counts
        )
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
        ["Fingerprint (SHA-256)", f"<code>{html.escape(report.fingerprint)}</code>"],
        ["Rows", html.escape(_released_rows(report))],
    ]
    for (unit, bound), numbers in units.items():
        plural = "s" if len(numbers) > 1 else ""
        which = "" if len(units) == 1 else f" (statistic{plural} {', '.join(map(str, numbers))})"
        rows.append([f"Privacy unit{which}", html.escape(unit)])
        rows.append([f"Contribution bound{which}", html.escape(bound)])
    return "<h2>Dataset</h2>" + _table(["", ""], rows)


def _budget_section(report: Report) -> str:
    budget = report.budget
    if budget is None:
        return "<h2>Budget</h2><p>No budget is set for this dataset in the ledger.</p>"
    rows = []
    for line in report.budget_lines:
        name = f"<b>{line.method}</b> (the ledger's)" if line.method == budget.method else line.method
        left = "—" if line.after is None else _num(budget.epsilon - line.after)
        if line.after is not None and line.after > budget.epsilon:
            left = f"over by {_num(line.after - budget.epsilon)}"
        rows.append([name, _num(line.before), _num(line.after), left, html.escape(line.note)])
    return (
        "<h2>Budget</h2>"
        f"<p>Total budget for this dataset: ε = {_num(budget.epsilon)}, δ = {_num(budget.delta, 3)}, "
        f"composed under <b>{budget.method}</b>, which decides refusals. This report's ledger rows: "
        f"{', '.join(str(i.row_id) for i in report.items)} (each statistic below shows its charge).</p>"
        f"<p>ε spent at δ = {_num(budget.delta, 3)} before and after this report, under every "
        "accountant (each an upper bound under its theorem; the ledger's decides):</p>"
        + _table(["accountant", "ε before", "ε after", "ε left", "note"], rows, numeric=(1, 2, 3))
    )


def _values_table(item: ReportItem) -> str:
    has_ci = item.intervals is not None
    headers = ["label", "released value"] + ([f"{item.ci_level:.0%} interval"] if has_ci else [])
    rows = []
    for i, (label, value) in enumerate(zip(item.labels, item.values, strict=True)):
        row = [html.escape(label), html.escape(value_text(value))]
        if has_ci and item.intervals is not None:
            pair = item.intervals[i]
            row.append(
                "none (no number released)"
                if pair is None
                else f"[{value_text(pair[0])}, {value_text(pair[1])}]"
            )
        rows.append(row)
    if not rows:  # private keys, none kept: a DP output like any other
        rows.append(["(no group)", "no key was kept by the private selection"] + (["—"] if has_ci else []))
    return _table(headers, rows, numeric=(1,))


def _item_section(number: int, item: ReportItem, plot: str, page_break: bool) -> str:
    params = ", ".join(f"{k} = {v}" for k, v in item.parameters.items())
    interval = (
        f"covers the true answer with probability {item.ci_level:.0%} over the noise alone "
        "(clipping bias not included)"
        if item.intervals is not None
        else "none published for this release"
    )
    rho = "" if item.rho is None else f", ρ = {_num(item.rho)}"
    charged = f"ε = {_num(item.epsilon)}, δ = {_num(item.delta, 3)}{rho}; ledger: {_charged(item.guarantee)}"
    facts = [
        ["Mechanism", f"{html.escape(item.mechanism)} ({html.escape(params)})"],
        ["Privacy charged", html.escape(charged)],
        ["What it means", html.escape(guarantee_words(item))],
        ["Interval", html.escape(interval)],
    ]
    if item.public_facts.get("bounds"):
        facts.append(["Declared bounds", html.escape(str(item.public_facts["bounds"]))])
    shown = {
        k: v for k, v in item.dp_outputs.items() if k not in ("confidence_intervals", "confidence_level")
    }
    if shown:
        facts.append(["DP outputs used", f"<code>{html.escape(json.dumps(shown))}</code>"])
    style = ' style="page-break-before: always"' if page_break else ""
    return (
        f"<h3{style}>{number}. {html.escape(item.description[:1].upper() + item.description[1:])}</h3>"
        + _values_table(item)
        + f"<div>{plot}</div>"
        + _table(["", ""], facts)
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
                ["Ledger", html.escape(report.ledger_path)],
                ["Randomness", "the operating system's CSPRNG through exact discrete samplers"],
            ],
        )
        + "<p>Sampler, grid and discretisation of each release (fixed before the charge, from "
        "declared facts only):</p>"
        + _table(["ledger row", "mechanism", "sampler", "grid"], grids)
        + "<p>The plan, one statistic a line:</p>"
        + f"<pre>{html.escape(plan)}</pre>"
    )


def _plot_height(item: ReportItem) -> int:
    """Height of the item's SVG plot, in SVG units."""
    return int(re.search(r'height="(\d+)"', svg_plot(item)).group(1))  # type: ignore[union-attr]


def _estimated_height(item: ReportItem) -> float:
    """Rough height of one statistic in the PDF, in Qt rich-text pixels at 8 pt (heading, values
    table, plot, facts table): used only to decide where pages break."""
    rows = 28 * (len(item.labels) + 1)
    plot = _plot_height(item) * PDF_PLOT_WIDTH / WIDTH + 40
    return 50 + rows + plot + 170


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
    :meth:`Report.plots` (for Qt's rich text, which draws no inline SVG) and pages break before
    the statistics :func:`page_starts` picks; otherwise the SVG is inline (self-contained page)."""
    plots = report.plots()
    starts = page_starts(report.items, per_page)
    sections = []
    for number, item in enumerate(report.items, start=1):
        name = _plot_name(item)
        plot = f'<img src="{name}" width="{PDF_PLOT_WIDTH}"/>' if pdf else plots[name]
        sections.append(_item_section(number, item, plot, page_break=number - 1 in starts))
    total = sum(i.epsilon for i in report.items)
    title = f"Release report: {report.dataset}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>{len(report.items)} statistics released with differential privacy on "
        f"{html.escape(report.time)} by {html.escape(report.software)}. Their own ε add up to "
        f"{_num(total)}; the budget section gives what they cost composed under each accountant. "
        "Every number below is a released "
        "(noisy) value or a declared fact; no value computed on the data without noise appears.</p>"
        + _dataset_section(report)
        + _budget_section(report)
        + '<h2 style="page-break-before: always">Statistics</h2>'
        + "".join(sections)
        + _reproducibility(report)
        + "</body></html>\n"
    )


def write_html(report: Report, out_dir: str | os.PathLike[str], name: str = "report.html") -> Path:
    """Write :func:`render_html` to ``out_dir/name`` atomically; returns the path."""
    path = Path(out_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, render_html(report))
    return path
