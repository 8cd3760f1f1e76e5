"""Steps and timings: when each algorithm step started and ended, per device and over all devices."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

__all__ = ["StepSummary", "StepTiming"]


@dataclass(frozen=True)
class StepTiming:
    """One algorithm step on one device: its first send and its last arrival (NaN if none)."""

    leaf: int
    step: int
    phase: str
    device: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class StepSummary:
    """One algorithm step over all devices.

    Attributes
    ----------
    leaf, step : int
    phase : str
    start_s : float
        The first send of the step.
    end_s : float
        The last arrival of the step.
    first_done_s : float
        The earliest time a device had all of its chunks of the step.
    straggler : int
        The device whose chunks of the step arrived last.
    """

    leaf: int
    step: int
    phase: str
    start_s: float
    end_s: float
    first_done_s: float
    straggler: int


def _steps(leaf: int, schedule: Any, playback: Any, offset: float, detail: bool) -> tuple[list[StepSummary], list[StepTiming]]:
    start: dict[tuple[int, int], float] = {}
    end: dict[tuple[int, int], float] = {}
    phase: dict[int, str] = {}
    for i, t in enumerate(schedule.transfers):
        s, a = offset + playback.sent_at[i], offset + playback.arrived_at[i]
        key = (t.step, t.src)
        start[key] = min(start.get(key, math.inf), s)
        key = (t.step, t.dst)
        end[key] = max(end.get(key, -math.inf), a)
        phase.setdefault(t.step, t.phase)
    summaries = []
    by_step: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for (step, device), value in end.items():
        by_step[step].append((device, value))
    first_send: dict[int, float] = {}
    for (step, _), value in start.items():
        first_send[step] = min(first_send.get(step, math.inf), value)
    for step in sorted(phase):
        ends = by_step.get(step, [])
        straggler, last = max(ends, key=lambda dv: (dv[1], -dv[0])) if ends else (-1, math.nan)
        first_done = min((v for _, v in ends), default=math.nan)
        summaries.append(StepSummary(leaf, step, phase[step], first_send.get(step, math.nan), last, first_done, straggler))
    timings = []
    if detail:
        for step, device in sorted(set(start) | set(end)):
            timings.append(StepTiming(leaf, step, phase[step], device, start.get((step, device), math.nan), end.get((step, device), math.nan)))
    return summaries, timings
