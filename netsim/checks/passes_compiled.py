"""The ``drained``, ``delivery``, ``link bytes`` and ``device bytes`` checks, and the ``chunks``
replay of :func:`~netsim.checks.chunks_placed._chunks_placed`, compiled (numba), for big runs.

Each is one pass over the transfers or the link crossings that answers whether the
NumPy check would pass, or hands back the sums (or, for the replay, the table of what
each device ends with) the NumPy check would compare. At a
fault, and wherever a pass does not follow its NumPy check (a number out of range,
which NumPy would index with or raise on), it answers False: the NumPy check then
runs and raises its error, with its message, at the same first fault. Times are
compared as :func:`netsim.checks.arrays._later` compares them, with the same
floating-point operations; sums are taken in index order, as ``np.bincount`` takes
them, so they are the same to the bit.
"""

from __future__ import annotations

import numpy as np

from netsim.engine.compiled_cache import njit

__all__ = ["dependencies_pass", "device_sums", "link_sums", "placed_holding", "single_links_pass"]


@njit(cache=True)
def _later(a, b):
    """``a`` later than ``b`` beyond rounding: ``_later`` of :mod:`netsim.checks.arrays` on two floats."""
    return a > b and a > b + (1e-9 * max(abs(a), abs(b)) + 1e-15)


@njit(cache=True)
def dependencies_pass(dep_ptr, dep_idx, done, sent):
    """Whether every transfer leaves after the steps it waits for were done (beyond rounding: ``done``
    is when each transfer arrived, then when each compute step ended), and whether each waits only
    for transfers before it (meaningful when the first is True)."""
    n = len(sent)
    before = True
    for i in range(n):
        for p in range(dep_ptr[i], dep_ptr[i + 1]):
            d = dep_idx[p]
            if d < 0 or d >= len(done):
                return False, False
            if d >= i:
                before = False
            if _later(done[d], sent[i]):
                return False, False
    return True, before


@njit(cache=True)
def single_links_pass(hop_transfer, hop_link, hop_start, hop_end, route_inverse, distinct_links, link_u, link_v, src, dst, sent):
    """Whether, every route being one link, each transfer crossed exactly once the link of its route,
    from its source to its destination, after it was sent, ending after it started."""
    n = len(src)
    if len(hop_transfer) != n:
        return False
    seen = np.zeros(n, np.bool_)
    for k in range(n):
        t = hop_transfer[k]
        if t < 0 or t >= n or seen[t]:
            return False
        seen[t] = True
        link = distinct_links[route_inverse[t]]
        if link < 0 or hop_link[k] != link or link_u[link] != src[t] or link_v[link] != dst[t]:
            return False
        if _later(sent[t], hop_start[k]) or _later(hop_start[k], hop_end[k]):
            return False
    return True


@njit(cache=True)
def link_sums(hop_link, hop_transfer, nbytes, hop_start, hop_end, n_links):
    """Per link, the bytes, messages and busy time of its crossings (``np.bincount`` of each), and
    whether a crossing starts before the one before it on its link (in the hops' order) ended.

    The first value is False (and the rest meaningless) when a crossing names a link or a
    transfer out of range.
    """
    carried = np.zeros(n_links, np.float64)
    messages = np.zeros(n_links, np.int64)
    busy = np.zeros(n_links, np.float64)
    last_end = np.zeros(n_links, np.float64)
    overlap = False
    n = len(nbytes)
    for k in range(len(hop_link)):
        link, t = hop_link[k], hop_transfer[k]
        if link < 0 or link >= n_links or t < 0 or t >= n:
            return False, carried, messages, busy, overlap
        if messages[link] and _later(last_end[link], hop_start[k]):
            overlap = True
        carried[link] += np.float64(nbytes[t])
        messages[link] += 1
        busy[link] += hop_end[k] - hop_start[k]
        last_end[link] = hop_end[k]
    return True, carried, messages, busy, overlap


@njit(cache=True)
def device_sums(key_size, key_index, nbytes, src, dst, moving, n_devices):
    """Whether every transfer carries its chunk's size (where known: ``key_size`` >= 0), and per device
    the bytes the moving transfers sent and received (``np.bincount`` of each).

    ``moving`` is empty when every transfer moves. The first value is False (and the sums
    meaningless) at a wrong size and where a number is out of range.
    """
    sent = np.zeros(n_devices, np.float64)
    received = np.zeros(n_devices, np.float64)
    all_move = len(moving) == 0
    for i in range(len(nbytes)):
        k = key_index[i]
        if k < 0 or k >= len(key_size):
            return False, sent, received
        if key_size[k] >= 0 and key_size[k] != nbytes[i]:
            return False, sent, received
        if all_move or moving[i]:
            s, d = src[i], dst[i]
            if s < 0 or s >= n_devices or d < 0 or d >= n_devices:
                return False, sent, received
            sent[s] += np.float64(nbytes[i])
            received[d] += np.float64(nbytes[i])
    return True, sent, received


@njit(cache=True)
def _through_feeds(i, s, state, dep_ptr, dep_idx, src, dst, key_index, arrived, carried, m):
    """What transfer ``i`` carries when ``m`` > 1 arrivals feed it: they are met by arrival, then index;
    -2 where one delivers a chunk to a source that holds it already."""
    feeds = np.empty(m, np.int64)
    m = 0
    for p in range(dep_ptr[i], dep_ptr[i + 1]):
        j = dep_idx[p]
        if dst[j] != s or key_index[j] != key_index[i]:
            continue
        q = m  # insertion by (arrival, index)
        while q > 0 and (arrived[feeds[q - 1]] > arrived[j] or (arrived[feeds[q - 1]] == arrived[j] and feeds[q - 1] > j)):
            feeds[q] = feeds[q - 1]
            q -= 1
        feeds[q] = j
        m += 1
    for q in range(m):
        j = feeds[q]
        got = carried[j]
        if got >= 0 and got == state and src[j] != dst[j]:
            return -2
        state = got
    return state


@njit(cache=True)
def placed_holding(in_order, order, src, dst, key_index, key_id, dep_ptr, dep_idx, arrived, table, n_keys):
    """The replay of :func:`~netsim.checks.chunks_placed._chunks_placed` up to the end of every (device, chunk), in one pass.

    ``table`` holds the bit each device's own copy of each chunk carries at the start
    (``_Starts.table``, -1 for none), indexed ``device * n_keys + key id``; transfers
    are taken in index order if ``in_order``, else in ``order``. Each transfer's feeds
    (the arrivals of its chunk at its source it waits for) are met by arrival, then
    index, as ``_feeding`` sorts them. Returns True, with ``table`` overwritten by what
    each (device, chunk) ends with, when the replay finds no fault; False, with
    ``table`` untouched, at a fault and where it does not follow the NumPy replay:
    a chunk nobody started with, a (device, chunk) receiving twice, a number out of range.
    """
    n = len(src)
    size = len(table)
    carried = np.empty(n, table.dtype)
    for step in range(n):
        i = step if in_order else order[step]
        s, k = src[i], key_id[i]
        if s < 0 or k < 0 or s * n_keys + k >= size:
            return False
        state = table[s * n_keys + k]
        m, last = 0, -1
        for p in range(dep_ptr[i], dep_ptr[i + 1]):
            j = dep_idx[p]
            if j < 0 or j >= n:
                return False
            if dst[j] == s and key_index[j] == key_index[i]:
                m += 1
                last = j
        if m == 1:  # (most transfers: one feed, or none)
            got = carried[last]
            if got >= 0 and got == state and src[last] != dst[last]:
                return False  # a chunk delivered to a source that holds it already
            state = got
        elif m > 1:
            state = _through_feeds(i, s, state, dep_ptr, dep_idx, src, dst, key_index, arrived, carried, m)
            if state == -2:
                return False
        carried[i] = state
    # What each (device, chunk) ends with, written in place as its arrival comes: while the pass
    # runs, a cell written holds -3 - bit (at most -2, below any bit or -1; an int16 table holds
    # bits below 2**14, an int32 one those below 2**30), and the arrival's
    # ``carried`` slot keeps what the cell held (to put back at a fault). Each (device, chunk)
    # receives at most once (else the NumPy replay follows the order of arrivals).
    for i in range(n):
        d, k, got = dst[i], key_id[i], carried[i]
        c = d * n_keys + k
        if d < 0 or c >= size or got >= 1 << 30:
            _put_back(table, carried, dst, key_id, n_keys, i)
            return False
        before = table[c]
        if before <= -2 or (got >= 0 and got == before and src[i] != d):  # a second arrival, or one where the chunk already is
            _put_back(table, carried, dst, key_id, n_keys, i)
            return False
        table[c] = -3 - got
        carried[i] = before
    for c in range(size):
        if table[c] <= -2:
            table[c] = -3 - table[c]
    return True


@njit(cache=True)
def _put_back(table, before, dst, key_id, n_keys, stop):
    """Undo the writes of :func:`placed_holding`'s arrivals before ``stop``: each cell gets back what it held."""
    for i in range(stop):
        table[dst[i] * n_keys + key_id[i]] = before[i]
