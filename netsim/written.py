"""What netsim wrote into an output folder: the folder's manifest, and what is foreign to it.

``--force`` may replace an output folder only when everything in it is netsim's: the
regular files its :data:`MANIFEST` lists (netsim adds to it what it writes there), those
of :data:`KNOWN_OUTPUTS` (folders written before manifests were kept), the manifest itself
and what a write staged there (``.NAME.netsim-...``). Anything else, a subfolder or a
symbolic link included, is foreign: the folder is refused with one line naming it
(:func:`foreign_message`), and nothing is deleted (:mod:`netsim.destinations`).
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

__all__ = ["KNOWN_OUTPUTS", "MANIFEST", "foreign_entries", "foreign_message", "record_written"]

MANIFEST = ".netsim-files"
"""The hidden file, in an output folder, listing (one name a line) the files netsim wrote there."""

KNOWN_OUTPUTS = frozenset({"result.json", "links.csv", "devices.csv", "scenario.yaml", "results.csv"})
"""The files of ``run --output`` and ``sweep --output`` whose names are fixed: netsim's, manifest or not."""

_MANIFEST_HEAD = "# written by netsim: --force replaces these files in this folder, and nothing else\n"
_MANIFEST_MAX = 1 << 20
_SHOWN = 5  # foreign entries named in a refusal


_STAGED = re.compile(r"\..+\.netsim-(file|new|old)-[0-9]+-")


def _plain_name(name: str) -> bool:
    """Whether ``name`` is one entry of a folder (no path, nothing a manifest line cannot hold)."""
    return name not in ("", ".", "..") and not any(c in name for c in "/\0\n\r")


def _manifest_names(folder: Path) -> set[str]:
    """The names the manifest of ``folder`` lists (none if it is missing, or not a regular file)."""
    manifest = folder / MANIFEST
    try:
        if not stat.S_ISREG(os.lstat(manifest).st_mode):
            return set()
        with open(manifest, encoding="utf-8", errors="replace") as stream:
            text = stream.read(_MANIFEST_MAX)
    except OSError:
        return set()
    return {line for line in text.splitlines() if not line.startswith("#") and _plain_name(line)}


def foreign_entries(folder: str | Path) -> list[Path]:
    """What ``folder`` holds that netsim did not write there, sorted: ``--force`` may replace nothing of it.

    netsim's are the regular files its :data:`MANIFEST` lists, those of :data:`KNOWN_OUTPUTS`,
    the manifest itself and what a write staged there (``.NAME.netsim-...``); anything else
    (another file, a subfolder, a symbolic link, even with one of those names) is foreign.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> base = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("result.json", "thesis.tex", "plot.png"):
    ...     _ = (base / name).write_text("x")
    >>> (base / "figures").mkdir()
    >>> [p.name for p in foreign_entries(base)]
    ['figures', 'plot.png', 'thesis.tex']
    >>> _ = record_written(base, ["plot.png"])
    >>> [p.name for p in foreign_entries(base)]
    ['figures', 'thesis.tex']
    """
    folder = Path(folder)
    names = KNOWN_OUTPUTS | _manifest_names(folder) | {MANIFEST}
    foreign = []
    for entry in sorted(folder.iterdir()):
        try:
            mode = os.lstat(entry).st_mode
        except FileNotFoundError:
            continue
        if not (stat.S_ISREG(mode) and (entry.name in names or _STAGED.match(entry.name))):
            foreign.append(entry)
    return foreign


def _shown(entry: Path) -> str:
    """An entry's name as a refusal shows it: ``name/`` for a folder, control characters escaped."""
    name = entry.name if entry.name.isprintable() else repr(entry.name)
    if entry.is_symlink():
        return f"{name} (a symbolic link)"
    return f"{name}/" if entry.is_dir() else name


def foreign_message(option: str, target: Path, foreign: list[Path]) -> str:
    """The one line refusing an output folder that holds what netsim did not write."""
    shown = ", ".join(_shown(entry) for entry in foreign[:_SHOWN])
    if len(foreign) == 1:
        what, it = f"{shown}, which netsim did not write", "it"
    else:
        more = f" and {len(foreign) - _SHOWN} more" if len(foreign) > _SHOWN else ""
        what, it = f"{len(foreign)} entries netsim did not write: {shown}{more}", "them"
    return f"{option} {target}: the folder holds {what}; --force replaces only what netsim wrote: move {it} out of {target}, or name a new folder"


def record_written(folder: str | Path, names: Iterable[str]) -> Path:
    """List ``names``, files netsim has just written into ``folder``, in the folder's :data:`MANIFEST`.

    The manifest keeps what it listed before, less the files that are gone, and is
    written whole (never through a symbolic link: one in its place is left as it is, and
    is foreign to :func:`foreign_entries`). Returns the manifest's path.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> base = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (base / "plot.png").write_bytes(b"png")
    >>> print(record_written(base, ["plot.png"]).read_text(), end="")
    # written by netsim: --force replaces these files in this folder, and nothing else
    plot.png
    """
    folder = Path(folder)
    manifest = folder / MANIFEST
    if os.path.lexists(manifest) and not (manifest.is_file() and not manifest.is_symlink()):
        return manifest
    wanted = _manifest_names(folder) | {name for name in names if _plain_name(name)}
    listed = sorted(name for name in wanted - {MANIFEST} if (folder / name).is_file() and not (folder / name).is_symlink())
    handle, staged = tempfile.mkstemp(prefix=f".{MANIFEST}.netsim-file-{os.getpid()}-", dir=folder)
    try:
        mask = os.umask(0o022)
        os.umask(mask)
        os.fchmod(handle, 0o666 & ~mask)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(_MANIFEST_HEAD + "".join(f"{name}\n" for name in listed))
        os.replace(staged, manifest)
    except BaseException:
        Path(staged).unlink(missing_ok=True)
        raise
    return manifest
