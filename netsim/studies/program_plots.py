"""The plot of a program study: time, compute, communication and exposed communication against the swept field.

``time_vs_field.png`` (log-log) has one line per measure of
:func:`netsim.analysis.program_stats.program_stats`, over the first numeric swept
field, and marks where the compute line crosses the communication line (the
simulated crossover: from there on the communication can hide behind compute),
interpolated between the two points around it. When a ``params.`` field is swept
it also marks the scaling book's crossover batch ``peak_flops / W_ici`` (``W_ici``
twice a link's one-way bandwidth), for comparison.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from netsim.destinations import staged_file
from netsim.studies.plots import Plot, Series
from netsim.studies.program_sweep import PROGRAM_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["crossover", "plot_program_results"]

_LINES = (
    ("compute_s", "compute (busiest chip)", "tab:blue", "-"),
    ("communication_s", "communication in flight", "tab:orange", "-"),
    ("exposed_communication_s", "exposed communication", "tab:red", "--"),
    ("time_s", "program time", "black", ":"),
)


def crossover(x: list[float], compute: list[float], communication: list[float]) -> float | None:
    """Where compute first catches up with communication, interpolated on log axes (None if it never does).

    Examples
    --------
    >>> round(crossover([1, 2, 4], [1.0, 2.0, 4.0], [3.0, 3.0, 3.0]), 9)
    3.0
    """
    for k in range(1, len(x)):
        if compute[k - 1] < communication[k - 1] and compute[k] >= communication[k]:
            lx0, lx1 = math.log(x[k - 1]), math.log(x[k])
            d0 = math.log(compute[k - 1]) - math.log(communication[k - 1])
            d1 = math.log(compute[k]) - math.log(communication[k])
            return math.exp(lx0 + (lx1 - lx0) * (-d0) / (d1 - d0))
    return None


def plot_program_results(table: pd.DataFrame, directory: str | Path, name: str = "sweep") -> list[Plot]:
    """Draw ``time_vs_field.png`` for a program study's results table; return it with its series."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ok = table[table["error"].isna()] if "error" in table.columns else table
    fields = [c for c in table.columns if c != "point" and c not in PROGRAM_COLUMNS]
    numeric = [f for f in fields if _numbers(ok[f]) is not None]
    if ok.empty or not numeric:
        return []
    field = numeric[0]
    ordered = ok.assign(_x=_numbers(ok[field])).sort_values("_x")
    x = ordered["_x"].tolist()
    plot = Plot("time_vs_field", directory / "time_vs_field.png", f"{name}: program time vs {field}", field, "time (µs)")
    figure = Figure(figsize=(8, 5.5))
    ax = figure.add_subplot()
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    for column, label, colour, style in _LINES:
        y = [v * 1e6 for v in ordered[column].tolist()]
        shown = [(a, b) for a, b in zip(x, y, strict=True) if b > 0]  # an exposed time of 0 has no place on a log axis
        wide = column == "time_s"
        look = {"marker": "x" if wide else "o", "linewidth": 2.5 if wide else 1.5, "zorder": 3 if wide else 2}
        ax.plot([a for a, _ in shown], [b for _, b in shown], style, color=colour, label=label, **look)
        plot.series.append(Series(label, x, y, ordered["point"].tolist()))
    simulated = crossover(x, ordered["compute_s"].tolist(), ordered["communication_s"].tolist())
    if simulated is not None:
        ax.axvline(simulated, color="tab:green", linestyle=":", label=f"simulated crossover: {field} ≈ {simulated:.0f}")
        plot.series.append(Series("simulated crossover", [simulated], [], []))
    if field.startswith("params.") and ordered["peak_flops"].notna().all():
        book = float(ordered["peak_flops"].iloc[0]) / (2 * float(ordered["link_bandwidth_Bps"].iloc[0]))
        ax.axvline(book, color="tab:gray", linestyle="-.", label=f"scaling book: peak_flops / W_ici ≈ {book:.0f}")
        plot.series.append(Series("scaling book crossover", [book], [], []))
    ax.set_xticks(x)
    ax.set_xticklabels([f"{v:g}" for v in x], rotation=45)
    ax.set_xlabel(field)
    ax.set_ylabel("time (µs)")
    ax.set_title(plot.title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    figure.tight_layout()
    with staged_file(plot.path) as staged:  # whole or not at all; a symbolic link is followed
        FigureCanvasAgg(figure).print_png(staged)
    return [plot]


def _numbers(column: pd.Series) -> list[float] | None:
    try:
        values = [float(v) for v in column.tolist()]
    except (TypeError, ValueError):
        return None
    return values if all(v > 0 for v in values) else None
