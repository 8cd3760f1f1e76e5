"""The ``chunks`` checks compiled (numba) for big runs: they answer only whether a run passes.

:func:`chunks_pass` is the ``chunks`` replay of :func:`~netsim.checks.chunks._chunks_folded`
on the same masks (each chunk as the set of group positions whose data it carries,
here a row of 64-bit words instead of a Python int). The other checks' compiled
passes (and that of :func:`~netsim.checks.chunks_placed._chunks_placed`) are in
:mod:`netsim.checks.passes_compiled`. When they find a
fault (or meet a case they do not follow), the NumPy or Python check runs again and
raises the error, with its message, at the same first fault.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from netsim.checks.arrays import _Arrays, _feeding
from netsim.checks.chunks_placed import _key_ids_of, _Starts, _wanted_blocks
from netsim.engine.compiled_cache import njit
from netsim.semantics.patterns import PATTERNS

__all__ = ["chunks_pass"]


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
    permute = PATTERNS[pattern].pairs
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
    if PATTERNS[pattern].reduces:
        for w in range(words):
            bits = min(64, size - 64 * w)
            expected[:, w] = np.uint64((1 << bits) - 1) if bits > 0 else 0
    else:
        bit = np.zeros(len(got), np.int64) if permute else np.repeat(PATTERNS[pattern].owner(block, size), pieces)
        if len(bit) and not 0 <= int(bit.min()) <= int(bit.max()) < 64 * words:
            return False  # (a mask no chunk can end with)
        expected[np.arange(len(got)), bit >> 6] = np.uint64(1) << (bit & 63).astype(np.uint64)
    return bool(np.array_equal(got, expected))
