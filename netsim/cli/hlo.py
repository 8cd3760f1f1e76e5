"""``netsim program --hlo MODULE --topology SLICE`` (and program files with ``hlo:``): run, print, JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.table import Table

if TYPE_CHECKING:
    from netsim.analysis.program_stats import ProgramStats

__all__ = ["is_hlo", "print_hlo", "run_any"]

SHOWN = 12
"""Collectives listed in the table (all of them with --json)."""


def run_any(file: str | None, hlo: str | None, topology: str | None, clock_hz: float | None, data: str | None, engine: str | None) -> Any:
    """Run a program file of either kind, or an HLO module on a slice."""
    from netsim.programs.hlo.files import HloProgramFile, load_any_program  # (here: `netsim run` need not import them)
    from netsim.programs.hlo.run import run_hlo, run_hlo_program
    from netsim.programs.run import run_program

    if hlo is not None:
        if file is not None:
            raise ValueError(f"give a program file or --hlo MODULE, not both (got {file} and --hlo {hlo})")
        if topology is None:
            raise ValueError(f"--hlo {hlo}: say which slice it runs on, e.g. --topology tpu-v5e:4x4")
        return run_hlo(hlo, topology, clock_hz=clock_hz, engine=engine or "auto")
    if file is None:
        raise ValueError("give a program file, e.g. scenarios/programs/allgather_matmul.yaml, or --hlo MODULE --topology SLICE")
    if topology is not None or clock_hz is not None:
        raise ValueError("--topology and --clock-hz go with --hlo; a program file names its own topology")
    loaded = load_any_program(file)
    if isinstance(loaded, HloProgramFile):
        if data == "values":
            raise ValueError(f"{file}: an HLO module runs timing only (--data none)")
        return run_hlo_program(loaded, engine=engine)
    return run_program(loaded, data=data, engine=engine)


def is_hlo(result: Any) -> bool:
    """Whether a program's result came from an HLO module."""
    return getattr(result.program, "hlo", None) is not None


def hlo_json(result: Any, stats: ProgramStats) -> str:
    """The run as one JSON object: the program totals, ``collectives`` and the module's facts."""
    from netsim.analysis.hlo_stats import hlo_summary

    return json.dumps(hlo_summary(result, stats), indent=2)


def _us(seconds: float | None) -> str:
    from netsim.network.units import format_seconds

    return "-" if seconds is None else format_seconds(seconds)


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes} B"


def _collectives_table(entries: list[dict[str, Any]], more: str) -> Table:
    """The collectives, slowest first: time of all runs, closed form, its kind; a shape is never split across lines."""
    from rich import box

    from netsim.cli.program_table import KIND_WORDS, short_seconds

    title = "collectives, slowest first: time of all runs and its closed form" + more
    grid = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    for header in ("hlo_name", "op (group)", "shape", "runs", "time", "estimate", "kind"):
        text = header in ("hlo_name", "op (group)", "kind")
        grid.add_column(header, justify="left" if text else "right", no_wrap=not text, overflow="fold")
    for e in entries:
        shape = f"{e['dtype']}{e['shape']}".replace(" ", "") if isinstance(e["dtype"], str) else f"{len(e['shape'])} arrays"
        kind = KIND_WORDS.get(e["estimate_kind"], e["estimate_kind"])
        grid.add_row(e["hlo_name"], f"{e['op']} ({e['group_size']})", shape, str(e["count"]), short_seconds(e["time_s"]), short_seconds(e["estimate_s"]), kind)
    return grid


def print_hlo(result: Any, stats: ProgramStats) -> None:
    """The run's summary, its collectives (slowest first) and what is not modelled."""
    from netsim.analysis.hlo_stats import hlo_summary

    full = hlo_summary(result, stats)
    summary = full["hlo"]
    from netsim.cli.console import QuietConsole, wrap_prose

    console = QuietConsole(highlight=False)
    table = Table(title=f"netsim program: {stats.name}", show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value")
    facts = stats.devices_compute
    unmodelled = summary["unmodelled"]
    rows = [
        ("module", f"{summary['file']} ({summary['devices']} devices)"),
        ("topology", stats.topology),
        ("placement", summary["placement"]),
        ("time", _us(stats.time_s)),
        ("compute (busiest device)", _us(stats.compute_s)),
        ("communication in flight", _us(stats.communication_s)),
        ("exposed communication", _us(stats.exposed_communication_s)),
        ("why", stats.why),
        ("chip", f"{(facts['peak_flops'] or 0) / 1e12:.4g} TFLOP/s, HBM {(facts['hbm_bandwidth_Bps'] or 0) / 1e9:.4g} GB/s"),
        (
            "compute from",
            f"estimated_cycles at {summary['clock_hz']:.4g} Hz where given, else the roofline"
            if summary["clock_hz"]
            else "the roofline of each step's FLOPs and bytes",
        ),
        ("bytes per mesh axis", ", ".join(f"{axes}: {_size(b)}" for axes, b in summary["axis_bytes"].items()) or "-"),
        ("not modelled", f"{len(unmodelled)} instruction(s), listed below" if unmodelled else "nothing: every instruction is timed"),
        ("verified", stats.verification),
    ]
    for label, value in rows:
        table.add_row(label, value)
    console.print(table)
    entries = full["collectives"]
    more = f" (first {SHOWN} of {len(entries)}; all with --json)" if len(entries) > SHOWN else ""
    console.print(_collectives_table(entries[:SHOWN], more))
    console.print("why, collective by collective", markup=False)
    for e in entries[:SHOWN]:
        algorithm = e["algorithm"] + (f" (the compiler's: {e['compiler_algorithm']})" if e["compiler_algorithm"] else "")
        runs = f", first of {e['count']} runs" if e["count"] > 1 else ""
        line = f"  {e['hlo_name']} ({algorithm}, {_size(e['bytes'])} per device{runs}): {e['why']}"
        console.print(wrap_prose(line, console.width), markup=False, soft_wrap=True)
    if unmodelled:
        listing = Table(title="not modelled (not timed)", title_justify="left")
        for header in ("line", "hlo_name", "op", "why"):
            listing.add_column(header, justify="right" if header == "line" else "left")
        for u in unmodelled:
            listing.add_row(str(u["line"]), u["hlo_name"], u["op"], u["reason"])
        console.print(listing)
