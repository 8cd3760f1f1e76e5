"""What every ``netsim`` command shares: exit codes, one-line failures, and printing that survives a closed pipe."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console

__all__ = [
    "CHECK_FAILED",
    "INTERNAL_ERROR",
    "MIN_WIDTH",
    "POINTS_FAILED",
    "USER_ERROR",
    "QuietConsole",
    "echo",
    "echo_prose",
    "fail",
    "output_lost",
    "progress_lines",
    "quiet_exit",
    "wrap_prose",
]

CHECK_FAILED = 1
POINTS_FAILED = 1
USER_ERROR = 2
INTERNAL_ERROR = 3


MIN_WIDTH = 60
"""The narrowest the tables are drawn: ``COLUMNS=0`` or ``COLUMNS=20`` still print the whole result, 60 columns wide."""


class QuietConsole(Console):
    """A rich console for what a command prints: at least :data:`MIN_WIDTH` columns wide, no
    trailing spaces (a table's title is not padded to the table's width), and a reader that
    closes the pipe ends the command quietly (exit 0)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.width < MIN_WIDTH:
            self.width = MIN_WIDTH

    def _render_buffer(self, buffer: Any) -> str:  # (rich's one place where lines become text)
        text = super()._render_buffer(buffer)
        return "\n".join(line.rstrip(" ") for line in text.split("\n"))

    def on_broken_pipe(self) -> None:
        quiet_exit()


def wrap_prose(text: str, width: int) -> str:
    """Lines longer than ``width`` wrapped at spaces, each continuation indented 4 more than its line; numbers and words never split.

    Examples
    --------
    >>> print(wrap_prose("  step 1: every device sends its block to its right neighbour", 30))
      step 1: every device sends
          its block to its right
          neighbour
    """
    out = []
    for line in text.split("\n"):
        line = line.rstrip()
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out.extend(
            textwrap.wrap(
                line, width, initial_indent="", subsequent_indent=indent + "    ", break_long_words=False, break_on_hyphens=False, drop_whitespace=True
            )
            or [line]
        )
    return "\n".join(out)


def echo_prose(text: str) -> None:
    """Print prose to stdout wrapped to the terminal's width (at least :data:`MIN_WIDTH`); a closed pipe ends the command quietly."""
    echo(wrap_prose(text, QuietConsole().width))


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


PROGRESS_EVERY_S = 5.0
"""Where stderr is not a terminal (a log, CI), long work says how far it got at most this often."""


def progress_lines(description: str, total: int | None) -> Callable[[int], None]:
    """``update(done)`` for work of ``total`` parts when stderr is not a terminal: a plain line such as
    ``drawing frames: 12/40`` every :data:`PROGRESS_EVERY_S` seconds, and one at the end if any was written.

    Quick work writes nothing; work of unknown length (``total=None``) writes nothing either.
    """
    started = last = time.monotonic()
    said = 0  # the last count written (0: none yet)

    def update(done: int) -> None:
        nonlocal last, said
        now = time.monotonic()
        if total and done > said and (now - last >= PROGRESS_EVERY_S or (said and done >= total)):
            last, said = now, done
            print(f"{description}: {done}/{total} ({now - started:.0f} s)", file=sys.stderr, flush=True)

    return update


def fail(message: str, code: int) -> typer.Exit:
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"error: {message}", markup=False)
    return typer.Exit(code)


def output_lost(error: OSError) -> None:
    """Standard output cannot be written: say so in one line on stderr, drop what is still buffered, exit 2."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the buffered text goes nowhere at exit, instead of a second error
    os.close(devnull)
    print(f"error: cannot write the output: {error.strerror or error}", file=sys.stderr)
    sys.exit(USER_ERROR)
