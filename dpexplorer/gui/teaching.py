"""Teaching mode: one simulated release at a time, the true value revealed on demand, large
fonts for a projector. While it is on, Release is disabled (the window says why).

With MST or AIM on a marginals query a draw is a synthetic run, and the banner shows the run's
workload error (what the number is and that it reads the true data, not an answer to publish)
instead of an answer and a hidden truth."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics, QTextDocument, QTextOption
from PySide6.QtWidgets import QCheckBox, QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from dpexplorer.gui import palette
from dpexplorer.gui.jobs import TeachingDraw

SYNTHETIC_NOTE = (
    "Synthetic run #{run}: the mean total-variation distance between its table's {marginals} and "
    "the TRUE data's (0: equal; 1: nothing in common). Exploration, computed from the true data: "
    "not an answer to publish."
)
"""What the number of a synthetic run is (under it, in the application's font)."""

LABEL_GAP = 24
"""Pixels between the banner's side-by-side parts: at the default 6 an answer ran on into "True
value: hidden" as if one sentence ("0.00483430017492461 True value: hidden")."""

RELEASE_BLOCKED = (
    "Release is disabled in teaching mode: true values may be on screen and classroom "
    "draws use the exploration generator, never the secure one. Leave teaching mode to release."
)


class TeachingPanel(QFrame):
    """Shows the latest simulated output; ``resample_requested`` asks the window for another.

    One row, the answer and the truth side by side in large type with Reveal and Resample at
    its end: on a 1280 x 720 projector every line this banner takes is a line the plots lose."""

    resample_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet(f"TeachingPanel {{ background: {palette.css(palette.TEACHING_BACKGROUND)}; }}")
        self.setToolTip("Teaching mode: one simulated draw at a time (F9 leaves it)")
        self.output = QLabel("Press Resample to run the mechanism once on D.")
        self.truth = QLabel()
        large = QFont(self.font())
        large.setPointSize(18)  # readable from the back of the room, whatever the app's font
        for label in (self.output, self.truth):
            label.setFont(large)
            label.setWordWrap(True)  # a long answer (a top-k list) wraps, never widens the window
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # "True value: hidden" on one line; a longer truth (a top-k list) wraps
        _fit_words(self.truth, QFontMetrics(large).horizontalAdvance("True value: hidden") + 4)
        self.reveal = QCheckBox("Reveal the true value")
        self.resample = QPushButton("Resample")
        self.resample.setToolTip("Run the mechanism once more on D (simulation, not a release)")
        self.resample.clicked.connect(self.resample_requested)
        self.reveal.toggled.connect(self._show_truth)
        self.note = QLabel()  # a synthetic run's: what its number is, in place of the truth
        self.note.setWordWrap(True)
        self.note.hide()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 2, 8, 2)
        layout.setSpacing(LABEL_GAP)
        drawn = QVBoxLayout()  # the note under the number: beside it, it wrapped to 6 lines
        drawn.setSpacing(0)
        drawn.addWidget(self.output)
        drawn.addWidget(self.note)
        layout.addLayout(drawn, 1)
        layout.addWidget(self.truth, 1)  # a revealed truth on one line where it fits
        controls = QVBoxLayout()  # stacked: two short rows take less width than one long one
        controls.setSpacing(0)
        controls.addWidget(self.reveal)
        controls.addWidget(self.resample)
        layout.addLayout(controls)
        self.draw: TeachingDraw | None = None

    def show_draw(self, draw: TeachingDraw) -> None:
        self.draw = draw
        synthetic = draw.marginals > 0
        if synthetic:  # nothing hidden to reveal: the number itself is read from the true data
            self.output.setText(f"Workload error: <b>{draw.output}</b>")
            marginals = f"{draw.marginals:,} marginal{'s' if draw.marginals != 1 else ''}"
            self.note.setText(SYNTHETIC_NOTE.format(run=draw.run, marginals=marginals))
        else:
            self.output.setText(f"Answer: <b>{draw.output}</b> (run #{draw.run})")
        for widget in (self.truth, self.reveal):
            widget.setVisible(not synthetic)
        self.note.setVisible(synthetic)
        self._show_truth(self.reveal.isChecked())
        _fit_words(self.output)

    def _show_truth(self, shown: bool) -> None:
        if shown and self.draw is not None:
            self.truth.setText(f"True value: <b>{self.draw.truth}</b>")
        else:
            self.truth.setText("True value: hidden")
        _fit_words(self.truth, QFontMetrics(self.truth.font()).horizontalAdvance("True value: hidden") + 4)


def _fit_words(label: QLabel, at_least: int = 0) -> None:
    """Give ``label`` at least the width of its widest unbreakable word (a long number, a
    category): a word-wrapped label narrower than one runs it past its edge, over its neighbour,
    or cuts it. The layout then narrows the stretching labels instead, and the window's minimum
    width grows if it must."""
    document = QTextDocument()
    document.setDefaultFont(label.font())
    document.setDocumentMargin(0)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WordWrap)  # as a QLabel wraps: between words only
    document.setDefaultTextOption(option)
    document.setHtml(label.text())
    document.setTextWidth(1)  # every word on a line of its own: the widest line is the widest word
    label.setMinimumWidth(max(at_least, int(document.idealWidth()) + 2 * label.margin() + 2))
