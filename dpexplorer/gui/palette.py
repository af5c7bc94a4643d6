"""Every colour the window draws with, in three appearances (light, dark, high contrast), and
the pens and fonts of the plots in device-independent sizes.

Colours are named by *role*. The role constants (``D``, ``D_PRIME``, ``ALERT``, ...) are the
light appearance's RGB tuples, so a view written as ``pen(D, 2)`` reads like a colour; the
functions here resolve a role to the colour of the appearance in force when they are called.

Guarantees:
- ``D`` and ``D_PRIME`` (the outputs on D and on D') stay distinguishable for viewers with
  protanopia, deuteranopia or tritanopia in every appearance (tests/gui/test_palette.py
  simulates each with Machado, Oliveira and Fernandes 2009 and asks for a CIE ΔE*ab of at
  least 20 between them and a contrast against the plot background);
- a pen from :func:`pen` is cosmetic and at least ``MIN_PEN_WIDTH`` logical pixels wide,
  its width multiplied by the screen's device pixel ratio (Qt draws cosmetic widths in device
  pixels: a 2-px curve was 1 logical px on a 2x screen or a projector at QT_SCALE_FACTOR=2);
- plot fonts follow the application font (teaching mode makes it 1.5x larger), times
  :data:`PLOT_FONT_SCALE`; :func:`restyle` re-applies background, axes, fonts and item colours
  to every plot under a widget after the appearance or the font changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, cast

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QPalette
from PySide6.QtWidgets import QAbstractGraphicsShapeItem, QApplication, QLabel, QWidget

RGB = tuple[int, int, int]

# roles: the light appearance's colours, used as names
D: RGB = (0, 114, 178)
"""M(D), the output distribution on the dataset (Okabe-Ito blue)."""
D_PRIME: RGB = (213, 94, 0)
"""M(D'), on the neighbour (Okabe-Ito vermillion)."""
ALERT: RGB = (190, 20, 60)
"""Where a limit is exceeded (privacy loss beyond ε, a budget overrun)."""
GOOD: RGB = (0, 140, 100)
"""A plan that fits, a total error curve."""
ACCENT: RGB = (170, 80, 150)
NEUTRAL: RGB = (110, 110, 110)
"""Reference lines, released rows, guesses."""
ERROR_TEXT: RGB = (192, 57, 43)
WARNING_TEXT: RGB = (160, 64, 0)
MUTED_TEXT: RGB = (80, 80, 80)
LESSON_BACKGROUND: RGB = (232, 241, 251)
TEACHING_BACKGROUND: RGB = (255, 248, 225)
NOTE_BACKGROUND: RGB = (255, 243, 205)
CARD_BACKGROUND: RGB = (251, 251, 246)
CARD_BORDER: RGB = (200, 200, 184)
PLOT_BACKGROUND: RGB = (255, 255, 255)
PLOT_FOREGROUND: RGB = (0, 0, 0)

SERIES = (D, D_PRIME, GOOD, ACCENT, ALERT, NEUTRAL)
"""The colours of a plot's curves, in order."""

MIN_PEN_WIDTH = 1.0
"""Logical pixels: no plot line is thinner (pyqtgraph's width 0 was one device pixel)."""
LABEL_MAX_POINTS = 10.5
"""Axis titles and legend entries are never larger (teaching mode included)."""
LEGEND_MAX_POINTS = 9.0
"""Legend entries (pyqtgraph's own size): larger, a legend covers the curves it names."""
PLOT_FONT_SCALE = 1.0
"""Tick numbers against the application font: the same (as pyqtgraph drew them), so teaching
mode's 1.5x reaches the plots."""


@dataclass(frozen=True)
class Scheme:
    """One appearance: a colour for every role, and how much thicker its lines are."""

    name: str
    label: str
    colours: dict[RGB, RGB] = field(default_factory=dict)
    dark: bool = False
    line_scale: float = 1.0

    def get(self, role: RGB) -> RGB:
        return self.colours.get(role, role)


APPEARANCE_COLOURS: dict[RGB, tuple[RGB, RGB]] = {
    D: ((86, 180, 233), (0, 200, 255)),
    D_PRIME: ((230, 159, 0), (255, 176, 0)),
    ALERT: ((255, 95, 110), (255, 60, 120)),
    GOOD: ((0, 200, 150), (0, 255, 140)),
    ACCENT: ((225, 150, 205), (255, 120, 255)),
    NEUTRAL: ((165, 165, 165), (215, 215, 215)),
    ERROR_TEXT: ((255, 125, 110), (255, 130, 130)),
    WARNING_TEXT: ((255, 175, 95), (255, 215, 0)),
    MUTED_TEXT: ((190, 190, 190), (240, 240, 240)),
    LESSON_BACKGROUND: ((30, 48, 70), (0, 0, 70)),
    TEACHING_BACKGROUND: ((66, 54, 22), (50, 50, 0)),
    NOTE_BACKGROUND: ((80, 64, 20), (70, 50, 0)),
    CARD_BACKGROUND: ((40, 40, 36), (0, 0, 0)),
    CARD_BORDER: ((110, 110, 96), (255, 255, 255)),
    PLOT_BACKGROUND: ((28, 28, 30), (0, 0, 0)),
    PLOT_FOREGROUND: ((225, 225, 225), (255, 255, 255)),
}
"""Every role (its light colour) with its colour in the dark and in the high-contrast
appearance: one row a role, so every appearance has a colour for every role."""
LIGHT = Scheme("light", "Light", {role: role for role in APPEARANCE_COLOURS})
DARK = Scheme("dark", "Dark", {role: dark for role, (dark, _) in APPEARANCE_COLOURS.items()}, dark=True)
HIGH_CONTRAST = Scheme(
    "high-contrast",
    "High Contrast",
    {role: high for role, (_, high) in APPEARANCE_COLOURS.items()},
    dark=True,
    line_scale=1.5,
)
SCHEMES = {scheme.name: scheme for scheme in (LIGHT, DARK, HIGH_CONTRAST)}
APPEARANCES = ("system", *SCHEMES)
"""What the View menu offers: the system's light or dark, or one of the schemes."""

_current: Scheme = LIGHT


def current() -> Scheme:
    return _current


def colour(role: RGB, alpha: int | None = None) -> tuple[int, ...]:
    """``role``'s colour in the current appearance (with ``alpha`` when given)."""
    rgb = _current.get(role)
    return rgb if alpha is None else (*rgb, alpha)


def qcolor(role: RGB, alpha: int = 255) -> QColor:
    return QColor(*_current.get(role), alpha)


def css(role: RGB) -> str:
    """``role``'s colour as ``#rrggbb``, for style sheets and rich text."""
    return "#{:02x}{:02x}{:02x}".format(*_current.get(role))


def device_pixel_ratio() -> float:
    """The largest device pixel ratio of the screens (1 without a screen)."""
    app = QGuiApplication.instance()
    screens = QGuiApplication.screens() if app is not None else []
    return max((screen.devicePixelRatio() for screen in screens), default=1.0)


def pen_width(width: float) -> float:
    """A line ``width`` logical pixels wide, in the device pixels a cosmetic pen is drawn in."""
    return max(float(width), MIN_PEN_WIDTH) * _current.line_scale * device_pixel_ratio()


def pen(
    role: RGB | None, width: float = 1.0, style: Qt.PenStyle | None = None, alpha: int | None = None
) -> Any:
    """A cosmetic pen of ``role``'s colour, ``width`` logical pixels wide on any screen
    (``None``: no pen, e.g. for a filled area's outline)."""
    if role is None:
        return pg.mkPen(None)
    options: dict[str, Any] = {"width": pen_width(width)}
    if style is not None:
        options["style"] = style
    return pg.mkPen(colour(role, alpha), **options)


def brush(role: RGB, alpha: int = 255) -> Any:
    return pg.mkBrush(*colour(role, alpha))


def plot_font() -> QFont:
    """The font of plot axes and labels: the application's (larger in teaching mode), scaled."""
    app = QApplication.instance()
    font = QFont(app.font()) if isinstance(app, QApplication) else QFont()
    size = font.pointSizeF() if font.pointSizeF() > 0 else 10.0
    font.setPointSizeF(size * PLOT_FONT_SCALE)
    return font


# ------------------------------------------------------------------ applying an appearance
def system_is_dark() -> bool:
    """Whether the desktop asks for a dark appearance (Qt's colour scheme hint, else the
    lightness of the application's window colour)."""
    app = QGuiApplication.instance()
    if app is None:
        return False
    hints = QGuiApplication.styleHints()
    scheme = getattr(hints, "colorScheme", None)
    if scheme is not None:
        value = scheme()
        if value == Qt.ColorScheme.Dark:
            return True
        if value == Qt.ColorScheme.Light:
            return False
    return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


def scheme_for(appearance: str) -> Scheme:
    if appearance == "system":
        return DARK if system_is_dark() else LIGHT
    return SCHEMES[appearance]


def _qt_palette(scheme: Scheme) -> QPalette:
    """A Qt palette for the widgets (the light one is the style's own)."""
    app = QApplication.instance()
    standard = app.style().standardPalette() if isinstance(app, QApplication) else QPalette()
    if not scheme.dark:
        return standard
    hc = scheme is HIGH_CONTRAST
    window = QColor(0, 0, 0) if hc else QColor(45, 45, 48)
    base = QColor(0, 0, 0) if hc else QColor(30, 30, 32)
    text = QColor(255, 255, 255) if hc else QColor(230, 230, 230)
    button = QColor(20, 20, 20) if hc else QColor(58, 58, 62)
    highlight = QColor(255, 215, 0) if hc else QColor(42, 130, 218)
    palette = QPalette(standard)
    roles = QPalette.ColorRole
    for role, value in (
        (roles.Window, window),
        (roles.WindowText, text),
        (roles.Base, base),
        (roles.AlternateBase, QColor(25, 25, 25) if hc else QColor(40, 40, 44)),
        (roles.Text, text),
        (roles.Button, button),
        (roles.ButtonText, text),
        (roles.ToolTipBase, base),
        (roles.ToolTipText, text),
        (roles.PlaceholderText, QColor(200, 200, 200) if hc else QColor(150, 150, 150)),
        (roles.BrightText, QColor(255, 80, 80)),
        (roles.Highlight, highlight),
        (roles.HighlightedText, QColor(0, 0, 0) if hc else QColor(255, 255, 255)),
        (roles.Link, QColor(255, 255, 0) if hc else QColor(110, 170, 255)),
        (roles.Light, QColor(255, 255, 255) if hc else QColor(80, 80, 85)),
        (roles.Midlight, QColor(200, 200, 200) if hc else QColor(66, 66, 70)),
        (roles.Mid, QColor(160, 160, 160) if hc else QColor(50, 50, 54)),
        (roles.Dark, QColor(255, 255, 255) if hc else QColor(25, 25, 28)),
        (roles.Shadow, QColor(0, 0, 0)),
    ):
        palette.setColor(role, value)
    disabled = QColor(150, 150, 150) if hc else QColor(120, 120, 120)
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return palette


def set_appearance(appearance: str, root: QWidget | None = None) -> Scheme:
    """Make ``appearance`` ("system", "light", "dark" or "high-contrast") current: the
    application's palette, and (``root``) every plot and coloured label under it."""
    global _current
    before, scheme = _current, scheme_for(appearance)
    _current = scheme
    app = QApplication.instance()
    if isinstance(app, QApplication) and (scheme.dark or before.dark):
        app.setPalette(_qt_palette(scheme))
    if root is not None:
        restyle(root, before)
    return scheme


def style_plot(item: pg.PlotItem) -> None:
    """Axes, labels and title of ``item`` in the current appearance and plot font."""
    foreground = colour(PLOT_FOREGROUND)
    font = plot_font()
    # axis titles and legends grow less than the tick numbers (plot titles keep their size): they
    # are long, and a plot at 1280 x 720 in teaching mode is short (a long y title is clipped)
    label_points = min(font.pointSizeF(), LABEL_MAX_POINTS)
    legend_size = f"{min(label_points, LEGEND_MAX_POINTS):.1f}pt"  # a legend covers the curves
    label_size = f"{label_points:.1f}pt"
    for side in ("left", "bottom", "right", "top"):
        axis = item.getAxis(side)
        axis.setPen(pen(PLOT_FOREGROUND, 1))
        axis.setTextPen(pg.mkPen(foreground))
        axis.setStyle(tickFont=font)
        axis.labelStyle = {
            **axis.labelStyle,
            "color": css(PLOT_FOREGROUND),
            "font-size": label_size,
        }
        axis._updateLabel()
    title = item.titleLabel
    if title.text:
        title.setText(title.text, color=css(PLOT_FOREGROUND))  # its size: pyqtgraph's, as before
    legend = item.legend
    if legend is not None:
        legend.setLabelTextColor(foreground)
        legend.setLabelTextSize(legend_size)
        legend.setBrush(brush(PLOT_BACKGROUND, 210))
        for sample, label in legend.items:
            label.setText(label.text, color=css(PLOT_FOREGROUND), size=legend_size)
            sample.update()  # it draws its curve's pen, which may have been recoloured


def _remap(value: QColor, before: Scheme) -> QColor | None:
    rgb = (value.red(), value.green(), value.blue())
    for role, was in before.colours.items():
        if was == rgb:
            now = _current.get(role)
            return QColor(*now, value.alpha())
    return None


def _recolour_pen(qpen: Any, before: Scheme) -> Any | None:
    if qpen is None:
        return None
    qpen = pg.mkPen(qpen)
    mapped = _remap(qpen.color(), before)
    if mapped is None:
        return None
    qpen.setColor(mapped)
    qpen.setWidthF(qpen.widthF() * _current.line_scale / before.line_scale)
    return qpen


def restyle(root: QWidget, before: Scheme | None = None) -> None:
    """Re-apply the current appearance and plot font to every plot under ``root``, and recolour
    what was drawn in the ``before`` appearance's colours: plot items (curves, lines, labels,
    shaded areas), style sheets and rich text (coloured spans; links take the new palette)."""
    before = before or _current
    changed = before is not _current
    pg.setConfigOptions(background=colour(PLOT_BACKGROUND), foreground=colour(PLOT_FOREGROUND))
    for view in root.findChildren(pg.GraphicsView):
        view.setBackground(colour(PLOT_BACKGROUND))
        items = view.scene().items()
        if changed:
            for item in items:
                _recolour_item(item, before)
        for item in items:  # after the curves: legends draw their curves' pens
            if isinstance(item, pg.PlotItem):
                style_plot(item)
    if not changed:
        return
    pairs = {"#{:02x}{:02x}{:02x}".format(*was): css(role) for role, was in before.colours.items()}
    pattern = re.compile("|".join(map(re.escape, pairs)), re.IGNORECASE)

    def swap(text: str) -> str:
        return pattern.sub(lambda m: pairs[m.group(0).lower()], text)

    for widget in root.findChildren(QWidget):
        sheet = widget.styleSheet()
        if sheet and pattern.search(sheet):
            widget.setStyleSheet(swap(sheet))
        rich = isinstance(widget, QLabel) or (hasattr(widget, "toPlainText") and hasattr(widget, "text"))
        if rich:  # labels, and views' LiveText
            label = cast(QLabel, widget)
            text = label.text()
            if isinstance(text, str) and (pattern.search(text) or "<a " in text):
                label.setText("")  # a link's colour is the palette's when the text is laid out
                label.setText(swap(text))


def _recolour_item(item: object, before: Scheme) -> None:
    if isinstance(item, (pg.PlotDataItem, pg.PlotCurveItem)):
        new = _recolour_pen(item.opts.get("pen"), before)
        if new is not None:
            item.setPen(new)
    elif isinstance(item, pg.InfiniteLine):
        new = _recolour_pen(item.pen, before)
        if new is not None:
            item.setPen(new)
    elif isinstance(item, pg.TextItem):
        _recolour_text(item, before)
    elif isinstance(item, pg.ErrorBarItem):
        new = _recolour_pen(item.opts.get("pen"), before)
        if new is not None:
            item.setData(pen=new)
    elif isinstance(item, QAbstractGraphicsShapeItem):  # shaded bands, rules, their labels
        new = _recolour_pen(item.pen(), before)
        if new is not None:
            item.setPen(new)
        fill = item.brush()
        mapped = _remap(fill.color(), before) if fill.style() != Qt.BrushStyle.NoBrush else None
        if mapped is not None:
            fill.setColor(mapped)
            item.setBrush(fill)


def _recolour_text(item: pg.TextItem, before: Scheme) -> None:
    mapped = _remap(item.color, before)
    if mapped is not None:
        item.setColor(mapped)
    fill = getattr(item, "fill", None)
    if fill is not None and fill.style() != Qt.BrushStyle.NoBrush:
        mapped = _remap(fill.color(), before)
        if mapped is not None:
            item.fill = pg.mkBrush(mapped)
            item.update()
