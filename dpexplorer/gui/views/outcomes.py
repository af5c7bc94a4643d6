"""Which outcomes of a categorical output get a bar, and which bars get a name: display only
(the exact delta, the CSV and the draws use every outcome)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAX_BARS = 40
"""Outcomes drawn as bars; beyond it the rest are summed into one "others" bar (top-k lists of
16 categories are 3,360 outcomes: unreadable as bars, and 3,360 bars took most of a frame)."""


@dataclass(frozen=True)
class ShownOutcomes:
    """Which outcomes get a bar: all of them, or the MAX_BARS - 1 likeliest under D or D' (in
    their own order) and one bar for the rest. Display only: δ, the CSV and the draws use all."""

    index: np.ndarray
    rest: np.ndarray
    labels: tuple[str, ...]

    @classmethod
    def of(cls, p: np.ndarray, q: np.ndarray, labels: Sequence[str]) -> ShownOutcomes:
        if len(labels) <= MAX_BARS:
            return cls(np.arange(len(labels)), np.zeros(len(labels), dtype=bool), tuple(labels))
        index = np.sort(np.argsort(-np.maximum(p, q), kind="stable")[: MAX_BARS - 1])
        rest = np.ones(len(labels), dtype=bool)
        rest[index] = False
        return cls(index, rest, (*(labels[i] for i in index), f"{int(rest.sum())} others"))

    def collect(self, values: np.ndarray) -> np.ndarray:
        """Per shown bar: the value of each shown outcome, then the sum over the rest."""
        if not self.rest.any():
            return values[self.index]
        return np.append(values[self.index], values[self.rest].sum())

    def loss(self, values: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        """The privacy loss per bar; for "others", that of the event "one of the others",
        ln P_D(others) / P_D'(others)."""
        if not self.rest.any():
            return values[self.index]
        with np.errstate(divide="ignore", invalid="ignore"):
            merged = np.log(p[self.rest].sum()) - np.log(q[self.rest].sum())
        return np.append(values[self.index], merged)


def _half_width(label: str, chars_per_bar: float) -> float:
    """Half a centred name's width, in bars (with a gap; 1.2: capitals and wide letters run past
    the average character)."""
    return (1.2 * len(label) + 2) / 2 / max(chars_per_bar, 1e-9)


EDGE_SLACK = 0.4
"""How far (in bars) past the shown range a name may reach before pyqtgraph drops it: the range
is (-0.6, n - 0.4) and names up to -1 and n were drawn."""


def readable_ticks(
    labels: Sequence[str],
    heights: np.ndarray,
    chars_per_bar: float,
    *,
    span: tuple[float, float] | None = None,
    always: int | None = None,
) -> tuple[str, ...]:
    """Bar names that do not overlap: the tallest bars are named first, and a name is left blank
    when it would reach a name already placed (each is centred on its bar and ``len`` characters
    wide; a bar is ``chars_per_bar`` characters wide), or would cross the axis's ends (``span``,
    the shown x range; by default (-0.6, n - 0.4)). The last bar ("others") goes first, and bar
    ``always`` before it (named whatever the ends: :func:`span_for_name` widens the range)."""
    low, high = span if span is not None else (-0.6, len(labels) - 0.4)
    order = [] if always is None else [always]
    order += (
        [len(labels) - 1] if labels and labels[-1].endswith(" others") and always != len(labels) - 1 else []
    )
    order += [int(i) for i in np.argsort(-np.asarray(heights), kind="stable") if int(i) not in order]
    placed: list[tuple[float, float]] = []
    named = set()
    for i in order:
        half = _half_width(labels[i], chars_per_bar)
        # pyqtgraph drops what crosses an edge
        inside = i - half >= low - EDGE_SLACK and i + half <= high + EDGE_SLACK
        if (inside or i == always) and all(abs(i - centre) >= half + other for centre, other in placed):
            placed.append((i, half))
            named.add(i)
    return tuple(label if i in named else "" for i, label in enumerate(labels))


def span_for_name(
    labels: Sequence[str], index: int, pixels_over_char: float, span: tuple[float, float]
) -> tuple[tuple[float, float], float]:
    """The x range ``span`` (in bars) widened, if needed, so that bar ``index``'s centred name
    fits inside it, and the characters per bar in that range: the bar with the most mass is
    always named, even at an end (it was left blank when its name crossed the axis's end).
    ``pixels_over_char``: the plot's width in average character widths."""
    low, high = span
    for _ in range(4):  # widening narrows the bars, which widens the name in bars: converge
        chars_per_bar = pixels_over_char / (high - low)
        half = _half_width(labels[index], chars_per_bar)
        low, high = min(span[0], index - half - 0.05), max(span[1], index + half + 0.05)
    return (low, high), pixels_over_char / (high - low)
