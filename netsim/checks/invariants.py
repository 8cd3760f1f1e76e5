"""Invariants every run must satisfy, checked after every playback.

They hold for any correct schedule on any topology, so a violation is a bug in
netsim (an algorithm, the engine or the output assembly), never a user mistake:
:class:`InvariantError` is an :class:`~netsim.engine.EngineError`, which the CLI
reports as an internal error (exit code 3).

``drained``
    Every transfer was sent and arrived (the event queue drained and every device
    finished), after the arrivals it waits for, at finite times.
``delivery``
    Every transfer crossed exactly the links of its route, once each and in order,
    from its source to its destination: nothing lost, duplicated or delivered to the
    wrong device. Chunks never leave their group.
``link bytes``
    What each link counted (bytes, messages, busy time) equals the sum of the
    crossings recorded on it, and its crossings never overlap (one message at a time).
``device bytes``
    At every device, bytes in on its links minus bytes it received equals bytes out
    on its links minus bytes it sent: what it forwarded. Every chunk is the size it
    started with.
``chunks``
    Replaying the schedule symbolically (each chunk as the set of group members whose
    data it carries), every device ends with every block it should hold, carrying
    each member's contribution exactly once: the owner's block for a gather, the
    whole group's for a reduction. For schedules that send bundles (gathers): every
    transfer leaves a source that holds its chunk or bundle by then (or all the
    parts it makes the bundle from), nothing reaches a device twice, and opening
    the bundles each device ends with gives every chunk it wants, once.

All checks are linear in the number of transfers and link crossings.
"""

from __future__ import annotations

import functools
import itertools
import math
from array import array
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from netsim.algorithms.bundles import as_table, made_of_arrays, opened_codes
from netsim.columnar import factorize, in_sorted, stable_order
from netsim.engine import ArrayList, EngineError, Playback, TransferLike, as_array, transfer_columns
from netsim.network.topology import Topology

__all__ = ["InvariantError", "check_playback"]

_REPORT = "this is a bug in netsim, please report it"


class InvariantError(EngineError):
    """A run broke one of netsim's invariants: a bug in netsim, not in the input.

    Attributes
    ----------
    invariant : str
        Which one (``"drained"``, ``"delivery"``, ``"link bytes"``, ``"device bytes"``,
        ``"chunks"``, ``"output"``).
    detail : str
        What was wrong.
    """

    def __init__(self, invariant: str, detail: str) -> None:
        self.invariant, self.detail = invariant, detail
        super().__init__(f"invariant '{invariant}' violated: {detail}; {_REPORT}")


def _slack(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rounding allowed when comparing two arrays of times."""
    return 1e-9 * np.maximum(np.abs(a), np.abs(b)) + 1e-15


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def check_playback(
    topology: Topology,
    transfers: Sequence[TransferLike],
    buffers: Sequence[dict[Hashable, Any]],
    playback: Playback,
    *,
    groups: Sequence[Sequence[int]] | None = None,
    pattern: str | None = None,
    wanted: Callable[[int], Iterable[int]] | None = None,
) -> None:
    """Check every invariant of one playback; raise :class:`InvariantError` on the first broken one.

    Parameters
    ----------
    topology : Topology
        The topology played on.
    transfers : sequence of Transfer
        The transfers played.
    buffers : sequence of dict
        Each device's chunks at the start, as given to :func:`netsim.engine.play`.
    playback : Playback
        What ``play`` returned.
    groups : sequence of sequence of int, optional
        The collective's groups: chunks must stay in their group.
    pattern : str, optional
        ``"gather"``, ``"reduce_scatter"`` or ``"all_reduce"`` (keys ``(block, piece)``):
        enables the ``chunks`` check. Other patterns get the other checks only.
    wanted : callable, optional
        ``wanted(device)`` gives the blocks a device must hold at the end.

    Raises
    ------
    InvariantError
        Naming the invariant and what broke it.

    Examples
    --------
    >>> import numpy as np
    >>> from netsim.engine import play
    >>> from netsim.algorithms.schedule import build_schedule
    >>> from netsim.network.topology import ring
    >>> s = build_schedule("gather", [[0, 1, 2]], "ring")
    >>> start = [{(d, 0): np.full(4, d)} for d in range(3)]
    >>> run = play(ring(3), s.transfers, start)
    >>> check_playback(ring(3), s.transfers, start, run, groups=s.groups, pattern="gather", wanted=lambda d: range(3))
    >>> run.hops = list(run.hops)[:-1]  # corrupt the playback: lose the last link crossing
    >>> check_playback(ring(3), s.transfers, start, run)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    netsim.checks.invariants.InvariantError: invariant 'delivery' violated: transfer #3 (0->1) crossed 0 link(s) [] but its route is 1 link(s) ['0->1']; ...
    """
    arrays = _Arrays(topology, transfers, playback)
    _check_drained(transfers, playback, arrays)
    _check_delivery(transfers, groups, arrays)
    _check_link_bytes(playback, arrays)
    _check_device_bytes(transfers, buffers, playback, arrays)
    if pattern in _PATTERNS and groups is not None and wanted is not None:
        _check_chunks(arrays, buffers, groups, pattern, wanted)


class _Arrays:
    """The playback and the transfers as NumPy arrays, built once for every check.

    Read from ``transfers.columns()`` and ``playback.hops.columns`` when they offer
    them (a :class:`~netsim.algorithms.schedule.TransferTable`, a :class:`~netsim.engine.HopList`),
    from the objects otherwise (plain sequences, as the tests corrupt them).

    Routes are kept per distinct route (``route_inverse`` numbers each transfer's);
    ``route_length`` and ``route_link`` spell them out per transfer. When every
    route is one link (``single_link``), ``route_link`` is each transfer's link.
    """

    def __init__(self, topology: Topology, transfers: Sequence[TransferLike], playback: Playback) -> None:
        n = len(transfers)
        if not (len(playback.sent_at) == len(playback.arrived_at) == len(playback.nbytes) == len(playback.routes) == n):
            raise InvariantError("drained", f"the playback records {len(playback.arrived_at)} arrivals and {len(playback.routes)} routes for {n} transfers")
        columns = transfer_columns(transfers)
        self.src = _integers(columns["src"])  # (int32 from a TransferTable: products go through int64 below)
        self.dst = _integers(columns["dst"])
        self.reduce = np.asarray(columns["reduce"], bool)
        self.key_index = _integers(columns["key_index"])
        self.keys: list[Hashable] = list(columns["keys"])
        self.dep_ptr = np.asarray(columns["dep_ptr"], np.int64)
        self.dep_idx = np.asarray(columns["dep_idx"], np.int64)
        self.bundles: dict[Hashable, tuple[Hashable, ...]] = columns.get("bundles") or {}
        self.sent = as_array(playback.sent_at, float)
        self.arrived = as_array(playback.arrived_at, float)
        self.nbytes = as_array(playback.nbytes, np.int64)
        self.links = list(playback.links)
        index = {link: k for k, link in enumerate(self.links)}
        self.link_u = np.fromiter((u for u, _, _ in self.links), np.int64, len(self.links))
        self.link_v = np.fromiter((v for _, v, _ in self.links), np.int64, len(self.links))
        hops = playback.hops
        hop_columns = getattr(hops, "columns", None)
        self._orders: dict[str, np.ndarray] = {}
        self._shared_order: Callable[[str], np.ndarray] | None = None  # a HopList's, for the columns it numbers alike
        if isinstance(hop_columns, dict) and hasattr(hops, "link_ids"):
            link_ids = list(hops.link_ids)
            renumber = np.fromiter((index.get(link, -1) for link in link_ids), np.int64, len(link_ids))
            raw_link = np.asarray(hop_columns["link"], np.int64)
            self.hop_transfer = np.asarray(hop_columns["transfer"], np.int64)
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


def _integers(values: Any) -> np.ndarray:
    """An array of signed ints as it is (int32 or int64), anything else as int64."""
    values = np.asarray(values)
    return values if values.dtype.kind == "i" else values.astype(np.int64)


def _route_arrays(routes: Sequence[Sequence[Any]], index: dict[Any, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Routes by identity: per transfer the number of its distinct route, each distinct route's length,
    and their links (as numbers in ``index``, -1 if absent) end to end.

    The engine hands out one tuple object per distinct route, shared by every
    transfer taking it: each distinct object is read once.
    """
    n = len(routes)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    kept = routes.columns() if isinstance(routes, ArrayList) else None
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


def _check_drained(transfers: Sequence[TransferLike], playback: Playback, a: _Arrays) -> None:
    lost = np.flatnonzero(~(np.isfinite(a.sent) & np.isfinite(a.arrived)))
    if lost.size:
        devices = sorted(set(a.dst[lost[:100]].tolist()))
        raise InvariantError("drained", f"transfers {lost[:10].tolist()} never arrived: devices {devices[:10]} did not finish")
    early = _later(a.sent, a.arrived)
    early |= a.sent < 0
    if early.any():
        i = _first(early)
        raise InvariantError("drained", f"transfer #{i} arrived at {a.arrived[i]:.9g} s, before it was sent at {a.sent[i]:.9g} s")
    jumped = _later(a.arrived[a.dep_idx], a.sent[a.waiting])
    if jumped.any():
        i, d = a.waiting[_first(jumped)], a.dep_idx[_first(jumped)]
        raise InvariantError("drained", f"transfer #{i} left at {a.sent[i]:.9g} s, before transfer #{d} it waits for arrived at {a.arrived[d]:.9g} s")
    finish = float(a.arrived.max(initial=0.0))
    if not (math.isfinite(playback.time) and playback.time >= 0 and abs(playback.time - finish) <= 1e-9 * finish + 1e-15):
        raise InvariantError("drained", f"the run's time {playback.time:.9g} s is not the last arrival {finish:.9g} s")


def _check_delivery(transfers: Sequence[TransferLike], groups: Sequence[Sequence[int]] | None, a: _Arrays) -> None:
    topology = a.topology
    if groups is not None:
        outside = _outside_groups(groups, a.src, a.dst, topology.n_devices)
        if outside.any():
            i = _first(outside)
            raise InvariantError("delivery", f"transfer #{i} moves a chunk from device {a.src[i]} to device {a.dst[i]}, outside its group")
    if len(a.hop_transfer) and (int(a.hop_transfer.min()) < 0 or int(a.hop_transfer.max()) >= len(transfers)):
        raise InvariantError("delivery", "a link crossing belongs to a transfer that does not exist")
    crossings = np.bincount(a.hop_transfer, minlength=len(transfers))
    if a.single_link:
        bad = crossings != 1
        if not bad.any():  # one crossing per transfer: compare each with its transfer's one link
            wrong_link = np.flatnonzero(a.hop_link != a.route_link[a.hop_transfer])
            if len(wrong_link):
                bad[a.hop_transfer[wrong_link].min()] = True
    else:
        bad = crossings != a.route_length
        if not bad.any():
            wrong_link = a.hop_link[a.by("transfer")] != a.route_link
            if wrong_link.any():
                bad[a.hop_transfer[a.by("transfer")][_first(wrong_link)]] = True
    del crossings
    if bad.any():
        i = _first(bad)
        links = [topology.link_name(a.hop_link_id(k)) for k in np.flatnonzero(a.hop_transfer == i).tolist()]
        route = [topology.link_name(link) for link in _route_of(a, i)]
        raise InvariantError(
            "delivery", f"transfer #{i} ({a.src[i]}->{a.dst[i]}) crossed {len(links)} link(s) {links[:6]} but its route is {len(route)} link(s) {route[:6]}"
        )
    del bad
    if (a.distinct_links < 0).any():
        raise InvariantError("delivery", "a route crosses a link that is not in the topology")
    if a.single_link:
        _check_single_links(a)
        return
    order = a.by("transfer")
    route_length = a.route_length
    ends = np.cumsum(route_length)
    starts = ends - route_length
    moving = np.flatnonzero(route_length)
    u, v = a.link_u[a.route_link], a.link_v[a.route_link]
    joined = np.ones(len(u), bool)
    joined[1:] = v[:-1] == u[1:]
    joined[starts[moving]] = u[starts[moving]] == a.src[moving]
    if not joined.all():
        k = _first(~joined)
        i = int(a.hop_transfer[order][k])
        raise InvariantError("delivery", f"transfer #{i}'s route from {a.src[i]} to {a.dst[i]} jumps to link {u[k]}->{v[k]}")
    landed = a.src.copy()
    landed[moving] = v[ends[moving] - 1]
    astray = landed != a.dst
    if astray.any():
        i = _first(astray)
        raise InvariantError("delivery", f"transfer #{i} for device {a.dst[i]} was delivered to device {landed[i]}")
    start, end, who = a.hop_start[order], a.hop_end[order], a.hop_transfer[order]
    previous = np.empty_like(start)
    previous[1:] = start[:-1]
    previous[starts[moving]] = a.sent[moving]
    disorder = (previous > start + _slack(previous, start)) | (start > end + _slack(start, end))
    if disorder.any():
        k = _first(disorder)
        raise InvariantError(
            "delivery",
            f"transfer #{who[k]} crossed {topology.link_name(a.links[a.route_link[k]])} from {start[k]:.9g} s to {end[k]:.9g} s, out of order",
        )


def _check_single_links(a: _Arrays) -> None:
    """The rest of :func:`_check_delivery` when every route is one link and every transfer crossed it once.

    The same checks, read per transfer (a route starts at its source, ends at its
    destination) and per crossing (it starts after its transfer was sent, ends after
    it starts), with the same first fault reported.
    """
    topology, route_link = a.topology, a.route_link
    u = a.link_u[route_link]
    wrong = np.flatnonzero(u != a.src)
    if len(wrong):
        i = int(wrong[0])
        raise InvariantError("delivery", f"transfer #{i}'s route from {a.src[i]} to {a.dst[i]} jumps to link {u[i]}->{a.link_v[route_link[i]]}")
    del u
    v = a.link_v[route_link]
    astray = np.flatnonzero(v != a.dst)
    if len(astray):
        i = int(astray[0])
        raise InvariantError("delivery", f"transfer #{i} for device {a.dst[i]} was delivered to device {v[i]}")
    del v
    disorder = _later(a.sent[a.hop_transfer], a.hop_start)
    disorder |= _later(a.hop_start, a.hop_end)
    if disorder.any():
        k = int(np.flatnonzero(disorder)[np.argmin(a.hop_transfer[disorder])])  # the first transfer's crossing
        i = int(a.hop_transfer[k])
        raise InvariantError(
            "delivery",
            f"transfer #{i} crossed {topology.link_name(a.links[route_link[i]])} from {a.hop_start[k]:.9g} s to {a.hop_end[k]:.9g} s, out of order",
        )


def _outside_groups(groups: Sequence[Sequence[int]], src: np.ndarray, dst: np.ndarray, n_devices: int) -> np.ndarray:
    """Transfers whose two ends share no group (groups may overlap, as ppermute's pairs do)."""
    count = np.zeros(n_devices, np.int64)
    for members in groups:
        count[list(members)] += 1
    if (count <= 1).all():  # a partition: compare group numbers
        group_of = np.full(n_devices, -1, np.int64)
        for g, members in enumerate(groups):
            group_of[list(members)] = g
        of_src = group_of[src]
        outside = of_src != group_of[dst]
        outside |= of_src < 0
        return outside
    shared = {(u, v) for members in groups for u in members for v in members}
    return np.fromiter(((u, v) not in shared for u, v in zip(src.tolist(), dst.tolist(), strict=True)), bool, len(src))


def _route_of(a: _Arrays, i: int) -> list[Any]:
    k = int(a.route_inverse[i])
    start = int(a.distinct_length[:k].sum())
    return [a.links[link] if link >= 0 else "?" for link in a.distinct_links[start : start + int(a.distinct_length[k])].tolist()]


def _check_link_bytes(playback: Playback, a: _Arrays) -> None:
    if len(a.hop_link) and int(a.hop_link.min()) < 0:
        k = _first(a.hop_link < 0)
        raise InvariantError("link bytes", f"transfer #{a.hop_transfer[k]} crossed link {a.hop_link_id(k)}, which is not in the topology")
    m = len(a.links)
    carried = np.bincount(a.hop_link, weights=a.nbytes[a.hop_transfer], minlength=m)
    messages = np.bincount(a.hop_link, minlength=m)
    busy = np.bincount(a.hop_link, weights=a.hop_end - a.hop_start, minlength=m)
    stats = list(playback.links.values())
    counted = np.fromiter((s.bytes for s in stats), float, m)
    counted_messages = np.fromiter((s.messages for s in stats), np.int64, m)
    counted_busy = np.fromiter((s.busy_s for s in stats), float, m)
    wrong = (counted != carried) | (counted_messages != messages) | (np.abs(counted_busy - busy) > _slack(counted_busy, busy))
    if wrong.any():
        k = _first(wrong)
        raise InvariantError(
            "link bytes",
            f"link {a.topology.link_name(a.links[k])} counted {int(counted[k])} B in {counted_messages[k]} message(s), busy {counted_busy[k]:.9g} s, "
            f"but its crossings carry {int(carried[k])} B in {messages[k]}, busy {busy[k]:.9g} s",
        )
    # Sorted by link (stably), each crossing against the one before it on the same link.
    h = len(a.hop_link)
    if h < 2:
        return
    order = a.by("link")
    start, end = a.hop_start[order], a.hop_end[order]
    overlap = _later(end[:-1], start[1:])
    firsts = np.cumsum(messages)[:-1]  # where each link's crossings begin in the sorted order
    overlap[firsts[(firsts > 0) & (firsts < h)] - 1] = False  # the first crossing of a link follows another link's
    if overlap.any():
        k = _first(overlap) + 1
        raise InvariantError(
            "link bytes",
            f"link {a.topology.link_name(a.links[a.hop_link[order[k]]])} carried transfer #{a.hop_transfer[order[k]]} from {start[k]:.9g} s "
            f"while still busy until {end[k - 1]:.9g} s",
        )


def _check_device_bytes(transfers: Sequence[TransferLike], buffers: Sequence[dict[Hashable, Any]], playback: Playback, a: _Arrays) -> None:
    size: dict[Hashable, int] = {}
    for held in buffers:
        for key, chunk in held.items():
            if hasattr(chunk, "nbytes"):  # payload-free (timing-only) chunks have no size to compare
                size.setdefault(key, int(chunk.nbytes))
    key_size = np.fromiter((size.get(key, -1) for key in a.keys), np.int64, len(a.keys))
    expected = key_size[a.key_index] if len(a.keys) else np.full(len(a.key_index), -1, np.int64)
    wrong = expected != a.nbytes
    wrong &= expected >= 0
    if wrong.any():
        i = _first(wrong)
        raise InvariantError("device bytes", f"transfer #{i} carried {a.nbytes[i]} B of chunk {a.keys[a.key_index[i]]!r}, which is {expected[i]} B")
    n = a.topology.n_devices
    counted = np.fromiter((s.bytes for s in playback.links.values()), np.int64, len(a.links))
    link_out = np.bincount(a.link_u, weights=counted, minlength=n)
    link_in = np.bincount(a.link_v, weights=counted, minlength=n)
    if a.single_link:  # every transfer moves
        src, dst, nbytes = a.src, a.dst, a.nbytes
    else:
        moving = a.route_length > 0
        src, dst, nbytes = a.src[moving], a.dst[moving], a.nbytes[moving]
    sent = np.bincount(src, weights=nbytes, minlength=n)
    received = np.bincount(dst, weights=nbytes, minlength=n)
    forwarded_in, forwarded_out = link_in - received, link_out - sent
    wrong = (forwarded_in != forwarded_out) | (forwarded_in < 0)
    if wrong.any():
        d = _first(wrong)
        raise InvariantError(
            "device bytes",
            f"device {d} took in {int(link_in[d])} B and received {int(received[d])} B, but put out {int(link_out[d])} B and sent {int(sent[d])} B "
            f"(forwarded {int(forwarded_in[d])} B in, {int(forwarded_out[d])} B out)",
        )


_PATTERNS = ("gather", "reduce_scatter", "all_reduce", "all_to_all", "permute")
"""Patterns whose chunks the ``chunks`` check follows; other patterns get the other checks."""


def _check_chunks(
    a: _Arrays,
    buffers: Sequence[dict[Hashable, Any]],
    groups: Sequence[Sequence[int]],
    pattern: str,
    wanted: Callable[[int], Iterable[int]],
) -> None:
    """Replay the schedule with each chunk as a bit mask of the group positions whose data it carries.

    A gather's block b must come from member b, an all_to_all's block s*n + j from
    member s, a reduction's from every member, a ppermute's from its pair's source
    (pairs overlap, so there a chunk is just 1: there or not).

    When nothing adds (gathers, all_to_all, ppermute) every mask has at most one
    bit, and the replay runs on whole arrays (:func:`_chunks_placed`); reductions
    replay one transfer at a time (:func:`_chunks_folded`). Both raise the same
    error on the same first fault.
    """
    permute = pattern == "permute"
    position = {} if permute else {d: k for members in groups for k, d in enumerate(members)}
    size = len(groups[0]) if groups else 1
    if a.bundles:
        _chunks_bundled(a, buffers, position, pattern, wanted)
        return
    order = _dependency_order(a)
    # The chunks each device starts with, as numbers into key_ids (every key any device holds).
    key_ids: dict[Hashable, int] = {}
    for held in buffers:
        for key in held:
            key_ids.setdefault(key, len(key_ids))
    held_codes = np.fromiter((d * len(key_ids) + key_ids[key] for d, held in enumerate(buffers) for key in held), np.int64)
    # Each transfer's key as a number into key_ids (-1 if no device started with it).
    key_id = np.fromiter((key_ids.get(key, -1) for key in a.keys), np.int32, len(a.keys))[a.key_index] if len(a.keys) else np.zeros(0, np.int32)
    placed_only = pattern in ("gather", "all_to_all", "permute") and not a.reduce.any()
    if placed_only and (permute or all(d in position for d, held in enumerate(buffers) if held)):
        _chunks_placed(a, buffers, order, position, size, pattern, wanted, key_ids, key_id, held_codes)
    else:
        _chunks_folded(a, buffers, order, position, size, pattern, wanted, key_ids, key_id)


def _chunks_folded(
    a: _Arrays,
    buffers: Sequence[dict[Hashable, Any]],
    order: Iterable[int],
    position: dict[int, int],
    size: int,
    pattern: str,
    wanted: Callable[[int], Iterable[int]],
    key_ids: dict[Hashable, int],
    key_id: np.ndarray,
) -> None:
    """The replay one transfer at a time, with masks as Python ints (any pattern).

    Written to allocate few objects: on big runs Python's garbage collector would
    otherwise cost more than the replay.
    """
    permute = pattern == "permute"
    src, dst, kidx, reduce = a.src.tolist(), a.dst.tolist(), a.key_index.tolist(), a.reduce.tolist()
    keys_of = a.keys

    def add(state: int, j: int, device: int, key: Hashable) -> int:
        payload = carried[j]
        if reduce[j]:
            if state & payload:
                raise InvariantError("chunks", f"device {device}, chunk {key!r}: transfer #{j} adds the data of member(s) {_bits(state & payload)} again")
            return state | payload
        if payload and payload == state and src[j] != dst[j]:  # a device may copy a chunk to itself
            raise InvariantError("chunks", f"device {device}, chunk {key!r}: transfer #{j} delivers a chunk that is already there a second time")
        return payload

    n = len(src)
    feed_ptr, fed = (v.tolist() for v in _feeding(a))
    carried = [0] * n
    for i in order:
        s, key = src[i], keys_of[kidx[i]]
        state = (1 if permute else 1 << position[s]) if key in buffers[s] else 0
        for j in fed[feed_ptr[i] : feed_ptr[i + 1]]:
            state = add(state, j, s, key)
        carried[i] = state
    # What every device holds at the end: fold the arrivals into each (device, chunk), in arrival order.
    if (key_id < 0).any():
        i = _first(key_id < 0)
        raise InvariantError("chunks", f"transfer #{i} carries chunk {keys_of[kidx[i]]!r}, which no device started with")
    code = np.multiply(a.dst, len(key_ids), dtype=np.int64)
    code += key_id
    final: dict[int, int] = {}
    for i in np.lexsort((np.arange(n), a.arrived, code)).tolist():
        d, key = dst[i], keys_of[kidx[i]]
        c = d * len(key_ids) + key_ids[key]
        state = final[c] if c in final else ((1 if permute else 1 << position[d]) if key in buffers[d] else 0)
        final[c] = add(state, i, d, key)
    pieces = 1 + max((key[1] for key in key_ids), default=0)
    for d in range(len(buffers)):
        for block in wanted(d):
            expected = _whose(pattern, block, size)
            for piece in range(pieces):
                key = (block, piece)
                c = d * len(key_ids) + key_ids[key] if key in key_ids else -1
                got = final[c] if c in final else ((1 if permute else 1 << position[d]) if key in buffers[d] else 0)
                if got != expected:
                    lost = expected & ~got
                    detail = f"without the data of group member(s) {_bits(lost)}" if lost else f"with the data of member(s) {_bits(got & ~expected)}"
                    raise InvariantError("chunks", f"device {d} ends with chunk {key!r} {detail}")


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


class _Starts:
    """The bit each device's own copy of a chunk carries at the start (-1: it holds none),
    looked up by (device, key id); in a table over every (device, key) when that is not
    much bigger than the run (int32, like the bits), else by binary search in the sorted codes."""

    def __init__(self, own: np.ndarray, n_keys: int, held_codes: np.ndarray, n_transfers: int) -> None:
        self.own, self.n_keys = own, n_keys
        self.dense = len(own) * n_keys <= 4 * n_transfers + (1 << 16)
        if self.dense:
            self.table = np.full(len(own) * n_keys, -1, np.int32)
            self.table[held_codes] = own[held_codes // max(n_keys, 1)]
        else:
            self.held_codes = np.sort(held_codes)

    def code(self, device: np.ndarray, kid: np.ndarray) -> np.ndarray:
        """``device * n_keys + kid`` (int32 when it indexes the table, which is small enough)."""
        code = np.multiply(device, self.n_keys, dtype=np.int32 if self.dense else np.int64)
        return np.add(code, kid, dtype=code.dtype, casting="unsafe")

    def __call__(self, device: np.ndarray, kid: np.ndarray) -> np.ndarray:
        code = self.code(device, kid)  # (device may be a column, kid a table)
        if self.dense:
            return _none_where_absent(self.table[code], kid)
        held_codes = self.held_codes
        spot = np.minimum(np.searchsorted(held_codes, code), max(len(held_codes) - 1, 0))
        has = (kid >= 0) & (len(held_codes) > 0) & (held_codes[spot] == code if len(held_codes) else False)
        return np.where(has, self.own[device], -1)


def _chunks_placed(
    a: _Arrays,
    buffers: Sequence[dict[Hashable, Any]],
    order: Iterable[int],
    position: dict[int, int],
    size: int,
    pattern: str,
    wanted: Callable[[int], Iterable[int]],
    key_ids: dict[Hashable, int],
    key_id: np.ndarray,
    held_codes: np.ndarray,
) -> None:
    """The same replay on whole arrays when no transfer adds: a mask is then one bit or none,
    kept as the bit's number (-1 for none), and a chunk carries what the last arrival it
    waited for brought (or its source's own data)."""
    permute = pattern == "permute"
    n, n_keys = len(a.src), len(key_ids)
    n_devices = len(buffers)
    own = np.full(max(n_devices, int(a.src.max(initial=-1)) + 1, int(a.dst.max(initial=-1)) + 1), -1, np.int64)
    for d in range(n_devices):
        own[d] = 0 if permute else position.get(d, -1)
    starting = _Starts(own, n_keys, held_codes, n)
    apart = a.src != a.dst  # a device may copy a chunk to itself

    # The replay in dependency order: each transfer carries what its last feeding arrival brought.
    feed_ptr, fed = _feeding(a)
    initial = starting(a.src, key_id)
    has_feed = feed_ptr[1:] != feed_ptr[:-1]
    one_each = len(fed) == int(np.count_nonzero(has_feed))  # one feed each: every feed is its transfer's first (and last)
    last_feed = np.full(n, -1, np.int32 if n < 2**31 else np.int64)
    last_feed[has_feed] = fed if one_each else fed[feed_ptr[1:][has_feed] - 1]
    carried = _carried_along(last_feed, initial)
    # A feed that brings its transfer's source the data it already holds delivers it a second time.
    if one_each:  # the feed's data is what its transfer carries, and it meets the source's own copy
        again = carried == initial
        again &= carried >= 0
        again &= has_feed
        suspects = np.flatnonzero(again)
        del again
        suspects = suspects[apart[last_feed[suspects]]]
        owners, feeds = suspects, last_feed[suspects]
    else:
        fed_carried = carried[fed]
        before = np.empty(len(fed), fed_carried.dtype)
        before[1:] = fed_carried[:-1]
        before[feed_ptr[:-1][has_feed]] = initial[has_feed]
        again = fed_carried >= 0
        again &= fed_carried == before
        again &= apart[fed]
        del before, fed_carried
        bad = np.flatnonzero(again)
        owners, feeds = np.repeat(np.arange(n, dtype=np.int64), np.diff(feed_ptr))[bad], fed[bad]
    del last_feed
    if len(owners):
        if isinstance(order, range):
            e = 0
        else:
            rank = np.empty(n, np.int64)
            rank[np.asarray(order, np.int64)] = np.arange(n)
            e = int(np.lexsort((np.arange(len(owners)), rank[owners]))[0])
        i, j = int(owners[e]), int(feeds[e])
        raise InvariantError(
            "chunks", f"device {a.src[i]}, chunk {a.keys[a.key_index[i]]!r}: transfer #{j} delivers a chunk that is already there a second time"
        )
    del initial
    # What every device holds at the end: each (device, chunk) keeps its last arrival.
    if (key_id < 0).any():
        i = _first(key_id < 0)
        raise InvariantError("chunks", f"transfer #{i} carries chunk {a.keys[a.key_index[i]]!r}, which no device started with")
    code = starting.code(a.dst, key_id)
    if starting.dense and _all_different(code, len(starting.table)):
        # Each (device, chunk) receives at most once: its arrival meets the device's own copy.
        before = starting.table[code]
        again = carried >= 0
        again &= carried == before
        again &= apart
        if again.any():
            bad = np.flatnonzero(again)
            i = int(bad[np.argmin(code[bad])])
            raise InvariantError(
                "chunks", f"device {a.dst[i]}, chunk {a.keys[a.key_index[i]]!r}: transfer #{i} delivers a chunk that is already there a second time"
            )
        del before, again
        holding = starting.table  # from here on: what each (device, chunk) ends with
        holding[code] = carried
        del code, carried

        def ends_with(device: np.ndarray, kid: np.ndarray) -> np.ndarray:
            return _none_where_absent(holding[starting.code(device, kid)], kid)

    else:
        by_arrival = np.lexsort((np.arange(n), a.arrived, code))
        code = code[by_arrival]
        got = carried[by_arrival]
        first = np.ones(n, bool)
        first[1:] = code[1:] != code[:-1]
        before = np.empty(n, got.dtype)
        before[1:] = got[:-1]
        before[first] = starting(a.dst[by_arrival][first], key_id[by_arrival][first])
        again = (got >= 0) & (got == before) & apart[by_arrival]
        if again.any():
            i = int(by_arrival[_first(again)])
            raise InvariantError(
                "chunks", f"device {a.dst[i]}, chunk {a.keys[a.key_index[i]]!r}: transfer #{i} delivers a chunk that is already there a second time"
            )
        last = np.ones(n, bool)
        last[:-1] = code[1:] != code[:-1]
        final_code, final = code[last], got[last]

        def ends_with(device: np.ndarray, kid: np.ndarray) -> np.ndarray:
            code = device * n_keys + kid
            spot = np.minimum(np.searchsorted(final_code, code), max(len(final_code) - 1, 0))
            arrived = (kid >= 0) & (final_code[spot] == code) if len(final_code) else np.zeros(code.shape, bool)
            return np.where(arrived, final[spot] if len(final) else -1, starting(device, kid))

    # Every block every device wants, each piece: the bit it ends with against the one it must.
    pieces = 1 + max((key[1] for key in key_ids), default=0)
    sets = [wanted(d) for d in range(n_devices)]
    if sets and all(type(s) is range and s == sets[0] for s in sets):  # all want the same blocks (gathers)
        device = None
        block = np.arange(sets[0].start, sets[0].stop, sets[0].step, dtype=np.int64)
        ends = ends_with(np.arange(n_devices, dtype=np.int64)[:, None, None], _key_ids_of(key_ids, block, pieces)[None])  # [device, block, piece]
    else:
        device, block = _wanted_blocks(sets)
        ends = ends_with(device[:, None], _key_ids_of(key_ids, block, pieces))  # [wanted block, piece]
    expected = np.zeros_like(block) if permute else (block // size if pattern == "all_to_all" else block)
    wrong = ends != expected[:, None]
    if wrong.any():
        k = _first(wrong.reshape(-1))
        if device is None:
            d, k = divmod(k, len(block) * pieces)
        row, piece = divmod(k, pieces)
        d = d if device is None else device[row]
        key = (int(block[row]), piece)
        raise InvariantError("chunks", f"device {d} ends with chunk {key!r} without the data of group member(s) {[int(expected[row])]}")


def _key_ids_of(key_ids: dict[Hashable, int], block: np.ndarray, pieces: int) -> np.ndarray:
    """The key id of each (block, piece), -1 for keys nobody started with: ``[blocks, pieces]``."""
    distinct, inverse = factorize(block)
    table = np.array([[key_ids.get((int(b), p), -1) for p in range(pieces)] for b in distinct.tolist()], np.int64).reshape(len(distinct), pieces)
    return table[inverse]


def _none_where_absent(bit: np.ndarray, kid: np.ndarray) -> np.ndarray:
    """``bit`` with -1 where the key id (broadcast to it) is -1: no such chunk."""
    absent = kid < 0
    if absent.any():
        bit[np.broadcast_to(absent, bit.shape)] = -1
    return bit


def _all_different(codes: np.ndarray, size: int) -> bool:
    """Whether no two codes (ints in ``range(size)``) are equal."""
    seen = np.zeros(size, bool)
    seen[codes] = True
    return int(np.count_nonzero(seen)) == len(codes)


def _carried_along(last_feed: np.ndarray, initial: np.ndarray, window: int = 1 << 14) -> np.ndarray:
    """What each transfer carries: ``initial[i]`` if nothing feeds it, else what its last feed carried.

    When every transfer's feed comes before it (schedules in step order), the
    transfers are taken a window at a time: feeds from earlier windows are known
    already, chains inside the window are followed by pointer jumping. Otherwise
    pointer jumping runs over all transfers at once.
    """
    n = len(initial)
    carried = np.empty(n, initial.dtype)
    for lo in range(0, n, window):
        hi = min(n, lo + window)
        feed = last_feed[lo:hi]
        here = np.arange(lo, hi, dtype=np.int64)
        if not (feed < here).all():
            return _carried_by_jumping(last_feed, initial)
        value = initial[lo:hi].copy()  # what the chain's first transfer in this window brings
        outside = (feed >= 0) & (feed < lo)
        value[outside] = carried[feed[outside]]
        inside = feed >= lo
        if inside.any():
            step = np.where(inside, feed, here)
            step -= lo
            while True:
                further = step[step]
                if np.array_equal(further, step):
                    break
                step = further
            value = value[step]
        carried[lo:hi] = value
    return carried


def _carried_by_jumping(last_feed: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """:func:`_carried_along` by pointer jumping over every transfer (feeds in any order)."""
    root = np.arange(len(initial), dtype=np.int64)
    has_feed = last_feed >= 0
    root[has_feed] = last_feed[has_feed]
    further = np.empty_like(root)
    while True:
        np.take(root, root, out=further)
        if np.array_equal(further, root):
            break
        root, further = further, root
    return initial[root]


def _wanted_blocks(sets: Sequence[Iterable[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Every (device, block) a device must hold at the end (device d wants ``sets[d]``), as two arrays in device order.

    Layouts give ranges (every block, or every n-th): those are spelled out with NumPy.
    """
    n_devices = len(sets)
    if sets and all(type(s) is range for s in sets):
        lengths = np.fromiter(map(len, sets), np.int64, n_devices)
        if all(s == sets[0] for s in sets):
            block = np.tile(np.arange(sets[0].start, sets[0].stop, sets[0].step, dtype=np.int64), n_devices)
        else:
            offsets = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            starts = np.fromiter((s.start for s in sets), np.int64, n_devices)
            steps = np.fromiter((s.step for s in sets), np.int64, n_devices)
            block = np.repeat(starts, lengths) + np.repeat(steps, lengths) * offsets
    else:
        blocks = [[int(b) for b in s] for s in sets]
        lengths = np.fromiter(map(len, blocks), np.int64, n_devices)
        block = np.fromiter(itertools.chain.from_iterable(blocks), np.int64, int(lengths.sum()))
    return np.repeat(np.arange(n_devices, dtype=np.int64), lengths), block


def _chunks_bundled(a: _Arrays, buffers: Sequence[dict[Hashable, Any]], position: dict[int, int], pattern: str, wanted: Callable[[int], Iterable[int]]) -> None:
    """The ``chunks`` check for a gather that sends bundles, key by key, on whole arrays.

    A chunk ``(block, piece)`` must start only at member ``block`` (so whoever
    holds it holds that member's data); every transfer must leave a source that
    holds what it carries (or all it makes that bundle from); no device may be
    handed a key twice; and at the end each device, its bundles opened, must
    hold each piece of every block it wants exactly once, and no other chunk.
    """
    if pattern != "gather" or a.reduce.any():
        raise InvariantError("chunks", f"bundles are only played in gathers, not in a {pattern}")
    bundles = a.bundles
    for d, held in enumerate(buffers):
        for key in held:
            if key in bundles or key[0] != position.get(d):
                raise InvariantError("chunks", f"device {d} starts with chunk {key!r}, which is not its own block")
    key_number = {key: k for k, key in enumerate(a.keys)}
    for held in buffers:
        for key in held:
            key_number.setdefault(key, len(key_number))
    n_codes = len(key_number)
    start = np.unique(np.fromiter((d * n_codes + key_number[key] for d, held in enumerate(buffers) for key in held), np.int64))
    # Each (device, key) is delivered at most once, and never where it started.
    code = a.dst * n_codes + a.key_index
    order = np.argsort(code, kind="stable")
    by_code = code[order]
    twice = np.flatnonzero(by_code[1:] == by_code[:-1])
    again = in_sorted(code, start)
    if len(twice) or again.any():
        i = int(order[twice[0] + 1]) if len(twice) else _first(again)
        raise InvariantError(
            "chunks", f"device {a.dst[i]}, chunk {a.keys[a.key_index[i]]!r}: transfer #{i} delivers a chunk that is already there a second time"
        )
    arrived_at = a.arrived[order]

    def held_by(device_key: np.ndarray, when: np.ndarray) -> np.ndarray:
        """Whether each (device * n_codes + key) is held at the time beside it: from the start, or arrived by then."""
        spot = np.minimum(np.searchsorted(by_code, device_key), max(len(by_code) - 1, 0))
        came = (by_code[spot] == device_key) & (arrived_at[spot] <= when + _slack(when, arrived_at[spot]))
        return came | in_sorted(device_key, start)

    # Every transfer leaves once its source holds what it carries, or, making a bundle,
    # once it holds all it makes it from. Keys as numbers: a.keys, then the starting ones.
    table = as_table(bundles)
    pieces = sorted({key[1] for held in buffers for key in held} | {int(p) for p in table.key_array[:, 1]})
    width = len(pieces)
    key_code, ptr, part_code = table.codes(width)
    block_piece = np.array(list(key_number), np.int64).reshape(-1, 2) @ np.array([width, 1])  # number -> code
    number = np.full(1 + max(int(block_piece.max(initial=0)), int(key_code.max(initial=0)), int(part_code.max(initial=0))), -1, np.int64)
    number[block_piece] = np.arange(len(block_piece))
    codes = (number[key_code], ptr, number[part_code])
    leaving = a.src * n_codes + a.key_index
    makes = np.isin(a.key_index, codes[0]) & ~in_sorted(leaving, by_code)
    plain = np.flatnonzero(~makes)
    bad = plain[~held_by(leaving[plain], a.sent[plain])]
    first_bad = (int(bad[0]), int(a.key_index[bad[0]])) if len(bad) else None
    made = np.flatnonzero(makes)
    which, part = made_of_arrays(codes, a.src[made], a.key_index[made], lambda d, c: in_sorted(d * n_codes + c, by_code))
    owner = made[which]
    missing = np.flatnonzero(~held_by(a.src[owner] * n_codes + part, a.sent[owner]))
    if len(missing) and (first_bad is None or owner[missing[0]] < first_bad[0]):
        first_bad = (int(owner[missing[0]]), int(part[missing[0]]))
    if first_bad is not None:
        i, number = first_bad
        key = next((key for key, m in key_number.items() if m == number), "?")
        raise InvariantError("chunks", f"transfer #{i} leaves device {a.src[i]} before chunk {key!r} is there")
    # What each device ends with, bundles opened: each wanted piece once, nothing else.
    final_device = np.concatenate([a.dst, np.fromiter((d for d, held in enumerate(buffers) for _ in held), np.int64)])
    final_key = np.concatenate([a.key_index, np.fromiter((key_number[key] for held in buffers for key in held), np.int64)])
    by_device = np.argsort(final_device, kind="stable")
    final_device, final_key = final_device[by_device], final_key[by_device]
    device_ptr = np.searchsorted(final_device, np.arange(len(buffers) + 1))
    wants: dict[Any, np.ndarray] = {}
    want_of = []
    for d in range(len(buffers)):
        blocks = wanted(d)
        codes_d = wants.get(blocks)
        if codes_d is None:
            codes_d = wants[blocks] = (np.asarray(list(blocks), np.int64).reshape(-1, 1) * width + np.asarray(pieces, np.int64)).reshape(-1)
        want_of.append(codes_d)
    # First by fingerprints: a random 64-bit number per chunk, a key's the sum of its chunks'
    # (and their count); a device whose sums differ from its wanted chunks' is then compared
    # chunk by chunk, which names what is wrong. (Equal sums with different chunks: odds 2^-64.)
    size = 1 + max(int(block_piece.max(initial=0)), *(int(c.max(initial=0)) for c in wants.values()))
    chunk_print = np.random.default_rng(20261121).integers(0, 2**63, size, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)
    key_print, key_count = _fingerprints(codes, block_piece, chunk_print)
    counts = np.diff(device_ptr)
    got_count = np.bincount(final_device, weights=key_count[final_key], minlength=len(buffers)).astype(np.int64)
    got_print = np.zeros(len(buffers), np.uint64)
    some = np.flatnonzero(counts)
    if len(some):
        got_print[some] = np.add.reduceat(key_print[final_key], device_ptr[:-1][some])
    sums = {id(c): (np.add.reduce(chunk_print[c], dtype=np.uint64), len(c)) for c in wants.values()}
    want_print = np.fromiter((sums[id(c)][0] for c in want_of), np.uint64, len(buffers))
    want_count = np.fromiter((sums[id(c)][1] for c in want_of), np.int64, len(buffers))
    suspects = np.flatnonzero((got_print != want_print) | (got_count != want_count))
    for d in suspects.tolist():
        keys = final_key[device_ptr[d] : device_ptr[d + 1]]
        _, flat = opened_codes(codes, keys)
        got = np.sort(block_piece[flat[flat >= 0]]) if len(flat) else flat
        want = np.sort(want_of[d])
        lost = np.setdiff1d(want, got)
        twice = got[1:][got[1:] == got[:-1]]
        if len(lost):
            detail = f"without chunk {divmod(int(lost[0]), width)!r}"
        elif len(twice):
            detail = f"with chunk {divmod(int(twice[0]), width)!r} twice"
        else:
            extra = np.setdiff1d(got, want)
            detail = f"with chunk {divmod(int(extra[0]), width)!r} it should not hold" if len(extra) else "with a chunk no device started with"
        raise InvariantError("chunks", f"device {d} ends {detail}")


def _fingerprints(codes: tuple[np.ndarray, np.ndarray, np.ndarray], block_piece: np.ndarray, chunk_print: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per key number: the sum (wrapping) of the fingerprints of the chunks it carries, and their count.

    ``codes`` is the bundle table with keys and parts as key numbers (-1: a part no
    transfer or device names); a bundle with such a part gets count -1 (never equal).
    """
    bundle, ptr, part = codes
    n = len(block_piece)
    known = np.ones(n, bool)
    known[bundle] = False
    prints = np.where(known, chunk_print[block_piece], np.uint64(0))
    count = known.astype(np.int64)
    starts = ptr[:-1]
    nonempty = np.flatnonzero(np.diff(ptr) > 0)
    safe = np.where(part >= 0, part, 0)
    for _ in range(len(bundle) + 1):
        ready = np.ones(len(bundle), bool)
        if len(nonempty):
            ready[nonempty] = np.logical_and.reduceat(known[safe] & (part >= 0), starts[nonempty])
        new = np.flatnonzero(ready & ~known[bundle])
        if not len(new):
            break
        total = np.zeros(len(bundle), np.uint64)
        many = np.zeros(len(bundle), np.int64)
        if len(nonempty):
            total[nonempty] = np.add.reduceat(prints[safe], starts[nonempty])
            many[nonempty] = np.add.reduceat(count[safe], starts[nonempty])
        prints[bundle[new]], count[bundle[new]] = total[new], many[new]
        known[bundle[new]] = True
    count[~known] = -1
    return prints, count


def _whose(pattern: str, block: int, size: int) -> int:
    """Whose data a block must carry at the end, as a mask of group positions."""
    if pattern in ("reduce_scatter", "all_reduce"):
        return (1 << size) - 1
    if pattern == "permute":
        return 1
    return 1 << (block // size if pattern == "all_to_all" else block)


def _dependency_order(a: _Arrays) -> Sequence[int]:
    """Indices with every transfer after the ones it waits for (index order when that already holds)."""
    n = len(a.src)
    waiting = a.waiting
    if (a.dep_idx < waiting).all():
        return range(n)
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


def _bits(mask: int) -> list[int]:
    return [k for k in range(mask.bit_length()) if mask >> k & 1]
