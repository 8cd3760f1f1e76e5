"""Where a command may write, and writing there all or nothing.

netsim writes only to destinations the user named: a regular file (or a new one), or a
folder that is new or empty (an existing one with files in it only when forced, and only
when everything in it is what netsim wrote there: :func:`foreign_entries` is empty). It
never writes onto a FIFO, a device or a socket, never over one of the run's own inputs,
and never one output inside another. A file named through a symbolic link is written
where the link points (the link stays a link); a folder that is a link is refused.

What netsim wrote into a folder is listed in the folder's :data:`MANIFEST`; the names of
:data:`KNOWN_OUTPUTS` count as netsim's too (folders written before the manifest). With
``--force`` a folder holding anything else (a file netsim did not write, a subfolder, a
symbolic link) is refused, naming it, and nothing is deleted.

Everything is written beside its destination first (:class:`StagedFile`,
:class:`StagedFolder`) and moved into place only once all of it is complete; an existing
folder is swapped with the new one in a single ``renameat2(RENAME_EXCHANGE)`` where the
system has it (Linux), else by two renames. New files and folders get the permissions the
umask allows, as any other program's would. What is staged carries the writing process's
id in its name, so that what a killed run (``kill -9``) left beside a destination is
removed by the next write there, and never what a live run is writing.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from netsim.written import KNOWN_OUTPUTS, MANIFEST, foreign_entries, foreign_message, record_written

__all__ = [
    "KNOWN_OUTPUTS",
    "MANIFEST",
    "StagedFile",
    "StagedFolder",
    "check_file",
    "check_folder",
    "foreign_entries",
    "landing",
    "record_written",
    "remove_leftovers",
    "staged_file",
    "umask",
]


def umask() -> int:
    """The process's umask (read without changing it for longer than a moment).

    Examples
    --------
    >>> 0 <= umask() <= 0o777
    True
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _staging_prefix(destination: Path, kind: str) -> str:
    """The name prefix of what is staged beside ``destination``: hidden, with the process id."""
    return f".{destination.name}.netsim-{kind}-{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_leftovers(destination: str | Path) -> list[Path]:
    """Remove what runs killed before they finished staged beside ``destination``; return what went.

    Only names this module gives (hidden, with the destination's name and a process id)
    whose process is gone are removed.

    Examples
    --------
    >>> import tempfile, pathlib, subprocess, sys
    >>> base = pathlib.Path(tempfile.mkdtemp())
    >>> gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    >>> (base / f".run.netsim-new-{gone}-x1").mkdir()
    >>> [p.name for p in remove_leftovers(base / "run")]
    ['.run.netsim-new-...-x1']
    """
    destination = Path(destination)
    parent = destination.parent if destination.parent.is_dir() else None
    removed = []
    for path in sorted(parent.glob(f".{destination.name}.netsim-*-*-*")) if parent is not None else []:
        fields = path.name[len(destination.name) + 1 :].split("-")
        if len(fields) < 4 or fields[0] != ".netsim" or not fields[2].isdigit() or _alive(int(fields[2])):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def _within(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or inside it (both resolved)."""
    return path == folder or folder in path.parents


def _resolved(paths: Iterable[str | Path | None]) -> list[Path]:
    return [Path(p).resolve() for p in paths if p]


def landing(path: str | Path) -> Path:
    """Where a file written to ``path`` lands: ``path`` itself, or, for a symbolic link, the file it points to (followed to the end).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> base = pathlib.Path(tempfile.mkdtemp()).resolve()
    >>> (base / "link.json").symlink_to("real.json")
    >>> landing(base / "link.json") == base / "real.json", landing(base / "new.json") == base / "new.json"
    (True, True)
    """
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def check_file(option: str, path: str | Path, inputs: Iterable[str | Path | None] = (), outside: str | Path | None = None) -> Path:
    """Check that ``path`` may receive an output file; raise ValueError saying why not.

    It must be a regular file or not exist yet, in an existing folder, and be none
    of ``inputs`` and not inside the folder ``outside`` (another output). A symbolic
    link is followed: what counts is the file it points to (see :func:`landing`).

    Examples
    --------
    >>> check_file("--trace", "/dev/null")
    Traceback (most recent call last):
    ...
    ValueError: --trace /dev/null: not a regular file (a device, a FIFO or a folder); give a file name such as run.json
    """
    if str(path) == "":
        raise ValueError(f"{option} '': give a file name such as run.json")
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise ValueError(f"{option} {target}: {error.strerror}") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise ValueError(f"{option} {target}: not a regular file (a device, a FIFO or a folder); give a file name such as run{target.suffix or '.json'}")
    final = landing(target)
    named = target if final == target else f"{target} (a symbolic link to {final})"
    parent = final.parent
    if not parent.is_dir():
        raise ValueError(f"{option} {named}: the folder {parent} does not exist; create it first")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {named}: cannot write in {parent}")
    resolved = target.resolve()
    for source in _resolved(inputs):
        if resolved == source:
            raise ValueError(f"{option} {target}: that is an input of this run; write to another file")
    if outside is not None and str(outside) != "" and _within(resolved, Path(outside).resolve()):
        raise ValueError(f"{option} {target}: it is inside the --output folder {outside}, which is written whole; write it beside that folder")
    return target


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_folder(option: str, path: str | Path, force: bool, inputs: Iterable[str | Path | None] = ()) -> Path:
    """Check that ``path`` may receive an output folder; raise ValueError saying why not.

    A new folder needs a writable nearest existing parent (missing parents are created
    when the folder is put in place). An existing one must be a real
    folder (not a symbolic link) holding none of ``inputs`` nor the current directory;
    if it holds anything, it must be only what netsim wrote there (:func:`foreign_entries`,
    refused even with ``force``, since nothing else may be deleted) and ``force`` must be
    given: it is then replaced whole.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> base = pathlib.Path(tempfile.mkdtemp())
    >>> check_folder("--output", base / "run1", force=False) == base / "run1"
    True
    >>> _ = (base / "run1").mkdir(), (base / "run1" / "old.csv").write_text("x")
    >>> check_folder("--output", base / "run1", force=True)
    Traceback (most recent call last):
    ...
    ValueError: --output ...run1: the folder holds old.csv, which netsim did not write; --force replaces only what netsim wrote: ...
    >>> _ = (base / "run1" / "old.csv").rename(base / "run1" / "links.csv")
    >>> check_folder("--output", base / "run1", force=False)
    Traceback (most recent call last):
    ...
    ValueError: --output ...run1: the folder exists and holds files; add --force to replace it whole, or name a new folder
    """
    if str(path) == "":
        raise ValueError(f"{option} '': give a folder name such as run1")
    target = Path(path)
    if target.is_symlink():
        raise ValueError(f"{option} {target}: a symbolic link; name the folder itself")
    if target.exists():
        if not target.is_dir():
            raise ValueError(f"{option} {target}: exists and is not a folder; name a new folder")
        resolved = target.resolve()
        for held in [*_resolved(inputs), Path.cwd().resolve()]:
            if _within(held, resolved):
                what = "the current folder" if held == Path.cwd().resolve() else f"{held.name}, an input of this run"
                raise ValueError(f"{option} {target}: the folder holds {what} and would be replaced whole; name a new folder")
        foreign = foreign_entries(target)
        if foreign:
            raise ValueError(foreign_message(option, target, foreign))
        if any(target.iterdir()) and not force:
            raise ValueError(f"{option} {target}: the folder exists and holds files; add --force to replace it whole, or name a new folder")
        parent = resolved.parent
    else:
        parent = _nearest_existing(target.parent)
        if not parent.is_dir():
            raise ValueError(f"{option} {target}: {parent} is not a folder; name a folder under a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {target}: cannot write in {parent}")
    return target


class StagedFile:
    """A file written beside its destination, moved onto it by :meth:`commit`.

    A destination that is a symbolic link is followed: the file is staged beside the
    link's target and replaces the target; the link is left as it is.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> staged = StagedFile(out)
    >>> _ = staged.path.write_text("hello")
    >>> staged.commit(); out.read_text()
    'hello'
    """

    def __init__(self, destination: str | Path) -> None:
        self.destination = Path(destination)
        self.target = landing(self.destination)  # a symbolic link: the file it points to
        remove_leftovers(self.target)
        handle, name = tempfile.mkstemp(prefix=_staging_prefix(self.target, "file"), suffix=self.destination.suffix, dir=self.target.parent)
        os.fchmod(handle, 0o666 & ~umask())
        os.close(handle)
        self.path = Path(name)

    def commit(self) -> None:
        """Move the file onto its destination, atomically: a regular file is replaced; a symbolic link stays, the file it points to is replaced."""
        _stopped()
        os.replace(self.path, self.target)

    def discard(self) -> None:
        """Remove the staged file, if still there."""
        self.path.unlink(missing_ok=True)


_STOP: list[BaseException] = []
"""A stop a signal asked for (:func:`stop_before_commit`), honoured by every commit that follows."""


def stop_before_commit(stop: BaseException | None) -> None:
    """Make every commit from now on raise ``stop`` (None: none does).

    A signal handler raises where the program is; where that is a finaliser or a weak
    reference's callback, Python prints the exception and goes on. What the command staged
    is then still never put in place: its commit raises the stop instead.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> staged = StagedFile(pathlib.Path(tempfile.mkdtemp()) / "a.txt")
    >>> stop_before_commit(KeyboardInterrupt())
    >>> try:
    ...     staged.commit()
    ... except KeyboardInterrupt:
    ...     print("stopped")
    ... finally:
    ...     stop_before_commit(None)
    stopped
    """
    _STOP.clear()
    if stop is not None:
        _STOP.append(stop)


def stop_requested() -> BaseException | None:
    """The stop a signal asked for, if any (:func:`stop_before_commit`)."""
    return _STOP[0] if _STOP else None


def _stopped() -> None:
    if _STOP:
        raise _STOP[0]


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2``); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    errno = ctypes.get_errno()
    if errno in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: this file system or kernel cannot
        return False
    raise OSError(errno, os.strerror(errno), str(b))


class StagedFolder:
    """A folder built beside its destination, swapped in whole by :meth:`commit`.

    Files are written into ``path``; :meth:`commit` lists them in the folder's
    :data:`MANIFEST` and renames it to the destination (an existing destination, which
    must hold only what netsim wrote, is exchanged with it; :meth:`finish` removes the
    files netsim wrote in it); :meth:`undo` puts things back as they were before the
    commit; :meth:`discard` removes what is left.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run"
    >>> staged = StagedFolder(out)
    >>> _ = (staged.path / "a.txt").write_text("1")
    >>> staged.commit(); staged.finish(); sorted(p.name for p in out.iterdir())
    ['.netsim-files', 'a.txt']
    """

    def __init__(self, destination: str | Path, option: str = "--output") -> None:
        self.destination = Path(destination)
        self.option = option
        parent = _nearest_existing(self.destination.parent).resolve()
        remove_leftovers(parent / self.destination.name)
        self.path = Path(tempfile.mkdtemp(prefix=_staging_prefix(self.destination, "new"), dir=parent))
        os.chmod(self.path, 0o777 & ~umask())
        self._old: Path | None = None
        self._made: list[Path] = []  # parent folders the commit created, deepest first
        self._committed = False

    def commit(self) -> None:
        """Put the new folder in place of the destination, the old one (if any) kept aside until :meth:`finish`.

        Raises
        ------
        ValueError
            If the destination has become a symbolic link, or holds what netsim did not
            write (checked again here, the instant before the swap); nothing is changed.
        """
        _stopped()
        record_written(self.path, [entry.name for entry in self.path.iterdir()])
        if self.destination.is_symlink():
            raise ValueError(f"{self.option} {self.destination}: a symbolic link; name the folder itself")
        if self.destination.exists():
            foreign = foreign_entries(self.destination)
            if foreign:
                raise ValueError(foreign_message(self.option, self.destination, foreign))
            if _exchange(self.path, self.destination):
                self._old = self.path
            else:
                self._old = Path(tempfile.mkdtemp(prefix=_staging_prefix(self.destination, "old"), dir=self.path.parent))
                os.rmdir(self._old)
                os.rename(self.destination, self._old)
                os.rename(self.path, self.destination)
        else:
            missing = self.destination.parent
            while not missing.exists() and missing != missing.parent:
                self._made.append(missing)
                missing = missing.parent
            self.destination.parent.mkdir(parents=True, exist_ok=True)
            os.rename(self.path, self.destination)
        self._committed = True

    def undo(self) -> None:
        """Put the destination back as it was before :meth:`commit`."""
        if not self._committed:
            return
        if self._old is None:
            shutil.rmtree(self.destination, ignore_errors=True)
            for folder in self._made:
                with contextlib.suppress(OSError):
                    folder.rmdir()
        elif not _exchange(self._old, self.destination):
            shutil.rmtree(self.destination, ignore_errors=True)
            os.rename(self._old, self.destination)
        else:
            shutil.rmtree(self._old, ignore_errors=True)
        self._old, self._committed = None, False

    def finish(self) -> None:
        """Remove the old folder swapped out by :meth:`commit`: the files netsim wrote in it; anything else is moved back into the destination."""
        if self._old is not None:
            _clear_old(self._old, self.destination)
            self._old = None

    def discard(self) -> None:
        """Remove the staged folder, if it was never committed."""
        if not self._committed:
            shutil.rmtree(self.path, ignore_errors=True)


def _clear_old(old: Path, destination: Path) -> None:
    """Delete what netsim wrote in ``old`` (a folder swapped out), move anything else back into ``destination``, then remove ``old`` if empty.

    Only what appeared in the instant between the last check and the swap can be foreign.
    """
    foreign = set(foreign_entries(old))
    for entry in old.iterdir():
        if entry not in foreign:
            entry.unlink(missing_ok=True)
        elif not os.path.lexists(destination / entry.name):
            with contextlib.suppress(OSError):
                os.rename(entry, destination / entry.name)
    with contextlib.suppress(OSError):
        old.rmdir()


@contextlib.contextmanager
def staged_file(destination: str | Path) -> Iterator[Path]:
    """Yield a file to write beside ``destination``; moved onto it whole when the block ends, removed if it raises.

    A symbolic link is followed (:class:`StagedFile`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> with staged_file(out) as path:
    ...     _ = path.write_text("hello")
    >>> out.read_text()
    'hello'
    """
    staged = StagedFile(destination)
    with all_or_nothing(staged):
        yield staged.path


@contextlib.contextmanager
def all_or_nothing(*staged: StagedFile | StagedFolder):  # type: ignore[no-untyped-def]
    """Yield while the staged outputs are filled; then commit them all, or undo and discard all on any failure."""
    committed: list[StagedFile | StagedFolder] = []
    try:
        yield
        for item in staged:
            item.commit()
            committed.append(item)
    except BaseException:
        for item in reversed(committed):
            if isinstance(item, StagedFolder):
                item.undo()
        for item in staged:
            item.discard()
        raise
    for item in staged:
        if isinstance(item, StagedFolder):
            item.finish()
