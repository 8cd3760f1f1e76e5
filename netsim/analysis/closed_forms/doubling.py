"""Recursive doubling and halving, and Rabenseifner's all-reduce (Thakur, Rabenseifner & Gropp 2005).

The forms assume every pair of partners is one hop apart; on a ring or torus partners
2^k apart share links, and the simulated time shows it.
"""

from __future__ import annotations

import math

from netsim.analysis.closed_forms.terms import AlphaBeta

__all__ = ["rabenseifner_all_reduce", "recursive_doubling_all_gather", "recursive_doubling_all_reduce", "recursive_halving_reduce_scatter"]


def _lg(n: int) -> int:
    """Rounds of a doubling algorithm: ceil(log2 n)."""
    return max(0, math.ceil(math.log2(n))) if n > 1 else 0


def recursive_doubling_all_gather(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """Recursive-doubling all_gather: ⌈lg n⌉·α + (n−1)·s/B.

    Thakur, Rabenseifner & Gropp 2005, Sec. 4.1: ⌈lg p⌉α + ((p−1)/p)·nβ with n = p·s.
    It assumes every pair of partners is one hop apart; on a ring or torus partners
    2^k apart share links, and the simulated time shows it.

    Examples
    --------
    >>> ab = recursive_doubling_all_gather(8, 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (3.0, 7.0)
    """
    return AlphaBeta(_lg(n) * alpha, (n - 1) * s / B)


def recursive_halving_reduce_scatter(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """Recursive-halving reduce-scatter: ⌈lg n⌉·α + (n−1)·s/B, s = one block (input/n).

    Thakur, Rabenseifner & Gropp 2005, Sec. 4.2: lg p·α + ((p−1)/p)·n·(β+γ), γ = 0.

    Examples
    --------
    >>> ab = recursive_halving_reduce_scatter(4, 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (2.0, 3.0)
    """
    return AlphaBeta(_lg(n) * alpha, (n - 1) * s / B)


def recursive_doubling_all_reduce(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """Recursive-doubling all-reduce: ⌈lg n⌉·α + ⌈lg n⌉·n·s/B (the whole input each round).

    Thakur, Rabenseifner & Gropp 2005, Sec. 4.4: lg p·α + n·lg p·(β+γ), with the input
    n = p·s bytes and γ = 0.

    Examples
    --------
    >>> ab = recursive_doubling_all_reduce(4, 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (2.0, 8.0)
    """
    return AlphaBeta(_lg(n) * alpha, _lg(n) * n * s / B)


def rabenseifner_all_reduce(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """Rabenseifner's all-reduce (recursive-halving reduce-scatter, recursive-doubling
    all_gather): 2⌈lg n⌉·α + 2(n−1)·s/B.

    Thakur, Rabenseifner & Gropp 2005, Sec. 4.4: 2 lg p·α + 2((p−1)/p)·nβ + ((p−1)/p)·nγ
    with n = p·s and γ = 0.

    Examples
    --------
    >>> ab = rabenseifner_all_reduce(4, 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (4.0, 6.0)
    """
    return AlphaBeta(2 * _lg(n) * alpha, 2 * (n - 1) * s / B)
