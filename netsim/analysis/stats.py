"""Statistics of a run, read from its playback: devices, links, steps and the critical path.

Everything here is computed from what the engine recorded while it played the
schedule (per-transfer send and arrival times and sizes, every hop with its start
and end, each link's :class:`~netsim.engine.LinkStats`); nothing is simulated again.

Per device
    bytes sent and received, when its last chunk arrived, and memory: its input, its
    output, and the most bytes it held at once. Held bytes are the chunks in its
    buffer plus receive buffers for chunks on their way to it (allocated when the
    sender starts, turned into the stored chunk on arrival, or freed once added in
    for a reduction). An all_gather ends holding n blocks: n times its input.
Per link
    bytes carried, messages, busy time, utilisation (busy time over the run), the
    longest queue (messages that waited for it at once, not counting the one on the
    wire) and the total time messages waited for it.
Per step
    for each algorithm step and device, when the device first sent and when its last
    chunk of that step arrived, so stragglers stand out.
Critical path
    the chain of transfers that ends with the last arrival, walked back through the
    arrivals each transfer waited for, and its time split into per-hop latency,
    transmission, queueing behind other messages and late starts. The parts add up
    to the simulated time exactly.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from netsim.engine import transfer_columns
from netsim.network.topology import LinkId, Topology

if TYPE_CHECKING:
    from netsim.result import Result

__all__ = ["CriticalPath", "DeviceStats", "LinkUsage", "PathFacts", "RunStats", "StepSummary", "StepTiming", "path_facts", "run_stats"]

STEP_DETAIL_LIMIT = 100_000
"""Most (step, device) timings kept; beyond it only per-step summaries are."""


@dataclass(frozen=True)
class DeviceStats:
    """What one device did.

    Attributes
    ----------
    device : int
    name : str
        ``3`` on a ring, ``(0,1)`` on a torus.
    bytes_sent, bytes_received : int
    finish_s : float
        When its last incoming chunk arrived (0 if it receives nothing).
    input_bytes, output_bytes : int
        Its share of the input and of the output.
    peak_bytes : int
        Most bytes held at once: chunks in its buffer plus receive buffers.
    peak_in_flight_bytes : int
        Most bytes on their way to it at once.
    """

    device: int
    name: str
    bytes_sent: int
    bytes_received: int
    finish_s: float
    input_bytes: int
    output_bytes: int
    peak_bytes: int
    peak_in_flight_bytes: int


@dataclass(frozen=True)
class LinkUsage:
    """What one directed link did over the whole run.

    Attributes
    ----------
    link : tuple
        ``(source device, destination device, (axis, step))``.
    name : str
        e.g. ``(0,1)->(0,2)``.
    bytes, messages : int
    busy_s : float
        Time a message was on the wire.
    utilisation : float
        ``busy_s`` over the run's time.
    longest_queue : int
        Most messages waiting for the link at once (0: nobody ever waited).
    wait_s : float
        Time messages spent waiting for it, summed.
    """

    link: LinkId
    name: str
    bytes: int
    messages: int
    busy_s: float
    utilisation: float
    longest_queue: int
    wait_s: float


@dataclass(frozen=True)
class StepTiming:
    """One algorithm step on one device: its first send and its last arrival (NaN if none)."""

    leaf: int
    step: int
    phase: str
    device: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class StepSummary:
    """One algorithm step over all devices.

    Attributes
    ----------
    leaf, step : int
    phase : str
    start_s : float
        The first send of the step.
    end_s : float
        The last arrival of the step.
    first_done_s : float
        The earliest time a device had all of its chunks of the step.
    straggler : int
        The device whose chunks of the step arrived last.
    """

    leaf: int
    step: int
    phase: str
    start_s: float
    end_s: float
    first_done_s: float
    straggler: int


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

    Cheaper than :class:`RunStats` (no memory or step accounting); see :func:`path_facts`.

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


@dataclass(frozen=True)
class RunStats:
    """All statistics of one run. Build with :func:`run_stats`.

    Attributes
    ----------
    time_s : float
    devices : tuple of DeviceStats
    links : tuple of LinkUsage
        Every link of the topology, busiest first.
    steps : tuple of StepSummary
    step_timings : tuple of StepTiming
        Per step and device (empty beyond :data:`STEP_DETAIL_LIMIT` entries).
    critical_path : CriticalPath
    transfers : int
    transfer_bytes : int
        Bytes of all transfers (each counted once).
    hop_bytes : int
        Bytes times hops: what the links must have carried in total.
    max_route_hops : int
        The longest route any transfer took.
    multi_hop_transfers : int
        Transfers that crossed more than one link.
    chunk_bytes : tuple of int
        Smallest and largest transfer, bytes.
    """

    time_s: float
    devices: tuple[DeviceStats, ...]
    links: tuple[LinkUsage, ...]
    steps: tuple[StepSummary, ...]
    step_timings: tuple[StepTiming, ...]
    critical_path: CriticalPath
    transfers: int
    transfer_bytes: int
    hop_bytes: int
    max_route_hops: int
    multi_hop_transfers: int
    chunk_bytes: tuple[int, int]

    def busiest(self, count: int = 5) -> tuple[LinkUsage, ...]:
        """The ``count`` busiest links (by busy time, then bytes, then name)."""
        return self.links[:count]

    def path_facts(self) -> PathFacts:
        """The facts an explanation needs, from these statistics."""
        queues = {u.name: u.longest_queue for u in self.links if u.longest_queue}
        return PathFacts(self.critical_path, self.transfers, self.max_route_hops, self.multi_hop_transfers, self.chunk_bytes, queues)


def _leaf_arrays(tree: Any) -> list[Any]:
    if isinstance(tree, dict):
        return [leaf for key in sorted(tree) for leaf in _leaf_arrays(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [leaf for value in tree for leaf in _leaf_arrays(value)]
    return [tree]


def _output_bytes_per_device(output: Any, n_devices: int) -> int:
    total = 0
    for leaf in _leaf_arrays(output):
        nbytes = getattr(leaf, "nbytes", None)
        if nbytes is None:
            nbytes = np.asarray(leaf).nbytes
        total += int(nbytes) // max(n_devices, 1)
    return total


def _device_name(topology: Topology, device: int) -> str:
    if len(topology.dims) == 1:
        return str(device)
    return "(" + ",".join(map(str, topology.coord(device))) + ")"


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


def _memory(schedule: Any, playback: Any, n_devices: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per device: peak extra bytes over its input, bytes held extra at the end, peak in flight.

    Events, in time order (arrivals, then sends at equal times, then by transfer): a
    transfer is in flight to its destination from when it is sent until it arrives; a
    device holds a chunk extra from the first arrival of it, unless it touched the chunk
    first by sending it (its input) or the arrival adds into a chunk it had. Computed on
    whole arrays: each device's running totals are cumulative sums in event order.
    """
    columns = transfer_columns(schedule.transfers)
    src, dst, reduce, key = (np.asarray(columns[name]) for name in ("src", "dst", "reduce", "key_index"))
    n = len(src)
    zeros = np.zeros(n_devices, dtype=np.int64)
    if n == 0:
        return zeros, zeros.copy(), zeros.copy()
    sent = np.asarray(playback.sent_at, dtype=float)
    arrived = np.asarray(playback.arrived_at, dtype=float)
    size = np.asarray(playback.nbytes, dtype=np.int64)
    index = np.arange(n, dtype=np.int64)
    # events: arrivals (kind 0, at dst), incoming (kind 1, at dst, when sent), sends (kind 2, at src)
    when = np.concatenate([arrived, sent, sent])
    kind = np.repeat(np.arange(3, dtype=np.int64), n)
    transfer = np.concatenate([index, index, index])
    device = np.concatenate([dst, dst, src])
    rank = np.empty(3 * n, np.int64)
    rank[np.lexsort((transfer, kind, when))] = np.arange(3 * n)
    # The first arrival or send of each (device, chunk): a plain arrival there adds a chunk.
    touching = np.flatnonzero(kind != 1)
    by_chunk = touching[np.lexsort((rank[touching], key[transfer[touching]], device[touching]))]
    group = device[by_chunk] * (int(key.max()) + 1) + key[transfer[by_chunk]]
    first = by_chunk[np.concatenate([[True], group[1:] != group[:-1]])]
    adds = first[(kind[first] == 0) & ~reduce[transfer[first]]]
    extra_delta = np.zeros(3 * n, np.int64)
    extra_delta[adds] = size[transfer[adds]]
    flight_delta = np.where(kind == 1, size[transfer], np.where(kind == 0, -size[transfer], 0))
    # Running totals per device, in event order.
    order = np.lexsort((rank, device))
    device, extra_delta, flight_delta = device[order], extra_delta[order], flight_delta[order]
    starts = np.flatnonzero(np.concatenate([[True], device[1:] != device[:-1]]))
    flight = _running(flight_delta, starts)
    held = _running(extra_delta, starts) + flight
    owners = device[starts]
    peak, peak_flight, extra = zeros.copy(), zeros.copy(), zeros.copy()
    peak[owners] = np.maximum(np.maximum.reduceat(held, starts), 0)
    peak_flight[owners] = np.maximum(np.maximum.reduceat(flight, starts), 0)
    extra[owners] = np.add.reduceat(extra_delta, starts)
    return peak, extra, peak_flight


def _running(delta: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Cumulative sums of ``delta`` restarting at each of ``starts`` (sorted, starting with 0).

    Examples
    --------
    >>> _running(np.array([5, -2, 1, 7, 3]), np.array([0, 3])).tolist()
    [5, 3, 4, 7, 10]
    """
    total = np.cumsum(delta)
    before = np.concatenate([[0], total])[starts]  # the running sum just before each segment
    return total - np.repeat(before, np.diff(np.append(starts, len(delta))))


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


def run_stats(result: Result, topology: Topology | None = None) -> RunStats:
    """Statistics of a simulated collective, from its playback.

    Parameters
    ----------
    result : Result
    topology : Topology, optional
        The topology it ran on; defaults to ``result.topology_obj``.

    Raises
    ------
    ValueError
        If the result does not carry its topology and none is given.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> stats = run_stats(netsim.all_gather(np.zeros((4, 256), np.float32), algorithm="ring"))
    >>> [d.bytes_received for d in stats.devices]
    [3072, 3072, 3072, 3072]
    >>> stats.devices[0].output_bytes // stats.devices[0].input_bytes   # all_gather: n times the input
    4
    >>> stats.busiest(1)[0].name, stats.busiest(1)[0].longest_queue
    ('0->1', 0)
    """
    derived = getattr(result, "derived", None) if topology is None else None
    if derived is not None and "stats" in derived:
        return derived["stats"]
    topology = topology if topology is not None else getattr(result, "topology_obj", None)
    if topology is None:
        raise ValueError(f"result of {result.collective} on {result.topology} carries no topology; pass topology=")
    n = result.n_devices
    cut_through = getattr(result, "forwarding", "cut_through") != "store_and_forward"
    links = topology.links
    names = {link: topology.link_name(link) for link in links}
    latency = {link: topology.link(link)["latency_s"] for link in links}
    sent = np.zeros(n, dtype=np.int64)
    received = np.zeros(n, dtype=np.int64)
    finish = np.zeros(n)
    inputs = np.zeros(n, dtype=np.int64)
    peak_total = np.zeros(n, dtype=np.int64)
    held_before = np.zeros(n, dtype=np.int64)
    peak_flight = np.zeros(n, dtype=np.int64)
    link_bytes: dict[LinkId, int] = defaultdict(int)
    link_messages: dict[LinkId, int] = defaultdict(int)
    link_busy: dict[LinkId, float] = defaultdict(float)
    link_wait: dict[LinkId, float] = defaultdict(float)
    link_queue: dict[LinkId, int] = defaultdict(int)
    steps: list[StepSummary] = []
    timings: list[StepTiming] = []
    path = CriticalPath(0, 0, 0.0, 0.0, 0.0, 0.0)
    transfer_bytes = hop_bytes = 0
    detail = sum(len(leaf.schedule.transfers) for leaf in result.leaves) <= STEP_DETAIL_LIMIT
    offset = 0.0
    for index, leaf in enumerate(result.leaves):
        schedule, playback = leaf.schedule, leaf.playback
        transfers = schedule.transfers
        inputs += int(np.prod(leaf.shape[1:], dtype=np.int64)) * np.dtype(leaf.dtype).itemsize
        hops = _Hops(playback, latency, cut_through)
        columns = transfer_columns(transfers)
        src, dst = np.asarray(columns["src"], np.int64), np.asarray(columns["dst"], np.int64)
        size = np.asarray(playback.nbytes, np.int64)
        np.add.at(sent, src, size)
        np.add.at(received, dst, size)
        np.maximum.at(finish, dst, offset + np.asarray(playback.arrived_at, float))
        hop_bytes += int(size @ np.asarray(hops.count, np.int64))
        transfer_bytes += sum(playback.nbytes)
        for link, stats in playback.links.items():
            link_bytes[link] += stats.bytes
            link_messages[link] += stats.messages
            link_busy[link] += stats.busy_s
        for i, hop in enumerate(playback.hops):
            link_wait[hop.link] += hops.wait[i]
        for link, depth in _longest_queues(playback, hops).items():
            link_queue[link] = max(link_queue[link], depth)
        peak, extra, flight = _memory(schedule, playback, n)
        peak_total = np.maximum(peak_total, held_before + peak)
        held_before = held_before + extra
        peak_flight = np.maximum(peak_flight, flight)
        path = _add_paths(path, _critical_path(schedule, playback, hops, latency, names))
        steps_of_leaf, timings_of_leaf = _steps(index, schedule, playback, offset, detail)
        steps += steps_of_leaf
        timings += timings_of_leaf
        offset += playback.time
    time = result.time
    usage = [
        LinkUsage(
            link,
            names[link],
            link_bytes[link],
            link_messages[link],
            link_busy[link],
            link_busy[link] / time if time > 0 else 0.0,
            link_queue[link],
            link_wait[link],
        )
        for link in links
    ]
    usage.sort(key=lambda u: (-u.busy_s, -u.bytes, u.name))
    output = _output_bytes_per_device(result.output, n)
    devices = tuple(
        DeviceStats(
            d,
            _device_name(topology, d),
            int(sent[d]),
            int(received[d]),
            float(finish[d]),
            int(inputs[d]),
            output,
            int(inputs[d] + peak_total[d]),
            int(peak_flight[d]),
        )
        for d in range(n)
    )
    n_transfers, max_hops, multi_hop, chunks = _route_facts(result)
    stats = RunStats(time, devices, tuple(usage), tuple(steps), tuple(timings), path, n_transfers, transfer_bytes, hop_bytes, max_hops, multi_hop, chunks)
    if derived is not None:
        derived["stats"] = stats
    return stats


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
    derived = getattr(result, "derived", None) if topology is None else None
    if derived is not None and "stats" in derived:
        return derived["stats"]
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


def _steps(leaf: int, schedule: Any, playback: Any, offset: float, detail: bool) -> tuple[list[StepSummary], list[StepTiming]]:
    start: dict[tuple[int, int], float] = {}
    end: dict[tuple[int, int], float] = {}
    phase: dict[int, str] = {}
    for i, t in enumerate(schedule.transfers):
        s, a = offset + playback.sent_at[i], offset + playback.arrived_at[i]
        key = (t.step, t.src)
        start[key] = min(start.get(key, math.inf), s)
        key = (t.step, t.dst)
        end[key] = max(end.get(key, -math.inf), a)
        phase.setdefault(t.step, t.phase)
    summaries = []
    by_step: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for (step, device), value in end.items():
        by_step[step].append((device, value))
    first_send: dict[int, float] = {}
    for (step, _), value in start.items():
        first_send[step] = min(first_send.get(step, math.inf), value)
    for step in sorted(phase):
        ends = by_step.get(step, [])
        straggler, last = max(ends, key=lambda dv: (dv[1], -dv[0])) if ends else (-1, math.nan)
        first_done = min((v for _, v in ends), default=math.nan)
        summaries.append(StepSummary(leaf, step, phase[step], first_send.get(step, math.nan), last, first_done, straggler))
    timings = []
    if detail:
        for step, device in sorted(set(start) | set(end)):
            timings.append(StepTiming(leaf, step, phase[step], device, start.get((step, device), math.nan), end.get((step, device), math.nan)))
    return summaries, timings
