"""An HLO module flattened into steps: every collective and compute instruction, loops unrolled.

The ENTRY computation is walked in its written order (the execution order when the module
``is_scheduled``). Each value is tracked as the set of steps that produced it (a tuple of
such sets for tuples), so every step knows the steps it reads from: the data dependences.
Order on the device's single instruction stream is kept as well: a compute step or a sync
collective waits for the stream's previous step, and holds the stream until it ends; an
async ``*-start`` leaves the stream free, and its ``*-done`` makes the stream wait for the
collective, so the work written between the two overlaps it. With ``overlap_sync=True`` a
sync collective leaves the stream free too: the work after it that does not read its result
runs beside it (what the TPU does with its TensorCore's collectives, see
:data:`netsim.programs.hlo.run.SYNC_COLLECTIVES`); what reads it waits for it.

``while`` loops with a ``known_trip_count`` run their body that many times; ``call``s are
inlined; fusions are one compute step (their FLOPs as XLA counts them, their dots and
convolutions for the MXU). A ``copy-start`` (a prefetch, a cross-program prefetch) and a
``send``/``recv`` to the host are a step on the device's DMA engine, of the copied array's
size, which leaves the stream free until its ``copy-done`` (``send-done``/``recv-done``).
The TPU compiler's megascale ``send``/``recv`` (a collective across slices, written as host
transfers) are one asynchronous collective step (:mod:`netsim.programs.hlo.megascale`):
the ``send`` starts it, the ``recv`` names it, their ``-done`` s wait for it. Instructions
without a model (other ``send``/``recv``, ``conditional``, ``infeed``, a loop of unknown
trip count, a ``custom-call``'s FLOPs) are listed in :attr:`HloProgram.unmodelled`, never
dropped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from netsim.programs.hlo.compute import config_value, instruction_bytes
from netsim.programs.hlo.flops import instruction_flops
from netsim.programs.hlo.loops import loop_trips, trip_count
from netsim.programs.hlo.megascale import megascale_collective, rendezvous, unsupported_reason
from netsim.programs.hlo.mxu import matmuls
from netsim.programs.hlo.opcodes import OPCODES
from netsim.programs.hlo.ops import Collective, Compute, HloProgram, Step, Unmodelled
from netsim.programs.hlo.reading import collective_opcode, read_collective
from netsim.programs.hlo.shapes import leaves
from netsim.programs.hlo.text import Computation, HloSyntaxError, Instruction, Module

__all__ = ["FREE", "flatten"]

Value = frozenset | tuple

FREE = frozenset(
    {
        "parameter",
        "constant",
        "get-tuple-element",
        "tuple",
        "bitcast",
        "after-all",
        "partition-id",
        "replica-id",
        "opt-barrier",
        "optimization-barrier",
        "add-dependency",
        "domain",
    }
)
"""Instructions that take no time: they name, pack or unpack values."""

_UNMODELLED = {
    "send": "cross-slice (DCN) transfer: not simulated",
    "recv": "cross-slice (DCN) transfer: not simulated",
    "send-done": "cross-slice (DCN) transfer: not simulated",
    "recv-done": "cross-slice (DCN) transfer: not simulated",
    "infeed": "host transfer: not simulated",
    "outfeed": "host transfer: not simulated",
    "conditional": "which branch runs is not known: no branch is timed",
    "rng-get-and-update-state": "random-number state: not timed",
    "collective-broadcast": "collective-broadcast: not simulated",
    "ragged-dot": "ragged-dot: FLOPs unknown, timed by the bytes it touches",
}

_NO_DEPS: frozenset = frozenset()


def _flat(value: Value) -> frozenset:
    if isinstance(value, frozenset):
        return value
    return frozenset().union(*(_flat(v) for v in value)) if value else _NO_DEPS


@dataclass
class _Walk:
    module: Module
    steps: list[Step] = field(default_factory=list)
    unmodelled: list[Unmodelled] = field(default_factory=list)
    stream: frozenset = _NO_DEPS
    iteration: tuple[int, ...] = ()
    pending: dict[str, int] = field(default_factory=dict)
    listed: set[tuple[str, int]] = field(default_factory=set)
    trips: Mapping[int, int] = field(default_factory=dict)
    caller: Computation | None = None
    transfers: dict[str, int] = field(default_factory=dict)
    """Megascale transfers in flight: the rendezvous name, and the send and recv instructions' names -> their collective's step."""
    overlap_sync: bool = False
    """Whether a sync collective leaves the stream free (the work after it that does not read it runs beside it)."""

    def note(self, instruction: Instruction, reason: str) -> None:
        key = (instruction.name, instruction.line)
        if key not in self.listed:
            self.listed.add(key)
            self.unmodelled.append(Unmodelled(instruction.name, instruction.opcode, instruction.line, reason))

    def add(self, op: Collective | Compute, reads: frozenset) -> int:
        index = len(self.steps)
        self.steps.append(Step(index, op, tuple(sorted(reads | self.stream)), self.iteration))
        return index

    def computation(self, name: str, line: int) -> Computation:
        computation = self.module.computations.get(name.lstrip("%"))
        if computation is None:
            raise HloSyntaxError(line, f"calls {name}, which the module does not define")
        return computation

    def run(self, computation: Computation, params: list[Value]) -> Value:
        values: dict[str, Value] = {}
        shapes = {i.name: i.shape for i in computation.instructions}
        for instruction in computation.instructions:
            try:
                self.caller = computation
                values[instruction.name] = self.instruction(instruction, values, shapes, params)
            except HloSyntaxError:
                raise
            except (ValueError, KeyError, IndexError) as error:
                message = f"unknown operand {error}" if isinstance(error, KeyError) else str(error)
                raise HloSyntaxError(instruction.line, f"{instruction.opcode} {instruction.name}: {message}") from None
        return values[computation.root.name]

    def instruction(self, ins: Instruction, values: dict[str, Value], shapes: dict, params: list[Value]) -> Value:
        op = ins.opcode
        if op not in OPCODES:
            self.note(ins, f"unknown opcode {op!r}: timed by the bytes it touches")
        reads = _flat(tuple(values[name] for name in ins.operands))
        if op == "parameter":
            index = int(ins.literal)
            return params[index] if index < len(params) else _NO_DEPS
        if op == "tuple":
            return tuple(values[name] for name in ins.operands)
        if op == "get-tuple-element":
            value = values[ins.operands[0]]
            return value[int(ins.attrs["index"])] if isinstance(value, tuple) else value
        if op in ("bitcast", "opt-barrier", "optimization-barrier", "add-dependency", "domain"):
            return values[ins.operands[0]] if ins.operands else _NO_DEPS
        if op in FREE:
            return _NO_DEPS
        if op == "while":
            return self.loop(ins, values[ins.operands[0]])
        if op == "call":
            return self.run(self.computation(ins.attrs.get("to_apply", ""), ins.line), [values[n] for n in ins.operands])
        if op in ("send", "recv", "send-done", "recv-done"):  # megascale transfers across slices first: other host transfers are DMAs
            found_step = self.megascale(ins, shapes, reads)
            if found_step is not None:
                return found_step
        if op == "copy-start" or (op in ("send", "recv") and ins.attrs.get("is_host_transfer") == "true"):
            return self.dma(ins, shapes, reads)
        if op in ("send-done", "recv-done") and ins.operands and ins.operands[0] in self.pending:
            return self.done(ins, values)
        if op in _UNMODELLED and op != "ragged-dot":
            self.note(ins, _UNMODELLED[op])
            return reads
        if op == "ragged-dot":
            self.note(ins, _UNMODELLED[op])
        found = collective_opcode(op)
        if found is not None:
            collective = read_collective(ins, *found, [shapes[n] for n in ins.operands], self.module)
            return self.collective(ins, collective, reads)
        if op in ("async-start", "call-start"):
            return self.async_start(ins, values, shapes, reads)
        if (op.endswith("-done") and collective_opcode(op[: -len("-done")] + "-start")) or op in ("async-done", "call-done"):
            return self.done(ins, values)
        if op == "copy-done":
            return self.done(ins, values) if ins.operands and ins.operands[0] in self.pending else values[ins.operands[0]]
        if op == "async-update":
            return values[ins.operands[0]]
        flops = instruction_flops(ins, shapes, self.module)
        cycles = config_value(ins, "estimated_cycles")
        if op == "custom-call":
            self.note(ins, f"custom-call {ins.attrs.get('custom_call_target', '?')}: FLOPs unknown, timed by the bytes it touches")
        work = matmuls(ins, shapes, self.module)
        nbytes = instruction_bytes(ins, shapes, self.module)
        step = self.add(Compute(ins.name, op, flops, nbytes, int(float(cycles)) if cycles is not None else None, ins.line, work), reads)
        self.stream = frozenset({step})
        return frozenset({step})

    def dma(self, ins: Instruction, shapes: dict, reads: frozenset) -> Value:
        """A copy on the DMA engine (``copy-start``; ``send``/``recv`` to the host): its real size once, beside the stream until its ``-done``."""
        moved = shapes[ins.operands[0]] if ins.opcode in ("copy-start", "send") else leaves(ins.shape)[0]
        nbytes = sum(leaf.nbytes for leaf in leaves(moved))
        step = self.add(Compute(ins.name, ins.opcode, 0, nbytes, None, ins.line, unit="dma"), reads)
        self.pending[ins.name] = step
        return frozenset({step})

    def collective(self, ins: Instruction, collective: Collective, reads: frozenset) -> Value:
        step = self.add(collective, reads)
        if collective.asynchronous:
            self.pending[ins.name] = step
        elif not self.overlap_sync:
            self.stream = frozenset({step})
        return frozenset({step})

    def megascale(self, ins: Instruction, shapes: dict, reads: frozenset) -> Value | None:
        """A megascale ``send``/``recv`` (and their ``-done`` s) as one asynchronous collective step; None for other host transfers."""
        op = ins.opcode
        if op.endswith("-done"):
            step = self.transfers.get(ins.operands[0]) if ins.operands else None
            if step is None:
                return None
            self.stream = self.stream | {step}  # the stream waits for the transfer, as at a collective's -done
            return frozenset({step})
        key = rendezvous(ins)
        if key is None:
            return None
        why = unsupported_reason(ins)
        if why is not None:
            self.note(ins, why)
            return reads
        if op == "recv":
            step = self.transfers.get(key)
            if step is None:
                self.note(ins, "a megascale recv written before its send: not simulated")
                return reads
            self.transfers[ins.name] = step
            return frozenset({step})
        collective = megascale_collective(ins, shapes[ins.operands[0]], self.module.count("replica_count") * self.module.count("num_partitions"))
        if collective is None:
            return None
        step = self.add(collective, reads)
        self.transfers[key] = self.transfers[ins.name] = step
        return frozenset({step})

    def async_start(self, ins: Instruction, values: dict[str, Value], shapes: dict, reads: frozenset) -> Value:
        """An ``async-start`` (``calls=``) or a ``call-start`` (``to_apply=``: TPU7x's collectives offloaded to the SparseCore)."""
        wrapped = self.computation(ins.attrs.get("calls") or ins.attrs.get("to_apply", ""), ins.line)
        inner = wrapped.root
        found = collective_opcode(inner.opcode)
        if found is None:
            step = self.add(
                Compute(ins.name, inner.opcode, 0, instruction_bytes(inner, {i.name: i.shape for i in wrapped.instructions}), None, ins.line), reads
            )
            self.pending[ins.name] = step
            return frozenset({step})
        inner_shapes = {i.name: i.shape for i in wrapped.instructions}
        operand_shapes = [inner_shapes[n] for n in inner.operands] if ins.opcode == "call-start" else [shapes[n] for n in ins.operands]
        collective = read_collective(inner, found[0], True, operand_shapes, self.module, inner.shape)
        collective = Collective(**{**collective.__dict__, "name": ins.name, "line": ins.line})
        return self.collective(ins, collective, reads)

    def done(self, ins: Instruction, values: dict[str, Value]) -> Value:
        start = ins.operands[0]
        step = self.pending.pop(start, None)
        if step is None:
            raise HloSyntaxError(ins.line, f"{ins.opcode} {ins.name} waits for {start}, which is not a pending start")
        self.stream = self.stream | {step}
        return frozenset({step})

    def loop(self, ins: Instruction, state: Value) -> Value:
        body = self.computation(ins.attrs.get("body", ""), ins.line)
        trips = trip_count(ins) if self.caller is None else loop_trips(self.module, ins, self.caller)
        if trips is None:
            self.note(ins, "while loop without a known_trip_count: its body is timed once")
            trips = 1
        trips = self.trips.get(ins.line, trips)
        outer = self.iteration
        for i in range(trips):
            self.iteration = (*outer, i)
            state = self.run(body, [state])
        self.iteration = outer
        return state


def flatten(module: Module, trips: Mapping[int, int] | None = None, overlap_sync: bool = False) -> HloProgram:
    """The module's steps, in scheduled order, with their dependences and what is not modelled.

    ``trips`` gives, by the line of their ``while`` instruction, how many trips of some
    loops to play instead of their ``known_trip_count`` (see :mod:`~netsim.programs.hlo.loops`).
    ``overlap_sync``: a sync collective leaves the instruction stream free (the work after
    it that does not read it runs beside it), as an async pair does.

    Raises
    ------
    HloSyntaxError
        Naming the line of the first instruction whose meaning is not understood.

    Examples
    --------
    >>> from netsim.programs.hlo.text import parse_module
    >>> program = flatten(parse_module('''HloModule m, num_partitions=4
    ... ENTRY %main (p: f32[8]) -> f32[32] {
    ...   %p = f32[8]{0} parameter(0)
    ...   %ag = f32[32]{0} all-gather(%p), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
    ...   ROOT %e = f32[32]{0} exponential(%ag)
    ... }'''))
    >>> [(s.op.name, s.deps) for s in program.steps], program.steps[0].op.groups
    ([('ag', ()), ('e', (0,))], [[0, 1, 2, 3]])

    Work after a sync collective that does not read it waits for it on the stream, or not:

    >>> text = '''HloModule m, num_partitions=4
    ... ENTRY %main (p: f32[8], q: f32[8]) -> f32[32] {
    ...   %p = f32[8]{0} parameter(0)
    ...   %q = f32[8]{0} parameter(1)
    ...   %ag = f32[32]{0} all-gather(%p), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
    ...   %n = f32[8]{0} negate(%q)
    ...   ROOT %e = f32[32]{0} exponential(%ag)
    ... }'''
    >>> [s.deps for s in flatten(parse_module(text)).steps], [s.deps for s in flatten(parse_module(text), overlap_sync=True).steps]
    ([(), (0,), (0, 1)], [(), (), (0, 1)])
    """
    walk = _Walk(module, trips=trips or {}, overlap_sync=overlap_sync)
    entry = module.entry
    walk.run(entry, [])
    for name in walk.pending:
        start = entry.by_name().get(name)
        raise HloSyntaxError(start.line if start else entry.line, f"{name} is started but never waited for by a matching -done")
    devices = module.count("replica_count") * module.count("num_partitions")
    parameters = tuple(leaf.dtype for i in entry.instructions if i.opcode == "parameter" for leaf in leaves(i.shape))
    return HloProgram(module.name, devices, walk.steps, walk.unmodelled, module.is_scheduled, parameter_dtypes=parameters, overlap_sync=overlap_sync)
