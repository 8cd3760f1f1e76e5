"""From an algorithm's moves within one group to the transfers of every group, with what each waits for.

An algorithm yields moves ``(step, from position, to position, block, piece,
direction)`` for one group; :func:`_planned_with_arrays` copies them to every
group with NumPy, as the columns of a :class:`~netsim.algorithms.transfers.TransferTable`,
and :func:`_with_deps` attaches to each transfer the earlier arrivals of its chunk
at its source (:func:`_with_parts`, for bundles, those of their parts).
Algorithms that send one message per step are planned a transfer at a time
(:func:`_planned_with_rows`). :func:`netsim.algorithms.schedule.build_schedule`
is the way in.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import numpy as np

from netsim.algorithms.bundles import BundleTable, made_of_arrays, open_once
from netsim.algorithms.registry import ALGORITHMS, Move, MoveFn
from netsim.algorithms.transfers import PHASES, Key, Transfer, TransferTable
from netsim.columnar import index_dtype, searchsorted_many, stable_order


def _planned_with_rows(phases: list[tuple[str, MoveFn]], groups: tuple[tuple[int, ...], ...]) -> tuple[Transfer, ...]:
    """Transfers one by one, for algorithms that send one message per step (they are small)."""
    rows: list[tuple[int, int, int, Key, bool, int, str]] = []
    offset = 0
    for phase, moves in phases:
        last = -1
        planned: dict[int, list[Move]] = {}
        for group in groups:
            if len(group) not in planned:
                planned[len(group)] = list(moves(len(group)))
            for step, i, j, block, piece, direction in planned[len(group)]:
                rows.append((offset + step, group[i], group[j], (block, piece), phase == "reduce_scatter", direction, phase))
                last = max(last, step)
        offset += last + 1
    rows.sort(key=lambda r: r[0])
    return _with_deps_per_step(rows)


def _planned_with_arrays(
    algorithm: str, phases: list[tuple[str, MoveFn]], groups: tuple[tuple[int, ...], ...], shaped: bool, bundles: BundleTable | None = None
) -> TransferTable:
    """Transfers as columns: the moves of one group, copied for every group with NumPy.

    Columns in the order phase, group, move; then a stable sort by step (as the plan reads).
    Keys are group positions, so every group shares ``bundles``.
    """
    names = ("step", "src", "dst", "block", "piece", "direction", "phase")
    parts: dict[str, list[np.ndarray]] = {name: [] for name in names}
    offset = 0
    for phase, generate in phases:
        last = -1
        for members, moves in _by_group(algorithm, phase, groups, None if not shaped else generate):
            copies = len(members)
            step = np.array(moves[:, 0], dtype=np.int32)
            step += offset
            parts["step"].append(_copied(step, copies))
            parts["src"].append(members[:, moves[:, 1]].reshape(-1))
            parts["dst"].append(members[:, moves[:, 2]].reshape(-1))
            for name, column in (("block", 3), ("piece", 4), ("direction", 5)):
                parts[name].append(_copied(np.ascontiguousarray(moves[:, column], dtype=np.int32), copies))
            parts["phase"].append(np.full(len(moves) * copies, PHASES.index(phase), np.int8))
            if len(moves):
                last = max(last, int(moves[:, 0].max()))
        offset += last + 1
    columns = {name: (parts[name][0] if len(parts[name]) == 1 else np.concatenate(parts[name])) if parts[name] else np.empty(0, np.int32) for name in names}
    parts.clear()
    if len(columns["step"]) and (np.diff(columns["step"]) < 0).any():  # (not already in step order)
        order = _stable_order(columns["step"])
        for name in names:
            columns[name] = columns[name][order]
        del order
    step, src, dst, block, piece = (columns[name] for name in ("step", "src", "dst", "block", "piece"))
    sorted_arrivals: dict[str, np.ndarray] = {}
    dep_ptr, dep_idx = _with_deps(step, src, dst, block, piece, sorted_arrivals)
    if bundles:
        if (columns["phase"] == PHASES.index("reduce_scatter")).any():  # (a gather's keys reach a member only after it sent them)
            dep_ptr, dep_idx = _with_containers(step, src, dst, block, piece, dep_ptr, dep_idx, bundles)
        dep_ptr, dep_idx = _with_parts(step, src, dst, block, piece, dep_ptr, dep_idx, bundles, sorted_arrivals.get("order"))
    phase_code = columns["phase"].astype(np.int8)
    reduce = phase_code == PHASES.index("reduce_scatter")
    return TransferTable(step, src, dst, block, piece, reduce, columns["direction"], phase_code, dep_ptr, dep_idx, bundles)


def _copied(column: np.ndarray, copies: int) -> np.ndarray:
    """The column once per group (as it is, for one group)."""
    return column if copies == 1 else np.tile(column, copies)


@lru_cache(maxsize=64)
def _moves(algorithm: str, phase: str, n: int) -> np.ndarray:
    """The moves of one group of n, ``[moves, 6]``, computed once per algorithm, phase and size."""
    plan = ALGORITHMS[algorithm]
    vectorised = {"gather": plan.gather_array, "reduce_scatter": plan.reduce_scatter_array}.get(phase)
    if vectorised is not None:
        moves = np.asarray(vectorised(n)).reshape(-1, 6)  # (int32 for the rings: big groups have millions of moves)
    else:
        generate = {"gather": plan.gather, "reduce_scatter": plan.reduce_scatter, "all_to_all": plan.all_to_all}[phase]
        moves = np.array(list(generate(n)), np.int64).reshape(-1, 6)
    moves.flags.writeable = False
    return moves


def _by_group(algorithm: str, phase: str, groups: tuple[tuple[int, ...], ...], shaped_moves: MoveFn | None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(members [groups, n], moves)`` for runs of consecutive groups of one size, in group order.

    ``shaped_moves`` plans a group laid over mesh axes (its moves depend on the
    shape, so they are not cached by size).
    """
    start = 0
    while start < len(groups):
        stop = start
        while stop < len(groups) and len(groups[stop]) == len(groups[start]):
            stop += 1
        n = len(groups[start])
        members = np.array(groups[start:stop], np.int32).reshape(stop - start, n)
        if shaped_moves is None:
            yield members, _moves(algorithm, phase, n)
        else:
            moves = shaped_moves(n)
            yield members, moves if isinstance(moves, np.ndarray) else np.array(list(moves), np.int64).reshape(-1, 6)
        start = stop


def _with_deps_per_step(rows: list[tuple[int, int, int, Key, bool, int, str]]) -> tuple[Transfer, ...]:
    """Attach to each transfer the earlier arrivals of its chunk at its source.

    A chunk may only leave a device once every transfer of an earlier step that
    brings (or adds into) that chunk there has arrived, and also for everything
    that arrived at its source in the source's latest earlier step with arrivals
    (the previous message). ``rows`` are sorted by step.
    """
    arrivals: dict[tuple[int, Key], list[int]] = {}
    latest: dict[int, tuple[int, list[int]]] = {}
    transfers: list[Transfer] = []
    start = 0
    while start < len(rows):
        stop = start
        while stop < len(rows) and rows[stop][0] == rows[start][0]:
            stop += 1
        for index in range(start, stop):
            step, src, dst, key, reduce, direction, phase = rows[index]
            deps = arrivals.get((src, key), [])
            if src in latest:
                deps = sorted(set(deps).union(latest[src][1]))
            transfers.append(Transfer(step, src, dst, key, reduce, direction, tuple(deps), phase))
        for index in range(start, stop):
            step, _, dst, key, *_ = rows[index]
            arrivals.setdefault((dst, key), []).append(index)
            if latest.get(dst, (None,))[0] != step:
                latest[dst] = (step, [])
            latest[dst][1].append(index)
        start = stop
    return tuple(transfers)


def _with_parts(
    step: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    block: np.ndarray,
    piece: np.ndarray,
    dep_ptr: np.ndarray,
    dep_idx: np.ndarray,
    bundles: BundleTable,
    arrival_order: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Make each transfer that sends a bundle its source was never sent wait for the parts.

    ``arrival_order``, if given, orders the transfers by (dst, block, piece), each once
    (as :func:`_with_deps` found it).

    Such a transfer makes the bundle: it waits for every arrival at its source, at
    an earlier step, of each part; a part that never arrives there but is a bundle
    itself stands for its own parts, and so on (a part that is neither was there
    from the start). Other transfers keep the dependencies they have.
    """
    n = len(step)
    pieces = 1 + max(int(piece.max()), int(bundles.key_array[:, 1].max(initial=0)), int(bundles.part_array[:, 1].max(initial=0)))
    codes = bundles.codes(pieces)
    code = block.astype(np.int64) * pieces + piece
    steps = int(step.max()) + 1
    n_codes = 1 + max(int(code.max()), int(codes[0].max(initial=0)), int(codes[2].max(initial=0)))
    is_bundle = np.zeros(n_codes, bool)
    is_bundle[codes[0]] = True
    makes = np.flatnonzero(is_bundle[code] & (np.diff(dep_ptr) == 0))
    if not len(makes):
        return dep_ptr, dep_idx
    # Arrivals by (device, key, step), to find those of a part at a source before a step.
    arrival = (dst.astype(np.int64) * n_codes + code) * steps + step
    by_arrival = stable_order(arrival) if arrival_order is None else arrival_order
    arrival = arrival[by_arrival]
    arrives = arrival // steps  # sorted: keep the first of each run
    arrives = arrives[np.concatenate([[True], arrives[1:] != arrives[:-1]])]

    def is_sent(device: np.ndarray, part: np.ndarray) -> np.ndarray:
        wanted = device * n_codes + part
        spot = np.minimum(searchsorted_many(arrives, wanted), len(arrives) - 1)
        return arrives[spot] == wanted

    if len(arrives) == n:  # one arrival per (device, key) (gathers): one lookup per part
        which, part = open_once(codes, code[makes])
        owner = makes[which]
        wanted = src[owner].astype(np.int64) * n_codes + part
        spot = np.minimum(searchsorted_many(arrives, wanted), n - 1)
        sent = arrives[spot] == wanted
        deeper = np.flatnonzero(~sent & (part >= 0) & is_bundle[np.minimum(part, n_codes - 1)])  # made in turn
        if len(deeper):
            inner, inner_part = made_of_arrays(codes, src[owner[deeper]].astype(np.int64), part[deeper], is_sent)
            inner_owner = owner[deeper][inner]
            inner_wanted = src[inner_owner].astype(np.int64) * n_codes + inner_part
            inner_spot = np.minimum(searchsorted_many(arrives, inner_wanted), n - 1)
            owner, wanted = np.concatenate([owner, inner_owner]), np.concatenate([wanted, inner_wanted])
            spot = np.concatenate([spot, inner_spot])
            sent = np.concatenate([sent, arrives[inner_spot] == inner_wanted])
        hit = sent & (arrival[spot] - wanted * steps < step[owner])
        new_owner, new_dep = owner[hit], by_arrival[spot[hit]]
        del wanted, spot, sent, hit
    else:
        which, part = made_of_arrays(codes, src[makes].astype(np.int64), code[makes], is_sent)
        owner = makes[which]
        new_owner, new_dep = _earlier_arrivals(arrival, by_arrival, owner, src[owner].astype(np.int64) * n_codes + part, step[owner], steps)
    return _merged(dep_ptr, dep_idx, new_owner, new_dep)


def _spans(lo: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions ``lo[i]`` to ``lo[i] + counts[i] - 1`` of every ``i``, one span after the other."""
    starts = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    return np.repeat(lo - starts, counts) + np.arange(int(counts.sum()))


def _earlier_arrivals(
    arrival: np.ndarray, by_arrival: np.ndarray, owner: np.ndarray, wanted: np.ndarray, before: np.ndarray, steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(waiter, awaited)`` pairs: for each ``owner``, the arrivals of ``wanted`` (device x codes + key) at a step
    before ``before``, from ``arrival`` (``(code * steps + step)``, sorted; ``by_arrival`` their transfers)."""
    base = wanted * steps
    lo = searchsorted_many(arrival, base)
    counts = searchsorted_many(arrival, base + before) - lo
    return np.repeat(owner, counts), by_arrival[_spans(lo, counts)]


def _with_containers(
    step: np.ndarray, src: np.ndarray, dst: np.ndarray, block: np.ndarray, piece: np.ndarray, dep_ptr: np.ndarray, dep_idx: np.ndarray, bundles: BundleTable
) -> tuple[np.ndarray, np.ndarray]:
    """Make each transfer that sends a key its source was never sent wait for the bundles holding that key that reached the source at an earlier step.

    A bundled reduce-scatter's stage sends part of the super-block the stage before
    summed at the member (the bundle holding it, added into its parts there): it
    waits for that bundle. In a gather, bundles holding a key reach a member only
    after it sent the key, so nothing changes there.
    """
    waiting = np.flatnonzero(np.diff(dep_ptr) == 0)
    if not len(waiting) or not len(bundles.part_array):
        return dep_ptr, dep_idx
    pieces = 1 + max(int(piece.max()), int(bundles.key_array[:, 1].max(initial=0)), int(bundles.part_array[:, 1].max(initial=0)))
    key_code, ptr, part_code = bundles.codes(pieces)
    holder = np.repeat(key_code, np.diff(ptr))
    by_part = stable_order(part_code)
    part_sorted, holder = part_code[by_part], holder[by_part]
    code = block.astype(np.int64) * pieces + piece
    lo = np.searchsorted(part_sorted, code[waiting], "left")
    counts = np.searchsorted(part_sorted, code[waiting], "right") - lo
    waiting, lo, counts = waiting[counts > 0], lo[counts > 0], counts[counts > 0]
    if not len(waiting):
        return dep_ptr, dep_idx
    owner = np.repeat(waiting, counts)
    held_in = holder[_spans(lo, counts)]
    steps = int(step.max()) + 1
    n_codes = 1 + max(int(code.max()), int(key_code.max(initial=0)), int(part_code.max(initial=0)))
    arrival = (dst.astype(np.int64) * n_codes + code) * steps + step
    by_arrival = stable_order(arrival)
    new_owner, new_dep = _earlier_arrivals(arrival[by_arrival], by_arrival, owner, src[owner].astype(np.int64) * n_codes + held_in, step[owner], steps)
    return _merged(dep_ptr, dep_idx, new_owner, new_dep)


def _merged(dep_ptr: np.ndarray, dep_idx: np.ndarray, new_owner: np.ndarray, new_dep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The old dependencies and new ones (of transfers that had none), sorted and once each."""
    n = len(dep_ptr) - 1
    if not len(new_owner):
        return dep_ptr, dep_idx
    pairs = new_owner * n + new_dep  # (waiter, awaited) as one int
    pairs.sort()
    pairs = pairs[np.concatenate([[True], pairs[1:] != pairs[:-1]])]
    new_owner, new_dep = np.divmod(pairs, n)
    del pairs
    old_count, new_count = np.diff(dep_ptr), np.bincount(new_owner, minlength=n)
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(old_count + new_count, out=ptr[1:])
    deps = np.empty(int(ptr[-1]), np.int64)
    for count, owned in ((old_count, dep_idx), (new_count, new_dep)):  # each transfer's, at its place
        first = np.zeros(n, np.int64)
        np.cumsum(count[:-1], out=first[1:])
        place = np.repeat(ptr[:-1] - first, count)
        place += np.arange(len(owned))
        deps[place] = owned
    return ptr, deps


def _stable_order(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` for non-negative ints, several times faster (see :func:`netsim.columnar.stable_order`)."""
    return stable_order(values)


def _with_deps(
    step: np.ndarray, src: np.ndarray, dst: np.ndarray, block: np.ndarray, piece: np.ndarray, keep: dict[str, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Attach to each transfer the earlier arrivals of its chunk at its source.

    A chunk may only leave a device once every transfer of an earlier step that
    brings (or adds into) that chunk there has arrived. The transfers are sorted
    by step; transfer i waits for ``dep_idx[dep_ptr[i]:dep_ptr[i+1]]``, in
    increasing order.

    How: every transfer is an arrival (at dst) and a departure (from src) of its
    chunk. Sorted together by (device, chunk, step, departures before arrivals),
    a departure waits for the arrivals of its group sorted before it. When no
    device receives a chunk twice (gathers), a table of each (device, chunk)'s
    one arrival gives the same without sorting (:func:`_with_one_arrival_each`).
    """
    n = len(step)
    if n == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.int64)
    pieces = int(piece.max()) + 1
    chunks = (int(block.max()) + 1) * pieces
    steps = int(step.max()) + 1
    single = _with_one_arrival_each(step, src, dst, block, piece, chunks, keep)
    if single is not None:
        return single
    codes = np.empty(2 * n, np.int64)  # arrivals, then departures: ((device, chunk), step, departure first)
    for half, device, kind in ((codes[:n], dst, 1), (codes[n:], src, 0)):
        half[:] = device
        half *= chunks
        half += block.astype(np.int64) * pieces + piece
        half *= steps
        half += step
        half *= 2
        half += kind
    order = _stable_order(codes)  # positions < n are arrivals
    codes = codes[order]
    codes //= 2 * steps  # the (device, chunk) group of each position
    is_arrival = order < n
    arrivals_before = np.cumsum(is_arrival)
    arrivals_before -= is_arrival
    new_group = np.empty(2 * n, bool)
    new_group[0] = True
    np.not_equal(codes[1:], codes[:-1], out=new_group[1:])
    del codes
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(2 * n), 0))
    del new_group
    leaving = ~is_arrival
    transfer = order[leaving] - n
    lo = np.empty(n, np.int64)
    hi = np.empty(n, np.int64)
    lo[transfer] = arrivals_before[group_start[leaving]]
    hi[transfer] = arrivals_before[leaving]
    del group_start, arrivals_before, transfer
    counts = hi - lo
    dep_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=dep_ptr[1:])
    positions = np.repeat(lo - dep_ptr[:-1], counts)
    positions += np.arange(dep_ptr[-1])
    return dep_ptr, order[is_arrival][positions]


def _with_one_arrival_each(
    step: np.ndarray, src: np.ndarray, dst: np.ndarray, block: np.ndarray, piece: np.ndarray, chunks: int, keep: dict[str, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_with_deps` when every (device, chunk) has at most one arrival, else None.

    A departure then waits for the one arrival of its chunk at its source, if
    that arrival belongs to an earlier step. Reads a table over (device, chunk)
    when that table is not much bigger than the schedule, else looks the arrivals
    up sorted.
    """
    n = len(step)
    pieces = chunks // (int(block.max()) + 1)
    size = (max(int(src.max()), int(dst.max())) + 1) * chunks
    dense = size <= 4 * n + 1024
    # (int32 codes and table when they fit: half the memory to fill and read)
    small = index_dtype(size) if dense else np.int64
    chunk = block.astype(small)
    chunk *= pieces
    chunk += piece
    code = dst.astype(small)
    code *= chunks
    code += chunk
    if not dense:  # a table too big: the arrivals sorted, looked up
        order = stable_order(code)
        arrivals = code[order]
        if (arrivals[1:] == arrivals[:-1]).any():  # some (device, chunk) receives twice
            return None
        np.multiply(src, chunks, out=code, dtype=np.int64)
        code += chunk
        spot = np.minimum(searchsorted_many(arrivals, code), n - 1)
        waited = np.where(arrivals[spot] == code, order[spot], -1)
        if keep is not None:  # the transfers by (dst, block, piece), for the bundles' parts
            keep["order"] = order
        del order, arrivals, spot, code, chunk
    else:
        seen = np.zeros(size, bool)
        seen[code] = True
        if int(np.count_nonzero(seen)) != n:  # some (device, chunk) receives twice
            return None
        del seen
        arrival = np.full(size, -1, small)  # (n <= size: the transfers' numbers fit as well)
        arrival[code] = np.arange(n, dtype=small)
        np.multiply(src, chunks, out=code, dtype=small)
        code += chunk
        del chunk
        waited = arrival[code]
        del code, arrival
    has = waited >= 0
    has &= step[waited] < step
    dep_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(has, out=dep_ptr[1:])
    return dep_ptr, waited[has].astype(np.int64, copy=False)
