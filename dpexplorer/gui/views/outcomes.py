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


def readable_ticks(labels: Sequence[str], heights: np.ndarray, chars_per_bar: float) -> tuple[str, ...]:
    """Bar names that do not overlap: the tallest bars are named first, and a name is left blank
    when it would reach a name already placed (each is centred on its bar and ``len`` characters
    wide; a bar is ``chars_per_bar`` characters wide), or would cross the axis's ends. The last
    bar ("others") goes first."""
    order = [len(labels) - 1] if labels and labels[-1].endswith(" others") else []
    order += [int(i) for i in np.argsort(-np.asarray(heights), kind="stable") if int(i) not in order]
    placed: list[tuple[float, float]] = []
    named = set()
    for i in order:
        # in bars, with a gap; 1.2: capitals and wide letters run past the average character
        half = (1.2 * len(labels[i]) + 2) / 2 / max(chars_per_bar, 1e-9)
        inside = i - half >= -1.0 and i + half <= len(labels)  # pyqtgraph drops what crosses an edge
        if inside and all(abs(i - centre) >= half + other for centre, other in placed):
            placed.append((i, half))
            named.add(i)
    return tuple(label if i in named else "" for i, label in enumerate(labels))
