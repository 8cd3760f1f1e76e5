"""Start-up: what each command imports, read from ``sys.modules`` in a fresh interpreter.

A command imports what it needs when it runs: ``--version``, ``-h`` and ``schema``
none of NumPy, NetworkX, pandas, matplotlib, numba or SciPy; ``run`` of a small
scenario no compiled loop, HLO, program, drawing or study code. A module-level import
added to the CLI (or to a module it imports) fails here, naming what came in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

COMMANDS = ("run", "estimate", "explain", "animate", "timeline", "schema", "program", "sweep")

HEAVY = ("numpy", "networkx", "pandas", "matplotlib", "numba", "llvmlite", "scipy")

CHILD = """import json, sys
sys.path.insert(0, {root!r})
sys.argv = ["netsim", *{argv!r}]
{body}
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""

CONSOLE_SCRIPT = """from netsim.cli import main  # what the netsim console script runs
try:
    main()
except SystemExit as stop:
    assert not stop.code, stop.code"""


def imported(body: str, *argv: str) -> tuple[set[str], str]:
    """The modules a fresh interpreter holds after ``body`` (with ``sys.argv`` set to netsim's ``argv``), and what it printed."""
    code = CHILD.format(root=str(ROOT), argv=list(argv), body=body)
    child = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    return set(json.loads(child.stderr.strip().splitlines()[-1])), child.stdout


def loaded(modules: set[str], *packages: str) -> list[str]:
    """Those of ``modules`` that are one of ``packages`` or inside one."""
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_importing_the_cli_imports_nothing_heavy():
    modules, _ = imported("import netsim.cli.main")
    assert loaded(modules, *HEAVY) == []
    commands = ["netsim.cli.console", "netsim.cli.main", "netsim.cli.program", "netsim.cli.sweep_command", "netsim.cli.teach_command"]
    assert loaded(modules, "netsim") == ["netsim", "netsim.cli", *commands, "netsim.version"]


@pytest.mark.parametrize("argv", [["--version"], ["-h"], *([command, "-h"] for command in COMMANDS), ["schema", "run"], ["schema", "program"]])
def test_version_help_and_schema_import_nothing_heavy(argv):
    modules, out = imported(CONSOLE_SCRIPT, *argv)
    assert loaded(modules, *HEAVY) == []
    assert loaded(modules, "pandas", "matplotlib", "numba") == []  # (the three a slow start-up came back with first)
    if argv == ["--version"]:
        from netsim.version import __version__

        assert out == f"netsim {__version__}\n"
    if argv[0] == "schema" and argv[1] != "-h":
        assert json.loads(out)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_a_small_run_imports_no_compiled_loop_nor_hlo_program_drawing_or_study_code():
    modules, out = imported(CONSOLE_SCRIPT, "run", "scenarios/allgather_ring8.yaml")
    assert "netsim run: allgather_ring8" in out
    assert loaded(modules, "numba", "llvmlite", "scipy", "matplotlib", "pandas") == []
    assert loaded(modules, "netsim.programs", "netsim.teaching", "netsim.studies", "netsim.engine.kernel", "netsim.engine.jit", "netsim.engine.sums") == []
    assert loaded(modules, "netsim.cli.hlo", "netsim.cli.program_table", "netsim.cli.schema") == []


def test_the_schemas_op_names_are_the_op_registrys():
    from netsim.cli.schema import COLLECTIVE_NAMES, COMPUTE_OP_NAMES, HLO_COLLECTIVE_OPCODES, OP_NAMES
    from netsim.semantics.ops import COLLECTIVES, COMPUTE_OPS, OPS, hlo_collectives

    fix = "netsim/cli/schema.py keeps the op registry's names (netsim.semantics.ops) for `netsim schema`: write the new ones there"
    assert tuple(COLLECTIVES) == COLLECTIVE_NAMES, fix
    assert tuple(COMPUTE_OPS) == COMPUTE_OP_NAMES, fix
    assert tuple(OPS) == OP_NAMES, fix
    assert tuple(hlo_collectives()) == HLO_COLLECTIVE_OPCODES, fix


def test_numba_loads_without_scipy_and_scipy_still_imports_after():
    modules, out = imported(
        "import netsim.engine.jit as jit, sys\n"
        "print('scipy' in sys.modules)\n"
        "import numpy as np, scipy.linalg\n"
        "print(jit.njit(lambda a, b: np.dot(a, b))(np.ones(3), np.ones(3)))"
    )
    assert out.split() == ["False", "3.0"]  # hidden while numba loaded, then imported, and numba's np.dot finds BLAS through it
    assert "scipy.linalg" in modules


def test_a_collective_through_the_api_on_a_topology_imports_no_file_format():
    modules, out = imported(
        "import numpy as np, netsim\nprint(netsim.all_gather(np.arange(32, dtype=np.float32).reshape(8, 4), topology=netsim.ring(8)).verified)"
    )
    assert out == "True\n"
    assert loaded(modules, "netsim.scenario", "pydantic", "yaml", "numba", "scipy", "matplotlib", "pandas", "netsim.programs", "netsim.cli") == []
