"""The playback and its transfers as NumPy arrays, read once for every check, and the helpers the checks share.

:class:`_Arrays` holds the columns; :func:`_feeding` and :func:`_dependency_order` read
the transfers' dependencies for the ``chunks`` replay; :func:`_later`, :func:`_slack`
and :func:`_first` compare times within rounding and name the first fault.
"""

from __future__ import annotations

import functools
from array import array
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from netsim.checks.errors import InvariantError
from netsim.columnar import signed_ints as _integers
from netsim.columnar import stable_order
from netsim.engine import Playback, RouteList, TransferLike, as_array, transfer_columns
from netsim.engine.columns import compute_columns
from netsim.network.topology import Topology

COMPILED_MIN = 20_000
"""Runs of at least this many transfers (or link crossings) check compiled first; smaller ones need not load numba."""


def _compiled_first(count: int) -> bool:
    """Whether a check over ``count`` transfers or crossings runs its compiled pass first (:data:`COMPILED_MIN`, read when called)."""
    return count >= COMPILED_MIN


def _slack(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rounding allowed when comparing two arrays of times."""
    return 1e-9 * np.maximum(np.abs(a), np.abs(b)) + 1e-15


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _later(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a > b + _slack(a, b)``, elementwise: ``a`` is later than ``b`` beyond rounding.

    Only where ``a > b`` at all is the slack worked out (few places, if any).
    """
    later = a > b
    suspects = np.flatnonzero(later)
    if len(suspects):
        x, y = a[suspects], b[suspects]
        later[suspects] = x > y + _slack(x, y)
    return later


class _Arrays:
    """The playback and the transfers as NumPy arrays, built once for every check.

    Read from ``transfers.columns()`` and ``playback.hops.columns`` when they offer
    them (a :class:`~netsim.algorithms.transfers.TransferTable`, a :class:`~netsim.engine.HopList`),
    from the objects otherwise (plain sequences, as the tests corrupt them).

    Routes are kept per distinct route (``route_inverse`` numbers each transfer's);
    ``route_length`` and ``route_link`` spell them out per transfer. When every
    route is one link (``single_link``), ``route_link`` is each transfer's link.
    """

    def __init__(self, topology: Topology, transfers: Sequence[TransferLike], playback: Playback, computes: Sequence[Any] = ()) -> None:
        n = len(transfers)
        if not (len(playback.sent_at) == len(playback.arrived_at) == len(playback.nbytes) == len(playback.routes) == n):
            raise InvariantError("drained", f"the playback records {len(playback.arrived_at)} arrivals and {len(playback.routes)} routes for {n} transfers")
        columns = transfer_columns(transfers)
        self.src = _integers(columns["src"])  # (int32 from a TransferTable: products go through int64 below)
        self.dst = _integers(columns["dst"])
        self.reduce = np.asarray(columns["reduce"], bool)
        self.key_index = _integers(columns["key_index"])
        self.keys: list[Hashable] = list(columns["keys"])
        self.dep_ptr = _integers(columns["dep_ptr"])
        self.dep_idx = _integers(columns["dep_idx"])
        self.bundles: dict[Hashable, tuple[Hashable, ...]] = columns.get("bundles") or {}
        self.sent = as_array(playback.sent_at, float)
        self.arrived = as_array(playback.arrived_at, float)
        self.nbytes = as_array(playback.nbytes, np.int64)
        self.links = list(playback.links)
        index = {link: k for k, link in enumerate(self.links)}
        self.link_u = np.fromiter((u for u, _, _ in self.links), np.int64, len(self.links))
        self.link_v = np.fromiter((v for _, v, _ in self.links), np.int64, len(self.links))
        aliases = columns.get("aliases")
        if aliases is not None:  # played on representatives: devices counted as the ones they stand for
            self.link_u, self.link_v = aliases.device[self.link_u], aliases.device[self.link_v]
        hops = playback.hops
        hop_columns = getattr(hops, "columns", None)
        self._orders: dict[str, np.ndarray] = {}
        self._shared_order: Callable[[str], np.ndarray] | None = None  # a HopList's, for the columns it numbers alike
        if isinstance(hop_columns, dict) and hasattr(hops, "link_ids"):
            link_ids = list(hops.link_ids)
            renumber = np.fromiter((index.get(link, -1) for link in link_ids), np.int64, len(link_ids))
            raw_link = _integers(hop_columns["link"])
            self.hop_transfer = _integers(hop_columns["transfer"])
            same_numbers = np.array_equal(renumber, np.arange(len(renumber)))  # the playback's links, in the hops' order
            self.hop_link = raw_link if same_numbers else renumber[raw_link] if len(raw_link) else np.zeros(0, np.int64)
            self.hop_start = np.asarray(hop_columns["start"], float)
            self.hop_end = np.asarray(hop_columns["end"], float)
            self.hop_link_id: Callable[[int], Any] = lambda k: link_ids[int(raw_link[k])]
            order = getattr(hops, "order", None)
            if callable(order) and same_numbers:  # a HopList sorts once for the checks and the critical path
                self._shared_order = order
        else:
            h = len(hops)
            self.hop_transfer = np.fromiter((hop.transfer for hop in hops), np.int64, h)
            self.hop_link = np.fromiter((index.get(hop.link, -1) for hop in hops), np.int64, h)
            self.hop_start = np.fromiter((hop.start for hop in hops), float, h)
            self.hop_end = np.fromiter((hop.end for hop in hops), float, h)
            self.hop_link_id = lambda k: hops[k].link
        self.route_inverse, self.distinct_length, self.distinct_links = _route_arrays(playback.routes, index)
        self.single_link = bool(len(self.distinct_length)) and bool((self.distinct_length == 1).all())
        self.topology = topology
        self.deps_before: bool | None = None  # whether each transfer waits only for earlier ones, once a check found out
        # Compute steps (numbered after the transfers in anyone's dependencies) and when each step is done.
        self.computes = compute_columns(computes)
        self.started = as_array(playback.computes.started_at, float) if len(computes) else np.zeros(0)
        self.ended = as_array(playback.computes.ended_at, float) if len(computes) else np.zeros(0)
        if len(self.started) != len(computes) or len(self.ended) != len(computes):
            raise InvariantError("drained", f"the playback records {len(self.ended)} compute steps for {len(computes)}")
        self.done = np.concatenate([self.arrived, self.ended]) if len(computes) else self.arrived

    def by(self, column: str) -> np.ndarray:
        """Hop positions sorted stably by ``"transfer"`` or ``"link"``."""
        order = self._orders.get(column)
        if order is None:
            sort = self._shared_order or (lambda name: stable_order(self.hop_transfer if name == "transfer" else self.hop_link))
            order = self._orders[column] = sort(column)
        return order

    @functools.cached_property
    def route_length(self) -> np.ndarray:
        """Per transfer, the number of links of its route."""
        return self.distinct_length[self.route_inverse]

    @functools.cached_property
    def route_link(self) -> np.ndarray:
        """All routes' links (numbers into ``links``, -1 if absent), end to end in transfer order."""
        if self.single_link:
            return self.distinct_links[self.route_inverse]
        starts = np.zeros(len(self.distinct_length), np.int64)
        np.cumsum(self.distinct_length[:-1], out=starts[1:])
        route_length = self.route_length
        ptr = np.zeros(len(route_length) + 1, np.int64)
        np.cumsum(route_length, out=ptr[1:])
        positions = np.repeat(starts[self.route_inverse] - ptr[:-1], route_length)
        positions += np.arange(int(ptr[-1]))
        return self.distinct_links[positions]

    @functools.cached_property
    def waiting(self) -> np.ndarray:
        """Per dependency (entry of ``dep_idx``), the transfer that waits for it."""
        return np.repeat(np.arange(len(self.src), dtype=np.int64), np.diff(self.dep_ptr))


def _route_arrays(routes: Sequence[Sequence[Any]], index: dict[Any, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Routes by identity: per transfer the number of its distinct route, each distinct route's length,
    and their links (as numbers in ``index``, -1 if absent) end to end.

    The engine hands out one tuple object per distinct route, shared by every
    transfer taking it: each distinct object is read once.
    """
    n = len(routes)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    kept = routes.columns() if isinstance(routes, RouteList) else None
    if kept is not None:  # the engine's own numbering, the list unchanged since
        inverse, distinct = kept
        return inverse, *_distinct_arrays(distinct, index)
    identity = np.frombuffer(array("Q", map(id, routes)), np.uint64)
    distinct_ids = np.unique(identity)
    inverse = np.searchsorted(distinct_ids, identity)
    del identity
    first = np.empty(len(distinct_ids), np.int64)
    first[inverse] = np.arange(n)  # a transfer on each distinct route (any: they share the object)
    return inverse, *_distinct_arrays([routes[k] for k in first.tolist()], index)


def _distinct_arrays(distinct: Sequence[Sequence[Any]], index: dict[Any, int]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter(map(len, distinct), np.int64, len(distinct))
    links = np.fromiter((index.get(link, -1) for route in distinct for link in route), np.int64, int(lengths.sum()))
    return lengths, links


def _feeding(a: _Arrays) -> tuple[np.ndarray, np.ndarray]:
    """Per transfer, the arrivals of its own chunk at its source it waits for, by arrival (then index):
    transfer i's are ``fed[ptr[i]:ptr[i+1]]``."""
    n = len(a.src)
    owner, dep = a.waiting, a.dep_idx
    same = a.dst[dep] == a.src[owner]
    same &= a.key_index[dep] == a.key_index[owner]
    if not same.all():
        owner, dep = owner[same], dep[same]
    del same
    counts = np.bincount(owner, minlength=n)
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    if len(counts) and int(counts.max()) > 1:  # (with one each, ``owner`` is in order already)
        dep = dep[np.lexsort((dep, a.arrived[dep], owner))]
    return ptr, dep


def _dependency_order(a: _Arrays) -> Sequence[int]:
    """Indices with every transfer after the ones it waits for (index order when that already holds)."""
    n = len(a.src)
    if a.deps_before or (a.deps_before is None and (a.dep_idx < a.waiting).all()):
        return range(n)
    waiting = a.waiting
    missing = np.diff(a.dep_ptr).tolist()
    dependents: list[list[int]] = [[] for _ in range(n)]
    for i, d in zip(waiting.tolist(), a.dep_idx.tolist(), strict=True):
        dependents[d].append(i)
    order = [i for i, m in enumerate(missing) if m == 0]
    for i in order:
        for j in dependents[i]:
            missing[j] -= 1
            if missing[j] == 0:
                order.append(j)
    if len(order) < n:
        cycle = [i for i, m in enumerate(missing) if m][:10]
        raise InvariantError("drained", f"transfers {cycle} wait for each other in a cycle, yet the run finished")
    return order
