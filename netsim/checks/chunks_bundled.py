"""The ``chunks`` check for gathers that send bundles: sources hold what they send, each device opens its bundles to every chunk it wants, once."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from netsim.algorithms.bundles import as_table, made_of_arrays, opened_codes
from netsim.checks.arrays import _Arrays, _first, _slack
from netsim.checks.errors import InvariantError
from netsim.columnar import in_sorted


def _chunks_bundled(a: _Arrays, buffers: Sequence[dict[Hashable, Any]], position: dict[int, int], pattern: str, wanted: Callable[[int], Iterable[int]]) -> None:
    """The ``chunks`` check for a gather that sends bundles, key by key, on whole arrays.

    A chunk ``(block, piece)`` must start only at member ``block`` (so whoever
    holds it holds that member's data); every transfer must leave a source that
    holds what it carries (or all it makes that bundle from); no device may be
    handed a key twice; and at the end each device, its bundles opened, must
    hold each piece of every block it wants exactly once, and no other chunk.
    """
    if pattern != "gather" or a.reduce.any():
        raise InvariantError("chunks", f"bundles are only played in gathers, not in a {pattern}")
    bundles = a.bundles
    for d, held in enumerate(buffers):
        for key in held:
            if key in bundles or key[0] != position.get(d):
                raise InvariantError("chunks", f"device {d} starts with chunk {key!r}, which is not its own block")
    key_number = {key: k for k, key in enumerate(a.keys)}
    for held in buffers:
        for key in held:
            key_number.setdefault(key, len(key_number))
    n_codes = len(key_number)
    start = np.unique(np.fromiter((d * n_codes + key_number[key] for d, held in enumerate(buffers) for key in held), np.int64))
    # Each (device, key) is delivered at most once, and never where it started.
    code = a.dst * n_codes + a.key_index
    order = np.argsort(code, kind="stable")
    by_code = code[order]
    twice = np.flatnonzero(by_code[1:] == by_code[:-1])
    again = in_sorted(code, start)
    if len(twice) or again.any():
        i = int(order[twice[0] + 1]) if len(twice) else _first(again)
        raise InvariantError(
            "chunks", f"device {a.dst[i]}, chunk {a.keys[a.key_index[i]]!r}: transfer #{i} delivers a chunk that is already there a second time"
        )
    arrived_at = a.arrived[order]

    def held_by(device_key: np.ndarray, when: np.ndarray) -> np.ndarray:
        """Whether each (device * n_codes + key) is held at the time beside it: from the start, or arrived by then."""
        spot = np.minimum(np.searchsorted(by_code, device_key), max(len(by_code) - 1, 0))
        came = (by_code[spot] == device_key) & (arrived_at[spot] <= when + _slack(when, arrived_at[spot]))
        return came | in_sorted(device_key, start)

    # Every transfer leaves once its source holds what it carries, or, making a bundle,
    # once it holds all it makes it from. Keys as numbers: a.keys, then the starting ones.
    table = as_table(bundles)
    pieces = sorted({key[1] for held in buffers for key in held} | {int(p) for p in table.key_array[:, 1]})
    width = len(pieces)
    key_code, ptr, part_code = table.codes(width)
    block_piece = np.array(list(key_number), np.int64).reshape(-1, 2) @ np.array([width, 1])  # number -> code
    number = np.full(1 + max(int(block_piece.max(initial=0)), int(key_code.max(initial=0)), int(part_code.max(initial=0))), -1, np.int64)
    number[block_piece] = np.arange(len(block_piece))
    codes = (number[key_code], ptr, number[part_code])
    leaving = a.src * n_codes + a.key_index
    makes = np.isin(a.key_index, codes[0]) & ~in_sorted(leaving, by_code)
    plain = np.flatnonzero(~makes)
    bad = plain[~held_by(leaving[plain], a.sent[plain])]
    first_bad = (int(bad[0]), int(a.key_index[bad[0]])) if len(bad) else None
    made = np.flatnonzero(makes)
    which, part = made_of_arrays(codes, a.src[made], a.key_index[made], lambda d, c: in_sorted(d * n_codes + c, by_code))
    owner = made[which]
    missing = np.flatnonzero(~held_by(a.src[owner] * n_codes + part, a.sent[owner]))
    if len(missing) and (first_bad is None or owner[missing[0]] < first_bad[0]):
        first_bad = (int(owner[missing[0]]), int(part[missing[0]]))
    if first_bad is not None:
        i, number = first_bad
        key = next((key for key, m in key_number.items() if m == number), "?")
        raise InvariantError("chunks", f"transfer #{i} leaves device {a.src[i]} before chunk {key!r} is there")
    # What each device ends with, bundles opened: each wanted piece once, nothing else.
    final_device = np.concatenate([a.dst, np.fromiter((d for d, held in enumerate(buffers) for _ in held), np.int64)])
    final_key = np.concatenate([a.key_index, np.fromiter((key_number[key] for held in buffers for key in held), np.int64)])
    by_device = np.argsort(final_device, kind="stable")
    final_device, final_key = final_device[by_device], final_key[by_device]
    device_ptr = np.searchsorted(final_device, np.arange(len(buffers) + 1))
    wants: dict[Any, np.ndarray] = {}
    want_of = []
    for d in range(len(buffers)):
        blocks = wanted(d)
        codes_d = wants.get(blocks)
        if codes_d is None:
            codes_d = wants[blocks] = (np.asarray(list(blocks), np.int64).reshape(-1, 1) * width + np.asarray(pieces, np.int64)).reshape(-1)
        want_of.append(codes_d)
    # First by fingerprints: a random 64-bit number per chunk, a key's the sum of its chunks'
    # (and their count); a device whose sums differ from its wanted chunks' is then compared
    # chunk by chunk, which names what is wrong. (Equal sums with different chunks: odds 2^-64.)
    size = 1 + max(int(block_piece.max(initial=0)), *(int(c.max(initial=0)) for c in wants.values()))
    chunk_print = np.random.default_rng(20261121).integers(0, 2**63, size, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)
    key_print, key_count = _fingerprints(codes, block_piece, chunk_print)
    counts = np.diff(device_ptr)
    got_count = np.bincount(final_device, weights=key_count[final_key], minlength=len(buffers)).astype(np.int64)
    got_print = np.zeros(len(buffers), np.uint64)
    some = np.flatnonzero(counts)
    if len(some):
        got_print[some] = np.add.reduceat(key_print[final_key], device_ptr[:-1][some])
    sums = {id(c): (np.add.reduce(chunk_print[c], dtype=np.uint64), len(c)) for c in wants.values()}
    want_print = np.fromiter((sums[id(c)][0] for c in want_of), np.uint64, len(buffers))
    want_count = np.fromiter((sums[id(c)][1] for c in want_of), np.int64, len(buffers))
    suspects = np.flatnonzero((got_print != want_print) | (got_count != want_count))
    for d in suspects.tolist():
        keys = final_key[device_ptr[d] : device_ptr[d + 1]]
        _, flat = opened_codes(codes, keys)
        got = np.sort(block_piece[flat[flat >= 0]]) if len(flat) else flat
        want = np.sort(want_of[d])
        lost = np.setdiff1d(want, got)
        twice = got[1:][got[1:] == got[:-1]]
        if len(lost):
            detail = f"without chunk {divmod(int(lost[0]), width)!r}"
        elif len(twice):
            detail = f"with chunk {divmod(int(twice[0]), width)!r} twice"
        else:
            extra = np.setdiff1d(got, want)
            detail = f"with chunk {divmod(int(extra[0]), width)!r} it should not hold" if len(extra) else "with a chunk no device started with"
        raise InvariantError("chunks", f"device {d} ends {detail}")


def _fingerprints(codes: tuple[np.ndarray, np.ndarray, np.ndarray], block_piece: np.ndarray, chunk_print: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per key number: the sum (wrapping) of the fingerprints of the chunks it carries, and their count.

    ``codes`` is the bundle table with keys and parts as key numbers (-1: a part no
    transfer or device names); a bundle with such a part gets count -1 (never equal).
    """
    bundle, ptr, part = codes
    n = len(block_piece)
    known = np.ones(n, bool)
    known[bundle] = False
    prints = np.where(known, chunk_print[block_piece], np.uint64(0))
    count = known.astype(np.int64)
    starts = ptr[:-1]
    nonempty = np.flatnonzero(np.diff(ptr) > 0)
    safe = np.where(part >= 0, part, 0)
    for _ in range(len(bundle) + 1):
        ready = np.ones(len(bundle), bool)
        if len(nonempty):
            ready[nonempty] = np.logical_and.reduceat(known[safe] & (part >= 0), starts[nonempty])
        new = np.flatnonzero(ready & ~known[bundle])
        if not len(new):
            break
        total = np.zeros(len(bundle), np.uint64)
        many = np.zeros(len(bundle), np.int64)
        if len(nonempty):
            total[nonempty] = np.add.reduceat(prints[safe], starts[nonempty])
            many[nonempty] = np.add.reduceat(count[safe], starts[nonempty])
        prints[bundle[new]], count[bundle[new]] = total[new], many[new]
        known[bundle[new]] = True
    count[~known] = -1
    return prints, count
