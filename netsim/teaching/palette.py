"""One colour per member of a group, fixed for a whole animation and readable by colour-blind readers.

:data:`PALETTE` holds 24 colours picked greedily, each as far as possible from those
before it in CIELAB, as seen with normal vision and as simulated for deuteranopia,
protanopia and tritanopia (Machado, Oliveira & Fernandes 2009, severity 1, the matrices
of their paper); lightness 30..80, so every colour stands out from the white of an empty
slot and from black text. The smallest difference (ΔE76) between two of the first 16 in
any of the four visions is about 17 (about 26 for the first 8; 2.3 is just noticeable).
Beyond 24 members colours repeat, and the number written on each slot tells them apart.

Both the GIF (quantised to one palette for every frame, so a device's colour never
changes) and the browser player use this list.

Examples
--------
>>> device_rgb(0), device_rgb(24) == device_rgb(0)
((0, 120, 180), True)
>>> min_difference(16) > 15
True
"""

from __future__ import annotations

import math

__all__ = ["PALETTE", "device_rgb", "min_difference", "simulated_lab"]

PALETTE = (
    "#0078b4", "#ff780f", "#d2b4a5", "#693c1e", "#8700ff", "#69d2ff", "#4b4b5a", "#f0a569",
    "#878796", "#a5785a", "#c35aff", "#d22d00", "#3c3cb4", "#c3c3d2", "#960f87", "#9696f0",
    "#e12dc3", "#ff0087", "#785a4b", "#00c31e", "#5a872d", "#e187d2", "#962de1", "#b40069",
)  # fmt: skip
"""The colours, as hex; member k of a group takes ``PALETTE[k % 24]``."""

_CVD = {
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}


def device_rgb(k: int) -> tuple[int, int, int]:
    """Member ``k``'s colour as 0..255 RGB."""
    code = PALETTE[k % len(PALETTE)]
    return int(code[1:3], 16), int(code[3:5], 16), int(code[5:7], 16)


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _gamma(c: float) -> float:
    c = min(max(c, 0.0), 1.0)
    return 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055


def _lab(rgb: tuple[float, float, float]) -> tuple[float, float, float]:
    r, g, b = (_linear(c) for c in rgb)
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
    fx, fy, fz = (t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z))
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def simulated_lab(rgb: tuple[int, int, int], vision: str = "normal") -> tuple[float, float, float]:
    """CIELAB of a colour as seen with ``vision``: ``normal``, ``deuteranopia``, ``protanopia`` or ``tritanopia``."""
    unit = tuple(c / 255 for c in rgb)
    if vision == "normal":
        return _lab(unit)
    lin = [_linear(c) for c in unit]
    seen = tuple(_gamma(sum(m * c for m, c in zip(row, lin, strict=True))) for row in _CVD[vision])
    return _lab(seen)


def min_difference(n: int) -> float:
    """The smallest ΔE76 between two of the first ``n`` colours, over normal vision and the three simulated ones."""
    smallest = math.inf
    for vision in ("normal", *_CVD):
        labs = [simulated_lab(device_rgb(k), vision) for k in range(n)]
        for i in range(n):
            for j in range(i + 1, n):
                smallest = min(smallest, math.dist(labs[i], labs[j]))
    return smallest
