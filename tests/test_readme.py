"""Every shell command and every Python block in README.md and docs/*.md runs verbatim in a fresh copy of the project.

The commands run in bash in a temporary copy of the repository, with ``netsim`` on the
PATH running that copy's code: the lines of indented shell blocks and of fenced ``bash``
blocks that start with ``netsim`` or ``python -m``. The Python blocks of each page run one
after another in one interpreter there, as a reader pasting them into a session would.
Two lines are not run here: ``pip install -e ".[dev]"`` (the environment running the
tests already did it) and ``python -m pytest`` (it is what runs this test).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

PAGES = {"README.md": (ROOT / "README.md").read_text(encoding="utf-8")} | {
    f"docs/{p.name}": p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))
}
COMMANDS_RUN = ("run", "estimate", "explain", "animate", "timeline", "sweep", "schema", "program")
SET_UP = 'pip install -e ".[dev]"'
COMMAND = re.compile(rf"(pip install|python -m|netsim ({'|'.join(COMMANDS_RUN)}) )")


def shell_commands(text: str) -> list[str]:
    """The commands of a page's indented shell blocks and fenced bash blocks (not sample output)."""
    found, fence = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            fence = None if fence is not None else line[3:].strip()
        elif (fence == "bash" or (fence is None and line.startswith("    "))) and COMMAND.match(line.strip()):
            found.append(line.split("  #")[0].strip())
    return found


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


ALL_COMMANDS = list(dict.fromkeys(c for text in PAGES.values() for c in shell_commands(text)))


def _clone_files(directory: str, names: list[str]) -> set[str]:
    """What a fresh clone lacks, but the compiled loops' caches: numba keys them by each source file's time and size,
    which the copy keeps, so the documented commands do not compile every loop again (8 s of CPU for the fast player)."""
    left_out = set(shutil.ignore_patterns(".git", ".ruff_cache", "out", "results", ".venv")(directory, names))
    if os.path.basename(directory) == "__pycache__":
        left_out |= {name for name in names if not name.endswith((".nbi", ".nbc"))}
    return left_out


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """A fresh copy of the project, and an environment whose ``netsim`` runs it."""
    root = tmp_path_factory.mktemp("clone") / "netsim"
    shutil.copytree(ROOT, root, ignore=_clone_files)
    bin_dir = root.parent / "bin"
    bin_dir.mkdir()
    (bin_dir / "netsim").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m netsim "$@"\n')
    (bin_dir / "netsim").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(root), "MPLBACKEND": "Agg"}
    return root, env


def test_the_readme_has_the_two_set_up_commands_and_stays_short():
    commands = shell_commands(PAGES["README.md"])
    assert commands[0] == f"{SET_UP} && netsim run scenarios/allgather_ring8.yaml"
    assert "python -m pytest" in commands
    assert PAGES["README.md"].count("\n") < 250, "the README is a tour: reference material belongs in docs/"
    assert len(ALL_COMMANDS) >= 20 and sum(len(python_blocks(t)) for t in PAGES.values()) >= 6


def test_every_docs_page_is_linked_from_the_readme():
    for page in PAGES:
        if page != "README.md":
            assert f"]({page})" in PAGES["README.md"], page


@pytest.mark.parametrize("command", [c for c in ALL_COMMANDS if c != "python -m pytest"])
def test_documented_shell_command(copy, command):
    root, env = copy
    if command.startswith(SET_UP + " && "):
        command = command.removeprefix(SET_UP + " && ")
    done = subprocess.run(["bash", "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    for written in re.findall(r"(?:-o|--output|--trace) (\S+)", command):
        assert (root / written).exists(), f"{command} wrote no {written}"


@pytest.mark.parametrize("page", [p for p, text in PAGES.items() if python_blocks(text)])
def test_documented_python_blocks_run_in_order(copy, page):
    root, env = copy
    program = "\n".join(
        f"print('--- block {i}', flush=True)\nexec(compile({block!r}, '{page} python block {i}', 'exec'))" for i, block in enumerate(python_blocks(PAGES[page]))
    )
    done = subprocess.run([sys.executable, "-c", program], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    if page == "docs/model.md":
        assert "processes 1750 ns" in done.stdout  # the link subclass example prints what its comment says
