"""What every ``netsim`` command shares: exit codes, one-line failures, and printing that survives a closed pipe."""

from __future__ import annotations

import os
import signal
import sys
import warnings

import typer
from rich.console import Console

__all__ = [
    "CHECK_FAILED",
    "INTERNAL_ERROR",
    "POINTS_FAILED",
    "USER_ERROR",
    "QuietConsole",
    "Terminated",
    "echo",
    "fail",
    "interrupted_code",
    "output_lost",
    "quiet_exit",
    "terminate_cleanly",
    "warnings_in_one_line",
]

CHECK_FAILED = 1
POINTS_FAILED = 1
USER_ERROR = 2
INTERNAL_ERROR = 3
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
TERMINATED = 143  # 128 + SIGTERM, as a shell reports kill


class Terminated(BaseException):
    """SIGTERM (``kill``), raised where the command is, so that what it staged is removed as on Ctrl-C; it exits 143.

    Not a ``KeyboardInterrupt``, which typer turns into exit 130 on its way out.
    """


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


def terminate_cleanly() -> None:
    """Turn SIGTERM into :class:`Terminated`: files staged beside their destinations are removed on the way out, and the command exits 143."""
    signal.signal(signal.SIGTERM, _raise_terminated)


def interrupted_code(interrupt: BaseException) -> int:
    """The exit code of an interrupted command: 143 for SIGTERM (:class:`Terminated`), 130 for Ctrl-C."""
    return TERMINATED if isinstance(interrupt, Terminated) else INTERRUPTED


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
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"error: {message}", markup=False)
    return typer.Exit(code)


def output_lost(error: OSError) -> None:
    """Standard output cannot be written: say so in one line on stderr, drop what is still buffered, exit 2."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the buffered text goes nowhere at exit, instead of a second error
    os.close(devnull)
    print(f"error: cannot write the output: {error.strerror or error}", file=sys.stderr)
    sys.exit(USER_ERROR)


def warnings_in_one_line() -> None:
    """Show netsim's own warnings (e.g. a rebuilt compiled cache) as one line on stderr, ``warning: ...``; others as Python shows them."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
        if category.__module__.startswith("netsim."):
            print(f"warning: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
