"""The compiled loop for schedules that send bundles: chunks held by (device, key) slot.

The same loop as :func:`netsim.engine.kernel.play_kernel`, action for action, with
two differences: a device holds its chunks by *slot* (``recv_slot``, ``send_slot``:
a devices x keys table of a 4096-chip pod would have hundreds of millions of
entries), and a device that sends a bundle it does not hold makes it, by number,
where the Python player makes it (:mod:`netsim.engine.kernel_bundles`). It is a
separate function rather than a flag of the unbundled loop: with the slot
branches inside, the unbundled loop ran 1.5x slower (0.52 -> 0.80 s of CPU for
the 7.3 million actions of the 1024-device ring all_gather).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict

from netsim.engine.kernel_bundles import make_bundle
from netsim.engine.kernel_parts import occupy, pop, push, wait

__all__ = ["play"]


@njit(cache=True)
def play(
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
    slotted,
    bundles,
):
    """Play the run; returns its status and the parts of the bundles made (see the module).

    With ``slotted``, chunks are held by slot (:mod:`netsim.engine.kernel_bundles`): ``held``
    and ``new_keys`` hold slots, and ``bundles`` gives the slots and bundle tables.
    """
    recv_slot, send_slot, part_start, part_count, part_key, is_bundle, slot_code, dev_slot, width = bundles[:9]
    made, made_ptr, made_parts, made_counts, stack, scratch, extra = bundles[9:]
    n = len(dst)
    n_links = len(bandwidth)
    serve_base = n_devices
    forward_base = serve_base + n
    done_base = serve_base + 2 * n

    # A transfer is in one list at a time: its source's ready list, then a link's queue, then its
    # destination's inbox; one array links them all (memory is time here: fresh pages fault).
    after = np.full(n, -1, np.int32)
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

    # instants: buckets of actions; an action is a node of its bucket's list, allocated once as
    # play_kernel allocates them (see there for why ``bound`` of each suffice)
    bound = n + n_links + n_devices + 1
    b_time = np.empty(bound, np.float64)
    b_head = np.empty(bound, np.int64)
    b_tail = np.empty(bound, np.int64)
    heap = np.empty(bound, np.int64)
    free_b = np.empty(bound, np.int64)
    n_free_b = 0
    n_new_b = 0
    n_heap = 0
    a_value = np.empty(bound, np.int64)
    a_next = np.empty(bound, np.int32)
    free_a = np.empty(bound, np.int32)
    n_free_a = 0
    n_new_a = 0
    bucket_at = Dict.empty(key_type=types.float64, value_type=types.int64)

    for i in range(n):  # steps that wait for nothing are ready at their source, in order
        if missing[i] == 0:
            s = src[i]
            if ready_tail[s] < 0:
                ready_head[s] = i
            else:
                after[ready_tail[s]] = i
            ready_tail[s] = i

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
    # the instants last scheduled into, and their buckets: most actions are due at one of a few
    # (arrivals and links freeing up of messages of a few sizes), so the dictionary is seldom asked
    memo_t = np.full(8, -1.0)
    memo_b = np.full(8, -1, np.int64)
    memo_next = 0
    b = -1
    node = -1
    now = 0.0
    while True:
        for p in range(n_pend):  # file what the last action scheduled, in order
            if n_free_a == 0 and n_new_a == bound:  # (cannot happen: see play_kernel)
                status = 1
                break
            when = pend_t[p]
            if when == now and b >= 0:  # due at the instant being played: the end of its list
                bb = b
            else:
                bb = -1
                for q in range(8):
                    if memo_t[q] == when:
                        bb = memo_b[q]
                        break
            if bb < 0:
                if when in bucket_at:
                    bb = bucket_at[when]
                else:
                    if n_free_b:
                        n_free_b -= 1
                        bb = free_b[n_free_b]
                    else:
                        bb = n_new_b
                        n_new_b += 1
                    b_time[bb] = when
                    b_head[bb] = -1
                    b_tail[bb] = -1
                    bucket_at[when] = bb
                    n_heap = push(heap, n_heap, b_time, bb)
                memo_t[memo_next] = when
                memo_b[memo_next] = bb
                memo_next = (memo_next + 1) & 7
            if n_free_a:
                n_free_a -= 1
                fresh = free_a[n_free_a]
            else:
                fresh = n_new_a
                n_new_a += 1
            a_value[fresh] = pend_a[p]
            a_next[fresh] = -1
            if b_tail[bb] < 0:
                b_head[bb] = fresh
            else:
                a_next[b_tail[bb]] = fresh
            b_tail[bb] = fresh
        n_pend = 0
        if status:
            break
        if node >= 0:  # the next action of the instant, if any
            done = node
            node = a_next[node]
            free_a[n_free_a] = done
            n_free_a += 1
        if node < 0:  # the instant is over: on to the next
            if b >= 0:
                del bucket_at[now]
                free_b[n_free_b] = b
                n_free_b += 1
                for q in range(8):
                    if memo_b[q] == b:
                        memo_t[q] = -1.0
                        memo_b[q] = -1
            if n_heap == 0:
                break
            b = heap[0]
            n_heap = pop(heap, n_heap, b_time)
            now = b_time[b]
            instants += 1
            node = b_head[b]
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
                    slot = recv_slot[i] if slotted else c * n_keys + key[i]
                    if reduce[i]:
                        was = held[slot]
                        if was < 0:
                            status = -1 - i
                            break
                        chunk = n_chunks + n_reduced
                        sum_of[n_reduced] = was
                        sum_with[n_reduced] = carried[i]
                        size[chunk] = size[was]
                        n_reduced += 1
                        held[slot] = chunk
                    else:
                        if held[slot] < 0:  # a key new to the device: noted in the device's part of new_keys
                            new_keys[new_start[c] + new_count[c]] = slot if slotted else key[i]
                            new_count[c] += 1
                        held[slot] = carried[i]
                    for w in range(wait_ptr[i], wait_ptr[i + 1]):
                        j = wait_idx[w]
                        missing[j] -= 1
                        if missing[j] == 0:
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
            awake[c] = True
            i = ready_head[c]
            ready_head[c] = -1
            ready_tail[c] = -1
            while i >= 0:
                following = after[i]
                slot = send_slot[i] if slotted else c * n_keys + key[i]
                chunk = held[slot]
                if chunk < 0 and slotted:  # a bundle the device makes (or made before)
                    tables = (part_start, part_count, part_key, is_bundle, slot_code, dev_slot, width, stack, scratch, extra)
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
                else:  # (cannot happen: see play_kernel)
                    status = 1
                    break
                a_value[fresh] = action
                a_next[fresh] = -1
                a_next[b_tail[b]] = fresh
                b_tail[b] = fresh
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
        else:  # a link is done with a message: the next one, or idle
            link = c - done_base
            i = q_head[link]
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
        end = now + nbytes[i] / bandwidth[link]
        if h and tail[i] > end:  # (on its first link the tail left when it started)
            end = tail[i]
        span = end - now
        lag = latency[link]
        rec_transfer[n_records] = i
        rec_link[n_records] = link
        rec_start[n_records] = now
        rec_end[n_records] = end
        n_records += 1
        if h + 1 < route_ptr[r + 1] - route_ptr[r]:
            tail[i] = end + lag
            pend_t[0] = now + (lag if cut_through else span + lag)
            pend_a[0] = ~(forward_base + i)
        else:
            pend_t[0] = now + (span + lag)
            pend_a[0] = i
        pend_t[1] = now + span
        pend_a[1] = ~(done_base + link)
        n_pend = 2
    counts[0] = actions
    counts[1] = instants
    counts[2] = n_records
    counts[3] = n_reduced
    return status, made_parts
