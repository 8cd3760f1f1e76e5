"""A big torus animated one axis at a time: a ring per axis, its traffic added up over the other axes.

Beyond a few dozen devices a box per device is a tangle. Here each axis of the
topology is a ring of its positions (``X = 0 .. d-1``); a position stands for
every device with that coordinate (a plane of a 3D torus, a row of a 2D one).
Around the ring, the outer arrows are the links in the ``+`` direction between
neighbouring positions and the inner arrows the ``-`` direction, each standing
for all the links of that axis between those two planes: darker and thicker
when a larger share of them carried a message since the previous frame. Each
position fills, like a pie, with the share of its devices' incoming data that
has arrived. Everything is read from the engine's columns; a frame is a few
hundred artists whatever the size, so the pod animates in seconds per frame.

:func:`axis_frames` gives the frames as data (tested); :func:`animate_axes` draws them.
"""

from __future__ import annotations

import io
import math
import textwrap
from dataclasses import dataclass

import numpy as np

from netsim.engine import as_array, transfer_columns
from netsim.engine.columns import hop_arrays
from netsim.network.translations import coordinates
from netsim.result import Result
from netsim.teaching.animate import Animation, _clock, _matplotlib
from netsim.teaching.frames import frame_times
from netsim.teaching.timeline_axes import _busy_integral
from netsim.teaching.views import check_drawable

__all__ = ["AxisAnimation", "AxisFrame", "animate_axes", "animation", "axis_frames"]

_AXIS_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]


@dataclass(frozen=True)
class AxisFrame:
    """The picture at one simulated time, one ring per axis.

    Attributes
    ----------
    index : int
    time_s : float
    step : int or None
        The step (0-based) whose transfers were last to start by then; None at the end.
    n_steps : int
    caption : str
    busy : tuple of numpy.ndarray
        Per axis, shape ``(2, d)``: for direction ``-`` (row 0) and ``+`` (row 1) and the link
        leaving each position, the share of those links busy since the previous frame.
    filled : tuple of numpy.ndarray
        Per axis, shape ``(d,)``: the share of its devices' incoming bytes arrived by then.
    """

    index: int
    time_s: float
    step: int | None
    n_steps: int
    caption: str
    busy: tuple[np.ndarray, ...]
    filled: tuple[np.ndarray, ...]


def axis_frames(result: Result, n_frames: int = 40, leaf: int = 0) -> list[AxisFrame]:
    """The frames of the per-axis view, as data.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> frames = axis_frames(netsim.all_gather(np.zeros((64, 256), np.float32)), n_frames=3)
    >>> [round(float(f.filled[0].mean()), 1) for f in frames], frames[-1].caption
    ([0.0, 0.5, 1.0], 'done: all 64 devices hold all of their data')
    """
    if not 0 <= leaf < len(result.leaves):
        raise ValueError(f"leaf={leaf} is out of range: this result has {len(result.leaves)} leaf run(s)")
    topology = result.topology_obj
    if topology is None:
        raise ValueError("this result carries no topology (topology_obj is None); run it with netsim.all_gather/psum_scatter/psum/simulate")
    check_drawable(topology)
    run = result.leaves[leaf]
    playback = run.playback
    times = frame_times(playback.time, n_frames)
    edges = np.array(times)
    coords = coordinates(topology)
    _, link, start, end, link_ids = hop_arrays(playback.hops)
    link_axis = np.array([lk[2][0] for lk in link_ids], np.int64)
    link_plus = np.array([lk[2][1] > 0 for lk in link_ids], bool)
    link_from = np.array([coords[lk[0], lk[2][0]] for lk in link_ids], np.int64)
    per_group = {}
    for u, _, (axis, direction) in topology.links:
        key = (axis, direction > 0, int(coords[u, axis]))
        per_group[key] = per_group.get(key, 0) + 1
    columns = transfer_columns(run.schedule.transfers)
    dst = np.asarray(columns["dst"])
    size = as_array(playback.nbytes, np.int64).astype(float)
    arrived = as_array(playback.arrived_at, float)
    busy, filled = [], []
    for axis, d in enumerate(topology.dims):
        shares = np.zeros((2, d, n_frames))
        on_axis = link_axis[link] == axis if len(link) else np.zeros(0, bool)
        for plus in (0, 1):
            for p in range(d):
                mine = on_axis & (link_plus[link] == bool(plus)) & (link_from[link] == p)
                count = per_group.get((axis, bool(plus), p), 0)
                if count and mine.any():
                    spans = np.diff(edges)
                    shares[plus, p, 1:] = _busy_integral(start[mine], end[mine], edges) / np.where(spans > 0, spans, 1) / count
        busy.append(shares)
        place = coords[dst, axis]
        fill = np.zeros((d, n_frames))
        for p in range(d):
            mine = place == p
            total = size[mine].sum()
            if total:
                order = np.argsort(arrived[mine], kind="stable")
                done = np.concatenate([[0.0], np.cumsum(size[mine][order])])
                fill[p] = done[np.searchsorted(arrived[mine][order], edges, "right")] / total
        filled.append(fill)
    step_of = getattr(run.schedule.transfers, "step", None)
    step = step_of if isinstance(step_of, np.ndarray) else np.fromiter((t.step for t in run.schedule.transfers), np.int64, len(dst))
    sent = as_array(playback.sent_at, float)
    n_steps = int(step.max()) + 1 if len(step) else 0
    first_send = np.full(n_steps, np.inf)
    np.minimum.at(first_send, step, sent)
    frames = []
    for k, t in enumerate(times):
        last = k == n_frames - 1
        current = None if last or not n_steps else int(np.searchsorted(np.sort(first_send), t, "right") - 1)
        delivered = float(np.mean([f[:, k].mean() for f in filled])) if filled else 1.0
        if last:
            caption = f"done: all {topology.n_devices} devices hold all of their data"
        else:
            share = [b[:, :, k].mean() for b in busy]
            busiest = int(np.argmax(share)) if share else 0
            caption = f"{delivered:.0%} of the data delivered; busiest axis since the previous frame: axis {busiest} ({share[busiest]:.0%} of its links busy)"
            if k == 0:
                caption = f"start: every device holds only its own data; {len(dst):,} transfers to come over {n_steps} steps"
        step_now = current if current is None else max(current, 0)
        frames.append(AxisFrame(k, t, step_now, n_steps, caption, tuple(b[:, :, k] for b in busy), tuple(f[:, k] for f in filled)))
    return frames


def _point(d: int, p: float, radius: float) -> tuple[float, float]:
    angle = math.pi / 2 - 2 * math.pi * p / d
    return radius * math.cos(angle), radius * math.sin(angle)


class _AxisDrawing:
    """A figure with a ring per axis: one wedge per position and one arrow per position and direction."""

    def __init__(self, result: Result, frames: list[AxisFrame], dpi: int) -> None:
        _matplotlib()
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Circle, FancyArrowPatch, Wedge

        self.result, self.frames = result, frames
        topology = result.topology_obj
        dims = topology.dims
        width = max(9.0, 4.2 * len(dims))
        self.figure = Figure(figsize=(width, 6.0), dpi=dpi)
        FigureCanvasAgg(self.figure)
        self.wedges, self.arrows = [], []
        for axis, d in enumerate(dims):
            colour = _AXIS_COLOURS[axis % len(_AXIS_COLOURS)]
            ax = self.figure.add_axes((axis / len(dims) + 0.01, 0.2, 1 / len(dims) - 0.02, 0.62))
            ax.set_xlim(-1.5, 1.5)
            ax.set_ylim(-1.5, 1.5)
            ax.set_aspect("equal")
            ax.axis("off")
            wraps = topology.wraparound[axis]
            ax.set_title(f"axis {axis}: {d} positions, {topology.n_devices // d} devices each", fontsize=10)
            node = min(0.16, 0.5 * math.pi / d)
            wedges, arrows = [], np.empty((2, d), object)
            for p in range(d):
                x, y = _point(d, p, 1.0)
                ax.add_patch(Circle((x, y), node, facecolor="white", edgecolor="#555", linewidth=0.8, zorder=3))
                wedge = Wedge((x, y), node, 90, 90, facecolor=colour, edgecolor="none", zorder=4)
                ax.add_patch(wedge)
                wedges.append(wedge)
                if d <= 16 or p % 4 == 0:
                    lx, ly = _point(d, p, 1.4)
                    ax.text(lx, ly, str(p), ha="center", va="center", fontsize=8 if d <= 16 else 7, color="#333")
                for plus, radius, target in ((1, 1.0 + 1.6 * node, p + 1), (0, 1.0 - 1.6 * node, p - 1)):
                    if not wraps and not 0 <= target < d:
                        continue
                    arrow = FancyArrowPatch(
                        _point(d, p + (0.12 if plus else -0.12), radius),
                        _point(d, target - (0.12 if plus else -0.12), radius),
                        connectionstyle=f"arc3,rad={-0.12 if plus else 0.12}",
                        arrowstyle="-|>",
                        mutation_scale=7,
                        color="#d0d0d0",
                        linewidth=1.0,
                        zorder=2,
                    )
                    ax.add_patch(arrow)
                    arrows[plus, p] = arrow
            ax.text(0, 0, f"outer: + direction\ninner: − direction\n{topology.n_devices // d} links each", ha="center", va="center", fontsize=8, color="#555")
            self.wedges.append(wedges)
            self.arrows.append(arrows)
        title = textwrap.shorten(self._title(), width=int(width * 10.5), placeholder="...")
        self.head = self.figure.text(0.01, 0.985, title, ha="left", va="top", fontsize=11, weight="bold")
        self.clock = self.figure.text(0.01, 0.935, "", ha="left", va="top", fontsize=10.5, family="monospace")
        self.caption = self.figure.text(0.01, 0.16, "", ha="left", va="top", fontsize=10)
        legend = (
            "A ring per axis; a position stands for all devices with that coordinate. Pie: share of their incoming data arrived."
            " Arrows: the links between neighbouring positions, darker and thicker = a larger share of them busy since the previous frame."
        )
        self.figure.text(0.01, 0.02, "\n".join(textwrap.wrap(legend, width=int(width * 14))), ha="left", va="bottom", fontsize=8.5, color="#444")

    def _title(self) -> str:
        r = self.result
        return f"{r.scenario or r.collective}: {r.collective} with {r.algorithm} on {r.topology} ({r.n_devices} devices), one ring per axis"

    def draw(self, frame: AxisFrame) -> None:
        from matplotlib.colors import to_rgb

        for axis, (wedges, arrows) in enumerate(zip(self.wedges, self.arrows, strict=True)):
            colour = np.array(to_rgb(_AXIS_COLOURS[axis % len(_AXIS_COLOURS)]))
            for p, wedge in enumerate(wedges):
                wedge.set_theta1(90 - 360 * float(frame.filled[axis][p]))
            for (plus, p), arrow in np.ndenumerate(arrows):
                if arrow is None:
                    continue
                share = float(min(1.0, frame.busy[axis][plus, p]))
                arrow.set_color(tuple(0.82 * (1 - share) + colour * share) if share > 0 else "#d0d0d0")
                arrow.set_linewidth(1.0 + 3.5 * share)
        total = self.frames[-1].time_s
        step = "done" if frame.step is None else f"step {frame.step + 1}/{frame.n_steps}"
        self.clock.set_text(f"t = {_clock(frame.time_s, total)} of {_clock(total, total).strip()}   {step}")
        self.caption.set_text(frame.caption)

    def png(self, frame: AxisFrame) -> bytes:
        self.draw(frame)
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        return buffer.getvalue()


class AxisAnimation(Animation):
    """:class:`~netsim.teaching.animate.Animation` of the per-axis view: the same ways to show and save it."""

    def _drawing(self) -> _AxisDrawing:
        return _AxisDrawing(self.result, self.frames, self.dpi)


def animate_axes(result: Result, frames: int = 40, leaf: int = 0, fps: float = 4.0, dpi: int = 90) -> AxisAnimation:
    """The per-axis animation of a run (see the module's description).

    Raises
    ------
    ValueError
        If an axis is longer than :data:`netsim.teaching.views.MAX_POSITIONS` (the message names the views that work).
    """
    return AxisAnimation(result, axis_frames(result, frames, leaf), fps, dpi)


def animation(result: Result, frames: int = 40, leaf: int = 0, fps: float = 4.0) -> Animation:
    """The legible animation of a run at its size: device by device, or one ring per axis beyond a few dozen devices.

    Raises
    ------
    ValueError
        If an axis is too long to draw (the message names the views that work).
    """
    from netsim.teaching.animate import animate
    from netsim.teaching.views import per_axis

    if result.topology_obj is not None and per_axis(result.topology_obj):
        return animate_axes(result, frames=frames, leaf=leaf, fps=fps)
    return animate(result, frames=frames, leaf=leaf, fps=fps)
