"""The HBM one device of a module holds: parameters, constants, and a heap of its outputs and temporaries.

A liveness pass over the module in its written order (the schedule, when the header says
``is_scheduled=true``), buffer by buffer, as XLA's buffer assignment allocates them:

- a buffer is born at the instruction that defines it and dies after the last
  instruction that reads it (a value no instruction reads dies where it is born);
- ``tuple``, ``get-tuple-element``, ``bitcast`` and ``optimization-barrier`` define no
  buffer: they name their operands' buffers; ``dynamic-update-slice`` (and a fusion whose
  root is one, or an instruction with ``output_to_operand_aliasing``) writes in place into
  its operand's buffer;
- a ``while`` loop's state is its operand's buffers, carried across the loop in place (what
  the body returns is that state); a ``call``'s result is its computation's root; each
  branch of a ``conditional`` writes into the conditional's result;
- an asynchronous ``*-start`` returns its operands' buffers beside its result's (a
  ``copy-start`` its destination's), and its ``*-done`` names the result: both stay
  alive from the start to the last reader of the done;
- the ENTRY computation's parameters and every constant are held for the whole run (XLA
  gives them their own allocations); its outputs from the instruction that defines them
  to the end (a temporary that dies before an output is born may use its place); an
  output the header's ``input_output_alias`` puts in a parameter (a donated argument) is
  that parameter's buffer.

Every computation a loop, call or branch runs is walked where it runs, so that every buffer
has its live range on one timeline. The bytes live at once peak somewhere on it; the TPU
allocates a little more: XLA packs the outputs and temporaries into one heap and the gaps
left between them count (:func:`~netsim.programs.hlo.heap.best_fit_heap`). The peak
reported is the parameters, the constants and that heap.

Only HBM counts: an array whose layout names another memory space (``S(1)``, the TPU's
on-chip memory; ``S(5)``, the host) is left out. Shapes are one device's (a partitioned
module's). An array whose layout has TPU tiles (``T(8,128)``) is counted padded to whole
tiles (:func:`tiled_bytes`), as the TPU stores it. The figure this estimates is the HBM
the compiler allocates (its buffer assignment); ``compiled.memory_analysis()``'s
temporary bytes also count the on-chip scratch the compiler preallocates.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from netsim.programs.hlo.heap import best_fit_heap
from netsim.programs.hlo.shapes import DTYPE_BITS, Array, Shape, TupleShape, leaves
from netsim.programs.hlo.text import Computation, Instruction, Module

__all__ = ["ALIASES", "ModuleMemory", "memory_space", "module_memory", "tiled_bytes"]

ALIASES = frozenset({"tuple", "get-tuple-element", "bitcast", "optimization-barrier", "add-dependency", "domain"})
"""Opcodes that define no buffer of their own: their result names their operands' buffers."""

MAX_PACKED = 5_000
"""The most heap buffers packed (each placement looks at every buffer placed: about a second at this many); past it,
the heap is taken as the bytes live at once, the gaps between buffers left out."""

NAME_CHARS = 60
"""How much of an instruction's name an item of the peak keeps."""

_SPACE = re.compile(r"S\((\d+)\)")
_TILE = re.compile(r"T\(([\d,\s]+)\)")
_OUTPUT_ALIAS = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}")


@dataclass(frozen=True)
class ModuleMemory:
    """A module's HBM per device at its peak (bytes), and the buffers that make it.

    ``live_bytes`` is the most bytes live at once: the parameters, the constants, the
    outputs already defined and the temporaries (``temporary_bytes``) live at the
    instruction ``peak_at``. ``peak_bytes`` is what the TPU allocates: the parameters, the
    constants and the heap that holds every other buffer where XLA's heap simulator would
    put it (:mod:`netsim.programs.hlo.heap`), its gaps included. ``output_bytes`` is all the
    outputs. ``items`` lists ``(name, bytes, kind)`` of every buffer live at ``peak_at``, the
    largest first; ``kind`` is ``parameter``, ``constant``, ``output``, ``temporary`` or
    ``temporary in INSTRUCTION`` (inside a loop's body, say). ``order`` says whether the instructions' order was the compiler's
    schedule or only the order written.
    """

    peak_bytes: int
    parameter_bytes: int
    output_bytes: int
    temporary_bytes: int
    peak_at: str
    items: tuple[tuple[str, int, str], ...] = field(default=())
    order: str = "scheduled"
    live_bytes: int = 0
    """The most bytes live at once: ``peak_bytes`` without the heap's gaps."""


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


class _Pass:
    """The liveness pass over one module: every computation a loop, call or branch runs walked where it runs,
    so that each buffer has a live range on one timeline (as XLA's heap simulator sees the module)."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.buffers = _Buffers()
        self.born: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self.kept: set[int] = set()  # parameters, and what a loop's body returns (the loop's state)
        self.parameters: list[int] = []
        self.constants: list[int] = []
        self.outputs: list[int] = []
        self.at: list[str] = []  # per time, the instruction (and the loop or call it runs in)
        self.depth = 0

    def _callees(self, instruction: Instruction) -> list[Computation]:
        if instruction.opcode not in ("while", "call", "conditional", "async-start"):
            return []
        names = [instruction.attrs.get(key) for key in ("condition", "body", "to_apply", "calls", "true_computation", "false_computation")]
        branches = instruction.attrs.get("branch_computations", "")
        names += [n.strip() for n in branches.strip("{}").split(",") if n.strip()]
        return [c for c in (_callee(self.module, n) for n in names) if c is not None]

    def walk(self, computation: Computation, arguments: list[list[int]] | None, where: str) -> list[int]:
        """Walk ``computation`` (its parameters are ``arguments``' buffers; None: the ENTRY's own); the buffers of its root."""
        buffers, held = self.buffers, {}
        kind = f"temporary in {where}" if where else "temporary"
        by_name = computation.by_name()
        for instruction in computation.instructions:
            op = instruction.opcode
            operands = [held.get(name, []) for name in instruction.operands]
            if op == "parameter":
                number = instruction.literal.strip()
                if arguments is None:
                    made = buffers.new(instruction, "parameter")
                    self.parameters += made
                    self.kept.update(made)
                else:
                    k = int(number) if number.isdigit() else 0
                    made = list(arguments[k]) if k < len(arguments) else []
            elif op == "constant":  # XLA gives constants their own allocations, held for the whole run
                made = buffers.new(instruction, "constant")
                self.constants += made
                self.kept.update(made)
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
                state = list(operands[0]) if operands else []
                for callee in self._callees(instruction):
                    returned = self.walk(callee, [state], where or _cut(instruction.name))
                    self.kept.update(b for b in returned if b not in state)  # the body's result is the state, in place
                made = state
            elif op in ("call", "conditional", "async-start") and self._callees(instruction):
                results = []
                callees = self._callees(instruction)
                for number, callee in enumerate(callees):
                    given = operands if op != "conditional" else operands[number + 1 : number + 2] or operands[1:]
                    results.append(self.walk(callee, given, where or _cut(instruction.name)))
                if op == "call" and len(callees) == 1:
                    made = results[0]  # the call's result is its computation's root
                else:
                    for returned in results:
                        self.kept.update(returned)  # each branch writes into the conditional's result
                    made = buffers.new(instruction, kind)
            elif op.endswith("-done"):
                source = by_name.get(instruction.operands[0]) if instruction.operands else None
                whole = operands[0] if operands else []
                if source is None or not isinstance(source.shape, TupleShape):
                    made = list(whole)
                else:
                    made = whole[_element_span(source.shape, 0 if op in ("copy-done", "recv-done") else 1)]
                made += buffers.new(instruction, kind)[len(made) :]  # (a done's token)
            elif op.endswith("-start") and isinstance(instruction.shape, TupleShape):
                span = _element_span(instruction.shape, 1 if op == "copy-start" else 0)
                given = [b for leaf_buffers in operands for b in leaf_buffers]
                if span.stop - span.start == len(given):  # the operands' own buffers, carried along
                    made = buffers.new(instruction, kind, frozenset(range(span.start, span.stop)))
                    made[span] = given
                else:
                    made = buffers.new(instruction, kind)
            else:
                in_place = {k: o for k, o in _in_place_operands(self.module, instruction).items() if o < len(operands) and operands[o]}
                made = buffers.new(instruction, kind, frozenset(in_place))
                for leaf, operand in in_place.items():
                    given = operands[operand]
                    made[leaf] = given[min(leaf, len(given) - 1)]
            now = len(self.at)
            self.at.append(_cut(instruction.name) + (f" (in {where})" if where else ""))
            held[instruction.name] = made
            for b in made:
                self.born.setdefault(b, now)
            if op not in ALIASES:
                for leaf_buffers in operands:
                    for b in leaf_buffers:
                        self.last[b] = now
        return held.get(computation.root.name, [])

    def entry(self) -> None:
        """Walk the ENTRY computation; its outputs live from their definition to the end."""
        root = self.module.entry.root
        at_root = self.walk(self.module.entry, None, "")
        in_parameters = _outputs_in_parameters(self.module, root)
        self.outputs = sorted({b for k, b in enumerate(at_root) if b not in self.kept and k not in in_parameters})
        self.kept.update(b for k, b in enumerate(at_root) if k in in_parameters)
        for b in self.outputs:
            self.buffers.kind[b] = "output"
            self.last[b] = len(self.at) - 1

    def ranges(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """The buffers the heap holds (not the parameters' or the loops' state written back): ids, sizes, starts, ends."""
        ids = [b for b in self.born if b not in self.kept and self.buffers.size[b]]
        starts = [self.born[b] for b in ids]
        ends = [max(self.born[b], self.last.get(b, self.born[b])) for b in ids]
        return ids, [self.buffers.size[b] for b in ids], starts, ends


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
    >>> m.parameter_bytes, m.output_bytes, m.temporary_bytes, m.live_bytes, m.peak_bytes, m.peak_at  # a and b live at b; c not yet
    (4096, 4096, 8192, 12288, 12288, 'b')
    """
    walk = _Pass(module)
    walk.entry()
    buffers = walk.buffers
    ids, sizes, starts, ends = walk.ranges()
    n = len(walk.at)
    change = [0] * (n + 1)
    for size, start, end in zip(sizes, starts, ends, strict=True):
        change[start] += size
        change[end + 1] -= size
    live, best, at = 0, 0, 0
    for t in range(n):
        live += change[t]
        if live > best:
            best, at = live, t
    parameter_bytes = sum(buffers.size[b] for b in walk.parameters)
    constant_bytes = sum(buffers.size[b] for b in walk.constants)
    held = [(buffers.owner[b], buffers.size[b], buffers.kind[b]) for b in walk.parameters + walk.constants if buffers.size[b]]
    held += [(buffers.owner[b], size, buffers.kind[b]) for b, size, start, end in zip(ids, sizes, starts, ends, strict=True) if start <= at <= end]
    items = sorted(((_cut(name), size, kind) for name, size, kind in held), key=lambda item: -item[1])
    outputs_at_peak = sum(size for b, size, start, end in zip(ids, sizes, starts, ends, strict=True) if b in set(walk.outputs) and start <= at <= end)
    heap = best_fit_heap(sizes, starts, ends) if len(ids) <= MAX_PACKED else best
    return ModuleMemory(
        parameter_bytes + constant_bytes + max(heap, best),
        parameter_bytes,
        sum(buffers.size[b] for b in walk.outputs),
        best - outputs_at_peak,
        walk.at[at] if n else "",
        tuple(items),
        "scheduled" if module.is_scheduled else "written",
        parameter_bytes + constant_bytes + best,
    )
