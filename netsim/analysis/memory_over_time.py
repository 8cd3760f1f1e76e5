"""Memory over time: what each device holds at once, from a playback's sends and arrivals.

A device holds its input, the chunks that arrive (each once: a chunk it sent first is
its input, an arrival added into a chunk it had takes no room) and receive buffers for
chunks on their way to it. :func:`_memory` gives each device's peak over its input, what
it holds extra at the end, and its peak in flight, on whole arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from netsim.engine import as_array, transfer_columns

COMPILED_MIN = 100_000
"""Runs of at least this many transfers are read by one compiled pass (:mod:`netsim.analysis.memory_compiled`), read when called."""

BATCH_EVENTS = 2**20
"""Devices are taken in batches of about this many events, so the temporaries stay small."""


def _memory(schedule: Any, playback: Any, n_devices: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per device: peak extra bytes over its input, bytes held extra at the end, peak in flight.

    Events, in time order (arrivals, then sends at equal times, then by transfer): a
    transfer is in flight to its destination from when it is sent until it arrives; a
    device holds a chunk extra from the first arrival of it, unless it touched the chunk
    first by sending it (its input) or the arrival adds into a chunk it had. Computed on
    whole arrays, for a batch of devices at a time (each device's events are its own):
    the events are laid out by kind and transfer, so one stable sort by time puts them
    in that order, and each device's running totals are cumulative sums.
    """
    columns = transfer_columns(schedule.transfers)
    src, dst, reduce, key = (np.asarray(columns[name]) for name in ("src", "dst", "reduce", "key_index"))
    zeros = np.zeros(n_devices, dtype=np.int64)
    peak, extra, peak_flight = zeros, zeros.copy(), zeros.copy()
    if len(src) == 0:
        return peak, extra, peak_flight
    facts = (as_array(playback.arrived_at, float), as_array(playback.sent_at, float), as_array(playback.nbytes, np.int64), reduce, key)
    if len(src) >= COMPILED_MIN:
        from netsim.analysis.memory_compiled import memory_pass

        as64 = [np.ascontiguousarray(a, np.int64) for a in (src, dst, key, facts[2])]
        return memory_pass(as64[0], as64[1], np.ascontiguousarray(reduce, np.bool_), as64[2], facts[0], facts[1], as64[3], n_devices)
    events = 2 * np.bincount(dst, minlength=n_devices) + np.bincount(src, minlength=n_devices)
    low = 0
    while low < n_devices:
        high = low + max(1, int(np.searchsorted(np.cumsum(events[low:]), BATCH_EVENTS, "right")))
        arriving = np.flatnonzero((dst >= low) & (dst < high))  # ascending: events laid out by transfer
        sending = np.flatnonzero((src >= low) & (src < high))
        _batch(arriving, sending, dst, src, facts, (peak, extra, peak_flight))
        low = high
    return peak, extra, peak_flight


def _batch(arriving: np.ndarray, sending: np.ndarray, dst: np.ndarray, src: np.ndarray, facts: tuple, out: tuple) -> None:
    """:func:`_memory` for the devices that receive ``arriving`` and send ``sending`` (transfer numbers, ascending)."""
    arrived, sent, size, reduce, key = facts
    peak, extra, peak_flight = out
    a = len(arriving)
    # events: arrivals (kind 0, at dst), incoming (kind 1, at dst, when sent), sends (kind 2, at src)
    transfer = np.concatenate([arriving, arriving, sending])
    order = np.argsort(np.concatenate([arrived[arriving], sent[arriving], sent[sending]]), kind="stable")  # by time, then kind, then transfer
    transfer = transfer[order]
    arrival, sends = order < a, order >= 2 * a
    device = np.where(sends, src[transfer], dst[transfer])
    # The first arrival or send of each (device, chunk), in time order: a plain arrival there adds a chunk.
    touching = np.flatnonzero(arrival | sends)
    first = touching[_first_of(device[touching] * (int(key.max()) + 1) + key[transfer[touching]])]
    adds = first[arrival[first] & ~reduce[transfer[first]]]
    extra_delta = np.zeros(len(order), np.int64)
    extra_delta[adds] = size[transfer[adds]]
    flight_delta = size[transfer]
    flight_delta[arrival] *= -1  # in flight from when it is sent (incoming) until it arrives
    flight_delta[sends] = 0
    # Running totals per device, in time order.
    by_device = np.argsort(device, kind="stable")
    device, extra_delta, flight_delta = device[by_device], extra_delta[by_device], flight_delta[by_device]
    starts = np.flatnonzero(np.concatenate([[True], device[1:] != device[:-1]]))
    flight = _running(flight_delta, starts)
    held = _running(extra_delta, starts) + flight
    owners = device[starts]
    peak[owners] = np.maximum(np.maximum.reduceat(held, starts), 0)
    peak_flight[owners] = np.maximum(np.maximum.reduceat(flight, starts), 0)
    extra[owners] = np.add.reduceat(extra_delta, starts)


def _first_of(codes: np.ndarray) -> np.ndarray:
    """Positions of the first occurrence of each distinct code."""
    return np.unique(codes, return_index=True)[1]


def _running(delta: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Cumulative sums of ``delta`` restarting at each of ``starts`` (sorted, starting with 0).

    Examples
    --------
    >>> _running(np.array([5, -2, 1, 7, 3]), np.array([0, 3])).tolist()
    [5, 3, 4, 7, 10]
    """
    total = np.cumsum(delta)
    before = np.concatenate([[0], total])[starts]  # the running sum just before each segment
    return total - np.repeat(before, np.diff(np.append(starts, len(delta))))
