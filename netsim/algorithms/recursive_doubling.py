"""``recursive_doubling`` all_gather (Thakur, Rabenseifner & Gropp 2005).

For a group of p = 2^m members, in step k = 0..m-1 member i exchanges with its
partner i XOR 2^k everything it holds so far: the 2^k blocks of its aligned
subgroup. After m steps everyone holds all p blocks. Each step is one message
(see "One message per step" in :mod:`netsim.algorithms.schedule`).

Cost, with per-member block s bytes, one-way link bandwidth B = 1/beta and
per-hop latency alpha, when every partner is one hop away on a link of its own
(a hypercube: a ring of 2, a 2x2 or 2x2x2 torus):

    sum over k of (alpha + 2^k s/B) = lg p * alpha + (p - 1) s/B,

Thakur-Rabenseifner-Gropp's lg p * alpha + ((p-1)/p) n beta with n = p s the
gathered bytes. On a ring, partners 2^k apart are 2^k hops away and their
messages share links, so the time is longer: that difference is what the
simulation shows. Group sizes that are not powers of two are refused.
"""

from __future__ import annotations

from collections.abc import Iterator

from netsim.algorithms.registry import Algorithm, Move, register

__all__ = ["doubling_gather"]


def doubling_gather(n: int) -> Iterator[Move]:
    """Moves of a recursive-doubling all_gather in a group of ``n`` (a power of two).

    Examples
    --------
    >>> [m[:4] for m in doubling_gather(4) if m[1] == 0]
    [(0, 0, 1, 0), (1, 0, 2, 0), (1, 0, 2, 1)]
    """
    distance, step = 1, 0
    while distance < n:
        for i in range(n):
            partner = i ^ distance
            first = i & ~(distance - 1)
            direction = 1 if partner > i else -1
            for block in range(first, first + distance):
                yield step, i, partner, block, 0, direction
        distance, step = distance * 2, step + 1


register(
    "recursive_doubling",
    Algorithm(1, doubling_gather, None, "partners 1, 2, 4, ... apart swap all they hold", power_of_two=True, one_message_per_step=True),
)
