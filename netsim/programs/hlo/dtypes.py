"""A CPU-compiled module timed at the dtypes of the function's arguments (``dtypes: source``).

XLA's CPU compiler computes a bf16 program in f32: it upcasts bf16 dots and collectives to
f32 and leaves the ``convert`` instructions unfused, so a bf16 MLP compiled on CPU moves
and reads twice the bytes the TPU would. When the TPU compiler is not at hand,
:func:`at_source_dtype` rewrites the module as if the upcasts had not happened:

- every collective whose arrays are f32 moves them at the source dtype (``bf16``: half
  the bytes);
- every compute step that holds a dot or a convolution (FLOPs > 0) touches its bytes
  scaled by the same ratio (its f32 operands were the upcasts);
- every lone ``convert`` step takes no time (the TPU compiler fuses them).

Other compute steps are left as they are. This is an approximation of what the TPU would
run, said so in every report; the TPU-compiled module (the ``tpu`` extra) needs none.
"""

from __future__ import annotations

import dataclasses

from netsim.programs.hlo.ops import Collective, Compute, HloProgram
from netsim.programs.hlo.shapes import DTYPE_BITS, Array

__all__ = ["at_source_dtype", "source_dtype"]

_JAX_TO_HLO = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64"}


def source_dtype(dtypes: list[str]) -> str | None:
    """The narrowest floating dtype among the arguments' (NumPy/JAX names), as HLO spells it, or None.

    Examples
    --------
    >>> source_dtype(["float32", "bfloat16", "int32"]), source_dtype(["int32"])
    ('bf16', None)
    """
    found = [_JAX_TO_HLO[d] for d in dtypes if d in _JAX_TO_HLO]
    return min(found, key=lambda d: DTYPE_BITS[d]) if found else None


def _retyped(arrays: tuple[Array, ...], dtype: str) -> tuple[Array, ...]:
    return tuple(Array(dtype, a.dims) if a.dtype == "f32" else a for a in arrays)


def at_source_dtype(program: HloProgram, dtype: str) -> HloProgram:
    """``program`` with its f32 collectives and dots timed at ``dtype`` (see the module docstring).

    Examples
    --------
    >>> from netsim.programs.hlo import load_hlo
    >>> psum = load_hlo("scenarios/programs/hlo/psum.txt")
    >>> psum.collectives[0].op.nbytes, at_source_dtype(psum, "bf16").collectives[0].op.nbytes
    (524288, 262144)
    """
    if dtype not in DTYPE_BITS or DTYPE_BITS[dtype] >= DTYPE_BITS["f32"]:
        return program
    ratio = DTYPE_BITS[dtype] / DTYPE_BITS["f32"]
    steps = []
    for step in program.steps:
        op = step.op
        if isinstance(op, Collective):
            op = dataclasses.replace(op, operands=_retyped(op.operands, dtype), results=_retyped(op.results, dtype))
        elif isinstance(op, Compute) and op.opcode == "convert":
            op = dataclasses.replace(op, nbytes=0, estimated_cycles=None)
        elif isinstance(op, Compute) and op.flops > 0:
            op = dataclasses.replace(op, nbytes=int(op.nbytes * ratio))
        steps.append(dataclasses.replace(step, op=op))
    return dataclasses.replace(program, steps=steps)
