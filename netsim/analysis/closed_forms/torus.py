"""All_gather and reduce-scatter over several torus axes: all at once, bundled, or one axis after the other.

The multi-axis forms reach the scaling book's V/(W_ici·k); the axes in turn take k times as long.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from netsim.analysis.closed_forms.terms import AlphaBeta

__all__ = ["dimension_ordered", "multiaxis", "multiaxis_bundled"]


def multiaxis(dims: Sequence[int], s: float, alpha: float, B: float) -> AlphaBeta:
    """All_gather / reduce-scatter over k torus axes at once: Σ(d_i−1)·α + (N−1)·s/(2kB).

    The payload is split in k parts that go round the axes in different orders, so all
    2k link directions of every device carry data at once: each device receives
    (N−1)·s bytes over 2k links. This is the scaling book's multi-axis bound
    V/(W_ici·k) (times (N−1)/N, the device's own block never travels), exact when the
    axes have equal sizes. Latency: a bidirectional ring on each axis in turn.

    Examples
    --------
    >>> ab = multiaxis((4, 4), 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (6.0, 3.75)
    """
    N, k = math.prod(dims), len(dims)
    return AlphaBeta(sum(d - 1 for d in dims) * alpha, (N - 1) * s / (2 * k * B) if k else 0.0)


def multiaxis_bundled(dims: Sequence[int], s: float, alpha: float, B: float) -> AlphaBeta:
    """All_gather over k torus axes at once, one message per ring step: the slowest part's stages.

    Part i goes along axes i, i+1, ... (wrapping round). At its stage along an axis
    of d devices it runs d−1 ring steps, each sending one bundle of P blocks' shares
    s/(2k) each way, P the product of the axes it gathered before; a stage starts
    when the last has ended. So part i takes Σ_stages (d−1)·(α + P·s/(2kB)) and the
    collective the slowest part. With equal axes this is Σ(d_i−1)·α + (N−1)·s/(2kB),
    the :func:`multiaxis` form, exactly: every step pays its α (``multiaxis``
    overlaps chunks and hides some). With unequal axes parts can meet on an axis,
    so it is an estimate there.

    Examples
    --------
    >>> ab = multiaxis_bundled((4, 4), 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (6.0, 3.75)
    """
    k = len(dims)
    if not k:
        return AlphaBeta(0.0, 0.0)
    slowest = None
    for i in range(k):
        gathered, latency, bandwidth = 1, 0.0, 0.0
        for stage in range(k):
            d = dims[(i + stage) % k]
            latency += (d - 1) * alpha
            bandwidth += (d - 1) * gathered * s / (2 * k * B)
            gathered *= d
        if slowest is None or latency + bandwidth > slowest.time_s:
            slowest = AlphaBeta(latency, bandwidth)
    return slowest


def dimension_ordered(dims: Sequence[int], s: float, alpha: float, B: float) -> AlphaBeta:
    """All_gather / reduce-scatter one torus axis after the other: Σ(d_i−1)·α + (N−1)·s/(2B).

    A bidirectional ring on each axis in turn, each phase gathering blocks d_i times
    bigger than the last, so the bandwidth terms add up to (N−1)·s/(2B): k times the
    multi-axis time, since only one axis's links work at a time.

    Examples
    --------
    >>> ab = dimension_ordered((4, 4), 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (6.0, 7.5)
    """
    N = math.prod(dims)
    return AlphaBeta(sum(d - 1 for d in dims) * alpha, (N - 1) * s / (2 * B))
