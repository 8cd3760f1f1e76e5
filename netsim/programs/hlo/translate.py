"""An HLO module as a :class:`~netsim.programs.model.Program`, lowered like any program.

Each step of the module (:mod:`netsim.programs.hlo.flatten`) becomes one op of the
program model, named by its label (a repeated label gets ``#2``, ``#3``, ...), and
waiting (``after``) for the steps it depends on; the program is then lowered by
:func:`netsim.programs.lowering.lower`, the same lowering a program file takes.

Collectives
    Each reads an array of its own, one device's operands (``Sharded`` without
    sharding: a collective over explicit groups takes the device's array whole, so
    the run is timing-only). Device ids are placed on the slice's chips by the
    device map (:mod:`netsim.programs.hlo.devices`). A group that is the set of
    devices along some axes of the module's mesh (or, without one, of the slice's
    own axes) is given as those axes' :class:`~netsim.network.device_mesh.AxisGroups`:
    it runs as a collective over mesh axes (the default multi-axis algorithm,
    rings or lines as the slice has them); any other group runs in the order the
    module lists it. A ragged all-to-all is timed at its largest size, padded to
    split evenly; a permute in which every device sends to itself moves nothing.
Compute
    Each compute step is a ``compute`` op on every device:
    ``max(MXU FLOPs / (peak_flops * efficiency), bytes / hbm_bandwidth)``, its MXU FLOPs
    those of its dots and convolutions padded to the chip's matrix unit
    (:func:`netsim.programs.hlo.mxu.padded_flops`; a custom-call's cost estimate as it
    is), the efficiency the calibration's ``compute_efficiency`` (1 under ``nominal``);
    or the compiler's ``estimated_cycles`` over a clock rate when one is given
    (``seconds``). A copy (``copy-start``, a host transfer) is a ``compute`` op on the
    device's DMA engine (``unit="dma"``): its bytes at the HBM bandwidth. A step
    with neither FLOPs nor bytes takes no time (``seconds=0``). On a chip without the
    figures the roofline needs (``peak_flops``, ``hbm_bandwidth``) and without a clock,
    compute is unknown: the step takes no time, its record says so, and the
    communication is simulated all the same.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netsim.analysis.hlo_stats import COMPUTE_UNKNOWN
from netsim.network.device_mesh import AxisGroups, Mesh
from netsim.network.device_order import physical_ring
from netsim.network.presets import mxu_tile
from netsim.network.topology import Topology
from netsim.programs.hlo.devices import DeviceMap
from netsim.programs.hlo.mxu import padded_flops
from netsim.programs.hlo.ops import Collective, Compute, HloProgram, Step
from netsim.programs.hlo.strategies import BUNDLED_ABOVE, compiler_plan, read_algorithm, streaming_transfers
from netsim.programs.lowering import Lowered, lower
from netsim.programs.model import Op, Program, Sharded
from netsim.semantics import ops as registry

__all__ = ["HLO_TO_JAX", "HloLowered", "HloTranslation", "StepRecord", "lower_hlo", "translate"]

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
    """How one HLO step was translated: its op in the program, and for a collective the axes it ran over."""

    step: Any
    """The :class:`~netsim.programs.hlo.ops.Step`."""
    index: int
    """Its position in ``Program.ops`` (and ``Lowered.ops``)."""
    axes: tuple[str, ...] = ()
    """The mesh axes its groups are the devices along (empty: groups as listed)."""
    note: str = ""


@dataclass(frozen=True)
class HloTranslation:
    """A module as a program: the program, the mesh to lower it on, and each step's record."""

    program: Program
    mesh: Mesh
    """One axis, ``devices``, over the slice's chips in order (the groups name chips)."""
    records: tuple[StepRecord, ...]
    mesh_source: str
    """Which mesh collectives' groups were matched against: the module's (device map) or the slice's axes."""


@dataclass(frozen=True)
class HloLowered:
    """A module lowered: the program model's :class:`~netsim.programs.lowering.Lowered` and each step's record."""

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


@dataclass
class _Context:
    """What every step of one translation shares: device placement, the meshes to match, the arrays so far."""

    nodes: list[int]
    meshes: list[Mesh]
    arrays: dict[str, Sharded]
    matched: dict = field(default_factory=dict)
    permute_axes: dict = field(default_factory=dict)  # a permute's mesh axes, by its pairs
    algorithm: str = "netsim"
    dims: tuple[int, ...] = ()


def translate(
    module: HloProgram, topology: Topology, device_map: DeviceMap, clock_hz: float | None = None, name: str | None = None, algorithm: str = "netsim"
) -> HloTranslation:
    """The module ``module`` as a program on ``topology``, device ids placed by ``device_map``.

    Parameters
    ----------
    module : HloProgram
        The module's steps (:func:`netsim.programs.hlo.load_hlo`).
    topology : Topology
        The slice: as many chips as the module has devices.
    device_map : DeviceMap
        Where each device id runs.
    clock_hz : float, optional
        Compute steps with the compiler's ``estimated_cycles`` take ``cycles / clock_hz``.
    name : str, optional
        The program's name (default: the module's).
    algorithm : {"netsim", "compiler"}
        ``compiler``: each collective that names the TPU compiler's algorithm is played
        with it (:func:`netsim.programs.hlo.strategies.compiler_plan`); ``netsim``: with
        netsim's own choice.

    Returns
    -------
    HloTranslation

    Raises
    ------
    ValueError
        If the module's devices do not fit the slice.

    Examples
    --------
    >>> from netsim.network.presets import tpu_slice
    >>> from netsim.programs.hlo import hlo_from_text
    >>> module = hlo_from_text('''HloModule m, num_partitions=4
    ... ENTRY %main (p: f32[64]) -> f32[256] {
    ...   %p = f32[64]{0} parameter(0)
    ...   ROOT %ag = f32[256]{0} all-gather(%p), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
    ... }''')
    >>> t = translate(module, tpu_slice("tpu-v5e:2x2"), DeviceMap((None,) * 4, (0,) * 4, {}, "row-major"))
    >>> (op,) = t.program.ops
    >>> op.op, op.inputs, op.groups.axes, t.program.arrays_after()[op.output].shape
    ('all_gather', ('ag:in',), ('ici0', 'ici1'), (256,))
    """
    n = topology.n_devices
    nodes = device_map.nodes(tuple(topology.dims), n, getattr(topology, "n_slices", 1))
    meshes = []
    if device_map.mesh:
        meshes.append(Mesh(device_map.mesh, topology, devices=nodes))
    meshes.append(Mesh({f"ici{i}": d for i, d in enumerate(topology.dims)}, topology))
    if algorithm not in ("netsim", "compiler"):
        raise ValueError(f"algorithm must be 'netsim' or 'compiler', got {algorithm!r}")
    context = _Context(nodes, meshes, {}, algorithm=algorithm, dims=tuple(topology.dims))
    facts = topology.device(0)
    rates = {"peak_flops": facts.get("peak_flops"), "hbm_bandwidth": facts.get("hbm_bandwidth_Bps")}
    tile = mxu_tile(topology)
    names = _names(module.steps)
    ops: list[Op] = []
    records: list[StepRecord] = []
    for step, label in zip(module.steps, names, strict=True):
        after = tuple(names[dep] for dep in step.deps)
        if isinstance(step.op, Compute):
            seconds = _seconds(step.op, clock_hz)
            mxu = padded_flops(step.op.matmuls, tile) + (step.op.flops if step.op.opcode == "custom-call" else 0)
            if seconds is None and mxu <= 0 and step.op.nbytes <= 0:  # vector work on on-chip memory only: no MXU, no HBM time
                seconds = 0.0
            missing = [name for name, amount in (("peak_flops", mxu), ("hbm_bandwidth", step.op.nbytes)) if amount > 0 and not rates[name]]
            flops, nbytes, note = float(mxu), float(step.op.nbytes), ""
            if seconds is None and missing == ["peak_flops"] and rates["hbm_bandwidth"]:
                flops, note = 0.0, "no peak_flops: HBM bytes only"
            elif seconds is None and missing == ["hbm_bandwidth"] and rates["peak_flops"]:
                nbytes, note = 0.0, "no hbm_bandwidth: FLOPs only"
            elif seconds is None and missing:  # the roofline cannot time it: the chip has no figures
                seconds, note = 0.0, f"{COMPUTE_UNKNOWN}: the chip has no {' or '.join(missing)}"
            ops.append(Op.of(label, "compute", after=after, flops=flops, bytes=nbytes, seconds=seconds, unit=step.op.unit))
            records.append(StepRecord(step, len(ops) - 1, note=note))
            continue
        op, axes, note = _collective(step.op, label, after, context)
        ops.append(op)
        if step.op.op == "collective-permute" and all(s == t for s, t in step.op.pairs):
            note = "every device sends to itself: nothing moves"
        elif step.op.op == "ragged-all-to-all":
            note = "ragged: timed at its largest size, a dense all_to_all of the whole input buffer"
        records.append(StepRecord(step, len(ops) - 1, axes, note))
    program = Program(name or module.module, {"devices": n}, context.arrays, tuple(ops))
    source = "the module's mesh" if device_map.mesh else "the slice's axes"
    return HloTranslation(program, Mesh({"devices": n}, topology), tuple(records), source)


def lower_hlo(
    module: HloProgram, topology: Topology, device_map: DeviceMap, clock_hz: float | None = None, name: str | None = None, algorithm: str = "netsim"
) -> HloLowered:
    """The module translated (:func:`translate`) and lowered by :func:`netsim.programs.lowering.lower`.

    Examples
    --------
    >>> from netsim.network.presets import tpu_slice
    >>> from netsim.programs.hlo import hlo_from_text
    >>> module = hlo_from_text('''HloModule m, num_partitions=4
    ... ENTRY %main (p: f32[64]) -> f32[256] {
    ...   %p = f32[64]{0} parameter(0)
    ...   ROOT %ag = f32[256]{0} all-gather(%p), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
    ... }''')
    >>> low = lower_hlo(module, tpu_slice("tpu-v5e:2x2"), DeviceMap((None,) * 4, (0,) * 4, {}, "row-major"))
    >>> low.records[0].axes, low.lowered.ops[0].op.op, low.lowered.ops[0].algorithm, len(low.lowered.schedule.transfers) > 0
    (('ici0', 'ici1'), 'all_gather', 'multiaxis', True)
    """
    translation = translate(module, topology, device_map, clock_hz, name, algorithm)
    return HloLowered(lower(translation.program, translation.mesh), translation.records, translation.mesh_source)


def _names(steps: list[Step]) -> list[str]:
    """Each step's op name: its label, with ``#k`` for the k-th time a label comes back (a computation called twice)."""
    seen: dict[str, int] = {}
    names = []
    for step in steps:
        count = seen[step.label] = seen.get(step.label, 0) + 1
        names.append(step.label if count == 1 else f"{step.label}#{count}")
    return names


def _seconds(compute: Compute, clock_hz: float | None) -> float | None:
    """A compute step's given time: its estimated cycles over the clock rate, or none when the roofline times it (0 for no work at all)."""
    seconds = compute.estimated_cycles / clock_hz if compute.estimated_cycles is not None and clock_hz else None
    if seconds is None and compute.flops <= 0 and compute.nbytes <= 0:
        seconds = 0.0
    return seconds


def _collective(collective: Collective, label: str, after: tuple[str, ...], context: _Context) -> tuple[Op, tuple[str, ...], str]:
    """The collective's op, the mesh axes it runs over (empty: its groups as listed) and a note."""
    kind = HLO_TO_JAX[collective.op]
    nodes = context.nodes
    shape, dtype, dimension = _proxy(collective)
    array = f"{label}:in"
    if not registry.COLLECTIVES[kind].grouped:  # source-target pairs
        pairs = tuple((nodes[s], nodes[t]) for s, t in collective.pairs)
        context.arrays[array] = Sharded(shape, dtype)
        axes = context.permute_axes.get(pairs)
        if axes is None:  # (a loop's permutes repeat their pairs on every trip: found once a translation)
            axes = context.permute_axes[pairs] = _permute_axes([(s, t) for s, t in pairs if s != t], context.meshes[0])
        return Op.of(label, kind, (array,), f"{label}:out", after=after, perm=pairs), axes, ""
    node_groups = [[nodes[d] for d in g] for g in collective.groups]
    groups = _mesh_groups(node_groups, context.meshes, context.matched)
    if kind == "all_to_all" and shape[dimension] % len(node_groups[0]):
        shape = (math.prod(shape) + (-math.prod(shape)) % len(node_groups[0]),)  # ragged: padded to split evenly
        dimension = 0
    context.arrays[array] = Sharded(shape, dtype)
    params = dict.fromkeys(registry.COLLECTIVES[kind].hlo_dimension, dimension)
    if "tiled" in registry.COLLECTIVES[kind].arguments:  # HLO's collectives keep the rank: jax.lax's tiled forms
        params["tiled"] = True
    given: AxisGroups | tuple = groups if groups is not None else tuple(tuple(g) for g in node_groups)
    note = ""
    read = read_algorithm(collective.compiler_algorithm) if context.algorithm == "compiler" else None
    if read is not None:
        chosen, where, note = compiler_plan(read, registry.COLLECTIVES[kind].pattern)
        if where == "ring":  # one ring per group, in the compiler's ring order when it reorders
            given = tuple(tuple(physical_ring(g, context.dims)) if read.reordered else tuple(g) for g in node_groups)
            params["algorithm"] = chosen
        elif where == "axes":  # rings along the slice's own axes
            physical = _mesh_groups(node_groups, context.meshes[-1:], {})
            if physical is None:
                note += "; its groups are not along the slice's axes: netsim's own algorithm"
            else:
                given, params["algorithm"] = physical, chosen
                streamed = streaming_transfers(registry.COLLECTIVES[kind].pattern, physical.shape, len(physical.groups))
                if chosen == "multiaxis" and streamed > BUNDLED_ABOVE:
                    params["algorithm"] = "multiaxis_bundled"
                    note += f"; one message per ring step (streamed, its {streamed:,} transfers would be {streamed / BUNDLED_ABOVE:.0f}x the bound)"
    op = Op.of(label, kind, (array,), f"{label}:out", after=after, groups=given, **params)
    return op, groups.axes if groups is not None else (), note


def _permute_axes(pairs: list[tuple[int, int]], mesh: Mesh) -> tuple[str, ...]:
    """The mesh axes along which a permute's sources and targets differ."""
    where = {int(d): index for index, d in np.ndenumerate(mesh.devices)}
    moved = {a for s, t in pairs for a, (i, j) in enumerate(zip(where[s], where[t], strict=True)) if i != j}
    return tuple(mesh.axis_names[a] for a in sorted(moved))
