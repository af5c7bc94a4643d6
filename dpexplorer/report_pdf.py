"""The release report as PDF, drawn by Qt (QTextDocument printed on a QPdfWriter).

It lives here, not in ``dpexplorer/release`` (which must not import Qt: tests/test_architecture.py)
nor in ``dpexplorer/gui`` (the CLI writes reports without a window): the CLI's ``release --report``
and the window's release dialog both call :func:`write_pdf`. It imports only QtGui/QtSvg and the
report model; it computes nothing, it lays out :func:`dpexplorer.release.report.render_html` with
``pdf=True``. Qt's rich text draws no inline SVG, so each plot is rendered by QSvgRenderer into an
image resource of the document at 3x its size (sharp at 300 dpi)."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QByteArray, QMarginsF, QUrl
from PySide6.QtGui import (
    QFont,
    QGuiApplication,
    QImage,
    QPageLayout,
    QPageSize,
    QPainter,
    QPdfWriter,
    QTextDocument,
)
from PySide6.QtSvg import QSvgRenderer

from dpexplorer.release.report import Report, render_html

SCALE = 3
"""Pixels per SVG unit in the plot images."""


def _ensure_app() -> None:
    """Qt paints fonts only with a QGuiApplication; without a display, use the offscreen one."""
    if QGuiApplication.instance() is None:
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        _ensure_app.app = QGuiApplication([])  # type: ignore[attr-defined]


def _image(svg: str) -> QImage:
    renderer = QSvgRenderer(QByteArray(svg.encode("utf-8")))
    size = renderer.defaultSize() * SCALE
    image = QImage(size, QImage.Format.Format_ARGB32)
    image.fill(0xFFFFFFFF)
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    return image


def write_pdf(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write ``report`` to ``path`` as an A4 PDF (a new page every few statistics; Qt numbers the
    pages). Written to a temporary name and renamed, like every export."""
    _ensure_app()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    document = QTextDocument()
    for name, svg in report.plots().items():
        image = _image(svg)
        image.setDevicePixelRatio(SCALE)
        document.addResource(QTextDocument.ResourceType.ImageResource, QUrl(name), image)
    document.setDefaultFont(QFont("sans-serif", 8))
    document.setDefaultStyleSheet("td, th { padding: 3px; } th { background: #f3f3f3; }")
    document.setHtml(render_html(report, pdf=True))
    writer = QPdfWriter(str(tmp))
    writer.setResolution(300)
    writer.setTitle(f"Release report: {report.dataset}")
    writer.setCreator(report.software)
    writer.setPageLayout(
        QPageLayout(
            QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait, QMarginsF(15, 15, 15, 15)
        )
    )
    document.print_(writer)
    del writer  # the file is complete once the writer is gone
    os.replace(tmp, target)
    return target
