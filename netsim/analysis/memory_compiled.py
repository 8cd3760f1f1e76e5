"""Memory over time for big runs, compiled (numba): :func:`netsim.analysis.memory_over_time._memory` in one pass per device.

The NumPy version sorts every batch of events by time and again by device; this one
places each device's events together first (a counting sort: arrivals, then chunks
on their way in, then sends, each by transfer), sorts each device's few events by
time (a stable sort: equal times keep that order, as the NumPy version's stable sort
does), and walks them once, keeping the running totals and, per chunk, whether the
device has touched it yet. The sums are the same integers in the same order: the
numbers are equal to the NumPy version's.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["memory_pass"]


@njit(cache=True)
def _sorted(when, lo, hi):
    """Whether ``when[lo:hi]`` is in time order."""
    p = lo + 1
    while p < hi and when[p] >= when[p - 1]:
        p += 1
    return p >= hi


@njit(cache=True)
def _time_order(when, lo, a, b, hi):
    """Positions ``lo..hi`` in time order, equal times in position order: three runs ``[lo, a)``,
    ``[a, b)``, ``[b, hi)`` merged when each is in time order already (the usual case), else a stable sort."""
    if not (_sorted(when, lo, a) and _sorted(when, a, b) and _sorted(when, b, hi)):
        return np.argsort(when[lo:hi], kind="mergesort") + lo
    order = np.empty(hi - lo, np.int64)
    i, j, k, best = lo, a, b, lo
    for p in range(hi - lo):  # the earliest head; at equal times the earlier run (its positions come first)
        run = -1
        if i < a:
            run, best = 0, i
        if j < b and (run < 0 or when[j] < when[best]):
            run, best = 1, j
        if k < hi and (run < 0 or when[k] < when[best]):
            run, best = 2, k
        order[p] = best
        if run == 0:
            i += 1
        elif run == 1:
            j += 1
        else:
            k += 1
    return order


@njit(cache=True)
def memory_pass(src, dst, reduce, key, arrived, sent, size, n_devices):
    """Per device: peak extra bytes over its input, bytes held extra at the end, peak in flight (int64 arrays)."""
    n = len(src)
    peak = np.zeros(n_devices, np.int64)
    extra = np.zeros(n_devices, np.int64)
    peak_flight = np.zeros(n_devices, np.int64)
    start = np.zeros(n_devices + 1, np.int64)
    incoming = np.zeros(n_devices, np.int64)  # per device: arrivals (as many as chunks on their way in)
    for t in range(n):
        start[dst[t] + 1] += 2
        start[src[t] + 1] += 1
        incoming[dst[t]] += 1
    for d in range(n_devices):
        start[d + 1] += start[d]
    fill = start[:-1].copy()
    kind = np.empty(3 * n, np.int8)
    transfer = np.empty(3 * n, np.int64)
    when = np.empty(3 * n, np.float64)
    for k in range(3):  # arrivals, then on their way in, then sends: each by transfer
        for t in range(n):
            d = src[t] if k == 2 else dst[t]
            p = fill[d]
            fill[d] += 1
            kind[p] = k
            transfer[p] = t
            when[p] = arrived[t] if k == 0 else sent[t]
    n_keys = 1
    for t in range(n):
        n_keys = max(n_keys, key[t] + 1)
    touched = np.full(n_keys, -1, np.int64)  # the last device that touched each chunk
    for d in range(n_devices):
        lo, hi = start[d], start[d + 1]
        if lo == hi:
            continue
        order = _time_order(when, lo, lo + incoming[d], lo + 2 * incoming[d], hi)
        flight = 0
        held = 0
        most = 0
        most_flight = 0
        first = True
        for p in order:
            t, k = transfer[p], kind[p]
            if k == 1:
                flight += size[t]
            elif k == 0:
                flight -= size[t]
            if k != 1 and touched[key[t]] != d:
                touched[key[t]] = d
                if k == 0 and not reduce[t]:
                    held += size[t]
            total = held + flight
            if first or total > most:
                most = total
            if first or flight > most_flight:
                most_flight = flight
            first = False
        peak[d] = max(most, 0)
        peak_flight[d] = max(most_flight, 0)
        extra[d] = held
    return peak, extra, peak_flight
