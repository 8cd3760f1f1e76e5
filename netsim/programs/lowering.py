"""A program lowered to one schedule: every collective's transfers and every op's compute steps, with what each waits for.

:func:`lower` plans each collective of a :class:`~netsim.programs.model.Program`
with the same algorithm, groups and pieces as the collective would take in a
scenario (:func:`~netsim.algorithms.schedule.build_schedule`), renumbers its
chunks so that collectives never share one (block ``b`` of the k-th collective is
block ``b + offset``), and adds compute steps
(:class:`~netsim.algorithms.compute.Compute`) for matmuls, einsums and other work
(:class:`~netsim.programs.ops.Matmul`, :class:`~netsim.programs.ops.Einsum`,
:class:`~netsim.programs.ops.Compute`).

Per-device readiness
    An array is *ready* on a device once the steps that make it there are done:
    nothing for the program's inputs, the arrivals at the device for a
    collective's output, the device's compute steps for a product. An op starts
    on a device once its inputs are ready there (and the ops in its ``after`` are
    done there): every transfer a collective sends from a device waits for that,
    and so does every compute step. A collective on its own therefore plays
    exactly as it does in a scenario.

Device groups
    A collective over mesh ``axes`` runs over :meth:`Mesh.groups` of them: the
    default multi-axis algorithm, rings or lines as the axes have them. One over
    explicit ``groups`` runs in the order they list, with the algorithm a
    scenario's ``axis_index_groups`` would take, unless the groups are an
    :class:`~netsim.network.device_mesh.AxisGroups` (the devices along axes of
    some mesh of the same devices: an HLO module's, or the slice's own), which
    runs as over those axes. An HLO module becomes a program
    (:mod:`netsim.programs.hlo.translate`) and is lowered here like any other.

Collective matmul
    ``overlap="collective"`` gathers the first operand's blocks with the
    collective's schedule (round the ring, or both ways along a line without
    wraparound) and gives each device one compute step per block piece it holds
    or receives, ready as soon as that piece is there: each device multiplies the
    block it holds while the next travels. Block ``j`` of ``A[I, J_X]`` times the
    rows ``j`` of ``B[J, K]`` adds into ``C[I, K]``; after every block, ``C`` is the
    gathered matmul's.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsim.algorithms.schedule import Schedule
from netsim.network.calibration import in_force
from netsim.network.device_mesh import Mesh
from netsim.programs.builder import Ragged, ScheduleBuilder, Waits
from netsim.programs.model import CollectiveOp, Compute, Einsum, Matmul, Op, Program, ProgramError, Sharded, einsum_subscripts
from netsim.programs.plans import bundled_defaults, collective_plan, plan_schedule
from netsim.programs.symmetry import piece_bytes
from netsim.semantics.program_values import itemsize

__all__ = ["Lowered", "LoweredOp", "lower"]


@dataclass(frozen=True)
class LoweredOp:
    """One op of a lowered program.

    Attributes
    ----------
    op : Op
    transfers, computes : range
        Its transfers in the program's schedule (empty for compute ops), its compute steps (numbered within ``Schedule.computes``).
    layout : object or None
        A collective's layout over the devices' shards (:mod:`netsim.semantics`).
    pieces, block_offset : int
        A collective's pieces per block; its block ``b`` travels as block ``b + block_offset``.
    algorithm : str or None
        The collective's algorithm.
    flops, bytes : float
        A compute op's work on one device (the busiest), for its roofline.
    planned : tuple of bool or None
        The wraparound its algorithm planned its groups with, per axis (None: one ring, or not a collective); its closed form reads it.
    efficiency : float
        The fraction of peak FLOP/s its compute steps reach: the op's, else the chip's calibrated one (1 if nominal).
    """

    op: Op
    transfers: range
    computes: range
    layout: Any = None
    pieces: int = 1
    block_offset: int = 0
    algorithm: str | None = None
    flops: float = 0.0
    bytes: float = 0.0
    planned: tuple[bool, ...] | None = None
    efficiency: float = 1.0

    @property
    def collective(self) -> bool:
        """Whether the op is a collective (a collective matmul is a matmul: not one)."""
        return isinstance(self.op, CollectiveOp)

    @property
    def collective_matmul(self) -> bool:
        """Whether the op is a matmul run as a collective matmul (its transfers are its gather's)."""
        return isinstance(self.op, Matmul) and self.op.overlap == "collective"

    @property
    def seconds(self) -> float | None:
        """The time a ``compute`` op is given (None: the roofline times the op, or it is no compute op)."""
        return self.op.seconds if isinstance(self.op, Compute) else None


@dataclass(frozen=True)
class Lowered:
    """A program as one schedule, and how its ops map onto it.

    Attributes
    ----------
    program : Program
    arrays : dict of str to Sharded
        Every array, from :meth:`Program.arrays_after`.
    mesh : Mesh
    schedule : Schedule
        Transfers (a :class:`~netsim.algorithms.transfers.TransferTable`) and compute steps.
    ops : tuple of LoweredOp
    """

    program: Program
    arrays: dict[str, Sharded]
    mesh: Mesh
    schedule: Schedule
    ops: tuple[LoweredOp, ...]
    quotient: Any = None
    size_classes: np.ndarray | None = None


def lower(program: Program, mesh: Mesh, quotient: Any = None) -> Lowered:
    """Lower a program onto a mesh (laid on its topology): one schedule, transfers and compute steps.

    Parameters
    ----------
    program : Program
    mesh : Mesh
        The program's mesh axes on a topology (:class:`netsim.network.device_mesh.Mesh`).
    quotient : Quotient, optional
        Play the representatives only (:func:`netsim.programs.symmetry.quotient_of`): the schedule holds the
        transfers from them and their compute steps, each chunk standing for one of its size (``Lowered.size_classes``).

    Returns
    -------
    Lowered

    Raises
    ------
    ProgramError
        If the program does not check (:meth:`Program.arrays_after`), or its mesh
        does not match ``mesh``.

    Examples
    --------
    >>> from netsim.programs.model import Op, Program, Sharded
    >>> from netsim.network.topology import ring
    >>> program = Program("p", {"X": 4}, {"A": Sharded((4, 8), "float32", ((), ("X",))), "B": Sharded((8, 2))},
    ...     (Op.of("g", "all_gather", ("A",), "A2", axes=("X",), axis=1, tiled=True), Op.of("mm", "matmul", ("A2", "B"), "C")))
    >>> chips = ring(4).with_device({"peak_flops": 1e12, "hbm_bandwidth_Bps": 1e11})
    >>> low = lower(program, Mesh({"X": 4}, chips))
    >>> len(low.schedule.transfers), len(low.schedule.computes), low.ops[1].flops
    (24, 4, 128.0)
    """
    if dict(mesh.shape) != dict(program.mesh):
        raise ProgramError(program.name, "mesh", f"the program's mesh {program.mesh} is not the mesh given ({mesh.shape})")
    arrays = program.arrays_after()
    n = mesh.topology.n_devices
    build = ScheduleBuilder(n, None if quotient is None else quotient.aliases.device)
    devices = np.arange(n)
    ready: dict[str, Waits] = {name: np.zeros((n, 0), np.int64) for name in program.arrays}
    done: dict[str, Waits] = {}
    lowered: list[LoweredOp] = []
    chip = in_force(mesh.topology).compute_efficiency
    bundled = bundled_defaults(program, mesh)
    for op in program.ops:
        efficiency = chip if getattr(op, "efficiency", None) is None else op.efficiency
        before = _waits(ready, done, op, n)
        match op:
            case CollectiveOp():
                record, after = _lower_collective(op, arrays[op.inputs[0]], mesh, build, before, bundled, quotient)
            case Compute():
                unit = 1 if op.unit == "dma" else 0
                steps = build.add_computes(devices, op.flops, op.bytes, op.seconds, before, op.name, eff=efficiency, unit=unit)
                record, after = LoweredOp(op, range(0), _span(steps), flops=op.flops, bytes=op.bytes, efficiency=efficiency), steps[:, None]
            case Matmul(overlap="collective") if quotient is not None:
                raise ValueError(f"{op.name}: a collective matmul is not played on representatives")
            case Matmul(overlap="collective"):
                record, after = _lower_collective_matmul(op, [arrays[name] for name in op.inputs], arrays[op.output], mesh, build, before, efficiency)
            case Matmul() | Einsum():
                flops, nbytes = product_work(op, [arrays[name] for name in op.inputs], arrays[op.output], mesh.shape)
                steps = build.add_computes(devices, flops, nbytes, None, before, op.name, eff=efficiency)
                record, after = LoweredOp(op, range(0), _span(steps), flops=flops, bytes=nbytes, efficiency=efficiency), steps[:, None]
        lowered.append(record)
        done[op.name] = after
        if op.output is not None:
            ready[op.output] = after
    _check_rates(lowered, mesh)
    if quotient is None:
        return Lowered(program, arrays, mesh, build.schedule(), tuple(lowered))
    schedule = build.schedule(quotient.aliases)
    return Lowered(program, arrays, mesh, schedule, tuple(lowered), quotient, build.size_classes)


def _waits(ready: dict[str, Waits], done: dict[str, Waits], op: Op, n: int) -> Waits:
    """What ``op`` waits for on each device: what makes its inputs ready there, then what the ops in its ``after`` did
    there, each step once.

    Where every part is an array ``(devices, k)`` (made by compute ops) and no step is in two of them, the parts side
    by side; else one sequence per device (a tuple or an int array), each part's steps in order, first met kept.
    """
    parts: list[Waits] = []
    for part in [*(ready[name] for name in op.inputs), *(done[o] for o in op.after)]:
        empty = (isinstance(part, np.ndarray) and part.shape[1] == 0) or (isinstance(part, Ragged) and not len(part.idx))
        if not empty and not any(part is seen for seen in parts):
            parts.append(part)
    if not parts:
        return np.zeros((n, 0), np.int64)
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(part, np.ndarray) for part in parts):
        side = np.concatenate(parts, axis=1)
        ordered = np.sort(side, axis=1)
        if not (ordered[:, 1:] == ordered[:, :-1]).any():
            return side
    if all(isinstance(part, (np.ndarray, Ragged)) for part in parts):
        joined = Ragged.side_by_side([Ragged.of(part) for part in parts])
        if joined is not None:
            return joined
    return [_merged([part[d] for part in parts]) for d in range(n)]


def _merged(parts: list[Any]) -> Any:
    """Steps of several parts, each once, in the order first met (a part handed on as it is when it is the only one)."""
    parts = [part for part in parts if len(part)]
    if len(parts) <= 1:
        return parts[0] if parts else ()
    if all(type(part) is tuple for part in parts):  # (a few steps each: distinct, in the order first met, without NumPy's overhead)
        return tuple(dict.fromkeys(itertools.chain.from_iterable(parts)))
    if all(len(part) <= 8 for part in parts):
        return tuple(dict.fromkeys(itertools.chain.from_iterable(part if type(part) is tuple else part.tolist() for part in parts)))
    steps = np.concatenate([np.asarray(part, np.int64).reshape(-1) for part in parts])
    _, first = np.unique(steps, return_index=True)
    return steps[np.sort(first)]


def _check_rates(lowered: list[LoweredOp], mesh: Mesh) -> None:
    """Every op timed by the roofline needs its chips' peak FLOP/s and HBM bandwidth."""
    facts = mesh.topology.device(0)
    for record in lowered:
        for work, field, what in ((record.flops, "peak_flops", "FLOPs"), (record.bytes, "hbm_bandwidth_Bps", "HBM bytes")):
            if len(record.computes) and record.seconds is None and work > 0 and not facts.get(field):
                raise ProgramError(
                    record.op.name,
                    "flops" if isinstance(record.op, Compute) else "in",
                    f"counts {what} but {mesh.topology.name}'s chips have no {field}: run on a TPU slice (e.g. tpu-v5e:4x4) or give the topology device facts",
                )


def _span(steps: Sequence[int] | np.ndarray) -> range:
    """Compute steps made one after another (encoded ``-(j + 1)``): their numbers within the schedule's compute steps."""
    if not len(steps):
        return range(0)
    steps = np.asarray(steps)  # (played on representatives, the others' codes are their representatives': the same run)
    return range(-int(steps.max()) - 1, -int(steps.min()))


def _lower_collective(
    op: CollectiveOp, x: Sharded, mesh: Mesh, build: ScheduleBuilder, before: Waits, bundled: frozenset[str] = frozenset(), quotient: Any = None
) -> tuple[LoweredOp, Waits]:
    plan = collective_plan(op, x, mesh, bundled)
    layout, algorithm = plan.layout, plan.algorithm
    part = None if quotient is None else quotient.plans[plan.key]  # (played on representatives: the plan's kept transfers)
    schedule = build.plans.get(plan.key) if part is None else part.schedule  # (ops alike are planned once)
    if schedule is None:
        schedule = build.plans[plan.key] = plan_schedule(plan)
    overhead = in_force(mesh.topology).collective_overhead_s if len(schedule.transfers) else 0.0  # (moving nothing costs nothing)
    if overhead:  # calibrated: the fixed cost per collective, a launch step on each device before its first byte leaves
        codes = build.add_computes(np.arange(len(before)), 0.0, 0.0, overhead, before, f"{op.name} launch")
        before = codes[:, None]
    if part is None:
        span, offset, dst, _ = build.add_schedule(schedule, before, layout.block_count())
        after = _arrivals(dst, span.start, before)
    else:  # each kept transfer carries its size, and stands for the arrivals of those it stands for
        nbytes = part.counts @ piece_bytes(layout, schedule.pieces, itemsize(x.dtype))
        span, offset, _, _ = build.add_schedule(schedule, before, max(layout.block_count(), part.blocks), nbytes=nbytes)
        after = _arrived(part.arrivals(span.start), before)
    launches = _span(codes) if overhead else range(0)
    return LoweredOp(op, span, launches, layout, schedule.pieces, offset, algorithm, planned=schedule.group_wraparound), after


def _arrivals(dst: np.ndarray, base: int, before: Waits) -> Waits:
    """Per device, the transfers arriving there (or, where none do, what the op waited for there)."""
    n = len(before)
    order = np.argsort(dst, kind="stable")
    counts = np.bincount(dst, minlength=n)
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    return _arrived(Ragged(ptr, order + base), before)


def _arrived(arrived: Ragged, before: Waits) -> Waits:
    """``arrived`` per device, and where none arrive, what the op waited for there."""
    n = len(before)
    counts = arrived.counts
    none = counts == 0
    if not none.any():
        return arrived
    if isinstance(before, list):
        return [arrived[d] if counts[d] else before[d] for d in range(n)]
    waited = Ragged.of(before)
    kept = np.where(none, waited.counts, 0)
    ptr_kept = np.zeros(n + 1, np.int64)
    np.cumsum(kept, out=ptr_kept[1:])
    rows = np.flatnonzero(none)
    only = Ragged(ptr_kept, waited.rows(rows).idx)  # (what devices without arrivals waited for, the others empty)
    return Ragged.side_by_side([arrived, only])


def product_work(op: Matmul | Einsum, inputs: list[Sharded], out: Sharded, mesh: Mapping[str, int]) -> tuple[float, float]:
    """One device's FLOPs and HBM bytes for a matmul or einsum on its shards.

    FLOPs: two per multiply-add over every index of the contraction (one per
    product when nothing is summed). Bytes: both inputs read once and the
    output written once, at their dtypes' sizes.

    Examples
    --------
    >>> a, b, c = Sharded((8, 16), "bfloat16"), Sharded((16, 4), "bfloat16"), Sharded((8, 4), "bfloat16")
    >>> product_work(Matmul("mm", ("a", "b"), "c"), [a, b], c, {})
    (1024.0, 448.0)
    """
    a, b = inputs
    ta, tb, to = einsum_subscripts(op.subscripts_for(len(a.shape)))
    size: dict[str, int] = {}
    gathered = isinstance(op, Matmul) and op.overlap is not None  # a collective matmul multiplies every block of A
    local_a = (*a.local_shape(mesh)[:-1], a.shape[-1]) if gathered else a.local_shape(mesh)
    for term, shape in ((ta, local_a), (tb, b.local_shape(mesh))):
        size.update(zip(term, shape, strict=True))
    letters = dict.fromkeys(ta + tb)
    products = math.prod(size[x] for x in letters)
    flops = float(2 * products if set(letters) - set(to) else products)
    nbytes = float(
        math.prod(local_a) * itemsize(a.dtype) + math.prod(b.local_shape(mesh)) * itemsize(b.dtype) + math.prod(out.local_shape(mesh)) * itemsize(out.dtype)
    )
    return flops, nbytes


def _lower_collective_matmul(
    op: Matmul, inputs: list[Sharded], out: Sharded, mesh: Mesh, build: ScheduleBuilder, before: Waits, efficiency: float = 1.0
) -> tuple[LoweredOp, Waits]:
    a, b = inputs
    axes = a.sharding[-1]
    gather = Op.of(op.name, "all_gather", (op.inputs[0],), None, axes=axes, axis=len(a.shape) - 1, tiled=True, algorithm=op.algorithm)
    bundled = len(build.bundles)
    record, _ = _lower_collective(gather, a, mesh, build, before)
    if len(build.bundles) > bundled:
        why = "a collective matmul multiplies each block as it arrives"
        raise ProgramError(op.name, "algorithm", f"{record.algorithm} sends bundles, and {why}: pick another algorithm")
    layout, pieces = record.layout, record.pieces
    table = build.columns
    dst, block, piece = table["dst"][-1], table["block"][-1] - record.block_offset, table["piece"][-1]
    arrival = {(int(d), int(k), int(p)): record.transfers.start + i for i, (d, k, p) in enumerate(zip(dst, block, piece, strict=True))}
    local_a = a.local_shape(mesh.shape)
    block_elements = math.prod(local_a)
    columns_b = math.prod(b.shape[1:])
    rows_b = local_a[-1]
    flops = 2.0 * block_elements * columns_b
    nbytes = float(block_elements * itemsize(a.dtype) + rows_b * columns_b * itemsize(b.dtype) + block_elements // rows_b * columns_b * itemsize(out.dtype))
    devices = [d for group in layout.groups for d in group for _ in group]  # (each device a step per block of its group)
    deps = [
        before[d] if group[j] == d else tuple(arrival[(d, j, p)] for p in range(pieces)) for group in layout.groups for d in group for j in range(len(group))
    ]
    codes = build.add_computes(np.array(devices, np.int64), flops, nbytes, None, deps, op.name, eff=efficiency)
    steps: list[list[int]] = [[] for _ in range(mesh.topology.n_devices)]
    for d, code in zip(devices, codes.tolist(), strict=True):
        steps[d].append(code)
    flops_total, bytes_total = flops * len(layout.groups[0]), nbytes * len(layout.groups[0])
    lowered = LoweredOp(op, record.transfers, _span(codes), layout, pieces, record.block_offset, record.algorithm, flops_total, bytes_total, efficiency)
    return lowered, [tuple(s) for s in steps]
