"""Rich text that changes at every slider step without re-laying out the window."""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QSize
from PySide6.QtGui import QAbstractTextDocumentLayout, QPainter, QPaintEvent, QResizeEvent, QTextDocument
from PySide6.QtWidgets import QSizePolicy, QWidget


class LiveText(QWidget):
    """A word-wrapped rich-text line for numbers that follow a slider (a view's summary).

    A QLabel's ``setText`` always asks every parent layout to re-lay out: with word-wrapped
    labels that was 5 ms of each slider step on the main thread. Here a new text only repaints
    this widget; the height follows the text when the text needs more lines (then the window
    is re-laid out once) and fits it exactly again whenever the width changes.

    The height is a size hint, not a fixed height: when the layout has less room than every
    widget asks (a long text in a short window), this widget is squeezed with the others. A
    fixed height could not be, so it hung below its place, over the widget under it (the
    neighbours view's footer over the Audit ε button)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._html = ""
        self._height = 0
        self._document = QTextDocument(self)
        self._document.setDocumentMargin(0)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        return QSize(0, self._height)

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self._height)

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
        if height > self._height or (shrink and height != self._height):
            self._height = height
            self.updateGeometry()

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
