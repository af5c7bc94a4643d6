"""Teaching mode: one simulated release at a time, the true value revealed on demand, large
fonts for a projector. While it is on, Release is disabled (the window says why)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from dpexplorer.gui.jobs import TeachingDraw

RELEASE_BLOCKED = (
    "Release is disabled in teaching mode: true values may be on screen and classroom "
    "draws use the exploration generator, never the secure one. Leave teaching mode to release."
)


class TeachingPanel(QFrame):
    """Shows the latest simulated output; ``resample_requested`` asks the window for another."""

    resample_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet("TeachingPanel { background: #fff8e1; }")
        self.output = QLabel("Press Resample to run the mechanism once on D.")
        self.truth = QLabel()
        for label in (self.output, self.truth):  # readable from the back of the room
            label.setStyleSheet("font-size: 20pt;")
            label.setWordWrap(True)  # a long answer (a top-k list) wraps, never widens the window
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.reveal = QCheckBox("Reveal the true value")
        self.resample = QPushButton("Resample")
        self.resample.setToolTip("Run the mechanism once more on D (simulation, not a release)")
        self.resample.clicked.connect(self.resample_requested)
        self.reveal.toggled.connect(self._show_truth)
        answers = QVBoxLayout()
        answers.addWidget(self.output)
        answers.addWidget(self.truth)
        controls = QVBoxLayout()
        controls.addWidget(self.reveal)
        controls.addWidget(self.resample)
        layout = QHBoxLayout(self)
        layout.addWidget(QLabel("<b>Teaching<br>mode</b>"))
        layout.addLayout(answers, 1)
        layout.addLayout(controls)
        self.draw: TeachingDraw | None = None

    def show_draw(self, draw: TeachingDraw) -> None:
        self.draw = draw
        self.output.setText(f"The mechanism answered: <b>{draw.output}</b>  (run #{draw.run})")
        self._show_truth(self.reveal.isChecked())

    def _show_truth(self, shown: bool) -> None:
        if shown and self.draw is not None:
            self.truth.setText(f"True value: <b>{self.draw.truth}</b>")
        else:
            self.truth.setText("True value: hidden")
