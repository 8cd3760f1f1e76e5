"""The ``netsim`` command line: parse arguments, call the library, print, set the exit code.

Exit codes: 0 success, 2 a user error (bad file, bad argument), 3 an internal error
(a bug in netsim, with a request to report it).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from netsim.collectives import simulate
from netsim.engine import EngineError
from netsim.report import summary_rows, to_json
from netsim.scenario import load_scenario

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="netsim: simulate collectives (all_gather, psum_scatter, psum) on TPU-style interconnects.",
    pretty_exceptions_enable=False,
)

USER_ERROR = 2
INTERNAL_ERROR = 3


def _fail(message: str, code: int) -> typer.Exit:
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"error: {message}", markup=False)
    return typer.Exit(code)


@app.callback()
def _main() -> None:
    """Simulate collective communication on rings and tori."""


@app.command()
def run(
    scenario: Annotated[str, typer.Argument(help="Scenario YAML file, e.g. scenarios/allgather_ring8.yaml")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
) -> None:
    """Simulate a scenario and print the output check and the timing."""
    try:
        loaded = load_scenario(scenario)
        result = simulate(loaded)
    except EngineError as error:
        raise _fail(f"internal error in netsim while running {scenario}: {error}", INTERNAL_ERROR) from None
    except (ValueError, MemoryError) as error:
        raise _fail(str(error), USER_ERROR) from None
    if json_output:
        print(to_json(result))
        return
    table = Table(title=f"netsim run: {loaded.name}", show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value")
    for label, value in summary_rows(result):
        table.add_row(label, value)
    Console(highlight=False).print(table)


def _simulated(scenario: str):
    """Load and run a scenario, turning failures into the CLI's exit codes."""
    try:
        return simulate(load_scenario(scenario))
    except EngineError as error:
        raise _fail(f"internal error in netsim while running {scenario}: {error}", INTERNAL_ERROR) from None
    except (ValueError, MemoryError) as error:
        raise _fail(str(error), USER_ERROR) from None


@app.command()
def explain(
    scenario: Annotated[str, typer.Argument(help="Scenario YAML file, e.g. scenarios/allgather_ring8.yaml")],
) -> None:
    """Explain the algorithm step by step: who sends what to whom, who holds what, and what each step costs."""
    from netsim.explain import explain as explain_text

    result = _simulated(scenario)
    try:
        text = explain_text(result)
    except ValueError as error:
        raise _fail(str(error), USER_ERROR) from None
    print(text)


@app.command()
def animate(
    scenario: Annotated[str, typer.Argument(help="Scenario YAML file, e.g. scenarios/allgather_ring8.yaml")],
    output: Annotated[str, typer.Option("-o", "--output", help="File to write: .gif, .mp4 (needs ffmpeg) or .html (a page with controls).")],
    frames: Annotated[int, typer.Option("--frames", min=2, max=2000, help="Number of frames, at evenly spaced simulated times.")] = 40,
    fps: Annotated[float, typer.Option("--fps", min=0.1, max=60.0, help="Frames per second when played.")] = 4.0,
) -> None:
    """Animate a scenario: devices, their buffers filling up, and chunks moving along the links."""
    from netsim.animate import FORMATS
    from netsim.animate import animate as make_animation

    if not output.lower().endswith(FORMATS):
        raise _fail(f"--output {output!r}: the file name must end in {', '.join(FORMATS)}", USER_ERROR)
    result = _simulated(scenario)
    try:
        path = make_animation(result, frames=frames, fps=fps).save(output)
    except ValueError as error:
        raise _fail(str(error), USER_ERROR) from None
    print(f"wrote {path} ({frames} frames, {result.time * 1e6:.6g} us simulated)")


@app.command()
def timeline(
    scenario: Annotated[str, typer.Argument(help="Scenario YAML file, e.g. scenarios/allgather_ring8.yaml")],
    output: Annotated[str, typer.Option("-o", "--output", help="Image to write: .png, .svg or .pdf.")],
) -> None:
    """Draw a Gantt chart of a scenario: one row per link, one bar per message on it."""
    from netsim.timeline import save_timeline

    if not output.lower().endswith((".png", ".svg", ".pdf")):
        raise _fail(f"--output {output!r}: the file name must end in .png, .svg or .pdf", USER_ERROR)
    result = _simulated(scenario)
    try:
        path = save_timeline(result, output)
    except ValueError as error:
        raise _fail(str(error), USER_ERROR) from None
    print(f"wrote {path}")


def main() -> None:
    """Entry point of the ``netsim`` script."""
    try:
        app()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
