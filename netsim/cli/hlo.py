"""``netsim program --hlo MODULE --topology SLICE`` (and program files with ``hlo:``): run, print, JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.table import Table

from netsim.cli.console import NAME_LIMIT, QuietConsole, clip_name

if TYPE_CHECKING:
    from netsim.analysis.program_stats import ProgramStats

__all__ = ["estimate_of", "is_hlo", "print_hlo", "run_any"]

SHOWN = 12
"""Collectives listed in the table (all of them with --json)."""


def run_any(
    file: str | None,
    hlo: str | None,
    topology: str | None,
    clock_hz: float | None,
    data: str | None,
    engine: str | None,
    calibration: str | None = None,
    require_fit: bool = False,
    sync_collectives: str | None = None,
) -> Any:
    """Run a program file of either kind, or an HLO module on a slice (``calibration``: the file's unless given; ``require_fit``: checked before it plays;
    ``sync_collectives``: an HLO module's, see :data:`netsim.programs.hlo.run.SYNC_COLLECTIVES`)."""
    from netsim.network.calibration import calibrate, check_calibration
    from netsim.programs.hlo.files import HloProgramFile, load_any_program  # (here: `netsim run` need not import them)
    from netsim.programs.hlo.run import SYNC_COLLECTIVES, run_hlo, run_hlo_program
    from netsim.programs.run import run_program
    from netsim.scenario import ScenarioError

    if calibration is not None:
        check_calibration(calibration)
    if sync_collectives is not None and sync_collectives not in SYNC_COLLECTIVES:
        raise ValueError(f"--sync-collectives: {' or '.join(SYNC_COLLECTIVES)}, not {sync_collectives!r}")
    if hlo is not None:
        if file is not None:
            raise ValueError(f"give a program file or --hlo MODULE, not both (got {file} and --hlo {hlo})")
        if topology is None:
            raise ValueError(f"--hlo {hlo}: say which slice it runs on, e.g. --topology tpu-v5e:4x4")
        where = _slice(topology)
        where = calibrate(where, calibration) if calibration is not None else where
        try:
            return run_hlo(hlo, where, clock_hz=clock_hz, engine=engine or "auto", require_fit=require_fit, sync_collectives=sync_collectives)
        except ScenarioError as error:
            if error.field == "require_fit":
                raise ValueError(f"{hlo}: {error.problem} (--require-fit)") from None
            raise
    if file is None:
        raise ValueError("give a program file, e.g. scenarios/programs/allgather_matmul.yaml, or --hlo MODULE --topology SLICE")
    if topology is not None or clock_hz is not None:
        raise ValueError("--topology and --clock-hz go with --hlo; a program file names its own topology")
    loaded = load_any_program(file)
    if isinstance(loaded, HloProgramFile):
        if data == "values":
            raise ValueError(f"{file}: an HLO module runs timing only (--data none)")
        if require_fit and not loaded.require_fit:
            loaded = loaded.model_copy(update={"require_fit": True})
        if sync_collectives is not None:
            loaded = loaded.model_copy(update={"sync_collectives": sync_collectives})
        where = calibrate(loaded.topology_obj, calibration) if calibration is not None else None
        return run_hlo_program(loaded, engine=engine, topology=where)
    loaded = loaded.model_copy(update={"require_fit": True}) if require_fit else loaded  # refused before it plays, not after
    return run_program(loaded.with_calibration(calibration) if calibration is not None else loaded, data=data, engine=engine)


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
    from netsim.analysis.hlo_stats import hlo_summary
    from netsim.analysis.step_report import step_report
    from netsim.cli.terms import calibration_record

    summary = hlo_summary(result, stats)
    return json.dumps({**summary, "step": step_report(result).to_dict(), "estimate": estimate_of(result), **calibration_record(result.topology_obj)}, indent=2)


def estimate_of(result: Any) -> dict[str, int]:
    """The before-run estimate of a program's (or HLO module's) run: what was checked against the memory available."""
    from netsim.programs.run import run_estimate, values_bytes

    lowered = result.program.lowered
    return run_estimate(lowered, values_bytes(lowered) if result.verified else 0)


def _us(seconds: float | None) -> str:
    from netsim.network.units import format_seconds

    return "-" if seconds is None else format_seconds(seconds)


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes} B"


def _collectives_table(entries: list[dict[str, Any]], more: str, compiler: bool, width: int = 80) -> Table:
    """The collectives, slowest first: time of all runs (and with the other algorithms, when compared), closed form, its kind; a shape is never split."""
    from rich import box

    from netsim.cli.program_table import KIND_WORDS, short_seconds

    compared = any(e.get("other_time_s") is not None for e in entries)
    other = "own" if compiler else "compiler"
    title = f"collectives, slowest first: time of all runs with {'the compiler' if compiler else 'netsim'}'s algorithms"
    title += (f", with {'netsim' if compiler else 'the compiler'}'s, and the closed form" if compared else ", and its closed form") + more
    grid = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    repeated = any(e["count"] > 1 for e in entries)  # a column of 1s says nothing: the room goes to the names
    headers = ("hlo_name", "op (group)", "shape", *(("runs",) if repeated else ()), "time", *((other,) if compared else ()), "estimate", "kind")
    rows = []
    for e in entries:
        shape = f"{e['dtype']}{e['shape']}".replace(" ", "") if isinstance(e["dtype"], str) else f"{len(e['shape'])} arrays"
        kind = KIND_WORDS.get(e["estimate_kind"], e["estimate_kind"])
        times = (short_seconds(e["time_s"]), *((short_seconds(e["other_time_s"]),) if compared else ()), short_seconds(e["estimate_s"]))
        rows.append([e["hlo_name"], f"{e['op']} ({e['group_size']})", shape, *((str(e["count"]),) if repeated else ()), *times, kind])
    # numbers and shapes on one line; op (group) and kind wrap between words; the name takes what is left, cut with an ellipsis
    wrapped = ("op (group)", "kind")

    def needs(k: int, header: str) -> int:
        cells = [header, *(r[k] for r in rows)]
        return max(len(w) for c in cells for w in c.split()) if header in wrapped else max(len(c) for c in cells)

    others = sum(needs(k, h) for k, h in enumerate(headers) if k) + 2 * (len(headers) - 1)
    room = max(10, min(NAME_LIMIT, width - others))
    for header in headers:
        text = header in ("hlo_name", *wrapped)
        grid.add_column(header, justify="left" if text else "right", no_wrap=header not in wrapped, overflow="fold" if header in wrapped else "ellipsis")
    for row in rows:
        grid.add_row(clip_name(row[0], room), *row[1:])
    return grid


def _strategy(config: str) -> str:
    """The compiler's algorithm in words (``StrategyRing{colors:1 phases:1}``), not its raw JSON.

    Examples
    --------
    >>> _strategy('{"emitter":"E","strategy":"StrategyRing","debug":"StrategyRing{colors:1 phases:1 cores:{4}}"}')
    'StrategyRing{colors:1 phases:1}'
    """
    from netsim.programs.hlo.strategies import read_algorithm

    read = read_algorithm(config)
    return clip_name(read.name if read is not None and read.name else str(config))


def _chip(facts: dict) -> str:
    peak, hbm = facts["peak_flops"], facts["hbm_bandwidth_Bps"]
    return f"{f'{peak / 1e12:.4g} TFLOP/s' if peak else 'FLOP/s unknown'}, {f'HBM {hbm / 1e9:.4g} GB/s' if hbm else 'HBM unknown'}"


def _compute_from(summary: dict) -> str:
    unknown = summary["compute_unknown"]
    if unknown:
        return f"unknown: the chip has no figures ({unknown} compute step(s) not timed; the communication is simulated)"
    if summary["clock_hz"]:
        return f"estimated_cycles at {summary['clock_hz']:.4g} Hz where given, else the roofline"
    return "the roofline of each step's FLOPs and bytes"


def print_hlo(result: Any, stats: ProgramStats) -> None:
    """The run's summary, its collectives (slowest first) and what is not modelled."""
    from netsim.analysis.hlo_stats import hlo_summary
    from netsim.checks.program_memory import peak_line
    from netsim.cli.terms import calibration_rows, launch_rows

    full = hlo_summary(result, stats)
    summary = full["hlo"]
    from netsim.cli.console import wrap_prose

    console = QuietConsole(highlight=False)
    table = Table(title=f"netsim program: {stats.name}", show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value")
    facts = stats.devices_compute
    unmodelled = summary["unmodelled"]
    rows = [
        ("module", f"{summary['file']} ({summary['devices']} devices)"),
        ("topology", stats.topology),
        ("compiled by", summary["compiler"] or "-"),
        ("dtypes timed", summary["dtypes"]),
        ("sync collectives", summary["sync_collectives"]),
        ("placement", summary["placement"]),
        ("time", _us(stats.time_s) + (" (long loops extended; the rows below are of the trips played)" if summary["loops_extended"] else "")),
        ("compute (busiest device)", _us(stats.compute_s)),
        *launch_rows(stats.launches_s),
        ("communication in flight", _us(stats.communication_s)),
        ("exposed communication", _us(stats.exposed_communication_s)),
        ("why", stats.why),
        ("chip", _chip(facts)),
        *calibration_rows(result.topology_obj),
        ("compute from", _compute_from(summary)),
        *([("HBM per device", peak_line(stats.memory))] if stats.memory else []),
        ("bytes per mesh axis", ", ".join(f"{axes}: {_size(b)}" for axes, b in summary["axis_bytes"].items()) or "-"),
        ("not modelled", f"{len(unmodelled)} instruction(s), listed below" if unmodelled else "nothing: every instruction is timed"),
        *(("loop extended", line) for line in (summary["loops_extended"] and result.program.extension.describe()) or ()),
        *calibration_rows(result.topology_obj),
        ("verified", stats.verification),
    ]
    for label, value in rows:
        table.add_row(label, value)
    console.print(table)
    console.print(wrap_prose(result.report().table(), console.width), markup=False, soft_wrap=True)
    entries = full["collectives"]
    more = f" (first {SHOWN} of {len(entries)}; all with --json)" if len(entries) > SHOWN else ""
    compiler = summary["algorithms"] == "compiler"
    console.print(_collectives_table(entries[:SHOWN], more, compiler, console.width))
    console.print("why, collective by collective", markup=False)
    for e in entries[:SHOWN]:
        named = e["note"].partition(": ")[0] if compiler and e["compiler_algorithm"] else ""
        if compiler:
            algorithm = e["algorithm"] + (f" (the compiler's: {named})" if named else " (no compiler algorithm)")
        else:
            algorithm = e["algorithm"] + (f" (the compiler's: {_strategy(e['compiler_algorithm'])})" if e["compiler_algorithm"] else "")
        runs = f", first of {e['count']} runs" if e["count"] > 1 else ""
        line = f"  {clip_name(e['hlo_name'])} ({algorithm}, {_size(e['bytes'])} per device{runs}): {e['why']}"
        console.print(wrap_prose(line, console.width), markup=False, soft_wrap=True)
    if unmodelled:
        listing = Table(title="not modelled as what they are (each row says how it is timed, if at all)", title_justify="left")
        for header in ("line", "hlo_name", "op", "why"):
            listing.add_column(header, justify="right" if header == "line" else "left")
        for u in unmodelled:
            listing.add_row(str(u["line"]), clip_name(u["hlo_name"]), clip_name(u["op"]), u["reason"])
        console.print(listing)
