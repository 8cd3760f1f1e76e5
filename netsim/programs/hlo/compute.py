"""The work of HLO compute instructions besides FLOPs (:mod:`netsim.programs.hlo.flops`): bytes touched, cycles.

The bytes an instruction
touches in HBM are its operands read once and its result written once (a
``dynamic-update-slice`` writes in place: the update, read and written). On TPU, compiled
fusions may carry the compiler's own ``estimated_cycles`` in their ``backend_config``.
"""

from __future__ import annotations

import json
import re

from netsim.programs.hlo.shapes import leaves, nbytes
from netsim.programs.hlo.text import Instruction

__all__ = ["backend_config", "config_value", "instruction_bytes"]

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


def instruction_bytes(instruction: Instruction, shapes: dict[str, object]) -> int:
    """HBM bytes an instruction touches: operands read once, the result written once.

    A ``dynamic-update-slice`` updates its buffer in place: twice its update's bytes.
    """
    if instruction.opcode == "dynamic-update-slice" and len(instruction.operands) > 1:
        return 2 * nbytes(shapes[instruction.operands[1]])  # type: ignore[arg-type]
    read = sum(sum(leaf.nbytes for leaf in leaves(shapes[name])) for name in instruction.operands)  # type: ignore[arg-type]
    return read + nbytes(instruction.shape)
