"""The work of HLO compute instructions besides FLOPs (:mod:`netsim.programs.hlo.flops`): bytes touched, cycles.

The bytes an instruction
touches in HBM are its operands read once and its result written once (a
``dynamic-update-slice`` writes in place: the update, read and written). On TPU, compiled
fusions may carry the compiler's own ``estimated_cycles`` in their ``backend_config``.
"""

from __future__ import annotations

import json
import re

from netsim.programs.hlo.shapes import leaves
from netsim.programs.hlo.text import Computation, Instruction, Module

__all__ = ["backend_config", "config_value", "dim_list", "instruction_bytes"]

_DIMS = re.compile(r"\{([\d,\s]*)\}")


def backend_config(instruction: Instruction) -> dict:
    """The instruction's ``backend_config`` as a dict (empty when absent or not JSON)."""
    text = instruction.attrs.get("backend_config")
    if not text:
        return {}
    if text.startswith('"') and text.endswith('"'):  # an escaped JSON string in some printers
        text = text[1:-1].encode().decode("unicode_escape")
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def config_value(instruction: Instruction, key: str) -> object | None:
    """``key``'s value anywhere in the instruction's ``backend_config`` (at the top, or nested), or None.

    Examples
    --------
    >>> from netsim.programs.hlo.text import parse_instruction
    >>> i = parse_instruction('%f = f32[8] fusion(%x), calls=%c, backend_config={"fusion_config":{"estimated_cycles":"120"}}', 1)
    >>> config_value(i, "estimated_cycles"), config_value(i, "nothing")
    ('120', None)
    """
    todo: list[object] = [backend_config(instruction)]
    while todo:
        value = todo.pop(0)
        if isinstance(value, dict):
            if key in value:
                return value[key]
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return None


def dim_list(text: str | None) -> list[int]:
    """An attribute's dimension list (``lhs_contracting_dims={1,2}``) as ints; ``[]`` when absent.

    Examples
    --------
    >>> dim_list("{1, 2}"), dim_list(None)
    ([1, 2], [])
    """
    if not text:
        return []
    match = _DIMS.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"expected dims such as {{1}}, got {text!r}")
    return [int(x) for x in match.group(1).replace(" ", "").split(",") if x]


def _size(shape: object) -> int:
    """Bytes of a shape's arrays in HBM (memory space 0): those the compiler put in on-chip memory move no HBM bytes."""
    return sum(leaf.nbytes for leaf in leaves(shape) if leaf.memory_space == 0)  # type: ignore[arg-type]


def instruction_bytes(instruction: Instruction, shapes: dict[str, object], module: Module | None = None) -> int:
    """HBM bytes an instruction touches: operands read once, the result written once, as XLA's cost analysis counts them.

    Only arrays in HBM count: an operand or result whose layout puts it in another memory
    space (``S(1)``, the on-chip memory XLA's memory space assignment prefetches into)
    moves no HBM bytes (``HloCostAnalysis::GetBytesRead`` filters by memory space alike).

    A ``dynamic-update-slice`` updates its buffer in place: twice its update's bytes, and
    its indices; a ``slice`` or ``dynamic-slice`` reads only what it takes. A ``fusion``
    (given the ``module``) reads each parameter as ``HloCostAnalysis::FusionParameterReadBytes``
    says (openxla/xla ``xla/service/hlo_cost_analysis.cc``): only the slices of it that
    ``slice`` and ``dynamic-slice`` take (a scanned layer's weights out of the stacked
    ones), once for all its other users; and writes its result (a ``dynamic-update-slice``
    root: its update only).

    Examples
    --------
    >>> from netsim.programs.hlo.text import parse_module
    >>> m = parse_module('''HloModule m
    ... %f (w: bf16[48,1024,1024], i: s32[]) -> bf16[1024,1024] {
    ...   %w = bf16[48,1024,1024]{2,1,0} parameter(0)
    ...   %i = s32[] parameter(1)
    ...   %z = s32[] constant(0)
    ...   %d = bf16[1,1024,1024]{2,1,0} dynamic-slice(%w, %i, %z, %z), dynamic_slice_sizes={1,1024,1024}
    ...   ROOT %b = bf16[1024,1024]{1,0} bitcast(%d)
    ... }
    ... ENTRY %main (w: bf16[48,1024,1024], i: s32[]) -> bf16[1024,1024] {
    ...   %w = bf16[48,1024,1024]{2,1,0} parameter(0)
    ...   %i = s32[] parameter(1)
    ...   ROOT %l = bf16[1024,1024]{1,0} fusion(%w, %i), kind=kLoop, calls=%f
    ... }''')
    >>> fusion = m.entry.root
    >>> instruction_bytes(fusion, {i.name: i.shape for i in m.entry.instructions}, m)  # one layer read and written, the index
    4194308
    """
    op = instruction.opcode
    if op == "dynamic-update-slice" and len(instruction.operands) > 2:
        return 2 * _size(shapes[instruction.operands[1]]) + sum(_size(shapes[name]) for name in instruction.operands[2:])
    if op == "dynamic-slice" and instruction.operands:
        return 2 * _size(instruction.shape) + sum(_size(shapes[name]) for name in instruction.operands[1:])
    if op == "slice":
        return 2 * _size(instruction.shape)
    called = instruction.attrs.get("calls") if op == "fusion" else None
    computation = module.computations.get(called.lstrip("%")) if module is not None and called else None
    if computation is None:
        return sum(_size(shapes[name]) for name in instruction.operands) + _size(instruction.shape)
    return _fusion_read(computation, module) + _fusion_written(instruction, computation)  # type: ignore[arg-type]


def _fusion_written(fusion: Instruction, computation: Computation) -> int:
    root, by_name = computation.root, computation.by_name()
    if root.opcode == "dynamic-update-slice":
        return _size(by_name[root.operands[1]].shape)
    if root.opcode == "tuple":
        parts = [by_name[name] for name in root.operands]
        return sum(_size(by_name[p.operands[1]].shape) if p.opcode == "dynamic-update-slice" else _size(p.shape) for p in parts)
    return _size(fusion.shape)


def _users(computation: Computation) -> dict[str, list[Instruction]]:
    users: dict[str, list[Instruction]] = {}
    for i in computation.instructions:
        for name in dict.fromkeys(i.operands):
            users.setdefault(name, []).append(i)
    return users


def _fusion_read(computation: Computation, module: Module) -> int:
    users = _users(computation)
    return sum(_parameter_read(p, users, module) for p in computation.instructions if p.opcode == "parameter")


def _parameter_read(parameter: Instruction, users: dict[str, list[Instruction]], module: Module) -> int:
    """``FusionParameterReadBytes``: what reading one fused parameter costs, by its users."""
    size, trivial = 0, False
    whole = _size(parameter.shape)
    for user in users.get(parameter.name, ()):
        op = user.opcode
        inner = module.computations.get((user.attrs.get("calls") or "").lstrip("%")) if op == "fusion" else None
        if inner is not None:  # a fusion inside: what its own parameters read
            inner_users = _users(inner)
            params = {int(p.literal): p for p in inner.instructions if p.opcode == "parameter"}
            size += sum(_parameter_read(params[k], inner_users, module) for k, name in enumerate(user.operands) if name == parameter.name and k in params)
        elif op == "slice" or (op == "dynamic-slice" and user.operands[0] == parameter.name):
            size += _size(user.shape)
        elif op in ("broadcast", "reshape"):
            size += whole
        elif op == "dynamic-update-slice" and user.operands[0] == parameter.name:
            continue  # the buffer it updates in place: not read
        elif not trivial:  # every other user shares one read
            trivial = True
            size += whole
    return size
