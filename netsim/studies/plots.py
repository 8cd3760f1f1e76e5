"""Plots of a sweep's results table, as PNG files (matplotlib, Agg, no display needed).

Plots only read the results table (:func:`netsim.studies.sweep.read_results`); they never
simulate. Each function returns the :class:`Plot` it drew, with the exact series it
put on the axes, so what a figure shows can be checked against the table.

- ``time_vs_payload``: simulated time against the collective's size S (log-log), one
  line per algorithm (and per any other swept field), thick and pale, with the
  closed-form estimate thin, dashed and marked × on top in the same colour.
- ``busbw_vs_payload``: nccl-tests' bus bandwidth against S.
- ``time_vs_devices``: time against the number of devices (log-log), with the
  estimates dashed: how a collective scales with the slice.
- ``time_by_field``: one figure per categorical swept field (topology, group layout,
  algorithm) not already told apart by the payload plot's lines: bars of time for each
  value, grouped by the other swept fields, one panel per payload (each with its own
  time axis, logarithmic when it spans more than 30x). A numeric swept field (a
  latency, a size, a bandwidth) is drawn as lines instead: ``time_vs_FIELD``.

An algorithm has the same colour on every plot (:mod:`netsim.studies.colours`); log
axes are labelled however little they span. Rows with an error are left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

from netsim.destinations import staged_file
from netsim.network.units import format_bytes, format_seconds, parse_bandwidth, parse_bytes, parse_duration
from netsim.studies.colours import algorithm_colour
from netsim.studies.sweep import RESULT_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MAX_BAR_GROUPS", "Plot", "Series", "plot_results"]

MAX_BAR_GROUPS = 8
"""A bar chart with more bars per category than this is not drawn: it would not be read."""

_CATEGORICAL = ("collective", "algorithm", "topology")


@dataclass
class Series:
    """One line or one set of bars of a plot.

    Attributes
    ----------
    label : str
        The legend entry.
    x, y : list
        What was plotted, in the plotted units: x in bytes or devices (or category
        labels for bars), y in microseconds or GB/s.
    points : list of int
        The results rows (``point``) each value comes from.
    closed_form : bool
        True for a closed-form estimate overlaid on the simulated series.
    colour : str or list of str or None
        What it was drawn in: an algorithm's own colour (:func:`netsim.studies.colours.algorithm_colour`)
        wherever series are told apart by algorithm.
    """

    label: str
    x: list[Any]
    y: list[float]
    points: list[int]
    closed_form: bool = False
    colour: Any = None


@dataclass
class Plot:
    """A figure written to ``path`` and the data on it."""

    kind: str
    path: Path
    title: str
    xlabel: str
    ylabel: str
    series: list[Series] = field(default_factory=list)


_TIMING_NEUTRAL = ("data", "seed")
"""Swept fields that do not change a time (``data: none`` runs the same schedule with sizes only;
a seed draws other values for the same schedule): never a line or a bar of their own."""


def _labels(table: pd.DataFrame) -> list[str]:
    """The swept fields' label columns that are not measured columns too."""
    return [c for c in table.columns if c != "point" and c not in RESULT_COLUMNS and c not in _TIMING_NEUTRAL]


def _varies(table: pd.DataFrame, column: str) -> bool:
    return column in table.columns and table[column].nunique(dropna=False) > 1


def _determined(table: pd.DataFrame, by: list[str], column: str) -> bool:
    """Whether ``column`` takes one value within each group of ``by``."""
    if not by:
        return not _varies(table, column)
    return bool((table.groupby(by, sort=False, dropna=False)[column].nunique(dropna=False) <= 1).all())


def _key(table: pd.DataFrame, x: str, labels: list[str], measured: list[str], leading: tuple[str, ...] = ()) -> list[str]:
    """Columns that tell the series apart.

    A swept field's labels split series when they vary and are not set by the fields
    already chosen; a measured column (algorithm, S, ...) does when it is not set by
    those and ``x`` either (the topology's name is set by the device count). The
    ``leading`` measured columns are tried first (S names a line better than a field
    zipped with it).
    """
    key: list[str] = []
    for column in leading:
        if _varies(table, column) and not _determined(table, [x], column):
            key.append(column)
    for column in labels:
        if column not in key and _varies(table, column) and not _determined(table, key, column):
            key.append(column)
    for column in measured:
        if column not in key and column != x and _varies(table, column) and not _determined(table, [*key, x], column):
            key.append(column)
    return key


def _describe(column: str, value: Any) -> str:
    if column == "input.bytes_per_device":
        return f"{value} per device"
    if column in ("total_bytes", "bytes_per_device"):
        return f"{'S' if column == 'total_bytes' else 's'} = {format_bytes(int(value))}"
    if column in _CATEGORICAL:
        return str(value)
    return f"{column.rsplit('.', 1)[-1]}={value}"


def _groups(table: pd.DataFrame, key: list[str]) -> list[tuple[str, pd.DataFrame]]:
    if not key:
        return [("simulated", table)]
    out = []
    for values, rows in table.groupby(key, sort=False, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        out.append((", ".join(_describe(c, v) for c, v in zip(key, values, strict=True)), rows))
    return out


_MARKERS = ("o", "s", "^", "D", "v", "P")
_STYLES = ("-", "--", "-.", ":")


def _colour(key: list[str], rows: pd.DataFrame, index: int) -> str:
    """An algorithm's own colour when the series are told apart by algorithm; otherwise the index's."""
    if "algorithm" in key:
        return algorithm_colour(str(rows["algorithm"].iloc[0]))
    return f"C{index % 10}"


def _ticks_at(axis: Any, values: list[float], label: Any) -> None:
    """Ticks at the plotted values (up to 12 of them), each labelled; no unlabelled minor ticks."""
    values = sorted(set(values))
    if len(values) > 12:
        values = values[:: -(-len(values) // 12)]
    axis.set_major_locator(FixedLocator(values))
    axis.set_major_formatter(FuncFormatter(lambda v, _: label(v)))
    axis.set_minor_formatter(NullFormatter())
    axis.set_minor_locator(NullLocator())


def _log_axis(axis: Any, values: list[float]) -> None:
    """A log axis whose ticks are labelled however little it spans (less than a decade: every 1..9 × 10^k)."""
    positive = [v for v in values if v > 0]
    if not positive:
        return
    span = max(positive) / min(positive)
    subs = tuple(range(1, 10)) if span < 10 else (1.0, 2.0, 5.0) if span < 1000 else (1.0,)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _save(figure: Figure, plot: Plot, legend_outside: bool = False) -> Plot:
    """Title, labels, grid and one legend (outside the axes when long or faceted), then the PNG."""
    axes = [ax for ax in figure.axes if ax.get_visible()]
    if len(axes) == 1:
        axes[0].set_title(plot.title)
    else:
        figure.suptitle(plot.title)
    for ax in axes:
        ax.set_xlabel(plot.xlabel)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel(plot.ylabel)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.set_layout_engine("constrained")
    if legend_outside or len(labels) > 6 or len(axes) > 1:
        figure.set_figwidth(figure.get_figwidth() + 4)
        if labels:
            figure.legend(handles, labels, fontsize="small", loc="outside right upper")
    elif labels:
        axes[0].legend(fontsize="small")
    FigureCanvasAgg(figure)
    with staged_file(plot.path) as staged:  # whole or not at all; a symbolic link is followed
        figure.savefig(staged, dpi=100, format="png")
    return plot


def _lines(table: pd.DataFrame, x: str, y: str, key: list[str], scale: float, estimate: bool, ax: Any, plot: Plot) -> None:
    """One line per series: the simulated values thick and pale, the closed form thin, dashed and on top (× markers)."""
    used: dict[str, int] = {}
    closed = False
    for index, (name, rows) in enumerate(_groups(table, key)):
        rows = rows.sort_values([x, "point"], kind="stable")
        colour = _colour(key, rows, index)
        n = used[colour] = used.get(colour, -1) + 1
        xs = [float(v) for v in rows[x]]
        points = [int(p) for p in rows["point"]]
        ys = [float(v) / scale for v in rows[y]]
        style = {"marker": _MARKERS[n % len(_MARKERS)], "linestyle": _STYLES[n % len(_STYLES)]}
        ax.plot(xs, ys, color=colour, linewidth=3, alpha=0.55, markersize=7, label=name, zorder=2, **style)
        plot.series.append(Series(name, xs, ys, points, colour=colour))
        if estimate and rows["estimate_s"].notna().all():
            es = [float(v) / scale for v in rows["estimate_s"]]
            ax.plot(xs, es, color=colour, linestyle=(0, (3, 2)), linewidth=1.3, marker="x", markersize=8, markeredgewidth=1.6, zorder=3)
            plot.series.append(Series(f"{name} (closed form)", xs, es, points, closed_form=True, colour=colour))
            closed = True
    if closed:
        ax.plot([], [], color="black", linestyle=(0, (3, 2)), linewidth=1.3, marker="x", markersize=8, label="closed form (dashed, ×)")


def plot_results(table: pd.DataFrame, directory: str | Path, kinds: list[str] | tuple[str, ...] | None = None, name: str = "sweep") -> list[Plot]:
    """Draw the plots that apply to a results table and write them as PNG files.

    Parameters
    ----------
    table : pandas.DataFrame
        A results table, from :func:`netsim.studies.sweep` or :func:`netsim.studies.sweep.read_results`.
    directory : str or pathlib.Path
        Where the PNG files go (created if needed).
    kinds : sequence of str, optional
        Which plots to draw (see the module docstring); default every one that
        applies: payload plots when an ``input.`` field is swept, the devices plot
        when the device count varies, a bar chart per categorical swept field.
    name : str
        The study's name, for the titles.

    Returns
    -------
    list of Plot
        The figures written, with the series on each.

    Examples
    --------
    >>> import tempfile
    >>> from netsim.studies.sweep import sweep
    >>> base = {"topology": "ring4", "collective": {"op": "all_gather"}, "input": {"bytes_per_device": "1 KiB"}}
    >>> grid = {"algorithm": ["ring", "bidirectional_ring"], "input.bytes_per_device": ["1 KiB", "64 KiB"]}
    >>> table = sweep({"name": "demo", "base": base, "grid": grid}, workers=1)
    >>> plots = plot_results(table, tempfile.mkdtemp(), name="demo")
    >>> [p.path.name for p in plots]
    ['time_vs_payload.png', 'busbw_vs_payload.png']
    >>> [s.label for s in plots[0].series]
    ['ring', 'ring (closed form)', 'bidirectional_ring', 'bidirectional_ring (closed form)']
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ok = table[table["error"].isna()] if "error" in table.columns else table
    wanted = set(kinds) if kinds is not None else None
    labels = _labels(ok)
    plots: list[Plot] = []
    if len(ok) == 0:
        return plots
    payload_swept = any(_varies(ok, c) for c in labels if c.startswith("input."))
    payload_key = _key(ok, "total_bytes", [c for c in labels if not c.startswith("input.")], [*_CATEGORICAL, "group_size"])
    payload_drawn = (wanted is None and payload_swept) or (wanted is not None and "time_vs_payload" in wanted)
    if payload_drawn:
        plot = Plot("time_vs_payload", directory / "time_vs_payload.png", f"{name}: simulated time vs payload", "payload S (bytes)", "simulated time (µs)")
        figure = Figure(figsize=(8, 5.5))
        ax = figure.add_subplot()
        ax.set_xscale("log")
        ax.set_yscale("log")
        _lines(ok, "total_bytes", "time_s", payload_key, 1e-6, True, ax, plot)
        _ticks_at(ax.xaxis, [float(v) for v in ok["total_bytes"]], format_bytes)
        _log_axis(ax.yaxis, [y for series in plot.series for y in series.y])
        plots.append(_save(figure, plot))
    if (wanted is None and payload_swept) or (wanted is not None and "busbw_vs_payload" in wanted):
        plot = Plot("busbw_vs_payload", directory / "busbw_vs_payload.png", f"{name}: bus bandwidth vs payload", "payload S (bytes)", "busbw (GB/s)")
        figure = Figure(figsize=(8, 5.5))
        ax = figure.add_subplot()
        ax.set_xscale("log")
        _lines(ok, "total_bytes", "busbw_Bps", payload_key, 1e9, False, ax, plot)
        _ticks_at(ax.xaxis, [float(v) for v in ok["total_bytes"]], format_bytes)
        ax.set_ylim(bottom=0)
        plots.append(_save(figure, plot))
    if (wanted is None and _varies(ok, "n_devices")) or (wanted is not None and "time_vs_devices" in wanted):
        key = _key(ok, "n_devices", [c for c in labels if not c.startswith(("input.", "topology"))], ["collective", "algorithm"], leading=("total_bytes",))
        plot = Plot("time_vs_devices", directory / "time_vs_devices.png", f"{name}: simulated time vs devices", "devices (n)", "simulated time (µs)")
        figure = Figure(figsize=(8, 5.5))
        ax = figure.add_subplot()
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        _lines(ok, "n_devices", "time_s", key, 1e-6, True, ax, plot)
        _ticks_at(ax.xaxis, [float(n) for n in ok["n_devices"]], lambda v: f"{v:g}")
        _log_axis(ax.yaxis, [y for series in plot.series for y in series.y])
        plots.append(_save(figure, plot))
    if wanted is None or "time_by_field" in wanted:
        as_lines = set(payload_key) if payload_drawn else set()
        columns = list(dict.fromkeys([c for c in labels if not c.startswith("input.")] + ["algorithm", "topology"]))
        numeric = [c for c in columns if _numeric(ok, c) is not None]
        for column in numeric:
            plot, key = _field_lines(ok, column, labels, directory, name)
            plots.append(plot)
            as_lines.update(key)
        for column in columns:
            if column not in numeric and column not in as_lines:  # a field already told apart by lines needs no bars
                plots.extend(_bar_charts(ok, column, labels, directory, name))
    return plots


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in text)


def _numeric(table: pd.DataFrame, column: str) -> tuple[list[float], Any] | None:
    """A swept field whose labels are all durations, sizes, bandwidths or plain numbers: (their values, a tick label), else None."""
    if column in RESULT_COLUMNS or column not in table.columns or not _varies(table, column):
        return None
    readers = ((parse_duration, format_seconds), (parse_bytes, format_bytes), (parse_bandwidth, lambda v: f"{v / 1e9:g} GB/s"), (float, lambda v: f"{v:g}"))
    for parse, label in readers:
        try:
            values = [float(parse(str(v))) for v in table[column]]
        except (ValueError, TypeError):
            continue
        if all(math.isfinite(v) for v in values):
            return values, label
    return None


def _field_lines(table: pd.DataFrame, column: str, labels: list[str], directory: Path, name: str) -> tuple[Plot, list[str]]:
    """Time against a numeric swept field (a latency, a size, a bandwidth): lines, log-log, closed forms on top.

    Returns the plot and the columns that tell its lines apart.
    """
    values, label = _numeric(table, column)
    rows = table.assign(_value=values)
    key = _key(rows, "_value", [c for c in labels if c != column], [*_CATEGORICAL, "total_bytes"], leading=("total_bytes",))
    plot = Plot("time_vs_field", directory / f"time_vs_{_safe(column)}.png", f"{name}: simulated time vs {column}", column, "simulated time (µs)")
    figure = Figure(figsize=(8, 5.5))
    ax = figure.add_subplot()
    ax.set_yscale("log")
    if min(values) > 0 and max(values) / min(values) >= 4:
        ax.set_xscale("log")
    _lines(rows, "_value", "time_s", key, 1e-6, True, ax, plot)
    _ticks_at(ax.xaxis, values, label)
    _log_axis(ax.yaxis, [y for series in plot.series for y in series.y])
    return _save(figure, plot), key


def _bar_charts(table: pd.DataFrame, column: str, labels: list[str], directory: Path, name: str) -> list[Plot]:
    """One figure of bars for a categorical field: one panel, or one panel per payload, each with its own time axis."""
    if not _varies(table, column):
        return []
    facets = [c for c in labels if c != column and c.startswith("input.") and _varies(table, c)]
    parts = list(table.groupby(facets[0], sort=False)) if facets else [(None, table)]
    plot = Plot("time_by_field", directory / f"time_by_{_safe(column)}.png", f"{name}: simulated time by {column}", column, "simulated time (µs)")
    columns = min(len(parts), 3)
    panels = -(-len(parts) // columns)
    categories = list(dict.fromkeys(str(v) for v in table[column]))
    figure = Figure(figsize=(max(6, 0.5 * len(categories) * MAX_BAR_GROUPS / 2) * columns / 1.5 + 2, 4.5 * panels))
    axes = figure.subplots(panels, columns, squeeze=False).flat
    for ax, (value, rows) in zip(axes, parts, strict=False):
        facet = None if value is None else _describe(facets[0], value)
        if not _bars(rows, column, labels, ax, plot, facet):
            return []
    for ax in list(axes):
        ax.set_visible(False)
    return [_save(figure, plot, legend_outside=True)]


def _bars(table: pd.DataFrame, column: str, labels: list[str], ax: Any, plot: Plot, facet: str | None) -> bool:
    """Time for each value of one categorical field, bars grouped by the other swept fields (False: too many to read)."""
    hue = _key(table, column, [c for c in labels if c != column], [*_CATEGORICAL, "total_bytes"])
    groups = _groups(table, hue)
    categories = list(dict.fromkeys(str(v) for v in table[column]))
    if len(groups) > MAX_BAR_GROUPS or any(rows[column].duplicated().any() for _, rows in groups):
        return False
    width = 0.8 / len(groups)
    times: list[float] = []
    used: dict[str, int] = {}
    for index, (label, rows) in enumerate(groups):
        xs = [str(v) for v in rows[column]]
        ys = [float(v) / 1e-6 for v in rows["time_s"]]
        times += ys
        positions = [categories.index(x) - 0.4 + width * (index + 0.5) for x in xs]
        colours = [algorithm_colour(x) for x in xs] if column == "algorithm" and len(groups) == 1 else _colour(hue, rows, index)
        n = used[str(colours)] = used.get(str(colours), -1) + 1  # the same algorithm again: told apart by hatching
        hatch = ("", "//", "..", "xx")[n % 4]
        ax.bar(positions, ys, width=width, color=colours, hatch=hatch, edgecolor="white", label=label if len(groups) > 1 else None)
        named = label if facet is None else f"{label}, {facet}"
        plot.series.append(Series(named, xs, ys, [int(p) for p in rows["point"]], colour=colours))
        if rows["estimate_s"].notna().all():
            es = [float(v) / 1e-6 for v in rows["estimate_s"]]
            ax.plot(positions, es, "k_", markersize=14, markeredgewidth=2, label="closed form" if index == 0 else None)
            plot.series.append(Series(f"{named} (closed form)", xs, es, [int(p) for p in rows["point"]], closed_form=True))
    if max(times) / max(min(times), 1e-300) > 30:
        ax.set_yscale("log")
        _log_axis(ax.yaxis, times)
    if facet is not None:
        ax.set_title(facet, fontsize="medium")
    long = max(map(len, categories)) > 10
    ax.set_xticks(range(len(categories)), categories, rotation=20 if long else 0, ha="right" if long else "center")
    return True
