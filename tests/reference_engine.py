"""The spine's engine, kept verbatim as a reference model for tests/test_engine_reference.py.

This is how netsim first played schedules: every directed link a SimPy process
serving a FIFO queue, every device a SimPy process, a SimPy event per queue
operation. It is slow (3.5 events per chunk move) but plainly right, so the
fast engine in :mod:`netsim.engine.fast` is checked against it, event for event, on
random schedules: same times, same hops in the same order, same statistics,
same buffers. Only the docstrings and the EngineError class differ (it raises
netsim's own).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import simpy

from netsim.engine import EngineError
from netsim.network.topology import LinkId, Topology

__all__ = ["play"]


class TransferLike(Protocol):
    """What the engine needs to know about a transfer (see :class:`netsim.algorithms.transfers.Transfer`)."""

    src: int
    dst: int
    key: Hashable
    reduce: bool
    direction: int
    deps: tuple[int, ...]


@dataclass(slots=True)
class Hop:
    """One message crossing one link."""

    transfer: int
    link: LinkId
    start: float
    end: float


@dataclass(slots=True)
class LinkStats:
    """What one directed link did during the run."""

    bytes: int = 0
    messages: int = 0
    busy_s: float = 0.0
    max_queue: int = 0


@dataclass
class Playback:
    """Everything a run produced.

    Attributes
    ----------
    buffers : list of dict
        Each device's chunks at the end.
    time : float
        When the last transfer arrived, seconds.
    sent_at, arrived_at : list of float
        Per transfer: when it left its source, when its tail reached its destination.
    hops : list of Hop
        Every link crossing, in the order they started.
    links : dict
        :class:`LinkStats` for every link of the topology.
    events : int
        SimPy events processed.
    """

    buffers: list[dict[Hashable, Any]]
    time: float
    sent_at: list[float]
    arrived_at: list[float]
    nbytes: list[int]
    hops: list[Hop]
    links: dict[LinkId, LinkStats]
    events: int = 0
    routes: list[tuple[LinkId, ...]] = field(default_factory=list)


class _Message:
    __slots__ = ("hop", "nbytes", "payload", "route", "tail_at", "transfer")

    def __init__(self, transfer: int, payload: Any, route: tuple[LinkId, ...], now: float) -> None:
        self.transfer = transfer
        self.payload = payload
        self.nbytes = int(payload.nbytes)
        self.route = route
        self.hop = 0
        self.tail_at = now


class _Link:
    """A directed link: a FIFO queue served by a SimPy process."""

    def __init__(self, network: _Network, link: LinkId, bandwidth_Bps: float, latency_s: float) -> None:
        self.network = network
        self.id = link
        self.bandwidth_Bps = bandwidth_Bps
        self.latency_s = latency_s
        self.queue: deque[_Message] = deque()
        self.stats = LinkStats()
        self._idle: simpy.Event | None = None
        network.env.process(self._serve())

    def put(self, message: _Message) -> None:
        self.queue.append(message)
        self.stats.max_queue = max(self.stats.max_queue, len(self.queue))
        if self._idle is not None and not self._idle.triggered:
            self._idle.succeed()

    def _serve(self):
        env, network = self.network.env, self.network
        while True:
            while not self.queue:
                self._idle = env.event()
                yield self._idle
            message = self.queue.popleft()
            start = env.now
            end = max(start + message.nbytes / self.bandwidth_Bps, message.tail_at)
            self.stats.bytes += message.nbytes
            self.stats.messages += 1
            self.stats.busy_s += end - start
            network.hops.append(Hop(message.transfer, self.id, start, end))
            message.tail_at = end + self.latency_s
            message.hop += 1
            if message.hop < len(message.route):
                head_delay = self.latency_s if network.cut_through else end - start + self.latency_s
                network.after(head_delay, network.links[message.route[message.hop]].put, message)
            else:
                network.after(end - start + self.latency_s, network.devices[message.route[-1][1]].deliver, message)
            yield env.timeout(end - start)


class _Device:
    """A device: a SimPy process that sends chunks when they are ready and takes in arrivals."""

    def __init__(self, network: _Network, index: int, buffer: dict[Hashable, Any], start_s: float) -> None:
        self.network = network
        self.index = index
        self.buffer = buffer
        self.start_s = start_s
        self.inbox: list[_Message] = []
        self.ready: list[int] = []
        self.expected = 0
        self._wake: simpy.Event | None = None
        network.env.process(self._run())

    def deliver(self, message: _Message) -> None:
        self.inbox.append(message)
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()

    def _run(self):
        network = self.network
        if self.start_s > 0:
            yield network.env.timeout(self.start_s)
            for message in self._drain():
                self._take(message)
        self._send_ready()
        while self.expected:
            self._wake = network.env.event()
            yield self._wake
            for message in self._drain():
                self._take(message)
            self._send_ready()

    def _drain(self) -> list[_Message]:
        inbox, self.inbox = self.inbox, []
        self.expected -= len(inbox)
        return inbox

    def _take(self, message: _Message) -> None:
        network = self.network
        t = network.transfers[message.transfer]
        network.arrived_at[message.transfer] = network.env.now
        if t.reduce:
            if t.key not in self.buffer:
                raise EngineError(f"device {self.index} was sent chunk {t.key!r} to add into, but holds no such chunk")
            self.buffer[t.key] = self.buffer[t.key] + message.payload
        else:
            self.buffer[t.key] = message.payload
        for waiting in network.dependents[message.transfer]:
            network.missing[waiting] -= 1
            if network.missing[waiting] == 0:
                self.ready.append(waiting)

    def _send_ready(self) -> None:
        network = self.network
        ready, self.ready = self.ready, []
        for index in ready:
            t = network.transfers[index]
            if t.key not in self.buffer:
                raise EngineError(f"device {self.index} must send chunk {t.key!r} (transfer #{index}) but does not hold it")
            message = _Message(index, self.buffer[t.key], network.routes[index], network.env.now)
            network.sent_at[index] = network.env.now
            network.nbytes[index] = message.nbytes
            if message.route:
                network.links[message.route[0]].put(message)
            else:
                network.after(0.0, network.devices[t.dst].deliver, message)


class _Network:
    def __init__(self, topology: Topology, transfers: Sequence[TransferLike], buffers: Sequence[dict], cut_through: bool, start_s: Sequence[float]) -> None:
        self.env = simpy.Environment()
        self.cut_through = cut_through
        self.transfers = transfers
        self.hops: list[Hop] = []
        n = len(transfers)
        self.sent_at = [float("nan")] * n
        self.arrived_at = [float("nan")] * n
        self.nbytes = [0] * n
        self.routes = [topology.route(t.src, t.dst, t.direction) for t in transfers]
        self.missing = [len(t.deps) for t in transfers]
        self.dependents: list[list[int]] = [[] for _ in range(n)]
        for index, t in enumerate(transfers):
            for d in t.deps:
                self.dependents[d].append(index)
        self.links = {link: _Link(self, link, data["bandwidth_Bps"], data["latency_s"]) for link, data in ((lk, topology.link(lk)) for lk in topology.links)}
        self.devices = [_Device(self, d, dict(buffers[d]), start_s[d]) for d in range(topology.n_devices)]
        for index, t in enumerate(transfers):
            self.devices[t.dst].expected += 1
            if not t.deps:
                self.devices[t.src].ready.append(index)

    def after(self, delay: float, callback, message: _Message) -> None:
        event = self.env.timeout(delay)
        event.callbacks.append(lambda _event: callback(message))


def play(
    topology: Topology,
    transfers: Sequence[TransferLike],
    buffers: Sequence[dict[Hashable, Any]],
    *,
    cut_through: bool = True,
    start_s: Sequence[float] | None = None,
) -> Playback:
    """Simulate the transfers on the topology, moving the real payloads.

    Parameters
    ----------
    topology : Topology
    transfers : sequence of Transfer
        What to move; each waits for its ``deps`` (indices into this sequence) to
        arrive at its source before it leaves.
    buffers : sequence of dict
        Each device's chunks at the start, keyed as the transfers' ``key``. The
        dicts are copied; the arrays in them are not.
    cut_through : bool, default True
        Cut-through forwarding; False for store-and-forward.
    start_s : sequence of float, optional
        When each device starts, seconds (stragglers). Chunks sent to a device
        before it starts wait in its memory; it sends nothing before it starts.

    Returns
    -------
    Playback

    Raises
    ------
    EngineError
        If a transfer needs a chunk its source does not hold, or transfers are
        still waiting when nothing more can happen (a deadlock in the schedule).

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace as T
    >>> from netsim.network.topology import ring
    >>> move = T(src=0, dst=2, key="x", reduce=False, direction=1, deps=())
    >>> run = play(ring(4, bandwidth_Bps=1e9, latency_s=1e-6), [move], [{"x": np.zeros(1000, np.uint8)}, {}, {}, {}])
    >>> round(run.time * 1e6, 6)  # 2 hops of 1 us, plus 1000 bytes at 1 GB/s
    3.0
    >>> run.buffers[2]["x"] is run.buffers[0]["x"]  # moved, not copied
    True
    """
    if len(buffers) != topology.n_devices:
        raise ValueError(f"need one buffer per device: got {len(buffers)} for {topology.n_devices} devices")
    for index, t in enumerate(transfers):
        for d in (t.src, t.dst):
            if not 0 <= d < topology.n_devices:
                raise ValueError(f"transfer #{index} names device {d}, but the topology has {topology.n_devices}")
        if any(not 0 <= d < len(transfers) or d == index for d in t.deps):
            raise ValueError(f"transfer #{index} waits for {t.deps!r}, which are not other transfers")
    if start_s is None:
        start_s = [0.0] * topology.n_devices
    if len(start_s) != topology.n_devices or any(not 0 <= t < float("inf") for t in start_s):
        raise ValueError(f"start_s must give a finite time >= 0 for each of the {topology.n_devices} devices, got {list(start_s)!r}")
    network = _Network(topology, transfers, buffers, cut_through, start_s)
    events = 0
    env = network.env
    while True:
        try:
            env.step()
        except simpy.core.EmptySchedule:
            break
        events += 1
    waiting = [d.index for d in network.devices if d.expected]
    if waiting:
        stuck = [i for i, m in enumerate(network.missing) if m]
        raise EngineError(f"deadlock: devices {waiting} still wait for chunks; transfers {stuck[:10]} never became ready")
    return Playback(
        buffers=[d.buffer for d in network.devices],
        time=max(network.arrived_at, default=0.0),
        sent_at=network.sent_at,
        arrived_at=network.arrived_at,
        nbytes=network.nbytes,
        hops=network.hops,
        links={link: obj.stats for link, obj in network.links.items()},
        events=events,
        routes=network.routes,
    )
