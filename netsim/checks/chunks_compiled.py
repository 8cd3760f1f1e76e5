"""The ``chunks`` checks compiled (numba) for big runs: they answer only whether a run passes.

:func:`chunks_pass` is the ``chunks`` replay of :func:`~netsim.checks.chunks._chunks_folded`
on the same masks (each chunk as the set of group positions whose data it carries,
here a row of 64-bit words instead of a Python int); :func:`placed_holding` is the
replay of :func:`~netsim.checks.chunks_placed._chunks_placed` up to what each
device ends with (one bit per chunk). The other checks' compiled passes are in
:mod:`netsim.checks.passes_compiled`. When they find a
fault (or meet a case they do not follow), the NumPy or Python check runs again and
raises the error, with its message, at the same first fault.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np
from numba import njit

from netsim.checks.arrays import _Arrays, _feeding
from netsim.checks.chunks_placed import _key_ids_of, _Starts, _wanted_blocks

__all__ = ["chunks_pass", "placed_holding"]


@njit(cache=True)
def _set_bit(state, bit):
    if bit >= 0:
        state[bit >> 6] |= np.uint64(1) << np.uint64(bit & 63)


@njit(cache=True)
def _add(state, payload, reduce, apart):
    """``add`` of the step-by-step replay on ``state`` in place; False where it would raise."""
    words = len(state)
    if reduce:
        for w in range(words):
            if state[w] & payload[w]:
                return False  # a member's data added again
        for w in range(words):
            state[w] |= payload[w]
        return True
    carries, same = False, True
    for w in range(words):
        if payload[w]:
            carries = True
        if payload[w] != state[w]:
            same = False
    if carries and same and apart:
        return False  # a chunk delivered where it already is
    for w in range(words):
        state[w] = payload[w]
    return True


@njit(cache=True)
def _replay(order, src, dst, reduce, own_src, feed_ptr, fed, by_arrival, code, own_dst, n_groups, words):
    """What each transfer carries, then what each (device, key) that receives ends with; False at a fault."""
    n = len(src)
    carried = np.zeros((n, words), np.uint64)
    state = np.zeros(words, np.uint64)
    final = np.zeros((n_groups, words), np.uint64)
    final_code = np.zeros(n_groups, np.int64)
    for i in order:
        state[:] = 0
        _set_bit(state, own_src[i])
        for f in range(feed_ptr[i], feed_ptr[i + 1]):
            j = fed[f]
            if not _add(state, carried[j], reduce[j], src[j] != dst[j]):
                return False, final_code, final
        carried[i, :] = state
    g = -1
    for k in range(len(by_arrival)):
        i = by_arrival[k]
        if g < 0 or code[i] != final_code[g]:
            if g >= 0:
                final[g, :] = state
            g += 1
            final_code[g] = code[i]
            state[:] = 0
            _set_bit(state, own_dst[i])
        if not _add(state, carried[i], reduce[i], src[i] != dst[i]):
            return False, final_code, final
    if g >= 0:
        final[g, :] = state
    return True, final_code, final


def chunks_pass(
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
) -> bool:
    """Whether :func:`~netsim.checks.chunks._chunks_folded` (same arguments, and the
    codes ``device * len(key_ids) + key id`` of the chunks held at the start) passes.

    False when it would raise, and where this replay does not follow it: a device
    outside every group holding a chunk, a transfer of a chunk nobody started with.
    """
    permute = pattern == "permute"
    n, n_keys, n_devices = len(a.src), len(key_ids), len(buffers)
    if n == 0 or (key_id < 0).any():
        return False
    own = np.full(max(n_devices, int(a.src.max()) + 1, int(a.dst.max()) + 1), -1, np.int64)
    for d in range(n_devices):
        own[d] = 0 if permute else position.get(d, -1)
    if len(held_codes) and (own[held_codes // max(n_keys, 1)] < 0).any():
        return False  # (the step-by-step replay fails on it with a KeyError)
    starting = _Starts(own, n_keys, held_codes, n)
    words = 1 if permute else max(1, (size + 63) // 64)
    feed_ptr, fed = _feeding(a)
    code = starting.code(a.dst, key_id).astype(np.int64)
    by_arrival = np.lexsort((np.arange(n), a.arrived, code))
    sorted_code = code[by_arrival]
    n_groups = 1 + int(np.count_nonzero(sorted_code[1:] != sorted_code[:-1]))
    del sorted_code
    steps = np.arange(n, dtype=np.int64) if isinstance(order, range) else np.asarray(order, np.int64)
    src, dst = a.src.astype(np.int64), a.dst.astype(np.int64)
    ok, final_code, final = _replay(
        steps,
        src,
        dst,
        a.reduce,
        starting(a.src, key_id).astype(np.int64),
        feed_ptr,
        fed,
        by_arrival,
        code,
        starting(a.dst, key_id).astype(np.int64),
        n_groups,
        words,
    )
    if not ok:
        return False
    # Every block every device wants, each piece: the mask it ends with against the one it must.
    pieces = 1 + max((key[1] for key in key_ids), default=0)
    device, block = _wanted_blocks([wanted(d) for d in range(n_devices)])
    kid = _key_ids_of(key_ids, block, pieces)  # [wanted block, piece]
    if (kid < 0).any():
        return False
    device = np.repeat(device, pieces)
    kid = kid.reshape(-1)
    wanted_code = starting.code(device, kid).astype(np.int64)
    spot = np.minimum(np.searchsorted(final_code, wanted_code), len(final_code) - 1)
    arrived = final_code[spot] == wanted_code
    got = final[spot]
    got[~arrived] = 0
    kept = starting(device[~arrived], kid[~arrived])
    rows = np.flatnonzero(~arrived)[kept >= 0]
    kept = kept[kept >= 0]
    got[rows, kept >> 6] |= np.uint64(1) << (kept & 63).astype(np.uint64)
    expected = np.zeros_like(got)
    if pattern in ("reduce_scatter", "all_reduce"):
        for w in range(words):
            bits = min(64, size - 64 * w)
            expected[:, w] = np.uint64((1 << bits) - 1) if bits > 0 else 0
    else:
        bit = np.zeros(len(got), np.int64) if permute else np.repeat(block // size if pattern == "all_to_all" else block, pieces)
        if len(bit) and not 0 <= int(bit.min()) <= int(bit.max()) < 64 * words:
            return False  # (a mask no chunk can end with)
        expected[np.arange(len(got)), bit >> 6] = np.uint64(1) << (bit & 63).astype(np.uint64)
    return bool(np.array_equal(got, expected))


@njit(cache=True)
def _through_feeds(i, s, state, dep_ptr, dep_idx, src, dst, key_index, arrived, carried, m):
    """What transfer ``i`` carries when ``m`` > 1 arrivals feed it: they are met by arrival, then index;
    -2 where one delivers a chunk to a source that holds it already."""
    feeds = np.empty(m, np.int64)
    m = 0
    for p in range(dep_ptr[i], dep_ptr[i + 1]):
        j = dep_idx[p]
        if dst[j] != s or key_index[j] != key_index[i]:
            continue
        q = m  # insertion by (arrival, index)
        while q > 0 and (arrived[feeds[q - 1]] > arrived[j] or (arrived[feeds[q - 1]] == arrived[j] and feeds[q - 1] > j)):
            feeds[q] = feeds[q - 1]
            q -= 1
        feeds[q] = j
        m += 1
    for q in range(m):
        j = feeds[q]
        got = carried[j]
        if got >= 0 and got == state and src[j] != dst[j]:
            return -2
        state = got
    return state


@njit(cache=True)
def placed_holding(in_order, order, src, dst, key_index, key_id, dep_ptr, dep_idx, arrived, table, n_keys):
    """The replay of :func:`~netsim.checks.chunks_placed._chunks_placed` up to the end of every (device, chunk), in one pass.

    ``table`` holds the bit each device's own copy of each chunk carries at the start
    (``_Starts.table``, -1 for none), indexed ``device * n_keys + key id``; transfers
    are taken in index order if ``in_order``, else in ``order``. Each transfer's feeds
    (the arrivals of its chunk at its source it waits for) are met by arrival, then
    index, as ``_feeding`` sorts them. Returns True, with ``table`` overwritten by what
    each (device, chunk) ends with, when the replay finds no fault; False, with
    ``table`` untouched, at a fault and where it does not follow the NumPy replay:
    a chunk nobody started with, a (device, chunk) receiving twice, a number out of range.
    """
    n = len(src)
    size = len(table)
    carried = np.empty(n, table.dtype)
    for step in range(n):
        i = step if in_order else order[step]
        s, k = src[i], key_id[i]
        if s < 0 or k < 0 or s * n_keys + k >= size:
            return False
        state = table[s * n_keys + k]
        m, last = 0, -1
        for p in range(dep_ptr[i], dep_ptr[i + 1]):
            j = dep_idx[p]
            if j < 0 or j >= n:
                return False
            if dst[j] == s and key_index[j] == key_index[i]:
                m += 1
                last = j
        if m == 1:  # (most transfers: one feed, or none)
            got = carried[last]
            if got >= 0 and got == state and src[last] != dst[last]:
                return False  # a chunk delivered to a source that holds it already
            state = got
        elif m > 1:
            state = _through_feeds(i, s, state, dep_ptr, dep_idx, src, dst, key_index, arrived, carried, m)
            if state == -2:
                return False
        carried[i] = state
    # What each (device, chunk) ends with, written in place as its arrival comes: while the pass
    # runs, a cell written holds -3 - bit (at most -2, below any bit or -1; an int16 table holds
    # bits below 2**14, an int32 one those below 2**30), and the arrival's
    # ``carried`` slot keeps what the cell held (to put back at a fault). Each (device, chunk)
    # receives at most once (else the NumPy replay follows the order of arrivals).
    for i in range(n):
        d, k, got = dst[i], key_id[i], carried[i]
        c = d * n_keys + k
        if d < 0 or c >= size or got >= 1 << 30:
            _put_back(table, carried, dst, key_id, n_keys, i)
            return False
        before = table[c]
        if before <= -2 or (got >= 0 and got == before and src[i] != d):  # a second arrival, or one where the chunk already is
            _put_back(table, carried, dst, key_id, n_keys, i)
            return False
        table[c] = -3 - got
        carried[i] = before
    for c in range(size):
        if table[c] <= -2:
            table[c] = -3 - table[c]
    return True


@njit(cache=True)
def _put_back(table, before, dst, key_id, n_keys, stop):
    """Undo the writes of :func:`placed_holding`'s arrivals before ``stop``: each cell gets back what it held."""
    for i in range(stop):
        table[dst[i] * n_keys + key_id[i]] = before[i]
