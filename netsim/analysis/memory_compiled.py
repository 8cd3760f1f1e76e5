"""Memory over time for big runs, compiled (numba): :func:`netsim.analysis.memory_over_time._memory` in one pass per device.

The NumPy version sorts every batch of events by time and again by device; this one
groups the transfers by destination and by source (counting sorts), lays each
device's few events out (arrivals, then chunks on their way in, then sends, each by
transfer), puts them in time order (a merge of the three runs, or a stable sort:
equal times keep that order, as the NumPy version's stable sort does), and walks them once, keeping the running totals and, per chunk, whether the
device has touched it yet. The sums are the same integers in the same order: the
numbers are equal to the NumPy version's.
"""

from __future__ import annotations

import numpy as np

from netsim.engine.compiled_cache import njit

__all__ = ["memory_pass"]


@njit(cache=True)
def _by_device(device, n_devices):
    """The transfers grouped by ``device`` (a stable counting sort), and where each device's group starts."""
    start = np.zeros(n_devices + 1, np.int64)
    for t in range(len(device)):
        start[device[t] + 1] += 1
    for d in range(n_devices):
        start[d + 1] += start[d]
    fill = start[:-1].copy()
    order = np.empty(len(device), np.int32)
    for t in range(len(device)):
        order[fill[device[t]]] = t
        fill[device[t]] += 1
    return order, start


@njit(cache=True)
def memory_pass(src, dst, reduce, key, arrived, sent, size, n_devices):
    """Per device: peak extra bytes over its input, bytes held extra at the end, peak in flight (int64 arrays).

    A device's events are three runs, each by transfer: its arrivals (at ``arrived``), the
    chunks on their way to it (from ``sent``) and its sends (at ``sent``). Where each run is
    in time order (the usual case) they are merged, the earlier run first at equal times;
    otherwise the device's events are sorted (stably, so equal times keep that order).
    """
    peak = np.zeros(n_devices, np.int64)
    extra = np.zeros(n_devices, np.int64)
    peak_flight = np.zeros(n_devices, np.int64)
    into, into_start = _by_device(dst, n_devices)
    out, out_start = _by_device(src, n_devices)
    n_keys = 1
    for t in range(len(key)):
        n_keys = max(n_keys, key[t] + 1)
    touched = np.full(n_keys, -1, np.int64)  # the last device that touched each chunk
    for d in range(n_devices):
        a0, a1, s0, s1 = into_start[d], into_start[d + 1], out_start[d], out_start[d + 1]
        m, k = a1 - a0, s1 - s0
        if m + k == 0:
            continue
        # the events as (kind, transfer): kind 0 arrival, 1 on its way in, 2 send
        kinds = np.empty(2 * m + k, np.int8)
        transfers = np.empty(2 * m + k, np.int32)
        times = np.empty(2 * m + k, np.float64)
        for i in range(m):
            t = into[a0 + i]
            kinds[i], transfers[i], times[i] = 0, t, arrived[t]
            kinds[m + i], transfers[m + i], times[m + i] = 1, t, sent[t]
        for i in range(k):
            t = out[s0 + i]
            kinds[2 * m + i], transfers[2 * m + i], times[2 * m + i] = 2, t, sent[t]
        order = _time_order(times, 0, m, 2 * m, 2 * m + k)
        flight = 0
        held = 0
        most = 0
        most_flight = 0
        first = True
        for p in order:
            t, e = transfers[p], kinds[p]
            if e == 1:
                flight += size[t]
            elif e == 0:
                flight -= size[t]
            if e != 1 and touched[key[t]] != d:
                touched[key[t]] = d
                if e == 0 and not reduce[t]:
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
