"""Draw the frames of a run (:mod:`netsim.teaching.frames`) with matplotlib: GIF, MP4 or an HTML player.

Devices are boxes at their place on the topology (:mod:`netsim.teaching.layout_2d`); each
box holds one slot per block (split into pieces when blocks travel in pieces),
filled in the colour of the device the block belongs to, darker as more shares
are summed into it. Every link direction is an arrow; a link in use turns dark,
and chunks on the move are squares gliding along it at their simulated pace
(a hollow square marks a chunk waiting in a queue). A clock, the step and a caption
say what is happening.

matplotlib is an optional dependency (the ``teaching`` extra); it is imported
only when something is drawn.

Examples
--------
>>> import numpy as np, netsim
>>> movie = animate(netsim.all_gather(np.arange(4), algorithm="ring"), frames=3)
>>> len(movie.frames), movie.frames[-1].caption.startswith("done: 3 steps")
(3, True)
"""

from __future__ import annotations

import io
import math
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from netsim.destinations import staged_file
from netsim.network.units import format_seconds
from netsim.result import Result
from netsim.teaching.frames import Frame, build_frames
from netsim.teaching.layout_2d import Layout, layout
from netsim.teaching.player import player_html
from netsim.teaching.saving import _matplotlib
from netsim.teaching.views import DETAILED_DEVICES, per_axis

__all__ = ["FORMATS", "Animation", "animate", "device_colours"]

FORMATS = (".gif", ".mp4", ".html")
"""File types :meth:`Animation.save` writes."""

_EMPTY = (1.0, 1.0, 1.0)
_LINK_IDLE = "#c4c4c4"
_LINK_BUSY = "#303030"


def device_colours(n: int) -> list[tuple[float, float, float]]:
    """``n`` RGB colours (0..1), one per member of a group: :data:`netsim.teaching.palette.PALETTE`, the browser player's too.

    Examples
    --------
    >>> len(device_colours(4)), device_colours(4)[0] != device_colours(4)[1]
    (4, True)
    """
    from netsim.teaching.palette import device_rgb

    return [tuple(c / 255 for c in device_rgb(k)) for k in range(n)]


def _tint(rgb: tuple[float, float, float], shade: float) -> tuple[float, float, float]:
    """The colour at ``shade`` (0..1) between a pale tint and the full colour."""
    strength = 0.18 + 0.82 * shade
    return tuple(1 - strength * (1 - c) for c in rgb)


class _Drawing:
    """A figure with one artist per box, slot, link and label, updated frame by frame."""

    def __init__(self, result: Result, frames: list[Frame], dpi: int) -> None:
        _matplotlib()
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle
        from matplotlib.path import Path as MplPath
        from matplotlib.patheffects import withStroke

        self.result, self.frames = result, frames
        topology = result.topology_obj
        first = frames[0].buffers
        n_blocks = max((len({s.block for s in slots}) for slots in first), default=0)
        pieces = max((len({s.piece for s in slots}) for slots in first), default=1)
        rows = 1 if n_blocks <= 4 else 2 if n_blocks <= 8 else math.ceil(math.sqrt(n_blocks))
        cols = max(1, math.ceil(n_blocks / rows))
        cell = 0.16
        label_h = 0.15
        w, h = max(0.33, cols * cell / 2 + 0.05), (label_h + rows * cell + 0.06) / 2
        self.layout: Layout = layout(topology, (w, h))
        groups = result.leaves[0].schedule.groups
        self.colours = device_colours(len(groups[0]) if groups else 1)  # a ppermute of perm: [] has no pair
        self.reducing = any(t.reduce for t in result.leaves[0].schedule.transfers)
        x0, x1, y0, y1 = self.layout.extent
        pad = 0.15
        panel_h = 0.45 if self.layout.panels else 0.0
        width_units, height_units = x1 - x0 + 2 * pad, y1 - y0 + 2 * pad + panel_h
        scale = min(1.9, 13.0 / width_units, 7.0 / height_units)
        fig_w = max(8.0, width_units * scale)
        plot_h = height_units * scale
        fig_w0 = max(8.0, width_units * scale)
        lines = max((len(textwrap.wrap(f.caption, width=int(fig_w0 * 12))) for f in frames), default=1)  # the longest caption fits
        top_in, bottom_in = 0.7, max(1.25, 0.62 + 0.21 * lines)
        fig_h = plot_h + top_in + bottom_in
        self.figure = Figure(figsize=(fig_w, fig_h), dpi=dpi)
        FigureCanvasAgg(self.figure)
        ax = self.figure.add_axes((0.0, bottom_in / fig_h, 1.0, plot_h / fig_h))
        ax.set_xlim(x0 - pad, x1 + pad)
        ax.set_ylim(y0 - pad, y1 + pad + panel_h)
        ax.set_aspect("equal", adjustable="box", anchor="C")
        ax.axis("off")
        self.ax = ax
        points_per_unit = scale * 72

        # links: drawn first, so boxes and chunks sit on top of them
        self.links = {}
        for link, path in self.layout.paths.items():
            patch = FancyArrowPatch(
                path=MplPath([path.start, path.control, path.end], [MplPath.MOVETO, MplPath.CURVE3, MplPath.CURVE3]),
                arrowstyle="-|>",
                mutation_scale=max(6.0, min(12.0, 0.12 * points_per_unit)),
                linewidth=1.0,
                color=_LINK_IDLE,
                zorder=1,
            )
            ax.add_patch(patch)
            self.links[link] = patch
        for label, left, right in self.layout.panels:
            ax.text((left + right) / 2, y1 + 0.25, label, ha="center", va="bottom", fontsize=9, color="#444")

        # devices: a box of slots each, with the device number above the slots
        inner_w = cols * cell
        font = min(9.0, 0.45 * cell * points_per_unit)
        self.slots: list[list[Any]] = []
        self.labels: list[dict[int, Any]] = []
        for device, (x, y) in sorted(self.layout.positions.items()):
            ax.add_patch(
                FancyBboxPatch((x - w, y - h), 2 * w, 2 * h, boxstyle="round,pad=0,rounding_size=0.04", facecolor="#f4f4f4", edgecolor="#555", zorder=3)
            )
            ax.text(x, y + h - 0.02, f"device {device}", ha="center", va="top", fontsize=min(9.5, 0.1 * points_per_unit), zorder=4)
            rects, labels = [], {}
            left, top = x - inner_w / 2, y + h - label_h
            for slot in frames[0].buffers[device]:
                r, c = divmod(slot.block, cols)
                bx, by = left + c * cell, top - (r + 1) * cell
                rect = Rectangle((bx + 0.006 + slot.piece * (cell - 0.012) / pieces, by + 0.006), (cell - 0.012) / pieces, cell - 0.012, zorder=4)
                rect.set(facecolor=_EMPTY, edgecolor="#bbb", linewidth=0.4)
                ax.add_patch(rect)
                rects.append(rect)
                if slot.piece == 0:  # one frame and one label per block, over its pieces
                    ax.add_patch(Rectangle((bx + 0.006, by + 0.006), cell - 0.012, cell - 0.012, fill=False, edgecolor="#777", linewidth=0.7, zorder=5))
                    if font >= 5.5:
                        outline = [withStroke(linewidth=2.2, foreground="white")]
                        labels[slot.block] = ax.text(bx + cell / 2, by + cell / 2, "", ha="center", va="center", fontsize=font, zorder=6, path_effects=outline)
            self.slots.append(rects)
            self.labels.append(labels)

        size = max(4.0, min(13.0, 0.12 * points_per_unit))
        self.chunks = ax.scatter([], [], s=size**2, marker="s", zorder=6, linewidths=1.2)
        title = textwrap.shorten(self._title(), width=int(fig_w * 11), placeholder="...")
        self.head = self.figure.text(0.01, 1 - 0.1 / fig_h, title, ha="left", va="top", fontsize=11, weight="bold")
        self.clock = self.figure.text(0.01, 1 - 0.4 / fig_h, "", ha="left", va="top", fontsize=10.5, family="monospace")
        self.caption = self.figure.text(0.01, (bottom_in - 0.1) / fig_h, "", ha="left", va="top", fontsize=10.5, linespacing=1.3)
        legend = "\n".join(textwrap.wrap(self._legend(), width=int(fig_w * 15)))
        self.figure.text(0.01, 0.08 / fig_h, legend, ha="left", va="bottom", fontsize=8.5, color="#444")
        self._colour_key(fig_w, fig_h)

    def _colour_key(self, fig_w: float, fig_h: float) -> None:
        """Swatches of the slot colours, numbered (the device, or the member of its group), at the top right: up to 32."""
        n = len(self.colours)
        if n < 2 or n > 32:
            return
        from matplotlib.patches import Rectangle

        per_row, size = 16, 0.19  # inches
        first = fig_w - 0.15 - min(n, per_row) * size
        who = "device" if len(self.result.groups) == 1 else "member"
        top = fig_h - 0.34  # on the clock's line, below the title
        self.figure.text((first - 0.08) / fig_w, (top - 0.45 * size) / fig_h, f"colour = {who}:", ha="right", va="center", fontsize=8, color="#444")
        for k, colour in enumerate(self.colours):
            row, col = divmod(k, per_row)
            x, y = first + col * size, top - (row + 1) * size  # the square's lower left, in inches
            box = Rectangle((x / fig_w, y / fig_h), 0.9 * size / fig_w, 0.9 * size / fig_h, transform=self.figure.transFigure, facecolor=colour)
            self.figure.add_artist(box)
            shade = "white" if sum(colour) < 1.6 else "black"
            self.figure.text((x + 0.45 * size) / fig_w, (y + 0.45 * size) / fig_h, str(k), ha="center", va="center", fontsize=6.5, color=shade)

    def _title(self) -> str:
        r = self.result
        what = r.scenario or r.collective
        return f"{what}: {r.collective} with {r.algorithm} on {r.topology} ({r.n_devices} devices)"

    def _legend(self) -> str:
        if self.reducing:
            who = "device" if len(self.result.groups) == 1 else "member of its group"
            return (
                f"slot colour = the {who} a block's sum goes to; paler = fewer shares added so far (number: shares summed)."
                " Squares on links: chunks in flight (hollow: waiting in a queue)."
            )
        who = "the device a block came from" if len(self.result.groups) == 1 else "which member of its group a block came from; number: that device"
        return f"slot colour = {who}. Squares on links: chunks in flight (hollow: waiting in a queue)."

    def draw(self, frame: Frame) -> None:
        for device, slots in enumerate(frame.buffers):
            for slot, rect in zip(slots, self.slots[device], strict=True):
                rect.set_facecolor(_EMPTY if slot.colour is None else _tint(self.colours[slot.colour], slot.shade))
            for block, text in self.labels[device].items():
                text.set_text(self._label([s for s in slots if s.block == block]))
        for link, patch in self.links.items():
            busy = link in frame.busy_links
            patch.set_color(_LINK_BUSY if busy else _LINK_IDLE)
            patch.set_linewidth(1.8 if busy else 1.0)
        if frame.flights:
            self.chunks.set_offsets([self.layout.paths[f.link].point(f.progress) for f in frame.flights])
            # a chunk waiting in a queue is hollow (white inside, its colour as a thick edge): no device colour means "waiting"
            self.chunks.set_facecolors(["white" if f.waiting else _tint(self.colours[f.colour], f.shade) for f in frame.flights])
            self.chunks.set_edgecolors([_tint(self.colours[f.colour], f.shade) if f.waiting else "black" for f in frame.flights])
            self.chunks.set_linewidths([2.4 if f.waiting else 1.2 for f in frame.flights])
        else:
            self.chunks.set_offsets(np.empty((0, 2)))
        total = self.frames[-1].time_s
        step = "done" if frame.step is None else f"step {frame.step + 1}/{frame.n_steps}"
        self.clock.set_text(f"t = {_clock(frame.time_s, total)} of {_clock(total, total).strip()}   {step}")
        self.caption.set_text("\n".join(textwrap.wrap(frame.caption, width=int(self.figure.get_figwidth() * 12))))

    def _label(self, pieces: list) -> str:
        """A block's number: the device it came from (gathers) or how many shares it sums (reductions)."""
        held = [p for p in pieces if p.sources]
        if not held:
            return ""
        if self.reducing:
            counts = [str(len(p.sources)) for p in pieces]
            return counts[0] if len(set(counts)) == 1 else "|".join(counts)
        origins = {d for p in held for d in p.sources}
        return str(min(origins)) if len(origins) == 1 else "+"

    def png(self, frame: Frame) -> bytes:
        self.draw(frame)
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        return buffer.getvalue()


def _clock(seconds: float, total: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if total >= scale or unit == "ns":
            return f"{seconds / scale:7.2f} {unit}"
    raise AssertionError("unreachable")


class Animation:
    """A run's animation: its frames (plain data) and the ways to show them.

    In Jupyter it displays itself as an HTML player; :meth:`save` writes a GIF,
    an MP4 (with ffmpeg) or an HTML page.

    Attributes
    ----------
    frames : list of Frame
        The drawing state of every frame (see :mod:`netsim.teaching.frames`).
    """

    def __init__(self, result: Result, frames: list[Frame], fps: float = 4.0, dpi: int = 90) -> None:
        if not fps > 0:
            raise ValueError(f"fps must be positive, got {fps!r}")
        self.result, self.frames, self.fps, self.dpi = result, frames, float(fps), int(dpi)

    def _drawing(self) -> _Drawing:
        return _Drawing(self.result, self.frames, self.dpi)

    def to_html(self, standalone: bool = True) -> str:
        """The animation as an HTML player (a whole page, or a fragment to embed)."""
        drawing = self._drawing()
        images = [drawing.png(frame) for frame in self.frames]
        total = self.frames[-1].time_s
        times = [f"t = {format_seconds(f.time_s) if f.time_s else '0'} of {format_seconds(total)}" for f in self.frames]
        title = f"netsim: {drawing._title()}"
        return player_html(images, times, [f.caption for f in self.frames], [f.step for f in self.frames], title, self.fps, standalone)

    def _repr_html_(self) -> str:
        return self.to_html(standalone=False)

    def save(self, path: str | Path, progress: Callable[[int, int], Any] | None = None) -> Path:
        """Write the animation to ``path``: ``.gif``, ``.mp4`` (needs ffmpeg) or ``.html``.

        ``progress(done, total)``, if given, is called as each frame is drawn.

        Raises
        ------
        ValueError
            If the suffix is not one of :data:`FORMATS`, or ``.mp4`` is asked for without ffmpeg.
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in FORMATS:
            raise ValueError(f"cannot write {str(path)!r}: the file name must end in {', '.join(FORMATS)}")
        if suffix == ".mp4" and shutil.which("ffmpeg") is None:
            raise ValueError(f"cannot write {str(path)!r}: .mp4 needs ffmpeg on the PATH (apt-get install ffmpeg); .gif and .html need nothing more")
        if suffix == ".html":  # the browser player, drawing the run's events itself (netsim.teaching.page)
            from netsim.teaching.page import standalone_page

            text = standalone_page(self.result)
            _write_atomically(path, text.encode("utf-8"))
            return path
        _matplotlib()
        from matplotlib.animation import FFMpegWriter, FuncAnimation
        from PIL import Image

        drawing = self._drawing()

        def frame(k: int) -> None:
            drawing.draw(self.frames[k])
            if progress is not None:
                progress(k + 1, len(self.frames))

        if suffix == ".gif":  # one palette for every frame: a device's colour never changes

            def rgb(f: Frame) -> Any:
                return Image.open(io.BytesIO(drawing.png(f))).convert("RGB")

            palette = _gif_palette([rgb(f) for f in self.frames[:: max(1, len(self.frames) // 8)]], getattr(drawing, "colours", []))
            images = [rgb(f).quantize(palette=palette, dither=Image.Dither.NONE) for f in _counted(self.frames, progress)]  # a byte a pixel
            with staged_file(path) as staged:
                images[0].save(staged, format="GIF", save_all=True, append_images=images[1:], duration=round(1000 / self.fps), loop=0, optimize=False)
            return path
        movie = FuncAnimation(drawing.figure, frame, frames=len(self.frames), blit=False, repeat=False)
        writer = FFMpegWriter(fps=self.fps)
        with staged_file(path) as staged:  # whole or not at all; a symbolic link is followed
            movie.save(str(staged), writer=writer, dpi=self.dpi)
        return path


def _counted(frames: list[Any], progress: Callable[[int, int], Any] | None) -> Any:
    for k, frame in enumerate(frames):
        yield frame
        if progress is not None:
            progress(k + 1, len(frames))


def _gif_palette(samples: list[Any], colours: list[tuple[float, float, float]]) -> Any:
    """One palette for every frame of a GIF: the device colours exactly, then the most common others of some frames.

    A palette per frame (what a GIF writer does by default) can move a colour by a few
    units from one frame to the next; quantised to this one, every pixel of a device's
    colour maps to the same entry in every frame.
    """
    from PIL import Image

    exact = [tuple(round(c * 255) for c in rgb) for rgb in colours[:64]]
    montage = Image.new("RGB", (samples[0].width, samples[0].height * len(samples)))
    for k, image in enumerate(samples):
        montage.paste(image, (0, k * samples[0].height))
    common = montage.quantize(256 - len(exact), method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).getpalette()[: 3 * (256 - len(exact))]
    palette = Image.new("P", (1, 1))
    palette.putpalette([v for rgb in exact for v in rgb] + common + [0] * (768 - 3 * len(exact) - len(common)))
    return palette


def _write_atomically(path: Path, data: bytes) -> None:
    with staged_file(path) as staged:
        staged.write_bytes(data)


def animate(result: Result, frames: int = 40, leaf: int = 0, fps: float = 4.0, dpi: int = 90) -> Animation:
    """The animation of a simulated collective.

    Parameters
    ----------
    result : Result
        From :func:`netsim.simulate`, :func:`netsim.all_gather`, ...
    frames : int, default 40
        Number of frames, at evenly spaced simulated times from start to end.
    leaf : int, default 0
        Which array of a pytree input to show.
    fps : float, default 4
        Frames per second of the GIF/MP4 and of the HTML player at 1x.
    dpi : int, default 90
        Resolution of the images.

    Returns
    -------
    Animation

    Raises
    ------
    ValueError
        If ``frames`` is below 2, ``leaf`` is out of range, or the result has no topology.
    """
    if result.topology_obj is not None and per_axis(result.topology_obj):
        raise ValueError(
            f"{result.topology} has too many devices to draw one by one (more than {DETAILED_DEVICES}, or three axes):"
            " netsim.animate(result) draws one ring per axis (netsim.teaching.animate_axes.animate_axes)"
        )
    return Animation(result, build_frames(result, frames, leaf), fps, dpi)
