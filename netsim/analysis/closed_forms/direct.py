"""Direct algorithms on a ring or torus, every pair routed hop by hop: all_gather and all_to_all.

Their bandwidth terms count link loads the way the scaling book counts its all-to-all;
:func:`dimension_ordered_all_to_all` bounds netsim's axis-by-axis all_to_all from above.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from netsim.analysis.closed_forms.terms import AlphaBeta

__all__ = ["dimension_ordered_all_to_all", "direct_all_gather", "direct_all_to_all"]


def _ring_distance_sum(d: int) -> int:
    """Sum over x in 1..d-1 of the shorter way round a ring of d: ⌊d²/4⌋."""
    return d * d // 4


def direct_all_gather(dims: Sequence[int], s: float, alpha: float, B: float) -> AlphaBeta:
    """Direct all_gather on a ring or torus: every device sends its block to every other.

    Latency: the farthest member, Σ⌊d_i/2⌋ hops. Bandwidth: the busiest axis's links,
    counting routes the way the scaling book counts its all-to-all: on axis i every
    source's block crosses, summed over destinations, (N/d_i)·⌊d_i²/4⌋ links of that
    axis, and the axis has 2N link directions, so max_i N·⌊d_i²/4⌋/(2·d_i) · s/B. This
    assumes the load spreads evenly over both directions (a lower bound: shortest-path
    routing sends ties on even axes one way).

    Examples
    --------
    >>> ab = direct_all_gather((8,), 45000, 1e-6, 45e9)   # 16 block-hops per link direction / 2
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (4.0, 8.0)
    """
    N = math.prod(dims)
    load = max((N * _ring_distance_sum(d) / (2 * d) for d in dims), default=0.0)
    return AlphaBeta(sum(d // 2 for d in dims) * alpha, load * s / B)


def direct_all_to_all(dims: Sequence[int], s: float, alpha: float, B: float) -> AlphaBeta:
    """Direct all_to_all on a ring or torus, s = one device's whole input.

    Each device sends s/N bytes to every device. On axis i the bytes times hops add up
    to N·(N/d_i)·⌊d_i²/4⌋·s/N over 2N link directions: max_i ⌊d_i²/4⌋/(2·d_i) · s/B, which
    is the scaling book's V/(4·W_ici) on a ring and V·max(A,B,C)/(4·N·W_ici) on a torus
    (V = N·s, W_ici = 2B) for even sizes. Latency: the farthest pair, Σ⌊d_i/2⌋ hops.

    Examples
    --------
    >>> ab = direct_all_to_all((8,), 45000, 1e-6, 45e9)    # V/(4 W_ici) = 8 s / (8 B)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (4.0, 1.0)
    """
    load = max((_ring_distance_sum(d) / (2 * d) for d in dims), default=0.0)
    return AlphaBeta(sum(d // 2 for d in dims) * alpha, load * s / B)


def dimension_ordered_all_to_all(dims: Sequence[int], s: float, alpha: float, B: float) -> AlphaBeta:
    """Dimension-ordered all_to_all on a torus, axes in turn: an upper bound on netsim's schedule.

    Every phase moves the whole input along one axis (the data for other coordinates of
    that axis), so with a barrier between axes the costs add: Σ_i ⌊d_i²/4⌋/(2·d_i) · s/B
    and Σ⌊d_i/2⌋ hops. That is what this returns. The ``dimension_ordered`` schedule of
    :mod:`netsim.algorithms.torus` has no barrier: a chunk moves on along the next axis
    as soon as it reaches the intermediate member, so the phases overlap and the time is
    less. Its links carry exactly the loads of :func:`direct_all_to_all` (a block takes
    the same route, dimension order, only stopping at the corners), so the simulated time
    T lies between

        max_i ⌊d_i²/4⌋/(2·d_i) · s/B + α  <=  T  <=  this sum,

    the lower bound being the busiest link plus the last chunk's final hop. Where it
    lands between them depends on how the queues of the axes interleave, which has no
    closed form: without latency it takes 9 chunk times where the busiest link carries 8
    on 4x4, 36.5 for 32 on 4x4x4. On a 2x2 torus nothing
    queues and T = s/(4B) + 2α exactly (tests/test_all_to_all_torus.py).

    Examples
    --------
    >>> ab = dimension_ordered_all_to_all((4, 4), 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (4.0, 1.0)
    """
    load = sum(_ring_distance_sum(d) / (2 * d) for d in dims)
    return AlphaBeta(sum(d // 2 for d in dims) * alpha, load * s / B)
