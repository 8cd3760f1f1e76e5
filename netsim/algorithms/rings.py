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

from netsim.algorithms.registry import Algorithm, Move, register


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


def _ring_array(n: int, steps: int, direction: int, piece: int, block_shift: int, out: np.ndarray | None = None) -> np.ndarray:
    """Moves of ``steps`` ring steps: at step t member i sends block (i - direction (t + shift)) to i + direction.

    Written column by column into ``out`` (int32, ``[steps * n, 6]``) if given; a big ring
    has millions of moves, so no temporary bigger than one column is made.
    """
    moves = np.empty((steps * n, 6), np.int32) if out is None else out
    grid = moves.reshape(steps, n, 6)
    t, i = np.arange(steps, dtype=np.int64)[:, None], np.arange(n, dtype=np.int64)
    grid[:, :, 0] = t
    grid[:, :, 1] = i
    grid[:, :, 2] = (i + direction) % n
    grid[:, :, 3] = (i - direction * (t + block_shift)) % n
    grid[:, :, 4] = piece
    grid[:, :, 5] = direction
    return moves


def _ring_gather_array(n: int, direction: int = 1, piece: int = 0, out: np.ndarray | None = None) -> np.ndarray:
    return _ring_array(n, n - 1, direction, piece, 0, out)


def _ring_reduce_scatter_array(n: int, direction: int = 1, piece: int = 0, out: np.ndarray | None = None) -> np.ndarray:
    return _ring_array(n, n - 1, direction, piece, 1, out)


def _both_ways_array(one_way: Callable[..., np.ndarray]) -> Callable[[int], np.ndarray]:
    def moves(n: int) -> np.ndarray:
        out = np.empty((2 * max(n - 1, 0) * n, 6), np.int32)
        half = len(out) // 2
        one_way(n, 1, 0, out[:half])
        one_way(n, -1, 1, out[half:])
        return out

    return moves


def _halfway_gather_array(n: int) -> np.ndarray:
    forward, backward = n // 2, (n + 1) // 2 - 1
    out = np.empty(((forward + backward) * n, 6), np.int32)
    _ring_array(n, forward, 1, 0, 0, out[: forward * n])
    _ring_array(n, backward, -1, 0, 0, out[forward * n :])
    return out


def _halfway_reduce_scatter_array(n: int) -> np.ndarray:
    forward, backward = n // 2, (n + 1) // 2 - 1
    out = np.empty(((forward + backward) * n, 6), np.int32)
    _ring_array(n, forward, 1, 0, -forward, out[: forward * n])
    _ring_array(n, backward, -1, 0, -backward, out[forward * n :])
    return out


register(
    "ring",
    Algorithm(
        1,
        lambda n: _ring_gather(n, 1, 0),
        lambda n: _ring_reduce_scatter(n, 1, 0),
        "one direction, one block per step",
        gather_array=_ring_gather_array,
        reduce_scatter_array=_ring_reduce_scatter_array,
        each_piece_once=("gather", "reduce_scatter", "all_reduce"),
    ),
)
register(
    "bidirectional_ring",
    Algorithm(
        2,
        _both_ways(_ring_gather),
        _both_ways(_ring_reduce_scatter),
        "half of each block each way round",
        gather_array=_both_ways_array(_ring_gather_array),
        reduce_scatter_array=_both_ways_array(_ring_reduce_scatter_array),
        each_piece_once=("gather", "reduce_scatter", "all_reduce"),
    ),
)
register(
    "bidirectional_halfway",
    Algorithm(
        1,
        _halfway_gather,
        _halfway_reduce_scatter,
        "every block both ways, each copy half way round",
        gather_array=_halfway_gather_array,
        reduce_scatter_array=_halfway_reduce_scatter_array,
    ),
)
