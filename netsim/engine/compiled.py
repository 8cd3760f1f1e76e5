"""The fast player's loop compiled: the same events as the process model, at a fraction of a microsecond each.

:class:`CompiledPlayer` plays what :class:`netsim.engine.fast.FastPlayer` plays,
event for event, with the loop of :mod:`netsim.engine.kernel` compiled by numba
(cached on disk after the first run). Devices' chunks are numbers in the loop:
what a transfer carries is the number of the chunk its source held when it left,
and a reduction is noted and computed afterwards, in the order it happened, with
the same additions (``held + arrived``) as the Python player. Each device's
buffer is then built once, in the order the Python player would have filled it.

It plays schedules of transfers and compute steps (joins included) whose devices'
chunk table (devices x keys) stays small, and whose compute steps make no values
(a step's ``fn`` is Python, which the loop cannot call: runs that compute values
play on the Python player; timing-only runs, ``data="none"``, and programs'
compute steps carry none). Schedules that send bundles play in
:mod:`netsim.engine.compiled_bundles`, on the same loop. :func:`compiled_player` returns
None for the rest, and for runs where a reduction's result turns out not to weigh
what it was taken to weigh, or where a chunk is missing (the Python player then
plays the run and raises the error).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from netsim.engine.columns import RouteList
from netsim.engine.compiled_bundles import bundled_player
from netsim.engine.compiled_run import CompiledRun, ComputeSteps, hop_count, waiting_lists
from netsim.engine.final_buffers import FinalBuffers
from netsim.engine.row_buffers import Chunks, RowBuffers
from netsim.engine.table_buffers import TableBuffers
from netsim.network.topology import Topology

__all__ = ["MAX_CHUNK_TABLE", "MIN_TRANSFERS", "CompiledPlayer", "compiled_player"]

MIN_TRANSFERS = 20_000
"""Smaller schedules play on the Python player: it is fast enough, and numba need not load."""
MAX_CHUNK_TABLE = 1 << 27
"""The most (device, key) entries of the compiled player's chunk table (4 bytes each: 512 MiB at most).
A whole training step on 256 chips holds about 7e7 (a 16B decoder's step on v5e 16x16); past
the bound the Python player, 50x slower, would play it."""


def _plays_compute(computes: Sequence[Any]) -> bool:
    """Whether the compiled loop can play these compute steps: none computes values (a Python
    function the loop cannot call). (A join that waits for nothing never gets here: ``play`` refuses it.)"""
    if isinstance(getattr(computes, "columns", None), dict):  # steps held as columns compute no values
        return True
    return all(getattr(c, "fn", None) is None or getattr(c, "output", None) is None for c in computes)


def in_play_order(wait_ptr: np.ndarray, waiter: np.ndarray, missing: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`netsim.engine.play_order.in_play_order` (compiled: numba loaded on first use, not when a collective plays)."""
    from netsim.engine.play_order import in_play_order as numbered

    return numbered(wait_ptr, waiter, missing, n)


def _kernel() -> Any:
    """The compiled loop (numba loaded on first use), or None when numba is not installed."""
    try:
        from netsim.engine.kernel import play_kernel
    except ImportError:  # pragma: no cover - numba is a dependency; a broken install plays in Python
        return None
    return play_kernel


class CompiledPlayer(CompiledRun):
    """One run of the compiled loop, and what it leaves, as :class:`~netsim.engine.fast.FastPlayer` leaves it."""

    def __init__(
        self,
        topology: Topology,
        columns: dict[str, Any],
        buffers: Sequence[dict],
        cut_through: bool,
        start_s: Sequence[float],
        kernel: Any,
        steps: ComputeSteps,
    ) -> None:
        n = len(columns["src"])
        n_devices = topology.n_devices
        self.n_devices = n_devices
        self.bundles: dict = {}
        keys = columns["keys"]
        n_keys = len(keys)
        inverse, route_ptr, route_links, bandwidth, latency = self._routes(topology, columns)

        ptr, idx = steps.dependencies(columns)
        missing = np.diff(ptr).astype(np.int32)
        wait_ptr, waiter = waiting_lists(ptr, idx, n, steps.join)
        del ptr, idx
        # A program's transfers numbered in the order they will play (netsim.engine.play_order), numbered back after the loop.
        order = None
        if len(steps.device):
            order, rank, wait_ptr, waiter = in_play_order(wait_ptr, waiter, missing, n)
            del rank  # (old -> new: made again when the results are numbered back, not held while the loop plays)
            missing[:n] = missing[order]
        played = _renumbered(order, columns["dst"], columns["key_index"], columns["reduce"], inverse)
        route_of = played[3]  # (the routes as link ids are made from it once the run is numbered back: one copy held while it plays)
        del inverse
        # The loop reads a transfer's source only to put those that wait for nothing in their source's ready list: in
        # play order they come first, so the sources up to the last of them are all it takes.
        waits_for_nothing = missing[:n] == 0
        ready_at_start = n if order is None or not waits_for_nothing.any() else n - int(np.argmax(waits_for_nothing[::-1]))
        del waits_for_nothing
        played = (*played, *_renumbered(None if order is None else order[:ready_at_start], columns["src"], kinds=(np.int32,)))

        # The chunks devices hold at the start, numbered (keys no transfer names are left out); the reductions' results come after them.
        rows = buffers.rows if isinstance(buffers, RowBuffers) else None  # (the chunks are its rows)
        key_number = _key_numbers(buffers, {k: j for j, k in enumerate(keys)})
        holder = np.repeat(np.arange(n_devices, dtype=np.int64), [len(buffers.keys)] * n_devices if rows is not None else [len(b) for b in buffers])
        kept_entries = key_number >= 0
        if rows is not None:  # every chunk held, and those some transfer names, looked up when read
            entries, chunks = Chunks(buffers, np.arange(len(key_number))), Chunks(buffers, np.flatnonzero(kept_entries))
        else:
            entries = np.fromiter(itertools.chain.from_iterable(b.values() for b in buffers), object, len(key_number))
            chunks = entries[kept_entries]
        first_slots = holder[kept_entries] * n_keys + key_number[kept_entries]
        del holder
        held = np.full(n_devices * n_keys, -1, np.int32)
        held[first_slots] = np.arange(len(chunks), dtype=np.int32)
        reduce = played[2]
        n_sums = int(np.count_nonzero(reduce))
        size = np.zeros(len(chunks) + n_sums, np.int64)
        if rows is not None and len(rows):
            size[: len(chunks)] = rows[0].nbytes
        else:
            size[: len(chunks)] = np.fromiter(map(operator.attrgetter("nbytes"), chunks), np.int64, len(chunks))
        n_hops = hop_count(route_of, route_ptr)

        self.sent_at_array = np.full(n, np.nan)
        self.arrived_at_array = np.full(n, np.nan)
        self.nbytes = np.zeros(n, np.int64)
        carried = np.full(n, -1, np.int32)
        self.record = (np.zeros(n_hops, np.int32), np.zeros(n_hops, np.int32), np.zeros(n_hops), np.zeros(n_hops))
        self.max_queue_array = np.zeros(len(self.link_ids), np.int64)
        taken = np.zeros(n_devices, np.int64)
        sum_of, sum_with = np.zeros(n_sums, np.int64), np.zeros(n_sums, np.int64)
        expected = np.bincount(columns["dst"], minlength=n_devices)  # arrivals per device: room for its new keys
        new_start = np.zeros(n_devices + 1, np.int64)
        np.cumsum(expected, out=new_start[1:])
        new_keys, new_count = np.zeros(n, np.int32), np.zeros(n_devices, np.int64)
        counts = np.zeros(4, np.int64)
        units = steps.loop_arrays(n_devices) if len(steps.device) else None
        self.status, _ = kernel(
            n_devices,
            n_keys,
            bool(cut_through),
            np.asarray(start_s, np.float64),
            *played[:4],
            route_ptr,
            route_links,
            bandwidth,
            latency,
            wait_ptr,
            waiter,
            missing,
            played[4],
            bool(len(route_ptr) > 1 and np.diff(route_ptr).max() > 1),
            held,
            size,
            len(chunks),
            self.sent_at_array,
            self.arrived_at_array,
            self.nbytes,
            carried,
            *self.record,
            self.max_queue_array,
            taken,
            sum_of,
            sum_with,
            new_keys,
            new_start,
            new_count,
            counts,
            units,
            None,
        )
        del played
        if order is not None:  # (the loop's wait lists, done with, as its scratch)
            self._number_back(order, missing, route_of, spare=(wait_ptr, waiter))
        del wait_ptr, waiter
        self.routes = RouteList(route_of, self.route_ids)
        n_reduced = self._keep(counts, taken, expected + steps.taken_in(n_devices), missing, n_devices, units[3:6] if units else ())
        self.buffers: list[dict] = []
        if self.status:
            return
        new = (keys, expected, new_keys, new_start, new_count)
        if not n_reduced and kept_entries.all():  # (every chunk held at the start is in the table: read it in place)
            start_keys = [buffers.keys] * n_devices if rows is not None else [list(b) for b in buffers]
            self.buffers = TableBuffers(keys, held, chunks, start_keys, *_compact_new_keys(new), first_slots)
            return
        first = len(chunks)
        try:  # the reductions, in the order they happened (in waves)
            from netsim.engine.sums import reduced, summed

            row_of = np.flatnonzero(kept_entries)
            lazy = summed(chunks, sum_of[:n_reduced], sum_with[:n_reduced], rows, row_of) if n_reduced else None
            if lazy is None:
                kept = np.zeros(n_reduced, np.bool_)  # the sums devices hold at the end
                kept[held[held >= first] - first] = True
                sums, made = reduced(chunks, sum_of[:n_reduced], sum_with[:n_reduced], kept, rows, row_of)
            else:
                made = np.full(n_reduced, lazy.nbytes, np.int64)
        except Exception:  # (the Python player plays the run again and raises it where it happens)
            self.status = 1
            return
        if not np.array_equal(made, size[first : first + n_reduced]):
            self.status = 1  # a sum weighs what it was not taken to weigh: the run's times would differ
            return
        if lazy is not None:
            self.buffers = _final_buffers(buffers, entries, row_of, held, first_slots, kept_entries, lazy, new)
            return
        if rows is not None:
            entries = np.fromiter(itertools.chain.from_iterable(b.values() for b in buffers), object, len(entries))
            chunks = entries[kept_entries]
        self.buffers = _buffers(buffers, entries, held, first_slots, kept_entries, np.concatenate((chunks, sums)), new)


def _renumbered(order: np.ndarray | None, *columns: Any, kinds: tuple = (np.int32, np.int32, np.bool_, np.int32)) -> tuple[np.ndarray, ...]:
    """Per-transfer columns as the loop takes them (``kinds``: int32, ``reduce`` bool), in the new numbering (``order``: new -> old; None: as they are)."""
    as_taken = (np.asarray(column, kind) for column, kind in zip(columns, kinds, strict=True))
    return tuple(as_taken if order is None else (column[order] for column in as_taken))


def _key_numbers(buffers: Sequence[dict], index: dict[Any, int]) -> np.ndarray:
    """Each starting entry's key (all buffers' end to end) as its number in ``index``, -1 if absent
    (a device holding the keys of the device before it, in the same order, reuses their numbers)."""
    if isinstance(buffers, RowBuffers):
        return np.tile(np.fromiter(map(index.get, buffers.keys, itertools.repeat(-1)), np.int64, len(buffers.keys)), len(buffers))
    numbers, previous, previous_numbers = [], None, np.zeros(0, np.int64)
    for buffer in buffers:
        keys = list(buffer)
        if keys != previous:
            previous, previous_numbers = keys, np.fromiter(map(index.get, keys, itertools.repeat(-1)), np.int64, len(keys))
        numbers.append(previous_numbers)
    return np.concatenate(numbers) if numbers else np.zeros(0, np.int64)


def _compact_new_keys(new: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Each device's new keys end to end (the room left unused dropped), and where each device's begin (n + 1 entries)."""
    _, expected, new_keys, new_start, new_count = new
    if np.array_equal(new_count, expected):
        return new_keys, new_start
    device = np.repeat(np.arange(len(expected), dtype=np.int64), expected)
    used = np.arange(len(device)) - new_start[device] < new_count[device]
    start = np.zeros(len(expected) + 1, np.int64)
    np.cumsum(new_count, out=start[1:])
    return new_keys[used], start


def _new_chunks(held: np.ndarray, new: tuple) -> tuple[list[Any], np.ndarray, np.ndarray]:
    """The keys devices took that they did not hold at the start, in the order they first came, device
    after device: the keys, their chunk numbers (in ``held``'s numbering) and how many each device took.

    ``new`` is ``(keys, expected, new_keys, new_start, new_count)``: device d's new keys are key numbers
    ``new_keys[new_start[d]:new_start[d] + new_count[d]]`` (``expected[d]`` places kept for them).
    """
    keys, expected, _, _, new_count = new
    taken, start = _compact_new_keys(new)
    n_keys = len(keys)
    device = np.repeat(np.arange(len(expected), dtype=np.int64), np.diff(start))
    key_objects = np.empty(n_keys, object)
    for j, k in enumerate(keys):
        key_objects[j] = k
    return key_objects[taken].tolist(), held[device * n_keys + taken], new_count


def _buffers(
    buffers: Sequence[dict], entries: np.ndarray, held: np.ndarray, first_slots: np.ndarray, kept: np.ndarray, shared: np.ndarray, new: tuple
) -> list[dict]:
    """Each device's buffer at the end: what it held at the start (changed where a chunk came in its
    place), then its new keys in the order they first came.

    ``entries`` are the chunks held at the start, all buffers' end to end (an object array, changed here);
    ``kept`` says which of them some transfer names: those are
    ``first_slots`` in ``held`` (devices x keys, chunk numbers into ``shared``); new keys as :func:`_new_chunks`.
    """
    lengths = [len(b) for b in buffers]
    values = entries  # (every chunk held at the start, in the buffers' order: changed in place)
    values[kept] = shared[held[first_slots]]
    held_keys = list(itertools.chain.from_iterable(buffers))
    held_values = values.tolist()
    del values
    key_of, numbers, counts = _new_chunks(held, new)
    chunk_of = shared[numbers].tolist()
    out = []
    a = b = 0
    for count, length in zip(counts.tolist(), lengths, strict=True):
        buffer = dict(zip(held_keys[a : a + length], held_values[a : a + length], strict=True))
        a += length
        if count:
            buffer.update(zip(key_of[b : b + count], chunk_of[b : b + count], strict=True))
            b += count
        out.append(buffer)
    return out


def _final_buffers(
    buffers: Sequence[dict], entries: np.ndarray, row_of: np.ndarray, held: np.ndarray, first_slots: np.ndarray, kept: np.ndarray, sums: Any, new: tuple
) -> FinalBuffers:
    """:func:`_buffers`' buffers as :class:`FinalBuffers`: numbers, chunks looked up when read.

    Chunk c of ``held``'s numbering is entry ``row_of[c]`` below ``len(row_of)``, else sum ``c - len(row_of)``.
    """
    first, n_entries = len(row_of), len(entries)

    def numbered(c: np.ndarray) -> np.ndarray:  # (as FinalBuffers numbers them: the entries, then the sums)
        return np.where(c < first, row_of[np.minimum(c, first - 1)] if first else 0, c - first + n_entries)

    numbers = np.arange(n_entries, dtype=np.int64)
    numbers[kept] = numbered(held[first_slots])
    if isinstance(buffers, RowBuffers):
        keys, lengths = buffers.keys * len(buffers), np.full(len(buffers), len(buffers.keys), np.int64)
    else:
        keys, lengths = list(itertools.chain.from_iterable(buffers)), np.fromiter(map(len, buffers), np.int64, len(buffers))
    key_of, new_numbers, counts = _new_chunks(held, new)
    if len(key_of):  # each device's new keys after those it started with
        device = np.concatenate((np.repeat(np.arange(len(buffers)), lengths), np.repeat(np.arange(len(buffers)), counts)))
        order = np.argsort(device, kind="stable")
        keys = np.fromiter(itertools.chain(keys, key_of), object, len(order))[order].tolist()
        numbers = np.concatenate((numbers, numbered(new_numbers)))[order]
        lengths = lengths + counts
    start = np.zeros(len(buffers) + 1, np.int64)
    np.cumsum(lengths, out=start[1:])
    return FinalBuffers(keys, start, numbers, entries, sums)


def compiled_player(
    topology: Topology,
    columns: dict[str, Any],
    buffers: Sequence[dict],
    cut_through: bool,
    start_s: Sequence[float],
    computes: Sequence[Any],
    compute_cols: dict[str, Any] | None = None,
    durations: Sequence[float] = (),
) -> CompiledPlayer | None:
    """The run played by the compiled loop, or None where the Python player must play it (see the module).

    ``compute_cols`` and ``durations`` are the compute steps' columns and how long each takes
    (:func:`~netsim.engine.columns.compute_columns`, :func:`~netsim.engine.processes.compute_time_s`),
    given when there are compute steps.
    """
    n = len(columns["src"])
    if n < MIN_TRANSFERS or not _plays_compute(computes):
        return None
    steps = ComputeSteps.of(computes, compute_cols, durations)
    if columns.get("bundles"):
        return bundled_player(topology, columns, buffers, cut_through, start_s, steps)
    if topology.n_devices * len(columns["keys"]) > MAX_CHUNK_TABLE:
        return None
    kernel = _kernel()
    if kernel is None:
        return None
    run = CompiledPlayer(topology, columns, buffers, cut_through, start_s, kernel, steps)
    return None if run.status else run
