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
    the run's one critical path (``result.critical_path``, walked once when the run
    played, :mod:`netsim.analysis.critical_path`), its time split into per-hop
    latency, transmission, queueing behind other messages and late starts. The parts
    add up to the simulated time exactly.

:func:`run_stats` gathers them all into :class:`RunStats`, with the per-device and
per-link statistics computed here; memory over time comes from
:mod:`netsim.analysis.memory_over_time`, the steps from :mod:`netsim.analysis.steps`,
the critical path's split and route facts from :mod:`netsim.analysis.path_stats`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from netsim.analysis.memory_over_time import _memory
from netsim.analysis.path_stats import CriticalPath, PathFacts, _add_paths, _breakdown, _Hops, _leaf_path, _longest_queues, _route_facts, path_facts
from netsim.analysis.per_result import once_per_result
from netsim.analysis.steps import StepSummary, StepTiming, _steps
from netsim.engine import ArrayList, ColumnList, Playback, as_array, transfer_columns
from netsim.engine.critical_path import CriticalPath as WalkedPath
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


def _timing_only(result: Result) -> bool:
    """A run whose chunks carried sizes only (``data="none"``): it has no output arrays to measure."""
    return any(leaf is None for leaf in _leaf_arrays(result.output)) and all(run.output_shape is not None for run in result.leaves)


def _planned_output_bytes(result: Result) -> int:
    """One device's output bytes from the output shapes the run planned (timing-only runs)."""
    return sum(int(np.prod(run.output_shape, dtype=np.int64)) * np.dtype(run.dtype).itemsize for run in result.leaves)


def _device_name(topology: Topology, device: int) -> str:
    if len(topology.dims) == 1:
        return str(device)
    return "(" + ",".join(map(str, topology.coord(device))) + ")"


def _with_time_columns(playback: Playback) -> Playback:
    """The playback with its send and arrival times also kept as arrays, converted once for every statistic."""
    times = {}
    for name in ("sent_at", "arrived_at"):
        values = getattr(playback, name)
        times[name] = values if isinstance(values, (ArrayList, ColumnList)) else ArrayList(values, as_array(values, float))
    return replace(playback, **times)


@once_per_result
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

    Notes
    -----
    Computed once per result (:func:`~netsim.analysis.per_result.once_per_result`):
    a report that asks again gets the same object back.

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
    topology = topology if topology is not None else getattr(result, "topology_obj", None)
    if topology is None:
        raise ValueError(f"result of {result.collective} on {result.topology} carries no topology; pass topology=")
    n = result.n_devices
    cut_through = getattr(result, "forwarding", "cut_through") != "store_and_forward"
    links = topology.links
    node = [_device_name(topology, d) for d in range(topology.n_devices)]  # as topology.link_name, each device's name made once
    names = {link: f"{node[link[0]]}->{node[link[1]]}" if max(link[0], link[1]) < len(node) else topology.link_name(link) for link in links}  # (a DCN's NICs)
    latency = {link: topology.link(link)["latency_s"] for link in links}
    sent = np.zeros(n, dtype=np.int64)
    received = np.zeros(n, dtype=np.int64)
    finish = np.zeros(n)
    inputs = np.zeros(n, dtype=np.int64)
    peak_total = np.zeros(n, dtype=np.int64)
    held_before = np.zeros(n, dtype=np.int64)
    peak_flight = np.zeros(n, dtype=np.int64)
    number = {link: k for k, link in enumerate(links)}
    link_bytes = np.zeros(len(links), np.int64)
    link_messages = np.zeros(len(links), np.int64)
    link_busy = np.zeros(len(links))
    link_wait = np.zeros(len(links))
    link_queue = np.zeros(len(links), np.int64)
    steps: list[StepSummary] = []
    timings: list[StepTiming] = []
    path = CriticalPath(0, 0, 0.0, 0.0, 0.0, 0.0)
    transfer_bytes = hop_bytes = 0
    detail = sum(len(leaf.schedule.transfers) for leaf in result.leaves) <= STEP_DETAIL_LIMIT
    offset = 0.0
    walked = []
    for index, leaf in enumerate(result.leaves):
        schedule, playback = leaf.schedule, _with_time_columns(leaf.playback)
        inputs += int(np.prod(leaf.shape[1:], dtype=np.int64)) * np.dtype(leaf.dtype).itemsize
        peak, extra, flight = _memory(schedule, playback, n)  # (before the hops' arrays: their temporaries never add up)
        peak_total = np.maximum(peak_total, held_before + peak)
        held_before = held_before + extra
        peak_flight = np.maximum(peak_flight, flight)
        steps_of_leaf, timings_of_leaf = _steps(index, schedule, playback, offset, detail, n)
        steps += steps_of_leaf
        timings += timings_of_leaf
        hops = _Hops(playback, latency, cut_through)
        columns = transfer_columns(schedule.transfers)
        src, dst = np.asarray(columns["src"], np.int64), np.asarray(columns["dst"], np.int64)
        size = as_array(playback.nbytes, np.int64)
        np.add.at(sent, src, size)
        np.add.at(received, dst, size)
        np.maximum.at(finish, dst, offset + as_array(playback.arrived_at, float))
        hop_bytes += int(size @ hops.count)
        transfer_bytes += int(size.sum())
        for link, stats in playback.links.items():
            k = number[link]
            link_bytes[k] += stats.bytes
            link_messages[k] += stats.messages
            link_busy[k] += stats.busy_s
        on_links = np.array([number[link] for link in hops.link_ids], np.int64)
        np.add.at(link_wait, on_links, hops.link_sums(hops.wait))
        for link, depth in _longest_queues(playback, hops).items():
            link_queue[number[link]] = max(link_queue[number[link]], depth)
        walked.append(_leaf_path(result, leaf, topology, cut_through, offset))
        path = _add_paths(path, _breakdown(walked[-1], hops, latency, names, cut_through, offset))
        del hops
        offset += playback.time
    time = result.time
    busy, wait = link_busy.tolist(), link_wait.tolist()
    usage = [
        LinkUsage(link, names[link], int(link_bytes[k]), int(link_messages[k]), busy[k], busy[k] / time if time > 0 else 0.0, int(link_queue[k]), wait[k])
        for k, link in enumerate(links)
    ]
    usage.sort(key=lambda u: (-u.busy_s, -u.bytes, u.name))
    output = _output_bytes_per_device(result.output, n) if not _timing_only(result) else _planned_output_bytes(result)
    devices = tuple(
        DeviceStats(
            d,
            node[d],
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
    path = replace(path, path=WalkedPath.joined(walked, result.time))
    n_transfers, max_hops, multi_hop, chunks = _route_facts(result)
    stats = RunStats(time, devices, tuple(usage), tuple(steps), tuple(timings), path, n_transfers, transfer_bytes, hop_bytes, max_hops, multi_hop, chunks)
    return stats
