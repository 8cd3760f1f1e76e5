"""Transfers numbered in the order they will play, for the compiled loop: the same events, fewer cache misses.

The compiled loop (:mod:`netsim.engine.kernel`) reads a dozen arrays by transfer
number. A schedule's own numbering follows how it was planned (op by op, group by
group, device by device), not when its transfers play: on a big program a transfer
and the next one to play are megabytes apart in every array, and each read is a
cache miss. So the compiled player renumbers the transfers once before the loop,
in the order they become ready when steps are taken in dependency order (first in,
first out: :func:`play_order`), and numbers them back afterwards.

The loop plays exactly the same events under any numbering as long as the steps
that wait for nothing keep their order (they are put in their devices' ready lists
by number) and every list of waiters keeps its order (:func:`renumbered_waiters`
renames the entries in place): the order of ready lists, link queues and inboxes
then comes from the play itself, not from the numbers. :func:`play_order` puts
those steps first, in their order.

Examples
--------
Four transfers, 2 waits for 0 and 3 for 2; 1 waits for 3:

>>> import numpy as np
>>> wait_ptr, waiter = np.array([0, 1, 1, 2, 3]), np.array([2, 3, 1], np.int32)
>>> missing = np.array([0, 1, 1, 1], np.int32)
>>> order = play_order(wait_ptr, waiter, missing, 4)
>>> order.tolist()  # the new numbering: old numbers in the order they become ready
[0, 2, 3, 1]
>>> rank = np.empty(4, np.int64)
>>> rank[order] = np.arange(4)
>>> ptr, idx = renumbered_waiters(wait_ptr, waiter, order, rank)
>>> ptr.tolist(), idx.tolist()  # new 0 = old 0 lets new 1 (old 2) go, which lets new 2 go, which lets new 3 go
([0, 1, 2, 3, 3], [1, 2, 3])
"""

from __future__ import annotations

import numpy as np

from netsim.engine.compiled_cache import njit

__all__ = ["play_order", "renumbered_waiters"]


@njit(cache=True)
def play_order(wait_ptr, waiter, missing, n):
    """The ``n`` transfers (steps ``0 .. n - 1``; compute steps follow them) in the order they become ready
    when steps are done in the order they are ready: those that wait for nothing first, in their order.

    ``waiter[wait_ptr[t]:wait_ptr[t + 1]]`` wait for step t; ``missing[t]``: how many steps t waits for.
    Transfers never ready (a wait that cannot end) follow, in their order. Returns ``order``: new
    number -> old number (int32).
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
    placed = 0
    head = 0
    while head < tail:
        s = queue[head]
        head += 1
        if s < n:
            order[placed] = s
            placed += 1
        for w in range(wait_ptr[s], wait_ptr[s + 1]):
            k = waiter[w]
            left[k] -= 1
            if left[k] == 0:
                queue[tail] = k
                tail += 1
    if placed < n:
        for s in range(n):
            if left[s] > 0:
                order[placed] = s
                placed += 1
    return order


@njit(cache=True)
def renumbered_waiters(wait_ptr, waiter, order, rank):
    """The lists of waiters in the new numbering (transfers' new number ``rank[old]``, ``order[new]``
    their old one; compute steps keep theirs): step t's list is the old list of the step it was, each
    entry renamed, in the same order. Returns ``(wait_ptr, waiter)``."""
    n = len(order)
    steps = len(wait_ptr) - 1
    ptr = np.empty(steps + 1, np.int64)
    ptr[0] = 0
    for t in range(steps):
        old = order[t] if t < n else t
        ptr[t + 1] = ptr[t] + wait_ptr[old + 1] - wait_ptr[old]
    idx = np.empty(len(waiter), np.int32)
    for t in range(steps):
        old = order[t] if t < n else t
        w = ptr[t]
        for k in range(wait_ptr[old], wait_ptr[old + 1]):
            j = waiter[k]
            idx[w] = rank[j] if j < n else j
            w += 1
    return ptr, idx
