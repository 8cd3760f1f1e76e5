"""The fast player: plays exactly the events of the process model, without a process per thing.

:mod:`netsim.engine.processes` defines netsim's timing: a SimPy process per link,
per device and per compute unit. This module plays the same events, at the same
moments and in the same order, ties included, from flat lists indexed by
transfer, link and device, with no object, closure or SimPy event per message.
The tests play random schedules full of ties with both and check that times,
hops, link and compute statistics are equal bit for bit.

One :class:`simpy.Environment` keeps the time. The player is one SimPy process
that sleeps until the next instant at which something happens, then handles, in
the order they were scheduled, every *action* due at that instant: each is one
event of the process model (a message reaching the end of a link, a link or a
compute unit starting or finishing, a device waking up). Actions are small ints
in a list per instant, so SimPy sees one event per distinct instant, not 3.5 per
chunk move. (The player keeps the instants itself and computes every time as the
process model does, a link serving a message by :func:`netsim.engine.link_model.serve`;
SimPy's clock follows them to within rounding.)
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import simpy

from netsim.columnar import stable_order
from netsim.engine.columns import HopList, hops_and_links, step_dependencies, waiter_keys
from netsim.engine.link_model import LinkModel, serve
from netsim.engine.payloads import ABSENT, add_into, computed, made, shared
from netsim.engine.playback import LinkStats
from netsim.engine.processes import run_counting
from netsim.engine.routes import Routes
from netsim.network.topology import LinkId, Topology

__all__ = ["FastPlayer"]


class FastPlayer:
    """One playback: the network process and what it keeps per transfer, link and device.

    Per transfer, link and device the state lives in plain lists indexed by
    number (no object per message). The network process handles *actions*, small
    ints in the list of the instant they are due at:

    ``i >= 0``
        transfer i is delivered: its tail reached its destination.
    ``~d`` for a device d
        device d wakes up (or starts): takes in its arrivals, sends what became ready.
    ``~(n_devices + j)`` for a compute step j
        the compute unit of its device, idle until now, starts it.
    ``~(n_devices + n_computes + j)``
        compute step j is done: its device takes it in, its unit starts the next, or goes idle.
    ``~(n_devices + 2 n_computes + i)`` for a transfer i
        the link transfer i asked for, idle until now, starts serving it.
    ``~(n_devices + 2 n_computes + n_transfers + i)``
        the head (cut-through) or tail of transfer i reaches the start of its
        next link, and asks for it.
    ``~(n_devices + 2 n_computes + 2 n_transfers + k)``
        link k is done with a message: it serves the next in its queue, or goes idle.

    Arrivals and finished compute steps share one numbering (transfer i, compute
    step ``n_transfers + j``), so counting off who waits for what is one code path.
    """

    def __init__(
        self,
        topology: Topology,
        columns: dict[str, Any],
        buffers: Sequence[dict],
        cut_through: bool,
        start_s: Sequence[float],
        computes: Sequence[Any] = (),
        compute_columns: dict[str, Any] | None = None,
        durations: Sequence[float] = (),
    ) -> None:
        n = len(columns["src"])
        m = len(computes)
        self.computes = computes
        self.compute_device = compute_columns["device"].tolist() if m else []
        n_devices = topology.n_devices
        lanes = compute_columns["unit"] if m and "unit" in compute_columns else None
        # the unit that serves each step: its device's compute unit (d), or another of its units (d + n_devices * unit)
        self.compute_unit = (compute_columns["device"] + n_devices * lanes).tolist() if lanes is not None else self.compute_device
        self.n_units = n_devices * (int(lanes.max()) + 1 if lanes is not None and len(lanes) else 1)
        self.duration = [float(t) for t in durations]
        n_devices = topology.n_devices
        self.n_devices = n_devices
        self.env = simpy.Environment()
        self.cut_through = cut_through
        self.start_s = [float(s) for s in start_s]
        # Per-transfer lists share their int objects (one per device, per key...): a list of
        # millions of fresh ints would cost memory, and memory costs page faults.
        self.dst = shared(np.arange(n_devices))[columns["dst"]].tolist()
        self.key = shared(columns["keys"])[columns["key_index"]].tolist()
        self.reduce = bytearray(np.asarray(columns["reduce"], np.uint8).tobytes())
        self.bundles = columns.get("bundles") or {}
        self.made: dict[tuple[int, Hashable], Any] = {}  # bundles devices made, by (device, key)
        routes = Routes.of_topology(topology)
        self.link_ids = routes.link_ids
        self.route, self.routes = routes.of(topology, columns) if n else ([], [])
        self.links = LinkModel.of(topology, self.link_ids, cut_through=cut_through)
        # missing[i]: arrivals transfer i still waits for. Who waits for transfer i: nobody if
        # first[i] == -1; first[i] alone if it is >= 0; else -2 - first[i], then second[i] if that
        # is >= 0, else the tuple more[-1 - second[i]] (one waiter, the common case, reads one array).
        ptr, idx = step_dependencies(columns, compute_columns)  # numbered transfers first, then compute steps
        counts_in = np.diff(ptr)
        self.missing = counts_in.tolist()
        joins = compute_columns["join"] if m else None
        self.is_join = bytes(n) + (joins.tobytes() if joins is not None else b"")
        # Steps below this number are no joins (n + m when there are none): one comparison where a step becomes ready.
        self.first_join = n + (int(np.argmax(joins)) if joins is not None and joins.any() else m)
        waiter = np.repeat(np.arange(n + m, dtype=np.int64), counts_in)
        keys = waiter_keys(ptr, idx, joins, n)
        if keys is not None:  # a join is counted off just before its first waiter (see waiter_keys)
            order = np.argsort(keys[waiter], kind="stable")
            idx, waiter = idx[order], waiter[order]
        # Who waits for each compute step: a list each, in step order (few compute steps, no need for speed).
        self.compute_waiters: list[list[int]] = [[] for _ in range(m)]
        on_compute = idx >= n
        if on_compute.any():
            for j, w in zip((idx[on_compute] - n).tolist(), waiter[on_compute].tolist(), strict=True):
                self.compute_waiters[j].append(w)
            idx, waiter = idx[~on_compute], waiter[~on_compute]
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
        where = np.concatenate([columns["src"], compute_columns["device"]]) if m else columns["src"]
        for i, s in zip(initial.tolist(), where[initial].tolist(), strict=True):
            self.ready[s].append(i)

        self.sent_at = [float("nan")] * n
        self.arrived_at = [float("nan")] * n
        self.nbytes = array("q", bytes(8 * n))
        self.buffers = [dict(b) for b in buffers]
        done_at = np.concatenate([columns["dst"], compute_columns["device"]]) if m else columns["dst"]
        self.expected = np.bincount(done_at, minlength=n_devices).tolist() if n + m else [0] * n_devices
        self.taken = [0] * n_devices
        self.max_queue = [0] * len(self.link_ids)
        self.started = [float("nan")] * m  # when each compute step started, ended
        self.ended = [float("nan")] * m
        self.unit_max_queue = [0] * self.n_units
        # transfer, link, start, end of every hop, as arrays: an array's append parses its argument
        # (more instructions than a list's), but keeps 4 to 8 bytes per value where a list keeps
        # a pointer and, for the end times, a float object: on big runs the memory costs more.
        self.record = (array("i"), array("i"), array("d"), array("d"))
        self.events = 0
        self.actions = 0
        self.env.process(self._network(n, m))

    def _network(self, n: int, m: int):
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
        bandwidth, latency, max_queue = self.links.bandwidth_Bps.tolist(), self.links.latency_s.tolist(), self.max_queue
        serve_link = serve  # the link model (bound locally: a global lookup less per message)
        first_join, join = self.first_join, self._join
        sent_at, arrived_at, nbytes, buffers, ready, taken = self.sent_at, self.arrived_at, self.nbytes, self.buffers, self.ready, self.taken
        payload: list[Any] = [None] * n
        hop = [0] * n  # link of its route a transfer is on
        tail = [0.0] * n  # when its tail reaches the end of that link (multi-hop routes)
        inbox: list[list[int]] = [[] for _ in range(n_devices)]
        awake = [False] * n_devices  # waiting for arrivals (from its start on)
        queue: list[list[int]] = [[] for _ in range(n_links)]  # messages waiting for a busy link
        state = [0] * n_links  # 0 idle, 1 about to serve a message (not in queue), 2 serving
        start_base, finish_base = n_devices, n_devices + m  # compute units: an idle one starts step j, step j is done
        serve_base = n_devices + 2 * m
        forward_base, done_base = serve_base + n, serve_base + 2 * n
        device_of, duration, started, ended, unit_max_queue = self.compute_device, self.duration, self.started, self.ended, self.unit_max_queue
        unit_of = self.compute_unit
        unit_queue: list[list[int]] = [[] for _ in range(self.n_units)]
        finished: list[list[int]] = [[] for _ in range(n_devices)]  # compute steps done, not yet taken in
        unit_state = [0] * self.n_units  # as a link's state
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
                if c < serve_base:  # device c wakes up (or, with compute steps, a compute unit acts)
                    if m and c >= start_base:  # a compute unit starts a step, or is done with one
                        if c < finish_base:
                            j = c - start_base
                            u = unit_of[j]
                        else:
                            j = c - finish_base
                            d, u = device_of[j], unit_of[j]
                            finished[d].append(j)
                            if awake[d]:
                                awake[d] = False
                                batch.append(~d)
                            waiting = unit_queue[u]
                            if not waiting:
                                unit_state[u] = 0
                                continue
                            j = waiting.pop(0)
                        unit_state[u] = 2
                        started[j] = now
                        when = ended[j] = now + duration[j]
                        due = pending.get(when)
                        if due is None:
                            due = pending[when] = []
                            heappush(times, when)
                        due.append(~(finish_base + j))
                        continue
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
                                held = buffer.get(key, ABSENT)
                                if held is ABSENT:  # a bundle: into the parts it holds
                                    add_into(buffer, key, chunk, self.bundles, c)
                                else:
                                    buffer[key] = held + chunk
                            else:
                                buffer[key] = chunk
                            # Count the arrival off for whoever waits for it (written out three times on
                            # purpose: a call per waiter would cost more than the rest of the arrival).
                            j = first[i]
                            if j >= 0:
                                left = missing[j] - 1
                                missing[j] = left
                                if not left:
                                    if j < first_join:
                                        becoming.append(j)
                                    else:
                                        join(c, j, now)
                            elif j < -1:
                                j = -2 - j
                                left = missing[j] - 1
                                missing[j] = left
                                if not left:
                                    if j < first_join:
                                        becoming.append(j)
                                    else:
                                        join(c, j, now)
                                j = second[i]
                                if j >= 0:
                                    left = missing[j] - 1
                                    missing[j] = left
                                    if not left:
                                        if j < first_join:
                                            becoming.append(j)
                                        else:
                                            join(c, j, now)
                                else:
                                    for waiter in more[-1 - j]:
                                        missing[waiter] -= 1
                                        if not missing[waiter]:
                                            if waiter < first_join:
                                                becoming.append(waiter)
                                            else:
                                                join(c, waiter, now)
                    if m:  # compute steps: those done are taken in, those ready go to the unit (before the transfers are sent)
                        if finished[c]:
                            self._take_finished(c, finished[c], now)
                            finished[c] = []
                        awake[c] = True
                        sending = ready[c]
                        if not sending:
                            continue
                        ready[c] = []
                        starting = [i - n for i in sending if i >= n]
                        if starting:
                            sending = [i for i in sending if i < n]
                            for j in starting:  # as a link takes messages
                                u = unit_of[j]
                                if unit_state[u]:
                                    waiting = unit_queue[u]
                                    waiting.append(j)
                                    if len(waiting) + (unit_state[u] == 1) > unit_max_queue[u]:
                                        unit_max_queue[u] = len(waiting) + (unit_state[u] == 1)
                                else:
                                    unit_state[u] = 1
                                    if not unit_max_queue[u]:
                                        unit_max_queue[u] = 1
                                    batch.append(~(start_base + j))
                    else:
                        awake[c] = True
                        sending = ready[c]
                        if not sending:
                            continue
                        ready[c] = []
                    buffer = buffers[c]
                    for i in sending:
                        key = key_of[i]
                        chunk = buffer.get(key, ABSENT)
                        if chunk is ABSENT:
                            chunk = made(buffer, key, self.bundles, c, i, {} if reduce[i] else self.made)  # (partial sums: made afresh)
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
                last = h + 1 == len(route)
                # (transmission_s written out, bytes over bandwidth: a second call per message would add about 2%)
                end, hold, reach, tail_at = serve_link(now, nbytes[i] / bandwidth[link], latency[link], tail[i], h, last, cut_through)
                record_transfer(i)
                record_link(link)
                record_start(now)
                record_end(end)
                if last:
                    action = i
                else:
                    tail[i] = tail_at
                    action = ~(forward_base + i)
                when = now + reach
                if when != arrive_at:
                    arrive_at = when
                    arrivals = pending.get(when)
                    if arrivals is None:
                        arrivals = pending[when] = []
                        heappush(times, when)
                arrivals.append(action)
                when = now + hold
                if when != free_at:
                    free_at = when
                    freeings = pending.get(when)
                    if freeings is None:
                        freeings = pending[when] = []
                        heappush(times, when)
                freeings.append(~(done_base + link))
            self.actions += len(batch)
            del pending[now]

    def _take_finished(self, device: int, steps: list[int], now: float) -> None:
        """Device ``device`` takes in its compute steps that are done: their outputs, and who waited for them."""
        buffer = self.buffers[device]
        self.taken[device] += len(steps)
        for j in steps:
            computed(buffer, self.computes[j], device, j)
            self._count_off_compute(device, j, now)

    def _count_off_compute(self, device: int, j: int, now: float) -> None:
        """Compute step (or join) ``j`` is done on ``device``: whoever waited for it and waits for nothing more is ready."""
        missing = self.missing
        for waiting in self.compute_waiters[j]:
            missing[waiting] -= 1
            if not missing[waiting]:
                self._join(device, waiting, now)

    def _join(self, device: int, step: int, now: float) -> None:
        """``step`` waits for nothing more: ready, or, a join, done here and now (no compute unit), its waiters counted off in its place."""
        if step < self.first_join or not self.is_join[step]:
            self.ready[device].append(step)
            return
        j = step - len(self.dst)
        self.started[j] = self.ended[j] = now
        self.taken[device] += 1
        self._count_off_compute(device, j, now)

    def run(self) -> None:
        """Play until nothing more happens, counting SimPy's events."""
        self.events = run_counting(self.env)

    def stats(self) -> tuple[HopList, dict[LinkId, LinkStats]]:
        """Hops in start order and per-link statistics, from the recorded columns."""
        return hops_and_links(self.record, self.nbytes, self.link_ids, self.max_queue)
