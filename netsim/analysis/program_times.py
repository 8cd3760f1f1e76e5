"""Where a program's time went, in three numbers: compute, communication, and the communication compute did not hide.

Read from a played program (its lowered schedule and playback), never simulated again.
A program's run keeps them in its :class:`~netsim.result.ProgramRun` (``result.compute_s``,
``result.communication_s``, ``result.exposed_communication_s``);
:func:`netsim.analysis.program_stats.program_stats` reports them beside every op.

- ``compute_s``: the busiest device's compute unit, seconds of work (a calibrated run's
  launch of each collective, its fixed cost, is not work: ``launches_s`` counts it).
- ``communication_s``: the time during which at least one collective is in flight (from
  its first send to its last arrival).
- ``exposed_communication_s``: the time during which the *critical device* (the one whose
  compute unit finishes last) has its compute unit idle while a collective is in flight.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from netsim.engine.columns import compute_columns

__all__ = ["ProgramTimes", "program_times"]


@dataclass(frozen=True)
class ProgramTimes:
    """A program's compute, communication and exposed communication (seconds), and its critical device."""

    compute_s: float
    communication_s: float
    exposed_communication_s: float
    critical_device: int | None
    launches_s: float = 0.0
    """The most time one device spent launching collectives (a calibrated run's fixed cost per collective; 0 if nominal)."""


def program_times(lowered: Any, playback: Any, time_s: float) -> ProgramTimes:
    """The three times of a played program (see the module docstring).

    Parameters
    ----------
    lowered : netsim.programs.lowering.Lowered
        The program as it was lowered: its ops' transfers and compute steps.
    playback : netsim.engine.Playback
        What playing its schedule gave.
    time_s : float
        The run's time.

    Examples
    --------
    >>> import netsim
    >>> r = netsim.run_program("scenarios/programs/allgather_matmul.yaml")
    >>> t = program_times(r.program.lowered, r.leaves[0].playback, r.time)
    >>> t.exposed_communication_s == t.communication_s > 0 < t.compute_s
    True
    """
    sent, arrived = np.asarray(playback.sent_at, float), np.asarray(playback.arrived_at, float)
    started, ended = playback.computes.started_at, playback.computes.ended_at
    devices = np.asarray(compute_columns(lowered.schedule.computes)["device"], np.int64)
    in_flight = [
        (float(sent[r.transfers.start : r.transfers.stop].min()), float(arrived[r.transfers.start : r.transfers.stop].max()))
        for r in lowered.ops
        if len(r.transfers)
    ]
    busy = {d: s.busy_s for d, s in playback.compute_units.items()}
    critical = None
    if busy:  # the device whose last compute step ends last (then the busiest): each device's last end in one pass, not a mask per device
        last = np.full(max(max(busy), int(devices.max(initial=0))) + 1, -np.inf)
        np.maximum.at(last, devices, np.asarray(ended, float))
        critical = max(busy, key=lambda d: (float(last[d]), busy[d]))
    communication = union(in_flight)
    if critical is None:
        exposed = sum(e - s for s, e in communication)
    else:
        mine = union([(float(s), float(e)) for s, e in zip(started[devices == critical], ended[devices == critical], strict=True)])
        exposed = overlap(idle(mine, time_s), communication)
    launching = np.zeros(max([*busy, int(devices.max(initial=0))], default=0) + 1)
    for r in lowered.ops:  # a collective's own compute steps are its launches (the fixed cost per collective): not work
        if r.collective and len(r.computes):
            k = np.arange(r.computes.start, r.computes.stop)
            np.add.at(launching, devices[k], np.asarray(ended, float)[k] - np.asarray(started, float)[k])
    work = max((b - float(launching[d]) for d, b in busy.items()), default=0.0)
    return ProgramTimes(work, sum(e - s for s, e in communication), exposed, critical, float(launching.max(initial=0.0)))


def union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The intervals merged where they touch or overlap, in order (empty ones dropped).

    Examples
    --------
    >>> union([(3.0, 4.0), (0.0, 1.0), (0.5, 2.0), (5.0, 5.0)])
    [(0.0, 2.0), (3.0, 4.0)]
    """
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        elif end > start:
            merged.append((start, end))
    return merged


def overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """How long two ordered lists of disjoint intervals overlap.

    Examples
    --------
    >>> overlap([(0.0, 2.0), (3.0, 4.0)], [(1.0, 3.5)])
    1.5
    """
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def idle(busy: list[tuple[float, float]], end: float) -> list[tuple[float, float]]:
    """The gaps between ordered busy intervals, from 0 to ``end``.

    Examples
    --------
    >>> idle([(1.0, 2.0), (3.0, 4.0)], 5.0)
    [(0.0, 1.0), (2.0, 3.0), (4.0, 5.0)]
    """
    gaps, now = [], 0.0
    for start, stop in busy:
        if start > now:
            gaps.append((now, start))
        now = max(now, stop)
    if end > now:
        gaps.append((now, end))
    return gaps
