"""FLOPs of HLO instructions, counted as XLA's own cost analysis counts them.

The rules follow ``HloCostAnalysis`` (openxla/xla, ``xla/service/hlo_cost_analysis.cc``,
commit 001918b7024cf5f020051a9d25d2dd57a5896aaa), which is what
``compiled.cost_analysis()["flops"]`` reports:

``dot`` (``HandleDot``)
    ``2 * elements(result) * prod(lhs contracting dims)``: one fused multiply-add per
    product.
``convolution`` (``GetConvolutionFlops``)
    ``2 * (input features / feature_group_count) * output features * (batch /
    batch_group_count) * prod(valid taps per spatial dim)``, where a tap (kernel index
    ``k``, output index ``o``) is valid only if it lands on real input: the input index
    ``o * stride - pad_low + k * rhs_dilate`` is a multiple of ``lhs_dilate`` and, divided
    by it, inside the input. Window reversal does not change the count. The TPU compiler
    writes many dots as convolutions whose spatial dims carry a batch dim, with a window
    as large as the dim and padding (``size=1x32 pad=0_0x31_31 rhs_reversal=0x1``) or lhs
    dilation (``lhs_dilate=6x32``): only one tap in 32 (or 192) of such a window is valid.
elementwise (``HandleElementwiseOp``)
    One FLOP per element of the result (``convert``, ``compare``, ``select`` and
    ``clamp`` included); transcendental ones (``exponential``, ``log``, ``tanh``,
    ``logistic``, ``power``, ``sqrt``, ``rsqrt``, ``cbrt``, ``sine``, ``cosine``,
    ``exponential-minus-one``, ``log-plus-one``, ``atan2``) count as transcendentals, not FLOPs.
``reduce`` (``HandleReduce``)
    The FLOPs of its ``to_apply`` computation times ``elements(input) - elements(result)``.
``reduce-window``, ``map``, ``scatter``, ``select-and-scatter``, ``sort``, ``all-reduce``
    As their handlers (window size - 1 per output element, per element, per update,
    ``n log2 n``, one per element of the result).
``fusion``, ``call``, ``async-start``
    What their called computation holds.
``while`` and ``conditional``
    Body and condition once (XLA does not know the trip count); the largest branch.

``custom-call``
    The ``cost_estimate``'s ``flops`` its ``backend_config`` carries (what the TPU
    compiler's cost analysis reads for a Pallas/Mosaic kernel), else none (XLA: unknown).

Everything else (data movement, ``copy``, collectives other than ``all-reduce``) does no FLOPs. :func:`module_flops` adds a module up either as XLA does
(loops once) or as it runs (each ``while`` body times its ``known_trip_count``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from netsim.programs.hlo.compute import config_value, dim_list
from netsim.programs.hlo.loops import loop_trips
from netsim.programs.hlo.shapes import Array, leaves
from netsim.programs.hlo.text import Computation, Instruction, Module

__all__ = ["ELEMENTWISE", "TRANSCENDENTAL", "Window", "computation_flops", "conv_flops", "instruction_flops", "module_flops", "parse_window", "valid_taps"]

TRANSCENDENTAL = frozenset(
    [
        "exponential",
        "log",
        "logistic",
        "power",
        "sqrt",
        "cbrt",
        "rsqrt",
        "tanh",
        "sine",
        "cosine",
        "exponential-minus-one",
        "log-plus-one",
        "atan2",
        "rng",
        "rng-bit-generator",
    ]
)
"""Opcodes XLA counts as transcendentals (``HandleElementwiseOp``, ``HandleRng``): no FLOPs."""

ELEMENTWISE = frozenset(
    [
        "abs",
        "add",
        "and",
        "bitcast-convert",
        "ceil",
        "clamp",
        "clz",
        "compare",
        "complex",
        "convert",
        "count-leading-zeros",
        "divide",
        "erf",
        "floor",
        "imag",
        "is-finite",
        "maximum",
        "minimum",
        "multiply",
        "negate",
        "not",
        "or",
        "popcnt",
        "real",
        "reduce-precision",
        "remainder",
        "round-nearest-afz",
        "round-nearest-even",
        "select",
        "shift-left",
        "shift-right-arithmetic",
        "shift-right-logical",
        "sign",
        "stochastic-convert",
        "subtract",
        "tan",
        "xor",
    ]
)
"""Opcodes XLA counts at one FLOP per element of the result."""


@dataclass(frozen=True)
class Window:
    """One spatial dim of a convolution's ``window={...}``."""

    size: int = 1
    stride: int = 1
    pad_low: int = 0
    pad_high: int = 0
    lhs_dilate: int = 1
    rhs_dilate: int = 1
    reversal: bool = False


def parse_window(text: str | None, rank: int) -> tuple[Window, ...]:
    """The ``window={size=.. pad=.. stride=.. lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`` attribute, one :class:`Window` per spatial dim.

    Examples
    --------
    >>> w = parse_window("{size=1x32 pad=0_0x31_31 rhs_reversal=0x1}", 2)
    >>> w[1].size, w[1].pad_low, w[1].reversal, w[0].size
    (32, 31, True, 1)
    """
    fields: dict[str, list[str]] = {}
    for part in (text or "").strip().strip("{}").split():
        key, _, value = part.partition("=")
        fields[key] = value.split("x")
    for key, values in fields.items():
        if len(values) != rank:
            raise ValueError(f"window {key}={'x'.join(values)} has {len(values)} dims, the convolution {rank} spatial dims")

    def ints(key: str, default: int) -> list[int]:
        return [int(v) for v in fields[key]] if key in fields else [default] * rank

    pads = [tuple(int(x) for x in p.split("_")) for p in fields["pad"]] if "pad" in fields else [(0, 0)] * rank
    return tuple(
        Window(size, stride, pad[0], pad[1], lhs, rhs, bool(rev))
        for size, stride, pad, lhs, rhs, rev in zip(
            ints("size", 1), ints("stride", 1), pads, ints("lhs_dilate", 1), ints("rhs_dilate", 1), ints("rhs_reversal", 0), strict=True
        )
    )


@lru_cache(maxsize=4096)
def valid_taps(window: Window, input_size: int, kernel_size: int, output_size: int) -> int:
    """How many (kernel index, output index) pairs of one spatial dim read real input (not padding, not a dilation hole).

    XLA's ``GetConvolutionFlops`` loops over both; this counts each kernel index's
    outputs in closed form (an arithmetic progression).

    Examples
    --------
    >>> valid_taps(Window(size=32, pad_low=31, pad_high=31), 1, 32, 32)  # a window as large as the dim: one tap per output
    32
    >>> valid_taps(Window(size=3), 5, 3, 3)  # a 3-tap kernel over 5 inputs, no padding
    9
    >>> valid_taps(Window(size=3, pad_low=1, pad_high=1), 5, 3, 5)  # 'same' padding: the two edge taps fall on padding
    13
    """
    base, stride = window.lhs_dilate, window.stride
    top = (input_size - 1) * base  # the largest dilated input index that holds data
    g = math.gcd(stride, base)
    period = base // g
    inverse = pow(stride // g, -1, period) if period > 1 else 0
    count = 0
    for k in range(kernel_size):
        c = k * window.rhs_dilate - window.pad_low  # dilated input index at output 0
        lo, hi = max(0, -(c // stride)), min(output_size - 1, (top - c) // stride)
        if hi < lo or c % g:
            continue
        first_residue = ((-c // g) * inverse) % period if period > 1 else 0
        first = lo + (first_residue - lo) % period
        if first <= hi:
            count += (hi - first) // period + 1
    return count


def _array(shape: object, what: str) -> Array:
    if not isinstance(shape, Array):
        raise ValueError(f"{what} must be an array, got the tuple {shape}")
    return shape


def conv_flops(lhs: Array, rhs: Array, result: Array, dim_labels: str, window: str | None, feature_groups: int = 1, batch_groups: int = 1) -> int:
    """FLOPs of a ``convolution`` as XLA counts them: valid taps only (see the module's docstring).

    Examples
    --------
    A spatial dim of 1 input element, a 32-tap kernel padded 31 on each side: one tap per
    output lands on the input (XLA counts 32 taps, not 32 * 32):

    >>> lhs, rhs, out = Array("bf16", (1, 8, 4)), Array("bf16", (32, 4, 16)), Array("bf16", (32, 8, 16))
    >>> conv_flops(lhs, rhs, out, "0bf_0io->0bf", "{size=32 pad=31_31 rhs_reversal=1}") == 2 * 4 * 16 * 8 * 32
    True
    """
    inputs, _, out_labels = dim_labels.partition("->")
    lhs_labels, _, rhs_labels = inputs.partition("_")
    if not (len(lhs_labels) == len(lhs.dims) and len(rhs_labels) == len(rhs.dims) and len(out_labels) == len(result.dims)):
        raise ValueError(f"dim_labels={dim_labels!r} does not match the operands {lhs}, {rhs} and the result {result}")
    if "b" not in lhs_labels or "f" not in lhs_labels or "f" not in out_labels:
        raise ValueError(f"dim_labels={dim_labels!r} names no batch or feature dim")
    rank = sum(ch.isdigit() for ch in lhs_labels)
    windows = parse_window(window, rank)
    taps = 1
    for s, w in enumerate(windows):
        key = str(s)
        taps *= valid_taps(w, lhs.dims[lhs_labels.index(key)], rhs.dims[rhs_labels.index(key)], result.dims[out_labels.index(key)])
    in_features = lhs.dims[lhs_labels.index("f")] // feature_groups
    out_features = result.dims[out_labels.index("f")]
    batch = lhs.dims[lhs_labels.index("b")] // batch_groups
    return 2 * in_features * out_features * batch * taps


def _called(instruction: Instruction, key: str) -> str | None:
    name = instruction.attrs.get(key)
    return name.lstrip("%") if name else None


def instruction_flops(instruction: Instruction, shapes: dict[str, object], module: Module) -> int:
    """FLOPs of one instruction as XLA's ``HloCostAnalysis`` counts them (``while``: body and condition once).

    ``shapes`` maps operand names to their shapes in the instruction's computation.

    Examples
    --------
    >>> from netsim.programs.hlo.text import parse_module
    >>> m = parse_module('''HloModule m
    ... %add (a: f32[], b: f32[]) -> f32[] {
    ...   %a = f32[] parameter(0)
    ...   %b = f32[] parameter(1)
    ...   ROOT %s = f32[] add(%a, %b)
    ... }
    ... ENTRY %main (x: f32[4,8], y: f32[8,2]) -> f32[4] {
    ...   %x = f32[4,8]{1,0} parameter(0)
    ...   %y = f32[8,2]{1,0} parameter(1)
    ...   %d = f32[4,2]{1,0} dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
    ...   %z = f32[] constant(0)
    ...   ROOT %r = f32[4]{0} reduce(%d, %z), dimensions={1}, to_apply=%add
    ... }''')
    >>> entry = m.entry
    >>> shapes = {i.name: i.shape for i in entry.instructions}
    >>> [instruction_flops(i, shapes, m) for i in entry.instructions]  # dot 2*4*2*8; reduce (8-4) adds
    [0, 0, 128, 0, 4]
    """
    op = instruction.opcode
    if op in ELEMENTWISE:
        return sum(leaf.elements for leaf in leaves(instruction.shape))
    if op == "dot":
        lhs = _array(shapes[instruction.operands[0]], "a dot's left operand")
        contracting = dim_list(instruction.attrs.get("lhs_contracting_dims"))
        if any(d >= len(lhs.dims) for d in contracting):
            raise ValueError(f"lhs_contracting_dims {contracting} out of range for {lhs}")
        return 2 * _array(instruction.shape, "a dot's result").elements * math.prod(lhs.dims[d] for d in contracting)
    if op == "convolution":
        lhs = _array(shapes[instruction.operands[0]], "a convolution's input")
        rhs = _array(shapes[instruction.operands[1]], "a convolution's kernel")
        groups = (int(instruction.attrs.get("feature_group_count", 1)), int(instruction.attrs.get("batch_group_count", 1)))
        result = _array(instruction.shape, "a convolution's result")
        return conv_flops(lhs, rhs, result, instruction.attrs.get("dim_labels", ""), instruction.attrs.get("window"), *groups)
    if op in ("fusion", "async-start", "call-start") and _called(instruction, "calls"):
        return computation_flops(module, _called(instruction, "calls"))
    if op in ("call", "call-start") and _called(instruction, "to_apply"):
        return computation_flops(module, _called(instruction, "to_apply"))
    if op in ("reduce", "reduce-window", "map", "scatter", "all-reduce", "all-reduce-start", "sort", "select-and-scatter"):
        return _applied(instruction, shapes, module)
    if op == "custom-call":  # a kernel of its own (Pallas, Mosaic): the cost estimate it carries, if any
        estimate = config_value(instruction, "cost_estimate")
        return int(float(estimate.get("flops", 0))) if isinstance(estimate, dict) else 0
    if op == "while":
        return sum(computation_flops(module, name) for name in (_called(instruction, "body"), _called(instruction, "condition")) if name)
    if op == "conditional":
        branches = re.findall(r"%?([\w.\-]+)", instruction.attrs.get("branch_computations", "")) or [
            _called(instruction, key) for key in ("true_computation", "false_computation") if _called(instruction, key)
        ]
        return max((computation_flops(module, b) for b in branches), default=0)
    return 0


def _applied(instruction: Instruction, shapes: dict[str, object], module: Module) -> int:
    """Ops that apply a computation (or a fixed count) per element: ``HandleReduce``, ``HandleReduceWindow``, ``HandleMap``, ..."""
    op = instruction.opcode
    result = leaves(instruction.shape)[0]
    if op in ("all-reduce", "all-reduce-start"):  # XLA counts one add per element of the result (as if two replicas)
        return sum(leaf.elements for leaf in leaves(instruction.shape) if isinstance(leaf, Array))
    if op == "sort":
        n = leaves(shapes[instruction.operands[0]])[0].elements
        return n * max(0, (n - 1).bit_length()) if n > 1 else 0
    applied = computation_flops(module, _called(instruction, "to_apply") or "") if _called(instruction, "to_apply") else 0
    if op == "select-and-scatter":
        source = leaves(shapes[instruction.operands[1]])[0].elements
        windows = math.prod(w.size for w in parse_window(instruction.attrs.get("window"), len(result.dims)))
        select = computation_flops(module, _called(instruction, "select") or "") if _called(instruction, "select") else 0
        scatter = computation_flops(module, _called(instruction, "scatter") or "") if _called(instruction, "scatter") else 0
        return select * source * (windows - 1) + scatter * source
    if op == "reduce":
        return applied * (leaves(shapes[instruction.operands[0]])[0].elements - result.elements)
    if op == "map":
        return applied * result.elements
    if op == "scatter":
        updates = leaves(shapes[instruction.operands[-1]])[0].elements
        return applied * updates
    window = math.prod(w.size for w in parse_window(instruction.attrs.get("window"), len(result.dims)))
    return applied * (window - 1) * result.elements  # reduce-window


def computation_flops(module: Module, name: str) -> int:
    """FLOPs of every instruction of a computation, as XLA counts them (fusions and calls inside included, loops once)."""
    computation: Computation | None = module.computations.get(name)
    if computation is None:
        raise ValueError(f"calls a computation {name!r} that the module does not define")
    return _computation_flops(module, computation)


def _computation_flops(module: Module, computation: Computation) -> int:
    cache = module.__dict__.setdefault("_flops_by_computation", {})
    if computation.name not in cache:
        shapes = {i.name: i.shape for i in computation.instructions}
        cache[computation.name] = sum(instruction_flops(i, shapes, module) for i in computation.instructions)
    return cache[computation.name]


def module_flops(module: Module, loops: str = "once") -> int:
    """The FLOPs of a module's ENTRY computation per device.

    Parameters
    ----------
    module : Module
        A parsed module (:func:`netsim.programs.hlo.text.parse_module`).
    loops : {"once", "trips"}
        ``once``: each ``while`` body counted once, as XLA's cost analysis (and so
        ``compiled.cost_analysis()["flops"]``) counts it; ``trips``: each body times its
        trips (its ``known_trip_count``, or what its condition says: what the step executes;
        conditions, scalar work, not counted).

    Examples
    --------
    >>> from netsim.programs.hlo.text import parse_module
    >>> m = parse_module('''HloModule m
    ... ENTRY %main (x: f32[4,8], y: f32[8,2]) -> f32[4,2] {
    ...   %x = f32[4,8]{1,0} parameter(0)
    ...   %y = f32[8,2]{1,0} parameter(1)
    ...   ROOT %d = f32[4,2]{1,0} dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
    ... }''')
    >>> module_flops(m)
    128
    """
    if loops not in ("once", "trips"):
        raise ValueError(f"loops must be 'once' or 'trips', got {loops!r}")
    if loops == "once":
        return _computation_flops(module, module.entry)

    def executed(computation: Computation) -> int:
        shapes = {i.name: i.shape for i in computation.instructions}
        total = 0
        for i in computation.instructions:
            if i.opcode == "while":
                body = module.computations[_called(i, "body") or ""]
                total += executed(body) * (loop_trips(module, i, computation) or 1)
            elif i.opcode == "call" and _called(i, "to_apply"):
                total += executed(module.computations[_called(i, "to_apply") or ""])
            else:
                total += instruction_flops(i, shapes, module)
        return total

    return executed(module.entry)
