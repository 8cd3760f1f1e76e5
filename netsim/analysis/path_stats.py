"""The critical path of a run and the facts about its routes, from each hop's wait.

Each hop waited from when its message was ready at the link (sent, or arrived over the
previous link) until the link took it. Walked back from the last arrival through the
arrivals each transfer waited for, those waits split the simulated time into per-hop
latency, transmission, queueing and late starts (:class:`CriticalPath`); counted per link
they give its longest queue. :func:`path_facts` gives the path and route facts alone,
cheaper than the full :func:`~netsim.analysis.stats.run_stats`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from netsim.network.topology import LinkId, Topology

if TYPE_CHECKING:
    from netsim.result import Result

__all__ = ["CriticalPath", "PathFacts", "path_facts"]


@dataclass(frozen=True)
class CriticalPath:
    """The chain of transfers that sets the simulated time, and what its time is made of.

    ``latency_s + transmission_s + queueing_s + straggle_s`` equals the simulated time.

    Attributes
    ----------
    transfers, hops : int
        Transfers on the chain and the links they crossed.
    latency_s : float
        Per-hop latency paid along the chain.
    transmission_s : float
        Time the chain's messages were being sent (bytes over bandwidth, once per
        hop with store-and-forward).
    queueing_s : float
        Time the chain's messages waited for links busy with other messages.
    straggle_s : float
        Time lost to devices that started late.
    queued_on : tuple of (str, float)
        Links where the chain waited, with the wait, longest first.
    """

    transfers: int
    hops: int
    latency_s: float
    transmission_s: float
    queueing_s: float
    straggle_s: float
    queued_on: tuple[tuple[str, float], ...] = ()


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
    """Per-hop waits of one playback, and each transfer's hops as a chain of indices."""

    def __init__(self, playback: Any, latency: dict[LinkId, float], cut_through: bool) -> None:
        n = len(playback.sent_at)
        self.first = [-1] * n  # index in playback.hops of each transfer's first hop
        self.count = [0] * n
        self.next: list[int] = []  # index of the same transfer's next hop, or -1
        self.wait: list[float] = []
        self.ready: list[float] = []
        previous: dict[int, int] = {}
        for index, hop in enumerate(playback.hops):
            t = hop.transfer
            p = previous.get(t)
            if p is None:
                ready = playback.sent_at[t]
                self.first[t] = index
            else:
                prev = playback.hops[p]
                ready = (prev.start if cut_through else prev.end) + latency[prev.link]
                self.next[p] = index
            previous[t] = index
            self.count[t] += 1
            self.next.append(-1)
            self.ready.append(ready)
            self.wait.append(max(0.0, hop.start - ready))


def _longest_queues(playback: Any, hops: _Hops) -> dict[LinkId, int]:
    """Most messages waiting at once for each link (intervals [ready, start))."""
    events: dict[LinkId, list[tuple[float, int]]] = defaultdict(list)
    for index, hop in enumerate(playback.hops):
        if hops.wait[index] > 0:
            events[hop.link].append((hops.ready[index], 1))
            events[hop.link].append((hop.start, -1))
    longest = {}
    for link, marks in events.items():
        marks.sort()  # at equal times -1 sorts first: a message leaving makes room first
        depth = best = 0
        for _, delta in marks:
            depth += delta
            best = max(best, depth)
        longest[link] = best
    return longest


def _critical_path(schedule: Any, playback: Any, hops: _Hops, latency: dict[LinkId, float], names: dict[LinkId, str]) -> CriticalPath:
    if not playback.arrived_at:
        return CriticalPath(0, 0, 0.0, 0.0, 0.0, 0.0)
    arrived = playback.arrived_at
    current = max(range(len(arrived)), key=lambda i: (arrived[i], -i))
    n_transfers = n_hops = 0
    lat = trans = queue = straggle = 0.0
    waited: dict[str, float] = defaultdict(float)
    while True:
        sent = delivered = playback.sent_at[current]
        chain_latency = chain_wait = 0.0
        index = hops.first[current]
        while index >= 0:
            hop = playback.hops[index]
            chain_latency += latency[hop.link]
            if hops.wait[index] > 0:
                chain_wait += hops.wait[index]
                waited[names[hop.link]] += hops.wait[index]
            delivered = hop.end + latency[hop.link]
            index = hops.next[index]
        late = arrived[current] - delivered  # the receiver had not started yet
        late = late if late > 1e-9 * arrived[current] else 0.0  # not rounding noise
        lat += chain_latency
        queue += chain_wait
        trans += arrived[current] - sent - chain_latency - chain_wait - late
        straggle += late
        n_transfers += 1
        n_hops += hops.count[current]
        deps = schedule.transfers[current].deps
        if not deps:
            straggle += sent  # the sender started late (0 when it started at once)
            break
        previous = max(deps, key=lambda d: (arrived[d], -d))
        straggle += max(0.0, sent - arrived[previous])
        current = previous
    queued_on = tuple(sorted(waited.items(), key=lambda kv: (-kv[1], kv[0])))
    return CriticalPath(n_transfers, n_hops, lat, trans, queue, straggle, queued_on)


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
        lengths = [len(r) for r in playback.routes] if playback.routes else []
        transfers += len(playback.nbytes)
        longest = max(longest, max(lengths, default=0))
        multi += sum(length > 1 for length in lengths)
        if playback.nbytes:
            smallest, largest = min(smallest, min(playback.nbytes)), max(largest, max(playback.nbytes))
    return transfers, longest, multi, ((int(smallest), int(largest)) if transfers else (0, 0))


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
    for leaf in result.leaves:
        hops = _Hops(leaf.playback, latency, cut_through)
        path = _add_paths(path, _critical_path(leaf.schedule, leaf.playback, hops, latency, names))
        for link, depth in _longest_queues(leaf.playback, hops).items():
            queues[names[link]] = max(queues.get(names[link], 0), depth)
    transfers, longest, multi, chunks = _route_facts(result)
    return PathFacts(path, transfers, longest, multi, chunks, {name: q for name, q in queues.items() if q})
