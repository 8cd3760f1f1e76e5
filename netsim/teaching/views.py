"""Which drawing of a run is legible at its size: device by device, one ring per axis, or neither.

Up to :data:`DETAILED_DEVICES` devices on a ring or a 2D grid, the animation draws
every device with its buffer (:mod:`netsim.teaching.animate`). Beyond that, or on a 3D
torus, it draws one ring per axis with the traffic added up over the other axes
(:mod:`netsim.teaching.animate_axes`), as long as no axis is longer than
:data:`MAX_POSITIONS`; longer ones are refused with the views that work.

Examples
--------
>>> from netsim.network.topology import ring, torus
>>> per_axis(ring(8)), per_axis(torus((4, 4, 4))), per_axis(torus((16, 16)))
(False, True, True)
>>> try:
...     check_drawable(ring(1024))
... except ValueError as error:
...     print(str(error)[:80])
cannot animate ring1024: an axis of 1024 devices is too many to draw legibly (at
"""

from __future__ import annotations

from netsim.network.topology import Topology

__all__ = ["DETAILED_DEVICES", "MAX_POSITIONS", "check_drawable", "per_axis"]

DETAILED_DEVICES = 32
"""Up to this many devices on a ring or a 2D grid, every device is drawn with its buffer."""

MAX_POSITIONS = 64
"""Most positions along one axis that a ring can show legibly."""


def per_axis(topology: Topology) -> bool:
    """Whether a run on ``topology`` is animated one ring per axis (rather than device by device)."""
    return len(topology.dims) >= 3 or topology.n_devices > DETAILED_DEVICES


def check_drawable(topology: Topology, scenario: str = "SCENARIO") -> None:
    """ValueError naming the views that work (for ``scenario``) when an axis is too long to draw as a ring."""
    longest = max(topology.dims)
    if getattr(topology, "n_slices", 1) > 1:  # (a DCN's NICs and switch have no place on the grid's drawing)
        raise ValueError(
            f"cannot animate {topology.name}: slices joined by the DCN are not drawn;"
            f" see it with `netsim timeline {scenario} -o timeline.png` (ICI links by axis and the DCN's links over time)"
            f" or `netsim explain {scenario}` (steps, with those over the DCN named so)"
        )
    if per_axis(topology) and longest > MAX_POSITIONS:
        raise ValueError(
            f"cannot animate {topology.name}: an axis of {longest} devices is too many to draw legibly (at most {MAX_POSITIONS});"
            f" see it with `netsim timeline {scenario} -o timeline.png` (links by axis and direction over time)"
            f" or `netsim explain {scenario}` (steps, axes and representative devices)"
        )
