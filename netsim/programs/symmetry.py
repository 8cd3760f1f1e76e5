"""A program that does the same on every device of a torus's shifts, played on one device of each.

On a TPU torus a program's collectives often run over groups that the slice's shifts
along wrapped axes (:mod:`netsim.network.translations`) map onto one another: an FSDP
gather on each plane of a 16x16x16 slice, a tensor-parallel sum round each line along
the third axis. Where every collective's plan maps onto itself under the shifts along
some axes (:func:`plan_images`: each transfer onto one of the same step, piece, way and
size, its dependencies onto the image's), every device a shift reaches plays the same
times as the device it came from, so netsim plays the devices with coordinate 0 along
those axes only (:class:`Quotient`):

- a transfer is played when its source is such a device (kept); one it waits for that
  is not is replaced by the kept transfer a shift moves it onto (:class:`PlanQuotient`);
- a link stands for every link the shifts move onto it, a device for every device;
- a transfer carries one chunk of its size (the chunks' identities are left out: a
  timing-only run reads only their sizes).

The lowering (:func:`netsim.programs.lowering.lower`) builds this schedule instead of
the whole one, and the engine plays it with the links and devices aliased (the transfer
table's ``aliases``, a :class:`~netsim.network.translations.Translations`). Every chip
then breaks ties between messages that reach a link at one instant alike; played whole,
they go in transfer order, which differs from chip to chip. The times are the same to the
bit where the whole run treats every chip alike, else a few tenths of a percent apart
(``tests/test_program_symmetry.py``, docs/programs_limits.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsim.algorithms.bundles import as_table
from netsim.algorithms.schedule import Schedule
from netsim.algorithms.transfers import TransferTable
from netsim.checks.memory import available_memory
from netsim.network.device_mesh import Mesh
from netsim.network.translations import Translations, coordinates, shift, translatable_axes
from netsim.programs.builder import Ragged, blocks_taken
from netsim.programs.model import CollectiveOp, Matmul, Program
from netsim.programs.plans import AUTO_BUNDLED_ABOVE, bundled_defaults, collective_plan, plan_schedule, planned_transfers

__all__ = [
    "CHECK_BYTES_PER_TRANSFER",
    "PlanQuotient",
    "Quotient",
    "check_bytes",
    "leaf_counts",
    "piece_bytes",
    "plan_images",
    "plan_quotient",
    "quotient_of",
    "transfer_colours",
]


def piece_bytes(layout: Any, pieces: int, width: int) -> np.ndarray | None:
    """The bytes of a block's pieces, where a layout's blocks are all alike (a gather's, a reduce-scatter's, an
    all-to-all's: ``block_shape``; an all-reduce's when its input splits evenly); None for others.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> piece_bytes(SimpleNamespace(block_shape=(5, 2)), 3, 2).tolist()
    [8, 6, 6]
    """
    shape = getattr(layout, "block_shape", None)
    if shape is not None:
        elements = {math.prod(shape)}
    elif getattr(layout, "pattern", None) == "all_reduce":  # (the same blocks on every device: one device's say)
        elements = set(layout.block_sizes(1)[0].values())
    else:
        return None
    if len(elements) != 1:
        return None
    small, big = divmod(elements.pop(), pieces)
    return (small + (np.arange(pieces) < big)) * width


def leaf_counts(table: TransferTable, pieces: int) -> np.ndarray | None:
    """Per transfer, how many chunks of each piece number it carries (``(transfers, pieces)``): one for a chunk, its
    parts' (opened to chunks) for a bundle; None where a bundle's parts cannot be opened.

    Examples
    --------
    >>> from netsim.algorithms.schedule import build_schedule
    >>> leaf_counts(build_schedule("gather", [[0, 1, 2]], "ring").transfers, 1).ravel().tolist()
    [1, 1, 1, 1, 1, 1]
    """
    code = table.block.astype(np.int64) * pieces + table.piece
    if not table.bundles:
        counts = np.zeros((len(code), pieces), np.int64)
        counts[np.arange(len(code)), table.piece.astype(np.int64)] = 1
        return counts
    bundles = as_table(table.bundles)
    key = bundles.key_array @ np.array([pieces, 1])
    part = bundles.part_array @ np.array([pieces, 1])
    size = int(max(code.max(initial=0), key.max(initial=0), part.max(initial=0))) + 1
    known = np.zeros((size, pieces), np.int64)
    done = np.ones(size, bool)
    done[key] = False
    leaves = np.flatnonzero(done)
    known[leaves, leaves % pieces] = 1
    owner = np.repeat(np.arange(len(key)), np.diff(bundles.ptr))
    left = np.ones(len(key), bool)
    while left.any():
        ready = np.zeros(len(key), bool)
        ready[left] = True
        np.logical_and.at(ready, owner, done[part])
        ready &= left
        if not ready.any():
            return None
        rows = np.flatnonzero(ready)
        sums = np.zeros((len(key), pieces), np.int64)
        mine = ready[owner]
        np.add.at(sums, owner[mine], known[part[mine]])
        known[key[rows]] = sums[rows]
        done[key[rows]] = True
        left &= ~ready
    return known[code]


LARGEST_PLAN = AUTO_BUNDLED_ABOVE
"""A program with a plan of more transfers than this is played whole: checking a plan's shifts makes it whole first."""

_ROUNDS = 64
"""At most this many rounds of telling transfers apart by what they wait for (:func:`transfer_colours`)."""


def _mixed(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on unsigned 64-bit words (wrapping): a hash that spreads every bit."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def transfer_colours(table: TransferTable, counts: np.ndarray, coords: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """A hash of each transfer that every shift keeps: its step, piece, way, phase, reduction, chunks and where its
    destination lies from its source, then, round after round, the hashes of what it waits for and where their
    sources lie from its own (until no round tells more transfers apart).

    Examples
    --------
    >>> from netsim.algorithms.schedule import build_schedule
    >>> table = build_schedule("gather", [[0, 1, 2]], "ring").transfers
    >>> c = transfer_colours(table, leaf_counts(table, 1), np.arange(3)[:, None], (3,))
    >>> len(set(c.tolist())), bool(c[0] == c[1] == c[2])
    (2, True)
    """
    src, dst = table.src.astype(np.int64), table.dst.astype(np.int64)
    size = np.array(dims, np.int64)

    def apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # where b lies from a, as one number
        return np.ravel_multi_index(tuple(((coords[b] - coords[a]) % size).T), dims).astype(np.uint64)

    colour = _mixed(apart(src, dst))
    for column in (table.step, table.piece, table.direction, table.phase, np.asarray(table.reduce), *counts.T):
        colour = _mixed(colour ^ np.asarray(column).astype(np.int64).astype(np.uint64))
    ptr, idx = table.dep_ptr.astype(np.int64), table.dep_idx.astype(np.int64)
    if not len(idx):
        return colour
    owner = np.repeat(np.arange(len(src), dtype=np.int64), np.diff(ptr))
    back = np.argsort(idx, kind="stable")  # (the same edges by what is waited for: each transfer's waiters)
    back_ptr = np.zeros(len(src) + 1, np.int64)
    np.cumsum(np.bincount(idx, minlength=len(src)), out=back_ptr[1:])
    waiter = owner[back]
    where = _mixed(apart(src[owner], src[idx]) + np.uint64(1))
    where_back = _mixed(where[back] + np.uint64(2))
    sides = ((ptr, idx, where), (back_ptr, waiter, where_back))
    distinct = len(np.unique(colour))
    for _ in range(_ROUNDS):
        total = colour
        for starts, other, apart_by in sides:
            has = np.diff(starts) > 0
            each = _mixed(colour[other] ^ apart_by)
            summed = np.zeros(len(src), np.uint64)
            summed[has] = np.add.reduceat(each, starts[:-1][has])
            total = _mixed(total ^ _mixed(summed + np.uint64(len(sides))))
        colour = total
        now = len(np.unique(colour))
        if now == distinct:
            break
        distinct = now
    return colour


def plan_images(table: TransferTable, colours: np.ndarray, to: np.ndarray, known: dict | None = None) -> np.ndarray | None:
    """Where a shift of the devices (``to[d]``) moves each transfer of a plan: the transfer of the same colour
    (:func:`transfer_colours`) from ``to[src]`` to ``to[dst]``, whose dependencies are the images of its own. None
    when the plan does not map onto itself (or two transfers look alike). ``known``: a dict kept between the shifts
    of one plan (what does not depend on the shift is found once).

    Examples
    --------
    >>> from netsim.algorithms.schedule import build_schedule
    >>> table = build_schedule("gather", [[0, 1, 2]], "ring").transfers
    >>> colours = transfer_colours(table, leaf_counts(table, 1), np.arange(3)[:, None], (3,))
    >>> plan_images(table, colours, np.array([1, 2, 0])).tolist()
    [1, 2, 0, 4, 5, 3]
    >>> plan_images(table, colours, np.array([1, 0, 2])) is None
    True
    """
    n = len(table.src)
    if n == 0:
        return np.zeros(0, np.int64)
    known = {} if known is None else known  # (what does not depend on the shift: kept for the next one)
    if not known:
        src, dst = table.src.astype(np.int64), table.dst.astype(np.int64)
        devices = int(max(src.max(), dst.max())) + 1
        key = _mixed(colours ^ _mixed((src * devices + dst).astype(np.uint64)))  # (one sort key; equal ones checked below)
        mine = np.argsort(key, kind="stable")
        alike = (colours[mine][1:] == colours[mine][:-1]) & (src[mine][1:] == src[mine][:-1]) & (dst[mine][1:] == dst[mine][:-1])
        ptr, idx = table.dep_ptr.astype(np.int64), table.dep_idx.astype(np.int64)
        owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
        known.update(src=src, dst=dst, devices=devices, mine=mine, alike=bool(alike.any()), ptr=ptr, idx=idx, owner=owner)
        known["edges"] = np.sort(owner * n + idx)
    if known["alike"]:
        return None
    src, dst, mine = known["src"], known["dst"], known["mine"]
    there_src, there_dst = to[src], to[dst]
    if int(max(there_src.max(), there_dst.max())) >= known["devices"]:
        return None
    theirs = np.argsort(_mixed(colours ^ _mixed((there_src * known["devices"] + there_dst).astype(np.uint64))), kind="stable")
    if not (np.array_equal(colours[mine], colours[theirs]) and np.array_equal(src[mine], there_src[theirs]) and np.array_equal(dst[mine], there_dst[theirs])):
        return None
    image = np.empty(n, np.int64)
    image[theirs] = mine
    same = (table.step, table.piece, table.direction, table.phase, table.reduce)  # (the colours hash these: checked as they are)
    if not all(np.array_equal(np.asarray(column)[image], np.asarray(column)) for column in same):
        return None
    ptr, idx, owner = known["ptr"], known["idx"], known["owner"]
    if not np.array_equal(np.diff(ptr)[image], np.diff(ptr)):
        return None
    moved = np.sort(image[owner] * n + image[idx])
    return image if np.array_equal(known["edges"], moved) else None


@dataclass(frozen=True)
class PlanQuotient:
    """A plan's kept transfers (source a representative device) as a plan of their own.

    Attributes
    ----------
    schedule : Schedule
        The plan with only the kept transfers, in the plan's order, each waiting for the kept transfers that stand
        for its dependencies.
    counts : int array (kept, pieces)
        How many chunks of each piece number each carries (:func:`leaf_counts`).
    arrived_ptr, arrived_idx : int arrays
        Per device, the kept transfers that stand for the plan's arrivals there (representatives only; the others none).
    blocks : int
        The block numbers the whole plan takes (as its chunks and bundles number them).
    """

    schedule: Schedule
    counts: np.ndarray
    arrived_ptr: np.ndarray
    arrived_idx: np.ndarray
    blocks: int

    def arrivals(self, base: int) -> Ragged:
        """The arrivals per device, kept transfers numbered from ``base``."""
        return Ragged(self.arrived_ptr, self.arrived_idx + base)


def plan_quotient(
    schedule: Schedule, counts: np.ndarray, images: dict[int, np.ndarray], coords: np.ndarray, dims: tuple[int, ...], kept: np.ndarray
) -> PlanQuotient:
    """The plan on the representatives: ``images`` the transfers' images under a shift along each axis (one place
    up), ``coords`` the devices' coordinates, ``kept`` whether each device is a representative."""
    table = schedule.transfers
    n = len(table.src)
    src = table.src.astype(np.int64)
    stand = np.arange(n, dtype=np.int64)  # (each transfer's representative, shifted along axis after axis)
    for axis, image in images.items():
        for _ in range(dims[axis] - 1):
            move = coords[src[stand], axis] != 0
            if not move.any():
                break
            stand[move] = image[stand[move]]
    keep = np.flatnonzero(kept[src])
    number = np.full(n, -1, np.int64)
    number[keep] = np.arange(len(keep))
    rep = number[stand]
    ptr, idx = table.dep_ptr.astype(np.int64), table.dep_idx.astype(np.int64)
    lengths = np.diff(ptr)[keep]
    kept_ptr = np.zeros(len(keep) + 1, np.int64)
    np.cumsum(lengths, out=kept_ptr[1:])
    rows = np.repeat(ptr[keep] - kept_ptr[:-1], lengths) + np.arange(kept_ptr[-1])
    columns = [np.asarray(c)[keep] for c in (table.step, table.src, table.dst, table.block, table.piece, table.reduce, table.direction, table.phase)]
    sub = TransferTable(*columns, kept_ptr, rep[idx[rows]])
    dst = table.dst.astype(np.int64)
    here = kept[dst]
    order = np.flatnonzero(here)[np.argsort(dst[here], kind="stable")]
    arrived_ptr = np.zeros(len(kept) + 1, np.int64)
    np.cumsum(np.bincount(dst[here], minlength=len(kept)), out=arrived_ptr[1:])
    return PlanQuotient(dataclasses.replace(schedule, transfers=sub), counts[keep], arrived_ptr, rep[order], blocks_taken(table))


@dataclass(frozen=True)
class Quotient:
    """A program played on representatives: the shifts (``aliases``), each plan's kept transfers by plan key, and the
    memory estimated for checking the plans it had to make whole (``checking``, bytes: :func:`check_bytes`)."""

    aliases: Translations
    plans: dict[Any, PlanQuotient]
    checking: int = 0


CHECK_BYTES_PER_TRANSFER = 400
"""Bytes a plan's transfer is estimated to hold while the plan is made whole and checked (measured: 224 to 335 B a
transfer of the largest plan on FSDP over 512 and 4096 chips and the Llama-2-70B-shaped step; bench/README.md)."""
IMAGE_BYTES_PER_TRANSFER = 32
"""And a transfer of the other plans checked, whose images are held meanwhile."""


def check_bytes(sizes: list[int]) -> int:
    """The memory checking plans of ``sizes`` transfers is estimated to take.

    Examples
    --------
    >>> round(check_bytes([4_177_920, 491_520, 491_520, 245_760]) / 2**30, 2)
    1.59
    """
    if not sizes:
        return 0
    return CHECK_BYTES_PER_TRANSFER * max(sizes) + IMAGE_BYTES_PER_TRANSFER * (sum(sizes) - max(sizes))


_CACHE: OrderedDict[Any, Any] = OrderedDict()
"""Recent plans' images and quotients (a ``repeat:`` extension plays many runs of the same plans)."""
_CACHE_SIZE = 64


def _cached(key: Any, make: Any) -> Any:
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    value = _CACHE[key] = make()
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return value


def _images(
    plan: Any, shifts: dict[int, np.ndarray], axes: tuple[int, ...], coords: np.ndarray, dims: tuple[int, ...]
) -> tuple[Schedule, np.ndarray, dict[int, np.ndarray]]:
    """A plan's schedule, its transfers' chunks (:func:`leaf_counts`) and their images under the shifts along ``axes``
    that map it onto itself."""
    schedule = plan_schedule(plan)
    counts = leaf_counts(schedule.transfers, schedule.pieces)
    if counts is None:
        return schedule, counts, {}
    colours = transfer_colours(schedule.transfers, counts, coords, dims)
    known: dict = {}
    images = {a: plan_images(schedule.transfers, colours, shifts[a], known) for a in axes}
    return schedule, counts, {a: image for a, image in images.items() if image is not None and np.array_equal(counts[image], counts)}


def quotient_of(program: Program, mesh: Mesh) -> Quotient | None:
    """The program on the representatives of the shifts along every axis that maps each of its plans onto itself
    (None: no such axis, or an op that is not played on representatives).

    Examples
    --------
    >>> from netsim.network.topology import ring
    >>> from netsim.programs.model import Op, Sharded
    >>> gather = Op.of("g", "all_gather", ("A",), "B", axes=("X",), axis=1, tiled=True)
    >>> program = Program("p", {"X": 4}, {"A": Sharded((4, 8), "float32", ((), ("X",)))}, (gather,))
    >>> q = quotient_of(program, Mesh({"X": 4}, ring(4)))
    >>> q.aliases.axes, q.aliases.order, len(q.plans)
    ((0,), 4, 1)
    """
    topology = mesh.topology
    if any(isinstance(op, Matmul) and op.overlap is not None for op in program.ops):
        return None
    grid = (topology.name, tuple(topology.dims), tuple(topology.wraparound))
    axes = translatable_axes(topology)
    if not axes:
        return None
    bundled = bundled_defaults(program, mesh)
    arrays = program.arrays_after()
    plans = {}
    for op in program.ops:
        if isinstance(op, CollectiveOp):
            plan = collective_plan(op, arrays[op.inputs[0]], mesh, bundled)
            if piece_bytes(plan.layout, 1, 1) is None:  # (blocks of several sizes: a chunk's size is not its piece's)
                return None
            plans.setdefault(plan.key, plan)
    sizes = [planned_transfers(plan) for key, plan in plans.items() if ("plan axes", grid, key) not in _CACHE]
    checking = check_bytes(sizes)
    available = available_memory()
    if max(sizes, default=0) > LARGEST_PLAN or (available is not None and checking > available):  # (each plan is made whole to be checked)
        return None
    shifts = {axis: shift(topology, axis) for axis in axes}
    coords = coordinates(topology)
    dims = tuple(topology.dims)
    built: dict[Any, tuple[Schedule, np.ndarray, dict[int, np.ndarray]]] = {}
    chosen = set(axes)
    for key, plan in plans.items():
        ok = _CACHE.get(("plan axes", grid, key))
        if ok is None:
            built[key] = _images(plan, shifts, axes, coords, dims)
            ok = _cached(("plan axes", grid, key), lambda key=key: tuple(built[key][2]))
        chosen &= set(ok)
        if not chosen:
            return None
    along = tuple(sorted(chosen))
    aliases = _cached(("aliases", grid, along), lambda: Translations.of(topology, along))
    quotients = {}
    for key, plan in plans.items():

        def make(key: Any = key, plan: Any = plan) -> PlanQuotient:
            schedule, counts, images = built.pop(key, None) or _images(plan, shifts, along, coords, dims)
            return plan_quotient(schedule, counts, {a: images[a] for a in along}, coords, dims, aliases.kept)

        quotients[key] = _cached(("quotient", grid, key, along), make)
    return Quotient(aliases, quotients, checking)
