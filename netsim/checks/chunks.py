"""The ``chunks`` invariant: replaying the schedule symbolically, every device ends holding what it should.

:func:`_check_chunks` picks the replay: bundles (:mod:`netsim.checks.chunks_bundled`),
whole arrays when nothing adds (:mod:`netsim.checks.chunks_placed`), or one transfer at
a time (:func:`_chunks_folded`, here), which follows reductions too.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from netsim.checks.arrays import _Arrays, _compiled_first, _dependency_order, _feeding, _first
from netsim.checks.chunks_bundled import _chunks_bundled
from netsim.checks.chunks_placed import _chunks_placed
from netsim.checks.errors import InvariantError
from netsim.engine.row_buffers import RowBuffers
from netsim.semantics.patterns import PATTERNS

_PATTERNS = tuple(PATTERNS)
"""Patterns whose chunks the ``chunks`` check follows (every pattern of :data:`PATTERNS`); other patterns get the other checks."""


def _check_chunks(
    a: _Arrays,
    buffers: Sequence[dict[Hashable, Any]],
    groups: Sequence[Sequence[int]],
    pattern: str,
    wanted: Callable[[int], Iterable[int]],
) -> None:
    """Replay the schedule with each chunk as a bit mask of the group positions whose data it carries.

    A gather's block b must come from member b, an all_to_all's block s*n + j from
    member s, a reduction's from every member, a ppermute's from its pair's source
    (pairs overlap, so there a chunk is just 1: there or not).

    When nothing adds (gathers, all_to_all, ppermute) every mask has at most one
    bit, and the replay runs on whole arrays (:func:`_chunks_placed`); reductions
    replay one transfer at a time (:func:`_chunks_folded`). Both raise the same
    error on the same first fault.
    """
    permute = PATTERNS[pattern].pairs
    position = {} if permute else {d: k for members in groups for k, d in enumerate(members)}
    size = len(groups[0]) if groups else 1
    if a.bundles:
        _chunks_bundled(a, buffers, position, pattern, wanted)
        return
    order = _dependency_order(a)
    key_ids, held_codes = _held_codes(buffers)
    # Each transfer's key as a number into key_ids (-1 if no device started with it).
    key_id = np.fromiter((key_ids.get(key, -1) for key in a.keys), np.int32, len(a.keys))[a.key_index] if len(a.keys) else np.zeros(0, np.int32)
    placed_only = not PATTERNS[pattern].reduces and not a.reduce.any()
    if placed_only and (permute or all(d in position for d, held in enumerate(buffers) if held)):
        _chunks_placed(a, buffers, order, position, size, pattern, wanted, key_ids, key_id, held_codes)
    elif not _compiled_first(len(a.src)) or not _compiled_pass(a, buffers, order, position, size, pattern, wanted, key_ids, key_id, held_codes):
        _chunks_folded(a, buffers, order, position, size, pattern, wanted, key_ids, key_id)


def _compiled_pass(*args: Any) -> bool:
    """Whether the compiled replay (:mod:`netsim.checks.chunks_compiled`) passes the run (False without numba)."""
    try:
        from netsim.checks.chunks_compiled import chunks_pass
    except ImportError:  # pragma: no cover - numba is a dependency; a broken install replays in Python
        return False
    return chunks_pass(*args)


def _held_codes(buffers: Sequence[dict[Hashable, Any]]) -> tuple[dict[Hashable, int], np.ndarray]:
    """Every key any device holds at the start, numbered in the order first met, and the chunks
    held as codes ``device * len(key_ids) + key id``, in the buffers' order.

    Devices often hold the same keys in the same order (every block of a reduction):
    a device whose keys are the previous device's reuses their numbers.
    """
    key_ids: dict[Hashable, int] = {}
    if isinstance(buffers, RowBuffers):  # (every device holds these keys, in this order)
        key_ids = {key: i for i, key in enumerate(buffers.keys)}
        return key_ids, (np.arange(len(buffers), dtype=np.int64)[:, None] * len(key_ids) + np.arange(len(key_ids))).reshape(-1)
    ids, previous, previous_ids = [], None, np.zeros(0, np.int64)
    for held in buffers:
        keys = list(held)
        if keys != previous:
            previous, previous_ids = keys, np.fromiter((key_ids.setdefault(key, len(key_ids)) for key in keys), np.int64, len(keys))
        ids.append(previous_ids)
    lengths = np.fromiter(map(len, ids), np.int64, len(ids))
    codes = np.repeat(np.arange(len(ids), dtype=np.int64) * len(key_ids), lengths)
    if len(codes):
        codes += np.concatenate(ids)
    return key_ids, codes


def _chunks_folded(
    a: _Arrays,
    buffers: Sequence[dict[Hashable, Any]],
    order: Iterable[int],
    position: dict[int, int],
    size: int,
    pattern: str,
    wanted: Callable[[int], Iterable[int]],
    key_ids: dict[Hashable, int],
    key_id: np.ndarray,
) -> None:
    """The replay one transfer at a time, with masks as Python ints (any pattern).

    Written to allocate few objects: on big runs Python's garbage collector would
    otherwise cost more than the replay.
    """
    permute = PATTERNS[pattern].pairs
    src, dst, kidx, reduce = a.src.tolist(), a.dst.tolist(), a.key_index.tolist(), a.reduce.tolist()
    keys_of = a.keys

    def add(state: int, j: int, device: int, key: Hashable) -> int:
        payload = carried[j]
        if reduce[j]:
            if state & payload:
                raise InvariantError("chunks", f"device {device}, chunk {key!r}: transfer #{j} adds the data of member(s) {_bits(state & payload)} again")
            return state | payload
        if payload and payload == state and src[j] != dst[j]:  # a device may copy a chunk to itself
            raise InvariantError("chunks", f"device {device}, chunk {key!r}: transfer #{j} delivers a chunk that is already there a second time")
        return payload

    n = len(src)
    feed_ptr, fed = (v.tolist() for v in _feeding(a))
    carried = [0] * n
    for i in order:
        s, key = src[i], keys_of[kidx[i]]
        state = (1 if permute else 1 << position[s]) if key in buffers[s] else 0
        for j in fed[feed_ptr[i] : feed_ptr[i + 1]]:
            state = add(state, j, s, key)
        carried[i] = state
    # What every device holds at the end: fold the arrivals into each (device, chunk), in arrival order.
    if (key_id < 0).any():
        i = _first(key_id < 0)
        raise InvariantError("chunks", f"transfer #{i} carries chunk {keys_of[kidx[i]]!r}, which no device started with")
    code = np.multiply(a.dst, len(key_ids), dtype=np.int64)
    code += key_id
    final: dict[int, int] = {}
    for i in np.lexsort((np.arange(n), a.arrived, code)).tolist():
        d, key = dst[i], keys_of[kidx[i]]
        c = d * len(key_ids) + key_ids[key]
        state = final[c] if c in final else ((1 if permute else 1 << position[d]) if key in buffers[d] else 0)
        final[c] = add(state, i, d, key)
    pieces = 1 + max((key[1] for key in key_ids), default=0)
    for d in range(len(buffers)):
        for block in wanted(d):
            expected = _whose(pattern, block, size)
            for piece in range(pieces):
                key = (block, piece)
                c = d * len(key_ids) + key_ids[key] if key in key_ids else -1
                got = final[c] if c in final else ((1 if permute else 1 << position[d]) if key in buffers[d] else 0)
                if got != expected:
                    lost = expected & ~got
                    detail = f"without the data of group member(s) {_bits(lost)}" if lost else f"with the data of member(s) {_bits(got & ~expected)}"
                    raise InvariantError("chunks", f"device {d} ends with chunk {key!r} {detail}")


def _whose(pattern: str, block: int, size: int) -> int:
    """Whose data a block must carry at the end, as a mask of group positions."""
    if PATTERNS[pattern].reduces:
        return (1 << size) - 1
    if PATTERNS[pattern].pairs:
        return 1
    return 1 << PATTERNS[pattern].owner(block, size)


def _bits(mask: int) -> list[int]:
    return [k for k in range(mask.bit_length()) if mask >> k & 1]
