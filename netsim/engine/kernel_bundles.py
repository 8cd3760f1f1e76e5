"""The compiled loop's bundles: chunks held by (device, key) *slots*, and bundles made from their parts.

:mod:`netsim.engine.compiled_bundles` prepares the arrays; :func:`netsim.engine.kernel.play_kernel`
plays the run and calls :func:`make_bundle` where the Python player calls
:func:`netsim.engine.payloads.made`. A schedule that sends bundles names so many keys
(73,728 on a 16x16x16 pod) that a table of devices x keys would not fit, so chunks
are held by *slot*: each (device, key) pair the run can look up (what devices start
with, what transfers deliver and send) gets a number, in the order of its code
``device * width + key`` (:func:`number_slots`). A device's slots are then
consecutive, and the part of a bundle a device makes is found by a binary search
among them.

Per slot, ``held`` is the number of the chunk the device holds (-1 none) and
``made`` the bundle it made under that key (-1 none, -2 while it is being made);
a bundle made is a new chunk, numbered after the starting chunks in the order
they were made (parts first, as the Python player makes them), its parts noted
in ``made_parts[made_ptr[m]:made_ptr[m + 1]]``, its size theirs added.
"""

from __future__ import annotations

from netsim.engine.compiled_cache import njit

__all__ = ["make_bundle", "number_slots"]


@njit(cache=True)
def number_slots(packed, n_codes, slot_of, slot_code):
    """Slots from ``packed`` (each code ``* n_codes +`` its position, sorted): a position's slot in ``slot_of``,
    each slot's code in ``slot_code``; returns the number of slots."""
    n_slots = 0
    last = -1
    for j in range(len(packed)):
        code = packed[j] // n_codes
        if code != last:
            slot_code[n_slots] = code
            n_slots += 1
            last = code
        slot_of[packed[j] - code * n_codes] = n_slots - 1
    return n_slots


@njit(cache=True)
def _find(slot_code, lo, hi, code):
    """The slot of ``code`` among ``slot_code[lo:hi]`` (sorted), or -1."""
    end = hi
    while lo < hi:
        mid = (lo + hi) >> 1
        if slot_code[mid] < code:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and slot_code[lo] == code:
        return lo
    return -1


@njit(cache=True)
def _undo(stack, depth, made, extra, base_code):
    """Frames given up: their bundles are not made after all."""
    for g in range(depth):
        if stack[g, 0] >= 0:
            made[stack[g, 0]] = -1
        else:
            del extra[base_code + stack[g, 1]]


@njit(cache=True)
def make_bundle(
    device,
    slot,
    key,
    held,
    made,
    size,
    first_made,
    made_ptr,
    made_parts,
    made_counts,
    part_start,
    part_count,
    part_key,
    is_bundle,
    slot_code,
    dev_slot,
    width,
    stack,
    scratch,
    extra,
):
    """The chunk ``device`` sends as bundle ``key`` (its slot ``slot``): made once from the parts it holds (or makes).

    Returns the chunk's number; -1 where the Python player must play the run (a part
    missing, a bundle made of itself); -2 when ``made_parts`` is full (the bundles
    finished so far stay made: call again with more room). ``made_counts`` is (bundles
    made, parts noted). A part the device makes but never holds, sends or is sent
    alone has no slot: what it made is kept in ``extra``, by code.
    """
    if made[slot] >= 0:
        return made[slot]
    if not is_bundle[key]:
        return -1
    # frames: slot (-1: none, kept in extra), key, next part, where its parts start in scratch
    depth = 1
    stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = slot, key, 0, 0
    made[slot] = -2
    top = 0
    lo, hi = dev_slot[device], dev_slot[device + 1]
    base_code = device * width
    while True:
        f = depth - 1
        k = stack[f, 1]
        j = stack[f, 2]
        if j < part_count[k]:
            stack[f, 2] = j + 1
            p = part_key[part_start[k] + j]
            s = _find(slot_code, lo, hi, base_code + p)
            if s >= 0:
                chunk = held[s]
                if chunk < 0:
                    chunk = made[s]
            else:
                chunk = extra.get(base_code + p, -1)
            if chunk >= 0:
                scratch[top] = chunk
                top += 1
                continue
            if chunk == -2 or not is_bundle[p]:
                _undo(stack, depth, made, extra, base_code)
                return -1
            stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3] = s, p, 0, top
            if s >= 0:
                made[s] = -2
            else:
                extra[base_code + p] = -2
            depth += 1
            continue
        base = stack[f, 3]
        n_made, n_parts = made_counts[0], made_counts[1]
        if n_parts + top - base > len(made_parts):
            _undo(stack, depth, made, extra, base_code)
            return -2
        chunk = first_made + n_made
        total = 0
        for q in range(base, top):
            made_parts[n_parts] = scratch[q]
            n_parts += 1
            total += size[scratch[q]]
        size[chunk] = total
        made_ptr[n_made + 1] = n_parts
        made_counts[0], made_counts[1] = n_made + 1, n_parts
        if stack[f, 0] >= 0:
            made[stack[f, 0]] = chunk
        else:
            extra[base_code + k] = chunk
        depth -= 1
        if depth == 0:
            return chunk
        top = base
        scratch[top] = chunk
        top += 1
