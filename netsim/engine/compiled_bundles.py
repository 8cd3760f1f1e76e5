"""The compiled loop for schedules that send bundles: the same events as the process model, bundles made by number.

:func:`netsim.engine.compiled.compiled_player` hands here the schedules whose
transfers send bundles (:mod:`netsim.algorithms.bundles`), of
:data:`~netsim.engine.compiled.MIN_TRANSFERS` transfers or more (compute steps that
make no values are played, and reductions of size-only stand-ins, such as a program's
timing-only psum beside its bundled gathers). The loop of
:mod:`netsim.engine.kernel` plays them, compiled for bundles: chunks held by
(device, key) slot (:mod:`netsim.engine.kernel_bundles`); a
device that sends a bundle it does not hold makes it, once, from the parts it
holds (making the parts it lacks in turn), exactly where and when the Python
player's :func:`~netsim.engine.payloads.made` would, and the bundle is a new chunk
number whose size is its parts'; a sum is numbered after every bundle the run could
make and weighs what it was added into. A bundle added into a device's parts (a
bundled reduce-scatter) is checked against the bundle the device makes of them, and
adds nothing the device holds: stand-ins added are the stand-ins added into, so the
parts stay the same chunks (:func:`~netsim.engine.payloads.add_into`). It plays the same actions in the same order:
times, hops, link statistics, event and action counts are the Python player's and
the process model's bit for bit (tests/test_engines.py).

After the loop nothing is built until someone reads the playback's buffers
(:class:`BundledBuffers`): then every bundle made becomes a
:class:`~netsim.algorithms.bundles.Bundle` of the very chunks the Python player
would have put in it (the starting chunks, or bundles made before), and each
device's buffer holds the same keys in the same order. A timing-only run
(``data="none"``) never reads them, so it never makes a payload.

Everything else plays on the Python player (:class:`netsim.engine.fast.FastPlayer`):
reductions of values beside bundles, compute steps that compute values, runs in which a device misses a part
or a chunk it sends (the Python player raises the error) or makes a bundle that
holds itself.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from netsim.algorithms.bundles import Bundle, BundleTable
from netsim.engine.columns import RouteList
from netsim.engine.compiled_run import CompiledRun, ComputeSteps, hop_count, waiting_lists
from netsim.engine.size_buffers import SizeBuffers
from netsim.network.topology import Topology
from netsim.semantics.chunks import SizeOnly

__all__ = ["BundledBuffers", "BundledPlayer", "bundled_player"]


def _key_numbers(keys: list[Hashable], buffers: Sequence[dict], bundles: Mapping) -> tuple[list[Hashable], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every key the run can name, numbered: the transfers' ``keys`` first, then those only the starting
    buffers or the bundle table name. Returns the keys, the starting chunks' key numbers (buffer after
    buffer) and the bundle table by number: ``part_start``, ``part_count`` (-1: no bundle) and ``part_key``.

    Keys that are pairs of non-negative ints ``(block, piece)`` with a :class:`BundleTable` are numbered
    on arrays; any other keys and mappings one by one.
    """
    if isinstance(bundles, BundleTable):
        key_pairs = _int_pairs(keys)
        start_pairs = buffers.keys if isinstance(buffers, SizeBuffers) else _int_pairs(list(itertools.chain.from_iterable(buffers)))
        arrays = (key_pairs, start_pairs, bundles.key_array, bundles.part_array)
        if key_pairs is not None and start_pairs is not None and min(a.min(initial=0) for a in arrays) >= 0:
            return _pair_numbers(keys, key_pairs, start_pairs, bundles)
    start = list(itertools.chain.from_iterable(buffers))
    index = {key: j for j, key in enumerate(keys)}
    start_number = np.fromiter((index.setdefault(key, len(index)) for key in start), np.int64, len(start))
    table = [(index.setdefault(key, len(index)), [index.setdefault(part, len(index)) for part in parts]) for key, parts in bundles.items()]
    part_start = np.zeros(len(index), np.int64)
    part_count = np.full(len(index), -1, np.int64)
    part_key = np.fromiter((p for _, parts in table for p in parts), np.int32)
    at = 0
    for k, parts in table:
        part_start[k], part_count[k] = at, len(parts)
        at += len(parts)
    return list(index), start_number, part_start, part_count, part_key


def _int_pairs(keys: list[Hashable]) -> np.ndarray | None:
    """``keys`` as an int array ``[keys, 2]`` when every one is a tuple of two ints, else None.

    Examples
    --------
    >>> _int_pairs([(0, 1), (2, 0)]).tolist(), _int_pairs([(0, 1), "x"]), _int_pairs([(0, 1, 2)])
    ([[0, 1], [2, 0]], None, None)
    """
    if not set(map(type, keys)) <= {tuple} or not set(map(len, keys)) <= {2}:
        return None
    try:
        return np.fromiter(itertools.chain.from_iterable(keys), np.int64, 2 * len(keys)).reshape(len(keys), 2)
    except (TypeError, ValueError, OverflowError):
        return None


def _pair_numbers(keys: list[Hashable], key_pairs: np.ndarray, start_pairs: np.ndarray, table: BundleTable) -> tuple:
    """:func:`_key_numbers` for ``(block, piece)`` keys, on arrays."""
    every = np.concatenate([key_pairs, start_pairs, table.key_array, table.part_array])
    width = int(every[:, 1].max(initial=0)) + 1
    code = every @ np.array([width, 1], np.int64)
    number = np.full(int(code.max(initial=0)) + 1, -1, np.int64)
    number[code[: len(keys)]] = np.arange(len(keys))
    extra = np.unique(code[number[code] < 0])
    number[extra] = len(keys) + np.arange(len(extra))
    all_keys = keys + [(int(b), int(p)) for b, p in zip(*divmod(extra, width), strict=True)]
    a, b = len(keys), len(keys) + len(start_pairs)
    c = b + len(table.key_array)
    rows = number[code[b:c]]
    part_start = np.zeros(len(all_keys), np.int64)
    part_count = np.full(len(all_keys), -1, np.int64)
    part_start[rows] = table.ptr[:-1]
    part_count[rows] = np.diff(table.ptr)
    return all_keys, number[code[a:b]], part_start, part_count, number[code[c:]].astype(np.int32)


class BundledBuffers(Sequence):
    """Each device's chunks at the end of a bundled run, built when first read.

    Until then the run keeps numbers: the starting chunks, the parts of every bundle
    made (in the order made), and per device the slots of the keys it was handed.
    """

    def __init__(
        self, buffers: Sequence[dict], chunks: list | None, made: tuple, final: tuple[list[Hashable], np.ndarray, np.ndarray], new: tuple, sums: tuple = (0, ())
    ) -> None:
        # (as the Python player copies them when it starts; size-only buffers held as columns change for no one: copied when read)
        self._start = buffers if isinstance(buffers, SizeBuffers) else [dict(b) for b in buffers]
        self._chunks, self._made, self._final, self._new, self._sums = chunks, made, final, new, sums
        self._built: list[dict] | None = None

    def _all(self) -> list[dict]:
        if self._built is None:
            chunks = self._start.chunk_list() if self._chunks is None else self._chunks
            ptr, parts = (a.tolist() for a in self._made)
            first_sum, sum_of = self._sums
            made = len(chunks)
            # sums (of stand-ins, never of bundles) are numbered after every bundle the run could make, and are
            # made first: a bundle may hold one; each bundle's parts are made before it
            chunks.extend([None] * ((first_sum - made) if len(sum_of) else len(ptr) - 1))
            for was in np.asarray(sum_of).tolist():
                chunks.append(chunks[was])  # (SizeOnly + SizeOnly is the stand-in added into)
            for m in range(len(ptr) - 1):
                chunks[made + m] = Bundle([chunks[p] for p in parts[ptr[m] : ptr[m + 1]]])
            keys, held, slot_key = self._final
            start_slot, new_slots, new_start, new_count = self._new
            built = [dict(b) for b in self._start] if isinstance(self._start, SizeBuffers) else self._start
            first = held[start_slot]
            changed = np.flatnonzero(first != np.arange(len(start_slot)))  # a chunk came in place of one held
            owner = np.repeat(np.arange(len(built)), [len(b) for b in built])
            for s, d in zip(start_slot[changed].tolist(), owner[changed].tolist(), strict=True):
                built[d][keys[slot_key[s]]] = chunks[held[s]]
            for d, (a, b) in enumerate(zip(new_start[:-1].tolist(), (new_start[:-1] + new_count).tolist(), strict=True)):
                slots = new_slots[a:b]
                built[d].update(zip([keys[k] for k in slot_key[slots].tolist()], [chunks[c] for c in held[slots].tolist()], strict=True))
            self._built = built
        return self._built

    def __len__(self) -> int:
        return len(self._start)

    def __getitem__(self, index):
        return self._all()[index]

    def __iter__(self) -> Iterator[dict]:
        return iter(self._all())

    def __repr__(self) -> str:
        return f"BundledBuffers({len(self)} devices)"


class BundledPlayer(CompiledRun):
    """One bundled run of the compiled loop, and what it leaves, as :class:`~netsim.engine.fast.FastPlayer` leaves it."""

    def __init__(
        self, topology: Topology, columns: dict[str, Any], buffers: Sequence[dict], cut_through: bool, start_s: Sequence[float], steps: ComputeSteps
    ) -> None:
        from netsim.engine.jit import Dict, types
        from netsim.engine.kernel import play_kernel
        from netsim.engine.kernel_bundles import number_slots

        n = len(columns["src"])
        n_devices = topology.n_devices
        self.n_devices = n_devices
        self.bundles = columns["bundles"]
        src, dst, key = (np.asarray(columns[name], np.int64) for name in ("src", "dst", "key_index"))
        keys, start_key, part_start, part_count, part_key = _key_numbers(columns["keys"], buffers, self.bundles)
        width = len(keys)
        if isinstance(buffers, SizeBuffers):  # (stand-ins of the sizes given, listed when the final buffers are read)
            chunks, holder, start_size = None, buffers.holder, buffers.nbytes
        else:
            chunks = list(itertools.chain.from_iterable(buffer.values() for buffer in buffers))
            holder = np.repeat(np.arange(n_devices, dtype=np.int64), [len(b) for b in buffers])
            start_size = np.fromiter(map(operator.attrgetter("nbytes"), chunks), np.int64, len(chunks))
        n_start = len(holder)
        # Slots: every (device, key) the run can look up, numbered in the order of device * width + key.
        looked = n_start + 2 * n
        self.status = 1
        if n_devices * width * looked >= 2**62:  # (far beyond any run that fits in memory: the Python player plays it)
            return
        packed = np.concatenate([holder * width + start_key, dst * width + key, src * width + key])
        packed *= looked
        packed += np.arange(looked, dtype=np.int64)
        packed.sort()
        slot_of = np.empty(looked, np.int32)
        slot_code = np.empty(looked, np.int64)
        n_slots = number_slots(packed, looked, slot_of, slot_code)
        del packed
        slot_code = slot_code[:n_slots]
        dev_slot = np.searchsorted(slot_code, np.arange(n_devices + 1, dtype=np.int64) * width)
        start_slot = slot_of[:n_start]
        held = np.full(n_slots, -1, np.int32)
        held[start_slot] = np.arange(n_start, dtype=np.int32)
        reduce = np.asarray(columns["reduce"], np.bool_)
        n_sums = int(np.count_nonzero(reduce))
        if n_sums and chunks is not None and not all(type(c) is SizeOnly for c in chunks):
            return  # (sums of values: the Python player)
        size = np.zeros(n_start + n_slots + n_sums, np.int64)  # (each slot makes one bundle at most; the sums after them)
        size[:n_start] = start_size
        sum_of, sum_with = np.zeros(n_sums, np.int64), np.zeros(n_sums, np.int64)

        inverse, route_ptr, route_links, bandwidth, latency = self._routes(topology, columns)
        ptr, idx = steps.dependencies(columns)
        missing = np.diff(ptr).astype(np.int32)
        wait_ptr, waiter = waiting_lists(ptr, idx, n, steps.join)
        n_hops = hop_count(inverse, route_ptr)
        self.routes = RouteList(inverse, self.route_ids)

        self.sent_at_array = np.full(n, np.nan)
        self.arrived_at_array = np.full(n, np.nan)
        self.nbytes = np.zeros(n, np.int64)
        self.record = (np.zeros(n_hops, np.int32), np.zeros(n_hops, np.int32), np.zeros(n_hops), np.zeros(n_hops))
        self.max_queue_array = np.zeros(len(self.link_ids), np.int64)
        taken = np.zeros(n_devices, np.int64)
        expected = np.bincount(dst, minlength=n_devices)
        new_start = np.zeros(n_devices + 1, np.int64)
        np.cumsum(expected, out=new_start[1:])
        new_slots, new_count = np.zeros(n, np.int32), np.zeros(n_devices, np.int64)
        counts = np.zeros(4, np.int64)
        made_ptr = np.zeros(n_slots + 1, np.int64)
        made_counts = np.zeros(2, np.int64)
        is_bundle = part_count >= 0
        bundled = (
            slot_of[n_start : n_start + n],
            slot_of[n_start + n :],
            part_start,
            part_count,
            part_key,
            is_bundle,
            slot_code,
            dev_slot,
            width,
            np.full(n_slots, -1, np.int32),
            made_ptr,
            np.zeros(max(len(part_key), 1), np.int32),
            made_counts,
            np.zeros((int(is_bundle.sum()) + 1, 4), np.int64),
            np.zeros(len(part_key) + 1, np.int32),
            Dict.empty(key_type=types.int64, value_type=types.int64),
        )
        units = steps.loop_arrays(n_devices) if len(steps.device) else None
        self.status, made_parts = play_kernel(
            n_devices,
            width,
            bool(cut_through),
            np.asarray(start_s, np.float64),
            dst.astype(np.int32),
            key.astype(np.int32),
            reduce,
            np.asarray(inverse, np.int32),
            route_ptr,
            route_links,
            bandwidth,
            latency,
            wait_ptr,
            waiter,
            missing,
            src.astype(np.int32),
            bool(len(route_ptr) > 1 and np.diff(route_ptr).max() > 1),
            held,
            size,
            n_start,
            self.sent_at_array,
            self.arrived_at_array,
            self.nbytes,
            np.full(n, -1, np.int32),
            *self.record,
            self.max_queue_array,
            taken,
            sum_of,
            sum_with,
            new_slots,
            new_start,
            new_count,
            counts,
            units,
            bundled,
        )
        n_reduced = self._keep(counts, taken, expected + steps.taken_in(n_devices), missing, n_devices, units[3:6] if units else ())
        if self.status:
            return
        first_sum = n_start + n_slots
        if n_reduced and not np.array_equal(size[sum_of[:n_reduced]], size[sum_with[:n_reduced]]):
            self.status = 1  # (stand-ins of different sizes added: the Python player raises it)
            return
        n_made, n_parts = made_counts.tolist()
        self.buffers = BundledBuffers(
            buffers,
            chunks,
            (made_ptr[: n_made + 1], made_parts[:n_parts]),
            (keys, held, slot_code - slot_code // width * width),
            (start_slot, new_slots, new_start, new_count),
            (first_sum, sum_of[:n_reduced]),
        )


def bundled_player(
    topology: Topology, columns: dict[str, Any], buffers: Sequence[dict], cut_through: bool, start_s: Sequence[float], steps: ComputeSteps
) -> BundledPlayer | None:
    """The bundled run played by the compiled loop, or None where the Python player must play it (see the module)."""
    try:
        run = BundledPlayer(topology, columns, buffers, cut_through, start_s, steps)
    except ImportError:  # pragma: no cover - numba is a dependency; a broken install plays in Python
        return None
    return None if run.status else run
