"""What every ``netsim`` command shares: exit codes, one-line failures, and printing that survives a closed pipe."""

from __future__ import annotations

import os
import sys

import typer
from rich.console import Console

__all__ = ["CHECK_FAILED", "INTERNAL_ERROR", "POINTS_FAILED", "USER_ERROR", "QuietConsole", "echo", "fail", "output_lost", "quiet_exit"]

CHECK_FAILED = 1
POINTS_FAILED = 1
USER_ERROR = 2
INTERNAL_ERROR = 3


class QuietConsole(Console):
    """A rich console that ends the command quietly (exit 0) when the reader closes the pipe."""

    def on_broken_pipe(self) -> None:
        quiet_exit()


def echo(text: str) -> None:
    """Print ``text`` to stdout; a closed pipe ends the command quietly."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        quiet_exit()


def quiet_exit() -> None:
    """Point stdout at /dev/null (so that nothing more is written to the closed pipe) and exit 0."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(0)


def fail(message: str, code: int) -> typer.Exit:
    """Print ``message`` on stderr, each of its lines (a file's mistakes, one a line) after ``error:``; the exit to raise."""
    lines = "\n".join(f"error: {line}" for line in message.split("\n"))
    Console(stderr=True, highlight=False, soft_wrap=True).print(lines, markup=False)
    return typer.Exit(code)


def output_lost(error: OSError) -> None:
    """Standard output cannot be written: say so in one line on stderr, drop what is still buffered, exit 2."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the buffered text goes nowhere at exit, instead of a second error
    os.close(devnull)
    print(f"error: cannot write the output: {error.strerror or error}", file=sys.stderr)
    sys.exit(USER_ERROR)
