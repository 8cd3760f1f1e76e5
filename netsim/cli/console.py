"""What every ``netsim`` command shares: exit codes, one-line failures, and printing that survives a closed pipe."""

from __future__ import annotations

import codecs
import os
import signal
import sys
import unicodedata
import warnings
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

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
    "plain",
    "plain_text_where_needed",
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
    """A rich console that ends the command quietly (exit 0) when the reader closes the pipe, and writes plain ASCII where its stream needs it.

    On a stream that is not UTF-8 (``PYTHONIOENCODING=ascii``, latin-1) rich draws ASCII
    boxes; every string is spelled in ASCII too (``α`` as ``alpha``, :func:`plain`) before
    rich measures it, so that tables stay aligned.
    """

    def on_broken_pipe(self) -> None:
        quiet_exit()

    def render_str(self, text: str, **options: Any) -> Text:
        if not self.encoding.startswith("utf"):
            text = plain(text, self.encoding)
        return super().render_str(text, **options)


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
