"""Long ``while`` loops: their trip counts checked, their steps counted, their time extended from a steady or periodic state.

A compiled training step is often a ``while`` loop run thousands (or, in a test,
10^12) times. Every trip of such a loop plays the same instructions on the same
links, so once the pipeline between trips has filled, the time each trip adds
settles or repeats (a ring of 4 devices can make every 4th trip slower). Unrolling
all of them would take time and memory in proportion to the trip count. Instead,
one loop of more than :data:`FULL_TRIPS` trips (a *long* loop) is played for 1, 2,
... trips until the time each trip adds is steady or periodic
(:func:`netsim.programs.periods.extend_trips`: a period of up to
:data:`~netsim.programs.periods.MAX_PERIOD` trips), and the rest of its trips are
extended by whole periods; a loop whose trips drift is played whole, or refused
when too long. With several long loops (one after another, or one inside another)
the time is taken as linear in each loop's trip count: the runs at the corners
``{k, k + 1}`` of every long loop give the coefficients, the mixed differences of a
nested pair included, checked once more 8 trips further on (a period the corners cannot
see shows there); a module whose time is not linear in its loops' trips, or linear only
within the strays :data:`JITTER_RTOL` allows, is played whole when it fits (exact), else
extended: within those strays with the bound they put on the time, or from its last trips
with "still changing" in the report.
What was played and what was extended is in the report (:class:`Extension`).

The steps a module unrolls into are counted before anything is built
(:func:`unrolled_steps`); more than :data:`MAX_STEPS` is refused with the number.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from netsim.programs.hlo.compute import backend_config
from netsim.programs.hlo.text import Computation, HloSyntaxError, Instruction, Module
from netsim.programs.hlo.trips import inferred_trip_count
from netsim.programs.periods import MAX_PERIOD, Repetition, extend_trips

__all__ = [
    "FULL_TRIPS",
    "MAX_STEPS",
    "MAX_TRIPS",
    "STEADY_RTOL",
    "Extension",
    "Loop",
    "check_steps",
    "extend",
    "long_loops",
    "loop_trips",
    "multilinear_at",
    "trip_count",
    "unrolled_steps",
]

FULL_TRIPS = 16
"""Loops of at most this many trips are played trip by trip; longer ones are extended from their steady state."""

MAX_TRIPS = 10**18
"""The largest ``known_trip_count`` read (a loop of more trips than that would not end in any machine's lifetime)."""

MAX_STEPS = 200_000
"""The most steps a module may unroll into (a long loop counted at the few trips played): each is lowered and played."""

MAX_LEVEL = 8
"""The most trips of each long loop played while looking for the steady state (``k + 2``)."""

MAX_LONG_LOOPS = 3
"""The most long loops extended together: each level plays ``2 ** loops`` runs."""

STEADY_RTOL = 1e-9
"""Two per-trip times are the same when they differ by at most this fraction of the run's time."""

JITTER_RTOL = 1e-5
"""Trips whose times differ by at most this fraction of a trip (the nanoseconds by which chips drift apart on a
big slice, trip after trip: under calibrated terms a 128B step's 63 ms forward trips stray by about half a
microsecond, 8e-6 of a trip) are taken as steady *within* that difference when every trip is too many to play:
the report gives the bound it puts on the time (:attr:`Extension.within_s`). When every trip fits in a run, they are
all played instead (the time exact)."""

NOISE_RTOL = 1e-12
"""A mixed difference of the runs' times smaller than this fraction of them is rounding, taken as zero (loops one after another add no cross term)."""

MAX_CALL_DEPTH = 200
"""The deepest chain of computations calling computations read (a deeper one is refused, not a RecursionError)."""

_NO_STEP = frozenset(
    {
        "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "partition-id", "replica-id",
        "opt-barrier", "optimization-barrier", "add-dependency", "domain", "async-update", "copy-done", "async-done",
        "send", "recv", "send-done", "recv-done", "infeed", "outfeed", "conditional", "rng-get-and-update-state",
        "collective-broadcast",
    }
)  # fmt: skip
"""Opcodes that add no step of their own (they name values, wait, or are not modelled): as :mod:`~netsim.programs.hlo.flatten` walks them."""


@dataclass(frozen=True)
class Loop:
    """A long ``while`` loop: its instruction's name and line, and its ``known_trip_count``."""

    name: str
    line: int
    trips: int


@dataclass(frozen=True)
class Extension:
    """How a run's time was extended past the trips played.

    Attributes
    ----------
    loops : tuple of Loop
        The long loops.
    played : tuple of int
        The trips of each that were played in the run reported (its statistics are that run's).
    per_trip_s : tuple of float
        The time each further trip of each loop adds (the other loops at all their trips).
    played_time_s : float
        The time of the run played.
    time_s : float
        The time with every trip: what the report gives as the run's time.
    steady : bool
        Whether the per-trip times had stopped changing; False when they were still
        changing after :data:`MAX_LEVEL` trips (the last ones are used).
    runs : int
        How many runs were played to find them.
    repetition : Repetition or None
        For one long loop: the steady or periodic state found (:mod:`netsim.programs.periods`).
    within_s : float
        0 when the runs fit the model exactly (to :data:`STEADY_RTOL`); else how far, at most, a
        trip's time was seen to stray from it (under :data:`JITTER_RTOL` of a trip): each trip
        extended may be off by that much, :attr:`bound_s` in all.
    """

    loops: tuple[Loop, ...]
    played: tuple[int, ...]
    per_trip_s: tuple[float, ...]
    played_time_s: float
    time_s: float
    steady: bool
    runs: int
    repetition: Repetition | None = None
    within_s: float = 0.0

    @property
    def every_trip_played(self) -> bool:
        """Whether the run reported played every trip of every loop (its time is then exact, extended by nothing)."""
        return self.played == tuple(loop.trips for loop in self.loops)

    @property
    def bound_s(self) -> float:
        """How far, at most, the extended time may be off: :attr:`within_s` for every trip extended.

        Examples
        --------
        >>> round(Extension((Loop("w", 1, 100),), (3,), (2e-6,), 7e-6, 2e-4, True, 8, within_s=1e-9).bound_s * 1e9, 6)  # 97 trips extended
        97.0
        """
        return self.within_s * sum(loop.trips - played for loop, played in zip(self.loops, self.played, strict=True))

    def describe(self) -> list[str]:
        """One line per loop, as the report prints it.

        Examples
        --------
        >>> e = Extension((Loop("while.3", 12, 10**12),), (3,), (2e-6,), 7e-6, 2.000000000001e6, True, 3)
        >>> e.describe()
        ['while.3 (line 12): 1000000000000 trips; 3 played, each further one adds 2 us (the same for the last trips played)']
        """
        if self.repetition is not None:
            return [f"{self.loops[0].name} (line {self.loops[0].line}): {self.repetition.describe()}"]
        if self.every_trip_played:
            why = f"strays by up to {self.within_s * 1e9:.3g} ns from linear in the trips" if self.within_s else "is not linear in the trips"
            return [f"{loop.name} (line {loop.line}): {loop.trips} trips; every trip played (the time a trip adds {why})" for loop in self.loops]
        state = "the same for the last trips played" if self.steady else "still changing: the last trips' time used"
        if self.steady and self.within_s:
            state = f"the same to within {self.within_s * 1e9:.3g} ns a trip: the time to +-{self.bound_s * 1e6:.3g} us"
        return [
            f"{loop.name} (line {loop.line}): {loop.trips} trips; {played} played, each further one adds {per * 1e6:.4g} us ({state})"
            for loop, played, per in zip(self.loops, self.played, self.per_trip_s, strict=True)
        ]

    def to_dict(self) -> dict:
        """The extension as JSON-ready data."""
        pattern = {"pattern": self.repetition.pattern, "period": self.repetition.period, "period_s": self.repetition.period_s} if self.repetition else {}
        return {
            **pattern,
            "loops": [
                {"hlo_name": loop.name, "line": loop.line, "trips": loop.trips, "played": played, "per_trip_s": per}
                for loop, played, per in zip(self.loops, self.played, self.per_trip_s, strict=True)
            ],
            "played_time_s": self.played_time_s,
            "time_s": self.time_s,
            "steady": self.steady,
            "runs": self.runs,
            "within_s": self.within_s,
            "bound_s": self.bound_s,
        }


def trip_count(instruction: Instruction) -> int | None:
    """A ``while`` instruction's ``known_trip_count`` (None when it has none).

    Raises
    ------
    HloSyntaxError
        If it is not a whole number from 0 to :data:`MAX_TRIPS`.

    Examples
    --------
    >>> from netsim.programs.hlo.text import parse_instruction
    >>> w = parse_instruction('%w = s32[] while(%x), condition=%c, body=%b, backend_config={"known_trip_count":{"n":"-5"}}', 9)
    >>> trip_count(w)
    Traceback (most recent call last):
    ...
    netsim.programs.hlo.text.HloSyntaxError: line 9: while w: known_trip_count -5 is not a whole number from 0 to 10^18
    """
    found = backend_config(instruction).get("known_trip_count")
    written = found.get("n") if isinstance(found, dict) else found
    if written is None:
        return None
    text = str(written).strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 19 and int(text) <= MAX_TRIPS):
        shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
        raise HloSyntaxError(instruction.line, f"while {instruction.name}: known_trip_count {shown} is not a whole number from 0 to 10^18")
    return int(text)


def loop_trips(module: Module, instruction: Instruction, caller: Computation) -> int | None:
    """A ``while`` instruction's trips: its ``known_trip_count``, else what its condition, body and start say
    (:func:`~netsim.programs.hlo.trips.inferred_trip_count`, as the TPU compiler writes no count), else None."""
    trips = trip_count(instruction)
    if trips is None:
        trips = inferred_trip_count(module, instruction, caller)
        if trips is not None and trips > MAX_TRIPS:
            raise HloSyntaxError(instruction.line, f"while {instruction.name}: its condition gives {trips} trips, more than 10^18")
    return trips


def _callee(instruction: Instruction, attr: str) -> str | None:
    name = instruction.attrs.get(attr)
    return None if name is None else name.strip().lstrip("%")


def _walk(module: Module, visit: Callable[[Instruction, int, Computation], None]) -> None:
    """Call ``visit(instruction, depth, computation)`` on every instruction reached from ENTRY (each computation once); refuse cycles."""
    seen: set[str] = set()

    def enter(name: str, depth: int, line: int, path: tuple[str, ...]) -> None:
        if name in path:
            raise HloSyntaxError(line, f"computation {name} calls itself (through {' -> '.join((*path[path.index(name) :], name))})")
        if depth > MAX_CALL_DEPTH:
            raise HloSyntaxError(line, f"computations call each other more than {MAX_CALL_DEPTH} deep")
        if name in seen or name not in module.computations:
            return
        seen.add(name)
        computation = module.computations[name]
        for instruction in computation.instructions:
            visit(instruction, depth, computation)
            for attr in ("body", "to_apply", "calls", "condition"):
                callee = _callee(instruction, attr)
                if callee is not None and "," not in callee and "{" not in callee:
                    enter(callee, depth + 1, instruction.line, (*path, name))

    enter(module.entry.name, 0, module.entry.line, ())


def long_loops(module: Module) -> tuple[Loop, ...]:
    """The module's ``while`` loops of more than :data:`FULL_TRIPS` trips, in the order written.

    Raises
    ------
    HloSyntaxError
        For a bad trip count, a computation that calls itself, or more long loops than
        :data:`MAX_LONG_LOOPS`.
    """
    found: dict[int, Loop] = {}

    def visit(instruction: Instruction, depth: int, computation: Computation) -> None:
        if instruction.opcode == "while":
            trips = loop_trips(module, instruction, computation)
            if trips is not None and trips > FULL_TRIPS:
                found[instruction.line] = Loop(instruction.name, instruction.line, trips)

    _walk(module, visit)
    loops = tuple(sorted(found.values(), key=lambda loop: loop.line))
    if len(loops) > MAX_LONG_LOOPS:
        names = ", ".join(f"{loop.name} (line {loop.line})" for loop in loops)
        raise HloSyntaxError(
            loops[MAX_LONG_LOOPS].line, f"{len(loops)} while loops of more than {FULL_TRIPS} trips ({names}); netsim extends at most {MAX_LONG_LOOPS}"
        )
    return loops


def unrolled_steps(module: Module, trips: Mapping[int, int] | None = None) -> int:
    """The steps :func:`~netsim.programs.hlo.flatten.flatten` makes of ``module`` (``trips``: loops' trips played, by line), without making them.

    Examples
    --------
    >>> from netsim.programs.hlo.text import parse_module
    >>> m = parse_module('''HloModule m
    ... %body (p: f32[8]) -> f32[8] {
    ...   %p = f32[8]{0} parameter(0)
    ...   ROOT %e = f32[8]{0} exponential(%p)
    ... }
    ... ENTRY %main (x: f32[8]) -> f32[8] {
    ...   %x = f32[8]{0} parameter(0)
    ...   ROOT %w = f32[8]{0} while(%x), condition=%c, body=%body, backend_config={"known_trip_count":{"n":"1000000"}}
    ... }''')
    >>> unrolled_steps(m), unrolled_steps(m, {8: 3})
    (1000000, 3)
    """
    trips = trips or {}
    counts: dict[str, int] = {}
    _walk(module, lambda instruction, depth, computation: None)  # cycles and depth refused first: the count below recurses safely

    def count(name: str) -> int:
        if name in counts:
            return counts[name]
        computation = module.computations.get(name)
        total = 0
        for instruction in computation.instructions if computation is not None else ():
            op = instruction.opcode
            if op == "while":
                body = _callee(instruction, "body")
                times = trips.get(instruction.line, loop_trips(module, instruction, computation))
                total += (1 if times is None else times) * (count(body) if body else 0)
            elif op == "call":
                callee = _callee(instruction, "to_apply")
                total += count(callee) if callee else 0
            elif op not in _NO_STEP and not (op.endswith("-done") and op != "copy-done"):
                total += 1
        counts[name] = total
        return total

    return count(module.entry.name)


def check_steps(module: Module, trips: Mapping[int, int], loops: tuple[Loop, ...]) -> None:
    """Refuse a module that would unroll into more than :data:`MAX_STEPS` steps, with the number.

    Raises
    ------
    HloSyntaxError
        Naming the count, the limit and what to do.
    """
    steps = unrolled_steps(module, trips)
    if steps > MAX_STEPS:
        extended = f" (the {len(loops)} loop(s) of more than {FULL_TRIPS} trips counted at {max(trips.values())})" if loops else ""
        raise HloSyntaxError(
            module.entry.line,
            f"the module unrolls into {steps} steps{extended}, more than the {MAX_STEPS} netsim plays; "
            "simulate fewer loop trips or a smaller part of the program",
        )


def multilinear_at(values: Mapping[tuple[int, ...], float], point: tuple[int, ...], level: int = 1) -> float | None:
    """What a quantity multilinear in the loops' trips (as a lowering's counts are) comes to at ``point``,
    from its ``values`` at the corners ``{level, level + 1}`` of every loop (None while a corner is missing).

    Examples
    --------
    >>> corners = {(a, b): 100 + 7 * a + 5 * b + 2 * a * b for a in (1, 2) for b in (1, 2)}
    >>> multilinear_at(corners, (10, 20)), 100 + 70 + 100 + 400
    (670.0, 670)
    """
    k = len(point)
    total = 0.0
    for subset in itertools.product((0, 1), repeat=k):
        difference = 0.0
        for corner in itertools.product((0, 1), repeat=k):
            if all(c <= s for c, s in zip(corner, subset, strict=True)):
                value = values.get(tuple(level + c for c in corner))
                if value is None:
                    return None
                difference += (-1 if (sum(subset) - sum(corner)) % 2 else 1) * value
        total += difference * math.prod(n - level for n, s in zip(point, subset, strict=True) if s)
    return total


def extend(loops: tuple[Loop, ...], time_at: Callable[[dict[int, int]], float], can_play: Callable[[dict[int, int]], bool]) -> tuple[Extension, dict[int, int]]:
    """The time with every trip of ``loops``, from runs of a few trips each.

    Parameters
    ----------
    loops : tuple of Loop
    time_at : callable
        The simulated time when each loop plays the trips given (by line).
    can_play : callable
        Whether a run with those trips is small enough to play.

    Returns
    -------
    (Extension, dict)
        The extension, and the trips of the run it reports.

    Raises
    ------
    netsim.programs.periods.DriftError
        For one loop whose trips neither settle nor repeat, too long to play whole.

    Examples
    --------
    A made-up run: 5 us of set-up, a loop whose trips take 3 us once the first (4 us) is past.

    >>> loop = Loop("w", 4, 10**12)
    >>> e, trips = extend((loop,), lambda t: 5e-6 + 4e-6 + 3e-6 * (t[4] - 1), lambda t: True)
    >>> round(e.per_trip_s[0] * 1e6, 9), e.played, trips, e.steady, round(e.time_s, 3)
    (3.0, (10,), {4: 10}, True, 3000000.0)
    """
    lines = [loop.line for loop in loops]
    if len(loops) == 1:
        (loop,) = loops
        found = extend_trips(loop.trips, lambda t: time_at({loop.line: t}), lambda t: can_play({loop.line: t}))
        per_trip = (found.per_trip_s,) if found.period else (0.0,)
        extension = Extension(loops, (found.played,), per_trip, found.played_time_s, found.time_s, found.pattern != "played", found.runs, found)
        return extension, {loop.line: found.played}
    cache: dict[tuple[int, ...], float] = {}

    def run(point: tuple[int, ...]) -> float:
        if point not in cache:
            cache[point] = time_at(dict(zip(lines, point, strict=True)))
        return cache[point]

    def differences(level: int) -> dict[tuple[int, ...], float]:
        """The mixed differences over the corners {level, level+1} of every loop, keyed by the subset (0/1 per loop)."""
        found = {}
        for subset in itertools.product((0, 1), repeat=len(loops)):
            total = 0.0
            for corner in itertools.product((0, 1), repeat=len(loops)):
                if all(c <= s for c, s in zip(corner, subset, strict=True)):
                    sign = -1 if (sum(subset) - sum(corner)) % 2 else 1
                    total += sign * run(tuple(level + c for c in corner))
            found[subset] = total
        return found

    def predicted(level: int, found: dict[tuple[int, ...], float], trips: tuple[int, ...]) -> float:
        """The time the multilinear model of ``level`` gives for ``trips``."""
        return sum(d * math.prod(n - level for n, s in zip(trips, subset, strict=True) if s) for subset, d in found.items())

    level, steady, within = 1, False, 0.0
    model = differences(level)
    probed: set[tuple[int, ...]] = set()
    while True:
        while level + 2 <= min(MAX_LEVEL, *(loop.trips for loop in loops)) and can_play(dict.fromkeys(lines, level + 2)):
            corners = [tuple(level + 1 + c for c in corner) for corner in itertools.product((0, 1), repeat=len(loops))]
            scale = max(abs(run(corner)) for corner in corners) or 1.0
            misfit = max(abs(predicted(level, model, corner) - run(corner)) for corner in corners)
            trip = min((abs(d) for subset, d in model.items() if sum(subset) == 1), default=0.0)  # the shortest trip's time
            level, model = level + 1, differences(level + 1)
            if misfit <= STEADY_RTOL * scale or misfit <= JITTER_RTOL * trip:  # exactly, or to a hundred-thousandth of a trip
                steady, within = True, (0.0 if misfit <= STEADY_RTOL * scale else misfit)
                break
        probe = tuple(min(level + 1 + MAX_PERIOD, loop.trips) for loop in loops)  # a period the corners cannot see shows here
        if not steady or probe == tuple(level + 1 for _ in loops) or probe in probed or not can_play(dict(zip(lines, probe, strict=True))):
            steady = steady and not probed  # (once a check further on failed, only another one passing says steady)
            break
        probed.add(probe)
        off = abs(predicted(level, model, probe) - run(probe))
        if off <= STEADY_RTOL * (abs(run(probe)) or 1.0) or (within > 0 and off <= within * sum(t - level for t in probe)):
            within = max(within, off / max(1, sum(t - level for t in probe))) if within else within
            break
        steady, within = False, 0.0  # a change the corners could not see (trips that settle later): on to later corners
    full = tuple(loop.trips for loop in loops)
    if (not steady or within > 0) and can_play(dict(zip(lines, full, strict=True))):  # not linear, or only within strays: play them all
        whole = Extension(loops, full, tuple(0.0 for _ in loops), run(full), run(full), False, len(cache), within_s=within if steady else 0.0)
        return whole, dict(zip(lines, full, strict=True))
    top = tuple(level + 1 for _ in loops)
    scale = max(abs(t) for t in cache.values()) or 1.0
    # a difference as small as rounding (sequential loops' mixed terms) is zero: times the product of huge trip counts it would not be
    model = {subset: d if not any(subset) or abs(d) > NOISE_RTOL * scale else 0.0 for subset, d in model.items()}
    time = predicted(level, model, full)
    per_trip = tuple(
        sum(d * math.prod(n - level for j, (n, s) in enumerate(zip(full, subset, strict=True)) if s and j != i) for subset, d in model.items() if subset[i])
        for i in range(len(loops))
    )
    extension = Extension(loops, top, per_trip, run(top), time, steady, len(cache), within_s=within)
    return extension, dict(zip(lines, top, strict=True))
