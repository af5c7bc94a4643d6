"""Rich text that changes at every slider step without re-laying out the window."""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent
from PySide6.QtGui import QAbstractTextDocumentLayout, QPainter, QPaintEvent, QResizeEvent, QTextDocument
from PySide6.QtWidgets import QSizePolicy, QWidget


class LiveText(QWidget):
    """A word-wrapped rich-text line for numbers that follow a slider (a view's summary).

    A QLabel's ``setText`` always asks every parent layout to re-lay out: with word-wrapped
    labels that was 5 ms of each slider step on the main thread. Here a new text only repaints
    this widget; the height follows the text when the text needs more lines (then the window
    is re-laid out once) and fits it exactly again whenever the width changes."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._html = ""
        self._document = QTextDocument(self)
        self._document.setDocumentMargin(0)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(0)

    def text(self) -> str:
        return self._html

    def setText(self, html: str) -> None:
        if html != self._html:
            self._html = html
            self._document.setHtml(html)
            self._fit(shrink=False)
            self.update()

    def clear(self) -> None:
        self.setText("")

    def toPlainText(self) -> str:
        return self._document.toPlainText()

    def _fit(self, *, shrink: bool) -> None:
        """Wrap at the current width; grow to the text's height (or fit it exactly)."""
        self._document.setDefaultFont(self.font())
        self._document.setTextWidth(max(self.width(), 1))
        height = math.ceil(self._document.size().height()) if self._html else 0
        if height > self.height() or (shrink and height != self.height()):
            self.setFixedHeight(height)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._fit(shrink=True)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # teaching mode enlarges the font
            self._fit(shrink=True)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        context = QAbstractTextDocumentLayout.PaintContext()
        context.palette = self.palette()
        self._document.documentLayout().draw(painter, context)
        painter.end()
