"""What an animation shows at each moment, as plain data (no drawing).

A :class:`Frame` is the state of the picture at one simulated time: every
device's buffer as slots (which block, which piece, whose data, how dark), every
chunk on the move (on which link, how far along), the links in use, the clock,
the step and a caption. :func:`build_frames` samples a run at evenly spaced
simulated times, so a slow link looks slow. The renderer (:mod:`netsim.teaching.animate`)
only draws frames, and tests read them instead of pixels.

Colours are indices, not RGB: block k of a group takes colour k, the colour of
the group's member k, the device it belongs to (in an all-gather the device it
came from, in a reduce-scatter the one that ends up with its sum; with one group
of all devices in order, colour k is device k). ``shade`` says how much of it is
there: 1 for a gathered block, k/n for a partial sum of k of the n shares.
"""

from __future__ import annotations

from dataclasses import dataclass

from netsim.engine import Hop
from netsim.network.topology import LinkId
from netsim.network.units import format_seconds
from netsim.result import Result
from netsim.teaching.replay import Replay
from netsim.teaching.steps import step_captions

__all__ = ["Flight", "Frame", "Slot", "build_frames", "frame_times"]


@dataclass(frozen=True)
class Slot:
    """One piece of one block in a device's buffer.

    ``sources`` (the devices whose data it holds) is empty while nothing is
    there; ``colour`` (the block's position in its group) is then None.
    """

    block: int
    piece: int
    sources: frozenset[int]
    colour: int | None
    shade: float


@dataclass(frozen=True)
class Flight:
    """A chunk on its way: where it is drawn.

    Attributes
    ----------
    transfer : int
        Index into the schedule's transfers.
    link : LinkId
        The link it is on (for a multi-hop route, the latest one it has entered).
    progress : float
        0 at the sending end of ``link``, 1 at the receiving end.
    waiting : bool
        True while it waits in a queue (for a link that is busy, or at a device).
    """

    transfer: int
    src: int
    dst: int
    block: int
    piece: int
    sources: frozenset[int]
    colour: int
    shade: float
    link: LinkId
    progress: float
    waiting: bool


@dataclass(frozen=True)
class Frame:
    """The picture at one simulated time.

    Attributes
    ----------
    index : int
    time_s : float
    step : int or None
        The earliest step with a chunk still on the move (0-based); None once all have arrived.
    n_steps : int
    caption : str
    buffers : tuple of tuple of Slot
        Per device, its slots, block by block and piece by piece.
    flights : tuple of Flight
    busy_links : frozenset
        Links carrying bits at this time (sending or propagating).
    """

    index: int
    time_s: float
    step: int | None
    n_steps: int
    caption: str
    buffers: tuple[tuple[Slot, ...], ...]
    flights: tuple[Flight, ...]
    busy_links: frozenset[LinkId]


def frame_times(total_s: float, n_frames: int) -> list[float]:
    """``n_frames`` evenly spaced times from 0 to ``total_s`` (both included).

    Examples
    --------
    >>> frame_times(3.0, 4)
    [0.0, 1.0, 2.0, 3.0]
    """
    if isinstance(n_frames, bool) or not isinstance(n_frames, int) or n_frames < 2:
        raise ValueError(f"n_frames must be an integer >= 2 (the first frame is the start, the last the end), got {n_frames!r}")
    return [total_s * k / (n_frames - 1) if k < n_frames - 1 else total_s for k in range(n_frames)]


class _Colours:
    def __init__(self, replay: Replay) -> None:
        schedule = replay.schedule
        self.grouped = {d for g in schedule.groups for d in g}
        self.n = len(schedule.groups[0]) if schedule.groups else 1  # a ppermute of perm: [] has no pair
        self.reducing = any(t.reduce for t in schedule.transfers)

    def of(self, block: int, sources: frozenset[int]) -> tuple[int | None, float]:
        if not sources:
            return None, 0.0
        return block % self.n, (len(sources) / self.n if self.reducing else 1.0)


def _flight(hops: list[Hop], latency: dict[LinkId, float], time_s: float) -> tuple[LinkId, float, bool]:
    """Link, progress and waiting flag of a message at ``time_s`` from its hops."""
    current = None
    for hop in hops:
        if hop.start <= time_s:
            current = hop
    if current is None:
        return hops[0].link, 0.0, True
    end = current.end + latency[current.link]
    if time_s >= end:
        return current.link, 1.0, True
    return current.link, (time_s - current.start) / (end - current.start), False


def build_frames(result: Result, n_frames: int = 40, leaf: int = 0) -> list[Frame]:
    """The animation of a run as ``n_frames`` states at evenly spaced simulated times.

    Parameters
    ----------
    result : Result
    n_frames : int, default 40
        Number of frames, at least 2: frame 0 is time 0, the last is the end of the run.
    leaf : int, default 0
        Which array of a pytree input to show.

    Returns
    -------
    list of Frame

    Raises
    ------
    ValueError
        If ``n_frames`` is below 2, ``leaf`` is out of range, or the result carries no topology.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> frames = build_frames(netsim.all_gather(np.arange(4), algorithm="ring"), n_frames=5)
    >>> [slot.colour for slot in frames[0].buffers[2]], [slot.colour for slot in frames[-1].buffers[2]]
    ([None, None, 2, None], [0, 1, 2, 3])
    >>> frames[1].caption
    'step 1/3: every device sends its own block to its right neighbour'
    """
    captions = step_captions(result, leaf)  # checks leaf and topology
    times = frame_times(result.leaves[leaf].playback.time, n_frames)
    run = result.leaves[leaf]
    schedule, playback, topology = run.schedule, run.playback, result.topology_obj
    replay = Replay(schedule, playback)
    colours = _Colours(replay)
    latency = {link: topology.link(link)["latency_s"] for link in topology.links}
    hops: list[list[Hop]] = [[] for _ in schedule.transfers]
    for hop in playback.hops:
        hops[hop.transfer].append(hop)
    blocks = range(1 + max([k[0] for h in replay.start for k in h] + [t.key[0] for t in schedule.transfers], default=-1))
    frames = []
    for index, time_s in enumerate(times):
        held = replay.at(time_s)
        buffers = []
        for device, chunks in enumerate(held):
            slots = []
            if device in colours.grouped:
                for block in blocks:
                    for piece in range(schedule.pieces):
                        sources = chunks.get((block, piece), frozenset())
                        slots.append(Slot(block, piece, sources, *colours.of(block, sources)))
            buffers.append(tuple(slots))
        flights = []
        for i, t in enumerate(schedule.transfers):
            if not playback.sent_at[i] <= time_s < playback.arrived_at[i] or not hops[i]:
                continue
            link, progress, waiting = _flight(hops[i], latency, time_s)
            sources = replay.carried[i]
            colour, shade = colours.of(t.key[0], sources)
            flights.append(Flight(i, t.src, t.dst, t.key[0], t.key[1], sources, colour, shade, link, progress, waiting))
        busy = frozenset(h.link for h in playback.hops if h.start <= time_s < h.end + latency[h.link])
        moving = [t.step for i, t in enumerate(schedule.transfers) if playback.sent_at[i] <= time_s < playback.arrived_at[i]]
        waiting = [t.step for i, t in enumerate(schedule.transfers) if playback.sent_at[i] > time_s]
        step = min(moving or waiting) if moving or waiting else None
        if step is not None:
            caption = captions[step]
        else:
            caption = f"done: {schedule.n_steps} step{'s' if schedule.n_steps != 1 else ''} in {format_seconds(playback.time)}"
        frames.append(Frame(index, time_s, step, schedule.n_steps, caption, tuple(buffers), tuple(flights), busy))
    return frames
