"""The ``netsim`` command line: parse arguments, call the library, print, set the exit code.

Exit codes: 0 success; 1 a check failed (``run --check``) or some points of a sweep failed
(their errors are in results.csv); 2 a user error (bad file, bad argument); 3 an internal
error (a bug in netsim, with a request to report it); 130 on Ctrl-C and 143 on SIGTERM, files
staged on the way removed. A reader that closes the pipe early
(``netsim run ... | head -1``) ends the command quietly.
"""

from __future__ import annotations

import atexit
import gc
import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from typer.core import TyperArgument

from netsim.cli.console import CHECK_FAILED, INTERNAL_ERROR, USER_ERROR
from netsim.cli.console import QuietConsole as _Console
from netsim.cli.console import Terminated as _Terminated
from netsim.cli.console import echo as _echo
from netsim.cli.console import fail as _fail
from netsim.cli.console import interrupted_code as _interrupted_code
from netsim.cli.console import output_lost as _output_lost
from netsim.cli.console import plain_text_where_needed as _plain_text_where_needed
from netsim.cli.console import quiet_exit as _quiet_exit
from netsim.cli.console import stop_pending as _stop_pending
from netsim.cli.console import terminate_cleanly as _terminate_cleanly
from netsim.cli.console import warnings_in_one_line as _warnings_in_one_line
from netsim.cli.program import CALIBRATION_HELP
from netsim.cli.program import program as _program_command
from netsim.cli.sweep_command import sweep as _sweep_command
from netsim.cli.teach_command import teach as _teach_command

if TYPE_CHECKING:
    from rich.table import Table

# Each command imports what it needs when it runs (NumPy, NetworkX, the engine, the
# HLO and program packages, matplotlib): --version, -h and schema load none of them
# (tests/test_cli_startup.py holds that).

# An argument's metavar (SCENARIO, STUDY, FILE) says what it takes: no "<str>" after it in help.
TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]

EXIT_CODES = (
    "Exit codes: 0 success; 1 a check failed (run --check) or sweep points failed;"
    " 2 a user error (the message names the file, the field and the fix); 3 an internal error;"
    " 130 Ctrl-C; 143 SIGTERM."
)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="netsim: simulate collectives (all_gather, psum_scatter, psum, all_to_all, ppermute) on TPU-style interconnects.",
    epilog=EXIT_CODES,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

T = TypeVar("T")


SCENARIO_HELP = "Scenario YAML file, e.g. scenarios/allgather_ring8.yaml"


def _version(value: bool) -> None:
    if value:
        from netsim.version import __version__

        print(f"netsim {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print netsim's version and exit.")] = False,
) -> None:
    """Simulate collective communication on rings and tori."""


@app.command()
def run(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help=SCENARIO_HELP)],
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object (shape: netsim schema run).")] = False,
    trace: Annotated[str | None, typer.Option("--trace", metavar="FILE", help="Write a Chrome/Perfetto trace (trace-event JSON) to this file.")] = None,
    output: Annotated[
        str | None,
        typer.Option("-o", "--output", metavar="DIR", help="Write result.json, links.csv, devices.csv and scenario.yaml into this directory."),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine", metavar="ENGINE", help="auto, processes (links, devices, compute units as SimPy processes) or fast (the fast player): same numbers."
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace an --output folder holding what netsim wrote there (an earlier run's files);"
            " a folder holding anything else is refused, naming it, and nothing is deleted.",
        ),
    ] = False,
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 unless the simulated time equals the scenario's expected.time_s (to a relative 1e-9).")
    ] = False,
    calibration: Annotated[str | None, typer.Option("--calibration", metavar="MODE", help=CALIBRATION_HELP)] = None,
) -> None:
    """Simulate a scenario and print the output check, the timing, its estimates and statistics."""
    from netsim.cli.files import write_run_files
    from netsim.cli.report import to_json
    from netsim.destinations import check_file, check_folder
    from netsim.run import ENGINE_MODES
    from netsim.scenario.inputs import files_read

    if engine is not None and engine not in ENGINE_MODES:
        raise _fail(f"--engine {engine!r}: use one of {', '.join(ENGINE_MODES)}", USER_ERROR)
    from netsim.network.calibration import CALIBRATION_MODES

    if calibration is not None and calibration not in CALIBRATION_MODES:
        raise _fail(f"--calibration {calibration!r}: use nominal or calibrated", USER_ERROR)
    try:
        if output is not None:
            check_folder("--output", output, force, inputs=[scenario])  # (any file netsim did not write is refused whole)
        if trace is not None:
            check_file("--trace", trace, inputs=files_read(scenario), outside=output)
    except ValueError as error:
        raise _fail(str(error), USER_ERROR) from None
    loaded, result = _simulated(scenario, engine, calibration)
    if check and loaded.expected is None:
        raise _fail(f"--check: {scenario} has no expected: section (e.g. expected: {{time_s: {result.time!r}}})", USER_ERROR)
    text = _guarded(scenario, to_json, result) if json_output else None
    try:
        write_run_files(result, loaded, output=output, trace=trace, force=force)
    except OSError as error:
        raise _fail(f"cannot write {error.filename or output or trace}: {error.strerror}", USER_ERROR) from None
    except ValueError as error:  # a destination changed since it was checked
        raise _fail(str(error), USER_ERROR) from None
    if text is not None:
        _echo(text)
    else:
        _print_report(loaded, result, trace, output)
    if check:
        _check_expected(scenario, loaded.expected.time_s, result.time)


def _check_expected(scenario: str, expected_s: float, time_s: float) -> None:
    """Exit 1, naming both times, when ``time_s`` differs from ``expected_s`` by more than a relative 1e-9."""
    if not math.isclose(time_s, expected_s, rel_tol=1e-9, abs_tol=0.0):
        raise _fail(f"check failed: {scenario}: simulated {time_s!r} s, expected.time_s is {expected_s!r} s", CHECK_FAILED)
    print(f"check passed: simulated {time_s!r} s equals expected.time_s", file=sys.stderr)


def _print_report(loaded: Any, result: Any, trace: str | None, output: str | None) -> None:
    from rich.table import Table

    from netsim.analysis.stats import run_stats
    from netsim.cli.report import device_table, link_table, step_table, summary_rows
    from netsim.cli.tables import drop_uniform

    console = _Console(highlight=False)
    table = Table(title=f"netsim run: {loaded.name}", show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value")
    for label, value in summary_rows(result):
        table.add_row(label, value)
    console.print(table)
    stats = run_stats(result)
    for title, (headers, rows) in (
        ("busiest links", link_table(result)),
        ("devices" + _first(len(stats.devices), 16), drop_uniform(*device_table(result), ("input", "output"))),
        ("steps" + _first(len(stats.steps), 16), step_table(result)),
    ):
        console.print(_grid(title, headers, rows, console.width))
    for label, path in (("trace", trace), ("output", output)):
        if path is not None:
            console.print(f"{label} written to {path}")


def _first(total: int, shown: int) -> str:
    return f" (first {shown} of {total}; all of them with --json or --output)" if total > shown else ""


def _grid(title: str, headers: list[str], rows: list[list[str]], width: int | None = None) -> Table:
    from netsim.cli.tables import grid

    return grid(title, headers, rows, width)


@app.command()
def estimate(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help=SCENARIO_HELP)],
    json_output: Annotated[bool, typer.Option("--json", help="Print the estimates as one JSON object (shape: netsim schema estimate).")] = False,
    calibration: Annotated[str | None, typer.Option("--calibration", metavar="MODE", help=CALIBRATION_HELP)] = None,
) -> None:
    """Print a scenario's closed-form estimates without simulating (instant for any size)."""
    from rich.table import Table

    from netsim.analysis.why import estimate_scenario
    from netsim.cli.report import estimate_rows, estimate_table, estimate_to_dict
    from netsim.network.calibration import CALIBRATION_MODES
    from netsim.scenario import load_scenario

    if calibration is not None and calibration not in CALIBRATION_MODES:
        raise _fail(f"--calibration {calibration!r}: use nominal or calibrated", USER_ERROR)
    try:
        loaded = load_scenario(scenario, build_topology=False)
        loaded = loaded.with_calibration(calibration) if calibration is not None else loaded
        mine, others = estimate_scenario(loaded)
    except (ValueError, MemoryError) as error:
        raise _fail(str(error), USER_ERROR) from None
    if json_output:
        _echo(json.dumps(estimate_to_dict(loaded, mine, others), indent=2, allow_nan=False))
        return
    console = _Console(highlight=False)
    table = Table(title=f"netsim estimate: {loaded.name} (closed forms, nothing simulated)", show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value")
    for label, value in estimate_rows(loaded, mine):
        table.add_row(label, value)
    console.print(table)
    from netsim.cli.tables import split_column

    headers, rows, formulas = split_column(*estimate_table(others, loaded.resolved_algorithm), "formula")
    short = {"regime": lambda cell: cell.replace("-bound", ""), "kind": lambda cell: cell.replace("_bound", "")}  # 80 columns
    rows = [[short.get(header, str)(cell) for header, cell in zip(headers, row, strict=True)] for row in rows]
    headers = [{"latency term": "α", "bandwidth term": "bytes/B", "regime": "bound by"}.get(h, h) for h in headers]
    console.print(_grid(f"every algorithm for {mine.collective} on this layout (* = the scenario's)", headers, rows))
    console.print("formulas" if formulas else "")
    from netsim.cli.console import wrap_prose

    for line in formulas:
        console.print(wrap_prose(f"  {line}", console.width), markup=False, soft_wrap=True)


def _guarded(scenario: str, work: Callable[..., T], *args: Any) -> T:
    """Run ``work(*args)`` for a scenario, turning every failure into one line and the CLI's exit code."""
    from netsim.engine import EngineError

    try:
        return work(*args)
    except EngineError as error:
        raise _fail(f"internal error in netsim while running {scenario}: {error}", INTERNAL_ERROR) from None
    except MemoryError as error:
        from netsim.checks.memory import memory_advice

        advice = memory_advice(getattr(error, "timing_only", False))
        raise _fail(f"{scenario}: ran out of memory ({error or 'MemoryError'}); {advice}", USER_ERROR) from None
    except ValueError as error:
        raise _fail(str(error), USER_ERROR) from None
    except Exception as error:  # a bug in netsim: report it, never a traceback
        raise _fail(
            f"internal error in netsim while running {scenario}: {type(error).__name__}: {error}; this is a bug in netsim, please report it", INTERNAL_ERROR
        ) from None


@contextmanager
def _progress(description: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """A rich progress bar on stderr while a long piece of work runs (plain lines now and then when stderr is not a terminal).

    Yields ``update(done)``; with ``total=None`` the bar pulses (work of unknown length, such as a simulation).
    """
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        from netsim.cli.console import progress_lines

        yield progress_lines(description, total)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn("{task.description}"), BarColumn(), *([MofNCompleteColumn()] if total else []), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda done: bar.update(task, completed=done)


class _OutOfMemory(MemoryError):
    """Memory ran out while a scenario ran; ``timing_only``: it already was (``data: none``)."""

    def __init__(self, error: MemoryError, timing_only: bool) -> None:
        super().__init__(str(error))
        self.timing_only = timing_only


def _load_and_simulate(scenario: str, engine: str | None = None, calibration: str | None = None) -> tuple[Any, Any]:
    from netsim.collectives import simulate
    from netsim.scenario import load_scenario

    loaded = load_scenario(scenario)
    if engine is not None:
        loaded = loaded.model_copy(update={"engine": engine})
    if calibration is not None:
        loaded = loaded.with_calibration(calibration)
    with _progress(f"simulating {loaded.name}"):
        try:
            return loaded, simulate(loaded)
        except MemoryError as error:
            raise _OutOfMemory(error, loaded.data == "none") from None


def _simulated(scenario: str, engine: str | None = None, calibration: str | None = None) -> tuple[Any, Any]:
    """Load and run a scenario (on ``engine`` and ``calibration`` if given): (the scenario, its result), or exit with one line."""
    return _guarded(scenario, _load_and_simulate, scenario, engine, calibration)


def _drawn(scenario: str, output: str, suffixes: tuple[str, ...], draw: Callable[[Any, Path], Any]) -> tuple[Any, str]:
    """Check the file name, run the scenario and ``draw(result, path)`` into ``output``, all or nothing: (result, path written)."""
    from netsim.cli.program import run_or_exit
    from netsim.destinations import StagedFile, all_or_nothing, check_file
    from netsim.scenario.inputs import files_read
    from netsim.scenario.yaml_files import is_program_file

    if not output.lower().endswith(suffixes):
        raise _fail(f"--output {output!r}: the file name must end in {', '.join(suffixes)}", USER_ERROR)
    try:
        check_file("--output", output, inputs=files_read(scenario))
    except ValueError as error:
        raise _fail(str(error), USER_ERROR) from None
    if is_program_file(scenario):
        result = run_or_exit(scenario)
    else:
        _, result = _simulated(scenario)

    def staged_draw(result: Any) -> str:
        staged = StagedFile(output)
        try:
            with all_or_nothing(staged):
                draw(result, staged.path)
        except OSError as error:
            raise ValueError(f"cannot write {output}: {error.strerror or error}") from None
        except ValueError as error:  # name the destination, never the file staged beside it
            raise ValueError(str(error).replace(str(staged.path), output)) from None
        return output

    try:
        return result, _guarded(scenario, staged_draw, result)
    except OSError as error:  # the folder vanished since it was checked
        raise _fail(f"cannot write {output}: {error.strerror}", USER_ERROR) from None


@app.command()
def explain(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help=SCENARIO_HELP)],
    device: Annotated[int | None, typer.Option("--device", metavar="N", help="Follow this device (0-based) step by step.")] = None,
    step: Annotated[
        int | None, typer.Option("--step", metavar="N", help="Open this step (1-based, as printed); with --device, that device's part of it.")
    ] = None,
) -> None:
    """Explain the algorithm step by step: who sends what to whom, who holds what, and what each step costs.

    Beyond 32 devices: a summary by step, phase, axis and a few representative devices.
    """
    from netsim.teaching.explain import explain as explain_text
    from netsim.teaching.explain_scale import device_view, step_view

    if device is not None and device < 0:
        raise _fail(f"--device {device}: devices are numbered from 0", USER_ERROR)
    if step is not None and step < 1:
        raise _fail(f"--step {step}: steps are numbered from 1", USER_ERROR)
    from netsim.cli.console import echo_prose

    _, result = _simulated(scenario)
    if device is not None:
        echo_prose(_guarded(scenario, device_view, result, device, step))
    elif step is not None:
        echo_prose(_guarded(scenario, step_view, result, step))
    else:
        echo_prose(_guarded(scenario, explain_text, result))


@app.command()
def animate(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help=SCENARIO_HELP)],
    output: Annotated[
        str, typer.Option("-o", "--output", metavar="FILE", help="File to write: .gif, .mp4 (needs ffmpeg) or .html (a page drawing the run's events).")
    ],
    frames: Annotated[
        int | None,
        typer.Option(
            "--frames",
            metavar="N",
            min=2,
            max=300,
            help="Number of frames (2 to 300), at evenly spaced simulated times; default 40, or fewer where a frame draws much (a minute at most).",
        ),
    ] = None,
    fps: Annotated[float, typer.Option("--fps", metavar="FPS", min=0.1, max=60.0, help="Frames per second when played.")] = 4.0,
) -> None:
    """Animate a scenario: devices, their buffers filling up, and chunks moving along the links."""
    from netsim.scenario import load_scenario
    from netsim.teaching.animate import FORMATS
    from netsim.teaching.animate_axes import animation as make_animation
    from netsim.teaching.views import check_drawable, check_frames, drawn_elements, frames_allowed, per_axis

    topology = _guarded(scenario, lambda: load_scenario(scenario).topology_obj)
    chosen: list[int] = []

    def count_frames(elements: int) -> None:  # before drawing anything: the frames asked for, or the default that fits
        if frames is not None:
            check_frames(frames, elements, topology.name, scenario)
        chosen.append(frames if frames is not None else max(2, min(40, frames_allowed(elements))))

    def check() -> None:  # before simulating
        check_drawable(topology, scenario)
        if per_axis(topology):
            count_frames(drawn_elements(topology))

    page = output.lower().endswith(".html")  # the browser player: the run's events, no frames drawn
    if not page:
        _guarded(scenario, check)

    def draw(result: Any, path: Any) -> Any:
        if page:
            from netsim.teaching.page import standalone_page

            return Path(path).write_text(standalone_page(result), encoding="utf-8")
        if not chosen:
            count_frames(drawn_elements(topology, result.leaves[0].schedule))
        with _progress("drawing frames", chosen[0]) as update:
            return make_animation(result, frames=chosen[0], fps=fps).save(path, progress=lambda done, total: update(done))

    result, path = _drawn(scenario, output, FORMATS, draw)
    what = "the browser player with the run's events" if page else f"{chosen[0]} frames"
    print(f"wrote {path} ({what}, {result.time * 1e6:.6g} us simulated)")


@app.command()
def timeline(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help=SCENARIO_HELP)],
    output: Annotated[str, typer.Option("-o", "--output", metavar="FILE", help="Image to write: .png, .svg or .pdf.")],
) -> None:
    """Draw a Gantt chart of a scenario (or a program): one row per link, one bar per message on it, and a row per compute unit."""
    from netsim.teaching.timeline import save_timeline

    _, path = _drawn(scenario, output, (".png", ".svg", ".pdf"), lambda r, path: save_timeline(r, path))
    print(f"wrote {path}")


@app.command()
def schema(
    command: Annotated[str, typer.Argument(metavar="COMMAND", help="run, estimate, sweep or program")],
) -> None:
    """Print the JSON Schema of what COMMAND --json prints."""
    from netsim.cli.schema import schema as json_schema

    try:
        _echo(json.dumps(json_schema(command), indent=2))
    except ValueError as error:
        raise _fail(str(error), USER_ERROR) from None


app.command(name="program")(_program_command)
app.command(name="sweep")(_sweep_command)
app.command(name="teach")(_teach_command)


def main() -> None:
    """Entry point of the ``netsim`` script."""
    _plain_text_where_needed()
    _warnings_in_one_line()
    _terminate_cleanly()
    atexit.register(gc.freeze)  # the objects left at exit need no collection: the interpreter's last ones took ~0.15 s of a small run
    try:
        app()
        pending = _stop_pending()
        if pending is not None:  # a SIGTERM a finaliser swallowed: nothing staged was put in place after it
            raise pending
    except (KeyboardInterrupt, _Terminated) as interrupt:  # Ctrl-C, or SIGTERM: files staged on the way were removed
        print("terminated" if isinstance(interrupt, _Terminated) else "interrupted", file=sys.stderr)
        sys.exit(_interrupted_code(interrupt))
    except BrokenPipeError:
        _quiet_exit()
    except OSError as error:  # standard output on a full disk, a closed terminal
        _output_lost(error)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_exit()
    except OSError as error:
        _output_lost(error)
