"""The ``drained``, ``delivery``, ``link bytes`` and ``device bytes`` checks compiled (numba), for big runs.

Each is one pass over the transfers or the link crossings that answers whether the
NumPy check would pass, or hands back the sums the NumPy check would compare. At a
fault, and wherever a pass does not follow its NumPy check (a number out of range,
which NumPy would index with or raise on), it answers False: the NumPy check then
runs and raises its error, with its message, at the same first fault. Times are
compared as :func:`netsim.checks.arrays._later` compares them, with the same
floating-point operations; sums are taken in index order, as ``np.bincount`` takes
them, so they are the same to the bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["dependencies_pass", "device_sums", "link_sums", "single_links_pass"]


@njit(cache=True)
def _later(a, b):
    """``a`` later than ``b`` beyond rounding: ``_later`` of :mod:`netsim.checks.arrays` on two floats."""
    return a > b and a > b + (1e-9 * max(abs(a), abs(b)) + 1e-15)


@njit(cache=True)
def dependencies_pass(dep_ptr, dep_idx, arrived, sent):
    """Whether every transfer leaves after the transfers it waits for arrived (beyond rounding),
    and whether each waits only for transfers before it (meaningful when the first is True)."""
    n = len(sent)
    before = True
    for i in range(n):
        for p in range(dep_ptr[i], dep_ptr[i + 1]):
            d = dep_idx[p]
            if d < 0 or d >= n:
                return False, False
            if d >= i:
                before = False
            if _later(arrived[d], sent[i]):
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
