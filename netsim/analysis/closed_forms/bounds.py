"""Lower bounds that hold for any schedule: a chain of dependent transfers, and the bytes a member must take in.

Two facts of the engine's timing (:mod:`netsim.engine.processes`) make them bounds:
a link sends one message at a time at its bandwidth B, and a message's tail reaches
the far end α after it leaves, so a message of m bytes over h links arrives no
earlier than h·α + m/B after it starts.

* **Chain**: when transfer j+1 of a block can only start once transfer j of the same
  piece has arrived, the j transfers add up, each at least α + m/B. A ring's n−1
  steps, the rounds of recursive doubling, the stages of a multi-axis gather are
  such chains; on a layout where every step is one link of its own, the chain is
  the time.
* **Bytes in**: a member that must receive R bytes over L links into it takes at
  least R/(L·B) (each link sends at B), plus α for the last byte to arrive. An
  all_gather member receives (n−1) blocks, a reduce-scatter's (n−1) partial sums of
  its block, an all_to_all's (n−1)/n of an input; an all-reduce member needs, for
  each of the n blocks, at least one block's worth from the others.

Either is a lower bound; so is their maximum, which is what a run reports when its
algorithm has no exact form on its layout.
"""

from __future__ import annotations

from netsim.analysis.closed_forms.geometry import Geometry
from netsim.analysis.closed_forms.terms import AlphaBeta, canonical_collective
from netsim.semantics.ops import lookup

__all__ = ["bytes_in", "bytes_in_bound"]


def bytes_in(collective: str, n: int, bytes_per_device: float) -> float:
    """Bytes every member of a group of n must receive, whatever the algorithm (the op registry's ``received``).

    Examples
    --------
    >>> bytes_in("all_gather", 4, 100.0), bytes_in("psum_scatter", 4, 100.0), bytes_in("psum", 4, 100.0)
    (300.0, 75.0, 100.0)
    """
    known = lookup(collective)
    if n < 2 or known is None:
        return 0.0
    return known.received(n, bytes_per_device)


def bytes_in_bound(collective: str, geometry: Geometry, bytes_per_device: float, alpha: float, B: float) -> AlphaBeta | None:
    """α + R/(L·B): R the bytes a member must receive, L the fewest links into a member.

    None when it says nothing (no links in, or nothing to receive).

    Examples
    --------
    >>> from netsim.analysis.closed_forms.geometry import group_geometry
    >>> ab = bytes_in_bound("all_gather", group_geometry((4, 4), (True, True), range(16)), 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (1.0, 3.75)
    """
    received = bytes_in(collective, geometry.n, bytes_per_device)
    if canonical_collective(collective) == "ppermute" and geometry.hops:
        received = float(bytes_per_device)  # a receiver of a pair that moves takes in one payload
    if geometry.in_links < 1 or received <= 0:
        return None
    return AlphaBeta(alpha, received / (geometry.in_links * B))
