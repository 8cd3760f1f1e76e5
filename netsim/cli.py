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
    except MemoryError as error:
        hint = "run it timing-only with `data: none`, or use fewer devices or a smaller input"
        raise _fail(f"{scenario}: ran out of memory ({error or 'MemoryError'}); {hint}", USER_ERROR) from None
    except ValueError as error:
        raise _fail(str(error), USER_ERROR) from None
    except Exception as error:  # a bug in netsim: report it, never a traceback
        raise _fail(
            f"internal error in netsim while running {scenario}: {type(error).__name__}: {error}; this is a bug in netsim, please report it", INTERNAL_ERROR
        ) from None
    if json_output:
        print(to_json(result))
        return
    table = Table(title=f"netsim run: {loaded.name}", show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value")
    for label, value in summary_rows(result):
        table.add_row(label, value)
    Console(highlight=False).print(table)


def main() -> None:
    """Entry point of the ``netsim`` script."""
    try:
        app()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
