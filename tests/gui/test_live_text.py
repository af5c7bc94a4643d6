"""LiveText: a summary line that follows a slider without re-laying out the window."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from dpexplorer.gui.views.live_text import LiveText


class _LayoutRequests(QObject):
    def __init__(self, widget: QWidget) -> None:
        super().__init__()
        self.count = 0
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:
            self.count += 1
        return False


def _window(qtbot, label: QWidget) -> tuple[QWidget, _LayoutRequests]:
    window = QWidget()
    qtbot.addWidget(window)
    layout = QVBoxLayout(window)
    layout.addWidget(QLabel("above"))
    layout.addWidget(label)
    window.resize(400, 300)
    window.show()
    qtbot.waitExposed(window)
    return window, _LayoutRequests(window)


def _settle(qtbot) -> None:
    qtbot.wait(20)


def test_new_numbers_do_not_re_lay_out_the_window(qtbot):
    text = LiveText()
    _, requests = _window(qtbot, text)
    text.setText("ε = <b>1</b>, δ = 0")
    _settle(qtbot)
    assert text.height() > 0 and text.toPlainText() == "ε = 1, δ = 0"
    requests.count = 0
    for k in range(20):
        text.setText(f"ε = <b>{k / 7:.4g}</b>, δ = {k:.3g}")
    _settle(qtbot)
    assert requests.count == 0
    assert text.text() == "ε = <b>2.714</b>, δ = 19"

    label = QLabel()  # the QLabel it replaces asks for a layout at each new text
    label.setWordWrap(True)
    _, label_requests = _window(qtbot, label)
    label.setText("ε = 1")
    _settle(qtbot)
    label_requests.count = 0
    label.setText("ε = 2")
    _settle(qtbot)
    assert label_requests.count > 0


def test_it_grows_to_a_longer_text_and_fits_a_new_width(qtbot):
    text = LiveText()
    window, _ = _window(qtbot, text)
    text.setText("one line")
    _settle(qtbot)
    one_line = text.height()
    text.setText(" ".join(["a long sentence that must wrap"] * 8))
    _settle(qtbot)
    assert text.height() >= 3 * one_line
    window.resize(1600, 300)  # wider: fewer lines, and the height follows down
    _settle(qtbot)
    assert text.height() < 3 * one_line
    text.clear()
    assert text.text() == "" and text.toPlainText() == ""


def test_a_long_text_in_a_short_window_never_covers_the_widget_below(qtbot):
    """With less room than every widget asks, the text is squeezed with the others; a fixed
    height hung below its place, over the button under it (the neighbours view's footer over
    the Audit ε button)."""
    from PySide6.QtWidgets import QPushButton

    window = QWidget()
    qtbot.addWidget(window)
    layout = QVBoxLayout(window)
    plot = QWidget()
    plot.setMinimumHeight(150)  # a plot at its smallest
    text, button = LiveText(), QPushButton("Audit ε")
    for widget in (plot, text, button):
        layout.addWidget(widget)
    window.show()
    qtbot.waitExposed(window)
    text.setText(" ".join(["a long sentence that must wrap"] * 40))
    window.setFixedSize(300, 250)  # the layout asks for more than 250 px
    qtbot.waitUntil(lambda: text.width() == window.width() - 2 * layout.contentsMargins().left())
    _settle(qtbot)
    assert text.geometry().bottom() < button.geometry().top()
    assert text.geometry().top() > plot.geometry().top()
