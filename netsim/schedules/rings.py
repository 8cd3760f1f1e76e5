"""Ring algorithms: the group's members, in group order, form a ring.

``ring``
    One direction, n-1 steps; at step t member i forwards block (i - t) to i+1.
    Time on a contention-free ring: (n-1)(alpha + s/B).
``bidirectional_ring`` (the default)
    Each block is cut in two halves, one going each way round: n-1 steps of half
    a block on each link direction, (n-1)(alpha + s/(2B)).
``bidirectional_halfway`` (the scaling book's scheme)
    Every block is sent both ways and each copy goes about half way round:
    floor(n/2) steps of a whole block, floor(n/2)(alpha + s/B).

Reduce-scatters run the same rings with partial sums: block k travels round and
ends, fully summed, at member k.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from netsim.schedules import Algorithm, Move, register


def _ring_gather(n: int, direction: int, piece: int) -> Iterator[Move]:
    for t in range(n - 1):
        for i in range(n):
            yield t, i, (i + direction) % n, (i - direction * t) % n, piece, direction


def _ring_reduce_scatter(n: int, direction: int, piece: int) -> Iterator[Move]:
    for t in range(n - 1):
        for i in range(n):
            yield t, i, (i + direction) % n, (i - direction * (t + 1)) % n, piece, direction


def _halfway_gather(n: int) -> Iterator[Move]:
    # Block j goes forward to j+1 .. j+floor(n/2) and backward to j-1 .. j-(ceil(n/2)-1).
    forward, backward = n // 2, (n + 1) // 2 - 1
    for t in range(forward):
        for i in range(n):
            yield t, i, (i + 1) % n, (i - t) % n, 0, 1
    for t in range(backward):
        for i in range(n):
            yield t, i, (i - 1) % n, (i + t) % n, 0, -1


def _halfway_reduce_scatter(n: int) -> Iterator[Move]:
    # Block k is summed along two chains that meet at member k: one coming forward
    # from k-floor(n/2), one coming backward from k+ceil(n/2)-1.
    forward, backward = n // 2, (n + 1) // 2 - 1
    for t in range(forward):
        for i in range(n):
            yield t, i, (i + 1) % n, (i + forward - t) % n, 0, 1
    for t in range(backward):
        for i in range(n):
            yield t, i, (i - 1) % n, (i - backward + t) % n, 0, -1


def _both_ways(one_way: Callable[[int, int, int], Iterator[Move]]) -> Callable[[int], Iterator[Move]]:
    def moves(n: int) -> Iterator[Move]:
        yield from one_way(n, 1, 0)
        yield from one_way(n, -1, 1)

    return moves


# The same moves as arrays [moves, 6], in the same order, for large groups.


def _ring_array(n: int, steps: int, direction: int, piece: int, block_shift: int) -> np.ndarray:
    """Moves of ``steps`` ring steps: at step t member i sends block (i - direction (t + shift)) to i + direction."""
    t, i = np.divmod(np.arange(steps * n, dtype=np.int64), n)
    moves = np.empty((steps * n, 6), np.int64)
    moves[:, 0], moves[:, 1], moves[:, 2] = t, i, (i + direction) % n
    moves[:, 3], moves[:, 4], moves[:, 5] = (i - direction * (t + block_shift)) % n, piece, direction
    return moves


def _ring_gather_array(n: int, direction: int = 1, piece: int = 0) -> np.ndarray:
    return _ring_array(n, n - 1, direction, piece, 0)


def _ring_reduce_scatter_array(n: int, direction: int = 1, piece: int = 0) -> np.ndarray:
    return _ring_array(n, n - 1, direction, piece, 1)


def _both_ways_array(one_way: Callable[[int, int, int], np.ndarray]) -> Callable[[int], np.ndarray]:
    return lambda n: np.concatenate([one_way(n, 1, 0), one_way(n, -1, 1)])


def _halfway_gather_array(n: int) -> np.ndarray:
    forward, backward = n // 2, (n + 1) // 2 - 1
    return np.concatenate([_ring_array(n, forward, 1, 0, 0), _ring_array(n, backward, -1, 0, 0)])


def _halfway_reduce_scatter_array(n: int) -> np.ndarray:
    forward, backward = n // 2, (n + 1) // 2 - 1
    return np.concatenate([_ring_array(n, forward, 1, 0, -forward), _ring_array(n, backward, -1, 0, -backward)])


register(
    "ring",
    Algorithm(
        1,
        lambda n: _ring_gather(n, 1, 0),
        lambda n: _ring_reduce_scatter(n, 1, 0),
        "one direction, one block per step",
        _ring_gather_array,
        _ring_reduce_scatter_array,
    ),
)
register(
    "bidirectional_ring",
    Algorithm(
        2,
        _both_ways(_ring_gather),
        _both_ways(_ring_reduce_scatter),
        "half of each block each way round",
        _both_ways_array(_ring_gather_array),
        _both_ways_array(_ring_reduce_scatter_array),
    ),
)
register(
    "bidirectional_halfway",
    Algorithm(
        1,
        _halfway_gather,
        _halfway_reduce_scatter,
        "every block both ways, each copy half way round",
        _halfway_gather_array,
        _halfway_reduce_scatter_array,
    ),
)
