"""Routes as link numbers, and the checks a schedule passes before it is played."""

from __future__ import annotations

import weakref
from typing import Any, ClassVar

import numpy as np

from netsim.columnar import factorize, index_dtype
from netsim.engine.columns import RouteList, shared_objects
from netsim.network.hops import one_hop
from netsim.network.topology import LinkId, Topology

__all__ = ["Routes", "check_schedule", "link_rates"]


def link_rates(topology: Topology, link_ids: list[LinkId]) -> tuple[list[float], list[float]]:
    """Bandwidth (bytes/s) and latency (s) of each link in ``link_ids``, read afresh from the topology.

    Examples
    --------
    >>> from netsim.network.topology import ring
    >>> t = ring(4, bandwidth_Bps=1e9, latency_s=1e-6).degrade_link(0, 1, bandwidth_factor=0.5)
    >>> bandwidth, latency = link_rates(t, t.links)
    >>> sorted(set(bandwidth)), sorted(set(latency))
    ([500000000.0, 1000000000.0], [1e-06])
    """
    attributes = {(u, v, key): data for u, v, key, data in topology.graph.edges(keys=True, data=True)}
    return [float(attributes[link]["bandwidth_Bps"]) for link in link_ids], [float(attributes[link]["latency_s"]) for link in link_ids]


def check_schedule(transfers: dict[str, Any], computes: dict[str, Any], n_devices: int) -> None:
    """Refuse a schedule whose steps name devices outside the topology or wait for what they cannot see.

    ``transfers`` and ``computes`` are columns (:func:`~netsim.engine.columns.transfer_columns`,
    :func:`~netsim.engine.columns.compute_columns`). A step may wait only for other steps,
    and only for what is done where it starts: a transfer for arrivals at its source and
    compute steps on its source, a compute step for arrivals at and compute steps on its device.

    Raises
    ------
    ValueError
        Naming the first step (in order) that breaks a rule.

    Examples
    --------
    >>> from types import SimpleNamespace as T
    >>> from netsim.engine.columns import compute_columns, transfer_columns
    >>> moves = transfer_columns([T(src=0, dst=1, key="x", reduce=False, direction=1, deps=()), T(src=2, dst=3, key="x", reduce=False, direction=1, deps=(0,))])
    >>> check_schedule(moves, compute_columns([]), 4)
    Traceback (most recent call last):
    ...
    ValueError: transfer #1 waits for transfer #0, which arrives at device 1, not at its source 2
    """
    src, dst = transfers["src"], transfers["dst"]
    device = computes["device"]
    n, m = len(src), len(device)
    bad = np.flatnonzero((src < 0) | (src >= n_devices) | (dst < 0) | (dst >= n_devices))
    if len(bad):
        i = int(bad[0])
        named = int(src[i]) if not 0 <= src[i] < n_devices else int(dst[i])
        raise ValueError(f"transfer #{i} names device {named}, but the topology has {n_devices}")
    bad = np.flatnonzero((device < 0) | (device >= n_devices))
    if len(bad):
        raise ValueError(f"compute step #{int(bad[0])} names device {int(device[bad[0]])}, but the topology has {n_devices}")
    joins = np.flatnonzero(computes["join"] & (np.diff(computes["dep_ptr"]) == 0)) if m else ()
    if len(joins):
        raise ValueError(f"compute step #{int(joins[0])} is a join but waits for nothing: a join is done when its last dependency is")
    place = np.concatenate([dst, device]) if m else dst  # where each step is done
    for kind, columns, base, starts in (("transfer", transfers, 0, src), ("compute step", computes, n, device)):
        ptr, idx = columns["dep_ptr"], columns["dep_idx"]
        wrong, elsewhere = _bad_dependencies(ptr, idx, base, starts, place, n + m)
        if wrong >= 0:
            i = int(np.searchsorted(ptr, wrong, side="right")) - 1
            deps = tuple(int(d) for d in idx[ptr[i] : ptr[i + 1]])
            raise ValueError(f"{kind} #{i} waits for {deps!r}, which are not other steps")
        if elsewhere >= 0:
            k = elsewhere
            i, d = int(np.searchsorted(ptr, k, side="right")) - 1, int(idx[k])
            what = f"transfer #{d}, which arrives at device" if d < n else f"compute step #{d - n}, which runs on device"
            mine = "its source" if kind == "transfer" else "its device"
            raise ValueError(f"{kind} #{i} waits for {what} {int(place[d])}, not at {mine} {int(starts[i])}")


def _bad_dependencies(ptr: np.ndarray, idx: np.ndarray, base: int, starts: np.ndarray, place: np.ndarray, n_steps: int) -> tuple[int, int]:
    """The first dependency entry that names no other step, and the first done elsewhere than its step starts (-1: none).

    Big schedules are checked in one compiled pass (:func:`netsim.engine.kernel_parts.first_bad_dependency`, no
    array of one entry per dependency); small ones on arrays, without loading numba.
    """
    if len(idx) >= _COMPILED_CHECK_MIN:
        from netsim.engine.kernel_parts import first_bad_dependency

        ptr, idx = np.asarray(ptr, np.int64), np.asarray(idx, np.int64)
        what, k = first_bad_dependency(ptr, idx, base, np.asarray(starts, np.int64), np.asarray(place, np.int64), n_steps)
        return (int(k), -1) if what == 1 else (-1, int(k))
    owner = np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))
    wrong = np.flatnonzero((idx < 0) | (idx >= n_steps) | (idx == owner + base))
    if len(wrong):
        return int(wrong[0]), -1
    elsewhere = np.flatnonzero(place[idx] != starts[owner])
    return -1, int(elsewhere[0]) if len(elsewhere) else -1


_COMPILED_CHECK_MIN = 100_000
"""Schedules with at least this many dependency entries are checked by one compiled pass."""

_GRIDS_KEPT = 8
_WAYS = 16
"""Route kinds per (src, dst): the two ties of dimension order, and dimension order from axis a (direction 2 + a)."""


def axis_first_route(topology: Topology, src: int, dst: int, first: int) -> tuple[LinkId, ...]:
    """Dimension-order route correcting axes ``first, first+1, ...`` (wrapping round) in turn.

    A transfer asks for it with ``direction = 2 + first``: the multipath ppermute sends a
    pair's pieces from different axes first, so they leave and arrive by different links.
    Ties on wrapped axes go forward. Where a link of it is down, the topology's detour.

    Examples
    --------
    >>> from netsim.network.topology import mesh
    >>> t = mesh((4, 4))
    >>> [t.link_name(link) for link in axis_first_route(t, 0, 5, 1)]
    ['(0,0)->(0,1)', '(0,1)->(1,1)']
    """
    here, target = list(topology.coord(src)), topology.coord(dst)
    hops: list[LinkId] = []
    k = len(topology.dims)
    for axis in ((first + i) % k for i in range(k)):
        size = topology.dims[axis]
        forward = (target[axis] - here[axis]) % size
        if topology.wraparound[axis]:
            backward = size - forward if forward else 0
            step, count = (1, forward) if forward <= backward else (-1, backward)
        else:
            step, count = (1 if target[axis] >= here[axis] else -1), abs(target[axis] - here[axis])
        for _ in range(count):
            u = topology.index(here)
            here[axis] = (here[axis] + step) % size
            hops.append((u, topology.index(here), (axis, step)))
    if not all(topology.graph.has_edge(*hop) for hop in hops):
        return topology.route(src, dst)
    return tuple(hops)


class Routes:
    """Routes as tuples of link numbers, computed once per (src, dst, direction) of a topology.

    Kept between runs on the same topology (a sweep plays the same pairs again
    and again); routes depend only on the grid, never on link bandwidths or
    latencies, which are read afresh for every run.
    """

    _cache: ClassVar[weakref.WeakKeyDictionary[Topology, Routes]] = weakref.WeakKeyDictionary()
    _grids: ClassVar[dict[tuple, dict[int, tuple[LinkId, ...]]]] = {}
    """Routes as link ids by grid (dims, wraparound, links, coordinates), for the last few grids: a
    topology built afresh for each run (``ring(1024)``) finds its routes there."""

    def __init__(self, topology: Topology) -> None:
        self.owner = weakref.ref(topology)  # (a strong reference would keep the cache's key alive)
        self.link_ids: list[LinkId] = topology.links
        self.number = {link: k for k, link in enumerate(self.link_ids)}
        self.known: dict[int, tuple[tuple[int, ...], tuple[LinkId, ...]]] = {}
        self._table: tuple[np.ndarray, np.ndarray] | None = None
        grid = (tuple(topology.dims), tuple(topology.wraparound), frozenset(self.link_ids), tuple(map(topology.coord, range(topology.n_devices))))
        found = Routes._grids.pop(grid, None)
        self.of_grid: dict[int, tuple[LinkId, ...]] = {} if found is None else found
        Routes._grids[grid] = self.of_grid  # (the most recent last)
        while len(Routes._grids) > _GRIDS_KEPT:
            Routes._grids.pop(next(iter(Routes._grids)))

    @classmethod
    def of_topology(cls, topology: Topology) -> Routes:
        routes = cls._cache.get(topology)
        if routes is None or routes.owner() is not topology or len(routes.link_ids) != topology.graph.number_of_edges():
            routes = cls._cache[topology] = cls(topology)
        return routes

    def distinct(self, topology: Topology, columns: dict[str, Any]) -> tuple[np.ndarray, list[tuple[int, ...]], list[tuple[LinkId, ...]]]:
        """Per transfer, the number of its route among the distinct routes; those routes as link
        numbers and as link ids."""
        n = topology.n_devices
        direction = np.asarray(columns["direction"])
        pair = np.multiply(columns["src"], n, dtype=np.int64)  # src n + dst
        pair += columns["dst"] if columns.get("route_dst") is None else columns["route_dst"]
        pairs, code = factorize(pair)  # (numbered first: their range, n^2, is narrower than the codes')
        del pair
        code = code.astype(np.int64, copy=False)
        code *= _WAYS
        code += np.where(direction >= 2, direction + 1, direction > 0)  # 0, 1: the ties; 3 + a: axis a first
        numbered, inverse = factorize(code)  # (pair number) 16 + way, in the order of (src n + dst) 16 + way
        del code
        inverse = inverse.astype(index_dtype(len(numbered)), copy=False)  # (4 bytes a transfer: the run keeps it, as its routes' columns)
        unique = pairs[numbered // _WAYS] * _WAYS + numbered % _WAYS
        self._one_hops(topology, unique)
        as_numbers, as_ids = [], []
        for c in unique.tolist():
            known = self.known.get(c)
            if known is None:
                route = self.of_grid.get(c)
                if route is None:
                    pair, way = divmod(c, _WAYS)
                    src, dst = pair // n, pair % n
                    route = topology.route(src, dst, 1 if way else -1) if way < 2 else axis_first_route(topology, src, dst, way - 3)
                    self.of_grid[c] = route
                known = self.known[c] = (tuple(self.number[link] for link in route), route)
            as_numbers.append(known[0])
            as_ids.append(known[1])
        aliases = columns.get("aliases")
        if aliases is not None:  # (a link stands for the links a shift moves onto it: each hop taken on the one it stands for)
            link = aliases.link.tolist()
            as_numbers = [tuple(link[k] for k in route) for route in as_numbers]
            as_ids = [tuple(self.link_ids[k] for k in route) for route in as_numbers]
        inverse.flags.writeable = False
        return inverse, as_numbers, as_ids

    def _one_hops(self, topology: Topology, codes: np.ndarray) -> None:
        """Know the routes of ``codes`` that are one link of dimension-order routing, all at once (no link down)."""
        if topology.down_links or len(codes) < 64:
            return
        pair, way = np.divmod(codes, _WAYS)
        src, dst = np.divmod(pair, topology.n_devices)
        axis, step = one_hop(topology, src, dst, np.where(way == 1, 1, -1))
        take = np.flatnonzero((way < 2) & (axis >= 0))
        k = len(topology.dims)
        number, head = self._link_table(topology)  # the link leaving u along (axis, step), and where it goes
        slot = (src[take] * k + axis[take]) * 2 + (step[take] > 0)
        link = number[slot]
        found = (link >= 0) & (head[slot] == dst[take])  # (else the route is not a link of the graph: Topology.route says so)
        ids = self.link_ids
        for c, j in zip(codes[take[found]].tolist(), link[found].tolist(), strict=True):
            if c not in self.known:
                self.known[c] = ((j,), (ids[j],))

    def _link_table(self, topology: Topology) -> tuple[np.ndarray, np.ndarray]:
        """Per (device, axis, step) of the grid, the number of the link ``(u, v, (axis, step))`` and its ``v`` (-1: none)."""
        if self._table is None:
            k = len(topology.dims)
            number = np.full(topology.n_devices * k * 2, -1, np.int64)
            head = np.full(len(number), -1, np.int64)
            for j, (u, v, key) in enumerate(self.link_ids):
                if u < topology.n_devices and isinstance(key, tuple) and len(key) == 2 and key[0] in range(k) and key[1] in (1, -1):  # (no NIC)
                    slot = (u * k + key[0]) * 2 + (key[1] > 0)
                    number[slot], head[slot] = j, v
            self._table = (number, head)
        return self._table

    def of(self, topology: Topology, columns: dict[str, Any]) -> tuple[list[tuple[int, ...]], list[tuple[LinkId, ...]]]:
        """Per transfer: its route as link numbers, and as link ids (a :class:`RouteList` that keeps,
        as its columns, each transfer's number among the distinct routes and those routes)."""
        inverse, numbers, ids = self.distinct(topology, columns)
        return shared_objects(numbers)[inverse].tolist(), RouteList(inverse, ids)
