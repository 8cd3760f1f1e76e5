"""``recursive_halving`` reduce-scatter (Thakur, Rabenseifner & Gropp 2005).

For a group of p = 2^m members, in step k = 0..m-1 member i exchanges with its
partner i XOR p/2^(k+1): it sends the partial sums of the half of its current
range of blocks that the partner's side owns, and adds what the partner sends
into the half it keeps. The range halves at every step, ending at member i's own
block, summed over the whole group. Each step is one message (see "One message
per step" in :mod:`netsim.algorithms.schedule`).

Cost, with n = p s the bytes of one member's input (s per block), one-way link
bandwidth B = 1/beta and per-hop latency alpha, when every partner is one hop
away on a link of its own (a ring of 2, a 2x2 or 2x2x2 torus):

    sum over k of (alpha + (p / 2^(k+1)) s/B) = lg p * alpha + ((p-1)/p) n/B,

Thakur-Rabenseifner-Gropp's lg p * alpha + ((p-1)/p) n (beta + gamma) with the
reduction's arithmetic free (gamma = 0). On a ring the first partners are p/2
hops away and their messages share links. Group sizes that are not powers of
two are refused.
"""

from __future__ import annotations

from collections.abc import Iterator

from netsim.algorithms.registry import Algorithm, Move, register

__all__ = ["halving_reduce_scatter"]


def halving_reduce_scatter(n: int) -> Iterator[Move]:
    """Moves of a recursive-halving reduce-scatter in a group of ``n`` (a power of two).

    Examples
    --------
    >>> [m[:4] for m in halving_reduce_scatter(4) if m[1] == 0]
    [(0, 0, 2, 2), (0, 0, 2, 3), (1, 0, 1, 1)]
    """
    distance, step = n // 2, 0
    while distance >= 1:
        for i in range(n):
            partner = i ^ distance
            first = partner & ~(distance - 1)
            direction = 1 if partner > i else -1
            for block in range(first, first + distance):
                yield step, i, partner, block, 0, direction
        distance, step = distance // 2, step + 1


register(
    "recursive_halving",
    Algorithm(1, None, halving_reduce_scatter, "partners p/2, p/4, ... apart swap half of what they sum", power_of_two=True, one_message_per_step=True),
)
