"""Interconnect topologies: devices, directed links and the routes between them.

A topology is a NetworkX :class:`~networkx.MultiDiGraph` with one node per device
and one edge per *direction* of each physical link (ICI links are full duplex, so
a cable between two chips is two independent edges). Devices are numbered
0..n-1 in row-major order of their coordinates on a ring, torus or mesh.

Why not :func:`networkx.grid_graph`? On an axis of size 2 with wraparound, the
wrap cable is a second physical link between the same two chips; a simple graph
merges it into the first. On an axis of size 1 it would add a self-loop. Here
every edge carries a ``key`` ``(axis, step)`` (``step`` is +1 or -1) so parallel
links stay distinct and no self-loops appear.

This module knows nothing of SimPy or collectives.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx

__all__ = [
    "DEFAULT_BANDWIDTH_BPS",
    "DEFAULT_LATENCY_S",
    "LinkId",
    "Topology",
    "mesh",
    "ring",
    "torus",
]

DEFAULT_BANDWIDTH_BPS = 45e9
"""One-way bandwidth of one link direction, TPU v5e-like (the scaling book's 45 GB/s)."""
DEFAULT_LATENCY_S = 1e-6
"""Per-hop latency (about 1 us on TPU ICI, per the scaling book)."""

LinkId = tuple[int, int, tuple[int, int]]
"""A directed link: ``(source device, destination device, (axis, step))``."""


@dataclass(frozen=True)
class Topology:
    """Devices on a ring, torus or mesh, and the directed links between them.

    Build one with :func:`ring`, :func:`torus` or :func:`mesh` rather than by hand.

    Attributes
    ----------
    graph : networkx.MultiDiGraph
        Nodes are device indices with a ``coord`` attribute; edges are link
        directions keyed ``(axis, step)`` with ``bandwidth_Bps`` and ``latency_s``.
    dims : tuple of int
        Size of each axis.
    wraparound : tuple of bool
        Whether each axis closes into a ring.
    name : str
        A label used in reports.
    """

    graph: nx.MultiDiGraph
    dims: tuple[int, ...]
    wraparound: tuple[bool, ...]
    name: str

    @property
    def n_devices(self) -> int:
        """Number of devices."""
        return self.graph.number_of_nodes()

    @property
    def links(self) -> list[LinkId]:
        """Every directed link, in a fixed order."""
        return list(self.graph.edges(keys=True))

    def coord(self, device: int) -> tuple[int, ...]:
        """Coordinates of a device on the grid."""
        return self.graph.nodes[device]["coord"]

    def device(self, coord: Sequence[int]) -> int:
        """Device index at the given coordinates (row-major)."""
        index = 0
        for c, size in zip(coord, self.dims, strict=True):
            index = index * size + c
        return index

    def link(self, link: LinkId) -> dict:
        """Attributes (``bandwidth_Bps``, ``latency_s``) of a directed link."""
        u, v, key = link
        return self.graph.edges[u, v, key]

    def link_name(self, link: LinkId) -> str:
        """Human name such as ``(0,1)->(0,2)``, or ``3->4`` on a ring."""
        u, v, _ = link
        return f"{self._node_name(u)}->{self._node_name(v)}"

    def _node_name(self, device: int) -> str:
        if len(self.dims) == 1:
            return str(device)
        return "(" + ",".join(map(str, self.coord(device))) + ")"

    def with_links(self, bandwidth_Bps: float | None = None, latency_s: float | None = None) -> Topology:
        """A copy with every link's bandwidth and/or latency replaced.

        Examples
        --------
        >>> slow = ring(4).with_links(bandwidth_Bps=1e9)
        >>> slow.link((0, 1, (0, 1)))["bandwidth_Bps"]
        1000000000.0
        """
        _check_link(bandwidth_Bps if bandwidth_Bps is not None else 1.0, latency_s or 0.0)
        graph = self.graph.copy()
        for _, _, data in graph.edges(data=True):
            if bandwidth_Bps is not None:
                data["bandwidth_Bps"] = float(bandwidth_Bps)
            if latency_s is not None:
                data["latency_s"] = float(latency_s)
        return Topology(graph, self.dims, self.wraparound, self.name)

    def route(self, src: int, dst: int, tie: int = 1) -> tuple[LinkId, ...]:
        """Links a message follows from ``src`` to ``dst``: dimension-order routing.

        Axes are corrected one after the other, lowest first. On an axis with
        wraparound the message goes the shorter way round; when both ways are
        equally long it goes in the direction ``tie`` (+1 or -1), so that the two
        halves of a bidirectional ring on two devices use both links.

        Examples
        --------
        >>> t = torus((4, 4))
        >>> [t.link_name(l) for l in t.route(t.device((0, 0)), t.device((1, 3)))]
        ['(0,0)->(1,0)', '(1,0)->(1,3)']
        >>> ring(4).route(0, 2, tie=-1)
        ((0, 3, (0, -1)), (3, 2, (0, -1)))
        """
        if tie not in (1, -1):
            raise ValueError(f"tie must be +1 or -1, got {tie!r}")
        return _route(self, src, dst, tie)


def _route(topology: Topology, src: int, dst: int, tie: int) -> tuple[LinkId, ...]:
    here = list(topology.coord(src))
    target = topology.coord(dst)
    hops: list[LinkId] = []
    for axis, size in enumerate(topology.dims):
        forward = (target[axis] - here[axis]) % size
        if topology.wraparound[axis]:
            backward = size - forward if forward else 0
            if forward < backward or (forward == backward and tie > 0):
                step, count = 1, forward
            else:
                step, count = -1, backward
        else:
            step = 1 if target[axis] >= here[axis] else -1
            count = abs(target[axis] - here[axis])
        for _ in range(count):
            u = topology.device(here)
            here[axis] = (here[axis] + step) % size
            hops.append((u, topology.device(here), (axis, step)))
    return tuple(hops)


def _check_link(bandwidth_Bps: float, latency_s: float) -> None:
    if not bandwidth_Bps > 0 or bandwidth_Bps == float("inf"):
        raise ValueError(f"bandwidth_Bps must be a positive finite number, got {bandwidth_Bps!r}")
    if not latency_s >= 0 or latency_s == float("inf"):
        raise ValueError(f"latency_s must be zero or a positive finite number, got {latency_s!r}")


def torus(
    dims: Sequence[int],
    wraparound: bool | Sequence[bool] = True,
    bandwidth_Bps: float = DEFAULT_BANDWIDTH_BPS,
    latency_s: float = DEFAULT_LATENCY_S,
    name: str | None = None,
) -> Topology:
    """A torus (or, without wraparound, a mesh) of any number of axes.

    Parameters
    ----------
    dims : sequence of int
        Size of each axis, e.g. ``(4, 4)`` or ``(4, 4, 4)``.
    wraparound : bool or sequence of bool, default True
        Whether each axis closes into a ring; one flag for all axes or one per axis.
    bandwidth_Bps : float
        One-way bandwidth of each link direction, bytes per second.
    latency_s : float
        Per-hop latency, seconds.
    name : str, optional
        Label for reports; defaults to e.g. ``torus4x4``.

    Returns
    -------
    Topology

    Raises
    ------
    ValueError
        If a size is not a positive integer, the wraparound flags do not match the
        axes, or a link parameter is not positive and finite.

    Examples
    --------
    >>> t = torus((4, 4))
    >>> t.n_devices, t.graph.number_of_edges()
    (16, 64)
    >>> torus((2,)).graph.number_of_edges()  # the wrap cable is a second link
    4
    >>> torus((4, 2), wraparound=(True, False)).graph.number_of_edges()
    24
    """
    dims = tuple(dims)
    if not dims or any(not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in dims):
        raise ValueError(f"dims must be a non-empty sequence of positive integers, got {dims!r}")
    if isinstance(wraparound, bool):
        wraps = (wraparound,) * len(dims)
    else:
        wraps = tuple(wraparound)
        if len(wraps) != len(dims) or not all(isinstance(w, bool) for w in wraps):
            raise ValueError(f"wraparound must be a bool or one bool per axis of {dims!r}, got {wraparound!r}")
    _check_link(bandwidth_Bps, latency_s)
    graph = nx.MultiDiGraph()
    coords = list(itertools.product(*(range(d) for d in dims)))
    for index, coord in enumerate(coords):
        graph.add_node(index, coord=coord)
    attrs = {"bandwidth_Bps": float(bandwidth_Bps), "latency_s": float(latency_s)}
    topology = Topology(graph, dims, wraps, name or _default_name(dims, wraps))
    for coord in coords:
        u = topology.device(coord)
        for axis, size in enumerate(dims):
            for step in (1, -1):
                c = coord[axis] + step
                if size == 1 or (not wraps[axis] and not 0 <= c < size):
                    continue
                neighbour = list(coord)
                neighbour[axis] = c % size
                graph.add_edge(u, topology.device(neighbour), key=(axis, step), **attrs)
    return topology


def _default_name(dims: tuple[int, ...], wraps: tuple[bool, ...]) -> str:
    shape = "x".join(map(str, dims))
    if len(dims) == 1:
        return f"ring{shape}" if wraps[0] else f"line{shape}"
    return f"torus{shape}" if all(wraps) else f"mesh{shape}" if not any(wraps) else f"torus{shape}-partial"


def ring(
    n: int,
    bandwidth_Bps: float = DEFAULT_BANDWIDTH_BPS,
    latency_s: float = DEFAULT_LATENCY_S,
    name: str | None = None,
) -> Topology:
    """A bidirectional ring of ``n`` devices: device i is linked to i-1 and i+1 (mod n).

    Examples
    --------
    >>> r = ring(8)
    >>> r.n_devices, r.graph.number_of_edges(), r.name
    (8, 16, 'ring8')
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return torus((n,), True, bandwidth_Bps, latency_s, name)


def mesh(
    dims: Sequence[int],
    bandwidth_Bps: float = DEFAULT_BANDWIDTH_BPS,
    latency_s: float = DEFAULT_LATENCY_S,
    name: str | None = None,
) -> Topology:
    """A grid without wraparound on any axis (a line when one-dimensional).

    Examples
    --------
    >>> mesh((4,)).graph.number_of_edges()
    6
    """
    return torus(dims, False, bandwidth_Bps, latency_s, name)
