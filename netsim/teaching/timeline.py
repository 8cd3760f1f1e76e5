"""A Gantt chart of a run: one row per link, one bar per message crossing it (and, for programs, a row per compute unit).

Each bar spans the time a message holds the link (its bytes going onto the
wire); a thin tail after it is the hop latency, while the message's end is still
propagating. Bars take the colour of the device whose data they carry, the same
colour for the same device on every chart (two groups' blocks never share one). At a glance: links that carry
back-to-back bars are the bottleneck, pale rows are idle links, and bars of one
message staggered on consecutive links show pipelining. Dashed lines mark when
each step's last transfer arrived. A program's chart is coloured by op instead: the
messages of each collective op in a colour of their own, each compute op's steps
hatched in theirs on a row per device below the links, named on the bar where the
name fits, and one legend entry per op, in those colours.

:func:`timeline_rows` gives the chart's content as data (tested); :func:`save_timeline`
draws it with matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netsim.network.topology import LinkId
from netsim.result import Result
from netsim.teaching.saving import save_figure

__all__ = ["OP_PALETTE", "Bar", "compute_rows", "op_colours", "save_timeline", "timeline_rows", "transfer_ops"]


@dataclass(frozen=True)
class Bar:
    """One message on one link.

    Attributes
    ----------
    transfer : int
    start_s, end_s : float
        When it held the link.
    latency_s : float
        The link's latency: the tail reaches the far end at ``end_s + latency_s``.
    block, piece : int
    colour : int
        The device whose data the message carries (its colour index).
    step : int
    """

    transfer: int
    start_s: float
    end_s: float
    latency_s: float
    block: int
    piece: int
    colour: int
    step: int


def timeline_rows(result: Result, leaf: int = 0, idle: bool = True) -> list[tuple[LinkId, list[Bar]]]:
    """The chart's rows: every link (or only busy ones) with its bars, in the topology's link order.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> rows = timeline_rows(netsim.all_gather(np.arange(3), algorithm="ring"))
    >>> len(rows), [len(bars) for _, bars in rows]  # 3 devices: 6 link directions, 3 of them used twice
    (6, [2, 0, 2, 0, 2, 0])
    """
    if not 0 <= leaf < len(result.leaves):
        raise ValueError(f"leaf={leaf} is out of range: this result has {len(result.leaves)} leaf run(s)")
    if result.topology_obj is None:
        raise ValueError("this result carries no topology (topology_obj is None); run it with netsim.all_gather/psum_scatter/psum/simulate")
    run, topology = result.leaves[leaf], result.topology_obj
    rows: dict[LinkId, list[Bar]] = {link: [] for link in topology.links}
    owners = _owners(run.schedule)
    for hop in run.playback.hops:
        t = run.schedule.transfers[hop.transfer]
        bar = Bar(hop.transfer, hop.start, hop.end, topology.link(hop.link)["latency_s"], t.key[0], t.key[1], owners[hop.transfer], t.step)
        rows[hop.link].append(bar)
    aliases = getattr(run.schedule.transfers, "aliases", None)
    if aliases is not None:  # played on representatives: each link's bars are those of the link that stands for it
        rows = aliases.every_link(rows, topology.links)
    return [(link, bars) for link, bars in rows.items() if idle or bars]


def _owners(schedule: Any) -> list[int]:
    """For every transfer, the device whose data it carries.

    Read from the data's way: a transfer that forwards a chunk which arrived at its source
    (a dependency bringing the same key there) carries that transfer's data; any other
    carries its source's own. A reduction's block is coloured by the member its sum
    belongs to (the group's member at the block's index), as the animation does.
    """
    owners: list[int] = []
    for t in schedule.transfers:
        if t.reduce or schedule.pattern == "reduce_scatter":
            group = next((g for g in schedule.groups if t.src in g), ())
            owners.append(group[t.key[0]] if t.key[0] < len(group) else t.src)
            continue
        came = next((d for d in t.deps if d < len(owners) and schedule.transfers[d].dst == t.src and schedule.transfers[d].key == t.key), None)
        owners.append(owners[came] if came is not None else t.src)
    return owners


def compute_rows(result: Result, leaf: int = 0) -> list[tuple[int, list[tuple[float, float, str]]]]:
    """The chart's compute rows: each device that computed, with its steps ``(start_s, end_s, op name)``.

    Examples
    --------
    >>> import netsim
    >>> rows = compute_rows(netsim.run_program("scenarios/programs/allgather_matmul.yaml"))
    >>> len(rows), rows[0][1][0][2]
    (16, 'mm')
    """
    run = result.leaves[leaf]
    rows: dict[int, list[tuple[float, float, str]]] = {}
    for j, step in enumerate(run.schedule.computes):
        if step.join:  # no work, no time: not drawn
            continue
        rows.setdefault(step.device, []).append((float(run.playback.computes.started_at[j]), float(run.playback.computes.ended_at[j]), step.name))
    return sorted(rows.items())


def save_timeline(result: Result, path: str | Path, leaf: int = 0, max_rows: int = 64, dpi: int = 110) -> Path:
    """Draw the Gantt chart of a run to an image file (``.png``, ``.svg``, ``.pdf``).

    Parameters
    ----------
    result : Result
    path : str or Path
    leaf : int, default 0
    max_rows : int, default 64
        With more links than this, the links are grouped by axis and direction, a row
        each (:func:`netsim.teaching.timeline_axes.save_axis_timeline`).
    dpi : int, default 110

    Returns
    -------
    Path

    Raises
    ------
    ValueError
        If the suffix is not an image type, ``leaf`` is out of range, or there is no topology.
    """
    from netsim.teaching.animate import _matplotlib, device_colours

    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ValueError(f"cannot write {str(path)!r}: the file name must end in .png, .svg or .pdf")
    if result.topology_obj is not None and len(result.topology_obj.links) > max_rows:
        from netsim.teaching.timeline_axes import save_axis_timeline

        return save_axis_timeline(result, path, leaf, dpi)
    rows = timeline_rows(result, leaf)
    computing = compute_rows(result, leaf)
    dropped = 0
    if len(rows) + len(computing) > max_rows:
        busy = [(link, bars) for link, bars in rows if bars]
        dropped = len(rows) - len(busy)
        rows = busy
    _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    topology, run = result.topology_obj, result.leaves[leaf]
    by_op = op_colours(result)  # a program: a colour per op; a collective: per device whose data it is
    colours = device_colours(topology.n_devices)
    op_of = transfer_ops(result) if by_op else []
    total = run.playback.time
    scale, unit = _unit(total)
    height = 2.1 + 0.24 * max(len(rows) + len(computing), 1)
    figure = Figure(figsize=(11, height), dpi=dpi)
    FigureCanvasAgg(figure)
    ax = figure.add_axes((0.11, 1.4 / height, 0.86, 1 - 2.15 / height))
    for row, (_, bars) in enumerate(rows):
        if not bars:
            ax.axhspan(row - 0.5, row + 0.5, color="#f3f3f3", zorder=0)
        for bar in bars:
            colour = by_op[op_of[bar.transfer]] if by_op else colours[bar.colour]
            ax.barh(row, (bar.end_s - bar.start_s) / scale, left=bar.start_s / scale, height=0.72, color=colour, edgecolor="black", linewidth=0.4, zorder=2)
            ax.plot([bar.end_s / scale, (bar.end_s + bar.latency_s) / scale], [row, row], color=colour, linewidth=1.2, alpha=0.7, zorder=1)
    points_per_unit = 0.86 * 11 * 72 / (total / scale * 1.02 if total else 1)  # the x axis's points per time unit
    for k, (_, steps) in enumerate(computing):  # compute rows below the links, hatched in their op's colour
        row = len(rows) + k
        for start, end, name in steps:
            colour = by_op.get(name, "0.7")
            ax.barh(row, (end - start) / scale, left=start / scale, height=0.72, color=colour, hatch="//", edgecolor="black", linewidth=0.4, zorder=2)
            if (end - start) / scale * points_per_unit > 6.5 * len(name) + 6:  # the name fits on the bar
                centre = (start + end) / 2 / scale
                ax.text(centre, row, name, ha="center", va="center", fontsize=7, zorder=3, bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.6})
    finished = {}
    for i, t in enumerate(run.schedule.transfers):
        finished[t.step] = max(finished.get(t.step, 0.0), run.playback.arrived_at[i])
    ends = sorted(finished.items())
    for _, at in ends:
        ax.axvline(at / scale, color="#888", linestyle="--", linewidth=0.7, zorder=0)
    if len(ends) <= 24:
        top = ax.secondary_xaxis("top")
        top.set_xticks([at / scale for _, at in ends], [f"{step + 1}" for step, _ in ends], fontsize=7)
        top.set_xlabel("end of step", fontsize=8, loc="left")
    labels = [topology.link_name(link) for link, _ in rows] + [f"compute {device}" for device, _ in computing]
    ax.set_yticks(range(len(labels)), labels, fontsize=8 if len(labels) <= 32 else 6)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlim(0, total / scale * 1.02 if total else 1)
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_ylabel("link (from->to)" + (", then compute units (hatched)" if computing else ""))
    ax.grid(axis="x", color="#e4e4e4", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    what = result.scenario or result.collective
    idle_note = f"; {dropped} idle links not shown" if dropped else "; grey rows: idle links"
    figure.text(
        0.01,
        1 - 0.12 / height,
        f"{what}: {result.collective} with {result.algorithm} on {result.topology}: one bar per message on a link{idle_note}",
        ha="left",
        va="top",
        fontsize=10,
        weight="bold",
    )
    if by_op:
        moving, working = set(op_of), {name for _, steps in computing for _, _, name in steps}
        handles = [
            Patch(facecolor=c, edgecolor="black", linewidth=0.4, hatch=hatch, label=name + (f" ({what})" if name in moving and name in working else ""))
            for name, c in by_op.items()
            for hatch, what, shown in ((None, "messages", moving), ("//", "compute", working))
            if name in shown
        ]
        legend_title = "colour: the op (solid: its messages on the links; hatched: its compute steps)"
    carried = sorted({bar.colour for _, bars in rows for bar in bars})
    if not by_op:
        handles = [Patch(facecolor=colours[k], edgecolor="black", linewidth=0.4, label=f"device {k}") for k in carried[:16]]
        if len(carried) > 16:
            handles.append(Patch(facecolor="white", edgecolor="white", label=f"... {len(carried) - 16} more devices"))
        legend_title = "bar colour: the device whose data the message carries"
        if not handles:  # a ppermute that moves nothing (perm: [], or pairs (d, d)): a valid run of 0 s
            ax.text(0.5, 0.5, "no message crossed a link: nothing to move (0 s)", transform=ax.transAxes, ha="center", va="center", fontsize=10)
            return save_figure(figure, path)
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.55 / (height - 2.15)),
        ncol=min(len(handles), 8),
        fontsize=7,
        frameon=False,
        title=legend_title,
        title_fontsize=7,
    )
    return save_figure(figure, path)


OP_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#7f7f7f")
"""The ops' colours, in the program's order (tab10, grey last)."""


def op_colours(result: Result) -> dict[str, str]:
    """A program's ops in order, each with its colour on the chart (empty for a collective's run).

    Examples
    --------
    >>> import netsim
    >>> op_colours(netsim.run_program("scenarios/programs/allgather_matmul.yaml"))
    {'gather': '#1f77b4', 'mm': '#ff7f0e'}
    """
    run = getattr(result, "program", None)
    if run is None:
        return {}
    names = list(dict.fromkeys(record.op.name for record in run.lowered.ops))
    return {name: OP_PALETTE[k % len(OP_PALETTE)] for k, name in enumerate(names)}


def transfer_ops(result: Result) -> list[str]:
    """A program's transfers, each as the name of the op it belongs to.

    Examples
    --------
    >>> import netsim
    >>> ops = transfer_ops(netsim.run_program("scenarios/programs/allgather_matmul.yaml"))
    >>> len(ops), set(ops)
    (96, {'gather'})
    """
    run = result.program
    named = [""] * len(result.leaves[0].schedule.transfers)
    for record in run.lowered.ops:
        for i in record.transfers:
            named[i] = record.op.name
    return named


def _unit(total_s: float) -> tuple[float, str]:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if total_s >= scale:
            return scale, unit
    return 1e-9, "ns"
