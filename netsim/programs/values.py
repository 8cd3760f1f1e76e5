"""A program's values: the chunks its collectives move, filled in op by op, and the check against unsharded NumPy.

The engine moves chunks by reference and adds them for reductions; it never looks
inside one. A program's collectives start from :class:`Pending` chunks, whose
values are filled in after the run, op by op in program order, from what the
earlier ops made on each device: a sum made by the links (``Pending + Pending``)
is kept as a :class:`Sum` of the very chunks added, in the order they were added,
and is worked out when read. So every value the program ends with is built from
the chunks each device really received, and the check below would catch a chunk
that went to the wrong place.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from netsim.algorithms.bundles import unbundled
from netsim.engine import Playback
from netsim.outputs import output_row
from netsim.programs.lowering import Lowered
from netsim.programs.model import CollectiveOp, Einsum, Matmul, Sharded, einsum_subscripts
from netsim.programs.starts import start_chunks, start_sizes
from netsim.semantics.program_values import block_of, dtype_of, itemsize, product, shard, tolerance

__all__ = ["Pending", "Sum", "check_values", "evaluate", "inputs_of", "start_buffers"]


class Pending:
    """A chunk of ``nbytes`` bytes whose values are filled in after the run (``value``)."""

    __slots__ = ("nbytes", "value")

    def __init__(self, nbytes: int) -> None:
        self.nbytes = int(nbytes)
        self.value: np.ndarray | None = None

    def __add__(self, other: Pending) -> Sum:
        return Sum(self, other)

    def resolved(self) -> np.ndarray:
        """The chunk's values."""
        if self.value is None:
            raise RuntimeError("a chunk was read before the op that makes it; this is a bug in netsim, please report it")
        return self.value


class Sum(Pending):
    """What a reduction made of two chunks: worked out (once) when read."""

    __slots__ = ("left", "right")

    def __init__(self, left: Pending, right: Pending) -> None:
        super().__init__(left.nbytes)
        self.left, self.right = left, right

    def resolved(self) -> np.ndarray:
        if self.value is None:
            self.value = self.left.resolved() + self.right.resolved()
        return self.value


def start_buffers(lowered: Lowered, values: bool) -> tuple[list[dict], list[dict]]:
    """Each device's starting chunks (``Pending`` with values, ``SizeOnly`` without: one stand-in per size, shared), and the pending ones by op."""
    widths = [itemsize(lowered.arrays[record.op.inputs[0]].dtype) if record.op.inputs else 0 for record in lowered.ops]
    if not values:  # (a whole step holds millions of chunks of a few sizes: held as columns, a device's dict made when read)
        buffers = start_sizes(lowered, widths)
        return buffers, [{} for _ in range(len(buffers))]
    starts = start_chunks(lowered)
    buffers = [{} for _ in starts]
    pending: list[dict] = [{} for _ in starts]
    for device, held in enumerate(starts):
        for key, (index, block, elements) in held.items():
            chunk = Pending(elements * widths[index])
            buffers[device][key] = chunk
            pending[device][(index, block, key[1])] = chunk
    return buffers, pending


def coordinates(lowered: Lowered) -> list[dict[str, int]]:
    """Each device's position along every mesh axis."""
    coords: list[dict[str, int]] = [{} for _ in range(lowered.mesh.topology.n_devices)]
    for index in np.ndindex(lowered.mesh.devices.shape):
        coords[int(lowered.mesh.devices[index])] = dict(zip(lowered.mesh.axis_names, index, strict=True))
    return coords


def inputs_of(lowered: Lowered, seed: int) -> tuple[dict[str, np.ndarray], dict[str, list[np.ndarray]]]:
    """The program's inputs, drawn from ``seed``: each array's global value and every device's shard.

    Floats are standard normal, integers uniform in [-8, 8). An array that is a
    partial sum over mesh axes gets an addend of its own on each position along
    them; its global value is their sum.
    """
    rng = np.random.default_rng(seed)
    mesh = lowered.mesh.shape
    coords = coordinates(lowered)
    references: dict[str, np.ndarray] = {}
    shards: dict[str, list[np.ndarray]] = {}
    for name, array in lowered.program.arrays.items():
        dtype = dtype_of(array.dtype)
        addends = math.prod(mesh[a] for a in array.partial)
        shape = (addends, *array.shape)
        drawn = rng.integers(-8, 8, size=shape).astype(dtype) if dtype.kind in "iu" else rng.standard_normal(shape, dtype=np.float32).astype(dtype)
        references[name] = drawn[0] if addends == 1 else drawn.astype(np.float64).sum(axis=0).astype(dtype)
        shards[name] = [shard(drawn[_position(c, array.partial, mesh)], c, mesh, array.sharding) for c in coords]
    return references, shards


def _position(coords: Mapping[str, int], axes: tuple[str, ...], mesh: Mapping[str, int]) -> int:
    position = 0
    for a in axes:
        position = position * mesh[a] + coords[a]
    return position


def evaluate(lowered: Lowered, playback: Playback, pending: list[dict], shards: Mapping[str, list[np.ndarray]]) -> dict[str, list[np.ndarray]]:
    """Every array's shard on every device, from the inputs' shards and the chunks each device ended with."""
    n = lowered.mesh.topology.n_devices
    local: dict[str, list[np.ndarray]] = dict(shards)
    for index, record in enumerate(lowered.ops):
        op = record.op
        if op.output is None:
            continue
        out_dtype = dtype_of(lowered.arrays[op.output].dtype)
        match op:
            case CollectiveOp():
                _fill(record, index, local[op.inputs[0]], pending)
                local[op.output] = [_collected(record, playback, d, out_dtype, local[op.inputs[0]][d]) for d in range(n)]
            case Matmul(overlap="collective"):
                _fill(record, index, local[op.inputs[0]], pending)
                local[op.output] = [_collective_matmul(record, playback, d, local[op.inputs[1]][d], out_dtype) for d in range(n)]
            case Matmul() | Einsum():
                subscripts = op.subscripts_for(len(lowered.arrays[op.inputs[0]].shape))
                local[op.output] = _products(subscripts, local[op.inputs[0]], local[op.inputs[1]], out_dtype)
    return local


def _products(subscripts: str, a: list[np.ndarray], b: list[np.ndarray], dtype: np.dtype) -> list[np.ndarray]:
    """Every device's product, worked out once for devices whose shards hold the same bytes (replicas)."""
    done: dict[tuple[bytes, bytes], np.ndarray] = {}
    out = []
    for x, y in zip(a, b, strict=True):
        key = (_digest(x), _digest(y))
        if key not in done:
            done[key] = product(subscripts, x, y, dtype)
        out.append(done[key])
    return out


def _digest(x: np.ndarray) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(x).view(np.uint8).reshape(-1), digest_size=16).digest() + repr((x.shape, x.dtype.str)).encode()


def _fill(record: Any, index: int, values: list[np.ndarray], pending: list[dict]) -> None:
    """Give the op's starting chunks on every device their values."""
    blocks = record.layout.blocks(np.stack(values))
    for device, held in enumerate(blocks):
        for block, flat in held.items():
            for p, piece in enumerate(np.array_split(flat, record.pieces)):
                pending[device][(index, block, p)].value = piece


def _held(record: Any, buffer: dict, device: int) -> dict:
    return {(b, p): buffer[(b + record.block_offset, p)].resolved() for b in record.layout.wanted(device) for p in range(record.pieces)}


def _collected(record: Any, playback: Playback, device: int, dtype: np.dtype, own: np.ndarray) -> np.ndarray:
    if record.op.op == "ppermute" and not record.layout.wanted(device):
        return own  # a position the permutation leaves in place
    buffer = playback.buffers[device]
    held = _held(record, unbundled(buffer, playback.bundles) if playback.bundles else buffer, device)
    return output_row(record.op.op, record.layout, held, device, record.pieces, dtype)


def _collective_matmul(record: Any, playback: Playback, device: int, b: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``C = sum_j A_j @ B[rows j]`` over the blocks a device held or received, in the order its compute steps ran."""
    layout, pieces = record.layout, record.pieces
    position, group = next((i * len(g) + g.index(device), g) for i, g in enumerate(layout.groups) if device in g)
    rows = layout.block_shape[-1]
    starts = playback.computes.started_at
    buffer = playback.buffers[device]
    first = record.computes.start + position * len(group)  # its steps, block by block
    order = sorted(range(len(group)), key=lambda j: starts[first + j])
    total = None
    for j in order:
        block = np.concatenate([buffer[(j + record.block_offset, p)].resolved() for p in range(pieces)]).reshape(layout.block_shape)
        part = np.einsum("...k,kn->...n", block.astype(np.float32), b[j * rows : (j + 1) * rows].astype(np.float32))
        total = part if total is None else total + part
    return total.astype(dtype)


def check_values(lowered: Lowered, local: dict[str, list[np.ndarray]], inputs: Mapping[str, np.ndarray]) -> dict[str, tuple[float, float]]:
    """Compare every array an op made with the unsharded NumPy computation.

    Returns
    -------
    dict
        Array name -> (largest difference relative to the reference's largest
        magnitude, the tolerance allowed (:func:`netsim.semantics.program_values.tolerance`)).
    """
    mesh = lowered.mesh.shape
    coords = coordinates(lowered)
    reference: dict[str, np.ndarray] = dict(inputs)
    additions: dict[str, int] = dict.fromkeys(inputs, 0)
    contraction: dict[str, int] = dict.fromkeys(inputs, 1)
    report: dict[str, tuple[float, float]] = {}
    for op in lowered.program.ops:
        if op.output is None:
            continue
        array = lowered.arrays[op.output]
        ins = [lowered.arrays[name] for name in op.inputs]
        if isinstance(op, CollectiveOp):
            reference[op.output] = _moved(op, reference[op.inputs[0]], ins[0], coords, mesh)
            summed = math.prod(mesh[a] for a in op.axes) if op.collective.reduces else 0
            additions[op.output] = additions[op.inputs[0]] + summed
            contraction[op.output] = contraction[op.inputs[0]]
        else:
            subscripts = op.subscripts_for(len(ins[0].shape))  # a matmul or an einsum
            reference[op.output] = product(subscripts, reference[op.inputs[0]], reference[op.inputs[1]], dtype_of(array.dtype))
            ta, tb, to = einsum_subscripts(subscripts)
            sizes = dict(zip(ta + tb, ins[0].shape + ins[1].shape, strict=True))
            k = math.prod(sizes[x] for x in dict.fromkeys(ta + tb) if x not in to)
            additions[op.output] = max(additions[n] for n in op.inputs)
            contraction[op.output] = max(k, *(contraction[n] for n in op.inputs))
        allowed = tolerance(dtype_of(array.dtype), additions[op.output], contraction[op.output])
        report[op.output] = (_difference(array, local[op.output], reference[op.output], coords, mesh), allowed)
    return report


def _moved(op: CollectiveOp, value: np.ndarray, x: Sharded, coords: list[dict[str, int]], mesh: Mapping[str, int]) -> np.ndarray:
    """The global value after a collective: the same, but for a ppermute of an array split over its axis."""
    if op.op != "ppermute" or op.axes[0] not in x.axes_used:
        return value
    axis = op.axes[0]
    target = dict(op.params["perm"])
    moved = np.empty_like(value)
    for c in coords:
        moved[block_of({**c, axis: target[c[axis]]}, mesh, value.shape, x.sharding)] = value[block_of(c, mesh, value.shape, x.sharding)]
    return moved


def _difference(array: Sharded, shards: list[np.ndarray], expected: np.ndarray, coords: list[dict[str, int]], mesh: Mapping[str, int]) -> float:
    """The largest |simulated - reference| over every device's shard (summed over partial axes), relative to max|reference|."""
    wide = expected.astype(np.float64)
    scale = float(np.max(np.abs(wide), initial=0.0)) or 1.0
    worst = 0.0
    groups: dict[tuple, list[int]] = {}
    for d, c in enumerate(coords):
        groups.setdefault(tuple(v for a, v in sorted(c.items()) if a not in array.partial), []).append(d)
    for members in groups.values():
        got = sum(shards[d].astype(np.float64) for d in members)
        want = wide[block_of(coords[members[0]], mesh, expected.shape, array.sharding)]
        if got.shape != want.shape:
            return math.inf
        worst = max(worst, float(np.max(np.abs(got - want), initial=0.0)) / scale)
    return worst
