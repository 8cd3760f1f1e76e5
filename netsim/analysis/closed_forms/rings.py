"""Rings: unidirectional, bidirectional and the scaling book's half-way scheme.

Each takes ``n`` devices, ``s`` bytes per block, the per-hop latency ``alpha`` and the
one-way link bandwidth ``B``, and serves all_gather and reduce-scatter alike. netsim's
contention-free rings reproduce them exactly.
"""

from __future__ import annotations

from netsim.analysis.closed_forms.terms import AlphaBeta

__all__ = ["bidirectional_halfway", "bidirectional_ring", "ring"]


def ring(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """Unidirectional ring all_gather or reduce-scatter: (n−1)·α + (n−1)·s/B.

    n−1 steps; in each, every device sends one block of ``s`` bytes to its neighbour.
    Thakur, Rabenseifner & Gropp (2005) write it (p−1)α + ((p−1)/p)·nβ with n = p·s
    bytes in total; nccl-tests' busbw factor (n−1)/n comes from the same count.

    Examples
    --------
    >>> ab = ring(8, 262144, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 6)
    (7.0, 40.777956)
    """
    return AlphaBeta((n - 1) * alpha, (n - 1) * s / B)


def bidirectional_ring(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """Bidirectional ring all_gather or reduce-scatter: (n−1)·α + (n−1)·s/(2B).

    Each block is cut in two halves, one going each way round, so every link direction
    carries half a block per step (COST_MODELS.md, "Rings"; the scaling book's W_ici = 2B).

    Examples
    --------
    >>> ab = bidirectional_ring(8, 262144, 1e-6, 45e9)
    >>> round(ab.time_s * 1e6, 6)
    27.388978
    """
    return AlphaBeta((n - 1) * alpha, (n - 1) * s / (2 * B))


def bidirectional_halfway(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """The scaling book's scheme: ⌊n/2⌋·α + ⌊n/2⌋·s/B.

    Every block is sent both ways and each copy goes about half way round, so ⌊n/2⌋
    steps of a whole block (the book's ring all_gather on an axis with wraparound).

    Examples
    --------
    >>> ab = bidirectional_halfway(8, 262144, 1e-6, 45e9)
    >>> round(ab.time_s * 1e6, 6)
    27.301689
    """
    return AlphaBeta((n // 2) * alpha, (n // 2) * s / B)
