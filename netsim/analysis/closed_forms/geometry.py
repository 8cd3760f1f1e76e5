"""Where a group of devices lies on a ring, torus or mesh: the layout a closed form is chosen for."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Geometry", "group_geometry", "hops_between", "permutation_loads", "ports"]


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
    neighbours : bool
        Members follow one another one hop apart along every spanned axis, in
        row-major order (the order the algorithms walk them): every step of a ring or
        line crosses one link of its own. False for strided, permuted or irregular groups.
    diameter : int
        Hops between the two farthest members (shortest routes); at least 1 when
        anything moves.
    in_links : int
        The fewest links into any member (both cables of a wrapped axis of 2 count).
    planned : tuple of bool or None
        The wraparound the algorithm planned with (per axis of a group over mesh axes);
        None when it planned the group as one ring (groups not from a mesh).
    shared : int
        Most pairs whose routes cross one link (ppermute; 1 when no two pairs share a link).
    routes : int
        Routes each ppermute pair's payload is spread over (2 for a pair half way round
        a ring, or the axes a multipath pair crosses); 0 when pairs differ.
    pieces : int
        Pieces a ppermute payload is cut into (2 halves, or the most axes a multipath pair crosses).
    ports : int
        Axes along which the farthest ppermute pair differs: the links it could leave by
        at once (the scaling book sends over all of them).
    """

    dims: tuple[int, ...]
    wraparound: tuple[bool, ...]
    regular: bool = True
    hops: int | None = None
    neighbours: bool = True
    diameter: int = 0
    in_links: int = 0
    planned: tuple[bool, ...] | None = None
    shared: int = 1
    routes: int = 1
    ports: int = 1
    pieces: int = 2

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
    >>> g = group_geometry((4, 4), (True, True), [0, 1, 2, 3])
    >>> g.dims, g.wraparound, g.neighbours, g.diameter, g.in_links
    ((4,), (True,), True, 2, 4)
    >>> group_geometry((8,), (True,), [0, 2, 4, 6]).neighbours   # two hops apart
    False
    >>> group_geometry((8,), (True,), [0, 1, 2, 3]).kind      # half a ring is a line
    'line'
    >>> group_geometry((16, 16, 16), (True,) * 3, range(4096)).describe()
    'torus 16x16x16'
    >>> group_geometry((4, 4), (True, True), [0, 5, 10]).kind
    'irregular'
    """
    members = np.asarray(list(members), dtype=np.int64)
    coords = np.unravel_index(members, tuple(dims))
    spanned, wraps, adjacent, diameter = [], [], True, 0
    for axis, size in enumerate(dims):
        values = np.sort(coords[axis])
        values = values[np.diff(values, prepend=-1) != 0]  # np.unique's answer, without the import of numpy.ma it makes
        if len(values) < 2:
            continue
        spanned.append(len(values))
        wrap = bool(wraparound[axis])
        wraps.append(wrap and _evenly_spaced(values, size))
        adjacent &= bool(np.all(np.diff(values) == 1))
        gaps = np.abs(values[:, None] - values[None, :])
        diameter += int(np.minimum(gaps, size - gaps).max() if wrap else gaps.max())
    links = min(_in_links(dims, wraparound, c) for c in zip(*coords, strict=True)) if len(members) else 0
    regular = math.prod(spanned) == len(members)
    if not regular:
        return Geometry((len(members),), (False,), regular=False, neighbours=False, diameter=max(diameter, 1), in_links=links)
    ordered = bool(np.all(np.diff(members) > 0))
    return Geometry(tuple(spanned), tuple(wraps), neighbours=adjacent and ordered, diameter=diameter, in_links=links)


def _in_links(dims: Sequence[int], wraparound: Sequence[bool], coord: Sequence[int]) -> int:
    """Links into the device at ``coord``: two per wrapped axis, one or two on a line."""
    total = 0
    for size, wrap, c in zip(dims, wraparound, coord, strict=True):
        if size > 1:
            total += 2 if wrap or 0 < c < size - 1 else 1
    return total


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


def _route(dims: Sequence[int], wraparound: Sequence[bool], a: int, b: int, tie: int) -> list[tuple[int, int, int]]:
    """Links (device, axis, step) of the dimension-order route, as the topology routes."""
    here, target = list(np.unravel_index(a, tuple(dims))), np.unravel_index(b, tuple(dims))
    links = []
    for axis, size in enumerate(dims):
        forward = (int(target[axis]) - int(here[axis])) % size
        if wraparound[axis]:
            backward = size - forward if forward else 0
            step, count = (1, forward) if forward < backward or (forward == backward and tie > 0) else (-1, backward)
        else:
            step, count = (1 if target[axis] >= here[axis] else -1), abs(int(target[axis]) - int(here[axis]))
        for _ in range(count):
            links.append((int(np.ravel_multi_index(tuple(here), tuple(dims))), axis, step))
            here[axis] = (here[axis] + step) % size
    return links


def permutation_loads(dims: Sequence[int], wraparound: Sequence[bool], pairs: Sequence[tuple[int, int]]) -> tuple[int, int, int]:
    """(longest route, most pairs through one link, routes per pair: 1, 2, or 0 if they differ) of a direct ppermute.

    Each pair sends its payload in two halves with opposite tie-breaks (as
    :func:`netsim.algorithms.direct.permutation` does), so a pair half way round a
    ring splits over both ways.

    Examples
    --------
    >>> permutation_loads((8,), (True,), [(i, (i + 1) % 8) for i in range(8)])
    (1, 1, 1)
    >>> permutation_loads((8,), (True,), [(i, (i + 2) % 8) for i in range(8)])
    (2, 2, 1)
    >>> permutation_loads((4,), (True,), [(0, 2), (2, 0)])   # each pair both ways round, on its own links
    (2, 1, 2)
    """
    return _loads(tuple(map(int, dims)), tuple(map(bool, wraparound)), tuple((int(a), int(b)) for a, b in pairs))


@functools.lru_cache(maxsize=1024)
def _loads(dims: tuple[int, ...], wraparound: tuple[bool, ...], pairs: tuple[tuple[int, int], ...]) -> tuple[int, int, int]:
    """:func:`permutation_loads`, worked out once per permutation (a step's layers permute the same pairs)."""
    users: dict[tuple[int, int, int], set[int]] = {}
    longest, spread = 0, set()
    for k, (a, b) in enumerate(pairs):
        routes = [_route(dims, wraparound, a, b, tie) for tie in (1, -1)]
        spread.add(1 if routes[0] == routes[1] else 2)
        longest = max(longest, len(routes[0]), len(routes[1]))
        for link in {*routes[0], *routes[1]}:
            users.setdefault(link, set()).add(k)
    return longest, max((len(u) for u in users.values()), default=1), spread.pop() if len(spread) == 1 else 0


def _axis_first(dims: Sequence[int], wraparound: Sequence[bool], a: int, b: int, first: int) -> list[tuple[int, int, int]]:
    """Links of the dimension-order route correcting axes ``first, first+1, ...`` in turn, ties forward
    (:func:`netsim.engine.routes.axis_first_route`)."""
    k = len(dims)
    order = [(first + i) % k for i in range(k)]
    here, target = list(np.unravel_index(a, tuple(dims))), np.unravel_index(b, tuple(dims))
    links = []
    for axis in order:
        size = dims[axis]
        forward = (int(target[axis]) - int(here[axis])) % size
        if wraparound[axis]:
            backward = size - forward if forward else 0
            step, count = (1, forward) if forward <= backward else (-1, backward)
        else:
            step, count = (1 if target[axis] >= here[axis] else -1), abs(int(target[axis]) - int(here[axis]))
        for _ in range(count):
            links.append((int(np.ravel_multi_index(tuple(here), tuple(dims))), axis, step))
            here[axis] = (here[axis] + step) % size
    return links


def multipath_loads(dims: Sequence[int], wraparound: Sequence[bool], pairs: Sequence[tuple[int, int]]) -> tuple[int, int, int, int]:
    """(longest route, most pairs through one link, routes per pair or 0 if they differ, pieces) of a multipath ppermute.

    The routes :func:`netsim.algorithms.direct.multipath_permutation` plans: a pair
    crossing r >= 2 axes sends piece j in dimension order from its (j mod r)-th axis;
    a pair along one axis sends two halves with opposite tie-breaks, as ``direct``.

    Examples
    --------
    >>> multipath_loads((4, 4), (False, False), [(0, 15)])   # the book's corner to corner: 6 hops, two routes
    (6, 1, 2, 2)
    """
    coords = [(np.unravel_index(a, tuple(dims)), np.unravel_index(b, tuple(dims))) for a, b in pairs]
    crossed = [[axis for axis in range(len(dims)) if int(x[axis]) != int(y[axis])] for x, y in coords]
    pieces = max([len(axes) for axes in crossed] + [2])
    users: dict[tuple[int, int, int], set[int]] = {}
    longest, spread = 0, set()
    for k, ((a, b), axes) in enumerate(zip(pairs, crossed, strict=True)):
        if len(axes) < 2:
            routes = [_route(dims, wraparound, a, b, tie) for tie in (1, -1)]
        else:
            routes = [_axis_first(dims, wraparound, a, b, axes[j % len(axes)]) for j in range(pieces)]
        distinct = {tuple(route) for route in routes}
        spread.add(len(distinct))
        longest = max([longest] + [len(route) for route in distinct])
        for link in {link for route in distinct for link in route}:
            users.setdefault(link, set()).add(k)
    return longest, max((len(u) for u in users.values()), default=1), spread.pop() if len(spread) == 1 else 0, pieces


def ports(dims: Sequence[int], wraparound: Sequence[bool], pairs: Sequence[tuple[int, int]]) -> int:
    """Axes along which the farthest pair of a ppermute differs (1 when nothing moves).

    Examples
    --------
    >>> ports((4, 4), (False, False), [(0, 15)]), ports((8,), (True,), [(0, 3)])
    (2, 1)
    """
    farthest, best = -1, 1
    for a, b in pairs:
        coords = np.unravel_index([a, b], tuple(dims))
        crossed = sum(int(c[0] != c[1]) for c in coords)
        hops = hops_between(dims, wraparound, a, b)
        if hops > farthest and crossed:
            farthest, best = hops, crossed
    return best
