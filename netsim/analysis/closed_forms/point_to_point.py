"""Point-to-point: one message over a route of several links, as ppermute sends each pair's."""

from __future__ import annotations

from netsim.analysis.closed_forms.terms import AlphaBeta

__all__ = ["point_to_point"]


def point_to_point(hops: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """One message over ``hops`` links with cut-through forwarding: hops·α + s/B.

    The scaling book prices a point-to-point transfer this way (e.g. a 4x4 corner-to-
    corner send as data time plus 6 µs). ppermute moves every pair at once, so the
    farthest pair sets the latency term when no two pairs share a link.

    Examples
    --------
    >>> ab = point_to_point(6, 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (6.0, 1.0)
    """
    return AlphaBeta(hops * alpha, s / B)
