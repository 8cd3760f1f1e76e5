"""``hierarchical``: a collective over an outer (DCN) axis and inner (ICI) axes, as XLA lowers it across slices.

The group's **first** axis is the outer network's (over the DCN, one member per slice:
name the DCN axis first, as JAX's hybrid mesh puts the DCN major); the others are the
inner axes, inside a slice. An all-reduce (psum) runs

1. a reduce-scatter over the inner axes (all at once, as ``multiaxis``): each member
   ends with the inner group's sum of 1/M of the data (M members per slice);
2. an all-reduce of that 1/M over the outer axis: a bidirectional ring over the DCN
   (every member of a slice at once, so the slice's every NIC works);
3. an all-gather over the inner axes.

MaxText's docs name the same three steps ("Reduce Scatter grads on fast network -> All
Reduce across slow -> All Gather on faster network"), which "is generally achieved for
us automatically by the XLA compiler". An all_gather is the second half (outer gather,
then inner), a psum_scatter the first (inner reduce-scatter, then outer). Only 1/M of
the data crosses the DCN, against the whole of it twice for a flat ring that runs
through every device in mesh order.

In netsim's terms it is the axis-by-axis plan of :mod:`netsim.algorithms.torus` with
one part per inner axis (the inner axes in rotation, as ``multiaxis``) and the outer
axis always gathered first (reduced last). Chunks move on as soon as they arrive, so
a member's DCN step starts when its own inner reduce-scatter is done.
"""

from __future__ import annotations

from netsim.algorithms.registry import AxesAlgorithm, register
from netsim.algorithms.torus import _axis_by_axis, _axis_by_axis_array

__all__ = ["hierarchical_orders"]


def hierarchical_orders(k: int) -> list[tuple[int, ...]]:
    """The axes each part is gathered along, in order: the outer axis 0 first, then the inner ones rotated.

    A reduce-scatter runs each order backwards, so the outer axis comes last.

    Examples
    --------
    >>> hierarchical_orders(3)
    [(0, 1, 2), (0, 2, 1)]
    >>> hierarchical_orders(1)
    [(0,)]
    """
    inner = k - 1
    if inner == 0:
        return [(0,)]
    return [(0, *(1 + (i + s) % inner for s in range(inner))) for i in range(inner)]


register(
    "hierarchical",
    AxesAlgorithm(
        lambda k: 2 * max(k - 1, 1),
        _axis_by_axis("gather", hierarchical_orders),
        _axis_by_axis("reduce_scatter", hierarchical_orders),
        "the first axis over the DCN: inner reduce-scatter, outer all-reduce of 1/M, inner all-gather",
        gather_array=_axis_by_axis_array("gather", hierarchical_orders),
    ),
)
