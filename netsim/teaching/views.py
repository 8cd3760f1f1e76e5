"""Which drawing of a run is legible at its size: device by device, one ring per axis, or neither.

What an animation costs is its frames times what each frame draws
(:func:`drawn_elements`, plus :data:`FRAME_COST` for the figure itself); beyond
:data:`MAX_DRAWN` it is refused, saying how many frames fit (:func:`check_frames`).

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

from typing import TYPE_CHECKING

from netsim.network.topology import Topology

if TYPE_CHECKING:
    from netsim.algorithms.schedule import Schedule

__all__ = ["DETAILED_DEVICES", "FRAME_COST", "MAX_DRAWN", "MAX_POSITIONS", "check_drawable", "check_frames", "drawn_elements", "frames_allowed", "per_axis"]

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


MAX_DRAWN = 200_000
"""Most work an animation may take: frames x (drawn elements + :data:`FRAME_COST`), about a minute
of drawing and encoding (a 2-core machine drew a frame in 0.4 ms per element plus 0.4 s, under load)."""

FRAME_COST = 1_000
"""A frame's fixed cost (its figure, text and encoding), in drawn elements."""


def drawn_elements(topology: Topology, schedule: Schedule | None = None) -> int:
    """What each frame of a run's animation draws.

    Device by device: a slot per block and piece held, plus every link and device; per
    axis: a wedge and two arrows per position.

    ``schedule`` is needed for the device-by-device view (its blocks and pieces).

    Examples
    --------
    >>> from netsim.network.topology import ring, torus
    >>> drawn_elements(torus((4, 4, 4)))
    36
    >>> from netsim.algorithms.schedule import build_schedule
    >>> drawn_elements(ring(4), build_schedule("gather", [[0, 1, 2, 3]], "ring"))  # 4 devices x 4 blocks, 8 links, 4 devices
    28
    """
    if per_axis(topology):
        return sum(3 * d for d in topology.dims)
    if schedule is None:
        raise ValueError("drawn_elements: the device-by-device view needs the run's schedule")
    devices = {d for group in schedule.groups for d in group}
    blocks = 1 + max((t.key[0] for t in schedule.transfers), default=len(next(iter(schedule.groups), ())) - 1)
    return len(devices) * max(blocks, 0) * schedule.pieces + len(topology.links) + topology.n_devices


def frames_allowed(elements: int) -> int:
    """The most frames an animation drawing ``elements`` per frame may have (:data:`MAX_DRAWN`).

    Examples
    --------
    >>> frames_allowed(36), frames_allowed(4_256)
    (193, 38)
    """
    return MAX_DRAWN // (FRAME_COST + elements)


def check_frames(frames: int, elements: int, name: str, scenario: str = "SCENARIO") -> None:
    """ValueError with the numbers and the fix when ``frames`` frames of ``elements`` each are more than :data:`MAX_DRAWN`.

    Examples
    --------
    >>> check_frames(300, 4_256, "torus4x8")
    Traceback (most recent call last):
    ...
    ValueError: --frames 300: an animation of torus4x8 draws 4,256 elements a frame (+1,000 for the figure): 300 x 5,256 = 1,576,800, ...
    """
    work = frames * (FRAME_COST + elements)
    if work > MAX_DRAWN:
        raise ValueError(
            f"--frames {frames}: an animation of {name} draws {elements:,} elements a frame (+{FRAME_COST:,} for the figure):"
            f" {frames} x {FRAME_COST + elements:,} = {work:,}, over the {MAX_DRAWN:,} netsim draws (about a minute);"
            f" use --frames {frames_allowed(elements)} or fewer, or see it with `netsim timeline {scenario} -o timeline.png`"
        )
