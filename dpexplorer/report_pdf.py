"""The release report as PDF, drawn by Qt (QTextDocument printed on a QPdfWriter).

It lives here, not in ``dpexplorer/release`` (which must not import Qt: tests/test_architecture.py)
nor in ``dpexplorer/gui`` (the CLI writes reports without a window): the CLI's ``release --report``
and the window's release dialog both call :func:`write_pdf`. It imports QtGui/QtSvg (and
QtWidgets' QApplication, when it must make the application object) and the report model; it
computes nothing, it lays out :func:`dpexplorer.release.report.render_html` with ``pdf=True``.
Qt's rich text draws no inline SVG, so each plot is rendered by QSvgRenderer into an image
resource of the document at 3x its size (sharp at 300 dpi)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from PySide6.QtCore import QAbstractEventDispatcher, QBuffer, QByteArray, QIODevice, QMarginsF, QThread, QUrl
from PySide6.QtGui import (
    QFont,
    QFontDatabase,
    QGuiApplication,
    QImage,
    QPageLayout,
    QPageSize,
    QPainter,
    QPdfWriter,
    QTextDocument,
)
from PySide6.QtSvg import QSvgRenderer

from dpexplorer.release.export import ExportError, write_new
from dpexplorer.release.report import render_html
from dpexplorer.release.report_model import Report
from dpexplorer.release.report_plots import plots

SCALE = 3
"""Pixels per SVG unit in the plot images."""
T = TypeVar("T")


def _ensure_app() -> None:
    """Qt paints fonts only with an application object; without a display, the offscreen one.
    A QApplication (not a bare QGuiApplication), so that a process whose first Qt use is a
    report can still open widgets afterwards (a window, the tests)."""
    if QGuiApplication.instance() is None:
        from PySide6.QtWidgets import QApplication

        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        _ensure_app.app = QApplication([])  # type: ignore[attr-defined]


def _image(svg: str) -> QImage:
    renderer = QSvgRenderer(QByteArray(svg.encode("utf-8")))
    size = renderer.defaultSize() * SCALE
    image = QImage(size, QImage.Format.Format_ARGB32)
    image.fill(0xFFFFFFFF)
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    return image


def check_renderer() -> None:
    """ExportError unless a report's PDF can be drawn here: Qt starts, has a font to draw with,
    and prints a probe (an empty report) into memory. Called before anything is charged, so that
    a PDF that cannot be made never fails a run afterwards. Writes no file."""
    try:
        _ensure_app()
        if not QFontDatabase.families():
            raise ExportError("Qt finds no font to draw the report's PDF with: install fonts (fontconfig)")
        empty = Report(
            dataset="probe", dataset_id="", items=(), budget=None, budget_lines=(), plan=[], ledger_path=""
        )
        buffer = QBuffer()
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        writer = _writer(empty, buffer)
        _document(empty).print_(writer)
        del writer
        if buffer.size() == 0:
            raise ExportError("Qt cannot print a PDF here: the report's PDF cannot be made")
    except RuntimeError as exc:  # Qt could not start (no platform plugin, no display)
        raise ExportError(f"Qt cannot draw the report's PDF here: {exc}") from None


def _document(report: Report) -> QTextDocument:
    document = QTextDocument()
    for name, svg in plots(report).items():
        image = _image(svg)
        image.setDevicePixelRatio(SCALE)
        document.addResource(QTextDocument.ResourceType.ImageResource, QUrl(name), image)
    document.setDefaultFont(QFont("sans-serif", 8))
    document.setDefaultStyleSheet("td, th { padding: 3px; } th { background: #f3f3f3; }")
    document.setHtml(render_html(report, pdf=True))
    return document


def _writer(report: Report, target: str | QBuffer) -> QPdfWriter:
    writer = QPdfWriter(target)
    writer.setResolution(300)
    writer.setTitle(f"Release report: {report.dataset}")
    writer.setCreator(report.software)
    writer.setPageLayout(
        QPageLayout(
            QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait, QMarginsF(15, 15, 15, 15)
        )
    )
    return writer


def on_qt_thread(work: Callable[[], T]) -> T:
    """``work()``, on a QThread of its own when the calling thread is not Qt's (a Python worker
    thread: the window's compute service, the API's callers). A long document is laid out in
    steps on a timer, and a thread without a Qt event dispatcher cannot start one: each window
    release printed "QBasicTimer::start: current thread's event dispatcher has already been
    destroyed" three times on stderr. On a QThread the timers start (and never need to fire: the
    printing lays out what is left at once). Exceptions are raised again in the caller."""
    if QAbstractEventDispatcher.instance() is not None:
        return work()
    outcome: dict[str, Any] = {}

    class Runner(QThread):
        def run(self) -> None:
            try:
                outcome["value"] = work()
            except BaseException as exc:  # handed to the caller as it is
                outcome["error"] = exc

    runner = Runner()
    runner.start()
    runner.wait()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def write_pdf(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write ``report`` to ``path`` as an A4 PDF (a new page every few statistics; Qt numbers the
    pages). Written to a temporary name and hard-linked to ``path``, like every export: an
    existing ``path`` is never replaced (ExportError). Drawn on a Qt thread
    (:func:`on_qt_thread`)."""
    _ensure_app()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)

    def draw() -> Path:
        document = _document(report)

        def printed(tmp: Path) -> None:
            writer = _writer(report, str(tmp))
            document.print_(writer)
            del writer  # the file is complete once the writer is gone

        write_new(target, printed)
        return target

    return on_qt_thread(draw)
