"""``netsim program FILE``: run a program file and print its table, or its JSON, and write its trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from netsim.cli.console import QuietConsole

if TYPE_CHECKING:
    from netsim.analysis.program_stats import ProgramStats
    from netsim.result import Result

__all__ = ["program", "run_or_exit"]

USER_ERROR, INTERNAL_ERROR = 2, 3
CALIBRATION_HELP = "nominal (the ideal model, the default) or calibrated (measured fixed costs and efficiencies: docs/validation.md); default the file's."


def _fail(message: str, code: int) -> typer.Exit:
    lines = "\n".join(f"error: {line}" for line in message.split("\n"))  # a file's mistakes, one a line
    Console(stderr=True, highlight=False, soft_wrap=True).print(lines, markup=False)
    return typer.Exit(code)


def _time(seconds: float | None) -> str:
    """A time in the units ``netsim run`` uses."""
    from netsim.network.units import format_seconds

    return "-" if seconds is None else format_seconds(seconds)


def _data_of(file: str | None) -> str | None:
    """A program file's ``data:`` field, if it can be read (None otherwise: an HLO module is timing only)."""
    from netsim.scenario.yaml_files import read_yaml

    if file is None:
        return "none"
    try:
        data = read_yaml(Path(file))
        return "none" if "hlo" in data else data.get("data", "values")  # a file naming a module runs timing only
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def run_or_exit(
    file: str | None,
    data: str | None = None,
    engine: str | None = None,
    *,
    hlo: str | None = None,
    topology: str | None = None,
    clock_hz: float | None = None,
    calibration: str | None = None,
    require_fit: bool = False,
    sync_collectives: str | None = None,
) -> Result:
    """Run a program file (or an HLO module on a slice), or exit with one line (2 for a user's mistake, 3 for a bug in netsim).

    ``require_fit``: an HLO module whose HBM peak exceeds a chip's is refused before it plays."""
    from netsim.checks.memory import memory_advice
    from netsim.cli.hlo import run_any  # the HLO and program packages: imported when a program runs
    from netsim.engine import EngineError

    try:
        return run_any(file, hlo, topology, clock_hz, data, engine, calibration, require_fit, sync_collectives)
    except EngineError as error:
        raise _fail(f"internal error in netsim while running {file}: {error}", INTERNAL_ERROR) from None
    except MemoryError:
        timing_only = (data or _data_of(file)) == "none"
        advice = memory_advice(timing_only, "fewer devices or ops")
        raise _fail(f"{file or hlo}: ran out of memory{' (timing only)' if timing_only else ''}; {advice}", USER_ERROR) from None
    except ValueError as error:
        if require_fit and getattr(error, "field", None) == "require_fit" and not _data_asks_fit(file):  # the option's check, named as such
            raise _fail(f"{error.source}: {error.problem} (--require-fit)", USER_ERROR) from None  # type: ignore[attr-defined]
        raise _fail(str(error), USER_ERROR) from None


def _data_asks_fit(file: str | None) -> bool:
    """Whether a program file asks ``require_fit: true`` itself."""
    from netsim.scenario.yaml_files import read_yaml

    try:
        data = read_yaml(Path(file)) if file is not None else None
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("require_fit") is True


def program(
    file: Annotated[str | None, typer.Argument(metavar="FILE", help="Program YAML file, e.g. scenarios/programs/allgather_matmul.yaml")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    trace: Annotated[
        str | None, typer.Option("--trace", metavar="FILE", help="Write a Chrome/Perfetto trace (a compute track per device) to this file.")
    ] = None,
    data: Annotated[
        str | None, typer.Option("--data", metavar="DATA", help="values (checked against NumPy) or none (timing only); default the file's.")
    ] = None,
    engine: Annotated[str | None, typer.Option("--engine", metavar="ENGINE", help="auto, processes or fast: same numbers.")] = None,
    hlo: Annotated[
        str | None, typer.Option("--hlo", metavar="MODULE", help="Simulate a compiled module's HLO text (compiled.as_text()) instead of a program file.")
    ] = None,
    topology: Annotated[str | None, typer.Option("--topology", metavar="SLICE", help="With --hlo: the slice, e.g. tpu-v5e:4x4.")] = None,
    clock_hz: Annotated[
        float | None, typer.Option("--clock-hz", metavar="HZ", help="With --hlo: the chip clock that turns estimated_cycles into time.")
    ] = None,
    calibration: Annotated[str | None, typer.Option("--calibration", metavar="MODE", help=CALIBRATION_HELP)] = None,
    require_fit: Annotated[bool, typer.Option("--require-fit", help="Exit 2 when a device's arrays do not fit in its chip's HBM.")] = False,
    sync_collectives: Annotated[
        str | None,
        typer.Option(
            "--sync-collectives",
            metavar="MODE",
            help="An HLO module's collectives written synchronous: overlap (the work after one that does not read it runs beside it; "
            "the default for a TPU-compiled module) or in_order (each holds the device's instruction stream).",
        ),
    ] = None,
) -> None:
    """Run a program (collectives and compute on a sharded mesh) and print its time, overlap and ops."""
    from netsim.analysis.program_stats import program_stats
    from netsim.cli.hlo import estimate_of, hlo_json, is_hlo, print_hlo
    from netsim.cli.terms import calibration_record
    from netsim.cli.trace import save_trace
    from netsim.destinations import StagedFile, all_or_nothing, check_file
    from netsim.scenario.inputs import files_read

    try:
        if trace is not None:
            check_file("--trace", trace, inputs=files_read(file, hlo))
    except ValueError as error:
        raise _fail(str(error), USER_ERROR) from None
    result = run_or_exit(
        file, data, engine, hlo=hlo, topology=topology, clock_hz=clock_hz, calibration=calibration, require_fit=require_fit, sync_collectives=sync_collectives
    )
    stats = program_stats(result)
    if require_fit and stats.memory.get("fits") is not True:  # (an HLO module: checked once played)
        raise _fail(f"{file or hlo}: {stats.memory['note']} (--require-fit)", USER_ERROR)
    if trace is not None:
        try:
            staged = StagedFile(trace)
            with all_or_nothing(staged):
                save_trace(result, staged.path)
        except OSError as error:
            raise _fail(f"cannot write {trace}: {error.strerror}", USER_ERROR) from None
    if json_output:
        calibrated = calibration_record(result.topology_obj)
        print(hlo_json(result, stats) if is_hlo(result) else json.dumps({**stats.to_dict(), **calibrated, "estimate": estimate_of(result)}, indent=2))
        return
    if is_hlo(result):
        print_hlo(result, stats)
    else:
        _print(stats, result.topology_obj)
    if trace is not None:
        QuietConsole(highlight=False).print(f"trace written to {trace}")


def _chip(facts: dict) -> str:
    """The chip's peak and HBM bandwidth, or "unknown" for a figure it does not give (never 0)."""
    peak, hbm = facts["peak_flops"], facts["hbm_bandwidth_Bps"]
    return f"{f'{peak / 1e12:.4g} TFLOP/s' if peak else 'FLOP/s unknown'}, {f'HBM {hbm / 1e9:.4g} GB/s' if hbm else 'HBM unknown'}"


def _at(facts: dict) -> str:
    """Which fraction of the peak the roofline counts, when not the peak itself (a calibrated chip)."""
    efficiency = facts.get("compute_efficiency", 1.0)
    return "" if efficiency == 1 else f"; the roofline counts {efficiency:.3g} of peak (calibrated)"


def _played_on(symmetry: dict) -> str:
    """What a run played on representatives played, in words."""
    axes = ", ".join(map(str, symmetry["axes"]))
    return (
        f"{symmetry['devices_played']:,} of {symmetry['devices']:,} devices ({symmetry['transfers_played']:,} transfers): the slice's "
        f"shifts along axes {axes} map each onto {symmetry['each_stands_for'] - 1:,} others doing the same (symmetry: false plays them all)"
    )


def _repeat_lines(repeats: dict | None) -> list[str]:
    """A line per ``repeat:`` block extended (the rows below are of the trips played)."""
    from netsim.programs.periods import Repetition

    if repeats is None:
        return []
    blocks = [Repetition(**{k: v for k, v in block.items() if k != "per_trip_s"}) for block in repeats["blocks"]]
    note = "; the rows below are of the trips played" if any(b.played < b.trips for b in blocks) else ""
    return [f"block {i}: {block.describe()}" + (note if i == len(blocks) else "") for i, block in enumerate(blocks, 1)]


def _print(stats: ProgramStats, topology: Any = None) -> None:
    from rich.table import Table

    from netsim.checks.program_memory import peak_line
    from netsim.cli.console import wrap_prose
    from netsim.cli.program_table import op_lines, ops_table
    from netsim.cli.terms import calibration_rows, launch_rows

    console = QuietConsole(highlight=False)
    table = Table(title=f"netsim program: {stats.name}", show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value")
    facts = stats.devices_compute
    rows = [
        ("topology", stats.topology),
        ("time", _time(stats.time_s)),
        ("compute (busiest device)", _time(stats.compute_s)),
        *launch_rows(stats.launches_s),
        ("communication in flight", _time(stats.communication_s)),
        ("exposed communication", _time(stats.exposed_communication_s) + (f" (device {stats.critical_device})" if stats.critical_device is not None else "")),
        ("why", stats.why),
        ("chip", _chip(facts) + _at(facts)),
        *calibration_rows(topology),
        *([("HBM per device", peak_line(stats.memory))] if stats.memory else []),
        *(("repeat extended", line) for line in _repeat_lines(stats.repeats)),
        *([("played on", _played_on(stats.symmetry))] if stats.symmetry else []),
        ("verified", f"{stats.verified}: {stats.verification}"),
    ]
    for label, value in rows:
        table.add_row(label, value)
    console.print(table)
    console.print(ops_table(stats))
    console.print("why, op by op", markup=False)
    for line in op_lines(stats):
        console.print(wrap_prose("  " + line, console.width), markup=False, soft_wrap=True)
    if stats.checks:
        checks = Table(title="values against NumPy's unsharded computation (relative to the largest value)", title_justify="left")
        for header in ("array", "largest difference", "tolerance"):
            checks.add_column(header, justify="left" if header == "array" else "right")
        for name, check in stats.checks.items():
            checks.add_row(name, f"{check['difference']:.3g}", f"{check['tolerance']:.3g}")
        console.print(checks)
