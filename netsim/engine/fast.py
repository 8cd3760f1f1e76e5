"""The discrete-event engine: plays any schedule of transfers on any topology.

The model
---------
Links
    Each directed link serves messages one at a time, first come first served.
    A message holds the link for ``bytes / bandwidth`` seconds and its tail
    reaches the far end ``latency`` later. The next message may start as soon as
    the link is free, while the previous one is still propagating (pipelining).
    A message that finds the link busy waits: contention is simulated, never
    assumed.

Forwarding
    Multi-hop messages travel hop by hop along their route. With cut-through
    forwarding (the default) a message may start on its next link as soon as its
    head arrives, ``latency`` after it started on the previous one, so an
    uncontended h-hop transfer of s bytes takes ``h * latency + s / bandwidth``.
    It can never finish a link before its tail has arrived. With store-and-forward
    it waits for its tail: ``h * (latency + s / bandwidth)``.

Devices
    A device holds a buffer of chunks keyed by name. It sends a chunk as soon as
    every transfer that chunk waits for has arrived (and the device has started,
    see ``start_s``), and on arrival either stores the chunk or adds it into its
    own copy.

How it runs
-----------
One :class:`simpy.Environment` keeps the time. The network is one SimPy process
that sleeps until the next instant at which something happens, then handles,
in the order they were scheduled, every *action* due at that instant: a
message reaching the end of a link (it asks for its next link, or is
delivered), a link starting to serve the first message of its queue or
finishing one, a device waking up to take in what arrived and send what
became ready. Actions are small ints in a list per instant, not SimPy events,
and all state lives in flat lists indexed by transfer, link and device: no
object, closure or event per message. SimPy sees one event per distinct
instant (two per step of a ring), not 3.5 per chunk move. (The engine keeps
the instants itself and computes every time as the straightforward model
does; SimPy's clock follows them to within rounding.)

The actions are exactly the events of the straightforward model (a SimPy
process per link serving a FIFO queue, a process per device, as in
``tests/reference_engine.py``), scheduled at the same moments and so handled in
the same order, ties included: the tests check that both give the same times,
hops and statistics, bit for bit, on random schedules full of ties.

Messages of several chunks
    A schedule may name *bundles* (``columns()["bundles"]``: bundle key -> the
    keys of its parts). A device told to send a bundle it was never sent makes
    it from the parts it holds (parts may be bundles it makes in turn) as a
    :class:`netsim.algorithms.bundles.Bundle`: one message, of the parts' total size, that
    carries references to them. Receivers keep the bundle whole;
    :func:`netsim.algorithms.bundles.unbundled` opens it. A bundle a device makes is not
    added to its chunks (it holds nothing new).

Payloads travel as references: moving a chunk never copies it, and the engine
only asks a payload for its ``nbytes`` (a reduction also adds payloads with
``+``), so a stand-in that carries sizes only plays the same. The engine knows
nothing of which collective it is playing.
"""

from __future__ import annotations

import gc
import heapq
import weakref
from array import array
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np
import simpy

from netsim.algorithms.bundles import Bundle
from netsim.columnar import factorize, stable_order
from netsim.network.topology import LinkId, Topology

__all__ = ["ArrayList", "EngineError", "Hop", "HopList", "LinkStats", "Playback", "TransferLike", "as_array", "play", "transfer_columns"]


class TransferLike(Protocol):
    """What the engine needs to know about a transfer (see :class:`netsim.algorithms.schedule.Transfer`).

    A sequence of transfers may also offer ``columns()``, returning the same
    facts as whole arrays (see :func:`play`), which spares the engine from
    reading millions of objects one by one.
    """

    src: int
    dst: int
    key: Hashable
    reduce: bool
    direction: int
    deps: tuple[int, ...]


class EngineError(RuntimeError):
    """A schedule could not be played: a chunk was missing or the run deadlocked.

    This is a bug in the schedule (netsim's own), never a user mistake.
    """


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


class ArrayList(list):
    """A list that also keeps its values as columns (NumPy arrays), until it is changed.

    A :class:`Playback`'s sizes and routes are these: the engine leaves its
    arrays here (for routes, each transfer's number among the distinct routes),
    so the checks (:mod:`netsim.checks.invariants`) do not read millions of Python
    objects again. Any change through the list's methods (as tests corrupt a
    playback) drops the columns; it is an ordinary list in every other way.

    Examples
    --------
    >>> times = ArrayList([0.5, 1.5])
    >>> as_array(times, float).tolist(), times.columns() is not None
    ([0.5, 1.5], True)
    >>> times[0] = 2.5
    >>> times.columns() is None, as_array(times, float).tolist()
    (True, [2.5, 1.5])
    """

    __slots__ = ("_columns",)

    def __init__(self, values: Any = (), columns: Any = None) -> None:
        super().__init__(values)
        self._columns = columns

    def columns(self) -> Any:
        """What was kept (an array, or for routes their numbering), or None since a change."""
        return self._columns

    def keep(self, columns: Any) -> None:
        """Keep ``columns`` (read-only) as the list's values until it changes."""
        self._columns = columns


def _dropping_columns(name: str) -> Any:
    method = getattr(list, name)

    def changing(self: ArrayList, *args: Any, **kwargs: Any) -> Any:
        self._columns = None
        return method(self, *args, **kwargs)

    changing.__name__ = name
    changing.__doc__ = method.__doc__
    return changing


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"):
    setattr(ArrayList, _name, _dropping_columns(_name))


def as_array(values: Sequence[Any], dtype: Any) -> np.ndarray:
    """``np.asarray(values, dtype)``, read-only; an :class:`ArrayList` is converted once, then reused.

    Examples
    --------
    >>> as_array([1, 2], np.int64)
    array([1, 2])
    """
    kept = values.columns() if isinstance(values, ArrayList) else None
    if isinstance(kept, np.ndarray) and kept.dtype == dtype and len(kept) == len(values):
        return kept
    array = np.array(values, dtype)
    array.flags.writeable = False
    if isinstance(values, ArrayList):
        values.keep(array)
    return array


class HopList(Sequence):
    """Every link crossing of a run, in the order they started (a read-only sequence of :class:`Hop`).

    The engine records hops as columns; the :class:`Hop` objects are only built
    when someone reads them. :attr:`columns` gives the columns themselves.
    """

    def __init__(self, transfer: np.ndarray, link: np.ndarray, start: np.ndarray, end: np.ndarray, link_ids: Sequence[LinkId]) -> None:
        self._columns = {"transfer": transfer, "link": link, "start": start, "end": end}
        self._link_ids = link_ids
        self._hops: list[Hop] | None = None
        self._orders: dict[str, np.ndarray] = {}

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """``transfer``, ``link`` (index into :attr:`link_ids`), ``start`` and ``end`` as arrays, in hop order."""
        return self._columns

    @property
    def link_ids(self) -> Sequence[LinkId]:
        """The link each value of ``columns["link"]`` stands for."""
        return self._link_ids

    def order(self, column: str) -> np.ndarray:
        """Hop positions sorted stably by ``column`` (``"transfer"`` or ``"link"``), computed once.

        The invariant checks and the critical path both group the hops by
        transfer and by link; they share these orders.
        """
        order = self._orders.get(column)
        if order is None:
            order = stable_order(self._columns[column])
            if len(order) < 2**31:  # kept with the playback: half the memory
                order = order.astype(np.int32)
            order.flags.writeable = False
            self._orders[column] = order
        return order

    def _materialise(self) -> list[Hop]:
        if self._hops is None:
            c, ids = self._columns, self._link_ids
            links = [ids[k] for k in c["link"].tolist()]
            self._hops = list(map(Hop, c["transfer"].tolist(), links, c["start"].tolist(), c["end"].tolist()))
        return self._hops

    def __len__(self) -> int:
        return len(self._columns["transfer"])

    def __getitem__(self, index):
        return self._materialise()[index]

    def __iter__(self) -> Iterator[Hop]:
        return iter(self._materialise())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (HopList, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HopList({len(self)} hops)"


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
    nbytes : list of int
        Per transfer: size of the chunk it carried.
    hops : HopList
        Every link crossing (:class:`Hop`), in the order they started (ties in
        the order they were requested).
    links : dict
        :class:`LinkStats` for every link of the topology.
    events : int
        SimPy events processed (one per distinct instant at which something happens).
    routes : list of tuple
        Per transfer: the links it crossed.
    actions : int
        Discrete events the engine handled: messages reaching the end of a link,
        links starting and finishing messages, devices waking up (the events of
        the straightforward SimPy model, which would have as many SimPy events).
    bundles : dict
        Bundle key -> part keys, as the schedule named them (empty if none).
    """

    buffers: list[dict[Hashable, Any]]
    time: float
    sent_at: list[float]
    arrived_at: list[float]
    nbytes: list[int]
    hops: Sequence[Hop]
    links: dict[LinkId, LinkStats]
    events: int = 0
    routes: list[tuple[LinkId, ...]] = field(default_factory=list)
    actions: int = 0
    bundles: dict[Hashable, tuple[Hashable, ...]] = field(default_factory=dict)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Keep Python's cyclic garbage collector out of a run.

    A run allocates millions of small objects that live until it ends; the
    collector would walk them again and again (a fifth to two thirds of the time
    in profiles) and find nothing to free.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def transfer_columns(transfers: Sequence[TransferLike]) -> dict[str, Any]:
    """The transfers as arrays: ``transfers.columns()`` when offered, else the same read from the objects.

    ``src``, ``dst``, ``direction``, ``reduce``, ``key_index`` (into the list ``keys``)
    and the dependencies as ``dep_ptr`` / ``dep_idx`` (see :func:`play`). The engine,
    the invariants, the critical path and the statistics all read transfers this way.

    Examples
    --------
    >>> from types import SimpleNamespace as T
    >>> c = transfer_columns([T(src=0, dst=1, key="x", reduce=False, direction=1, deps=()), T(src=1, dst=2, key="x", reduce=False, direction=1, deps=(0,))])
    >>> c["dst"].tolist(), c["keys"], c["dep_ptr"].tolist(), c["dep_idx"].tolist()
    ([1, 2], ['x'], [0, 0, 1], [0])
    """
    columns = getattr(transfers, "columns", None)
    if callable(columns):
        return columns()
    n = len(transfers)
    index: dict[Hashable, int] = {}
    counts = np.fromiter((len(t.deps) for t in transfers), np.int64, n)
    dep_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=dep_ptr[1:])
    return {
        "src": np.fromiter((t.src for t in transfers), np.int64, n),
        "dst": np.fromiter((t.dst for t in transfers), np.int64, n),
        "direction": np.fromiter((t.direction for t in transfers), np.int64, n),
        "reduce": np.fromiter((bool(t.reduce) for t in transfers), bool, n),
        "key_index": np.fromiter((index.setdefault(t.key, len(index)) for t in transfers), np.int64, n),
        "keys": list(index),
        "dep_ptr": dep_ptr,
        "dep_idx": np.fromiter((d for t in transfers for d in t.deps), np.int64, int(dep_ptr[-1])),
    }


def _check(columns: dict[str, Any], n_devices: int) -> None:
    """The first transfer (in order) that names a device outside the topology or waits for
    something that is not another transfer."""
    src, dst, ptr, idx = columns["src"], columns["dst"], columns["dep_ptr"], columns["dep_idx"]
    n = len(src)
    bad_device = np.flatnonzero((src < 0) | (src >= n_devices) | (dst < 0) | (dst >= n_devices))
    owner = np.repeat(np.arange(n, dtype=np.int32 if n < 2**31 else np.int64), np.diff(ptr))
    bad_deps = np.unique(owner[(idx < 0) | (idx >= n) | (idx == owner)])
    first_device = int(bad_device[0]) if len(bad_device) else n
    first_deps = int(bad_deps[0]) if len(bad_deps) else n
    if first_device < n and first_device <= first_deps:
        i = first_device
        device = int(src[i]) if not 0 <= src[i] < n_devices else int(dst[i])
        raise ValueError(f"transfer #{i} names device {device}, but the topology has {n_devices}")
    if first_deps < n:
        i = first_deps
        deps = tuple(int(d) for d in idx[ptr[i] : ptr[i + 1]])
        raise ValueError(f"transfer #{i} waits for {deps!r}, which are not other transfers")


class _Routes:
    """Routes as tuples of link numbers, computed once per (src, dst, direction) of a topology.

    Kept between runs on the same topology (a sweep plays the same pairs again
    and again); routes depend only on the grid, never on link bandwidths or
    latencies, which are read afresh for every run.
    """

    _cache: ClassVar[weakref.WeakKeyDictionary[Topology, _Routes]] = weakref.WeakKeyDictionary()

    def __init__(self, topology: Topology) -> None:
        self.owner = weakref.ref(topology)  # (a strong reference would keep the cache's key alive)
        self.link_ids: list[LinkId] = topology.links
        self.number = {link: k for k, link in enumerate(self.link_ids)}
        self.known: dict[int, tuple[tuple[int, ...], tuple[LinkId, ...]]] = {}

    @classmethod
    def of_topology(cls, topology: Topology) -> _Routes:
        routes = cls._cache.get(topology)
        if routes is None or routes.owner() is not topology or len(routes.link_ids) != topology.graph.number_of_edges():
            routes = cls._cache[topology] = cls(topology)
        return routes

    def of(self, topology: Topology, columns: dict[str, Any]) -> tuple[list[tuple[int, ...]], list[tuple[LinkId, ...]]]:
        """Per transfer: its route as link numbers, and as link ids (an :class:`ArrayList` that keeps,
        as its columns, each transfer's number among the distinct routes and those routes)."""
        n = topology.n_devices
        code = np.multiply(columns["src"], n, dtype=np.int64)  # (src n + dst) 2 + forward, in one array
        code += columns["dst"]
        code *= 2
        code += np.asarray(columns["direction"]) > 0
        unique, inverse = factorize(code)
        del code
        as_ids, as_numbers = np.empty(len(unique), object), np.empty(len(unique), object)
        for k, c in enumerate(unique.tolist()):
            known = self.known.get(c)
            if known is None:
                pair, forward = divmod(c, 2)
                route = topology.route(pair // n, pair % n, 1 if forward else -1)
                known = self.known[c] = (tuple(self.number[link] for link in route), route)
            as_numbers[k], as_ids[k] = known
        inverse.flags.writeable = False
        return as_numbers[inverse].tolist(), ArrayList(as_ids[inverse].tolist(), (inverse, tuple(as_ids)))


class _Run:
    """One playback: the network process and what it keeps per transfer, link and device.

    Per transfer, link and device the state lives in plain lists indexed by
    number (no object per message). The network process handles *actions*, small
    ints in the list of the instant they are due at:

    ``i >= 0``
        transfer i is delivered: its tail reached its destination.
    ``~d`` for a device d
        device d wakes up (or starts): takes in its arrivals, sends what became ready.
    ``~(n_devices + i)`` for a transfer i
        the link transfer i asked for, idle until now, starts serving it.
    ``~(n_devices + n_transfers + i)``
        the head (cut-through) or tail of transfer i reaches the start of its
        next link, and asks for it.
    ``~(n_devices + 2 n_transfers + k)``
        link k is done with a message: it serves the next in its queue, or goes idle.
    """

    def __init__(self, topology: Topology, columns: dict[str, Any], buffers: Sequence[dict], cut_through: bool, start_s: Sequence[float]) -> None:
        n = len(columns["src"])
        n_devices = topology.n_devices
        self.n_devices = n_devices
        self.env = simpy.Environment()
        self.cut_through = cut_through
        self.start_s = [float(s) for s in start_s]
        # Per-transfer lists share their int objects (one per device, per key...): a list of
        # millions of fresh ints would cost memory, and memory costs page faults.
        self.dst = _shared(np.arange(n_devices))[columns["dst"]].tolist()
        self.key = _shared(columns["keys"])[columns["key_index"]].tolist()
        self.reduce = bytearray(np.asarray(columns["reduce"], np.uint8).tobytes())
        self.bundles = columns.get("bundles") or {}
        self.made: dict[tuple[int, Hashable], Any] = {}  # bundles devices made, by (device, key)
        routes = _Routes.of_topology(topology)
        self.link_ids = routes.link_ids
        self.route, self.routes = routes.of(topology, columns) if n else ([], [])
        attributes = {(u, v, key): data for u, v, key, data in topology.graph.edges(keys=True, data=True)}
        self.bandwidth = [float(attributes[link]["bandwidth_Bps"]) for link in self.link_ids]
        self.latency = [float(attributes[link]["latency_s"]) for link in self.link_ids]
        # missing[i]: arrivals transfer i still waits for. Who waits for transfer i: nobody if
        # first[i] == -1; first[i] alone if it is >= 0; else -2 - first[i], then second[i] if that
        # is >= 0, else the tuple more[-1 - second[i]] (one waiter, the common case, reads one array).
        ptr, idx = columns["dep_ptr"], columns["dep_idx"]
        counts_in = np.diff(ptr)
        self.missing = counts_in.tolist()
        waiter = np.repeat(np.arange(n, dtype=np.int64), counts_in)
        counts = np.bincount(idx, minlength=n)
        first = np.full(n, -1, np.int64)
        second = np.full(n, -1, np.int64)
        self.more: list[tuple[int, ...]] = []
        if len(idx) and int(counts.max()) > 1:  # some transfers have several waiting: their waiters in order
            waiter = waiter[stable_order(idx)]  # grouped by the transfer waited for
            starts = np.zeros(n + 1, np.int64)
            np.cumsum(counts, out=starts[1:])
            has = counts > 0
            first[has] = waiter[starts[:-1][has]]
            many = counts > 1
            first[many] = -2 - first[many]
            two = counts == 2
            second[two] = waiter[starts[:-1][two] + 1]
            several = np.flatnonzero(counts > 2)
            second[several] = -1 - np.arange(len(several))
            waiters, bounds = waiter.tolist(), starts.tolist()
            self.more = [tuple(waiters[bounds[i] + 1 : bounds[i + 1]]) for i in several.tolist()]
        else:  # each transfer has at most one waiting
            first[idx] = waiter
        del waiter, counts
        self.first = array("q", first.tobytes())
        self.second = array("q", second.tobytes())
        self.ready: list[list[int]] = [[] for _ in range(n_devices)]
        initial = np.flatnonzero(counts_in == 0)
        for i, s in zip(initial.tolist(), columns["src"][initial].tolist(), strict=True):
            self.ready[s].append(i)

        self.sent_at = [float("nan")] * n
        self.arrived_at = [float("nan")] * n
        self.nbytes = array("q", bytes(8 * n))
        self.buffers = [dict(b) for b in buffers]
        self.expected = np.bincount(columns["dst"], minlength=n_devices).tolist() if n else [0] * n_devices
        self.taken = [0] * n_devices
        self.max_queue = [0] * len(self.link_ids)
        # transfer, link, start, end of every hop, as arrays: an array's append parses its argument
        # (more instructions than a list's), but keeps 4 to 8 bytes per value where a list keeps
        # a pointer and, for the end times, a float object: on big runs the memory costs more.
        self.record = (array("i"), array("i"), array("d"), array("d"))
        self.events = 0
        self.actions = 0
        self.env.process(self._network(n))

    def _network(self, n: int):
        env, cut_through, n_devices = self.env, self.cut_through, self.n_devices
        n_links = len(self.link_ids)
        dst, key_of, reduce, route_of, first, second, more, missing = (
            self.dst,
            self.key,
            self.reduce,
            self.route,
            self.first,
            self.second,
            self.more,
            self.missing,
        )
        bandwidth, latency, max_queue = self.bandwidth, self.latency, self.max_queue
        sent_at, arrived_at, nbytes, buffers, ready, taken = self.sent_at, self.arrived_at, self.nbytes, self.buffers, self.ready, self.taken
        payload: list[Any] = [None] * n
        hop = [0] * n  # link of its route a transfer is on
        tail = [0.0] * n  # when its tail reaches the end of that link (multi-hop routes)
        inbox: list[list[int]] = [[] for _ in range(n_devices)]
        awake = [False] * n_devices  # waiting for arrivals (from its start on)
        queue: list[list[int]] = [[] for _ in range(n_links)]  # messages waiting for a busy link
        state = [0] * n_links  # 0 idle, 1 about to serve a message (not in queue), 2 serving
        serve_base, forward_base, done_base = n_devices, n_devices + n, n_devices + 2 * n
        record_transfer, record_link, record_start, record_end = (c.append for c in self.record)
        pending: dict[float, list[int]] = {}  # instant -> actions due then, in the order scheduled
        times: list[float] = []  # the instants of pending, as a heap
        heappush, heappop = heapq.heappush, heapq.heappop

        # Every device wakes up when it starts (at 0 unless late), in device order,
        # before anything else happens then.
        for d, s in enumerate(self.start_s):
            if s in pending:
                pending[s].append(~d)
            else:
                pending[s] = [~d]
                heappush(times, s)

        # The instant last scheduled into, for arrivals and for links freeing up (most
        # messages of a step share them); both are >= now, so never an instant already done.
        arrive_at, arrivals, free_at, freeings = -1.0, [], -1.0, []
        while times:
            now = heappop(times)
            delay = now - env.now
            yield env.timeout(delay if delay > 0 else 0.0)
            batch = pending[now]
            for a in batch:  # actions appended while we go are handled too, in order
                if a >= 0:  # transfer a is delivered: its tail reached its destination
                    d = dst[a]
                    inbox[d].append(a)
                    if awake[d]:
                        awake[d] = False
                        batch.append(~d)
                    continue
                c = ~a
                if c < serve_base:  # device c wakes up: takes in what arrived, sends what is ready
                    arrived = inbox[c]
                    if arrived:
                        inbox[c] = []
                        taken[c] += len(arrived)
                        buffer, becoming = buffers[c], ready[c]
                        for i in arrived:
                            arrived_at[i] = now
                            key = key_of[i]
                            chunk, payload[i] = payload[i], None
                            if reduce[i]:
                                if key not in buffer:
                                    raise EngineError(f"device {c} was sent chunk {key!r} to add into, but holds no such chunk")
                                buffer[key] = buffer[key] + chunk
                            else:
                                buffer[key] = chunk
                            # Count the arrival off for whoever waits for it (written out three times on
                            # purpose: a call per waiter would cost more than the rest of the arrival).
                            j = first[i]
                            if j >= 0:
                                left = missing[j] - 1
                                missing[j] = left
                                if not left:
                                    becoming.append(j)
                            elif j < -1:
                                j = -2 - j
                                left = missing[j] - 1
                                missing[j] = left
                                if not left:
                                    becoming.append(j)
                                j = second[i]
                                if j >= 0:
                                    left = missing[j] - 1
                                    missing[j] = left
                                    if not left:
                                        becoming.append(j)
                                else:
                                    for waiter in more[-1 - j]:
                                        missing[waiter] -= 1
                                        if not missing[waiter]:
                                            becoming.append(waiter)
                    awake[c] = True
                    sending = ready[c]
                    if not sending:
                        continue
                    ready[c] = []
                    buffer = buffers[c]
                    for i in sending:
                        key = key_of[i]
                        chunk = buffer.get(key, _ABSENT)
                        if chunk is _ABSENT:
                            chunk = _made(buffer, key, self.bundles, c, i, self.made)
                        sent_at[i] = now
                        payload[i] = chunk
                        nbytes[i] = chunk.nbytes
                        route = route_of[i]
                        if not route:
                            batch.append(i)
                            continue
                        link = route[0]
                        if state[link]:  # busy, or about to be: wait in its queue
                            waiting = queue[link]
                            waiting.append(i)
                            if len(waiting) + (state[link] == 1) > max_queue[link]:
                                max_queue[link] = len(waiting) + (state[link] == 1)
                        else:  # idle: it serves this message once the actions already due now are done
                            state[link] = 1
                            if not max_queue[link]:
                                max_queue[link] = 1
                            batch.append(~(serve_base + i))
                    continue
                if c < forward_base:  # an idle link starts on transfer i
                    i = c - serve_base
                    route = route_of[i]
                    h = hop[i]
                    link = route[h]
                elif c < done_base:  # the head of transfer i reaches the start of its next link
                    i = c - forward_base
                    h = hop[i] + 1
                    hop[i] = h
                    link = route_of[i][h]
                    if state[link]:
                        waiting = queue[link]
                        waiting.append(i)
                        if len(waiting) + (state[link] == 1) > max_queue[link]:
                            max_queue[link] = len(waiting) + (state[link] == 1)
                    else:
                        state[link] = 1
                        if not max_queue[link]:
                            max_queue[link] = 1
                        batch.append(~(serve_base + i))
                    continue
                else:  # a link is done with a message: the next one, or idle
                    link = c - done_base
                    waiting = queue[link]
                    if not waiting:
                        state[link] = 0
                        continue
                    i = waiting.pop(0)
                    route = route_of[i]
                    h = hop[i]
                state[link] = 2
                end = now + nbytes[i] / bandwidth[link]
                if h and tail[i] > end:  # (on its first link the tail left when it started)
                    end = tail[i]
                span = end - now
                lag = latency[link]
                record_transfer(i)
                record_link(link)
                record_start(now)
                record_end(end)
                if h + 1 < len(route):
                    tail[i] = end + lag
                    when = now + (lag if cut_through else span + lag)
                    action = ~(forward_base + i)
                else:
                    when = now + (span + lag)
                    action = i
                if when != arrive_at:
                    arrive_at = when
                    arrivals = pending.get(when)
                    if arrivals is None:
                        arrivals = pending[when] = []
                        heappush(times, when)
                arrivals.append(action)
                when = now + span
                if when != free_at:
                    free_at = when
                    freeings = pending.get(when)
                    if freeings is None:
                        freeings = pending[when] = []
                        heappush(times, when)
                freeings.append(~(done_base + link))
            self.actions += len(batch)
            del pending[now]

    def run(self) -> None:
        env = self.env
        while True:
            try:
                env.step()
            except simpy.core.EmptySchedule:
                break
            self.events += 1

    def stats(self) -> tuple[HopList, dict[LinkId, LinkStats]]:
        """Hops in start order and per-link statistics, from the recorded columns."""
        transfer, link = (np.frombuffer(c, dtype=np.int32).astype(np.int64) for c in self.record[:2])
        start, end = (np.frombuffer(c, dtype=np.float64) for c in self.record[2:])
        n_links = len(self.link_ids)
        size = np.frombuffer(self.nbytes, np.int64)[transfer]
        total_bytes = np.bincount(link, weights=size, minlength=n_links)
        messages = np.bincount(link, minlength=n_links)
        busy = np.bincount(link, weights=end - start, minlength=n_links)
        links = {
            lk: LinkStats(int(b), int(m), float(s), int(q))
            for lk, b, m, s, q in zip(self.link_ids, total_bytes.tolist(), messages.tolist(), busy.tolist(), self.max_queue, strict=True)
        }
        return HopList(transfer, link, start, end, self.link_ids), links


_ABSENT = object()


def _made(buffer: dict, key: Hashable, bundles: Any, device: int, transfer: int, made: dict) -> Any:
    """The bundle ``key``, made from the parts ``buffer`` holds (or makes in turn).

    What a device makes is kept in ``made`` (by device and key), not in its buffer:
    it holds nothing new, and a bundle made again inside a bigger one is the same object.
    """
    bundle = made.get((device, key))
    if bundle is not None:
        return bundle
    parts = bundles.get(key)
    if parts is None:
        raise EngineError(f"device {device} must send chunk {key!r} (transfer #{transfer}) but does not hold it")
    held = []
    for part in parts:
        chunk = buffer.get(part, _ABSENT)
        held.append(_made(buffer, part, bundles, device, transfer, made) if chunk is _ABSENT else chunk)
    bundle = made[(device, key)] = Bundle(held)
    return bundle


def _shared(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """The values as a NumPy object array of Python objects, to index into lists that share them."""
    values = values.tolist() if isinstance(values, np.ndarray) else values
    out = np.empty(len(values), object)
    for k, value in enumerate(values):
        out[k] = value
    return out


def _sizes(nbytes: array) -> ArrayList:
    """The sizes of the transfers as a list that keeps them as an array too."""
    values = np.frombuffer(nbytes, np.int64)
    values.flags.writeable = False
    return ArrayList(_shared_ints(values), values)


def _shared_ints(values: np.ndarray) -> list[int]:
    """``values.tolist()``, with one int object per distinct value (few sizes, millions of transfers)."""
    if not len(values):
        return []
    unique, inverse = factorize(values)
    return _shared(unique)[inverse].tolist()


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
        arrive at its source before it leaves. The sequence may offer a
        ``columns()`` method returning a mapping of arrays, one entry per
        transfer: ``src``, ``dst``, ``direction``, ``reduce``, ``key_index``
        (into the list ``keys``), and the dependencies as ``dep_ptr`` /
        ``dep_idx`` (transfer i waits for ``dep_idx[dep_ptr[i]:dep_ptr[i+1]]``).
    buffers : sequence of dict
        Each device's chunks at the start, keyed as the transfers' ``key``. The
        dicts are copied; the arrays in them are not. A chunk may be anything
        with an ``nbytes`` (and ``+`` for reductions).
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
    if start_s is None:
        start_s = [0.0] * topology.n_devices
    with _gc_paused():
        columns = transfer_columns(transfers)
        _check(columns, topology.n_devices)
        if len(start_s) != topology.n_devices or any(not 0 <= t < float("inf") for t in start_s):
            raise ValueError(f"start_s must give a finite time >= 0 for each of the {topology.n_devices} devices, got {list(start_s)!r}")
        run = _Run(topology, columns, buffers, cut_through, start_s)
        run.run()
        waiting = [d for d in range(topology.n_devices) if run.taken[d] < run.expected[d]]
        if waiting:
            stuck = [i for i, m in enumerate(run.missing) if m]
            raise EngineError(f"deadlock: devices {waiting} still wait for chunks; transfers {stuck[:10]} never became ready")
        hops, links = run.stats()
        playback = Playback(
            buffers=run.buffers,
            time=max(run.arrived_at, default=0.0),
            sent_at=run.sent_at,
            arrived_at=run.arrived_at,
            nbytes=_sizes(run.nbytes),
            hops=hops,
            links=links,
            events=run.events,
            routes=run.routes,
            actions=run.actions,
            bundles=run.bundles,
        )
        del run  # its per-transfer lists go now: the collector, back on, need not walk them
    return playback
