"""Checks of a parsed HLO module that the walk into steps relies on, each naming the line and the fix.

:func:`check_module` refuses, before any step is made: a header count
(``num_partitions``, ``replica_count``) that is not a whole number from 1 to
:data:`~netsim.scenario.MAX_DEVICES` in all; an instruction name written twice in one
computation; a ``to_apply=``, ``calls=``, ``body=`` or ``condition=`` naming no
computation; a computation calling itself; a shape with more than :data:`MAX_RANK`
dimensions or dims multiplying (zeros left out) to more than :data:`MAX_ARRAY_BYTES` bytes; a bad ``known_trip_count``.
"""

from __future__ import annotations

import math

from netsim.programs.hlo.loops import long_loops
from netsim.programs.hlo.shapes import DTYPE_BITS, leaves
from netsim.programs.hlo.text import HloSyntaxError, Module, cut_long_words, shown
from netsim.scenario.topology_spec import MAX_DEVICES

__all__ = ["MAX_ARRAY_BYTES", "MAX_RANK", "check_module", "cut_long_words", "shown"]

MAX_RANK = 32
"""The most dimensions an array shape may have (XLA's own limit is lower in practice; NumPy's is 64)."""

MAX_ARRAY_BYTES = 2**50
"""The largest array read (1 PiB on one device: far beyond any chip's memory)."""


def _count(module: Module, attr: str) -> int:
    text = module.attrs.get(attr, "1").strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 12 and 1 <= int(text) <= MAX_DEVICES):
        raise HloSyntaxError(1, f"{attr}={shown(text)}: expected a whole number of devices from 1 to {MAX_DEVICES}")
    return int(text)


def check_module(module: Module) -> None:
    """Refuse what the walk into steps would misread (see the module docstring).

    Raises
    ------
    HloSyntaxError
        Naming the line and what to fix.

    Examples
    --------
    >>> from netsim.programs.hlo.text import parse_module
    >>> check_module(parse_module('''HloModule m, num_partitions=2
    ... ENTRY %main (p: f32[4]) -> f32[4] {
    ...   %p = f32[4]{0} parameter(0)
    ...   ROOT %ar = f32[4]{0} all-reduce(%p), replica_groups={{0,1}}, to_apply=%sum
    ... }'''))
    Traceback (most recent call last):
    ...
    netsim.programs.hlo.text.HloSyntaxError: line 4: all-reduce ar: to_apply=%sum names no computation of the module
    """
    devices = _count(module, "num_partitions") * _count(module, "replica_count")
    if devices > MAX_DEVICES:
        raise HloSyntaxError(1, f"num_partitions x replica_count is {devices} devices, more than netsim simulates ({MAX_DEVICES})")
    for computation in module.computations.values():
        lines: dict[str, int] = {}
        for instruction in computation.instructions:
            if instruction.name in lines:
                raise HloSyntaxError(
                    instruction.line, f"{shown(instruction.name)} is defined twice in {computation.name} (first at line {lines[instruction.name]}); rename one"
                )
            lines[instruction.name] = instruction.line
            for attr in ("to_apply", "calls", "body", "condition"):
                named = instruction.attrs.get(attr)
                if named is None or "{" in named or "," in named:  # a list of computations (a conditional's branches) is not followed
                    continue
                if named.strip().lstrip("%") not in module.computations:
                    raise HloSyntaxError(
                        instruction.line, f"{instruction.opcode} {shown(instruction.name)}: {attr}={shown(named)} names no computation of the module"
                    )
            for array in leaves(instruction.shape):
                if len(array.dims) > MAX_RANK:
                    raise HloSyntaxError(
                        instruction.line, f"{instruction.opcode} {shown(instruction.name)}: a shape of {len(array.dims)} dimensions; at most {MAX_RANK}"
                    )
                if math.prod(d for d in array.dims if d) * DTYPE_BITS[array.dtype] > 8 * MAX_ARRAY_BYTES:
                    raise HloSyntaxError(
                        instruction.line,
                        f"{instruction.opcode} {shown(instruction.name)}: the shape {shown(str(array))} is too large: its dims (zeros left out)"
                        " multiply to more than 2^50 bytes (1 PiB); give the real shape",
                    )
    long_loops(module)  # trip counts, calls that loop back, too many long loops
