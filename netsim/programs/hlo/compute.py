"""The work of HLO compute instructions: FLOPs of dots and convolutions, bytes touched, cycles.

A ``dot`` does ``2 * prod(result dims) * prod(contracting dims)`` FLOPs (one multiply and
one add per product). A ``convolution`` does ``2 * prod(result dims) * (kernel elements /
output features)``: every output element is a dot over the kernel's spatial window and its
input features (already divided by ``feature_group_count`` in the kernel's shape). A
``fusion`` (or ``call``) does what its called computation does. The bytes an instruction
touches in HBM are its operands read once and its result written once (a
``dynamic-update-slice`` writes in place: the update, read and written). On TPU, compiled
fusions may carry the compiler's own ``estimated_cycles`` in their ``backend_config``.
"""

from __future__ import annotations

import json
import math
import re

from netsim.programs.hlo.shapes import Array, leaves, nbytes
from netsim.programs.hlo.text import Computation, Instruction, Module

__all__ = ["backend_config", "computation_flops", "config_value", "instruction_bytes", "instruction_flops"]

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


def _dim_list(text: str | None) -> list[int]:
    if not text:
        return []
    match = _DIMS.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"expected dims such as {{1}}, got {text!r}")
    return [int(x) for x in match.group(1).replace(" ", "").split(",") if x]


def _array(shape: object, what: str) -> Array:
    if not isinstance(shape, Array):
        raise ValueError(f"{what} must be an array, got the tuple {shape}")
    return shape


def instruction_flops(instruction: Instruction, shapes: dict[str, object], module: Module) -> int:
    """FLOPs of one instruction: dots, convolutions and what fusions and calls hold; 0 otherwise.

    ``shapes`` maps operand names to their shapes in the instruction's computation.
    """
    op = instruction.opcode
    if op == "dot":
        lhs = _array(shapes[instruction.operands[0]], "a dot's left operand")
        contracting = _dim_list(instruction.attrs.get("lhs_contracting_dims"))
        if any(d >= len(lhs.dims) for d in contracting):
            raise ValueError(f"lhs_contracting_dims {contracting} out of range for {lhs}")
        result = _array(instruction.shape, "a dot's result")
        return 2 * result.elements * math.prod(lhs.dims[d] for d in contracting)
    if op == "convolution":
        kernel = _array(shapes[instruction.operands[1]], "a convolution's kernel")
        labels = instruction.attrs.get("dim_labels", "")
        kernel_labels = labels.partition("_")[2].partition("->")[0]
        if len(kernel_labels) != len(kernel.dims) or "o" not in kernel_labels:
            raise ValueError(f"dim_labels={labels!r} does not match the kernel {kernel}")
        outputs = kernel.dims[kernel_labels.index("o")]
        result = _array(instruction.shape, "a convolution's result")
        return 2 * result.elements * (kernel.elements // outputs)
    called = instruction.attrs.get("calls") or (instruction.attrs.get("to_apply") if op == "call" else None)
    if op in ("fusion", "call") and called:
        return computation_flops(module, called.lstrip("%"))
    return 0


def computation_flops(module: Module, name: str) -> int:
    """FLOPs of every dot and convolution in a computation (fusions inside it included)."""
    computation: Computation | None = module.computations.get(name)
    if computation is None:
        raise ValueError(f"calls a computation {name!r} that the module does not define")
    shapes = {i.name: i.shape for i in computation.instructions}
    return sum(instruction_flops(i, shapes, module) for i in computation.instructions)


def instruction_bytes(instruction: Instruction, shapes: dict[str, object]) -> int:
    """HBM bytes an instruction touches: operands read once, the result written once.

    A ``dynamic-update-slice`` updates its buffer in place: twice its update's bytes.
    """
    if instruction.opcode == "dynamic-update-slice" and len(instruction.operands) > 1:
        return 2 * nbytes(shapes[instruction.operands[1]])  # type: ignore[arg-type]
    read = sum(sum(leaf.nbytes for leaf in leaves(shapes[name])) for name in instruction.operands)  # type: ignore[arg-type]
    return read + nbytes(instruction.shape)
