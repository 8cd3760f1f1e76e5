"""The fast player's event loop, compiled (numba): the same actions, in the same order, on integer arrays.

:mod:`netsim.engine.compiled` prepares the arrays and reads the results; this
module is only the loop, written as :class:`netsim.engine.fast.FastPlayer` plays
it (see there for the actions and their order), with chunks stood for by numbers:

* ``held[d * n_keys + k]`` is the number of the chunk device d holds under key
  k (-1 if none); ``size[c]`` is chunk c's bytes.
* A transfer carries the number of the chunk its source held when it left.
* A link serves a message as :func:`netsim.engine.link_model.serve` says: the loop
  compiles that very function (``njit(inline="always")``), as the other players call it.
* A reduction makes a new chunk numbered after the ones before it; it is
  recorded (``sum_of``, ``sum_with``) and computed afterwards, in that order,
  with its size taken to be that of the chunk added into (checked afterwards).
* Steps are numbered transfers first, then compute steps, as in the Python
  player; ``computes`` (None without compute steps) gives each compute step's device, duration (worked out
  before the loop) and whether it is a join, and takes in when each started and
  ended and each unit's longest queue. A compute unit is served as a link is
  (:mod:`netsim.engine.kernel_parts`); a join is done the instant its last
  dependency is counted off, without the unit.
* With ``bundles`` (:mod:`netsim.engine.compiled_bundles`), chunks are held by
  (device, key) *slot* instead (``held[recv_slot[i]]``, ``held[send_slot[i]]``;
  ``new_keys`` notes slots), and a device that sends a bundle it does not hold
  makes it (:func:`netsim.engine.kernel_bundles.make_bundle`). ``bundles`` is
  None otherwise, and numba compiles the loop once for each: the branches on
  ``bundles is None`` are pruned before compiling, so the unbundled loop carries
  none of the slots' code (with a flag tested at run time instead it ran 1.5x
  slower).

Pending actions are held in a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, 1990)
keyed by the bits of their time (a non-negative float's bits order as the float
does): bucket 0 holds the actions due at the instant being played, bucket i those
whose key first differs from it at bit i - 1, each a FIFO list with its least key
(kept as actions are filed, so the lowest bucket in use is emptied from it in one
walk of its list). Actions with the same time are always in one bucket, in the
order they were scheduled, and a bucket emptied into lower ones keeps its order, so
actions due at one instant run in the order they were scheduled, those scheduled
for the instant being played last. Each action moves down at most 64 buckets, and no instant is looked up by
its time: on the 512-chip FSDP program (8 layers on tpu-v4:8x8x8, 12.6 M transfers
at 6.2 M distinct instants) the loop took 0.85 of the time of a dictionary of
instants ordered in a binary heap, and 0.92 of that once each bucket kept its least
key (bench/README.md).

It returns its status and the parts of the bundles made (``made_parts``, empty
without bundles). The status is 0, or negative when a chunk is missing (-1 - the
transfer that found it missing), or when a bundle cannot be made: the caller then replays the run on the Python player,
which raises the error with its message. (Status 1, more actions pending than
the loop has room for, cannot happen: see where the room is allocated.)
"""

from __future__ import annotations

import numpy as np

from netsim.engine.compiled_cache import njit
from netsim.engine.kernel_bundles import make_bundle
from netsim.engine.kernel_parts import append, compute_ready, count_off, file_action, occupy, unit_acts, wait
from netsim.engine.link_model import serve, transmission_s

__all__ = ["play_kernel"]

# The link model's own functions, compiled (numba caches play_kernel by this file alone: after
# changing netsim/engine/link_model.py or kernel_parts.py, touch this file).
serve_link = njit(inline="always")(serve)
transmission = njit(inline="always")(transmission_s)


@njit(cache=True)
def play_kernel(
    n_devices,
    n_keys,
    cut_through,
    start_s,
    dst,
    key,
    reduce,
    route_of,
    route_ptr,
    route_links,
    bandwidth,
    latency,
    wait_ptr,
    wait_idx,
    missing,
    src,
    multi_hop,
    held,
    size,
    n_chunks,
    sent_at,
    arrived_at,
    nbytes,
    carried,
    rec_transfer,
    rec_link,
    rec_start,
    rec_end,
    max_queue,
    taken,
    sum_of,
    sum_with,
    new_keys,
    new_start,
    new_count,
    counts,
    computes,
    bundles,
):
    # (numba compiles the loop for each of computes and bundles None or a tuple: in each, the branches
    # on ``computes is None`` and ``bundles is None`` that do not apply are pruned before compiling)
    if computes is None:
        m = 0
    else:
        unit_device, duration, is_join, started, ended, unit_max_queue, unit_of = computes
        m = len(unit_device)
    if bundles is None:
        made_parts = np.zeros(0, np.int32)
    else:
        recv_slot, send_slot, part_start, part_count, part_key, is_bundle, slot_code, dev_slot, width = bundles[:9]
        made, made_ptr, made_parts, made_counts, frames, scratch, extra = bundles[9:]
    n = len(dst)
    n_links = len(bandwidth)
    serve_base = n_devices
    forward_base = serve_base + n
    done_base = serve_base + 2 * n
    unit_base = done_base + n_links

    # A step is in one list at a time: a transfer in its source's ready list, then a link's queue, then
    # its destination's inbox; a compute step in its device's list of ready ones, then its unit's queue,
    # then its device's list of finished ones. One array links them all (memory is time here: fresh
    # pages fault).
    after = np.full(n + m, -1, np.int32)
    # per device: its inbox and ready list, awake or not
    in_head = np.full(n_devices, -1, np.int64)
    in_tail = np.full(n_devices, -1, np.int64)
    ready_head = np.full(n_devices, -1, np.int64)
    ready_tail = np.full(n_devices, -1, np.int64)
    awake = np.zeros(n_devices, np.bool_)
    # per link: its queue and state (0 idle, 1 about to serve, 2 serving)
    q_head = np.full(n_links, -1, np.int64)
    q_tail = np.full(n_links, -1, np.int64)
    q_len = np.zeros(n_links, np.int64)
    state = np.zeros(n_links, np.int8)
    hop = np.zeros(n if multi_hop else 0, np.int32)
    tail = np.zeros(n if multi_hop else 0, np.float64)
    if computes is not None:  # per device: its ready and finished compute steps; its unit's state and queue, as a link's
        c_ready = (np.full(n_devices, -1, np.int64), np.full(n_devices, -1, np.int64))
        finished = (np.full(n_devices, -1, np.int64), np.full(n_devices, -1, np.int64))
        n_units = len(unit_max_queue)  # each device's compute unit (d), then its DMA engine (d + n_devices) if any step is one's
        unit = (np.zeros(n_units, np.int8), np.full(n_units, -1, np.int64), np.full(n_units, -1, np.int64), np.zeros(n_units, np.int64))
        ready = (ready_head, ready_tail)
        stack = np.zeros((m + 1, 2), np.int64)  # joins done within joins (see count_off)

    # pending actions: a node each (its action, its time's bits, the next node of its bucket's list), in
    # the radix heap's 65 buckets (see the module docstring). Each transfer, link, device and compute unit
    # has at most one action pending, and the one being played holds its node until the next starts:
    # ``bound`` nodes suffice. The arrays are allocated once, not filled: never-used nodes are taken in
    # order (n_new_a), freed ones from a stack (free_a), so pages a run never reaches are never touched.
    # (Arrays bound once also keep the loop free of reference counting.)
    bound = n + n_links + 2 * n_devices + 1 + (len(computes[5]) - n_devices if computes is not None else 0)
    a_value = np.empty(bound, np.int64)
    a_next = np.empty(bound, np.int32)
    a_key = np.empty(bound, np.uint64)
    free_a = np.empty(bound, np.int32)
    n_free_a = 0
    n_new_a = 0
    r_head = np.full(65, -1, np.int64)
    r_tail = np.full(65, -1, np.int64)
    r_least = np.full(65, ~np.uint64(0), np.uint64)  # each bucket's least key (bucket 0's is never read)
    last_key = np.uint64(0)  # the key of the instant being played (bucket 0's), once one is
    time_bits = np.zeros(1, np.float64)  # a time, and its bits: the key
    key_of = time_bits.view(np.uint64)

    for i in range(n):  # steps that wait for nothing are ready at their source, in order
        if missing[i] == 0:
            s = src[i]
            if ready_tail[s] < 0:
                ready_head[s] = i
            else:
                after[ready_tail[s]] = i
            ready_tail[s] = i
    if computes is not None:
        for j in range(m):
            if missing[n + j] == 0:
                append(c_ready[0], c_ready[1], after, unit_device[j], n + j)

    n_records = 0
    n_reduced = 0
    actions = 0
    instants = 0
    status = 0
    # what an action schedules, filed once it is handled; first, every device wakes up at its start
    pend_t = np.zeros(max(n_devices, 2), np.float64)
    pend_a = np.zeros(max(n_devices, 2), np.int64)
    for d in range(n_devices):
        pend_t[d] = start_s[d]
        pend_a[d] = ~d
    n_pend = n_devices
    now_key = ~np.uint64(0)  # (no time's bits: the first action starts an instant)
    node = -1
    now = 0.0
    while True:
        for p in range(n_pend):  # file what the last action scheduled, in order
            if n_free_a == 0 and n_new_a == bound:  # (cannot happen, see above: the Python player would play it)
                status = 1
                break
            if n_free_a:
                n_free_a -= 1
                fresh = free_a[n_free_a]
            else:
                fresh = n_new_a
                n_new_a += 1
            time_bits[0] = pend_t[p]
            k = key_of[0]
            a_value[fresh] = pend_a[p]
            a_key[fresh] = k
            file_action(r_head, r_tail, r_least, a_next, fresh, k, last_key)
        n_pend = 0
        if status:
            break
        if node >= 0:  # done with it
            free_a[n_free_a] = node
            n_free_a += 1
        if r_head[0] < 0:  # the instant is over: the lowest bucket in use is emptied into the ones below, from its least key
            rb = 1
            while rb < 65 and r_head[rb] < 0:
                rb += 1
            if rb == 65:
                break
            last_key = r_least[rb]  # (kept as actions are filed: the list is walked once, not twice)
            r_least[rb] = ~np.uint64(0)
            node = r_head[rb]
            r_head[rb] = -1
            r_tail[rb] = -1
            while node >= 0:
                following = a_next[node]
                file_action(r_head, r_tail, r_least, a_next, node, a_key[node], last_key)
                node = following
        node = r_head[0]  # the next action due now
        r_head[0] = a_next[node]
        if r_head[0] < 0:
            r_tail[0] = -1
        if a_key[node] != now_key:
            now_key = a_key[node]
            key_of[0] = now_key
            now = time_bits[0]
            instants += 1
        a = a_value[node]
        actions += 1
        if a >= 0:  # transfer a is delivered: its tail reached its destination
            d = dst[a]
            if in_tail[d] < 0:
                in_head[d] = a
            else:
                after[in_tail[d]] = a
            in_tail[d] = a
            after[a] = -1
            if awake[d]:
                awake[d] = False
                pend_t[0] = now
                pend_a[0] = ~d
                n_pend = 1
            continue
        c = ~a
        h = 0
        if c < serve_base:  # device c wakes up: takes in its arrivals, sends what became ready
            i = in_head[c]
            if i >= 0:
                in_head[c] = -1
                in_tail[c] = -1
                count = 0
                while i >= 0:
                    following = after[i]
                    count += 1
                    arrived_at[i] = now
                    slot = c * n_keys + key[i] if bundles is None else recv_slot[i]
                    if reduce[i] and bundles is not None and held[slot] < 0:
                        # a bundle, added part by part into the parts the device holds (stand-ins: the same
                        # chunks): only its size is checked, against the bundle the device makes of them
                        tables = (part_start, part_count, part_key, is_bundle, slot_code, dev_slot, width, frames, scratch, extra)
                        was = make_bundle(c, slot, key[i], held, made, size, n_chunks, made_ptr, made_parts, made_counts, *tables)
                        while was == -2:  # room for more parts, and again
                            made_parts = np.concatenate((made_parts, np.zeros(len(made_parts) + 1, np.int32)))
                            was = make_bundle(c, slot, key[i], held, made, size, n_chunks, made_ptr, made_parts, made_counts, *tables)
                        if was < 0 or size[was] != size[carried[i]]:
                            status = -1 - i
                            break
                    elif reduce[i]:
                        was = held[slot]
                        if was < 0:
                            status = -1 - i
                            break
                        chunk = n_chunks + n_reduced if bundles is None else n_chunks + len(held) + n_reduced  # (after every bundle)
                        sum_of[n_reduced] = was
                        sum_with[n_reduced] = carried[i]
                        size[chunk] = size[was]
                        n_reduced += 1
                        held[slot] = chunk
                    else:
                        if held[slot] < 0:  # a key new to the device: noted in the device's part of new_keys
                            if bundles is None:
                                new_keys[new_start[c] + new_count[c]] = key[i]
                            else:
                                new_keys[new_start[c] + new_count[c]] = slot
                            new_count[c] += 1
                        held[slot] = carried[i]
                    for w in range(wait_ptr[i], wait_ptr[i + 1]):
                        j = wait_idx[w]
                        missing[j] -= 1
                        if missing[j] == 0:
                            if computes is not None and j >= n:  # a compute step (see compute_ready)
                                compute_ready(j, c, now, n, wait_ptr, wait_idx, missing, after, ready, c_ready, is_join, started, ended, stack)
                                continue
                            if ready_tail[c] < 0:
                                ready_head[c] = j
                            else:
                                after[ready_tail[c]] = j
                            ready_tail[c] = j
                            after[j] = -1
                    i = following
                taken[c] += count
                if status:
                    continue
            if computes is not None:  # its finished compute steps taken in; its ready ones handed to its unit, before any transfer is sent
                k = finished[0][c]
                finished[0][c] = -1
                finished[1][c] = -1
                while k >= 0:
                    following = after[k]
                    taken[c] += 1
                    count_off(k, c, now, n, wait_ptr, wait_idx, missing, after, ready, c_ready, is_join, started, ended, stack)
                    k = following
                k = c_ready[0][c]
                c_ready[0][c] = -1
                c_ready[1][c] = -1
                while k >= 0:
                    following = after[k]
                    u = unit_of[k - n]
                    if unit[0][u]:
                        wait(u, k, unit[1], unit[2], after, unit[3], unit[0], unit_max_queue)
                    else:  # idle: it starts the step once the actions due now are done
                        occupy(u, unit[0], unit_max_queue)
                        if n_free_a:
                            n_free_a -= 1
                            fresh = free_a[n_free_a]
                        else:  # (room for it: see bound)
                            fresh = n_new_a
                            n_new_a += 1
                        a_value[fresh] = ~(unit_base + k - n)
                        a_key[fresh] = now_key
                        append(r_head, r_tail, a_next, 0, fresh)  # due now
                    k = following
            awake[c] = True
            i = ready_head[c]
            ready_head[c] = -1
            ready_tail[c] = -1
            while i >= 0:
                following = after[i]
                if bundles is None:
                    chunk = held[c * n_keys + key[i]]
                else:
                    slot = send_slot[i]
                    chunk = held[slot]
                    if chunk < 0:  # a bundle the device makes (or made before)
                        tables = (part_start, part_count, part_key, is_bundle, slot_code, dev_slot, width, frames, scratch, extra)
                        chunk = make_bundle(c, slot, key[i], held, made, size, n_chunks, made_ptr, made_parts, made_counts, *tables)
                        while chunk == -2:  # room for more parts, and again
                            made_parts = np.concatenate((made_parts, np.zeros(len(made_parts) + 1, np.int32)))
                            chunk = make_bundle(c, slot, key[i], held, made, size, n_chunks, made_ptr, made_parts, made_counts, *tables)
                if chunk < 0:
                    status = -1 - i
                    break
                carried[i] = chunk
                sent_at[i] = now
                nbytes[i] = size[chunk]
                r = route_of[i]
                action = i
                if route_ptr[r] < route_ptr[r + 1]:
                    link = route_links[route_ptr[r]]
                    if state[link]:  # busy, or about to be: wait in its queue
                        wait(link, i, q_head, q_tail, after, q_len, state, max_queue)
                        i = following
                        continue
                    occupy(link, state, max_queue)  # idle: it serves this message once the actions due now are done
                    action = ~(serve_base + i)
                if n_free_a:  # due now: the end of this instant's list
                    n_free_a -= 1
                    fresh = free_a[n_free_a]
                elif n_new_a < bound:
                    fresh = n_new_a
                    n_new_a += 1
                else:  # (cannot happen, see above)
                    status = 1
                    break
                a_value[fresh] = action
                a_key[fresh] = now_key
                append(r_head, r_tail, a_next, 0, fresh)  # due now
                i = following
            continue
        if c < forward_base:  # an idle link starts on transfer i
            i = c - serve_base
            h = hop[i] if multi_hop else 0
            link = route_links[route_ptr[route_of[i]] + h]
        elif c < done_base:  # the head of transfer i reaches the start of its next link
            i = c - forward_base
            h = hop[i] + 1
            hop[i] = h
            link = route_links[route_ptr[route_of[i]] + h]
            if state[link]:
                wait(link, i, q_head, q_tail, after, q_len, state, max_queue)
            else:
                occupy(link, state, max_queue)
                pend_t[0] = now
                pend_a[0] = ~(serve_base + i)
                n_pend = 1
            continue
        else:  # a link is done with a message: the next one, or idle (or a compute unit acts)
            link = c - done_base
            if computes is not None and link >= n_links:  # a compute unit starts a step, or is done with one
                acting = link - n_links
                n_pend = unit_acts(acting, now, n, unit_device, unit_of, duration, started, ended, unit, finished, after, awake, pend_t, pend_a, unit_base)
                continue
            i = q_head[link]  # (written out: as a call, served() made the ring's loop 1.6x slower)
            if i < 0:
                state[link] = 0
                continue
            q_head[link] = after[i]
            if q_head[link] < 0:
                q_tail[link] = -1
            q_len[link] -= 1
            h = hop[i] if multi_hop else 0
        # link serves transfer i, the hop h of its route
        state[link] = 2
        r = route_of[i]
        last = h + 1 == route_ptr[r + 1] - route_ptr[r]
        end, hold, reach, tail_at = serve_link(now, transmission(nbytes[i], bandwidth[link]), latency[link], tail[i] if h else now, h, last, cut_through)
        rec_transfer[n_records] = i
        rec_link[n_records] = link
        rec_start[n_records] = now
        rec_end[n_records] = end
        n_records += 1
        pend_t[0] = now + reach
        if last:
            pend_a[0] = i
        else:
            tail[i] = tail_at
            pend_a[0] = ~(forward_base + i)
        pend_t[1] = now + hold
        pend_a[1] = ~(done_base + link)
        n_pend = 2
    counts[0] = actions
    counts[1] = instants
    counts[2] = n_records
    counts[3] = n_reduced
    return status, made_parts
