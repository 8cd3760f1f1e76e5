"""Modules compiled for several slices: the TPU compiler's megascale transfers, simulated over the DCN.

A module compiled for several slices (``get_topology_desc(..., num_slices=2)``) is one
slice's program: ``num_partitions`` is the devices of one slice, and what crosses slices is
written as host transfers for the megascale runtime, e.g. a ``psum`` over a mesh axis that
spans the slices::

    %send = (bf16[64,8,128], u32[], token[]) send(%x, %after-all), channel_id=2, is_host_transfer=true,
        frontend_attributes={_xla_host_transfer_handler_name="xla_megascale_runtime",
        _xla_host_transfer_rendezvous="psum.7_0",_xla_megascale_reduce_operation="SUM",
        _xla_megascale_target="{1,2}x{0:15}",_xla_megascale_transfer_type="ALL_REDUCE"}
    %recv = (bf16[64,8,128], u32[], token[]) recv(%after-all), ... the same rendezvous ...
    %send-done = token[] send-done(%send), ...
    %recv-done = (bf16[64,8,128], token[]) recv-done(%recv), ...

(openxla/xla ``xla/side_effect_util.cc`` names the attributes; xprof's DCN analysis reads the
transfer types ``ALL_REDUCE``, ``ALL_GATHER``, ``REDUCE_SCATTER``, ``ALL_TO_ALL``,
``ONE_TO_ONE``.) netsim reads each such pair as one asynchronous collective
(:func:`megascale_collective`; the ``send`` starts it, the ``-done`` s wait for it) and, on a
topology of several slices such as ``tpu-v5e:4x4x2slices``, plays the module on every slice
at once (:func:`across_slices`): device ``d`` of slice ``s`` is device ``s * M + d``
(slice-major, as :mod:`netsim.network.slices` numbers them), every collective inside a slice
runs in each slice, and a megascale ``ALL_REDUCE`` is an all-reduce of each device with the
same device of every other slice, over the DCN. On a single slice the megascale collectives
cannot run: they are listed as not modelled (:func:`without_slices`). Other transfer types
are listed as not modelled wherever the module runs.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from netsim.programs.hlo.devices import DeviceMap
from netsim.programs.hlo.ops import Collective, Compute, HloProgram, Step, Unmodelled
from netsim.programs.hlo.shapes import leaves

__all__ = ["DCN_COLLECTIVES", "across_slices", "has_dcn", "megascale_collective", "rendezvous", "slice_device_map", "unsupported_reason", "without_slices"]

DCN_COLLECTIVES = {"ALL_REDUCE": "all-reduce"}
"""The megascale transfer types netsim simulates, and the HLO collective each is played as."""

_ATTRIBUTE = re.compile(r'(_xla_megascale_transfer_type|_xla_host_transfer_rendezvous|_xla_host_transfer_handler_name)="([^"]*)"')


def _attributes(instruction: Any) -> dict[str, str]:
    return dict(_ATTRIBUTE.findall(instruction.attrs.get("frontend_attributes", "")))


def rendezvous(instruction: Any) -> str | None:
    """The rendezvous name that pairs a megascale ``send`` with its ``recv``; None for any other instruction."""
    found = _attributes(instruction)
    if "_xla_megascale_transfer_type" not in found:
        return None
    return "megascale:" + found.get("_xla_host_transfer_rendezvous", instruction.name)


def megascale_collective(instruction: Any, operand_shape: Any, devices: int) -> Collective | None:
    """A megascale ``send`` as a collective across slices (one-member groups until the slices are known), or None.

    None for a ``send`` that is not a megascale transfer of a type in :data:`DCN_COLLECTIVES`.

    Examples
    --------
    >>> from netsim.programs.hlo.text import parse_module
    >>> module = parse_module('''HloModule m, num_partitions=2
    ... ENTRY %main (p: bf16[8,128]) -> token[] {
    ...   %p = bf16[8,128]{1,0} parameter(0)
    ...   %a = token[] after-all()
    ...   ROOT %send = (bf16[8,128]{1,0}, u32[], token[]) send(%p, %a), channel_id=2, is_host_transfer=true, '''
    ...   '''frontend_attributes={_xla_host_transfer_rendezvous="psum.7_0",_xla_megascale_transfer_type="ALL_REDUCE"}
    ... }''')
    >>> send = module.entry.root
    >>> c = megascale_collective(send, module.entry.instructions[0].shape, 2)
    >>> c.op, c.dcn, c.nbytes, c.groups, c.asynchronous
    ('all-reduce', 'ALL_REDUCE', 2048, [[0], [1]], True)
    """
    kind = _attributes(instruction).get("_xla_megascale_transfer_type")
    if instruction.opcode != "send" or kind not in DCN_COLLECTIVES:
        return None
    operands = tuple(leaves(operand_shape))
    return Collective(
        name=instruction.name,
        op=DCN_COLLECTIVES[kind],
        operands=operands,
        results=operands,
        groups=[[d] for d in range(devices)],
        asynchronous=True,
        line=instruction.line,
        dcn=kind,
    )


def unsupported_reason(instruction: Any) -> str | None:
    """Why a megascale transfer is not simulated (a transfer type netsim does not play); None when it is, or is not megascale."""
    kind = _attributes(instruction).get("_xla_megascale_transfer_type")
    if kind is None or kind in DCN_COLLECTIVES:
        return None
    return f"megascale {kind} across slices: not simulated (netsim plays {', '.join(DCN_COLLECTIVES)})"


def has_dcn(program: HloProgram) -> bool:
    """Whether the module holds megascale collectives across slices."""
    return any(isinstance(step.op, Collective) and step.op.dcn for step in program.steps)


def across_slices(program: HloProgram, slices: int) -> HloProgram:
    """One slice's module played on ``slices`` slices at once: ``slices`` times the devices, device ``s * M + d`` is ``d`` of slice ``s``.

    Collectives inside a slice run in every slice (their groups and pairs repeated per
    slice); a megascale collective's group is one device and its peers in every other slice.

    Examples
    --------
    >>> from netsim.programs.hlo.ops import Collective, HloProgram, Step
    >>> from netsim.programs.hlo.shapes import Array
    >>> ici = Collective("ag", "all-gather", (Array("f32", (4,)),), (Array("f32", (8,)),), [[0, 1]])
    >>> dcn = Collective("send", "all-reduce", (Array("f32", (4,)),), (Array("f32", (4,)),), [[0], [1]], asynchronous=True, dcn="ALL_REDUCE")
    >>> two = across_slices(HloProgram("m", 2, [Step(0, ici, ()), Step(1, dcn, (0,))], [], True), 2)
    >>> two.devices, two.steps[0].op.groups, two.steps[1].op.groups
    (4, [[0, 1], [2, 3]], [[0, 2], [1, 3]])
    """
    n = program.devices

    def spread(step: Step) -> Step:
        op = step.op
        if not isinstance(op, Collective):
            return step
        if op.dcn:
            groups = [[d + s * n for s in range(slices)] for g in op.groups for d in g]
            return dataclasses.replace(step, op=dataclasses.replace(op, groups=groups))
        groups = [[d + s * n for d in g] for s in range(slices) for g in op.groups]
        pairs = [(a + s * n, b + s * n) for s in range(slices) for a, b in op.pairs]
        return dataclasses.replace(step, op=dataclasses.replace(op, groups=groups, pairs=pairs))

    return dataclasses.replace(program, devices=n * slices, steps=[spread(step) for step in program.steps])


def without_slices(program: HloProgram) -> HloProgram:
    """The module on one slice: each megascale collective takes no time and is listed as not modelled (it needs several slices)."""
    if not has_dcn(program):
        return program
    steps, unmodelled, listed = [], list(program.unmodelled), set()
    for step in program.steps:
        op = step.op
        if isinstance(op, Collective) and op.dcn:
            if (op.name, op.line) not in listed:
                listed.add((op.name, op.line))
                reason = f"megascale {op.dcn} across slices: simulated on a topology of several slices (e.g. tpu-v5e:4x4x2slices), not on one"
                unmodelled.append(Unmodelled(op.name, "send", op.line, reason))
            step = dataclasses.replace(step, op=Compute(op.name, "send", 0, 0, None, op.line))
        steps.append(step)
    return dataclasses.replace(program, steps=steps, unmodelled=unmodelled)


def slice_device_map(device_map: DeviceMap, slices: int) -> DeviceMap:
    """One slice's device map on ``slices`` slices: device ``s * M + d`` on slice ``s`` at the coordinates of ``d``, the mesh given a ``slice`` axis first.

    Examples
    --------
    >>> m = slice_device_map(DeviceMap(((0, 0), (1, 0)), (0, 0), {"x": 2}, "m.devices.json"), 2)
    >>> m.coords, m.slices, m.mesh
    (((0, 0), (1, 0), (0, 0), (1, 0)), (0, 0, 1, 1), {'slice': 2, 'x': 2})
    >>> m.nodes((2, 2, 1), 4, n_slices=2)
    [0, 1, 2, 3]
    """
    coords = device_map.coords * slices
    on_slice = tuple(s for s in range(slices) for _ in device_map.coords)
    mesh = {"slice": slices, **device_map.mesh} if device_map.mesh else {}
    source = f"{device_map.source}, on each of {slices} slices"
    return DeviceMap(coords, device_map.cores * slices, mesh, source, dict(device_map.compiler), slices=on_slice)
