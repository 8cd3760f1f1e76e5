"""Pieces of the compiled loop: server queues, counting off who waits, compute units.

:func:`netsim.engine.kernel.play_kernel` plays the actions of
:class:`netsim.engine.fast.FastPlayer` on integer arrays, with chunks in a table or
by slot (bundles); what it does in more than one place, or rarely, is here, as
small numba functions it calls:

* the radix heap's bucket of an action, and filing it there (:func:`bucket`, :func:`file_action`);
* a server's FIFO queue, a link's or a compute unit's, kept as a linked list
  through one ``after`` array (:func:`wait`, :func:`occupy`, :func:`served`);
* who waits for each step (:func:`waiters`, before the loop), and the steps
  that become ready when one is done (:func:`count_off`, :func:`compute_ready`),
  joins included;
* a compute unit starting a step or done with one (:func:`unit_acts`).

The hottest paths (a link done with a message, an arrival counted off) stay
written out in the loop: taking a message off a link's queue through
:func:`served` instead made the ring N=1024 all_gather's loop go from 0.18 to
0.30 s of CPU (numba's ``inline="always"`` did not win it back).

numba caches :func:`~netsim.engine.kernel.play_kernel` by its own file only: after
changing a function here (or in :mod:`netsim.engine.link_model`, whose ``serve`` the
loop compiles), touch ``kernel.py`` too, or its cached loop keeps the old code.

Steps are numbered transfers first, then compute steps (step ``n + j`` is compute
step j). ``after[k]`` is the step after step k in the one list it is in: its
device's ready list, then a server's queue, then its destination's inbox (a
transfer) or its device's list of finished steps (a compute step).
"""

from __future__ import annotations

import numpy as np

from netsim.engine.compiled_cache import njit
from netsim.engine.jit import leading_zeros

__all__ = ["append", "bucket", "compute_ready", "count_off", "file_action", "occupy", "served", "unit_acts", "wait", "waiters"]


@njit(cache=True)
def waiters(dep_ptr, dep_idx, order, wait_ptr):
    """Who waits for each step, in ``order`` (a counting sort): step t's are ``waiter[wait_ptr[t]:wait_ptr[t + 1]]``
    (step i waits for ``dep_idx[dep_ptr[i]:dep_ptr[i + 1]]``; ``order`` lists the steps in the order their
    waits are counted off, each once). ``wait_ptr`` (zeros, one more than the steps) is filled in, in the
    width the caller chose; ``waiter`` is returned."""
    n = len(wait_ptr) - 1
    for j in dep_idx:
        wait_ptr[j + 1] += 1
    for t in range(n):
        wait_ptr[t + 1] += wait_ptr[t]
    filled = wait_ptr[:-1].copy()
    waiter = np.empty(len(dep_idx), np.int32)
    for i in order:
        for k in range(dep_ptr[i], dep_ptr[i + 1]):
            j = dep_idx[k]
            waiter[filled[j]] = i
            filled[j] += 1
    return waiter


@njit(cache=True)
def first_bad_dependency(dep_ptr, dep_idx, base, starts, place, n_steps):
    """The first dependency entry (in order) that names no other step, else the first done elsewhere than where
    its step starts: ``(1, k)``, ``(2, k)``, or ``(0, -1)`` if none (:func:`netsim.engine.routes.check_schedule`,
    in one pass instead of arrays of one entry per dependency). Step ``i`` is step ``base + i`` of the run,
    starts on device ``starts[i]`` and waits for ``dep_idx[dep_ptr[i]:dep_ptr[i + 1]]``; ``place[d]``: where step d is done."""
    elsewhere = -1
    for i in range(len(dep_ptr) - 1):
        for k in range(dep_ptr[i], dep_ptr[i + 1]):
            d = dep_idx[k]
            if d < 0 or d >= n_steps or d == base + i:
                return 1, k
            if elsewhere < 0 and place[d] != starts[i]:
                elsewhere = k
    return (2, elsewhere) if elsewhere >= 0 else (0, -1)


@njit(cache=True)
def waiting_order(dep_ptr, dep_idx, join, n_transfers):
    """The steps in the order their waits are counted off (``argsort(waiter_keys(...), kind="stable")``,
    :func:`netsim.engine.columns.waiter_keys`), in one pass over the dependencies and without sorting them:
    every step in step order, but a join waited for, which comes just before its first waiter
    (``join``: which compute steps, numbered after the ``n_transfers`` transfers, are joins)."""
    steps = len(dep_ptr) - 1
    first = np.full(len(join), steps, np.int64)  # each join's first waiter
    for i in range(steps):
        for k in range(dep_ptr[i], dep_ptr[i + 1]):
            j = dep_idx[k] - n_transfers
            if j >= 0 and join[j] and i < first[j]:
                first[j] = i
    waited = np.flatnonzero(first < steps)
    waited = waited[np.argsort(first[waited], kind="mergesort")]  # (ties: in step order)
    order = np.empty(steps, np.int64)
    pos = 0
    w = 0
    for s in range(steps):
        if s >= n_transfers and first[s - n_transfers] < steps:
            continue  # (a join waited for: placed before its first waiter)
        while w < len(waited) and first[waited[w]] <= s:
            order[pos] = n_transfers + waited[w]
            pos += 1
            w += 1
        order[pos] = s
        pos += 1
    while w < len(waited):
        order[pos] = n_transfers + waited[w]
        pos += 1
        w += 1
    return order


@njit(cache=True)
def bucket(key, last):
    """The radix heap's bucket of an action keyed ``key`` while the instant played is keyed ``last``: 0 if they are
    equal, else one more than the highest bit in which they differ."""
    differ = key ^ last
    return 0 if differ == 0 else 64 - leading_zeros(differ)


@njit(inline="always")
def file_action(r_head, r_tail, r_least, after, node, key, last):
    """Action node ``node``, keyed ``key``, joins the end of its radix-heap bucket's list (``last``: the key of the
    instant being played), and the bucket's least key takes it if it is less (the bucket is emptied from it)."""
    b = bucket(key, last)
    append(r_head, r_tail, after, b, node)
    if key < r_least[b]:
        r_least[b] = key


@njit(cache=True)
def append(head, tail, after, owner, k):
    """Step ``k`` joins the end of ``owner``'s list (``head``, ``tail``: each owner's first and last, -1 none)."""
    if tail[owner] < 0:
        head[owner] = k
    else:
        after[tail[owner]] = k
    tail[owner] = k
    after[k] = -1


@njit(cache=True)
def wait(server, i, q_head, q_tail, after, q_len, state, max_queue):
    """Step ``i`` joins the end of ``server``'s queue; the longest queue seen grows with it
    (the item about to be served, ``state`` 1, counted in)."""
    if q_tail[server] < 0:
        q_head[server] = i
    else:
        after[q_tail[server]] = i
    q_tail[server] = i
    after[i] = -1
    q_len[server] += 1
    held = q_len[server] + (state[server] == 1)
    if held > max_queue[server]:
        max_queue[server] = held


@njit(cache=True)
def occupy(server, state, max_queue):
    """An idle ``server`` takes an item: about to serve it, and its longest queue is at least that one."""
    state[server] = 1
    if max_queue[server] == 0:
        max_queue[server] = 1


@njit(cache=True)
def served(server, q_head, q_tail, after, q_len):
    """The first step of ``server``'s queue, taken out of it (-1 if the queue is empty)."""
    i = q_head[server]
    if i >= 0:
        q_head[server] = after[i]
        if q_head[server] < 0:
            q_tail[server] = -1
        q_len[server] -= 1
    return i


@njit(cache=True)
def compute_ready(k, c, now, n, wait_ptr, wait_idx, missing, after, ready, computes, is_join, started, ended, stack):
    """Compute step ``k`` (a step number, ``>= n``) of device ``c`` waits for nothing more: it joins
    the device's ready compute steps, or, a join, is done now and its waiters are counted off."""
    j = k - n
    if is_join[j]:
        started[j] = now
        ended[j] = now
        count_off(k, c, now, n, wait_ptr, wait_idx, missing, after, ready, computes, is_join, started, ended, stack)
    else:
        append(computes[0], computes[1], after, c, k)


@njit(cache=True)
def count_off(step, c, now, n, wait_ptr, wait_idx, missing, after, ready, computes, is_join, started, ended, stack):
    """``step`` is done on device ``c``: whoever waited for it (``wait_idx[wait_ptr[step]:wait_ptr[step + 1]]``)
    and waits for nothing more is ready, in order: a transfer at the end of ``ready`` (heads, tails), a
    compute step at the end of ``computes``. A join among them is done at once, and its own waiters
    are counted off there and then, before the next waiter of ``step`` (depth first: ``stack`` holds
    each open list's next place and end, room for every join)."""
    stack[0, 0] = wait_ptr[step]
    stack[0, 1] = wait_ptr[step + 1]
    depth = 1
    while depth:
        f = depth - 1
        w = stack[f, 0]
        if w == stack[f, 1]:
            depth -= 1
            continue
        stack[f, 0] = w + 1
        k = wait_idx[w]
        missing[k] -= 1
        if missing[k]:
            continue
        if k < n:
            append(ready[0], ready[1], after, c, k)
        elif is_join[k - n]:
            started[k - n] = now
            ended[k - n] = now
            stack[depth, 0] = wait_ptr[k]
            stack[depth, 1] = wait_ptr[k + 1]
            depth += 1
        else:
            append(computes[0], computes[1], after, c, k)


@njit(cache=True)
def unit_acts(j, now, n, device, unit_of, duration, started, ended, unit, finished, after, awake, pend_t, pend_a, unit_base):
    """A compute unit acts: it starts compute step ``j`` (``j < m``), or is done with step ``j - m``
    (its device takes it in when it wakes) and starts the next in its queue, or goes idle.

    ``unit`` is (state, queue heads, tails, lengths) per unit (``unit_of[j]`` serves step ``j``), ``finished`` (heads, tails) of the
    steps done and not yet taken in. What it schedules goes to ``pend_t``/``pend_a``; returns how
    many (a finished step is action ``~(unit_base + m + j)``).
    """
    m = len(device)
    state = unit[0]
    n_pend = 0
    if j >= m:  # done with step j: its device takes it in, and the unit serves the next or goes idle
        j -= m
        d, u = device[j], unit_of[j]
        append(finished[0], finished[1], after, d, n + j)
        if awake[d]:
            awake[d] = False
            pend_t[0] = now
            pend_a[0] = ~d
            n_pend = 1
        k = served(u, unit[1], unit[2], after, unit[3])
        if k < 0:
            state[u] = 0
            return n_pend
        j = k - n
    state[unit_of[j]] = 2
    started[j] = now
    ended[j] = now + duration[j]
    pend_t[n_pend] = ended[j]
    pend_a[n_pend] = ~(unit_base + m + j)
    return n_pend + 1
