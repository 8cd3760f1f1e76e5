"""Memory over time: what each device holds at once, from a playback's sends and arrivals.

A device holds its input, the chunks that arrive (each once: a chunk it sent first is
its input, an arrival added into a chunk it had takes no room) and receive buffers for
chunks on their way to it. :func:`_memory` gives each device's peak over its input, what
it holds extra at the end, and its peak in flight, on whole arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from netsim.engine import transfer_columns


def _memory(schedule: Any, playback: Any, n_devices: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per device: peak extra bytes over its input, bytes held extra at the end, peak in flight.

    Events, in time order (arrivals, then sends at equal times, then by transfer): a
    transfer is in flight to its destination from when it is sent until it arrives; a
    device holds a chunk extra from the first arrival of it, unless it touched the chunk
    first by sending it (its input) or the arrival adds into a chunk it had. Computed on
    whole arrays: each device's running totals are cumulative sums in event order.
    """
    columns = transfer_columns(schedule.transfers)
    src, dst, reduce, key = (np.asarray(columns[name]) for name in ("src", "dst", "reduce", "key_index"))
    n = len(src)
    zeros = np.zeros(n_devices, dtype=np.int64)
    if n == 0:
        return zeros, zeros.copy(), zeros.copy()
    sent = np.asarray(playback.sent_at, dtype=float)
    arrived = np.asarray(playback.arrived_at, dtype=float)
    size = np.asarray(playback.nbytes, dtype=np.int64)
    index = np.arange(n, dtype=np.int64)
    # events: arrivals (kind 0, at dst), incoming (kind 1, at dst, when sent), sends (kind 2, at src)
    when = np.concatenate([arrived, sent, sent])
    kind = np.repeat(np.arange(3, dtype=np.int64), n)
    transfer = np.concatenate([index, index, index])
    device = np.concatenate([dst, dst, src])
    rank = np.empty(3 * n, np.int64)
    rank[np.lexsort((transfer, kind, when))] = np.arange(3 * n)
    # The first arrival or send of each (device, chunk): a plain arrival there adds a chunk.
    touching = np.flatnonzero(kind != 1)
    by_chunk = touching[np.lexsort((rank[touching], key[transfer[touching]], device[touching]))]
    group = device[by_chunk] * (int(key.max()) + 1) + key[transfer[by_chunk]]
    first = by_chunk[np.concatenate([[True], group[1:] != group[:-1]])]
    adds = first[(kind[first] == 0) & ~reduce[transfer[first]]]
    extra_delta = np.zeros(3 * n, np.int64)
    extra_delta[adds] = size[transfer[adds]]
    flight_delta = np.where(kind == 1, size[transfer], np.where(kind == 0, -size[transfer], 0))
    # Running totals per device, in event order.
    order = np.lexsort((rank, device))
    device, extra_delta, flight_delta = device[order], extra_delta[order], flight_delta[order]
    starts = np.flatnonzero(np.concatenate([[True], device[1:] != device[:-1]]))
    flight = _running(flight_delta, starts)
    held = _running(extra_delta, starts) + flight
    owners = device[starts]
    peak, peak_flight, extra = zeros.copy(), zeros.copy(), zeros.copy()
    peak[owners] = np.maximum(np.maximum.reduceat(held, starts), 0)
    peak_flight[owners] = np.maximum(np.maximum.reduceat(flight, starts), 0)
    extra[owners] = np.add.reduceat(extra_delta, starts)
    return peak, extra, peak_flight


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
