"""Colour-vision-deficiency simulation for tests: Machado, Oliveira and Fernandes (2009), "A
physiologically-based model for simulation of color vision deficiency", IEEE TVCG 15(6), the
matrices for severity 1.0 (dichromacy), applied in linear sRGB; CIE L*a*b* (D65) and ΔE*ab
(CIE 1976); WCAG 2 relative luminance and contrast ratio."""

from __future__ import annotations

import numpy as np

MACHADO_2009 = {
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
}


def to_linear(rgb: tuple[int, int, int]) -> np.ndarray:
    c = np.asarray(rgb, dtype=float) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def simulate(rgb: tuple[int, int, int], deficiency: str) -> np.ndarray:
    """Linear RGB as a viewer with ``deficiency`` sees ``rgb`` (clipped to the gamut)."""
    return np.clip(MACHADO_2009[deficiency] @ to_linear(rgb), 0.0, 1.0)


def lab(linear: np.ndarray) -> np.ndarray:
    xyz = (
        np.array(
            [
                [0.4124564, 0.3575761, 0.1804375],
                [0.2126729, 0.7151522, 0.0721750],
                [0.0193339, 0.1191920, 0.9503041],
            ]
        )
        @ linear
    )
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a: np.ndarray, b: np.ndarray) -> float:
    """CIE 1976 ΔE*ab between two linear-RGB colours."""
    return float(np.linalg.norm(lab(a) - lab(b)))


def luminance(linear: np.ndarray) -> float:
    return float(np.dot([0.2126, 0.7152, 0.0722], linear))


def contrast(a: np.ndarray, b: np.ndarray) -> float:
    """WCAG contrast ratio (1 to 21) between two linear-RGB colours."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)
