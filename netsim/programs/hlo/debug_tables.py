"""An HLO module's text without its debugging tables (``FileNames``, ``StackFrames``, ...), which name source files.

Kept apart from the parser, with no import of netsim, so that the scripts that compile the
bundled modules (``scripts/make_tpu_hlo_modules.py`` runs where only ``jax[tpu]`` is
installed) load this one file by its path.
"""

from __future__ import annotations

__all__ = ["DEBUG_TABLES", "strip_debug_tables"]

DEBUG_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
"""The tables XLA prints after a module's computations: a title line, then numbered rows."""


def strip_debug_tables(text: str) -> str:
    r"""``text`` without its debugging tables (``FileNames``, ``StackFrames``, ...), which name source files.

    Examples
    --------
    >>> strip_debug_tables('HloModule m\n\nFileNames\n1 "/home/me/x.py"\n\nENTRY %e () -> f32[] {\n}\n')
    'HloModule m\n\nENTRY %e () -> f32[] {\n}\n'
    """
    kept, in_table = [], False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped in DEBUG_TABLES:
            in_table = True
            continue
        if in_table and (not stripped or stripped[0].isdigit()):
            in_table = bool(stripped)
            continue
        in_table = False
        kept.append(line)
    return "".join(kept)
