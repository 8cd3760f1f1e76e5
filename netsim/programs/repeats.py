"""Repeated blocks of a program's ops: written once with ``repeat: N``, unrolled for a number of trips, their time extended.

A program file may write a block of ops that repeats (as ``jax.lax.scan`` over layers
compiles to a loop)::

    ops:
      - repeat: 80
        ops:
          - {name: gather, op: all_gather, in: W, axes: X, axis: 0, tiled: true, out: W_full}
          - {name: layer, op: matmul, in: [x, W_full], out: x}     # x: the loop's carry

Unrolled (:func:`unrolled`), trip ``t`` of a block names its ops ``NAME@t`` and the arrays
they write ``OUT@t``; an op reads the latest array of a name (written earlier in its trip,
by the trip before for a carry, or before the block), and ``after`` names the latest op
of a name done before it (the previous trip's, for one later in the block; none on the
first trip). After the block, its arrays are those of its last trip.

:func:`extend_blocks` plays a few trips of each block (:func:`netsim.programs.periods.extend_trips`,
the other blocks at one trip) until each trip's time is steady or periodic, checks that the
blocks add (the run with every block at its trips played takes what the runs of one block
each add to the run of one trip each), and adds the whole periods left. Blocks that do not
add, or whose trips drift, are played whole (or refused when too big: ``can_play``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from netsim.programs.ops import Op
from netsim.programs.periods import MAX_PERIOD, STEADY_RTOL, DriftError, Repetition, extend_trips

__all__ = ["Block", "BlockExtension", "extend_blocks", "unrolled", "written_name"]

TRIP_MARK = "@"
"""What joins an op's or array's name and its trip in an unrolled block (``layer@3``)."""


def written_name(name: str) -> str:
    """An op's name as written: ``layer@3`` (trip 3 of a ``repeat:`` block) is ``layer``.

    Examples
    --------
    >>> written_name("layer@3"), written_name("head")
    ('layer', 'head')
    """
    return name.rpartition(TRIP_MARK)[0] or name


@dataclass(frozen=True)
class Block:
    """Ops written once that run ``count`` times in a row."""

    count: int
    ops: tuple[Op, ...]


def unrolled(items: Sequence[Op | Block], trips: Sequence[int] | None = None) -> tuple[Op, ...]:
    """The ops of ``items`` with every block unrolled (block ``i`` for ``trips[i]`` trips; default its count).

    Examples
    --------
    >>> mm = Op.of("layer", "matmul", ("x", "W"), "x")
    >>> out = Op.of("head", "matmul", ("x", "V"), "y")
    >>> [(op.name, op.inputs, op.output) for op in unrolled([Block(2, (mm,)), out])]
    [('layer@1', ('x', 'W'), 'x@1'), ('layer@2', ('x@1', 'W'), 'x@2'), ('head', ('x@2', 'V'), 'y')]
    """
    blocks = [item for item in items if isinstance(item, Block)]
    trips = list(trips) if trips is not None else [block.count for block in blocks]
    arrays: dict[str, str] = {}
    done: dict[str, str] = {}
    made: list[Op] = []
    index = 0
    for item in items:
        if isinstance(item, Op):
            made.append(_renamed(item, item.name, arrays, done, item.output))
            continue
        own = {op.name for op in item.ops}
        for t in range(1, trips[index] + 1):
            for op in item.ops:
                made.append(_renamed(op, f"{op.name}{TRIP_MARK}{t}", arrays, done, op.output and f"{op.output}{TRIP_MARK}{t}", own if t == 1 else ()))
        index += 1
    return tuple(made)


def _renamed(op: Op, name: str, arrays: dict[str, str], done: dict[str, str], output: str | None, not_yet: set[str] | tuple = ()) -> Op:
    """``op`` named ``name``, reading the latest arrays and waiting for the latest ops of its names; records what it makes."""
    after = tuple(done.get(a, a) for a in op.after if a in done or a not in not_yet)
    copy = dataclasses.replace(op, name=name, inputs=tuple(arrays.get(a, a) for a in op.inputs), output=output, after=after)
    done[op.name] = name
    if op.output is not None:
        arrays[op.output] = output
    return copy


@dataclass(frozen=True)
class BlockExtension:
    """How the time of a program with repeated blocks was found.

    Attributes
    ----------
    blocks : tuple of Repetition
        Per block (in the order written): its trips, those played, its period and what a period adds.
    played_time_s : float
        The time of the run reported (every block at its trips played).
    time_s : float
        The time with every trip of every block.
    runs : int
        How many runs were played.
    """

    blocks: tuple[Repetition, ...]
    played_time_s: float
    time_s: float
    runs: int

    @property
    def played(self) -> tuple[int, ...]:
        """The trips of each block in the run reported."""
        return tuple(block.played for block in self.blocks)

    def describe(self) -> list[str]:
        """One line per block, as the report prints it."""
        return [f"block {i} ({block.describe()})" for i, block in enumerate(self.blocks, 1)]

    def to_dict(self) -> dict:
        """The extension as JSON-ready data."""
        return {"blocks": [block.to_dict() for block in self.blocks], "played_time_s": self.played_time_s, "time_s": self.time_s, "runs": self.runs}


def extend_blocks(
    counts: Sequence[int], time_at: Callable[[tuple[int, ...]], float], can_play: Callable[[tuple[int, ...]], bool] = lambda trips: True
) -> BlockExtension:
    """The time of a program whose blocks run ``counts`` trips, from runs of fewer (``time_at(trips)``).

    Raises
    ------
    DriftError
        If a block's trips drift, or the blocks do not add, and every trip is too many to play.

    Examples
    --------
    Made-up runs: 2 us of set-up, a first block of trips of 3 then 1 us in turn, a second of 5 us trips.

    >>> def time_at(trips):
    ...     first, second = trips
    ...     return 2e-6 + sum((3e-6, 1e-6)[i % 2] for i in range(first)) + 5e-6 * second
    >>> e = extend_blocks((81, 1000), time_at)
    >>> [(b.pattern, b.period, b.played) for b in e.blocks], round(e.time_s * 1e6, 6)
    ([('periodic', 2, 11), ('steady', 1, 10)], 5165.0)
    """
    runs: dict[tuple[int, ...], float] = {}

    def run(trips: tuple[int, ...]) -> float:
        if trips not in runs:
            runs[trips] = time_at(trips)
        return runs[trips]

    ones = tuple(1 for _ in counts)

    def at(i: int, t: int) -> tuple[int, ...]:
        return tuple(t if j == i else 1 for j in range(len(counts)))

    blocks = []
    for i, count in enumerate(counts):
        try:
            blocks.append(extend_trips(count, lambda t, i=i: run(at(i, t)), lambda t, i=i: can_play(at(i, t))))
        except DriftError:
            return _whole(counts, run, can_play, f"block {i + 1}'s trips drift")
    played = tuple(block.played for block in blocks)
    top = run(played)
    added = run(ones) + sum(run(at(i, block.played)) - run(ones) for i, block in enumerate(blocks))

    def off(time: float, expected: float) -> bool:  # further apart than rounding, on the scale of the runs played
        return abs(time - expected) > STEADY_RTOL * max(abs(t) for t in runs.values())

    if off(top, added):
        return _whole(counts, run, can_play, "the blocks do not add (one block's trips change another's)")
    further = tuple(block.played + _further(block) for block in blocks)  # checked once more, whole periods further on
    if further != played and can_play(further) and off(run(further), _extended_to(top, blocks, further)):  # (later trips may slow earlier ones)
        return _whole(counts, run, can_play, f"the trips played further on ({', '.join(map(str, further))}) do not add what the first ones did")
    return BlockExtension(tuple(blocks), top, _extended_to(top, blocks, counts), len(runs))


def _extended_to(top: float, blocks: Sequence[Repetition], trips: Sequence[int]) -> float:
    """The time at ``trips`` of each block: the run played (``top``) and, per block, the whole periods beyond its trips played."""
    return top + sum((t - block.played) // block.period * block.period_s for t, block in zip(trips, blocks, strict=True) if block.period)


def _further(block: Repetition) -> int:
    """How many more trips the extension's check plays of a block: whole periods, at least :data:`MAX_PERIOD`, at most what is left."""
    if not block.period:
        return 0
    left = (block.trips - block.played) // block.period * block.period
    return min(left, -(-MAX_PERIOD // block.period) * block.period)


def _whole(counts: Sequence[int], run: Callable[[tuple[int, ...]], float], can_play: Callable[[tuple[int, ...]], bool], why: str) -> BlockExtension:
    """Every trip played (what is left when extending would not be exact), or refused when too big."""
    full = tuple(counts)
    if not can_play(full):
        raise DriftError(f"{why}, and every trip is too much to play; play fewer trips")
    time = run(full)
    return BlockExtension(tuple(Repetition(c, c, 0, 0.0, time, time, 1, "played") for c in counts), time, time, 1)
