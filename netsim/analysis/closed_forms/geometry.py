"""Where a group of devices lies on a ring, torus or mesh: the layout a closed form is chosen for."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Geometry", "group_geometry", "hops_between"]


@dataclass(frozen=True)
class Geometry:
    """How one group of devices lies on a ring, torus or mesh.

    Attributes
    ----------
    dims : tuple of int
        Sizes of the axes the group spans (only the axes along which its members differ).
    wraparound : tuple of bool
        Whether the group can close a ring along each of those axes.
    regular : bool
        False when the members do not fill a sub-grid (then only closed forms that do
        not depend on the layout apply).
    hops : int or None
        Longest route between communicating members, where known (for ppermute).
    """

    dims: tuple[int, ...]
    wraparound: tuple[bool, ...]
    regular: bool = True
    hops: int | None = None

    @property
    def n(self) -> int:
        """Devices in the group."""
        return math.prod(self.dims)

    @property
    def kind(self) -> str:
        """``single``, ``ring``, ``line``, ``torus``, ``mesh`` or ``irregular``.

        Examples
        --------
        >>> Geometry((8,), (True,)).kind, Geometry((4, 4), (True, False)).kind
        ('ring', 'mesh')
        """
        if self.n == 1:
            return "single"
        if not self.regular:
            return "irregular"
        if len(self.dims) == 1:
            return "ring" if self.wraparound[0] else "line"
        return "torus" if all(self.wraparound) else "mesh"

    def describe(self) -> str:
        """Words for reports, e.g. ``torus 16x16x16``.

        Examples
        --------
        >>> Geometry((16, 16, 16), (True,) * 3).describe(), Geometry((8,), (True,)).describe()
        ('torus 16x16x16', 'ring of 8')
        """
        kind = self.kind
        if kind in ("ring", "line"):
            return f"{kind} of {self.dims[0]}"
        if kind == "irregular":
            return f"{self.n} devices that do not fill a sub-grid"
        if kind == "single":
            return "one device"
        return f"{kind} " + "x".join(map(str, self.dims))


def _evenly_spaced(values: np.ndarray, size: int) -> bool:
    """Whether sorted distinct coordinates are evenly spaced round a ring of ``size``."""
    gaps = np.diff(np.append(values, values[0] + size))
    return bool(np.all(gaps == gaps[0]))


def group_geometry(dims: Sequence[int], wraparound: Sequence[bool], members: Sequence[int]) -> Geometry:
    """The sub-grid a group of devices spans on a grid of ``dims`` (row-major numbering).

    An axis is spanned when members differ along it. It can close a ring when the grid
    wraps there and the members' coordinates are evenly spaced round it (a whole axis,
    or a strided subset), or when only two members lie on it.

    Examples
    --------
    >>> group_geometry((4, 4), (True, True), [0, 1, 2, 3])
    Geometry(dims=(4,), wraparound=(True,), regular=True, hops=None)
    >>> group_geometry((8,), (True,), [0, 1, 2, 3]).kind      # half a ring is a line
    'line'
    >>> group_geometry((16, 16, 16), (True,) * 3, range(4096)).describe()
    'torus 16x16x16'
    >>> group_geometry((4, 4), (True, True), [0, 5, 10]).kind
    'irregular'
    """
    members = np.asarray(list(members), dtype=np.int64)
    coords = np.unravel_index(members, tuple(dims))
    spanned, wraps = [], []
    for axis, size in enumerate(dims):
        values = np.unique(coords[axis])
        if len(values) < 2:
            continue
        spanned.append(len(values))
        wraps.append(len(values) == 2 or (bool(wraparound[axis]) and _evenly_spaced(values, size)))
    regular = math.prod(spanned) == len(members)
    if not regular:
        return Geometry((len(members),), (False,), regular=False)
    return Geometry(tuple(spanned), tuple(wraps))


def hops_between(dims: Sequence[int], wraparound: Sequence[bool], a: int, b: int) -> int:
    """Links on the dimension-order route from device ``a`` to ``b`` (the shorter way on wrapped axes).

    Examples
    --------
    >>> hops_between((4, 4), (True, True), 0, 15), hops_between((4, 4), (False, False), 0, 15)
    (2, 6)
    """
    coords = np.unravel_index([a, b], tuple(dims))
    total = 0
    for (x, y), size, wrap in zip(coords, dims, wraparound, strict=True):
        d = abs(int(x) - int(y))
        total += min(d, size - d) if wrap else d
    return total
