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
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import networkx as nx

from netsim.network.chips import DEVICE_FIELDS, check_device

__all__ = ["DEFAULT_BANDWIDTH_BPS", "DEFAULT_LATENCY_S", "DEVICE_FIELDS", "LinkId", "Topology", "UnreachableError", "mesh", "ring", "torus"]

DEFAULT_BANDWIDTH_BPS = 45e9
"""One-way bandwidth of one link direction, TPU v5e-like (the scaling book's 45 GB/s)."""
DEFAULT_LATENCY_S = 1e-6
"""Per-hop latency (about 1 us on TPU ICI, per the scaling book)."""

LinkId = tuple[int, int, tuple[int, int]]
"""A directed link: ``(source device, destination device, (axis, step))``."""


class UnreachableError(ValueError):
    """No surviving route joins two devices (links are down): the topology cannot run this.

    Attributes
    ----------
    src, dst : int
        The devices that cannot reach each other.
    """

    def __init__(self, message: str, src: int, dst: int) -> None:
        super().__init__(message)
        self.src, self.dst = src, dst


@dataclass(frozen=True)
class Topology:
    """Devices on a ring, torus or mesh, and the directed links between them.

    Build one with :func:`ring`, :func:`torus` or :func:`mesh` rather than by hand.

    Attributes
    ----------
    graph : networkx.MultiDiGraph
        Nodes are device indices with a ``coord`` attribute and the :data:`DEVICE_FIELDS`
        that are known; edges are link directions keyed ``(axis, step)`` with ``bandwidth_Bps`` and ``latency_s``.
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

    def device(self, d: int | Sequence[int]) -> dict | int:
        """A device's compute facts: a new dict with the keys of :data:`DEVICE_FIELDS`.

        ``peak_flops`` (FLOP/s), ``hbm_bandwidth_Bps`` (bytes/s) and
        ``hbm_capacity_bytes``, None where unknown; ValueError if ``d`` is not a device here.
        A tuple of coordinates gives the device's index instead (as :meth:`index`).

        Examples
        --------
        >>> ring(4, device={"peak_flops": 1.97e14}).device(0), torus((4, 4)).device((1, 2))
        ({'peak_flops': 197000000000000.0, 'hbm_bandwidth_Bps': None, 'hbm_capacity_bytes': None}, 6)
        """
        if isinstance(d, (tuple, list)):
            if len(d) != len(self.dims) or not all(isinstance(c, numbers.Integral) and 0 <= c < n for c, n in zip(d, self.dims, strict=False)):
                raise ValueError(f"coordinates {tuple(d)!r} are not on {self.name} (dims {tuple(self.dims)})")
            return self.index(d)
        if not isinstance(d, numbers.Integral) or isinstance(d, bool) or not 0 <= d < self.n_devices:
            raise ValueError(f"device {d!r} is not on {self.name} (devices 0..{self.n_devices - 1})")
        node = self.graph.nodes[int(d)]
        return {field: node.get(field) for field in DEVICE_FIELDS}

    def index(self, coord: Sequence[int]) -> int:
        """The device at coordinates ``coord`` (row-major).

        Examples
        --------
        >>> torus((4, 4)).index((1, 2))
        6
        """
        index = 0
        for c, size in zip(coord, self.dims, strict=True):
            index = index * size + c
        return index

    def link(self, link: LinkId) -> dict:
        """Attributes (``bandwidth_Bps``, ``latency_s``) of a directed link."""
        u, v, key = link
        return self.graph.edges[u, v, key]

    def link_name(self, link: LinkId) -> str:
        """Human name such as ``(0,1)->(0,2)``, or ``3->4`` on a ring; ``0->1 (wrap)`` is the second cable of an axis of 2."""
        u, v, (axis, step) = link
        wrap = " (wrap)" if self.dims[axis] == 2 and not 0 <= self.coord(u)[axis] + step < 2 else ""
        return f"{self._node_name(u)}->{self._node_name(v)}{wrap}"

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
        return replace(self, graph=graph)

    def with_device(self, device: Mapping[str, float | int | None]) -> Topology:
        """A copy in which every device has the given compute facts (as ``device`` of :func:`torus`).

        Fields left out or None keep their value; a bad mapping is a ValueError.

        Examples
        --------
        >>> t = ring(2, device={"peak_flops": 1e12}).with_device({"hbm_capacity_bytes": 2**30})
        >>> t.device(1)
        {'peak_flops': 1000000000000.0, 'hbm_bandwidth_Bps': None, 'hbm_capacity_bytes': 1073741824}
        """
        facts = check_device(device)
        graph = self.graph.copy()
        for node in graph.nodes:
            graph.nodes[node].update(facts)
        return replace(self, graph=graph)

    def route(self, src: int, dst: int, tie: int = 1) -> tuple[LinkId, ...]:
        """Links a message follows from ``src`` to ``dst``: dimension-order routing.

        Axes are corrected one after the other, lowest first. On an axis with
        wraparound the message goes the shorter way round; when both ways are
        equally long it goes in the direction ``tie`` (+1 or -1), so that the two
        halves of a bidirectional ring on two devices use both links.

        When links are down (:meth:`fail_link`) and that route crosses one, the
        message takes a shortest route over the surviving links instead (breadth
        first, in a fixed link order, so the detour is the same every run).

        Raises
        ------
        UnreachableError
            If no surviving route joins ``src`` to ``dst``.

        Examples
        --------
        >>> t = torus((4, 4))
        >>> [t.link_name(l) for l in t.route(t.index((0, 0)), t.index((1, 3)))]
        ['(0,0)->(1,0)', '(1,0)->(1,3)']
        >>> ring(4).route(0, 2, tie=-1)
        ((0, 3, (0, -1)), (3, 2, (0, -1)))
        """
        if tie not in (1, -1):
            raise ValueError(f"tie must be +1 or -1, got {tie!r}")
        hops = _route(self, src, dst, tie)
        if self.graph.graph.get("down") and not all(self.graph.has_edge(*hop) for hop in hops):
            return self._detour(src, dst)
        return hops

    @property
    def down_links(self) -> tuple[LinkId, ...]:
        """Links taken out by :meth:`fail_link`, in the order they failed."""
        return tuple(self.graph.graph.get("down", ()))

    @property
    def degraded_links(self) -> tuple[LinkId, ...]:
        """Links changed by :meth:`degrade_link`, in the order they were changed."""
        return tuple(self.graph.graph.get("degraded", ()))

    def fail_link(self, src: int, dst: int, *, both_ways: bool = True) -> Topology:
        """A copy in which the link between two neighbours is down.

        A cable is two link directions; ``both_ways=False`` takes out only
        ``src -> dst``. Where an axis of size 2 wraps around, both cables between
        the two devices go down. Messages whose dimension-order route crosses a down
        link take a shortest route over the surviving links instead (see
        :meth:`route`); routes that avoid it do not change.

        Raises
        ------
        ValueError
            If the devices are not neighbours or the link is already down.

        Examples
        --------
        >>> line = ring(4).fail_link(3, 0)  # the ring becomes a line 0-1-2-3
        >>> [line.link_name(hop) for hop in line.route(3, 0)]
        ['3->2', '2->1', '1->0']
        >>> line.down_links
        ((3, 0, (0, 1)), (0, 3, (0, -1)))
        """
        graph = self.graph.copy()
        links = self._neighbour_links(src, dst, both_ways)
        graph.remove_edges_from(links)
        graph.graph["down"] = (*self.down_links, *links)
        graph.graph["detours"] = {}
        return replace(self, graph=graph)

    def degrade_link(
        self,
        src: int,
        dst: int,
        *,
        bandwidth_factor: float | None = None,
        bandwidth_Bps: float | None = None,
        latency_s: float | None = None,
        both_ways: bool = True,
    ) -> Topology:
        """A copy in which the link between two neighbours is slower (or faster).

        Parameters
        ----------
        src, dst : int
            Devices at the two ends of the link.
        bandwidth_factor : float, optional
            Multiply the link's bandwidth, e.g. 0.1 for a link at 10 %.
        bandwidth_Bps : float, optional
            Or set the bandwidth outright.
        latency_s : float, optional
            Set the per-hop latency.
        both_ways : bool, default True
            Change both directions, or only ``src -> dst``.

        Raises
        ------
        ValueError
            If nothing is changed, a value is not positive and finite, the devices
            are not neighbours or the link is down.

        Examples
        --------
        >>> slow = ring(4, bandwidth_Bps=1e9).degrade_link(1, 2, bandwidth_factor=0.5, both_ways=False)
        >>> slow.link((1, 2, (0, 1)))["bandwidth_Bps"], slow.link((2, 1, (0, -1)))["bandwidth_Bps"]
        (500000000.0, 1000000000.0)
        """
        if bandwidth_factor is None and bandwidth_Bps is None and latency_s is None:
            raise ValueError("degrade_link needs bandwidth_factor, bandwidth_Bps or latency_s")
        if bandwidth_factor is not None and bandwidth_Bps is not None:
            raise ValueError(f"give bandwidth_factor or bandwidth_Bps, not both (got {bandwidth_factor!r} and {bandwidth_Bps!r})")
        if bandwidth_factor is not None and not 0 < bandwidth_factor < float("inf"):
            raise ValueError(f"bandwidth_factor must be a positive finite number, got {bandwidth_factor!r}")
        graph = self.graph.copy()
        links = self._neighbour_links(src, dst, both_ways)
        for u, v, key in links:
            data = graph.edges[u, v, key]
            bandwidth = data["bandwidth_Bps"] * bandwidth_factor if bandwidth_factor is not None else bandwidth_Bps
            bandwidth = data["bandwidth_Bps"] if bandwidth is None else float(bandwidth)
            latency = data["latency_s"] if latency_s is None else float(latency_s)
            _check_link(bandwidth, latency, floor=1.0)  # a slower link is down: say so
            data.update(bandwidth_Bps=bandwidth, latency_s=latency)
        graph.graph["degraded"] = (*self.degraded_links, *links)
        return replace(self, graph=graph)

    def _neighbour_links(self, src: int, dst: int, both_ways: bool) -> list[LinkId]:
        for device in (src, dst):
            if isinstance(device, bool) or not isinstance(device, int) or not 0 <= device < self.n_devices:
                raise ValueError(f"device {device!r} is not on {self.name} (devices 0..{self.n_devices - 1})")
        links: list[LinkId] = []
        for u, v in ((src, dst), (dst, src)) if both_ways else ((src, dst),):
            here = [(u, v, key) for key in self.graph[u].get(v, {})]
            if not here:
                if any((a, b) == (u, v) for a, b, _ in self.down_links):
                    raise ValueError(f"link {self._node_name(u)}->{self._node_name(v)} on {self.name} is already down")
                raise ValueError(f"devices {self._node_name(u)} and {self._node_name(v)} are not neighbours on {self.name}; a link joins two neighbours")
            links += here
        return links

    def _detour(self, src: int, dst: int) -> tuple[LinkId, ...]:
        """A shortest route over the surviving links (breadth first, in link order)."""
        cache = self.graph.graph.setdefault("detours", {})
        if src not in cache:
            parent: dict[int, LinkId | None] = {src: None}
            frontier = [src]
            while frontier:
                following = []
                for u in frontier:
                    for link in self.graph.out_edges(u, keys=True):
                        if link[1] not in parent:
                            parent[link[1]] = link
                            following.append(link[1])
                frontier = following
            cache[src] = parent
        parent = cache[src]
        if dst not in parent:
            down = ", ".join(self.link_name(link) for link in self.down_links[:8]) + (", ..." if len(self.down_links) > 8 else "")
            raise UnreachableError(
                f"no route from device {self._node_name(src)} to device {self._node_name(dst)} on {self.name}: links down: {down}",
                src,
                dst,
            )
        hops: list[LinkId] = []
        while (link := parent[dst]) is not None:
            hops.append(link)
            dst = link[0]
        return tuple(reversed(hops))


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
            u = topology.index(here)
            here[axis] = (here[axis] + step) % size
            hops.append((u, topology.index(here), (axis, step)))
    return tuple(hops)


def _check_link(bandwidth_Bps: float, latency_s: float, floor: float = 0.0) -> None:
    if not (bandwidth_Bps > 0 and bandwidth_Bps >= floor) or bandwidth_Bps == float("inf"):
        raise ValueError(f"a link's bandwidth must be {f'at least {floor:g} B/s (the floor)' if floor else 'positive'} and finite, got {bandwidth_Bps:.3g} B/s")
    if not latency_s >= 0 or latency_s == float("inf"):
        raise ValueError(f"a link's latency must be zero or positive and finite, got {latency_s!r} s")


def torus(
    dims: Sequence[int],
    wraparound: bool | Sequence[bool] = True,
    bandwidth_Bps: float = DEFAULT_BANDWIDTH_BPS,
    latency_s: float = DEFAULT_LATENCY_S,
    name: str | None = None,
    device: Mapping[str, float | int | None] | None = None,
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
    device : mapping, optional
        Compute facts of every device, keys from :data:`DEVICE_FIELDS`: ``peak_flops`` (FLOP/s),
        ``hbm_bandwidth_Bps`` (bytes/s), ``hbm_capacity_bytes`` (whole); left out or None: unknown.

    Returns
    -------
    Topology

    Raises
    ------
    ValueError
        If a size is not a positive integer, the wraparound flags do not match the
        axes, a link parameter or a device fact is not positive and finite, or a
        device field is unknown.

    Examples
    --------
    >>> t = torus((4, 4))
    >>> t.n_devices, t.graph.number_of_edges()
    (16, 64)
    >>> torus((2,)).graph.number_of_edges()  # the wrap cable is a second link
    4
    >>> torus((4, 2), wraparound=(True, False)).graph.number_of_edges()
    24
    >>> torus((2, 2), device={"hbm_bandwidth_Bps": 8.1e11}).device(3)["hbm_bandwidth_Bps"]
    810000000000.0
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
    facts = check_device(device)
    graph = nx.MultiDiGraph()
    coords = list(itertools.product(*(range(d) for d in dims)))
    for index, coord in enumerate(coords):
        graph.add_node(index, coord=coord, **facts)
    attrs = {"bandwidth_Bps": float(bandwidth_Bps), "latency_s": float(latency_s)}
    topology = Topology(graph, dims, wraps, name or _default_name(dims, wraps))
    for coord in coords:
        u = topology.index(coord)
        for axis, size in enumerate(dims):
            for step in (1, -1):
                c = coord[axis] + step
                if size == 1 or (not wraps[axis] and not 0 <= c < size):
                    continue
                neighbour = list(coord)
                neighbour[axis] = c % size
                graph.add_edge(u, topology.index(neighbour), key=(axis, step), **attrs)
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
    device: Mapping[str, float | int | None] | None = None,
) -> Topology:
    """A bidirectional ring of ``n`` devices, i linked to i-1 and i+1 (mod n); other parameters as :func:`torus` (``device``: compute facts).

    Examples
    --------
    >>> r = ring(8)
    >>> r.n_devices, r.graph.number_of_edges(), r.name
    (8, 16, 'ring8')
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return torus((n,), True, bandwidth_Bps, latency_s, name, device)


def mesh(
    dims: Sequence[int],
    bandwidth_Bps: float = DEFAULT_BANDWIDTH_BPS,
    latency_s: float = DEFAULT_LATENCY_S,
    name: str | None = None,
    device: Mapping[str, float | int | None] | None = None,
) -> Topology:
    """A grid without wraparound on any axis (a line when one-dimensional); parameters as :func:`torus` (``device``: compute facts).

    Examples
    --------
    >>> mesh((4,)).graph.number_of_edges()
    6
    """
    return torus(dims, False, bandwidth_Bps, latency_s, name, device)
