"""The HBM one device of a module holds at its peak: parameters, outputs and the temporaries live at once.

A liveness pass over the module in its written order (the schedule, when the header says
``is_scheduled=true``), buffer by buffer, as XLA's buffer assignment allocates them:

- a buffer is born at the instruction that defines it and dies after the last
  instruction that reads it (a value no instruction reads dies where it is born);
- ``tuple``, ``get-tuple-element``, ``bitcast`` and ``optimization-barrier`` define no
  buffer: they name their operands' buffers; ``dynamic-update-slice`` (and a fusion whose
  root is one, or an instruction with ``output_to_operand_aliasing``) writes in place into
  its operand's buffer;
- a ``while`` loop's state is its operand's buffers, carried across the loop (in place);
  the temporaries of its body (and condition) peak inside it, on top of what the caller
  holds at the loop; a ``call`` or ``conditional`` the same with its computations;
- an asynchronous ``*-start`` returns its operands' buffers beside its result's (a
  ``copy-start`` its destination's), and its ``*-done`` names the result: both stay
  alive from the start to the last reader of the done;
- the ENTRY computation's parameters are held for the whole run (the caller's buffers),
  its outputs from the instruction that defines them to the end (a temporary that dies
  before an output is born may use its place, as XLA's buffer assignment lets it); an
  output the header's ``input_output_alias`` puts in a parameter (a donated argument)
  is that parameter's buffer.

Only HBM counts: an array whose layout names another memory space (``S(1)``, the TPU's
on-chip memory; ``S(5)``, the host) is left out. Shapes are one device's (a partitioned
module's). An array whose layout has TPU tiles (``T(8,128)``) is counted padded to whole
tiles (:func:`tiled_bytes`), as the TPU stores it; the fragmentation of the compiler's heap
and its scratch space are not in the text: XLA's ``compiled.memory_analysis()`` (argument +
output + temporary - alias bytes) is the figure this estimates.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from netsim.programs.hlo.shapes import DTYPE_BITS, Array, Shape, TupleShape, leaves
from netsim.programs.hlo.text import Computation, Instruction, Module

__all__ = ["ALIASES", "ModuleMemory", "memory_dict", "memory_space", "module_memory", "tiled_bytes"]

ALIASES = frozenset({"tuple", "get-tuple-element", "bitcast", "optimization-barrier", "add-dependency", "domain"})
"""Opcodes that define no buffer of their own: their result names their operands' buffers."""

NAME_CHARS = 60
"""How much of an instruction's name an item of the peak keeps."""

_SPACE = re.compile(r"S\((\d+)\)")
_TILE = re.compile(r"T\(([\d,\s]+)\)")
_OUTPUT_ALIAS = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}")
_CALLS = ("body", "condition", "to_apply", "calls", "true_computation", "false_computation")


@dataclass(frozen=True)
class ModuleMemory:
    """A module's HBM per device at its peak (bytes), and the buffers that make it.

    ``peak_bytes`` is the parameters, the outputs already defined and the temporaries
    (``temporary_bytes``) live at the peak instruction ``peak_at``; ``output_bytes`` all
    the outputs. ``items`` lists ``(name, bytes, kind)`` of every buffer held at the peak, the largest
    first; ``kind`` is ``parameter``, ``output``, ``temporary`` or ``temporary in
    COMPUTATION`` (inside a loop's body, say). ``order`` says whether the instructions'
    order was the compiler's schedule or only the order written.
    """

    peak_bytes: int
    parameter_bytes: int
    output_bytes: int
    temporary_bytes: int
    peak_at: str
    items: tuple[tuple[str, int, str], ...] = field(default=())
    order: str = "scheduled"


@dataclass
class _Buffers:
    """Every buffer seen: its bytes (0 outside HBM), the instruction that made it and its kind."""

    size: list[int] = field(default_factory=list)
    owner: list[str] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)

    def new(self, instruction: Instruction, kind: str, skip: frozenset[int] = frozenset()) -> list[int]:
        """One new buffer per array of ``instruction``'s result (None where ``skip`` holds the leaf: filled by the caller)."""
        made = []
        layouts = instruction.layouts
        for k, leaf in enumerate(leaves(instruction.shape)):
            if k in skip:
                made.append(-1)
                continue
            layout = layouts[k] if k < len(layouts) else ""
            self.size.append(tiled_bytes(leaf, layout) if memory_space(layout) == 0 else 0)
            self.owner.append(instruction.name)
            self.kind.append(kind)
            made.append(len(self.size) - 1)
        return made


def memory_space(layout: str) -> int:
    """The memory space a layout names (``S(1)``), 0 (HBM) when none.

    Examples
    --------
    >>> memory_space("1,0:T(8,128)(2,1)S(1)"), memory_space("1,0:T(8,128)(2,1)"), memory_space("")
    (1, 0, 0)
    """
    found = _SPACE.search(layout.partition(":")[2])
    return int(found.group(1)) if found else 0


def tiled_bytes(array: Array, layout: str) -> int:
    """Bytes ``array`` takes with the layout's first tile (``T(8,128)``): its most minor dims padded to whole tiles.

    The tile covers the last dims in the layout's order (``minor_to_major`` read backwards);
    an array of fewer dims is padded with leading dims of 1. Without a tile, its plain bytes.

    Examples
    --------
    >>> from netsim.programs.hlo.shapes import parse_shape
    >>> tiled_bytes(parse_shape("bf16[1,1024]"), "1,0:T(2,128)(2,1)"), tiled_bytes(parse_shape("s32[]"), ":T(128)")
    (4096, 512)
    >>> tiled_bytes(parse_shape("f32[3,200]"), "0,1:T(8,128)"), tiled_bytes(parse_shape("f32[3,200]"), "1,0")  # [200, 3 -> 128] as stored
    (102400, 2400)
    """
    order, _, rest = layout.partition(":")
    tile = _TILE.search(rest)
    if tile is None:
        return array.nbytes
    sizes = [int(t) for t in tile.group(1).split(",") if t.strip()]
    minor_to_major = [int(d) for d in order.split(",") if d.strip().isdigit()]
    if sorted(minor_to_major) != list(range(len(array.dims))):
        minor_to_major = list(reversed(range(len(array.dims))))
    physical = [array.dims[d] for d in reversed(minor_to_major)]
    physical = [1] * (len(sizes) - len(physical)) + physical
    cut = len(physical) - len(sizes)
    padded = physical[:cut] + [-(-dim // size) * size if size > 0 else dim for dim, size in zip(physical[cut:], sizes, strict=True)]
    return -(-math.prod(padded) * DTYPE_BITS[array.dtype] // 8)


def _element_span(shape: Shape, index: int) -> slice:
    """The leaves of tuple element ``index`` among all the leaves of ``shape``."""
    if not isinstance(shape, TupleShape) or not 0 <= index < len(shape.elements):
        return slice(0, len(leaves(shape)))
    start = sum(len(leaves(e)) for e in shape.elements[:index])
    return slice(start, start + len(leaves(shape.elements[index])))


def _callee(module: Module, name: str | None) -> Computation | None:
    return None if name is None else module.computations.get(name.strip().lstrip("%"))


def _in_place_operands(module: Module, instruction: Instruction) -> dict[int, int]:
    """Per leaf of the result written in place, the operand whose buffer it is (a DUS, or a fusion rooted in one)."""
    if instruction.opcode == "dynamic-update-slice":
        return {0: 0}
    aliased = instruction.attrs.get("output_to_operand_aliasing")
    if aliased:
        found: dict[int, int] = {}
        for out, operand, _ in _OUTPUT_ALIAS.findall(aliased):
            path = [int(x) for x in out.replace(" ", "").split(",") if x]
            span = _element_span(instruction.shape, path[0]) if path else slice(0, len(leaves(instruction.shape)))
            for leaf in range(span.start, span.stop):
                found[leaf] = int(operand)
        return found
    if instruction.opcode != "fusion":
        return {}
    fused = _callee(module, instruction.attrs.get("calls"))
    if fused is None:
        return {}
    by_name = fused.by_name()

    def through(name: str) -> Instruction | None:
        found = by_name.get(name)
        while found is not None and found.opcode == "bitcast" and found.operands:
            found = by_name.get(found.operands[0])
        return found

    root = through(fused.root.name)
    outputs = list(root.operands) if root is not None and root.opcode == "tuple" else [fused.root.name]
    found = {}
    for leaf, name in enumerate(outputs):
        update = through(name)
        if update is None or update.opcode != "dynamic-update-slice" or not update.operands:
            continue
        target = through(update.operands[0])
        if target is not None and target.opcode == "parameter" and target.literal.strip().isdigit():
            found[leaf] = int(target.literal.strip())
    return found if len(outputs) == len(leaves(instruction.shape)) else {}


def _outputs_in_parameters(module: Module, root: Instruction) -> set[int]:
    """The root's leaves that the header's ``input_output_alias`` puts in a parameter's buffer."""
    written = module.attrs.get("input_output_alias", "")
    found: set[int] = set()
    for out, _, _ in _OUTPUT_ALIAS.findall(written):
        path = [int(x) for x in out.replace(" ", "").split(",") if x]
        span = _element_span(root.shape, path[0]) if path else slice(0, len(leaves(root.shape)))
        found.update(range(span.start, span.stop))
    return found


@dataclass
class _Peak:
    """A computation's peak of temporaries: bytes, the instruction at it, and the buffers held there."""

    nbytes: int
    at: str
    items: list[tuple[str, int, str]]


class _Pass:
    """The liveness pass over one module (each called computation's peak computed once)."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.peaks: dict[str, _Peak] = {}
        self.entry_facts: tuple[list[int], list[int], _Buffers] | None = None

    def nested(self, instruction: Instruction) -> _Peak | None:
        """The largest peak of the computations ``instruction`` runs (a loop's body and condition, a call's, a branch's)."""
        if instruction.opcode == "fusion" or instruction.opcode not in ("while", "call", "conditional", "async-start"):
            return None
        names = [instruction.attrs.get(key) for key in _CALLS]
        branches = instruction.attrs.get("branch_computations", "")
        names += [n.strip() for n in branches.strip("{}").split(",") if n.strip()]
        found = [self.computation(c) for c in (_callee(self.module, n) for n in names) if c is not None]
        return max(found, key=lambda p: p.nbytes, default=None)

    def computation(self, computation: Computation) -> _Peak:
        if computation.name not in self.peaks:
            self.peaks[computation.name] = _Peak(0, "", [])  # (a computation that called itself: counted once)
            self.peaks[computation.name] = self.walk(computation, entry=False)
        return self.peaks[computation.name]

    def walk(self, computation: Computation, entry: bool) -> _Peak:
        """The peak of the temporaries over ``computation``'s instructions, in order."""
        buffers = _Buffers()
        held: dict[str, list[int]] = {}
        born: dict[int, int] = {}
        last: dict[int, int] = {}
        inside: list[_Peak | None] = []
        parameters: list[int] = []
        by_name = computation.by_name()
        for i, instruction in enumerate(computation.instructions):
            op = instruction.opcode
            operands = [held.get(name, []) for name in instruction.operands]
            if op == "parameter":
                made = buffers.new(instruction, "parameter")
                parameters += made
            elif op in ALIASES:
                if op == "tuple":
                    made = [b for leaf_buffers in operands for b in leaf_buffers]
                elif op == "get-tuple-element":
                    source = by_name.get(instruction.operands[0]) if instruction.operands else None
                    index = instruction.attrs.get("index", "0").strip()
                    span = _element_span(source.shape, int(index) if index.isdigit() else -1) if source is not None else slice(0, 0)
                    made = (operands[0] if operands else [])[span]
                else:
                    made = list(operands[0]) if operands else []
            elif op == "while":
                made = list(operands[0]) if operands else []
            elif op in ("copy-done", "async-done", "recv-done") or op.endswith("-done"):
                source = by_name.get(instruction.operands[0]) if instruction.operands else None
                whole = operands[0] if operands else []
                if source is None or not isinstance(source.shape, TupleShape):
                    made = list(whole)
                else:
                    made = whole[_element_span(source.shape, 0 if op in ("copy-done", "recv-done") else 1)]
                made += buffers.new(instruction, "temporary")[len(made) :]  # (a done's token)
            elif (op.endswith("-start") or op == "copy-start") and isinstance(instruction.shape, TupleShape):
                first = 1 if op == "copy-start" else 0
                span = _element_span(instruction.shape, first)
                given = [b for leaf_buffers in operands for b in leaf_buffers]
                if span.stop - span.start == len(given):  # the operands' own buffers, carried along
                    made = buffers.new(instruction, "temporary", frozenset(range(span.start, span.stop)))
                    made[span] = given
                else:
                    made = buffers.new(instruction, "temporary")
            else:
                in_place = {k: o for k, o in _in_place_operands(self.module, instruction).items() if o < len(operands) and operands[o]}
                made = buffers.new(instruction, "temporary", frozenset(in_place))
                for leaf, operand in in_place.items():
                    given = operands[operand]
                    made[leaf] = given[min(leaf, len(given) - 1)]
            held[instruction.name] = made
            for b in made:
                born.setdefault(b, i)
            if op not in ALIASES:
                for leaf_buffers in operands:
                    for b in leaf_buffers:
                        last[b] = i
            inside.append(self.nested(instruction))
        root = computation.root
        kept = set(parameters)  # (the caller's buffers, held outside this computation's temporaries)
        at_root = held.get(root.name, [])
        if entry:  # outputs: from their definition to the end (an output the header puts in a parameter is that parameter)
            in_parameters = _outputs_in_parameters(self.module, root)
            outputs = sorted({b for k, b in enumerate(at_root) if b not in kept and k not in in_parameters})
            for b in outputs:
                buffers.kind[b] = "output"
                last[b] = len(computation.instructions) - 1
            self.entry_facts = (sorted(set(parameters)), outputs, buffers)
            kept |= {b for k, b in enumerate(at_root) if k in in_parameters}
        else:  # the caller's buffers too: a loop's state, a call's result
            kept |= set(at_root)
        return self._peak(computation, buffers, born, last, inside, kept)

    @staticmethod
    def _peak(computation: Computation, buffers: _Buffers, born: dict[int, int], last: dict[int, int], inside: list[_Peak | None], kept: set[int]) -> _Peak:
        n = len(computation.instructions)
        change = [0] * (n + 1)
        for b, start in born.items():
            if b in kept or not buffers.size[b]:
                continue
            change[start] += buffers.size[b]
            change[max(start, last.get(b, start)) + 1] -= buffers.size[b]
        live, best, at = 0, -1, 0
        for i in range(n):
            live += change[i]
            total = live + (inside[i].nbytes if inside[i] is not None else 0)
            if total > best:
                best, at = total, i
        items = [
            (buffers.owner[b], buffers.size[b], buffers.kind[b])
            for b, start in born.items()
            if b not in kept and buffers.size[b] and start <= at <= max(start, last.get(b, start))
        ]
        nested = inside[at] if n else None
        if nested is not None:
            where = computation.instructions[at].name
            items += [(name, size, kind if kind.startswith("temporary in") else f"temporary in {where}") for name, size, kind in nested.items]
        return _Peak(max(best, 0), computation.instructions[at].name if n else "", items)


def _cut(name: str) -> str:
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 3] + "..."


def module_memory(module: Module) -> ModuleMemory:
    """The HBM one device holds at the module's peak (see the module docstring).

    Examples
    --------
    >>> from netsim.programs.hlo.text import parse_module
    >>> m = module_memory(parse_module('''HloModule m, is_scheduled=true
    ... ENTRY %main (p: f32[1024]) -> f32[1024] {
    ...   %p = f32[1024]{0} parameter(0)
    ...   %a = f32[1024]{0} exponential(%p)
    ...   %b = f32[1024]{0} negate(%a)
    ...   ROOT %c = f32[1024]{0} add(%b, %p)
    ... }'''))
    >>> m.parameter_bytes, m.output_bytes, m.temporary_bytes, m.peak_bytes, m.peak_at  # a and b live at b; c not yet
    (4096, 4096, 8192, 12288, 'b')
    """
    walk = _Pass(module)
    peak = walk.walk(module.entry, entry=True)
    assert walk.entry_facts is not None
    parameters, outputs, buffers = walk.entry_facts
    parameter_bytes = sum(buffers.size[b] for b in parameters)
    held = [(buffers.owner[b], buffers.size[b], "parameter") for b in parameters if buffers.size[b]]
    items = sorted(((_cut(name), size, kind) for name, size, kind in held + peak.items), key=lambda item: -item[1])
    outputs_at_peak = sum(size for _, size, kind in peak.items if kind == "output")
    return ModuleMemory(
        parameter_bytes + peak.nbytes,
        parameter_bytes,
        sum(buffers.size[b] for b in outputs),
        peak.nbytes - outputs_at_peak,
        _cut(peak.at),
        tuple(items),
        "scheduled" if module.is_scheduled else "written",
    )


def memory_dict(memory: Any) -> dict[str, Any]:
    """A :class:`ModuleMemory` as plain data, its items as ``{"name", "bytes", "kind"}``."""
    return {
        "peak_bytes": memory.peak_bytes,
        "parameter_bytes": memory.parameter_bytes,
        "output_bytes": memory.output_bytes,
        "temporary_bytes": memory.temporary_bytes,
        "items": [{"name": n, "bytes": b, "kind": k} for n, b, k in memory.items],
    }
