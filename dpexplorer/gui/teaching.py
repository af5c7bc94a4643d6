"""Teaching mode: one simulated release at a time, the true value revealed on demand, large
fonts for a projector. While it is on, Release is disabled (the window says why)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QCheckBox, QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from dpexplorer.gui import palette
from dpexplorer.gui.jobs import TeachingDraw

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
        self.truth.setMinimumWidth(QFontMetrics(large).horizontalAdvance("True value: hidden") + 4)
        self.reveal = QCheckBox("Reveal the true value")
        self.resample = QPushButton("Resample")
        self.resample.setToolTip("Run the mechanism once more on D (simulation, not a release)")
        self.resample.clicked.connect(self.resample_requested)
        self.reveal.toggled.connect(self._show_truth)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 2, 8, 2)
        layout.addWidget(self.output, 1)
        layout.addWidget(self.truth)
        controls = QVBoxLayout()  # stacked: two short rows take less width than one long one
        controls.setSpacing(0)
        controls.addWidget(self.reveal)
        controls.addWidget(self.resample)
        layout.addLayout(controls)
        self.draw: TeachingDraw | None = None

    def show_draw(self, draw: TeachingDraw) -> None:
        self.draw = draw
        self.output.setText(f"Answer: <b>{draw.output}</b> (run #{draw.run})")
        self._show_truth(self.reveal.isChecked())

    def _show_truth(self, shown: bool) -> None:
        if shown and self.draw is not None:
            self.truth.setText(f"True value: <b>{self.draw.truth}</b>")
        else:
            self.truth.setText("True value: hidden")
