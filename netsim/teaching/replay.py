"""Who holds what, when: a run replayed symbolically from its schedule and timings.

The engine moves real arrays; a picture or an explanation needs something else:
for every device and every moment, which chunks it holds and *whose data went
into each one*. This module rebuilds that from the :class:`~netsim.algorithms.schedule.Schedule`
and the :class:`~netsim.engine.Playback` alone (send and arrival times), without
re-simulating: a chunk is a set of source devices, a *place* replaces the
receiver's set by the sender's, an *add* unites them. At the end of a run the sets
say exactly what the engine's arrays hold (a gathered block is one device's
input, a reduced block the sum over its sources), which the tests check.

It knows no collective by name, only the schedule's patterns, and falls back on
reading a schedule it does not know (see :func:`initial_holdings`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from netsim.algorithms.schedule import Schedule
from netsim.engine import Playback
from netsim.semantics.patterns import PATTERNS

__all__ = ["Holdings", "Replay", "initial_holdings"]

Key = tuple[int, int]
Holdings = list[dict[Key, frozenset[int]]]
"""Per device: chunk key ``(block, piece)`` -> the devices whose data it contains."""


def initial_holdings(schedule: Schedule, n_devices: int) -> Holdings:
    """What every device holds before anything moves.

    A pattern that reduces (:data:`~netsim.semantics.patterns.PATTERNS`: ``reduce_scatter``,
    ``all_reduce``): every member holds its own share of every block. A gather (a pattern
    that neither reduces, nor numbers blocks by member, nor sends pairs): member j of a
    group holds every piece of block j, its own input. For any other pattern the schedule
    is read: a device held a chunk at the start if it sends it, or has it added into,
    before anything places it there.

    Examples
    --------
    >>> from netsim.algorithms.schedule import build_schedule
    >>> initial_holdings(build_schedule("gather", [[0, 1]], "ring"), 2)
    [{(0, 0): frozenset({0})}, {(1, 0): frozenset({1})}]
    >>> sorted(initial_holdings(build_schedule("reduce_scatter", [[0, 1]], "ring"), 2)[1].items())
    [((0, 0), frozenset({1})), ((1, 0), frozenset({1}))]
    """
    held: Holdings = [{} for _ in range(n_devices)]
    pieces = range(schedule.pieces)
    pattern = PATTERNS.get(schedule.pattern)  # (None for a schedule of no pattern, a program's)
    if pattern is not None and pattern.reduces:
        for group in schedule.groups:
            for device in group:
                held[device].update({(k, p): frozenset({device}) for k in range(len(group)) for p in pieces})
    elif pattern is not None and not (pattern.pairs or pattern.by_member):  # a gather: block j is member j's (owner(j) == j)
        for group in schedule.groups:
            for j, device in enumerate(group):
                held[device].update({(j, p): frozenset({device}) for p in pieces})
    else:
        placed: set[tuple[int, Key]] = set()
        for t in sorted(schedule.transfers, key=lambda t: t.step):
            key = tuple(t.key)
            if (t.src, key) not in placed:
                held[t.src].setdefault(key, frozenset({t.src}))
            if t.reduce and (t.dst, key) not in placed:
                held[t.dst].setdefault(key, frozenset({t.dst}))
            if not t.reduce:
                placed.add((t.dst, key))
    return held


@dataclass(frozen=True)
class _Change:
    time: float
    transfer: int
    device: int
    key: Key
    sources: frozenset[int]


class Replay:
    """The holdings of every device at any simulated time.

    Parameters
    ----------
    schedule : Schedule
    playback : Playback
        The run of that schedule (its ``sent_at`` and ``arrived_at`` are used).

    Attributes
    ----------
    start : Holdings
        What every device holds at time 0.
    carried : list of frozenset
        Per transfer: the source devices of the chunk it carried (the sender's
        copy when it left).

    Examples
    --------
    >>> import numpy as np, netsim
    >>> leaf = netsim.psum_scatter(np.ones((3, 3)), algorithm="ring").leaves[0]
    >>> replay = Replay(leaf.schedule, leaf.playback)
    >>> sorted(replay.at(leaf.playback.time)[2][(2, 0)])  # block 2 on device 2: everyone's share
    [0, 1, 2]
    """

    def __init__(self, schedule: Schedule, playback: Playback) -> None:
        self.schedule = schedule
        self.playback = playback
        self.start = initial_holdings(schedule, len(playback.buffers))
        held = [dict(h) for h in self.start]
        self.carried: list[frozenset[int]] = [frozenset()] * len(schedule.transfers)
        # Arrivals before sends at the same instant: a device forwards what has just arrived. A transfer
        # that arrives the instant it leaves (a ppermute pair (d, d): no link) arrives after it has left.
        n = len(schedule.transfers)
        arrivals = [(playback.arrived_at[i], 0 if playback.arrived_at[i] > playback.sent_at[i] else 2, i) for i in range(n)]
        events = sorted(arrivals + [(playback.sent_at[i], 1, i) for i in range(n)])
        changes: list[_Change] = []
        for time, kind, i in events:
            t = schedule.transfers[i]
            key = tuple(t.key)
            if kind == 1:
                self.carried[i] = held[t.src].get(key, frozenset({t.src}))
                continue
            sources = held[t.dst].get(key, frozenset()) | self.carried[i] if t.reduce else self.carried[i]
            held[t.dst][key] = sources
            changes.append(_Change(time, i, t.dst, key, sources))
        self._changes = changes
        self._times = [c.time for c in changes]

    @property
    def end(self) -> Holdings:
        """What every device holds once everything has arrived."""
        return self.at(float("inf"))

    def at(self, time_s: float) -> Holdings:
        """Holdings after every arrival at or before ``time_s``."""
        held = [dict(h) for h in self.start]
        for change in self._changes[: bisect.bisect_right(self._times, time_s)]:
            held[change.device][change.key] = change.sources
        return held

    def after_step(self, step: int) -> Holdings:
        """Holdings once every transfer of steps ``0..step`` has arrived (and nothing later).

        Steps of different chunks may overlap in time; this is the picture a
        step-by-step explanation draws.
        """
        held = [dict(h) for h in self.start]
        for change in self._changes:
            if self.schedule.transfers[change.transfer].step <= step:
                held[change.device][change.key] = change.sources
        return held
