"""``netsim program --hlo MODULE --topology SLICE`` (and program files with ``hlo:``): run, print, JSON."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table

from netsim.analysis.hlo_stats import hlo_summary
from netsim.analysis.program_stats import ProgramStats
from netsim.cli.console import QuietConsole
from netsim.programs.hlo.files import HloProgramFile, load_any_program
from netsim.programs.hlo.run import run_hlo, run_hlo_program
from netsim.programs.run import run_program

__all__ = ["is_hlo", "print_hlo", "run_any"]

SHOWN = 12
"""Collectives listed in the table (all of them with --json)."""


def run_any(file: str | None, hlo: str | None, topology: str | None, clock_hz: float | None, data: str | None, engine: str | None) -> Any:
    """Run a program file of either kind, or an HLO module on a slice."""
    if hlo is not None:
        if file is not None:
            raise ValueError(f"give a program file or --hlo MODULE, not both (got {file} and --hlo {hlo})")
        if topology is None:
            raise ValueError(f"--hlo {hlo}: say which slice it runs on, e.g. --topology tpu-v5e:4x4")
        return run_hlo(hlo, _slice(topology), clock_hz=clock_hz, engine=engine or "auto")
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


def _slice(topology: str) -> Any:
    """``--topology``: a TPU slice, a bundled topology or a file; a bad one is one line that names the option, not the value as a file."""
    from netsim.run import resolve_topology
    from netsim.scenario import ScenarioError
    from netsim.scenario.errors import clipped

    if not topology.strip():
        raise ValueError(f"--topology {topology!r}: name the slice the module runs on, e.g. --topology tpu-v5e:4x4, or a topology file")
    try:
        return resolve_topology(topology, None)
    except ScenarioError as error:
        if (error.source, error.field) != (clipped(topology), "topology"):
            raise  # a topology file that is wrong: the error names the file and its field
        raise ValueError(f"--topology {error.source}: {error.problem}; or a TPU slice such as tpu-v5e:4x4") from None


def is_hlo(result: Any) -> bool:
    """Whether a program's result came from an HLO module."""
    return getattr(result.program, "hlo", None) is not None


def hlo_json(result: Any, stats: ProgramStats) -> str:
    """The run as one JSON object: the program totals, ``collectives`` and the module's facts."""
    return json.dumps(hlo_summary(result, stats), indent=2)


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.4g} us"


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes} B"


def print_hlo(result: Any, stats: ProgramStats) -> None:
    """The run's summary, its collectives (slowest first) and what is not modelled."""
    full = hlo_summary(result, stats)
    summary = full["hlo"]
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
    title = "collectives, slowest first: time of all runs, its closed-form estimate, algorithm netsim's / the compiler's"
    grid = Table(title=title + more, title_justify="left")
    for header in ("hlo_name", "op (group)", "shape", "runs", "time", "estimate", "algorithm"):
        grid.add_column(header, justify="right" if header in ("runs", "time", "estimate") else "left", overflow="fold", no_wrap=header in ("time", "estimate"))
    for e in entries[:SHOWN]:
        shape = f"{e['dtype']}{e['shape']}".replace(" ", "") if isinstance(e["dtype"], str) else f"{len(e['shape'])} arrays, {_size(e['bytes'])}"
        algorithm = e["algorithm"] + (f" / {e['compiler_algorithm']}" if e["compiler_algorithm"] else "")
        grid.add_row(e["hlo_name"], f"{e['op']} ({e['group_size']})", shape, str(e["count"]), _us(e["time_s"]), _us(e["estimate_s"]), algorithm)
    console.print(grid)
    if unmodelled:
        listing = Table(title="not modelled (not timed)", title_justify="left")
        for header in ("line", "hlo_name", "op", "why"):
            listing.add_column(header, justify="right" if header == "line" else "left")
        for u in unmodelled:
            listing.add_row(str(u["line"]), u["hlo_name"], u["op"], u["reason"])
        console.print(listing)
