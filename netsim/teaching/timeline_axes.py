"""A timeline of a big run: one row per axis and direction of the links, how busy they were over time.

With thousands of links a row per link is unreadable and slow to draw. Here the
links are grouped by the axis they run along and their direction (``axis 0 +``,
``axis 0 -``, ...) and each row shows, over simulated time, the share of the
group's links that were carrying a message: full height when every link of the
group was busy, empty when all were idle. Dashed lines mark the end of each
step when there are few enough to see. :func:`axis_rows` gives the content as
data (tested); :func:`save_axis_timeline` draws it. Both read the engine's hop
columns, never one object per hop, so the pod (a million link crossings) draws
in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from netsim.engine import as_array
from netsim.engine.columns import hop_arrays
from netsim.result import Result
from netsim.teaching.saving import _matplotlib, save_figure

__all__ = ["AxisRow", "axis_rows", "save_axis_timeline"]

BINS = 800
"""Time bins of the busy share drawn in each row."""


@dataclass(frozen=True)
class AxisRow:
    """The links along one axis in one direction, over the run.

    Attributes
    ----------
    axis, direction : int
    links : int
        Links in the group (every link of the topology along that axis and direction).
    messages : int
        Link crossings by messages.
    busy_s : float
        Time the group's links carried a message, summed over the links.
    busy_share : numpy.ndarray
        Per time bin (:data:`BINS` of them over the run): the average share of the
        group's links carrying a message, between 0 and 1.
    """

    axis: int
    direction: int
    links: int
    messages: int
    busy_s: float
    busy_share: np.ndarray
    slice: int = -1
    """On slices joined by the DCN (axis 0), the slice whose links these are (a lane per slice); else -1."""

    @property
    def label(self) -> str:
        """``axis 0 +``; ``DCN up, slice 1`` (to the switch) or ``DCN down, slice 1`` for a slice's DCN links."""
        if self.slice >= 0:
            return f"DCN {'up' if self.direction > 0 else 'down'}, slice {self.slice}"
        return f"axis {self.axis} {'+' if self.direction > 0 else '-'}"


def _row_key(topology: Any, link: Any) -> tuple[int, int, int]:
    """(axis, direction, slice): the DCN's links (axis 0 of slices joined by it) by slice, others by axis and direction."""
    u, v, (axis, direction) = link
    if axis == 0 and getattr(topology, "n_slices", 1) > 1:
        return (0, direction, int(topology.graph.nodes[v if u == topology.switch else u]["slice"]))
    return (axis, direction, -1)


def axis_rows(result: Result, leaf: int = 0, bins: int = BINS) -> list[AxisRow]:
    """One row per axis and direction: its links, messages, busy time and busy share over time.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> slow = netsim.ring(4, bandwidth_Bps=1e9, latency_s=1e-9)
    >>> rows = axis_rows(netsim.all_gather(np.zeros((4, 10**6), np.uint8), algorithm="ring", topology=slow), bins=6)
    >>> [(row.label, row.links, row.messages) for row in rows]  # the ring sends one way round
    [('axis 0 -', 4, 0), ('axis 0 +', 4, 12)]
    >>> rows[1].busy_share.round(3).tolist()  # 3 steps of 1 ms (1 MB at 1 GB/s) on every link, each over 2 bins
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """
    if not 0 <= leaf < len(result.leaves):
        raise ValueError(f"leaf={leaf} is out of range: this result has {len(result.leaves)} leaf run(s)")
    if result.topology_obj is None:
        raise ValueError("this result carries no topology (topology_obj is None); run it with netsim.all_gather/psum_scatter/psum/simulate")
    topology, playback = result.topology_obj, result.leaves[leaf].playback
    groups: dict[tuple[int, int, int], int] = {}
    for lk in topology.links:
        key = _row_key(topology, lk)
        groups[key] = groups.get(key, 0) + 1
    _, link, start, end, link_ids = hop_arrays(playback.hops)
    order = {key: g for g, key in enumerate(sorted(groups))}
    group_of_link = np.array([order[_row_key(topology, lk)] for lk in link_ids], np.int64)
    group = group_of_link[link] if len(link) else np.zeros(0, np.int64)
    edges = np.linspace(0.0, playback.time if playback.time > 0 else 1.0, bins + 1)
    aliases = getattr(result.leaves[leaf].schedule.transfers, "aliases", None)
    each = 1 if aliases is None else aliases.order  # (played on representatives: a link's messages stand for those of as many links)
    rows = []
    for g, key in enumerate(sorted(groups)):
        axis, direction, lane = key
        mine = group == g
        s, e = start[mine], end[mine]
        share = _busy_integral(s, e, edges) * each / np.diff(edges) / groups[key]
        rows.append(AxisRow(axis, direction, groups[key], int(mine.sum()) * each, float((e - s).sum()) * each, share, lane))
    return rows


def _busy_integral(start: np.ndarray, end: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bin between ``edges``: the time integral of how many of the intervals [start, end) are open."""
    if not len(start):
        return np.zeros(len(edges) - 1)
    times = np.concatenate([start, end])
    delta = np.concatenate([np.ones(len(start)), -np.ones(len(end))])
    order = np.argsort(times, kind="stable")
    times, open_after = times[order], np.cumsum(delta[order])
    integral = np.concatenate([[0.0], np.cumsum(open_after[:-1] * np.diff(times))])  # at each event time
    at_edges = np.interp(edges, times, integral, left=0.0, right=integral[-1])
    return np.diff(at_edges)


def save_axis_timeline(result: Result, path: str | Path, leaf: int = 0, dpi: int = 110) -> Path:
    """Draw the per-axis timeline of a run to ``.png``, ``.svg`` or ``.pdf``.

    Returns
    -------
    Path
    """
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ValueError(f"cannot write {str(path)!r}: the file name must end in .png, .svg or .pdf")
    rows = axis_rows(result, leaf)
    _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    run = result.leaves[leaf]
    total = run.playback.time
    scale, unit = 1e-6, "us"
    legend_lines = -(-len(rows) // 3)  # three entries a line, below the chart
    bottom = 1.05 + 0.25 * max(legend_lines - 2, 0)  # inches under the chart: its labels, then the legend
    height = bottom + 1.15 + 0.55 * max(len(rows), 4)
    figure = Figure(figsize=(11, height), dpi=dpi)
    FigureCanvasAgg(figure)
    ax = figure.add_axes((0.13, bottom / height, 0.84, 1 - (bottom + 0.6) / height))
    x = np.linspace(0.0, total if total > 0 else 1.0, BINS + 1) / scale
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    for k, row in enumerate(rows):
        colour = "#7f7f7f" if row.slice >= 0 else colours[row.axis % len(colours)]  # (the DCN in grey)
        base = k + 0.4
        ax.axhspan(k - 0.4, k + 0.4, color="#f3f3f3", zorder=0)
        ax.fill_between(x[:-1], base, base - 0.8 * row.busy_share, step="post", color=colour, alpha=1.0 if row.direction > 0 else 0.6, linewidth=0, zorder=2)
        used = row.busy_s / row.links / total if total > 0 and row.links else 0.0
        label = f"{row.label}: {row.links:,} links, {row.messages:,} messages, {used:.1%} busy"
        ax.fill_between([], [], color=colour, alpha=1.0 if row.direction > 0 else 0.6, label=label)
    arrived = as_array(run.playback.arrived_at, float)
    step = getattr(run.schedule.transfers, "step", None)
    if isinstance(step, np.ndarray) and len(step) and len(np.unique(step)) <= 64:
        for code in np.unique(step).tolist():
            ax.axvline(float(arrived[step == code].max()) / scale, color="#888", linestyle="--", linewidth=0.6, zorder=1)
    ax.set_yticks(range(len(rows)), [row.label for row in rows], fontsize=9)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, total / scale * 1.02 if total else 1)
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_ylabel("links, by axis and direction")
    ax.grid(axis="x", color="#e4e4e4", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    what = result.scenario or result.collective
    n_links = sum(row.links for row in rows)
    title = f"{what}: {result.collective} with {result.algorithm} on {result.topology}"
    figure.text(0.01, 1 - 0.1 / height, title, ha="left", va="top", fontsize=10, weight="bold")
    figure.text(
        0.01,
        1 - 0.36 / height,
        f"{n_links:,} links in {len(rows)} rows: each row's height is the share of its links carrying a message (full: all busy)",
        ha="left",
        va="top",
        fontsize=8.5,
    )
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.62 / (height - bottom - 0.6) - 0.02), ncol=3, fontsize=7.5, frameon=False)
    return save_figure(figure, path)
