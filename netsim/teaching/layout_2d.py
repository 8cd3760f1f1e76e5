"""Where to draw devices and links on a page: plain geometry, no plotting library.

* A ring is a circle, device 0 at the top and the rest clockwise, so "right
  neighbour" (the next device) is the clockwise one.
* A 2D torus or mesh is a grid, axis 0 down the rows and axis 1 along them;
  wrap-around links are arcs that bow away from the row or column they close.
* A 3D torus is drawn as its 2D slices (fixed first coordinate) side by side;
  links between slices are arcs from one panel to the next.
* A line (1D mesh) is a row.

Each direction of a link gets its own path: the two directions of a cable run
side by side (each offset to the right of its direction of travel), and a
second cable between the same two devices (the wrap of an axis of size 2) is an
arc. Paths are quadratic Bézier curves cut where they leave the sender's box and
enter the receiver's, so arrows never hide under devices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from netsim.network.topology import LinkId, Topology

__all__ = ["Layout", "LinkPath", "layout"]

BOX = (0.33, 0.22)
"""Default half-width and half-height of a device's box."""
GAP = 0.5
"""Room for the arrows between the boxes of two neighbours."""
WRAP_ROOM = 0.35
"""Extra room between rows (columns) of a grid whose rows (columns) wrap around."""


@dataclass(frozen=True)
class LinkPath:
    """A directed link as a quadratic Bézier curve from ``start`` to ``end`` via ``control``."""

    start: tuple[float, float]
    control: tuple[float, float]
    end: tuple[float, float]

    def point(self, fraction: float) -> tuple[float, float]:
        """The point a fraction of the way along (0 at the sender, 1 at the receiver).

        Examples
        --------
        >>> LinkPath((0.0, 0.0), (1.0, 0.0), (2.0, 0.0)).point(0.5)
        (1.0, 0.0)
        """
        f = min(max(fraction, 0.0), 1.0)
        p = np.array([self.start, self.control, self.end], dtype=float)
        x, y = (1 - f) ** 2 * p[0] + 2 * (1 - f) * f * p[1] + f**2 * p[2]
        return float(x), float(y)


@dataclass(frozen=True)
class Layout:
    """Device positions and link paths for one topology.

    Attributes
    ----------
    positions : dict
        Device -> ``(x, y)`` centre of its box (y grows upwards).
    box : tuple of float
        Half-width and half-height of every device's box.
    paths : dict
        :data:`~netsim.network.topology.LinkId` -> :class:`LinkPath`.
    panels : list of tuple
        ``(label, x_min, x_max)`` of each 2D slice of a 3D torus (empty otherwise).
    """

    positions: dict[int, tuple[float, float]]
    box: tuple[float, float]
    paths: dict[LinkId, LinkPath]
    panels: list[tuple[str, float, float]]

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """``(x_min, x_max, y_min, y_max)`` covering boxes and link paths."""
        xs = [x for x, _ in self.positions.values()]
        ys = [y for _, y in self.positions.values()]
        for path in self.paths.values():
            for f in np.linspace(0, 1, 9):
                x, y = path.point(f)
                xs.append(x)
                ys.append(y)
        w, h = self.box
        return min(xs) - w, max(xs) + w, min(ys) - h, max(ys) + h


def _positions(topology: Topology, box: tuple[float, float]) -> tuple[dict[int, tuple[float, float]], list[tuple[str, float, float]]]:
    dims = topology.dims
    dx, dy = 2 * box[0] + GAP, 2 * box[1] + GAP
    if len(dims) >= 2:  # room between rows (columns) for the arcs that close the rows (columns)
        dx += WRAP_ROOM * topology.wraparound[0]
        dy += WRAP_ROOM * topology.wraparound[1]
    positions: dict[int, tuple[float, float]] = {}
    panels: list[tuple[str, float, float]] = []
    if len(dims) == 1 and topology.wraparound[0] and dims[0] > 2:
        n = dims[0]
        angles = [math.pi / 2 - 2 * math.pi * d / n for d in range(n)]
        # The smallest circle on which neighbouring boxes leave GAP between them.
        radius = max(dx, dy) / 4
        while any(
            max(abs(math.cos(a) - math.cos(b)) * radius - 2 * box[0], abs(math.sin(a) - math.sin(b)) * radius - 2 * box[1]) < GAP
            for a, b in zip(angles, angles[1:] + angles[:1], strict=True)
        ):
            radius *= 1.02
        return {d: (radius * math.cos(a), radius * math.sin(a)) for d, a in enumerate(angles)}, panels
    if len(dims) == 1:
        return {d: (d * dx, 0.0) for d in range(dims[0])}, panels
    if len(dims) == 2:
        for d in range(topology.n_devices):
            row, col = topology.coord(d)
            positions[d] = (col * dx, -row * dy)
        return positions, panels
    slices, cols = dims[0], math.prod(dims[2:])
    gap = 2 * dx
    width = (cols - 1) * dx
    for d in range(topology.n_devices):
        coord = topology.coord(d)
        col = int(np.ravel_multi_index(coord[2:], dims[2:]))
        positions[d] = (coord[0] * (width + gap) + col * dx, -coord[1] * dy)
    for s in range(slices):
        left = s * (width + gap)
        panels.append((f"slice {s} (first coordinate = {s})", left, left + width))
    return positions, panels


def _inside(point: np.ndarray, centre: tuple[float, float], box: tuple[float, float], margin: float) -> bool:
    return abs(point[0] - centre[0]) <= box[0] + margin and abs(point[1] - centre[1]) <= box[1] + margin


def _clip(p0: np.ndarray, c: np.ndarray, p1: np.ndarray, a: tuple[float, float], b: tuple[float, float], box: tuple[float, float]) -> LinkPath:
    """Cut the curve where it leaves box ``a`` and enters box ``b``, and re-fit a quadratic through the cut."""
    margin = 0.03

    def at(f: float) -> np.ndarray:
        return (1 - f) ** 2 * p0 + 2 * (1 - f) * f * c + f**2 * p1

    def crossing(lo: float, hi: float, centre: tuple[float, float]) -> float:
        # `lo` is inside the box, `hi` outside
        for _ in range(40):
            mid = (lo + hi) / 2
            if _inside(at(mid), centre, box, margin):
                lo = mid
            else:
                hi = mid
        return hi

    f0 = crossing(0.0, 0.5, a) if _inside(at(0.0), a, box, margin) else 0.0
    f1 = crossing(1.0, 0.5, b) if _inside(at(1.0), b, box, margin) else 1.0
    # The sub-curve between f0 and f1 of a quadratic Bézier is a quadratic Bézier.
    start, end = at(f0), at(f1)
    control = (1 - f1) * ((1 - f0) * p0 + f0 * c) + f1 * ((1 - f0) * c + f0 * p1)
    return LinkPath(tuple(map(float, start)), tuple(map(float, control)), tuple(map(float, end)))


def _is_wrap(topology: Topology, link: LinkId) -> bool:
    u, v, (axis, _) = link
    size = topology.dims[axis]
    return abs(topology.coord(u)[axis] - topology.coord(v)[axis]) > 1 or (size == 2 and link[2][1] == -1)


def layout(topology: Topology, box: tuple[float, float] = BOX) -> Layout:
    """Positions of the devices and paths of the links of a topology.

    Parameters
    ----------
    topology : Topology
    box : tuple of float
        Half-width and half-height of a device's box; neighbours are spaced so
        that :data:`GAP` is left between their boxes.

    Examples
    --------
    >>> from netsim.network.topology import ring, torus
    >>> ring_layout = layout(ring(4))
    >>> radius = ring_layout.positions[0][1]
    >>> [tuple(round(c / radius, 3) + 0.0 for c in ring_layout.positions[d]) for d in range(4)]  # clockwise from the top
    [(0.0, 1.0), (1.0, 0.0), (0.0, -1.0), (-1.0, 0.0)]
    >>> grid = layout(torus((2, 3)))
    >>> grid.positions[4][0] > grid.positions[0][0], grid.positions[4][1] < grid.positions[0][1]  # (1, 1): right of and below (0, 0)
    (True, True)
    >>> len(grid.paths) == torus((2, 3)).graph.number_of_edges()
    True
    """
    if not (box[0] > 0 and box[1] > 0):
        raise ValueError(f"box half-sizes must be positive, got {box!r}")
    positions, panels = _positions(topology, box)
    ring_drawing = len(topology.dims) == 1 and topology.wraparound[0] and topology.dims[0] > 2
    paths: dict[LinkId, LinkPath] = {}
    offset = 0.07
    step = 2 * max(box) + GAP
    for link in topology.links:
        u, v, (axis, _) = link
        a, b = np.array(positions[u]), np.array(positions[v])
        direction = b - a
        length = float(np.hypot(*direction))
        unit = direction / length
        right = np.array([unit[1], -unit[0]])  # right of the direction of travel (y up)
        wrap = not ring_drawing and _is_wrap(topology, link)
        if len(topology.dims) >= 3 and axis == 0:
            bow = 0.12 * length + 0.3 * step + 0.35 * step * wrap  # between slices: clear the devices in between
        elif wrap:
            bow = abs(right[0]) * box[0] + abs(right[1]) * box[1] + 0.1  # just clear the boxes along the row or column
        else:
            bow = 0.0
        p0, p1 = a + right * offset, b + right * offset
        control = (p0 + p1) / 2 + right * 2 * bow
        paths[link] = _clip(p0, control, p1, positions[u], positions[v], box)
    return Layout(positions, box, paths, panels)
