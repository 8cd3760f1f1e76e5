"""The critical path's time split into its parts, and the facts about a run's routes.

Each hop waited from when its message was ready at the link (sent, or arrived over the
previous link) until the link took it; counted per link, those waits give its longest
queue. The run's one critical path (``result.critical_path``, walked once by
:func:`netsim.analysis.critical_path.critical_path` when the run played) is split here,
without being walked again, into per-hop latency, transmission, queueing and late starts
(:class:`CriticalPath`). :func:`path_facts` gives the split and route facts alone,
cheaper than the full :func:`~netsim.analysis.stats.run_stats`."""

from __future__ import annotations

import heapq
import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from netsim.analysis.critical_path import critical_path
from netsim.analysis.memory_over_time import _running
from netsim.columnar import stable_order
from netsim.engine import RouteList, as_array
from netsim.engine.columns import hop_arrays
from netsim.engine.critical_path import CriticalPath as WalkedPath
from netsim.engine.link_model import head_ready
from netsim.network.topology import LinkId, Topology

if TYPE_CHECKING:
    from netsim.result import Result

__all__ = ["CriticalPath", "PathFacts", "path_facts"]


@dataclass(frozen=True)
class CriticalPath:
    """What the time of a run's critical path is made of.

    ``latency_s + transmission_s + queueing_s + straggle_s`` equals the simulated time.

    Attributes
    ----------
    transfers, hops : int
        Transfers with a step on the path, and its link crossings.
    latency_s : float
        Per-hop latency paid along the path (none between crossings queued back to
        back on one link: each follows the message before it).
    transmission_s : float
        Time the path's messages were being sent (bytes over bandwidth, once per
        hop with store-and-forward), outside the queueing below.
    queueing_s : float
        Time a crossing on the path waited for its link, busy with the messages
        the path ran through meanwhile.
    straggle_s : float
        Time lost to devices that started late.
    queued_on : tuple of (str, float)
        Links where the path waited, with the wait, longest first.
    path : netsim.engine.critical_path.CriticalPath or None
        The link crossings these figures describe: the run's one critical path
        (``result.critical_path`` where the run kept it, else walked for these figures).
    """

    transfers: int
    hops: int
    latency_s: float
    transmission_s: float
    queueing_s: float
    straggle_s: float
    queued_on: tuple[tuple[str, float], ...] = ()
    path: Any = None


@dataclass(frozen=True)
class PathFacts:
    """What explaining a run's time needs: its critical path and a few facts about its routes.

    Cheaper than :class:`~netsim.analysis.stats.RunStats` (no memory or step accounting); see :func:`path_facts`.

    Attributes
    ----------
    critical_path : CriticalPath
    transfers : int
    max_route_hops : int
    multi_hop_transfers : int
    chunk_bytes : tuple of int
        Smallest and largest transfer, bytes.
    longest_queue : dict
        Link name -> most messages that waited for it at once, for links where any waited.
    """

    critical_path: CriticalPath
    transfers: int
    max_route_hops: int
    multi_hop_transfers: int
    chunk_bytes: tuple[int, int]
    longest_queue: dict[str, int]


class _Hops:
    """Every hop of one playback as columns: when its message was ready at the link, how long it waited.

    A message is ready at its first link when it is sent, at a later one when its head
    arrived over the previous link (one latency after it started there with cut-through
    forwarding, after its tail with store-and-forward), as
    :func:`~netsim.engine.link_model.head_ready` says. ``hops_of(t)`` gives transfer
    ``t``'s hops, in the order it crossed them. Built from the engine's columns: no
    object per hop.
    """

    def __init__(self, playback: Any, latency: dict[LinkId, float], cut_through: bool) -> None:
        transfer, link, start, end, link_ids = hop_arrays(playback.hops)
        n = len(playback.sent_at)
        self.transfer, self.link, self.start, self.end, self.link_ids = transfer, link, start, end, link_ids
        self.latency = np.array([latency[lk] for lk in link_ids], float)  # by link number
        shared = getattr(playback.hops, "order", None)
        self.order = shared("transfer") if callable(shared) else stable_order(transfer)
        self.count = np.bincount(transfer, minlength=n)[:n] if len(transfer) else np.zeros(n, np.int64)
        self.ptr = np.concatenate([[0], np.cumsum(self.count)])
        by_transfer = transfer[self.order]
        sent = as_array(playback.sent_at, float)
        ready = sent[by_transfer] if len(by_transfer) else np.zeros(0)
        later = np.flatnonzero(by_transfer[1:] == by_transfer[:-1]) + 1  # hops after their message's first, in transfer order
        previous = self.order[later - 1]
        ready[later] = head_ready(start[previous], end[previous], self.latency[link[previous]], cut_through)
        self.ready = np.empty(len(ready))
        self.ready[self.order] = ready
        wait = start - self.ready
        self.wait = np.where(wait > 1e-12 * np.abs(start), wait, 0.0)  # rounding of sums taken in another order is not a wait (1e-22 s)

    def hops_of(self, t: int) -> list[int]:
        """Transfer ``t``'s hops (positions in the playback's hops), first to last."""
        return self.order[self.ptr[t] : self.ptr[t + 1]].tolist()

    def link_sums(self, values: np.ndarray) -> np.ndarray:
        """``values`` (one per hop) summed per link number, in hop order."""
        return np.bincount(self.link, weights=values, minlength=len(self.link_ids))


def _longest_queues(playback: Any, hops: _Hops) -> dict[LinkId, int]:
    """Most messages waiting at once for each link (intervals [ready, start)), for links where any waited."""
    waited = np.flatnonzero(hops.wait > 0)
    if not len(waited):
        return {}
    link = np.concatenate([hops.link[waited], hops.link[waited]])
    when = np.concatenate([hops.ready[waited], hops.start[waited]])
    delta = np.repeat(np.array([1, -1], np.int64), len(waited))
    order = np.lexsort((delta, when, link))  # at equal times -1 sorts first: a message leaving makes room first
    link, delta = link[order], delta[order]
    starts = np.flatnonzero(np.concatenate([[True], link[1:] != link[:-1]]))
    depth = np.maximum.reduceat(_running(delta, starts), starts)
    return {hops.link_ids[k]: int(d) for k, d in zip(link[starts].tolist(), depth.tolist(), strict=True)}


def _breakdown(path: Any, hops: _Hops, latency: dict[LinkId, float], names: dict[LinkId, str], cut_through: bool, offset: float) -> CriticalPath:
    """What the time of one leaf's critical path (:func:`netsim.analysis.critical_path.critical_path`) is made of.

    The path's crossings, in time order, tile the leaf's time from ``offset`` (when it
    began) to its finish: a late start of the origin device is straggling; a crossing's
    time on the wire is transmission, except the head's latency over the link before it
    when the message moves cut-through; a gap before a crossing is the latency of the
    crossing before it, then (beyond it) a late start. Where the path went through a
    crossing that held a link another crossing on the path waited for, that waiting
    (from when the waiting message was ready until the link took it) is queueing on
    that link instead. The parts add up to the leaf's time.
    """
    steps = path.steps
    if not steps:
        return CriticalPath(0, 0, 0.0, 0.0, 0.0, max(0.0, path.finish_s - offset))
    number = {link: k for k, link in enumerate(hops.link_ids)}
    segments: list[tuple[float, float, str]] = [(offset, path.origin_s, "straggle")] if path.origin_s > offset else []
    windows: list[tuple[float, float, str]] = []
    cursor, owed, previous = max(path.origin_s, offset), 0.0, None

    def gap(until: float) -> None:
        nonlocal cursor, owed
        if until - cursor > 1e-12 * abs(until):  # (not rounding noise)
            paid = min(owed, until - cursor)
            paid = until - cursor if until - cursor - paid <= 1e-12 * abs(until) else paid  # (not a late start: rounding)
            segments.extend([(cursor, cursor + paid, "latency"), (cursor + paid, until, "straggle")])
            owed -= paid
            cursor = until

    for step in steps:
        if step.link is not None and step.waited_for == "link":
            crossings = [h for h in hops.hops_of(step.transfer) if number.get(step.link) == int(hops.link[h])]
            if crossings:
                windows.append((float(hops.ready[crossings[0]]) + offset, step.start, names[step.link]))
        if step.end > cursor:
            gap(step.start)
            if cut_through and step.link is not None and previous is not None and previous.transfer == step.transfer and previous.link is not None:
                paid = min(owed, step.end - cursor)
                segments.append((cursor, cursor + paid, "latency"))
                cursor += paid
            segments.append((cursor, step.end, "transmission"))
            cursor = step.end
        owed = latency[step.link] if step.link is not None else 0.0
        previous = step
    gap(path.finish_s)
    parts, waited = _relabel(segments, windows)
    link_steps = sum(step.link is not None for step in steps)
    queued_on = tuple(sorted(waited.items(), key=lambda kv: (-kv[1], kv[0])))
    return CriticalPath(
        len({step.transfer for step in steps}), link_steps, parts["latency"], parts["transmission"], parts["queueing"], parts["straggle"], queued_on
    )


def _relabel(segments: list[tuple[float, float, str]], windows: list[tuple[float, float, str]]) -> tuple[dict[str, float], dict[str, float]]:
    """Durations by kind, the parts of ``segments`` inside a waiting window counted as queueing on its link.

    Where windows overlap, the time goes to the one that ends first (the wait the path resolved first).
    """
    parts: dict[str, float] = defaultdict(float)
    waited: dict[str, float] = defaultdict(float)
    points = sorted({t for lo, hi, _ in windows if hi > lo for t in (lo, hi)})
    by_start = sorted((lo, hi, name) for lo, hi, name in windows if hi > lo)
    claimed: list[tuple[float, float, str]] = []  # disjoint, in time order
    open_: list[tuple[float, str]] = []  # windows begun, by end
    w = 0
    for a, b in itertools.pairwise(points):
        while w < len(by_start) and by_start[w][0] <= a:
            heapq.heappush(open_, (by_start[w][1], by_start[w][2]))
            w += 1
        while open_ and open_[0][0] <= a:
            heapq.heappop(open_)
        if open_:
            claimed.append((a, b, open_[0][1]))
    k = 0
    for lo, hi, kind in segments:
        if hi <= lo:
            continue
        while k < len(claimed) and claimed[k][1] <= lo:
            k += 1
        inside, j = 0.0, k
        while j < len(claimed) and claimed[j][0] < hi:
            overlap = min(hi, claimed[j][1]) - max(lo, claimed[j][0])
            if overlap > 0:
                inside += overlap
                waited[claimed[j][2]] += overlap
            j += 1
        parts["queueing"] += inside
        parts[kind] += (hi - lo) - inside
    return parts, waited


def _leaf_path(result: Result, leaf: Any, topology: Topology, cut_through: bool, offset: float) -> Any:
    """The leaf's critical path as the run kept it, or walked now for a run that kept none (a program's)."""
    if leaf.critical_path is not None:
        return leaf.critical_path
    start_s = [float(result.stragglers.get(d, 0.0)) for d in range(topology.n_devices)]
    return critical_path(topology, leaf.schedule.transfers, leaf.playback, start_s=start_s, cut_through=cut_through).shifted(offset)


def _add_paths(a: CriticalPath, b: CriticalPath) -> CriticalPath:
    waited: dict[str, float] = defaultdict(float)
    for name, wait in (*a.queued_on, *b.queued_on):
        waited[name] += wait
    queued_on = tuple(sorted(waited.items(), key=lambda kv: (-kv[1], kv[0])))
    return CriticalPath(
        a.transfers + b.transfers,
        a.hops + b.hops,
        a.latency_s + b.latency_s,
        a.transmission_s + b.transmission_s,
        a.queueing_s + b.queueing_s,
        a.straggle_s + b.straggle_s,
        queued_on,
    )


def _route_facts(result: Result) -> tuple[int, int, int, tuple[int, int]]:
    """(transfers, longest route, transfers over more than one link, (smallest, largest) transfer bytes)."""
    transfers = longest = multi = 0
    smallest, largest = math.inf, 0
    for leaf in result.leaves:
        playback = leaf.playback
        lengths = _route_lengths(playback.routes)
        transfers += len(playback.nbytes)
        longest = max(longest, int(lengths.max(initial=0)))
        multi += int(np.count_nonzero(lengths > 1))
        if len(playback.nbytes):
            nbytes = as_array(playback.nbytes, np.int64)
            smallest, largest = min(smallest, int(nbytes.min())), max(largest, int(nbytes.max()))
    return transfers, longest, multi, ((int(smallest), int(largest)) if transfers else (0, 0))


def _route_lengths(routes: Any) -> np.ndarray:
    """Links crossed by each transfer: from the distinct routes the engine kept, or from the routes themselves."""
    kept = routes.columns() if isinstance(routes, RouteList) else None
    if kept is not None and len(kept[0]) == len(routes):
        inverse, distinct = kept
        return np.array([len(r) for r in distinct], np.int64)[inverse]
    return np.fromiter((len(r) for r in routes or ()), np.int64)


def path_facts(result: Result, topology: Topology | None = None) -> PathFacts:
    """The critical path and route facts of a run, without the full statistics.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> facts = path_facts(netsim.all_gather(np.zeros((4, 2**18), np.float32), axis_index_groups=[[0, 2], [1, 3]], algorithm="ring"))
    >>> facts.max_route_hops, facts.longest_queue
    (2, {'0->1': 1, '1->2': 1, '2->3': 1, '3->0': 1})
    """
    topology = topology if topology is not None else getattr(result, "topology_obj", None)
    if topology is None:
        raise ValueError(f"result of {result.collective} on {result.topology} carries no topology; pass topology=")
    cut_through = getattr(result, "forwarding", "cut_through") != "store_and_forward"
    links = topology.links
    names = {link: topology.link_name(link) for link in links}
    latency = {link: topology.link(link)["latency_s"] for link in links}
    path = CriticalPath(0, 0, 0.0, 0.0, 0.0, 0.0)
    queues: dict[str, int] = {}
    offset = 0.0
    walked = []
    for leaf in result.leaves:
        hops = _Hops(leaf.playback, latency, cut_through)
        walked.append(_leaf_path(result, leaf, topology, cut_through, offset))
        path = _add_paths(path, _breakdown(walked[-1], hops, latency, names, cut_through, offset))
        for link, depth in _longest_queues(leaf.playback, hops).items():
            queues[names[link]] = max(queues.get(names[link], 0), depth)
        offset += leaf.playback.time
    path = replace(path, path=WalkedPath.joined(walked, result.time))
    transfers, longest, multi, chunks = _route_facts(result)
    return PathFacts(path, transfers, longest, multi, chunks, {name: q for name, q in queues.items() if q})
