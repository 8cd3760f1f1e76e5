"""Transfers numbered in the order they will play, for the compiled loop: the same events, fewer cache misses.

The compiled loop (:mod:`netsim.engine.kernel`) reads a dozen arrays by transfer
number. A schedule's own numbering follows how it was planned (op by op, group by
group, device by device), not when its transfers play: on a big program a transfer
and the next one to play are megabytes apart in every array, and each read is a
cache miss. So the compiled player renumbers a program's transfers once before the loop,
in the order they become ready when steps are taken in dependency order (first in,
first out: :func:`in_play_order`), and numbers them back afterwards.

It does so for schedules with compute steps (programs), whose layers drift apart
into millions of distinct instants; a collective alone is planned step by step,
which is already close to the order it plays, and the two passes and the copies
(about 0.1 us per transfer) would cost it more than they give (a 1024-ring
all_gather: 0.17 s, about a fifth of its run, measured in ``bench/README.md``).

The loop plays exactly the same events under any numbering as long as the steps
that wait for nothing keep their order (they are put in their devices' ready lists
by number) and every list of waiters keeps its order (:func:`in_play_order`
renames the entries in place): the order of ready lists, link queues and inboxes
then comes from the play itself, not from the numbers. :func:`in_play_order` puts
those steps first, in their order.

Examples
--------
Four transfers, 2 waits for 0 and 3 for 2; 1 waits for 3:

>>> import numpy as np
>>> wait_ptr, waiter = np.array([0, 1, 1, 2, 3]), np.array([2, 3, 1], np.int32)
>>> missing = np.array([0, 1, 1, 1], np.int32)
>>> order, rank, ptr, idx = in_play_order(wait_ptr, waiter, missing, 4)
>>> order.tolist(), rank.tolist()  # new -> old, old -> new
([0, 2, 3, 1], [0, 3, 1, 2])
>>> ptr.tolist(), idx.tolist()  # new 0 = old 0 lets new 1 (old 2) go, which lets new 2 go, which lets new 3 go
([0, 1, 2, 3, 3], [1, 2, 3])
"""

from __future__ import annotations

import numpy as np

from netsim.engine.compiled_cache import njit

__all__ = ["gather", "in_play_order", "inverse_of"]


@njit(cache=True)
def in_play_order(wait_ptr, waiter, missing, n):
    """The ``n`` transfers (steps ``0 .. n - 1``; compute steps follow them) numbered in the order they become
    ready when steps are done in the order they are ready (those that wait for nothing first, in their
    order; transfers never ready last, in theirs), and the lists of waiters in that numbering.

    ``waiter[wait_ptr[t]:wait_ptr[t + 1]]`` wait for step t; ``missing[t]``: how many steps t waits for.
    Returns ``order`` (new number -> old, int32), ``rank`` (old -> new, int32) and the new
    ``(wait_ptr, waiter)``: step t's list is the old list of the step it was, each entry renamed, in the
    same order (compute steps keep their numbers, and their lists their places). One pass over the
    waits takes the steps in order and copies each transfer's list to its new place as it goes; a
    second renames the entries.
    """
    steps = len(wait_ptr) - 1
    left = missing.copy()
    queue = np.empty(steps, np.int32)
    tail = 0
    for s in range(steps):
        if left[s] == 0:
            queue[tail] = s
            tail += 1
    order = np.empty(n, np.int32)
    ptr = wait_ptr.copy()  # (compute steps' lists keep their places: transfers' lists fill the same room before them)
    idx = waiter.copy()
    placed = 0
    w = 0
    head = 0
    while head < tail:
        s = queue[head]
        head += 1
        if s < n:
            order[placed] = s
            ptr[placed] = w
            placed += 1
        for k in range(wait_ptr[s], wait_ptr[s + 1]):
            j = waiter[k]
            if s < n:
                idx[w] = j
                w += 1
            left[j] -= 1
            if left[j] == 0:
                queue[tail] = j
                tail += 1
    if placed < n:
        for s in range(n):
            if left[s] > 0:
                order[placed] = s
                ptr[placed] = w
                placed += 1
                for k in range(wait_ptr[s], wait_ptr[s + 1]):
                    idx[w] = waiter[k]
                    w += 1
    rank = np.empty(n, np.int32)
    for t in range(n):
        rank[order[t]] = t
    for k in range(len(idx)):
        j = idx[k]
        if j < n:
            idx[k] = rank[j]
    return order, rank, ptr, idx


@njit(cache=True)
def inverse_of(order, rank):
    """``rank[order[t]] = t`` for every t (the inverse permutation), written into ``rank``."""
    for t in range(len(order)):
        rank[order[t]] = t


@njit(cache=True)
def gather(values, index, out):
    """``out[i] = values[index[i]]`` for every i (NumPy's ``take`` widens an int32 index to a copy first)."""
    for i in range(len(index)):
        out[i] = values[index[i]]

