"""The release report's plots (issue 21), as SVG text: bars or dots with their intervals for
numbers, the declared candidates for a selection, the budget by marginal for a synthetic table.
They show released values and declared facts only (:class:`~dpexplorer.release.report_model.ReportItem`).
The HTML page inlines them; the PDF (``dpexplorer/report_pdf.py``) draws each as an image named
by :func:`plot_name`."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable

from dpexplorer.release.presentation import level_text, privacy_number
from dpexplorer.release.report_model import SYNTHETIC, Report, ReportItem

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
    ends = [float(v) for v in item.values if isinstance(v, float | int)] or [0.0]
    if item.intervals:
        ends += [e for ci in item.intervals if ci is not None for e in ci]
    low, high = min(ends), max(ends)
    if item.statistic == "histogram" and item.query.get("type") != "group_by":  # bars start at zero
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


def _axis(
    x: Callable[[float], float], ticks: list[float], ends: tuple[float, float], axis_y: int, digits: int
) -> list[str]:
    """A horizontal axis at ``axis_y`` from ``ends[0]`` to ``ends[1]``, a light grid line and a
    label (``digits`` significant digits) at each tick, ``x`` mapping a value to its position."""
    body = []
    for tick in ticks:
        body.append(f'<line x1="{x(tick):.1f}" y1="20" x2="{x(tick):.1f}" y2="{axis_y}" stroke="#eeeeee"/>')
        label = privacy_number(tick, digits)
        body.append(f'<text x="{x(tick):.1f}" y="{axis_y + 16}" text-anchor="middle">{label}</text>')
    body.append(f'<line x1="{ends[0]}" y1="{axis_y}" x2="{ends[1]}" y2="{axis_y}" stroke="{_INK}"/>')
    return body


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

    axis_y = 30 + row * len(item.labels)
    body = _axis(x, nice_ticks(low, high), (left, right), axis_y, digits=6)
    for i, (label, value) in enumerate(zip(item.labels, item.values, strict=True)):
        y = 36 + row * i
        body.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{html.escape(label)}</text>')
        if not isinstance(value, float | int):  # an empty group: said, not drawn
            body.append(f'<text x="{left + 8}" y="{y + 4}" fill="{_MUTED}">{html.escape(str(value))}</text>')
            continue
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
        f"{level_text(item.ci_level)} interval ({_interval_words(item)})"
        if item.intervals
        else f"{'bar' if bars else '●'}: released value (no interval published)"
    )
    return f'<text x="20" y="{y}" fill="{_MUTED}">{html.escape(text)}</text>'


def _interval_words(item: ReportItem) -> str:
    kinds = set(item.interval_kinds) - {None}
    if kinds == {"range"}:
        return "the declared range: a narrower one would need the data"
    if kinds == {"exact"}:
        return "exact: the released value is the answer"
    return "noise only, clipping bias not included"


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
        "interval_kinds": tuple(item.interval_kinds[i] for i in keep) if item.interval_kinds else (),
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
    if item.statistic.startswith(SYNTHETIC):
        return _budget_bars(item)
    if not item.numeric:
        return _choices(item)
    item = _plotted(item)
    if item.statistic == "histogram" and item.query.get("type") != "group_by" and len(item.labels) > 1:
        return _bars(item)
    return _dots(item)  # a group-by's values: a dot plot with intervals


PLOTTED_MARGINALS = 30
"""At most this many marginals in a synthetic table's budget plot (its table lists all)."""


def _budget_bars(item: ReportItem) -> str:
    """A synthetic table: the zCDP each measured marginal took (measurement, and the selection
    that chose it), one bar per marginal, in the order measured."""
    rows = item.marginals[:PLOTTED_MARGINALS]
    if not rows:
        body = [f'<text x="20" y="24" fill="{_MUTED}">no measured marginal is recorded</text>']
        return _svg(40, body, f"{item.description}: budget by marginal")
    names = [" × ".join(r.marginal) for r in rows]
    left = min(300, max(90, 12 + 7 * max(len(n) for n in names)))
    right, step = WIDTH - 20, 20
    top = max(r.rho_measure + (r.rho_select or 0.0) for r in rows) or 1.0
    axis_y = 30 + step * len(rows)
    height = axis_y + 46 + (16 if len(item.marginals) > len(rows) else 0)

    def x(v: float) -> float:
        return left + v / (top * 1.05) * (right - left)

    body = _axis(x, nice_ticks(0.0, top * 1.05), (left, right), axis_y, digits=3)
    for i, (name, r) in enumerate(zip(names, rows, strict=True)):
        y = 36 + step * i
        body.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{html.escape(name)}</text>')
        measure_end = x(r.rho_measure)
        body.append(
            f'<rect x="{left}" y="{y - 7}" width="{measure_end - left:.1f}" height="14" '
            f'fill="{_ACCENT}" fill-opacity="0.6"/>'
        )
        if r.rho_select:
            body.append(
                f'<rect x="{measure_end:.1f}" y="{y - 7}" width="{x(r.rho_select) - left:.1f}" '
                f'height="14" fill="{_MUTED}" fill-opacity="0.6"/>'
            )
    legend = "ρ (zCDP) taken by each measured marginal: blue measurement, grey the selection that chose it"
    body.append(f'<text x="20" y="{axis_y + 36}" fill="{_MUTED}">{html.escape(legend)}</text>')
    if len(item.marginals) > len(rows):
        more = f"… {len(item.marginals) - len(rows)} more marginals in the table"
        body.append(f'<text x="20" y="{axis_y + 52}" fill="{_MUTED}">{html.escape(more)}</text>')
    return _svg(height, body, f"{item.description}: budget by marginal")


def plot_name(item: ReportItem) -> str:
    return f"plot-{item.row_id:06d}.svg"


def plots(report: Report) -> dict[str, str]:
    """SVG text of each statistic's plot by name (``plot-<row id>.svg``), and the budget page's
    trade-off plot (:data:`RISK_PLOT`) when the report carries the risk."""
    drawn = {plot_name(item): svg_plot(item) for item in report.items}
    if report.risk is not None:
        drawn[RISK_PLOT] = svg_tradeoff(report)
    return drawn


def plot_height(item: ReportItem) -> int:
    """Height of the item's SVG plot, in SVG units."""
    return int(re.search(r'height="(\d+)"', svg_plot(item)).group(1))  # type: ignore[union-attr]


RISK_PLOT = "risk.svg"
"""Name of the budget page's trade-off plot among :func:`plots`."""
_RISK_HEIGHT = 336
_RISK_BOX = (70, 20, 330, 280)
"""The plotting square (left, top, right, bottom): the legend goes to its right."""


def _risk_path(
    fpr: list[float], fnr: list[float], x: Callable[[float], float], y: Callable[[float], float]
) -> str:
    return " ".join(
        f"{'M' if i == 0 else 'L'}{x(a):.1f},{y(b):.1f}"
        for i, (a, b) in enumerate(zip(fpr, fnr, strict=True))
    )


def svg_tradeoff(report: Report) -> str:
    """The attacker's trade-off curve of everything released from the dataset (fnr against fpr,
    both from 0 to 1), the mu-GDP summary dashed below it where there is one, and random
    guessing (the diagonal) for reference; the legend beside the square, never over a curve."""
    risk = report.risk
    tradeoff = risk.tradeoff if risk is not None else None
    left, top, right, bottom = _RISK_BOX
    height = _RISK_HEIGHT

    def x(v: float) -> float:
        return left + v * (right - left)

    def y(v: float) -> float:
        return bottom - v * (bottom - top)

    body = []
    for tick in nice_ticks(0.0, 1.0):
        label = privacy_number(tick, 2)
        body.append(
            f'<line x1="{x(tick):.1f}" y1="{top}" x2="{x(tick):.1f}" y2="{bottom}" stroke="#eeeeee"/>'
        )
        body.append(
            f'<line x1="{left}" y1="{y(tick):.1f}" x2="{right}" y2="{y(tick):.1f}" stroke="#eeeeee"/>'
        )
        body.append(f'<text x="{x(tick):.1f}" y="{bottom + 16}" text-anchor="middle">{label}</text>')
        body.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{label}</text>')
    frame = f'width="{right - left}" height="{bottom - top}" fill="none" stroke="{_INK}"'
    body.append(f'<rect x="{left}" y="{top}" {frame}/>')
    body.append(
        f'<text x="{(left + right) / 2}" y="{bottom + 34}" text-anchor="middle">'
        "false-positive rate (says Alice is in when she is not)</text>"
    )
    body.append(
        f'<text x="18" y="{(top + bottom) / 2}" text-anchor="middle" '
        f'transform="rotate(-90 18 {(top + bottom) / 2})">false-negative rate (misses Alice)</text>'
    )
    body.append(
        f'<line x1="{x(0)}" y1="{y(1)}" x2="{x(1)}" y2="{y(0)}" stroke="{_MUTED}" stroke-dasharray="2,3"/>'
    )
    legend = [("2,3", _MUTED, "random guessing (nothing learnt)")]
    if tradeoff is not None:
        fpr = [float(a) for a in tradeoff.fpr]
        body.append(
            f'<path d="{_risk_path(fpr, [float(b) for b in tradeoff.fnr], x, y)}" fill="none" '
            f'stroke="{_ACCENT}" stroke-width="2.5"/>'
        )
        shown = "exact" if tradeoff.kind == "exact" else "lower bound"
        legend.insert(0, ("", _ACCENT, f"all releases ({shown})"))
        gdp = tradeoff.gdp_curve()
        if gdp is not None:
            body.append(
                f'<path d="{_risk_path(fpr, [float(b) for b in gdp], x, y)}" fill="none" stroke="{_INK}" '
                'stroke-width="1.2" stroke-dasharray="6,4"/>'
            )
            legend.insert(1, ("6,4", _INK, f"μ-GDP summary, μ = {privacy_number(tradeoff.gdp_mu, 3)}"))
    for i, (dash, colour, text) in enumerate(legend):
        ly = top + 14 + 22 * i
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        stroke = f'stroke="{colour}" stroke-width="2"{dashed}'
        body.append(f'<line x1="{right + 16}" y1="{ly}" x2="{right + 46}" y2="{ly}" {stroke}/>')
        body.append(f'<text x="{right + 52}" y="{ly + 4}">{html.escape(text)}</text>')
    note = "no test can reach below the blue curve"
    body.append(f'<text x="{right + 16}" y="{top + 14 + 22 * len(legend) + 8}" fill="{_MUTED}">{note}</text>')
    return _svg(height, body, "The attacker's trade-off: everything released from this dataset")
