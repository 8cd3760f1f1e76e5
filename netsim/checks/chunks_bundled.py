"""The ``chunks`` check for gathers that send bundles: sources hold what they send, each device opens its bundles to every chunk it wants, once."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from netsim.algorithms.bundles import as_table, made_of_arrays, opened_codes
from netsim.checks.arrays import _Arrays, _first, _slack
from netsim.checks.errors import InvariantError
from netsim.columnar import in_sorted, searchsorted_many, stable_order
from netsim.semantics.patterns import PATTERNS


def _chunks_bundled(a: _Arrays, buffers: Sequence[dict[Hashable, Any]], position: dict[int, int], pattern: str, wanted: Callable[[int], Iterable[int]]) -> None:
    """The ``chunks`` check for a gather that sends bundles, key by key, on whole arrays.

    A chunk ``(block, piece)`` must start only at member ``block`` (so whoever
    holds it holds that member's data); every transfer must leave a source that
    holds what it carries (or all it makes that bundle from); no device may be
    handed a key twice; and at the end each device, its bundles opened, must
    hold each piece of every block it wants exactly once, and no other chunk.
    """
    if a.reduce.any() and PATTERNS[pattern].reduces:
        _chunks_bundled_sums(a, buffers, position, pattern, wanted)
        return
    if pattern != "gather" or a.reduce.any():
        raise InvariantError("chunks", f"bundles are only played in gathers and reductions, not in a {pattern}")
    bundles = a.bundles
    table = as_table(bundles)
    start_keys = [key for held in buffers for key in held]
    holder = np.repeat(np.arange(len(buffers), dtype=np.int64), [len(held) for held in buffers])
    key_number = {key: k for k, key in enumerate(a.keys)}
    numbers = list(map(key_number.get, start_keys))  # (keys the transfers name: all of them, as a rule)
    if None in numbers:
        numbers = [key_number.setdefault(key, len(key_number)) for key in start_keys]
    start_number = np.array(numbers, np.int64)
    n_codes = len(key_number)
    # Keys as numbers: a.keys, then the starting ones; the bundle table's keys and parts too (-1: a key no one names).
    pieces = sorted(set(map(operator.itemgetter(1), start_keys)) | set(table.key_array[:, 1].tolist()))
    width = len(pieces)
    key_code, ptr, part_code = table.codes(width)
    block_piece = np.fromiter(itertools.chain.from_iterable(key_number), np.int64, 2 * n_codes).reshape(-1, 2) @ np.array([width, 1])  # number -> code
    number = np.full(1 + max(int(block_piece.max(initial=0)), int(key_code.max(initial=0)), int(part_code.max(initial=0))), -1, np.int64)
    number[block_piece] = np.arange(len(block_piece))
    codes = (number[key_code], ptr, number[part_code])
    is_bundle = np.zeros(n_codes, bool)
    is_bundle[codes[0][codes[0] >= 0]] = True
    mine = np.full(len(buffers), -1, np.int64)  # each device's position (-1: none)
    for d, k in position.items():
        if 0 <= d < len(buffers):
            mine[d] = k
    start_block = np.fromiter(map(operator.itemgetter(0), start_keys), np.int64, len(start_keys))
    wrong = is_bundle[start_number] | (start_block != mine[holder]) | (mine[holder] < 0)
    if wrong.any():
        k = _first(wrong)
        raise InvariantError("chunks", f"device {holder[k]} starts with chunk {start_keys[k]!r}, which is not its own block")
    start = np.unique(holder * n_codes + start_number)
    # Each (device, key) is delivered at most once, and never where it started.
    code = np.multiply(a.dst, n_codes, dtype=np.int64)
    code += a.key_index
    order = stable_order(code)
    by_code = code[order]
    twice = np.flatnonzero(by_code[1:] == by_code[:-1])
    again = order[_spot(by_code, start)[in_sorted(start, by_code)]]  # (a start looked for among the deliveries: fewer)
    if len(twice) or len(again):
        i = int(order[twice[0] + 1]) if len(twice) else int(again.min())
        raise InvariantError(
            "chunks", f"device {a.dst[i]}, chunk {a.keys[a.key_index[i]]!r}: transfer #{i} delivers a chunk that is already there a second time"
        )
    del code
    arrived_at = a.arrived[order]

    def held_by(device_key: np.ndarray, when: np.ndarray, spot: np.ndarray | None = None) -> np.ndarray:
        """Whether each (device * n_codes + key) is held at the time beside it: from the start, or arrived by then."""
        if spot is None:
            spot = _spot(by_code, device_key, sort=True)
        came = (by_code[spot] == device_key) & (arrived_at[spot] <= when + _slack(when, arrived_at[spot]))
        return came | in_sorted(device_key, start)

    # Every transfer leaves once its source holds what it carries, or, making a bundle
    # (sending one it was never sent), once it holds all it makes it from.
    leaving = np.multiply(a.src, n_codes, dtype=np.int64)
    leaving += a.key_index
    came = _deliveries(a, leaving, by_code, order)
    makes = is_bundle[a.key_index] & (came < 0)
    plain = np.flatnonzero(~makes)
    plain_came = came[plain]
    when, at = a.sent[plain], a.arrived[np.maximum(plain_came, 0)]
    held = (plain_came >= 0) & (at <= when + _slack(when, at))
    never = np.flatnonzero(plain_came < 0)  # (a key delivered to its source is not one it started with)
    held[never] = in_sorted(leaving[plain[never]], start)
    bad = plain[~held]
    del came, plain_came, when, at, held
    first_bad = (int(bad[0]), int(a.key_index[bad[0]])) if len(bad) else None
    made = np.flatnonzero(makes)

    def is_sent(device: np.ndarray, key: np.ndarray) -> np.ndarray:
        wanted = np.multiply(device, n_codes, dtype=np.int64) + key
        return by_code[_spot(by_code, wanted, sort=True)] == wanted if len(by_code) else np.zeros(len(wanted), bool)

    which, part = made_of_arrays(codes, a.src[made], a.key_index[made], is_sent)
    owner = made[which]
    missing = np.flatnonzero(~held_by(np.multiply(a.src[owner], n_codes, dtype=np.int64) + part, a.sent[owner]))
    if len(missing) and (first_bad is None or owner[missing[0]] < first_bad[0]):
        first_bad = (int(owner[missing[0]]), int(part[missing[0]]))
    if first_bad is not None:
        i, number = first_bad
        key = next((key for key, m in key_number.items() if m == number), "?")
        raise InvariantError("chunks", f"transfer #{i} leaves device {a.src[i]} before chunk {key!r} is there")
    # What each device ends with, bundles opened: each wanted piece once, nothing else.
    final_device = np.concatenate([a.dst, holder])
    final_key = np.concatenate([a.key_index, start_number])
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
    got_count = np.bincount(final_device, weights=key_count[final_key], minlength=len(buffers)).astype(np.int64)
    got_print = np.zeros(len(buffers), np.uint64)
    np.add.at(got_print, final_device, key_print[final_key])  # (wrapping sums)
    sums = {id(c): (np.add.reduce(chunk_print[c], dtype=np.uint64), len(c)) for c in wants.values()}
    want_print = np.fromiter((sums[id(c)][0] for c in want_of), np.uint64, len(buffers))
    want_count = np.fromiter((sums[id(c)][1] for c in want_of), np.int64, len(buffers))
    suspects = np.flatnonzero((got_print != want_print) | (got_count != want_count))
    for d in suspects.tolist():
        keys = final_key[final_device == d]
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


def _spot(sorted_codes: np.ndarray, values: np.ndarray, sort: bool = False) -> np.ndarray:
    """Where each value (>= 0) is, or would be, in ``sorted_codes`` (clipped to the last place); with
    ``sort``, many values are looked up in sorted order (:func:`netsim.columnar.searchsorted_many`)."""
    spot = searchsorted_many(sorted_codes, values) if sort else np.searchsorted(sorted_codes, values)
    return np.minimum(spot, max(len(sorted_codes) - 1, 0))


def _deliveries(a: _Arrays, leaving: np.ndarray, by_code: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Per transfer, the transfer that delivers its key to its source (-1: none), each (device, key) delivered once.

    Looked for first among what the transfer waits for (a planned schedule waits for it),
    then, for the rest, among all deliveries (``by_code``, the deliveries' codes sorted; ``order``
    their transfers).
    """
    n = len(leaving)
    waiter = np.repeat(np.arange(n, dtype=np.int64), np.diff(a.dep_ptr))
    awaited = a.dep_idx
    ours = awaited < n  # (compute steps are numbered after the transfers)
    waiter, awaited = waiter[ours], awaited[ours]
    hit = (a.dst[awaited] == a.src[waiter]) & (a.key_index[awaited] == a.key_index[waiter])
    came = np.full(n, -1, np.int64)
    came[waiter[hit]] = awaited[hit]
    rest = np.flatnonzero(came < 0)
    if len(rest) and len(by_code):
        spot = _spot(by_code, leaving[rest], sort=True)
        found = by_code[spot] == leaving[rest]
        came[rest[found]] = order[spot[found]]
    return came


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


def _chunks_bundled_sums(
    a: _Arrays, buffers: Sequence[dict[Hashable, Any]], position: dict[int, int], pattern: str, wanted: Callable[[int], Iterable[int]]
) -> None:
    """The ``chunks`` check for a reduction that sends bundles: the run replayed in time, chunk by chunk inside the bundles.

    Each (device, chunk) is a mask of the group members whose data it holds. A transfer
    carries, for every chunk its bundle opens to, the mask its source held when it left;
    arriving, it adds into the receiver's (never a member's data twice) or places it.
    At the end each device must hold the whole group's sum of every chunk it wants.
    """
    table = as_table(a.bundles)
    opened: dict[Hashable, tuple[Hashable, ...]] = {}

    def leaves(key: Hashable) -> tuple[Hashable, ...]:
        if key not in opened:
            parts = table.get(key)
            opened[key] = (key,) if parts is None else tuple(itertools.chain.from_iterable(leaves(part) for part in parts))
        return opened[key]

    state: dict[tuple[int, Hashable], int] = {}
    for d, held in enumerate(buffers):
        for key in held:
            if key in table or d not in position:
                raise InvariantError("chunks", f"device {d} starts with chunk {key!r}, which is not its own contribution")
            state[(d, key)] = 1 << position[d]
    src, dst, reduce = a.src.tolist(), a.dst.tolist(), a.reduce.tolist()
    keys = [a.keys[k] for k in a.key_index.tolist()]
    n = len(src)
    carried: list[list[int] | None] = [None] * n

    def leave(i: int) -> None:
        masks = [state.get((src[i], leaf), 0) for leaf in leaves(keys[i])]
        if not all(masks):
            leaf = leaves(keys[i])[masks.index(0)]
            raise InvariantError("chunks", f"transfer #{i} leaves device {src[i]} before chunk {leaf!r} is there")
        carried[i] = masks

    times = np.concatenate([a.arrived, a.sent])
    for e in np.lexsort((np.arange(2 * n), times)).tolist():  # in time; at one instant, arrivals first (as a device takes them in before it sends)
        i = e if e < n else e - n
        if e >= n:
            if carried[i] is None:
                leave(i)
            continue
        if carried[i] is None:
            leave(i)
        for leaf, mask in zip(leaves(keys[i]), carried[i], strict=True):
            held = state.get((dst[i], leaf), 0)
            if reduce[i] and held & mask:
                raise InvariantError("chunks", f"device {dst[i]}, chunk {leaf!r}: transfer #{i} adds the data of member(s) {_members(held & mask)} again")
            state[(dst[i], leaf)] = held | mask if reduce[i] else mask
    everyone = (1 << (1 + max(position.values(), default=0))) - 1
    pieces = 1 + max((key[1] for d, key in state), default=0)
    for d in range(len(buffers)):
        for block in wanted(d):
            for piece in range(pieces):
                got = state.get((d, (block, piece)), 0)
                if got != everyone:
                    lost = _members(everyone & ~got)
                    raise InvariantError("chunks", f"device {d} ends with chunk {(block, piece)!r} without the data of group member(s) {lost}")


def _members(mask: int) -> list[int]:
    return [k for k in range(mask.bit_length()) if mask >> k & 1]
