"""The matrix-unit (MXU) work of HLO instructions: each dot and convolution as a batch of ``[M, K] @ [K, N]``, padded to the MXU.

A TPU's MXU is a square systolic array (128 x 128 before v6e, 256 x 256 on v6e; Cloud TPU
system architecture page): it holds a ``[K, N]`` block of weights and streams rows of the
other operand through it, 8 at a time (the scaling book's TPU chapter: "one
bf16[8,128] @ bf16[128,128] -> f32[8,128] matmul every 8 cycles"). A matmul whose ``K`` or
``N`` is not a multiple of the array's side pays for the whole tile, and ``M`` rounds up to
8 rows. So its MXU time is ``2 * B * ceil8(M) * ceil_t(N) * ceil_t(K) / (peak * efficiency)``
with ``t`` the array's side (:func:`netsim.network.presets.mxu_tile`).

A dot's ``B`` is the product of its batch dims, ``K`` of its contracting dims, ``M`` and
``N`` of the others of each operand. A convolution's (as :mod:`netsim.programs.hlo.flops`
counts it): ``B`` its feature groups, ``K`` the input features per group, ``N`` the
output features per group, ``M`` the batch times the valid taps. Elementwise work (the
vector units) is not MXU work: a fusion of it alone is timed by its HBM bytes.
"""

from __future__ import annotations

import math

from netsim.programs.hlo.flops import parse_window, valid_taps
from netsim.programs.hlo.shapes import Array
from netsim.programs.hlo.text import Instruction, Module

__all__ = ["ROWS", "Matmul", "matmuls", "padded_flops"]

ROWS = 8
"""Rows of the streamed operand the MXU takes at a time (the scaling book's TPU chapter)."""

Matmul = tuple[int, int, int, int]
"""``(B, M, N, K)``: ``B`` independent ``[M, K] @ [K, N]``, ``2 * B * M * N * K`` FLOPs."""


def _dims(text: str | None) -> list[int]:
    return [int(x) for x in (text or "{}").strip().strip("{}").replace(" ", "").split(",") if x]


def _dot(instruction: Instruction, shapes: dict[str, object]) -> Matmul | None:
    lhs, rhs = (shapes[name] for name in instruction.operands[:2])
    if not (isinstance(lhs, Array) and isinstance(rhs, Array)):
        return None
    batch = math.prod(lhs.dims[d] for d in _dims(instruction.attrs.get("lhs_batch_dims")))
    k = math.prod(lhs.dims[d] for d in _dims(instruction.attrs.get("lhs_contracting_dims")))
    if not batch * k:
        return None
    return batch, lhs.elements // (batch * k), rhs.elements // (batch * k), k


def _convolution(instruction: Instruction, shapes: dict[str, object]) -> Matmul | None:
    lhs, rhs, out = shapes[instruction.operands[0]], shapes[instruction.operands[1]], instruction.shape
    if not all(isinstance(a, Array) for a in (lhs, rhs, out)):
        return None
    inputs, _, out_labels = instruction.attrs.get("dim_labels", "").partition("->")
    lhs_labels, _, rhs_labels = inputs.partition("_")
    groups = int(instruction.attrs.get("feature_group_count", 1))
    windows = parse_window(instruction.attrs.get("window"), sum(ch.isdigit() for ch in lhs_labels))
    taps = 1
    for s, w in enumerate(windows):
        key = str(s)
        taps *= valid_taps(w, lhs.dims[lhs_labels.index(key)], rhs.dims[rhs_labels.index(key)], out.dims[out_labels.index(key)])
    batch = lhs.dims[lhs_labels.index("b")] // int(instruction.attrs.get("batch_group_count", 1))
    return groups, batch * taps, out.dims[out_labels.index("f")] // groups, lhs.dims[lhs_labels.index("f")] // groups


def matmuls(instruction: Instruction, shapes: dict[str, object], module: Module) -> tuple[Matmul, ...]:
    """Every dot and convolution an instruction does (inside its fusion or call too), as ``(B, M, N, K)``.

    Examples
    --------
    >>> from netsim.programs.hlo.text import parse_module
    >>> m = parse_module('''HloModule m
    ... ENTRY %main (x: bf16[4,100,64], y: bf16[4,64,200]) -> bf16[4,100,200] {
    ...   %x = bf16[4,100,64]{2,1,0} parameter(0)
    ...   %y = bf16[4,64,200]{2,1,0} parameter(1)
    ...   ROOT %d = bf16[4,100,200]{2,1,0} dot(%x, %y), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
    ... }''')
    >>> d = m.entry.root
    >>> matmuls(d, {i.name: i.shape for i in m.entry.instructions}, m)
    ((4, 100, 200, 64),)
    """
    op = instruction.opcode
    if op == "dot":
        found = _dot(instruction, shapes)
        return (found,) if found else ()
    if op == "convolution":
        found = _convolution(instruction, shapes)
        return (found,) if found else ()
    called = instruction.attrs.get("calls") if op == "fusion" else instruction.attrs.get("to_apply") if op == "call" else None
    if called is None:
        return ()
    computation = module.computations.get(called.lstrip("%"))
    if computation is None:
        return ()
    inner = {i.name: i.shape for i in computation.instructions}
    return tuple(found for i in computation.instructions for found in matmuls(i, inner, module))


def padded_flops(work: tuple[Matmul, ...], tile: int | None) -> int:
    """The FLOPs the MXU spends on ``work``: ``K`` and ``N`` padded to ``tile``, ``M`` to :data:`ROWS` (no padding when ``tile`` is None).

    Examples
    --------
    A [100, 64] @ [64, 200] on v5e's 128 x 128 array: 2 * 104 * 256 * 128 FLOPs of MXU time
    for 2 * 100 * 200 * 64 of work (2.66x).

    >>> padded_flops(((1, 100, 200, 64),), 128), padded_flops(((1, 100, 200, 64),), None)
    (6815744, 2560000)
    """

    def up(x: int, to: int) -> int:
        return -(-x // to) * to

    if tile is None:
        return sum(2 * b * m * n * k for b, m, n, k in work)
    return sum(2 * b * up(m, ROWS) * up(n, tile) * up(k, tile) for b, m, n, k in work)
