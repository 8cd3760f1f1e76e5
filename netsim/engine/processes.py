"""The model: directed links, devices and their compute units as SimPy processes.

This module is the definition of netsim's timing. Everything else (the fast
player of :mod:`netsim.engine.fast`, the closed forms, the statistics) is checked
against what these processes do.

Links
    Each directed link (:class:`Link`) is a process serving a FIFO queue of
    messages, one at a time. A message holds the link for
    :meth:`Link.transmission_s` (``bytes / bandwidth``) and its tail reaches the
    far end ``latency`` later. The next message may start as soon as the link is
    free, while the previous one is still propagating (pipelining). A message
    that finds the link busy waits: contention is simulated, never assumed. How
    long a message holds a link and when it goes on is written once, in
    :mod:`netsim.engine.link_model` (:func:`~netsim.engine.link_model.serve`),
    which every player reads.

Forwarding
    Multi-hop messages travel hop by hop along their route. With cut-through
    forwarding (the default) a message asks for its next link as soon as its head
    arrives, ``latency`` after it started on the previous one, so an uncontended
    h-hop transfer of s bytes takes ``h * latency + s / bandwidth``; it never
    finishes a link before its tail has arrived. With store-and-forward it waits
    for its tail: ``h * (latency + s / bandwidth)``.

Devices
    Each device (:class:`Device`) is a process that sleeps until something
    arrives or one of its compute steps is done, takes it in (stores an arriving
    chunk, or adds it into its own copy; then stores what its finished compute
    steps made), and then hands to its compute unit every compute step and
    sends every transfer that no longer waits for anything, in that order. A device that
    starts late (``start_s``) keeps what arrives in memory until it starts.

Compute units
    Each device has a compute unit (:class:`ComputeUnit`): a process serving the
    device's compute steps in order, as a link serves messages. A step takes
    :meth:`ComputeUnit.duration_s`: its ``seconds``, or
    ``max(flops / peak_flops, bytes / hbm_bandwidth)`` at the chip's rates.

A message is not copied: it carries a reference to the chunk, and the engine
asks a chunk only for its ``nbytes`` (and adds chunks for reductions), so a
stand-in that carries sizes only plays the same.

Your own processes
    :func:`netsim.engine.play` takes ``link_class=`` and ``compute_class=``:
    subclasses of :class:`Link` and :class:`ComputeUnit` that change how long a
    message or a step takes (or anything else their process does). Only this
    model plays them: the fast player and its compiled loop read the link model
    and the compute times, not a class's methods.

Examples
--------
A link that adds a fixed overhead to every message, on one 2-hop transfer:

>>> import numpy as np
>>> from types import SimpleNamespace as T
>>> from netsim.engine import play
>>> from netsim.network.topology import ring
>>> class OverheadLink(Link):
...     overhead_s = 0.5e-6
...
...     def transmission_s(self, message):
...         return super().transmission_s(message) + self.overhead_s
>>> move = T(src=0, dst=2, key="x", reduce=False, direction=1, deps=())
>>> topology, buffers = ring(4, bandwidth_Bps=1e9, latency_s=1e-6), [{"x": np.zeros(1000, np.uint8)}, {}, {}, {}]
>>> round(play(topology, [move], buffers, engine="processes").time * 1e6, 6)  # 2 hops of 1 us + 1 us of bytes
3.0
>>> round(play(topology, [move], buffers, link_class=OverheadLink).time * 1e6, 6)  # each link held 0.5 us longer
3.5
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import simpy

from netsim.engine.columns import step_dependencies, waiter_keys
from netsim.engine.link_model import LinkModel, serve, transmission_s
from netsim.engine.payloads import ABSENT, computed, made, take

__all__ = ["ComputeUnit", "Device", "Link", "Message", "Model", "Server", "compute_time_s", "compute_times_s", "run_counting"]


def run_counting(env: simpy.Environment) -> int:
    """Run ``env`` until nothing more happens; the number of SimPy events it processed.

    Examples
    --------
    >>> env = simpy.Environment()
    >>> _ = env.timeout(1.0), env.timeout(2.0)
    >>> run_counting(env), env.now
    (2, 2.0)
    """
    events = 0
    while True:
        try:
            env.step()
        except simpy.core.EmptySchedule:
            return events
        events += 1


def compute_time_s(step: Any, peak_flops: float | None, hbm_bandwidth_Bps: float | None, device: int = 0, index: int = 0) -> float:
    """How long a compute step takes on a chip: its ``seconds``, or ``max(flops / (peak_flops * efficiency), bytes / hbm_bandwidth_Bps)``.

    Raises
    ------
    ValueError
        If the step counts flops (or bytes) and the chip's peak FLOP/s (or HBM
        bandwidth) is not known, or if the time is negative or not finite.

    Examples
    --------
    >>> from types import SimpleNamespace as C
    >>> compute_time_s(C(seconds=None, flops=2e12, bytes=4e9), peak_flops=1e15, hbm_bandwidth_Bps=1e12)  # HBM-bound
    0.004
    >>> compute_time_s(C(seconds=5e-6, flops=0.0, bytes=0.0), None, None)
    5e-06
    """
    if step.seconds is not None:
        time = float(step.seconds)
    else:
        time = 0.0
        efficiency = getattr(step, "efficiency", 1.0)
        for amount, rate, what, field in ((step.flops, peak_flops, "flops", "peak_flops"), (step.bytes, hbm_bandwidth_Bps, "HBM bytes", "hbm_bandwidth")):
            if amount:
                if not rate:
                    raise ValueError(f"compute step #{index} counts {what} but device {device} has no {field}: give the topology's device: {{{field}: ...}}")
                if field == "peak_flops" and efficiency != 1:  # the fraction of the peak the step reaches
                    rate = rate * efficiency
                time = max(time, amount / rate)
    if not 0 <= time < float("inf"):
        raise ValueError(f"compute step #{index} on device {device} would take {time!r} s: give a finite time >= 0")
    return time


def compute_times_s(columns: dict[str, Any], rates: Sequence[tuple[float | None, float | None]]) -> np.ndarray:
    """:func:`compute_time_s` of every step at once, from their columns (:func:`~netsim.engine.columns.compute_columns`),
    to the bit; the same errors, for the first step that has one.

    Examples
    --------
    >>> import numpy as np
    >>> cols = {"device": np.array([0, 0]), "seconds": np.array([np.nan, 5e-6]), "flops": np.array([2e12, 0.0]),
    ...     "bytes": np.array([4e9, 0.0]), "efficiency": np.array([1.0, 1.0])}
    >>> compute_times_s(cols, [(1e15, 1e12)]).tolist()
    [0.004, 5e-06]
    """
    device = np.asarray(columns["device"], np.int64)
    peak_of = np.array([np.nan if p is None else p for p, _ in rates] or [np.nan], np.float64)
    hbm_of = np.array([np.nan if b is None else b for _, b in rates] or [np.nan], np.float64)
    seconds, flops, nbytes = (np.asarray(columns[k], np.float64) for k in ("seconds", "flops", "bytes"))
    efficiency = np.asarray(columns["efficiency"], np.float64)
    peak, hbm = peak_of[device], hbm_of[device]
    timed = np.isnan(seconds)
    rate = peak * efficiency  # (x 1 changes nothing: the same rate as compute_time_s takes)
    no_peak = timed & (flops != 0) & (np.isnan(peak) | (peak == 0))
    no_hbm = timed & (nbytes != 0) & (np.isnan(hbm) | (hbm == 0))
    if no_peak.any() or no_hbm.any():
        j = int(np.flatnonzero(no_peak | no_hbm)[0])
        what, field = ("flops", "peak_flops") if no_peak[j] else ("HBM bytes", "hbm_bandwidth")
        raise ValueError(f"compute step #{j} counts {what} but device {device[j]} has no {field}: give the topology's device: {{{field}: ...}}")
    with np.errstate(divide="ignore", invalid="ignore"):
        by_flops = np.where(flops != 0, flops / rate, 0.0)
        by_bytes = np.where(nbytes != 0, nbytes / hbm, 0.0)
    time = np.where(timed, np.maximum(np.maximum(0.0, by_flops), by_bytes), seconds)
    bad = ~((time >= 0) & (time < np.inf))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(f"compute step #{j} on device {device[j]} would take {float(time[j])!r} s: give a finite time >= 0")
    return time


class Message:
    """A transfer on its way: the chunk it carries (by reference), its route and how far it got."""

    __slots__ = ("hop", "nbytes", "payload", "route", "tail_at", "transfer")

    def __init__(self, transfer: int, payload: Any, route: tuple[int, ...], now: float) -> None:
        self.transfer = transfer
        self.payload = payload
        self.nbytes = int(payload.nbytes)
        self.route = route  # link numbers
        self.hop = 0  # the link of the route it is on
        self.tail_at = now  # when its tail reaches the end of the link it last crossed


class Server:
    """A FIFO queue served by a SimPy process (:meth:`serve`), one item at a time.

    ``max_queue`` is the most items it held at once, the one about to be served included.
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self.queue: deque[Any] = deque()
        self.max_queue = 0
        self._idle: simpy.Event | None = None
        model.env.process(self.serve())

    def put(self, item: Any) -> None:
        """Queue ``item``; wake the server if it is idle."""
        self.queue.append(item)
        self.max_queue = max(self.max_queue, len(self.queue))
        if self._idle is not None and not self._idle.triggered:
            self._idle.succeed()

    def next_item(self):
        """Wait (``yield from``) until the queue holds something; then the first item."""
        while not self.queue:
            self._idle = self.model.env.event()
            yield self._idle
        return self.queue.popleft()

    def serve(self):
        """The process: serve the queue, first come first served, for ever."""
        raise NotImplementedError


class Link(Server):
    """A directed link: a SimPy process serving its FIFO queue of messages.

    Override :meth:`transmission_s` to change how long a message holds the link.
    """

    def __init__(self, model: Model, number: int, bandwidth_Bps: float, latency_s: float) -> None:
        self.number = number
        self.bandwidth_Bps = bandwidth_Bps
        self.latency_s = latency_s
        super().__init__(model)

    def transmission_s(self, message: Message) -> float:
        """How long ``message`` holds the link: its bytes over the link's bandwidth (:func:`~netsim.engine.link_model.transmission_s`)."""
        return transmission_s(message.nbytes, self.bandwidth_Bps)

    def serve(self):
        """The link's process: serve the queue, first come first served, for ever (each message as :func:`~netsim.engine.link_model.serve` says)."""
        model, env = self.model, self.model.env
        while True:
            message = yield from self.next_item()
            start = env.now
            hop = message.hop
            last = hop + 1 == len(message.route)
            end, hold, reach, message.tail_at = serve(start, self.transmission_s(message), self.latency_s, message.tail_at, hop, last, model.cut_through)
            model.record_hop(message.transfer, self.number, start, end)
            message.hop = hop + 1
            if last:  # its tail reaches the destination
                model.after(reach, model.devices[model.dst[message.transfer]].deliver, message)
            else:  # its head (or its tail) asks for the next link
                model.after(reach, model.links[message.route[hop + 1]].put, message)
            yield env.timeout(hold)


class ComputeUnit(Server):
    """A device's compute unit: a SimPy process serving its compute steps (their numbers) in order.

    Override :meth:`duration_s` to change how long a step takes.
    """

    def __init__(self, model: Model, device: int, peak_flops: float | None, hbm_bandwidth_Bps: float | None) -> None:
        self.device = device
        self.peak_flops = peak_flops
        self.hbm_bandwidth_Bps = hbm_bandwidth_Bps
        super().__init__(model)

    def duration_s(self, step: Any, index: int) -> float:
        """How long compute step ``index`` takes here (see :func:`compute_time_s`)."""
        return compute_time_s(step, self.peak_flops, self.hbm_bandwidth_Bps, self.device, index)

    def serve(self):
        """The unit's process: work through the queue, one step at a time, for ever."""
        model, env = self.model, self.model.env
        while True:
            index = yield from self.next_item()
            duration = self.duration_s(model.computes[index], index)
            model.started[index] = env.now
            model.ended[index] = env.now + duration
            yield env.timeout(duration)
            model.devices[self.device].finish(index)


class Device:
    """A device: a SimPy process that takes in what arrives and sends (or computes) what is ready."""

    def __init__(self, model: Model, index: int, buffer: dict[Hashable, Any], start_s: float) -> None:
        self.model = model
        self.index = index
        self.buffer = buffer
        self.start_s = start_s
        self.inbox: list[Message] = []  # arrivals not yet taken in
        self.finished: list[int] = []  # its compute steps done, not yet taken in
        self.ready: list[int] = []  # steps that wait for nothing more, in the order they became ready
        self.expected = 0  # arrivals and compute steps still to come
        self._wake: simpy.Event | None = None
        model.env.process(self.run())

    def deliver(self, message: Message) -> None:
        """A message arrived: wake the device."""
        self.inbox.append(message)
        self.wake()

    def finish(self, index: int) -> None:
        """Compute step ``index`` is done: wake the device."""
        self.finished.append(index)
        self.wake()

    def wake(self) -> None:
        """Wake the device if it sleeps."""
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()

    def run(self):
        """The device's process: from its start, send what is ready, then take in and send until all came."""
        env = self.model.env
        if self.start_s > 0:
            yield env.timeout(self.start_s)
            self.take_in()
        self.send_ready()
        while self.expected:
            self._wake = env.event()
            yield self._wake
            self.take_in()
            self.send_ready()

    def take_in(self) -> None:
        """Store (or add in) every arrival, then every compute step's output, and count them off for whoever waits."""
        model = self.model
        inbox, self.inbox = self.inbox, []
        finished, self.finished = self.finished, []
        self.expected -= len(inbox) + len(finished)
        for message in inbox:
            step = message.transfer
            model.arrived_at[step] = model.env.now
            take(self.buffer, model.key[step], message.payload, model.reduce[step], self.index, model.bundles)
            self.count_off(step)
        for index in finished:
            computed(self.buffer, model.computes[index], self.index, index)
            self.count_off(model.n_transfers + index)

    def count_off(self, step: int) -> None:
        """``step`` is done here: whoever waited for it and waits for nothing more is ready.

        A join that waits for nothing more is done at once, here and now (no compute
        unit), and its own waiters are counted off in its place.
        """
        model = self.model
        for waiting in model.waiters[step]:
            model.missing[waiting] -= 1
            if not model.missing[waiting]:
                if model.is_join[waiting]:
                    j = waiting - model.n_transfers
                    model.started[j] = model.ended[j] = model.env.now
                    self.expected -= 1
                    self.count_off(waiting)
                else:
                    self.ready.append(waiting)

    def send_ready(self) -> None:
        """Hand every ready compute step to the compute unit, then send every ready transfer."""
        model = self.model
        ready, self.ready = self.ready, []
        for step in ready:
            if step >= model.n_transfers:
                model.units[model.unit_of[step - model.n_transfers]].put(step - model.n_transfers)
        for step in ready:
            if step >= model.n_transfers:
                continue
            key = model.key[step]
            chunk = self.buffer.get(key, ABSENT)
            if chunk is ABSENT:
                chunk = made(self.buffer, key, model.bundles, self.index, step, {} if model.reduce[step] else model.made)  # (partial sums: made afresh)
            message = Message(step, chunk, model.route[step], model.env.now)
            model.sent_at[step] = model.env.now
            model.nbytes[step] = message.nbytes
            if message.route:
                model.links[message.route[0]].put(message)
            else:
                model.after(0.0, model.devices[model.dst[step]].deliver, message)


class Model:
    """One run of the model: every link, compute unit and device as processes on one environment.

    Built by :func:`netsim.engine.play` from the schedule's columns; ``links``
    gives each link's bandwidth and latency by link number, and the forwarding
    mode; ``route`` each transfer's links as numbers; ``rates`` each device's
    ``(peak_flops, hbm_bandwidth_Bps)``.
    """

    def __init__(
        self,
        links: LinkModel,
        route: Sequence[tuple[int, ...]],
        columns: dict[str, Any],
        computes: Sequence[Any],
        compute_columns: dict[str, Any],
        buffers: Sequence[dict],
        rates: Sequence[tuple[float | None, float | None]],
        *,
        start_s: Sequence[float],
        link_class: type[Link] = Link,
        compute_class: type[ComputeUnit] = ComputeUnit,
    ) -> None:
        n, m = len(columns["src"]), len(computes)
        self.env = simpy.Environment()
        self.cut_through = links.cut_through
        self.n_transfers = n
        self.computes = computes
        self.route = route
        self.dst = columns["dst"].tolist()
        keys = columns["keys"]
        self.key = [keys[k] for k in columns["key_index"].tolist()]
        self.reduce = [bool(r) for r in columns["reduce"].tolist()]
        self.bundles = columns.get("bundles") or {}
        self.made: dict[tuple[int, Hashable], Any] = {}
        self.sent_at = [float("nan")] * n
        self.arrived_at = [float("nan")] * n
        self.nbytes = array("q", bytes(8 * n))
        self.started = [float("nan")] * m
        self.ended = [float("nan")] * m
        self.record = (array("i"), array("i"), array("d"), array("d"))
        # Steps are numbered transfers first, then compute steps: who waits for each, and for how many.
        deps = [columns["dep_idx"][a:b].tolist() for a, b in zip(columns["dep_ptr"][:-1].tolist(), columns["dep_ptr"][1:].tolist(), strict=True)]
        cptr = compute_columns["dep_ptr"].tolist()
        deps += [compute_columns["dep_idx"][cptr[j] : cptr[j + 1]].tolist() for j in range(m)]
        self.missing = [len(d) for d in deps]
        joins = compute_columns["join"]
        self.is_join = bytes(n) + joins.tobytes()
        self.waiters: list[list[int]] = [[] for _ in deps]
        keys = waiter_keys(*step_dependencies(columns, compute_columns), joins, n)
        for step in range(len(deps)) if keys is None else np.argsort(keys, kind="stable").tolist():
            for d in deps[step]:
                self.waiters[d].append(step)
        link_rates = zip(links.bandwidth_Bps.tolist(), links.latency_s.tolist(), strict=True)
        self.links = [link_class(self, k, bandwidth, latency) for k, (bandwidth, latency) in enumerate(link_rates)]
        lanes = compute_columns.get("unit")
        n_lanes = int(lanes.max()) + 1 if lanes is not None and len(lanes) else 1
        # a device's units: its compute unit (number d), then any others (DMA: d + n_devices), each serving its steps in order
        self.unit_of = (compute_columns["device"] + len(buffers) * lanes).tolist() if lanes is not None else compute_columns["device"].tolist()
        self.units = [compute_class(self, u % len(buffers), *rates[u % len(buffers)]) for u in range(len(buffers) * n_lanes)]
        self.devices = [Device(self, d, dict(buffers[d]), float(start_s[d])) for d in range(len(buffers))]
        src, device = columns["src"].tolist(), compute_columns["device"].tolist()
        for step in range(n + m):
            where, done_at = (src[step], self.dst[step]) if step < n else (device[step - n], device[step - n])
            self.devices[done_at].expected += 1
            if not deps[step]:
                self.devices[where].ready.append(step)
        self.events = 0

    @property
    def buffers(self) -> list[dict[Hashable, Any]]:
        """Each device's chunks (at the end of the run: what it holds)."""
        return [device.buffer for device in self.devices]

    def after(self, delay: float, callback: Any, item: Any) -> None:
        """Call ``callback(item)`` ``delay`` seconds from now (a message reaching the end of a link)."""
        event = self.env.timeout(delay)
        event.callbacks.append(lambda _event: callback(item))

    def record_hop(self, transfer: int, link: int, start: float, end: float) -> None:
        """Note that ``transfer`` held ``link`` from ``start`` to ``end``."""
        for column, value in zip(self.record, (transfer, link, start, end), strict=True):
            column.append(value)

    def run(self) -> None:
        """Play until nothing more happens, counting SimPy's events."""
        self.events = run_counting(self.env)
