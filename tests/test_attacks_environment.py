"""Attacks from the environment: numba's compiled cache corrupt or unwritable, a terminal that is not UTF-8, signals, a full disk.

Each of these used to end a run with a traceback, a "bug in netsim", lost output or files
left behind; the tests run netsim as a user would (a subprocess) where that is cheap, and
in-process where a real compile or a real full disk would be slow or impossible.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from netsim.engine import compiled_cache

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "allgather_ring8.yaml"

# A cached function small enough to compile in a fraction of a second, in a file of its own.
SOURCE = """
from netsim.engine.compiled_cache import njit

@njit(cache=True)
def add_one(x):
    return x + 1
"""


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "netsim", *args], cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=timeout, check=False
    )


@pytest.fixture
def compiled_module(tmp_path, monkeypatch):
    """Load (again, each call) a module defining one cached compiled function; numba caches it in ``tmp_path/cache`` (NUMBA_CACHE_DIR)."""
    import numba

    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compiled_cache, "_warned", set())  # each test sees its first warning
    (tmp_path / "cached_one.py").write_text(SOURCE)

    def load():
        spec = importlib.util.spec_from_file_location("cached_one", tmp_path / "cached_one.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.add_one

    return load


def cache_files(tmp_path: Path, suffix: str) -> list[Path]:
    return sorted((tmp_path / "cache").rglob(f"*{suffix}"))


@pytest.mark.parametrize("suffix", [".nbi", ".nbc"])
@pytest.mark.parametrize("damage", [b"", b"\x80\x05garbage", b"not a pickle at all"])
def test_a_corrupt_numba_cache_file_is_dropped_rebuilt_and_never_fatal(compiled_module, tmp_path, suffix, damage):
    first = compiled_module()
    assert first(41) == 42
    assert first.stats.cache_misses and not first.stats.cache_hits
    (damaged,) = cache_files(tmp_path, suffix)
    damaged.write_bytes(damage)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = compiled_module()
        assert again(41) == 42
    assert [type(w.message) for w in caught] == [compiled_cache.CompiledCacheWarning]
    message = str(caught[0].message)
    assert message.startswith("numba's cache of netsim's compiled code was unreadable (") and message.endswith("removed it and compiled again")
    assert "cached_one.add_one" in message and str(tmp_path / "cache") in message
    assert list((tmp_path / "cache").rglob("*.tmp.*")) == []  # nothing left half written
    assert len(cache_files(tmp_path, ".nbi")) == len(cache_files(tmp_path, ".nbc")) == 1  # rebuilt
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rebuilt cache loads silently
        third = compiled_module()
        assert third(1) == 2
    assert third.stats.cache_hits and not third.stats.cache_misses


def test_an_unwritable_numba_cache_is_bypassed_with_one_warning(compiled_module, monkeypatch):
    from numba.core import caching

    def refuse(self):
        raise PermissionError(13, "Permission denied", self.get_cache_path())

    monkeypatch.setattr(caching._CacheLocator, "ensure_cache_path", refuse)  # no folder numba may cache in: not even the package's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        function = compiled_module()
        assert function(1) == 2
    assert [str(w.message).split(" (")[0] for w in caught] == ["numba cannot cache netsim's compiled code"]
    assert str(caught[0].message).endswith("; compiling in each run")


def test_a_cache_that_fails_to_save_is_bypassed(compiled_module, monkeypatch):
    from numba.core import caching

    def full(self, filepath):
        raise OSError(28, "No space left on device", filepath)

    monkeypatch.setattr(caching.IndexDataCacheFile, "_open_for_write", full)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        function = compiled_module()
        assert function(2) == 3
    assert len(caught) == 1 and "(No space left on device); compiling in each run" in str(caught[0].message)


def test_every_cached_compiled_function_of_netsim_goes_through_the_safe_cache():
    unsafe = []
    for path in sorted((ROOT / "netsim").rglob("*.py")):
        if path.name == "compiled_cache.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "numba" and any(alias.name in ("njit", "jit") for alias in node.names):
                unsafe.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert unsafe == [], "import njit from netsim.engine.compiled_cache, whose cache=True survives a corrupt or unwritable cache"


def test_the_cli_shows_the_cache_warning_as_one_line(monkeypatch, capsys):
    from netsim.cli.console import warnings_in_one_line

    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # restored after the test
    warnings_in_one_line()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("the cache was rebuilt", compiled_cache.CompiledCacheWarning, stacklevel=1)
    assert capsys.readouterr().err == "warning: the cache was rebuilt\n"


@pytest.mark.parametrize("signum, code, word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, None)])
def test_a_killed_animation_exits_128_plus_the_signal_and_leaves_no_staged_file(tmp_path, signum, code, word):
    out = tmp_path / "movie.gif"
    command = [sys.executable, "-m", "netsim", "animate", str(SCENARIO), "-o", str(out), "--frames", "150"]
    # Ctrl-C as a terminal sends it: a suite started in the background (`pytest &`, nohup, some CI runners) has
    # SIGINT ignored, which the child would inherit, and Python keeps an ignored SIGINT ignored
    restore = functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL)
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=restore)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(tmp_path.glob(".movie.gif.netsim-file-*")) and process.poll() is None:
        time.sleep(0.02)
    assert process.poll() is None, "the animation ended before it was drawn"
    time.sleep(0.3)  # well into drawing the frames
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == code
    if word:
        assert stderr.strip().splitlines()[-1] == word
    assert list(tmp_path.iterdir()) == []  # neither the animation nor the file staged beside it


@pytest.mark.parametrize(
    "encoding, command",
    [
        ("ascii", ["estimate", str(SCENARIO)]),
        ("latin-1", ["run", str(SCENARIO)]),
        ("ascii", ["program", str(ROOT / "scenarios" / "programs" / "allgather_matmul.yaml")]),
    ],
)
def test_a_terminal_that_is_not_utf8_gets_plain_tables_and_text(encoding, command):
    env = {**os.environ, "PYTHONIOENCODING": encoding, "COLUMNS": "100"}
    done = subprocess.run([sys.executable, "-m", "netsim", *command], cwd=ROOT, capture_output=True, env=env, timeout=60, check=False)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    text = done.stdout.decode(encoding)  # raises if the stream held what the encoding cannot
    boxed = [line.rstrip() for line in text.splitlines() if line.startswith(("+", "|"))]
    assert boxed and all(line.endswith(("+", "|")) for line in boxed)  # ASCII boxes, every row closed
    edges = [i for i, line in enumerate(boxed) if line.startswith("+")]
    for top, bottom in zip(edges[::2], edges[1::2], strict=False):
        assert len({len(line) for line in boxed[top : bottom + 1]}) == 1, boxed[top : bottom + 1]  # aligned: one width a box
    if command[0] == "estimate":
        assert "  ring: (n-1)*(alpha + s/B), s = input per device" in text
        header = next(line for line in boxed if "bound by" in line)
        assert [cell.strip() for cell in header.strip("|").split("|")] == ["algorithm", "estimate", "kind", "alpha", "bytes/B", "bound by"]


def test_plain_spells_what_a_narrow_encoding_cannot_hold():
    from netsim.cli.console import plain

    assert plain("(n\u22121)\u00b7(\u03b1 + s/B) \u2265 \u230alg n\u230b \u00b5s \u2192 caf\u00e9 \u4e2d") == "(n-1)*(alpha + s/B) >= floor(lg n) us -> cafe ?"
    assert plain("\u00b5s \u03b1", "latin-1") == "\u00b5s alpha"
    assert plain("\u03b1", "no-such-encoding") == "alpha"


@pytest.mark.parametrize("force", [False, True])
def test_a_sweep_onto_a_full_disk_names_the_folder_and_leaves_nothing(tmp_path, monkeypatch, force):
    import yaml
    from typer.testing import CliRunner

    import netsim.studies.sweep as sweep_module
    from netsim.cli.main import app

    study = tmp_path / "study.yaml"
    base = {"topology": "ring4", "collective": {"op": "all_gather"}, "input": {"bytes_per_device": "64 B", "dtype": "int8"}}
    study.write_text(yaml.safe_dump({"name": "tiny", "base": base, "grid": {"seed": [0, 1]}}))
    out = tmp_path / "out"
    if force:  # an earlier sweep's folder, replaced only once the new one is whole
        out.mkdir()
        (out / "results.csv").write_text("old\n")

    def full(path, text):
        raise OSError(28, "No space left on device")  # as write() raises it: no file name

    monkeypatch.setattr(sweep_module, "_replace", full)
    done = CliRunner().invoke(app, ["sweep", str(study), "-o", str(out), "-j", "1", "-q", *(["--force"] if force else [])])
    assert done.exit_code == 2
    assert done.output.strip() == f"error: cannot write in {out}: No space left on device"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "study.yaml"]
    if force:  # the old folder as it was
        assert [p.name for p in out.iterdir()] == ["results.csv"] and (out / "results.csv").read_text() == "old\n"
    else:  # the new folder (a sweep writes its rows as they finish, for --resume), with nothing half written
        assert list(out.iterdir()) == []


def test_hlo_topology_errors_name_the_option():
    from typer.testing import CliRunner

    from netsim.cli.main import app

    hlo = str(ROOT / "scenarios" / "programs" / "hlo" / "all_gather.txt")
    empty = CliRunner().invoke(app, ["program", "--hlo", hlo, "--topology", ""])
    assert (empty.exit_code, empty.output) == (2, "error: --topology '': name the slice the module runs on, e.g. --topology tpu-v5e:4x4, or a topology file\n")
    unknown = CliRunner().invoke(app, ["program", "--hlo", hlo, "--topology", "tpu_v5e"])
    assert unknown.exit_code == 2 and unknown.output.startswith("error: --topology tpu_v5e: no topology file 'tpu_v5e'; bundled ones are: ring16, ")
    assert unknown.output.endswith("; or a TPU slice such as tpu-v5e:4x4\n")


def test_a_sigterm_a_finaliser_swallowed_still_stops_the_file_from_being_put_in_place(tmp_path):
    """A signal handler raises where the program is; in a finaliser, Python prints the exception and goes on (the
    animation above ended 0 now and then, its GIF written). The stop is kept: the commit raises it instead."""
    import gc

    from netsim.cli import console
    from netsim.destinations import StagedFile, stop_before_commit, stop_requested

    class Finalised:
        def __del__(self) -> None:
            console._raise_terminated(signal.SIGTERM, None)

    staged = StagedFile(tmp_path / "movie.gif")
    staged.path.write_text("frames")
    try:
        Finalised()  # (collected at once: the Terminated it raises is printed and ignored)
        gc.collect()
        assert isinstance(stop_requested(), console.Terminated)
        with pytest.raises(console.Terminated):
            staged.commit()
        assert not (tmp_path / "movie.gif").exists()
    finally:
        stop_before_commit(None)
        staged.discard()
    assert stop_requested() is None and list(tmp_path.iterdir()) == []
