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


register("ring", Algorithm(1, lambda n: _ring_gather(n, 1, 0), lambda n: _ring_reduce_scatter(n, 1, 0), "one direction, one block per step"))
register("bidirectional_ring", Algorithm(2, _both_ways(_ring_gather), _both_ways(_ring_reduce_scatter), "half of each block each way round"))
register("bidirectional_halfway", Algorithm(1, _halfway_gather, _halfway_reduce_scatter, "every block both ways, each copy half way round"))
