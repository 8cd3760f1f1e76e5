"""What every ``netsim`` command shares: exit codes, one-line failures, and printing that survives a closed pipe."""

from __future__ import annotations

import codecs
import os
import signal
import sys
import textwrap
import time
import unicodedata
import warnings
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

__all__ = [
    "CHECK_FAILED",
    "INTERNAL_ERROR",
    "MIN_WIDTH",
    "POINTS_FAILED",
    "USER_ERROR",
    "QuietConsole",
    "Terminated",
    "echo",
    "echo_prose",
    "fail",
    "interrupted_code",
    "output_lost",
    "plain",
    "plain_text_where_needed",
    "progress_lines",
    "quiet_exit",
    "stop_pending",
    "terminate_cleanly",
    "warnings_in_one_line",
    "wrap_prose",
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
    staging = sys.modules.get("netsim.destinations")  # (loaded by every command that stages a file; none staged without it)
    if staging is not None:  # should a finaliser swallow the raise, nothing staged is put in place after it
        staging.stop_before_commit(Terminated())
    raise Terminated


def stop_pending() -> BaseException | None:
    """A SIGTERM whose raise a finaliser swallowed (:func:`netsim.destinations.stop_requested`), if any."""
    staging = sys.modules.get("netsim.destinations")
    return None if staging is None else staging.stop_requested()


def terminate_cleanly() -> None:
    """Turn SIGTERM into :class:`Terminated`: files staged beside their destinations are removed on the way out, and the command exits 143."""
    signal.signal(signal.SIGTERM, _raise_terminated)


def interrupted_code(interrupt: BaseException) -> int:
    """The exit code of an interrupted command: 143 for SIGTERM (:class:`Terminated`), 130 for Ctrl-C."""
    return TERMINATED if isinstance(interrupt, Terminated) else INTERRUPTED


MIN_WIDTH = 60
"""The narrowest the tables are drawn: ``COLUMNS=0`` or ``COLUMNS=20`` still print the whole result, 60 columns wide."""


class QuietConsole(Console):
    """A rich console for what a command prints: at least :data:`MIN_WIDTH` columns wide, no trailing spaces,
    plain ASCII where its stream needs it, and a quiet end (exit 0) when the reader closes the pipe.

    On a stream that is not UTF-8 (``PYTHONIOENCODING=ascii``, latin-1) rich draws ASCII
    boxes; every string is spelled in ASCII too (``α`` as ``alpha``, :func:`plain`) before
    rich measures it, so that tables stay aligned.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.width < MIN_WIDTH:
            self.width = MIN_WIDTH

    def _render_buffer(self, buffer: Any) -> str:  # (rich's one place where lines become text)
        text = super()._render_buffer(buffer)
        return "\n".join(line.rstrip(" ") for line in text.split("\n"))

    def on_broken_pipe(self) -> None:
        quiet_exit()

    def render_str(self, text: str, **options: Any) -> Text:
        if not self.encoding.startswith("utf"):
            text = plain(text, self.encoding)
        return super().render_str(text, **options)


NAME_LIMIT = 60
"""Characters of a name (an HLO instruction's, an op's, a link's) echoed in a table, a why line or an error."""


def clip_name(name: str, limit: int = NAME_LIMIT) -> str:
    """``name`` cut to ``limit`` characters with an ellipsis in the middle, its end kept (``.2.cloned.1.call-start`` tells names apart).

    Examples
    --------
    >>> clip_name("all-reduce." + "n" * 100 + ".2.call-start", 30)
    'all-reduce.nnnn…n.2.call-start'
    >>> clip_name("all-reduce.2")
    'all-reduce.2'
    """
    name = str(name)
    if len(name) <= limit:
        return name
    tail = (limit - 1) // 2
    return name[: limit - 1 - tail] + "…" + name[-tail:]


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


def warnings_in_one_line() -> None:
    """Show netsim's own warnings (e.g. a rebuilt compiled cache) as one line on stderr, ``warning: ...``; others as Python shows them."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
        if category.__module__.startswith("netsim."):
            print(f"warning: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


_PLAIN = {
    "\u2212": "-", "\u2013": "-", "\u2014": "--", "\u2010": "-", "\u00d7": "x", "\u2192": "->", "\u2190": "<-", "\u2194": "<->",
    "\u2264": "<=", "\u2265": ">=", "\u2248": "~", "\u2260": "!=", "\u00b1": "+/-", "\u2026": "...", "\u00b7": "*", "\u2022": "*",
    "\u00b5": "u", "\u03bc": "u", "\u03b1": "alpha", "\u03b2": "beta", "\u03a3": "sum", "\u2211": "sum", "\u2018": "'", "\u2019": "'",
    "\u201c": '"', "\u201d": '"', "\u00a0": " ", "\u2713": "ok", "\u2717": "x", "\u221e": "inf", "\u00b2": "^2", "\u00b3": "^3", "\u2032": "'",
    "\u230a": "floor(", "\u230b": ")", "\u2308": "ceil(", "\u2309": ")", "\u03b3": "gamma", "\u00bc": "1/4", "\u2501": "-", "\u2500": "-", "\u2502": "|",
}  # fmt: skip


def _plain(error: UnicodeError) -> tuple[str, int]:
    """A codec error handler: what a terminal cannot show, written in ASCII (``−`` as ``-``, ``α`` as ``alpha``, ``é`` as ``e``, else ``?``)."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    plain = "".join(_PLAIN.get(ch) or unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode() or "?" for ch in text)
    return plain, error.end


codecs.register_error("netsim-plain", _plain)


def plain(text: str, encoding: str = "ascii") -> str:
    """``text`` with what ``encoding`` cannot hold spelled in ASCII.

    Examples
    --------
    >>> plain("2 \u2212 1 \u2248 1 \u00b5s, \u03b1 = 1 caf\u00e9")
    '2 - 1 ~ 1 us, alpha = 1 cafe'
    >>> plain("\u00b5s, \u03b1", "latin-1")
    '\xb5s, alpha'
    """
    try:
        return text.encode(encoding, "netsim-plain").decode(encoding)
    except LookupError:  # an encoding Python does not know: ASCII holds in every one
        return text.encode("ascii", "netsim-plain").decode("ascii")


def plain_text_where_needed() -> None:
    """Let stdout and stderr write what their encoding cannot hold (``PYTHONIOENCODING=ascii``, latin-1) in plain ASCII, never raise.

    rich draws its tables with ASCII boxes there already; text is spelled in ASCII by the
    ``netsim-plain`` error handler. A UTF-8 stream is left as it is.

    Examples
    --------
    >>> "2 \u2212 1 \u2248 1 \u00b5s, \u03b1 = 1".encode("ascii", "netsim-plain")
    b'2 - 1 ~ 1 us, alpha = 1'
    """
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")
        if not encoding.startswith("utf") and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="netsim-plain")
