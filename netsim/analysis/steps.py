"""Steps and timings: when each algorithm step started and ended, per device and over all devices."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsim.algorithms.transfers import PHASES
from netsim.columnar import index_dtype
from netsim.engine import as_array, transfer_columns

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


COMPILED_MIN = 100_000
"""Runs of at least this many transfers (without per-device timings) are summarised by one compiled pass
(:mod:`netsim.analysis.steps_compiled`), read when called."""


def _step_columns(transfers: Any) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Each transfer's step, and its phase as a number into the names returned with them."""
    step, phase = getattr(transfers, "step", None), getattr(transfers, "phase", None)
    if isinstance(step, np.ndarray) and isinstance(phase, np.ndarray):  # a TransferTable's columns
        return step.astype(np.int64, copy=False), phase.astype(np.int64, copy=False), PHASES
    names: dict[str, int] = {}
    codes = np.fromiter((names.setdefault(t.phase, len(names)) for t in transfers), np.int64, len(transfers))
    return np.fromiter((t.step for t in transfers), np.int64, len(transfers)), codes, tuple(names)


def _by_key(keys: np.ndarray, values: np.ndarray, reduce: Any, span: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``keys`` (sorted) and ``reduce`` (np.minimum or np.maximum) of the values of each.

    Keys below ``span`` (when it is not much more than their number) are gathered in a table
    over the span instead of sorted: the same keys and the same values (a minimum or a
    maximum is the same in any order), without the sort.

    Examples
    --------
    >>> keys, values = np.array([5, 1, 5, 3]), np.array([2.0, 7.0, 1.0, 4.0])
    >>> [a.tolist() for a in _by_key(keys, values, np.minimum)] == [a.tolist() for a in _by_key(keys, values, np.minimum, span=6)]
    True
    >>> [a.tolist() for a in _by_key(keys, values, np.maximum, span=6)]
    [[1, 3, 5], [7.0, 4.0, 2.0]]
    """
    if span is not None and span <= max(4 * len(keys), 1 << 16):
        table = np.full(span, np.inf if reduce is np.minimum else -np.inf)
        reduce.at(table, keys, values)
        present = np.zeros(span, np.bool_)
        present[keys] = True
        distinct = np.flatnonzero(present)
        return distinct.astype(keys.dtype, copy=False), table[distinct]
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    return keys[starts], reduce.reduceat(values, starts)


def _steps(leaf: int, schedule: Any, playback: Any, offset: float, detail: bool, n_devices: int) -> tuple[list[StepSummary], list[StepTiming]]:
    """Per step (and per step and device if ``detail``): first send, last arrival, first device done, straggler.

    Computed on the transfers' columns: a (step, device) pair is one number,
    ``step * n_devices + device``, grouped by sorting.
    """
    columns = transfer_columns(schedule.transfers)
    step, phase_code, phase_names = _step_columns(schedule.transfers)
    if not len(step):
        return [], []
    src, dst = np.asarray(columns["src"]), np.asarray(columns["dst"])
    low, high = int(step.min()), int(step.max())
    if not detail and len(step) >= COMPILED_MIN and (high - low + 1) * n_devices <= max(4 * len(step), 1 << 16):
        from netsim.analysis.steps_compiled import step_pass

        sent, arrived = as_array(playback.sent_at, float), as_array(playback.arrived_at, float)
        as64 = [np.ascontiguousarray(a, np.int64) for a in (step, src, dst)]
        k, first, start, last, first_done, straggler = step_pass(*as64, sent, arrived, float(offset), low, high - low + 1, n_devices)
        phases = [phase_names[c] for c in phase_code[first].tolist()]
        values = zip((k + low).tolist(), phases, start.tolist(), last.tolist(), first_done.tolist(), straggler.tolist(), strict=True)
        return [StepSummary(leaf, *v) for v in values], []
    distinct, first = np.unique(step, return_index=True)
    code = np.searchsorted(distinct, step)
    small = index_dtype(len(distinct) * n_devices)  # (step, device) numbers in half the memory
    span = len(distinct) * n_devices
    start_key, start = _by_key((code * n_devices + src).astype(small), offset + as_array(playback.sent_at, float), np.minimum, span)
    end_key, end = _by_key((code * n_devices + dst).astype(small), offset + as_array(playback.arrived_at, float), np.maximum, span)
    del code
    start_step = start_key // n_devices
    first_send = np.minimum.reduceat(start, np.flatnonzero(np.concatenate([[True], start_step[1:] != start_step[:-1]]))).tolist()  # every step sends
    end_step = end_key // n_devices
    bounds = np.flatnonzero(np.concatenate([[True], end_step[1:] != end_step[:-1]]))  # every step has arrivals
    last = np.maximum.reduceat(end, bounds)
    first_done = np.minimum.reduceat(end, bounds)
    at_last = np.flatnonzero(end == np.repeat(last, np.diff(np.append(bounds, len(end)))))
    _, first_at_last = np.unique(end_step[at_last], return_index=True)  # the lowest device among those last
    straggler = (end_key[at_last[first_at_last]] % n_devices).tolist()
    phases = [phase_names[c] for c in phase_code[first].tolist()]
    columns_of_steps = zip(distinct.tolist(), phases, first_send, last.tolist(), first_done.tolist(), straggler, strict=True)
    summaries = [StepSummary(leaf, *values) for values in columns_of_steps]
    timings = []
    if detail:
        keys = np.union1d(start_key, end_key)
        starts = np.full(len(keys), math.nan)
        starts[np.searchsorted(keys, start_key)] = start
        ends = np.full(len(keys), math.nan)
        ends[np.searchsorted(keys, end_key)] = end
        codes, devices = np.divmod(keys, n_devices)
        steps_of = distinct[codes].tolist()
        timings = [
            StepTiming(leaf, s, phases[c], d, a, b)
            for s, c, d, a, b in zip(steps_of, codes.tolist(), devices.tolist(), starts.tolist(), ends.tolist(), strict=True)
        ]
    return summaries, timings
