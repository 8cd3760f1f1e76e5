"""Buffers with live ranges packed into one heap, as XLA's buffer assignment packs temporaries.

XLA gives a program's temporaries one allocation and places each buffer at an offset in it
with a heap simulator: ``GlobalDecreasingSizeBestFitHeap`` (openxla/xla,
``xla/service/heap_simulator/heap_simulator.cc``) takes the buffers largest first (or
longest-lived first: it keeps the better of the two) and puts each in the smallest free
gap, among the buffers whose live ranges overlap its own, that holds it, else on top of them. Two buffers that are never live at once may share bytes, but
gaps left between buffers of different sizes make the heap larger than the most bytes ever
live at once: that is the compiler's ``temp_size_in_bytes``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["best_fit_heap"]


def best_fit_heap(sizes: list[int], starts: list[int], ends: list[int]) -> int:
    """The size of the heap that holds every buffer ``k`` (``sizes[k]`` bytes, live from ``starts[k]`` to ``ends[k]``, inclusive).

    The smaller of two packings, as XLA's ``ChooseBestHeapAlgorithm`` keeps: buffers taken
    largest first (the longest-lived first among equals), or longest-lived first (the
    largest first among equals).

    Examples
    --------
    Two buffers live at once take both their sizes; one that dies first leaves its place to a later one:

    >>> best_fit_heap([4, 4], [0, 1], [1, 2]), best_fit_heap([4, 4], [0, 2], [1, 3])
    (8, 4)

    Buffers never live at once share bytes (the 5 and the 3 are live together, beside neither the 8 nor the 2):

    >>> best_fit_heap([8, 5, 3, 2], [0, 1, 1, 2], [0, 1, 1, 2])
    8
    """
    spatial = sorted(range(len(sizes)), key=lambda k: (-sizes[k], starts[k] - ends[k], k))
    temporal = sorted(range(len(sizes)), key=lambda k: (starts[k] - ends[k], -sizes[k], k))
    return min(_packed(order, sizes, starts, ends) for order in (spatial, temporal))


def _packed(order: list[int], sizes: list[int], starts: list[int], ends: list[int]) -> int:
    """The heap's size when the buffers are placed in ``order``, each in the smallest gap that holds it."""
    offsets = np.zeros(len(sizes), np.int64)
    placed = np.zeros(len(sizes), bool)
    size_of, start_of, end_of = np.asarray(sizes, np.int64), np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    top = 0
    for k in order:
        if sizes[k] <= 0:
            continue
        near = placed & (start_of <= ends[k]) & (end_of >= starts[k])
        taken = sorted(zip(offsets[near].tolist(), (offsets[near] + size_of[near]).tolist(), strict=True))
        best, best_gap, reached = -1, None, 0
        for low, high in taken:
            gap = low - reached
            if gap >= sizes[k] and (best_gap is None or gap < best_gap):
                best, best_gap = reached, gap
            reached = max(reached, high)
        offsets[k] = best if best >= 0 else reached
        placed[k] = True
        top = max(top, int(offsets[k]) + sizes[k])
    return top
