"""A ``while`` loop's trip count read from its condition, body and start, when the compiler did not write it.

The CPU compiler writes ``backend_config={"known_trip_count":{"n":"4"}}`` on a counted loop;
the TPU compiler does not. Its counted loops (``jax.lax.scan``, ``fori_loop``) still have
the shape XLA's own trip-count analysis reads: the condition compares one element of the
loop state with a constant (``compare(get-tuple-element(state, k), constant(4)),
direction=LT``), the body adds a constant to that element (``add(get-tuple-element(param,
k), constant(1))`` at position ``k`` of the body's result tuple), and the loop starts from
a tuple whose element ``k`` is a constant. Anything else gives None (the loop's body is
then timed once, and the report says so).
"""

from __future__ import annotations

from netsim.programs.hlo.text import Computation, Instruction, Module

__all__ = ["inferred_trip_count"]

_PASS_THROUGH = frozenset({"copy", "bitcast", "convert", "reshape"})


def _integer(instruction: Instruction | None) -> int | None:
    if instruction is None or instruction.opcode != "constant":
        return None
    try:
        return int(instruction.literal.strip())
    except ValueError:
        return None


def _follow(name: str, by_name: dict[str, Instruction]) -> Instruction | None:
    instruction = by_name.get(name)
    while instruction is not None and instruction.opcode in _PASS_THROUGH and instruction.operands:
        instruction = by_name.get(instruction.operands[0])
    return instruction


def _element(name: str, by_name: dict[str, Instruction]) -> int | None:
    """k when ``name`` is ``get-tuple-element(parameter, index=k)`` (through copies)."""
    instruction = _follow(name, by_name)
    if instruction is None or instruction.opcode != "get-tuple-element":
        return None
    source = _follow(instruction.operands[0], by_name)
    if source is None or source.opcode != "parameter":
        return None
    return int(instruction.attrs.get("index", "-1"))


def _condition(condition: Computation) -> tuple[int, int, str] | None:
    """(the state element compared, the constant, the direction as if the element were on the left)."""
    by_name = condition.by_name()
    root = _follow(condition.root.name, by_name)
    if root is None or root.opcode != "compare" or len(root.operands) != 2:
        return None
    direction = root.attrs.get("direction", "")
    flipped = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "NE": "NE"}
    for left, right, way in ((0, 1, direction), (1, 0, flipped.get(direction, ""))):
        k, limit = _element(root.operands[left], by_name), _integer(_follow(root.operands[right], by_name))
        if k is not None and limit is not None and way:
            return k, limit, way
    return None


def _step(body: Computation, k: int) -> int | None:
    """The constant the body adds to state element ``k`` each time round."""
    by_name = body.by_name()
    root = _follow(body.root.name, by_name)
    if root is None or root.opcode != "tuple" or k >= len(root.operands):
        return None
    update = _follow(root.operands[k], by_name)
    if update is None or update.opcode not in ("add", "subtract") or len(update.operands) != 2:
        return None
    for mine, other in ((0, 1), (1, 0)) if update.opcode == "add" else ((0, 1),):
        if _element(update.operands[mine], by_name) == k:
            step = _integer(_follow(update.operands[other], by_name))
            if step is not None:
                return step if update.opcode == "add" else -step
    return None


def inferred_trip_count(module: Module, loop: Instruction, caller: Computation) -> int | None:
    """How many times the ``while`` instruction ``loop`` (in ``caller``) runs its body, or None when it cannot be read.

    Examples
    --------
    >>> from netsim.programs.hlo.text import parse_module
    >>> m = parse_module('''HloModule m
    ... %cond (s: (s32[], f32[4])) -> pred[] {
    ...   %s = (s32[], f32[4]) parameter(0)
    ...   %i = s32[] get-tuple-element(%s), index=0
    ...   %n = s32[] constant(6)
    ...   ROOT %lt = pred[] compare(%i, %n), direction=LT
    ... }
    ... %body (s: (s32[], f32[4])) -> (s32[], f32[4]) {
    ...   %s = (s32[], f32[4]) parameter(0)
    ...   %i = s32[] get-tuple-element(%s), index=0
    ...   %x = f32[4] get-tuple-element(%s), index=1
    ...   %one = s32[] constant(2)
    ...   %next = s32[] add(%i, %one)
    ...   ROOT %t = (s32[], f32[4]) tuple(%next, %x)
    ... }
    ... ENTRY %main (x: f32[4]) -> (s32[], f32[4]) {
    ...   %x = f32[4] parameter(0)
    ...   %zero = s32[] constant(0)
    ...   %start = (s32[], f32[4]) tuple(%zero, %x)
    ...   ROOT %w = (s32[], f32[4]) while(%start), condition=%cond, body=%body
    ... }''')
    >>> inferred_trip_count(m, m.entry.root, m.entry)
    3
    """
    condition = module.computations.get(loop.attrs.get("condition", "").lstrip("%"))
    body = module.computations.get(loop.attrs.get("body", "").lstrip("%"))
    if condition is None or body is None or not loop.operands:
        return None
    found = _condition(condition)
    if found is None:
        return None
    k, limit, direction = found
    by_name = caller.by_name()
    start_tuple = _follow(loop.operands[0], by_name)
    if start_tuple is None or start_tuple.opcode != "tuple" or k >= len(start_tuple.operands):
        return None
    start, step = _integer(_follow(start_tuple.operands[k], by_name)), _step(body, k)
    if start is None or not step:
        return None
    if direction in ("LT", "LE") and step > 0:  # whole numbers throughout: no float rounds a count past 2**53
        return max(0, -(-(limit - start + (direction == "LE")) // step))
    if direction in ("GT", "GE") and step < 0:
        return max(0, -(-(start - limit + (direction == "GE")) // -step))
    if direction == "NE" and (limit - start) % step == 0 and (limit - start) // step >= 0:
        return (limit - start) // step
    return None
