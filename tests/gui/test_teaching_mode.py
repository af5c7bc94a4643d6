"""Teaching mode: the noise is visible in the digits, and the window fits a 1280 x 720 projector
and comes back to its size after F9."""

from __future__ import annotations

import itertools
import re

import pytest
from conftest import wait_idle
from PySide6.QtCore import QPoint, QRect, QRectF, QSize
from PySide6.QtGui import QTextDocument, QTextOption
from PySide6.QtWidgets import QLabel, QWidget

from dpexplorer.core.mechanisms.registry import get
from dpexplorer.gui.jobs import TeachingDraw, full_digits, teaching_draw


def test_draws_of_a_large_count_show_their_noise(qtbot, window):
    """The old text was '4.884e+04' for every draw of Adult's 48,842 rows."""
    window.query_panel.select_kind("count")
    wait_idle(qtbot, window)
    laplace = get("laplace")
    params = laplace.validate({"epsilon": 1.0})
    query = window.explorer.query_input
    shown = {teaching_draw(laplace, params, query, 7, run).output for run in range(1, 6)}
    assert len(shown) == 5, shown
    assert all("e+" not in text and "," in text for text in shown), shown
    assert full_digits(48_841.73, 1.4) == "48,841.7"
    assert teaching_draw(laplace, params, query, 7, 1).truth == "48,842"


def test_teaching_mode_fits_1280_by_720_and_f9_restores_the_size(qtbot, window):
    """The old window widened to 1777 px at teaching fonts and stayed that wide after F9."""
    window.resize(1280, 720)
    wait_idle(qtbot, window)
    window.teaching_action.setChecked(True)
    qtbot.wait(50)  # the side panel refits after the new font reaches it
    wait_idle(qtbot, window)
    for i in range(window.tabs.count()):  # every page, as each is shown
        window.tabs.setCurrentIndex(i)
        wait_idle(qtbot, window)
        hint = window.minimumSizeHint()
        assert hint.width() <= 1280 and hint.height() <= 720, (window.tabs.tabText(i), hint)
    assert window.size() == QSize(1280, 720)
    window.teaching_action.setChecked(False)
    qtbot.wait(50)
    assert window.size() == QSize(1280, 720)


@pytest.fixture
def teaching_window(qtbot, window):
    """The window at 1280 x 720 in teaching mode; then out of it, since the mode enlarges the
    application's font, which later tests in this process (a PDF report's pages) would inherit."""
    window.resize(1280, 720)
    window.teaching_action.setChecked(True)
    qtbot.wait(50)  # the side panel refits after the new font reaches it
    wait_idle(qtbot, window)
    yield window
    window.teaching_action.setChecked(False)


def test_teaching_mode_shows_every_query_control_whole_at_1280_by_720(qtbot, teaching_window):
    """At teaching fonts the condition's operator '==' showed as '=:' (its combo kept the width
    of the normal font), its value field was cut to a few letters, and a count by group or a
    most common category laid its controls past the side panel's edge (the panel, which never
    scrolls sideways, clipped them)."""
    window = teaching_window
    panel = window.query_panel
    panel.preset_default_example()  # a count where two conditions hold
    wait_idle(qtbot, window)
    for row in panel.conditions:
        assert row.op.width() >= row.op.sizeHint().width(), (row.op.width(), row.op.sizeHint())
        date = row.value.fontMetrics().horizontalAdvance("YYYY-MM-DD")
        assert row.value.width() >= date, (row.value.width(), date)
    assert panel.relation.width() >= panel.relation.sizeHint().width()
    for i in range(panel.kind.count()):
        panel.kind.setCurrentIndex(i)
        qtbot.wait(10)
        kind = panel.current_kind()
        # the viewport's width now: its vertical scroll bar comes and goes with the panel's height
        # (the mechanism ranking under the picker is shown only where two mechanisms apply)
        room = window._side_scroll.viewport().width()
        assert window._side_panel.minimumSizeHint().width() <= room, kind
        assert panel.geometry().right() < room, kind
    panel.select_kind("group_mean")
    panel.key_origin.setCurrentIndex(panel.key_origin.findData("private"))
    wait_idle(qtbot, window)
    rule = panel.key_rule  # wrapped beside no name: the form gave it 5 lines of its 6

    def whole() -> bool:
        return rule.height() >= rule.heightForWidth(rule.width())

    # the rule's text (its exact delta) may arrive after the views are idle; its new height is
    # laid out on a later turn of the event loop (a loaded CI worker read one line of four)
    qtbot.waitUntil(whole, timeout=5000)
    assert whole(), (rule.height(), rule.text())


def _banner_boxes(panel) -> dict[str, QRectF]:
    """The rectangles the banner's visible parts cover on screen, in the banner's pixels: a
    label's text (laid out as a QLabel wraps it, between words, aligned left and centred
    vertically), a control's whole widget. AssertionError if a part leaves the banner or a
    label's text needs more room than its label has (so runs past its edge or is cut)."""
    boxes = {}
    for widget in panel.findChildren(QWidget):
        if not widget.isVisibleTo(panel):
            continue
        box = QRectF(QRect(widget.mapTo(panel, QPoint(0, 0)), widget.size()))
        assert QRectF(panel.rect()).contains(box), (widget, box, panel.rect())
        if isinstance(widget, QLabel):
            document = QTextDocument()
            document.setDefaultFont(widget.font())
            document.setDocumentMargin(0)
            option = QTextOption()
            option.setWrapMode(QTextOption.WrapMode.WordWrap)
            document.setDefaultTextOption(option)
            document.setHtml(widget.text())
            room = widget.contentsRect().translated(widget.mapTo(panel, QPoint(0, 0)))
            document.setTextWidth(room.width())
            width, height = document.idealWidth(), document.size().height()
            assert width <= room.width() and height <= room.height(), (
                f"{widget.text()!r} needs {width:.0f} x {height:.0f} px, has {room}"
            )
            box = QRectF(room.left(), room.top() + (room.height() - height) / 2, width, height)
        boxes[f"{type(widget).__name__} {widget.text()[:30]!r}"] = box
    return boxes


GAP = 12
"""Pixels between two parts side by side, at least: two spaces of the banner's 18 pt type
(one space's gap reads as one sentence)."""


def test_a_synthetic_run_shows_its_workload_error_and_no_label_overlaps(qtbot, teaching_window):
    """With AIM on a marginals query the banner read 'Answer: 0.00483430017492461 (run #1)', the
    run's mean total-variation distance with every digit of a double, the number run past its
    label into 'True value: hidden'. It says what the number is, to three significant digits, and
    no label covers another, at 1280 x 720 and at the window's narrowest."""
    window = teaching_window
    window.query_panel.select_kind("marginals")
    window.query_panel.marginal_columns.setText("sex, race, income")
    window.query_panel.emit_query()
    qtbot.waitUntil(lambda: [m.name for m in window.mechanism_panel.mechanisms] == ["mst", "aim"])
    window.mechanism_panel.select("aim")
    wait_idle(qtbot, window)
    panel = window.teaching_panel
    panel.resample.click()
    qtbot.waitUntil(lambda: panel.draw is not None and panel.draw.marginals == 3, timeout=20_000)
    output = panel.output.text()
    assert re.fullmatch(r"Workload error: <b>0\.\d+</b>", output), output
    assert len(panel.draw.output.lstrip("0.")) <= 3, panel.draw.output  # three significant digits
    note = panel.note.text()
    assert "Synthetic run #" in note and "3 marginals" in note and "not an answer to publish" in note
    assert not panel.truth.isVisibleTo(panel) and not panel.reveal.isVisibleTo(panel)
    long_answer = TeachingDraw("0.00483430017492461", "0.0047", 9)  # the old text, as an answer
    for width in (1280, window.minimumSizeHint().width()):
        for draw in (panel.draw, long_answer):
            panel.show_draw(draw)
            window.resize(width, 720)
            qtbot.wait(20)  # laid out
            boxes = _banner_boxes(panel)
            assert len(boxes) == (3 if draw.marginals else 4), boxes  # labels, Reveal, Resample
            for (a, ra), (b, rb) in itertools.combinations(boxes.items(), 2):
                close = ra.adjusted(-GAP / 2, 0, GAP / 2, 0).intersects(rb.adjusted(-GAP / 2, 0, GAP / 2, 0))
                assert not close, f"at {window.width()} px: {a} {ra} is within {GAP} px of {b} {rb}"
