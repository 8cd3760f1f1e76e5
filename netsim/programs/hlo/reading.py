"""One HLO collective instruction read into a :class:`~netsim.programs.hlo.ops.Collective`.

Sync collectives carry their attributes themselves; an async pair's ``*-start`` does (its
result is a tuple ending in bookkeeping); a generic ``async-start`` names the computation
that wraps the collective with ``calls=``. Ids are made global device ids
(:func:`~netsim.programs.hlo.groups.global_groups`).
"""

from __future__ import annotations

import json

from netsim.programs.hlo.compute import config_value, dim_list
from netsim.programs.hlo.groups import global_groups, group_mode, parse_pairs, parse_replica_groups
from netsim.programs.hlo.ops import COLLECTIVES, Collective
from netsim.programs.hlo.shapes import Array, Shape, leaves
from netsim.programs.hlo.text import Instruction, Module

__all__ = ["collective_opcode", "read_collective"]


def collective_opcode(opcode: str) -> tuple[str, bool] | None:
    """(the collective, asynchronous?) an opcode starts, or None.

    Examples
    --------
    >>> collective_opcode("all-gather-start"), collective_opcode("all-reduce"), collective_opcode("add")
    (('all-gather', True), ('all-reduce', False), None)
    """
    if opcode in COLLECTIVES:
        return opcode, False
    if opcode.endswith("-start") and opcode[: -len("-start")] in COLLECTIVES:
        return opcode[: -len("-start")], True
    return None


def _algorithm(instruction: Instruction) -> str | None:
    config = config_value(instruction, "collective_algorithm_config")
    if config is None or config == {}:
        return None
    return config if isinstance(config, str) else json.dumps(config, separators=(",", ":"), sort_keys=True)


def _arrays(shapes: list[Shape]) -> tuple[Array, ...]:
    return tuple(leaf for shape in shapes for leaf in leaves(shape))


def read_collective(
    instruction: Instruction, op: str, asynchronous: bool, operand_shapes: list[Shape], module: Module, result: Shape | None = None
) -> Collective:
    """The collective that ``instruction`` (sync, ``*-start`` or the one an ``async-start`` wraps) runs.

    ``operand_shapes`` are the shapes of its operands; ``result`` its result when it is
    not the instruction's own (async starts return bookkeeping tuples).

    Raises
    ------
    ValueError
        If its groups or pairs are not understood, or do not fit the module's devices.
    """
    attrs = instruction.attrs
    replicas, partitions = module.count("replica_count"), module.count("num_partitions")
    operands = _arrays(operand_shapes)
    if op == "ragged-all-to-all":
        operands = operands[:1]  # the input buffer; the rest are the output buffer and the sizes
    if result is None:
        result = instruction.shape
    results = _arrays([result])
    if asynchronous and op in ("all-gather", "collective-permute") and len(results) > len(operands):
        results = results[len(operands) : 2 * len(operands)] if op == "all-gather" else results[1:2]
    mode = "partition" if "channel_id" in attrs and op == "collective-permute" else group_mode(op, attrs)
    dims = dim_list(attrs.get("dimensions"))
    common = {
        "name": instruction.name,
        "op": op,
        "operands": operands,
        "results": results,
        "dimension": dims[0] if dims else None,
        "asynchronous": asynchronous,
        "compiler_algorithm": _algorithm(instruction),
        "line": instruction.line,
    }
    if op == "collective-permute":
        if "source_target_pairs" not in attrs:
            raise ValueError("a collective-permute needs source_target_pairs={{a,b},...}")
        pairs = parse_pairs(attrs["source_target_pairs"])
        for end, what, verb in ((0, "source", "send from"), (1, "target", "send to")):
            first: dict[int, tuple[int, int]] = {}
            for pair in pairs:
                if pair[end] in first:
                    a, b = first[pair[end]], pair
                    raise ValueError(f"source_target_pairs repeat the {what} {pair[end]}: {{{a[0]},{a[1]}}} and {{{b[0]},{b[1]}}} both {verb} it")
                first[pair[end]] = pair
        total = replicas * partitions
        if mode == "partition":
            pairs = [(r * partitions + s, r * partitions + t) for r in range(replicas) for s, t in pairs]
        else:
            pairs = [(s * partitions + p, t * partitions + p) for p in range(partitions) for s, t in pairs]
        bad = [p for p in pairs if not (0 <= p[0] < total and 0 <= p[1] < total)]
        if bad:
            raise ValueError(f"source_target_pairs name devices outside 0..{total - 1}: {bad[:3]}")
        return Collective(groups=[], pairs=pairs, **common)
    groups = parse_replica_groups(attrs.get("replica_groups", "{}"))
    return Collective(groups=global_groups(groups, mode, replicas, partitions), **common)
