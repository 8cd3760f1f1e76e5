"""An HLO module's steps lowered to one schedule on a slice: the program model's transfers and compute steps.

Every collective step is planned as the same collective would be in a scenario
(:func:`~netsim.algorithms.schedule.build_schedule`) over its device groups, mapped from
the module's device ids to the slice's chips by the device map
(:mod:`netsim.scenario.hlo.devices`). A group that is the set of devices along some axes
of the module's mesh (or, without one, of the slice's own axes) runs as a collective over
those mesh axes (the default multi-axis algorithm, rings or lines as the slice has them);
any other group runs in the order the module lists it. Every compute step becomes one
compute step per device: ``max(flops / peak_flops, bytes / hbm_bandwidth)``, or the
compiler's ``estimated_cycles`` over a clock rate when one is given.

A step starts on a device once the steps it depends on are done there (arrivals there
for a collective, its compute steps for a compute step), exactly as
:func:`netsim.algorithms.program_lowering.lower` orders a program's ops.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netsim.algorithms.direct import permutation
from netsim.algorithms.program import Op, Program, Sharded
from netsim.algorithms.program_lowering import Lowered, LoweredOp, _arrivals, _Builder, _span
from netsim.algorithms.registry import check_algorithm, default_algorithm
from netsim.algorithms.schedule import build_schedule
from netsim.network.device_mesh import AxisGroups, Mesh
from netsim.network.topology import Topology
from netsim.scenario.hlo.devices import DeviceMap
from netsim.scenario.hlo.ops import Collective, Compute, HloProgram
from netsim.semantics import ops as registry

__all__ = ["HLO_TO_JAX", "HloLowered", "StepRecord", "lower_hlo"]

HLO_TO_JAX = registry.hlo_collectives()
"""Each HLO collective and the ``jax.lax`` collective netsim plays it as (:data:`netsim.semantics.ops.COLLECTIVES`)."""

_NUMPY = {
    "pred": "bool",
    "s8": "int8",
    "s16": "int16",
    "s32": "int32",
    "s64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "c64": "complex64",
    "c128": "complex128",
}


@dataclass(frozen=True)
class StepRecord:
    """How one HLO step was lowered: its op in the schedule, and for a collective the axes it ran over."""

    step: Any
    """The :class:`~netsim.scenario.hlo.ops.Step`."""
    index: int
    """Its position in ``Lowered.ops``."""
    axes: tuple[str, ...] = ()
    """The mesh axes its groups are the devices along (empty: groups as listed)."""
    note: str = ""


@dataclass(frozen=True)
class HloLowered:
    """A module lowered: the program model's :class:`Lowered` and each step's record."""

    lowered: Lowered
    records: tuple[StepRecord, ...]
    mesh_source: str
    """Which mesh collectives' groups were matched against: the module's (device map) or the slice's axes."""


def _proxy(collective: Collective) -> tuple[tuple[int, ...], str, int]:
    """(per-device shape, dtype name, the dimension) one device's operands stand for."""
    operands = collective.operands
    dtypes = {a.dtype for a in operands}
    dtype = _NUMPY.get(next(iter(dtypes))) if len(dtypes) == 1 else None
    if collective.op == "all-to-all" and len(operands) > 1 and dtype is not None and len({a.dims for a in operands}) == 1:
        return (len(operands), *operands[0].dims), dtype, 0  # the tuple form: operand j goes to peer j
    if len(operands) == 1 and dtype is not None and operands[0].dims:
        return operands[0].dims, dtype, collective.dimension or 0
    if dtype is not None:
        return (sum(a.elements for a in operands),), dtype, 0
    return (collective.nbytes,), "uint8", 0


def _mesh_groups(groups: list[list[int]], meshes: list[Mesh], seen: dict) -> AxisGroups | None:
    """The groups as a collective over axes of one of ``meshes`` (same sets of devices), if they are one."""
    wanted = tuple(sorted(tuple(sorted(g)) for g in groups))
    if wanted not in seen:
        seen[wanted] = _match(wanted, meshes)
    return seen[wanted]


def _match(wanted: tuple, meshes: list[Mesh]) -> AxisGroups | None:
    for mesh in meshes:
        names = mesh.axis_names
        for size in range(1, len(names) + 1):
            for axes in itertools.combinations(names, size):
                candidate = mesh.groups(list(axes))
                if tuple(sorted(tuple(sorted(g)) for g in candidate.groups)) == wanted:
                    return candidate
    return None


def _layout(op: str, shape: tuple[int, ...], dimension: int, groups: Any, n: int, pairs: list[tuple[int, int]]) -> Any:
    proxy = np.broadcast_to(np.zeros((), np.uint8), (n, *shape))
    collective = registry.COLLECTIVES[op]
    arguments = {**{k: v for k, v in collective.program.items() if k in collective.arguments}, **dict.fromkeys(collective.hlo_dimension, dimension)}
    if "perm" in arguments:
        arguments["perm"] = pairs
    return collective.check(proxy, groups, **arguments)


def lower_hlo(program: HloProgram, topology: Topology, device_map: DeviceMap, clock_hz: float | None = None, name: str | None = None) -> HloLowered:
    """Lower a module's steps onto ``topology``, device ids placed by ``device_map``.

    Raises
    ------
    ValueError
        If the module's devices do not fit the slice, or a collective cannot be planned.

    Examples
    --------
    >>> from netsim.network.presets import tpu_slice
    >>> from netsim.scenario.hlo import hlo_from_text
    >>> from netsim.scenario.hlo.devices import DeviceMap
    >>> module = hlo_from_text('''HloModule m, num_partitions=4
    ... ENTRY %main (p: f32[64]) -> f32[256] {
    ...   %p = f32[64]{0} parameter(0)
    ...   ROOT %ag = f32[256]{0} all-gather(%p), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
    ... }''')
    >>> low = lower_hlo(module, tpu_slice("tpu-v5e:2x2"), DeviceMap((None,) * 4, (0,) * 4, {}, "row-major"))
    >>> low.records[0].axes, low.lowered.ops[0].op.op, len(low.lowered.schedule.transfers) > 0
    (('ici0', 'ici1'), 'all_gather', True)
    """
    n = topology.n_devices
    nodes = device_map.nodes(tuple(topology.dims), n)
    meshes = []
    if device_map.mesh:
        meshes.append(Mesh(device_map.mesh, topology, devices=nodes))
    physical = Mesh({f"ici{i}": d for i, d in enumerate(topology.dims)}, topology)
    meshes.append(physical)
    build = _Builder(n)
    after: list[list[tuple[int, ...]]] = []
    lowered_ops: list[LoweredOp] = []
    records: list[StepRecord] = []
    arrays: dict[str, Sharded] = {}
    peak = topology.device(0).get("peak_flops")
    context = _Context(nodes, meshes, build, arrays)
    for step in program.steps:
        before = [tuple(dict.fromkeys(s for dep in step.deps for s in after[dep][d])) for d in range(n)]
        op = step.op
        label = step.label
        if isinstance(op, Compute):
            seconds = op.estimated_cycles / clock_hz if op.estimated_cycles is not None and clock_hz else None
            codes = [build.add_compute(d, float(op.flops), float(op.nbytes), seconds, before[d], label) for d in range(n)]
            model = Op(label, "compute", flops=float(op.flops), bytes=float(op.nbytes), seconds=seconds)
            lowered_ops.append(LoweredOp(model, range(0), _span(codes), flops=float(op.flops), bytes=float(op.nbytes)))
            after.append([(c,) for c in codes])
            records.append(StepRecord(step, len(lowered_ops) - 1, note="" if peak or seconds is not None else "no peak_flops: HBM bytes only"))
            continue
        if op.op == "collective-permute" and all(s == t for s, t in op.pairs):  # nothing moves: it takes no time
            lowered_ops.append(LoweredOp(Op(label, "compute", seconds=0.0), range(0), range(0)))
            after.append(before)
            records.append(StepRecord(step, len(lowered_ops) - 1, (), "every device sends to itself: nothing moves"))
            continue
        record, done, axes = _collective(op, label, context, before)
        lowered_ops.append(record)
        after.append(done)
        note = "ragged: timed at its largest size, a dense all_to_all of the whole input buffer" if op.op == "ragged-all-to-all" else ""
        records.append(StepRecord(step, len(lowered_ops) - 1, axes, note))
    model_program = Program(name or program.module, {"devices": n}, arrays, tuple(r.op for r in lowered_ops))
    lowered = Lowered(model_program, arrays, Mesh({"devices": n}, topology), build.schedule(), tuple(lowered_ops))
    source = "the module's mesh" if device_map.mesh else "the slice's axes"
    return HloLowered(lowered, tuple(records), source)


@dataclass
class _Context:
    """What every collective of one lowering shares: device placement, meshes to match, the schedule being built."""

    nodes: list[int]
    meshes: list[Mesh]
    build: _Builder
    arrays: dict[str, Sharded]
    matched: dict = field(default_factory=dict)


def _collective(
    collective: Collective, label: str, context: _Context, before: list[tuple[int, ...]]
) -> tuple[LoweredOp, list[tuple[int, ...]], tuple[str, ...]]:
    """The collective's op in the schedule, what each device waits for after it, and the mesh axes it ran over."""
    kind = HLO_TO_JAX[collective.op]
    nodes, arrays, n = context.nodes, context.arrays, len(context.nodes)
    shape, dtype, dimension = _proxy(collective)
    array = f"{label}:in"
    arrays[array] = Sharded(shape, dtype)
    model = Op(label, kind, (array,), f"{label}:out")
    if not registry.COLLECTIVES[kind].grouped:  # source-target pairs
        pairs = [(nodes[s], nodes[t]) for s, t in collective.pairs if s != t]
        layout = _layout(kind, shape, dimension, None, n, pairs)
        schedule, algorithm, axes = permutation(layout.groups), "direct", _permute_axes(pairs, context.meshes[0])
    else:
        node_groups = [[nodes[d] for d in g] for g in collective.groups]
        groups: Any = _mesh_groups(node_groups, context.meshes, context.matched) or node_groups
        if kind == "all_to_all" and shape[dimension] % len(node_groups[0]):
            shape = (math.prod(shape) + (-math.prod(shape)) % len(node_groups[0]),)  # ragged: padded to split evenly
            arrays[array] = Sharded(shape, dtype)
            dimension = 0
        layout = _layout(kind, shape, dimension, groups, n, [])
        algorithm = check_algorithm(layout.pattern, len(layout.groups[0]), default_algorithm(layout.pattern, over_mesh_axes=isinstance(groups, AxisGroups)))
        kwargs = {"group_shape": groups.shape, "wraparound": groups.wraparound} if isinstance(groups, AxisGroups) else {}
        schedule = build_schedule(layout.pattern, layout.groups, algorithm, **kwargs)
        axes = groups.axes if isinstance(groups, AxisGroups) else ()
    span, offset, dst, _ = context.build.add_schedule(schedule, before)
    return LoweredOp(model, span, range(0), layout, schedule.pieces, offset, algorithm), _arrivals(dst, span.start, before), axes


def _permute_axes(pairs: list[tuple[int, int]], mesh: Mesh) -> tuple[str, ...]:
    """The mesh axes along which a permute's sources and targets differ."""
    where = {int(d): index for index, d in np.ndenumerate(mesh.devices)}
    moved = {a for s, t in pairs for a, (i, j) in enumerate(zip(where[s], where[t], strict=True)) if i != j}
    return tuple(mesh.axis_names[a] for a in sorted(moved))
