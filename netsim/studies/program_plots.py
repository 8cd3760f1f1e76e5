"""The plot of a program study: time, compute, communication and exposed communication against the swept field.

``time_vs_field.png`` (log-log) has one line per measure of
:func:`netsim.analysis.program_stats.program_stats`, over the first numeric swept
field. When other fields are swept too (a topology, another parameter), each of
their combinations gets a panel of its own, titled with its values, so that no
line joins the points of two chips. A panel marks the *simulated crossover* only
where exposed communication actually reaches 0 (from there on communication hides
behind compute): where compute catches up with communication, interpolated between
the two points around it. When a ``params.`` field is swept, it also marks the
scaling book's crossover batch ``peak_flops / W_ici`` of that panel's chip
(``W_ici`` twice a link's one-way bandwidth), for comparison. A value of 0 (exposed
communication once it hides) has no place on a log axis: it is drawn as a ``v`` on
the panel's floor, and the legend says so.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from netsim.destinations import staged_file
from netsim.studies.plots import Plot, Series
from netsim.studies.program_sweep import PROGRAM_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["crossover", "per_chip_params", "plot_program_results"]

_LINES = (
    ("compute_s", "compute (busiest chip)", "tab:blue", "-"),
    ("communication_s", "communication in flight", "tab:orange", "-"),
    ("exposed_communication_s", "exposed communication", "tab:red", "--"),
    ("time_s", "program time", "black", ":"),
)


def crossover(x: list[float], compute: list[float], communication: list[float], exposed: list[float] | None = None) -> float | None:
    """Where compute first catches up with communication, interpolated on log axes (None if it never does).

    With ``exposed``, only where exposed communication reaches 0 there (else communication
    never hides, whatever the two lines do: a psum that compute waits for).

    Examples
    --------
    >>> round(crossover([1, 2, 4], [1.0, 2.0, 4.0], [3.0, 3.0, 3.0]), 9)
    3.0
    >>> crossover([1, 2, 4], [1.0, 2.0, 4.0], [3.0, 3.0, 3.0], exposed=[3.0, 3.0, 3.0]) is None
    True
    """
    for k in range(1, len(x)):
        if compute[k - 1] < communication[k - 1] and compute[k] >= communication[k]:
            if exposed is not None and exposed[k] > ZERO * communication[k]:
                continue
            lx0, lx1 = math.log(x[k - 1]), math.log(x[k])
            d0 = math.log(compute[k - 1]) - math.log(communication[k - 1])
            d1 = math.log(compute[k]) - math.log(communication[k])
            return math.exp(lx0 + (lx1 - lx0) * (-d0) / (d1 - d0))
    return None


ZERO = 1e-9
"""Exposed communication at most this fraction of the communication counts as 0 (rounding)."""

MAX_PANELS = 12
"""Panels drawn at most (the first combinations of the other swept fields, in the table's order)."""


def per_chip_params(base: Any) -> set[str]:
    """The swept ``params.`` fields that count rows per chip: parameters that size a dimension no array shards.

    The scaling book's crossover ``peak_flops / W_ici`` is rows per chip: it is drawn only
    over such a field (a global batch split over the mesh is another unit).

    Examples
    --------
    >>> sorted(per_chip_params({"arrays": {"x": {"shape": ["B", "D"]}, "W": {"shape": ["D", "F"], "sharding": [None, "X"]}}}))
    ['params.B', 'params.D']
    >>> per_chip_params({"arrays": {"x": {"shape": ["B", "D"], "sharding": [["X", "Y"], None]}}})
    {'params.D'}
    """
    whole: set[str] = set()
    split: set[str] = set()
    arrays = base.get("arrays") if isinstance(base, dict) else None
    for spec in (arrays or {}).values():
        if not isinstance(spec, dict) or not isinstance(spec.get("shape"), list):
            continue
        sharding = spec.get("sharding") if isinstance(spec.get("sharding"), list) else []
        for k, size in enumerate(spec["shape"]):
            if isinstance(size, str):
                (split if k < len(sharding) and sharding[k] not in (None, [], ()) else whole).add(f"params.{size}")
    return whole - split


def plot_program_results(table: pd.DataFrame, directory: str | Path, name: str = "sweep", per_chip: set[str] | None = None) -> list[Plot]:
    """Draw ``time_vs_field.png`` for a program study's results table; return it with its series.

    A series' label names its panel when there are several (``compute (busiest chip), topology=tpu-v5e:4x4``).
    ``per_chip``: the fields that count rows per chip (:func:`per_chip_params`), over which the
    scaling book's crossover is drawn (None: every ``params.`` field).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ok = table[table["error"].isna()] if "error" in table.columns else table
    fields = [c for c in table.columns if c != "point" and c not in PROGRAM_COLUMNS]
    swept_topology = "topology" in table.columns and ok["topology"].nunique() > 1 and "topology" not in fields
    numeric = [f for f in fields if _numbers(ok[f]) is not None]
    if ok.empty or not numeric:
        return []
    field = numeric[0]
    others = [f for f in fields if f != field] + (["topology"] if swept_topology else [])
    panels = list(ok.groupby(others, sort=False, dropna=False)) if others else [((), ok)]
    shown = panels[:MAX_PANELS]
    more = f" (first {MAX_PANELS} of {len(panels)} panels)" if len(panels) > MAX_PANELS else ""
    plot = Plot("time_vs_field", directory / "time_vs_field.png", f"{name}: program time vs {field}{more}", field, "time (µs)")
    columns = min(3, len(shown))
    rows = math.ceil(len(shown) / columns)
    figure = Figure(figsize=(8 if columns == 1 else 5.2 * columns, 5.5 if rows == 1 else 4.6 * rows))
    axes = figure.subplots(rows, columns, squeeze=False, sharey=True)
    for k, (key, part) in enumerate(shown):
        values = key if isinstance(key, tuple) else (key,)
        where = ", ".join(f"{f.rsplit('.', 1)[-1]}={v}" for f, v in zip(others, values, strict=True))
        _panel(axes[k // columns][k % columns], part, field, where, plot, per_chip)
    for k in range(len(shown), rows * columns):
        axes[k // columns][k % columns].set_visible(False)
    figure.suptitle(plot.title)
    figure.tight_layout()
    with staged_file(plot.path) as staged:  # whole or not at all; a symbolic link is followed
        FigureCanvasAgg(figure).print_png(staged)
    return [plot]


def _panel(ax: Any, part: pd.DataFrame, field: str, where: str, plot: Plot, per_chip: set[str] | None = None) -> None:
    """One panel: the four measures over ``field`` for the rows of one combination of the other fields."""
    ordered = part.assign(_x=_numbers(part[field])).sort_values("_x")
    x = ordered["_x"].tolist()
    suffix = f", {where}" if where else ""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    positive = [v * 1e6 for column, *_ in _LINES for v in ordered[column].tolist() if v > 0]
    floor = min(positive) / 3 if positive else 1.0
    for column, label, colour, style in _LINES:
        y = [v * 1e6 for v in ordered[column].tolist()]
        wide = column == "time_s"
        look = {"marker": "x" if wide else "o", "linewidth": 2.5 if wide else 1.5, "zorder": 3 if wide else 2}
        zeros = [a for a, b in zip(x, y, strict=True) if b <= 0]
        drawn = [b if b > 0 else floor for b in y]  # a 0 has no place on a log axis: the line drops to the floor
        ax.plot(x, drawn, style, color=colour, label=label, markevery=[k for k, b in enumerate(y) if b > 0], **look)
        plot.series.append(Series(label + suffix, x, y, ordered["point"].tolist(), colour=colour))
        if zeros:
            ax.plot(zeros, [floor] * len(zeros), "v", color=colour, markersize=9, clip_on=False, zorder=4, label=f"{label}: 0 (on the floor)")
            at = [p for p, b in zip(ordered["point"].tolist(), y, strict=True) if b <= 0]
            plot.series.append(Series(f"{label}: 0 (on the floor){suffix}", zeros, [floor] * len(zeros), at, colour=colour))
    exposed = ordered["exposed_communication_s"].tolist()
    simulated = crossover(x, ordered["compute_s"].tolist(), ordered["communication_s"].tolist(), exposed)
    if simulated is not None:
        ax.axvline(simulated, color="tab:green", linestyle=":", label=f"simulated crossover: {field} ≈ {simulated:.0f}")
        plot.series.append(Series("simulated crossover" + suffix, [simulated], [], []))
    elif all(e > ZERO * c for e, c in zip(exposed, ordered["communication_s"].tolist(), strict=True)):
        ax.text(0.02, 0.98, "no crossover: communication\nis exposed at every point", transform=ax.transAxes, va="top", fontsize=8)
    if field.startswith("params.") and (per_chip is None or field in per_chip) and ordered["peak_flops"].notna().all():
        book = float(ordered["peak_flops"].iloc[0]) / (2 * float(ordered["link_bandwidth_Bps"].iloc[0]))
        ax.axvline(book, color="tab:gray", linestyle="-.", label=f"scaling book: peak_flops / W_ici ≈ {book:.0f}")
        plot.series.append(Series("scaling book crossover" + suffix, [book], [], []))
    ax.set_ylim(bottom=floor / 1.25)
    ax.set_xticks(x)
    ax.set_xticklabels([tick(v) for v in x], rotation=45)
    ax.set_xlabel(field)
    ax.set_ylabel("time (µs)")
    if where:
        ax.set_title(where, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="best")


def tick(value: float) -> str:
    """A tick label in plain digits for a whole number (never ``1.04858e+06``).

    Examples
    --------
    >>> tick(1048576.0), tick(0.5), tick(256)
    ('1048576', '0.5', '256')
    """
    return f"{value:.0f}" if float(value).is_integer() else f"{value:g}"


def _numbers(column: pd.Series) -> list[float] | None:
    try:
        values = [float(v) for v in column.tolist()]
    except (TypeError, ValueError):
        return None
    return values if all(v > 0 for v in values) else None
