"""The ``chunks`` replay on whole arrays, for schedules where no transfer adds (gathers, all_to_all, ppermute)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from netsim.checks.arrays import _Arrays, _compiled_first, _feeding, _first
from netsim.checks.errors import InvariantError
from netsim.columnar import factorize, index_dtype
from netsim.semantics.patterns import PATTERNS


class _Starts:
    """The bit each device's own copy of a chunk carries at the start (-1: it holds none),
    looked up by (device, key id); in a table over every (device, key) when that is not
    much bigger than the run, else by binary search in the sorted codes. The table is int16 while
    the bits are below 2**14 (groups of up to 16,384: half the memory the replays walk at random,
    and room for the compiled pass's marks), else int32."""

    def __init__(self, own: np.ndarray, n_keys: int, held_codes: np.ndarray, n_transfers: int) -> None:
        self.own, self.n_keys = own, n_keys
        self.dense = len(own) * n_keys <= 4 * n_transfers + (1 << 16)
        if self.dense:
            self.table = np.full(len(own) * n_keys, -1, np.int16 if int(own.max(initial=-1)) < 1 << 14 else np.int32)
            self.table[held_codes] = own[held_codes // max(n_keys, 1)]
        else:
            self.held_codes = np.sort(held_codes)

    def code(self, device: np.ndarray, kid: np.ndarray) -> np.ndarray:
        """``device * n_keys + kid`` (int32 when it indexes the table, which is small enough)."""
        code = np.multiply(device, self.n_keys, dtype=np.int32 if self.dense else np.int64)
        return np.add(code, kid, dtype=code.dtype, casting="unsafe")

    def __call__(self, device: np.ndarray, kid: np.ndarray) -> np.ndarray:
        code = self.code(device, kid)  # (device may be a column, kid a table)
        if self.dense:
            return _none_where_absent(self.table[code], kid)
        held_codes = self.held_codes
        spot = np.minimum(np.searchsorted(held_codes, code), max(len(held_codes) - 1, 0))
        has = (kid >= 0) & (len(held_codes) > 0) & (held_codes[spot] == code if len(held_codes) else False)
        return np.where(has, self.own[device], -1)


def _chunks_placed(
    a: _Arrays,
    buffers: Sequence[dict[Hashable, Any]],
    order: Iterable[int],
    position: dict[int, int],
    size: int,
    pattern: str,
    wanted: Callable[[int], Iterable[int]],
    key_ids: dict[Hashable, int],
    key_id: np.ndarray,
    held_codes: np.ndarray,
) -> None:
    """The same replay on whole arrays when no transfer adds: a mask is then one bit or none,
    kept as the bit's number (-1 for none), and a chunk carries what the last arrival it
    waited for brought (or its source's own data)."""
    permute = PATTERNS[pattern].pairs
    n, n_keys = len(a.src), len(key_ids)
    n_devices = len(buffers)
    own = np.full(max(n_devices, int(a.src.max(initial=-1)) + 1, int(a.dst.max(initial=-1)) + 1), -1, np.int64)
    for d in range(n_devices):
        own[d] = 0 if permute else position.get(d, -1)
    starting = _Starts(own, n_keys, held_codes, n)
    if _compiled_first(n) and starting.dense and _compiled_holding(a, order, starting, key_id):
        holding = starting.table  # what each (device, chunk) ends with

        def ends_with(device: np.ndarray, kid: np.ndarray) -> np.ndarray:
            return _none_where_absent(holding[starting.code(device, kid)], kid)

    else:  # (small runs, and runs the compiled pass finds a fault in or does not follow: the error comes from here)
        ends_with = _replayed(a, order, starting, key_id)

    # Every block every device wants, each piece: the bit it ends with against the one it must.
    pieces = 1 + max((key[1] for key in key_ids), default=0)
    sets = [wanted(d) for d in range(n_devices)]
    if sets and all(type(s) is range and s == sets[0] for s in sets):  # all want the same blocks (gathers)
        device = None
        block = np.arange(sets[0].start, sets[0].stop, sets[0].step, dtype=np.int64)
        ends = ends_with(np.arange(n_devices, dtype=np.int64)[:, None, None], _key_ids_of(key_ids, block, pieces)[None])  # [device, block, piece]
    else:
        device, block = _wanted_blocks(sets)
        ends = ends_with(device[:, None], _key_ids_of(key_ids, block, pieces))  # [wanted block, piece]
    expected = np.zeros_like(block) if permute else PATTERNS[pattern].owner(block, size)
    wrong = ends != expected[:, None]
    if wrong.any():
        k = _first(wrong.reshape(-1))
        if device is None:
            d, k = divmod(k, len(block) * pieces)
        row, piece = divmod(k, pieces)
        d = d if device is None else device[row]
        key = (int(block[row]), piece)
        raise InvariantError("chunks", f"device {d} ends with chunk {key!r} without the data of group member(s) {[int(expected[row])]}")


def _replayed(a: _Arrays, order: Iterable[int], starting: _Starts, key_id: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The replay on whole arrays: raise at the first fault, else give ``ends_with(device, key id)``,
    the bit each (device, chunk) ends with (-1: none)."""
    n, n_keys = len(a.src), starting.n_keys
    apart = a.src != a.dst  # a device may copy a chunk to itself

    # The replay in dependency order: each transfer carries what its last feeding arrival brought.
    feed_ptr, fed = _feeding(a)
    initial = starting(a.src, key_id)
    has_feed = feed_ptr[1:] != feed_ptr[:-1]
    one_each = len(fed) == int(np.count_nonzero(has_feed))  # one feed each: every feed is its transfer's first (and last)
    last_feed = np.full(n, -1, index_dtype(n))
    last_feed[has_feed] = fed if one_each else fed[feed_ptr[1:][has_feed] - 1]
    carried = _carried_along(last_feed, initial)
    # A feed that brings its transfer's source the data it already holds delivers it a second time.
    if one_each:  # the feed's data is what its transfer carries, and it meets the source's own copy
        again = carried == initial
        again &= carried >= 0
        again &= has_feed
        suspects = np.flatnonzero(again)
        del again
        suspects = suspects[apart[last_feed[suspects]]]
        owners, feeds = suspects, last_feed[suspects]
    else:
        fed_carried = carried[fed]
        before = np.empty(len(fed), fed_carried.dtype)
        before[1:] = fed_carried[:-1]
        before[feed_ptr[:-1][has_feed]] = initial[has_feed]
        again = fed_carried >= 0
        again &= fed_carried == before
        again &= apart[fed]
        del before, fed_carried
        bad = np.flatnonzero(again)
        owners, feeds = np.repeat(np.arange(n, dtype=np.int64), np.diff(feed_ptr))[bad], fed[bad]
    del last_feed
    if len(owners):
        if isinstance(order, range):
            e = 0
        else:
            rank = np.empty(n, np.int64)
            rank[np.asarray(order, np.int64)] = np.arange(n)
            e = int(np.lexsort((np.arange(len(owners)), rank[owners]))[0])
        i, j = int(owners[e]), int(feeds[e])
        raise InvariantError(
            "chunks", f"device {a.src[i]}, chunk {a.keys[a.key_index[i]]!r}: transfer #{j} delivers a chunk that is already there a second time"
        )
    del initial
    # What every device holds at the end: each (device, chunk) keeps its last arrival.
    if (key_id < 0).any():
        i = _first(key_id < 0)
        raise InvariantError("chunks", f"transfer #{i} carries chunk {a.keys[a.key_index[i]]!r}, which no device started with")
    code = starting.code(a.dst, key_id)
    if starting.dense and _all_different(code, len(starting.table)):
        # Each (device, chunk) receives at most once: its arrival meets the device's own copy.
        before = starting.table[code]
        again = carried >= 0
        again &= carried == before
        again &= apart
        if again.any():
            bad = np.flatnonzero(again)
            i = int(bad[np.argmin(code[bad])])
            raise InvariantError(
                "chunks", f"device {a.dst[i]}, chunk {a.keys[a.key_index[i]]!r}: transfer #{i} delivers a chunk that is already there a second time"
            )
        del before, again
        holding = starting.table  # from here on: what each (device, chunk) ends with
        holding[code] = carried
        del code, carried

        def ends_with(device: np.ndarray, kid: np.ndarray) -> np.ndarray:
            return _none_where_absent(holding[starting.code(device, kid)], kid)

    else:
        by_arrival = np.lexsort((np.arange(n), a.arrived, code))
        code = code[by_arrival]
        got = carried[by_arrival]
        first = np.ones(n, bool)
        first[1:] = code[1:] != code[:-1]
        before = np.empty(n, got.dtype)
        before[1:] = got[:-1]
        before[first] = starting(a.dst[by_arrival][first], key_id[by_arrival][first])
        again = (got >= 0) & (got == before) & apart[by_arrival]
        if again.any():
            i = int(by_arrival[_first(again)])
            raise InvariantError(
                "chunks", f"device {a.dst[i]}, chunk {a.keys[a.key_index[i]]!r}: transfer #{i} delivers a chunk that is already there a second time"
            )
        last = np.ones(n, bool)
        last[:-1] = code[1:] != code[:-1]
        final_code, final = code[last], got[last]

        def ends_with(device: np.ndarray, kid: np.ndarray) -> np.ndarray:
            code = device * n_keys + kid
            spot = np.minimum(np.searchsorted(final_code, code), max(len(final_code) - 1, 0))
            arrived = (kid >= 0) & (final_code[spot] == code) if len(final_code) else np.zeros(code.shape, bool)
            return np.where(arrived, final[spot] if len(final) else -1, starting(device, kid))

    return ends_with


def _compiled_holding(a: _Arrays, order: Iterable[int], starting: _Starts, key_id: np.ndarray) -> bool:
    """Whether the compiled pass (:func:`netsim.checks.passes_compiled.placed_holding`) replays the run
    without a fault, leaving in ``starting.table`` what each (device, chunk) ends with (False without numba)."""
    try:
        from netsim.checks.passes_compiled import placed_holding
    except ImportError:  # pragma: no cover - numba is a dependency; a broken install replays with NumPy
        return False
    in_order = isinstance(order, range)
    steps = np.zeros(0, np.int64) if in_order else np.asarray(order, np.int64)
    return bool(placed_holding(in_order, steps, a.src, a.dst, a.key_index, key_id, a.dep_ptr, a.dep_idx, a.arrived, starting.table, starting.n_keys))


def _key_ids_of(key_ids: dict[Hashable, int], block: np.ndarray, pieces: int) -> np.ndarray:
    """The key id of each (block, piece), -1 for keys nobody started with: ``[blocks, pieces]``."""
    distinct, inverse = factorize(block)
    table = np.array([[key_ids.get((int(b), p), -1) for p in range(pieces)] for b in distinct.tolist()], np.int64).reshape(len(distinct), pieces)
    return table[inverse]


def _none_where_absent(bit: np.ndarray, kid: np.ndarray) -> np.ndarray:
    """``bit`` with -1 where the key id (broadcast to it) is -1: no such chunk."""
    absent = kid < 0
    if absent.any():
        bit[np.broadcast_to(absent, bit.shape)] = -1
    return bit


def _all_different(codes: np.ndarray, size: int) -> bool:
    """Whether no two codes (ints in ``range(size)``) are equal."""
    seen = np.zeros(size, bool)
    seen[codes] = True
    return int(np.count_nonzero(seen)) == len(codes)


def _carried_along(last_feed: np.ndarray, initial: np.ndarray, window: int = 1 << 14) -> np.ndarray:
    """What each transfer carries: ``initial[i]`` if nothing feeds it, else what its last feed carried.

    When every transfer's feed comes before it (schedules in step order), the
    transfers are taken a window at a time: feeds from earlier windows are known
    already, chains inside the window are followed by pointer jumping. Otherwise
    pointer jumping runs over all transfers at once.
    """
    n = len(initial)
    carried = np.empty(n, initial.dtype)
    for lo in range(0, n, window):
        hi = min(n, lo + window)
        feed = last_feed[lo:hi]
        here = np.arange(lo, hi, dtype=np.int64)
        if not (feed < here).all():
            return _carried_by_jumping(last_feed, initial)
        value = initial[lo:hi].copy()  # what the chain's first transfer in this window brings
        outside = (feed >= 0) & (feed < lo)
        value[outside] = carried[feed[outside]]
        inside = feed >= lo
        if inside.any():
            step = np.where(inside, feed, here)
            step -= lo
            while True:
                further = step[step]
                if np.array_equal(further, step):
                    break
                step = further
            value = value[step]
        carried[lo:hi] = value
    return carried


def _carried_by_jumping(last_feed: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """:func:`_carried_along` by pointer jumping over every transfer (feeds in any order)."""
    root = np.arange(len(initial), dtype=np.int64)
    has_feed = last_feed >= 0
    root[has_feed] = last_feed[has_feed]
    further = np.empty_like(root)
    while True:
        np.take(root, root, out=further)
        if np.array_equal(further, root):
            break
        root, further = further, root
    return initial[root]


def _wanted_blocks(sets: Sequence[Iterable[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Every (device, block) a device must hold at the end (device d wants ``sets[d]``), as two arrays in device order.

    Layouts give ranges (every block, or every n-th): those are spelled out with NumPy.
    """
    n_devices = len(sets)
    if sets and all(type(s) is range for s in sets):
        lengths = np.fromiter(map(len, sets), np.int64, n_devices)
        if all(s == sets[0] for s in sets):
            block = np.tile(np.arange(sets[0].start, sets[0].stop, sets[0].step, dtype=np.int64), n_devices)
        else:
            offsets = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            starts = np.fromiter((s.start for s in sets), np.int64, n_devices)
            steps = np.fromiter((s.step for s in sets), np.int64, n_devices)
            block = np.repeat(starts, lengths) + np.repeat(steps, lengths) * offsets
    else:
        blocks = [[int(b) for b in s] for s in sets]
        lengths = np.fromiter(map(len, blocks), np.int64, n_devices)
        block = np.fromiter(itertools.chain.from_iterable(blocks), np.int64, int(lengths.sum()))
    return np.repeat(np.arange(n_devices, dtype=np.int64), lengths), block
