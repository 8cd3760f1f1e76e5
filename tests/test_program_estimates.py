"""Programs and HLO modules are estimated before they play: transfers, compute steps, memory; refused with the numbers when they cannot fit."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from conftest import ROOT
from typer.testing import CliRunner

import netsim.checks.memory as memory
from netsim.cli.main import app
from netsim.programs.files import load_program
from netsim.programs.hlo.run import run_hlo
from netsim.programs.lowering import lower
from netsim.programs.run import run_estimate, run_program

runner = CliRunner()
HLO = ROOT / "scenarios" / "programs" / "hlo"
A2A = """name: a2a
topology: tpu-v5e:4x4
mesh: {X: 4, Y: 4}
arrays:
  A: {shape: [4096, 256], dtype: float32, sharding: [[X, Y], null]}
ops:
  - {name: a1, op: all_to_all, in: A, axes: [X, Y], split_axis: 1, concat_axis: 0, out: B}
  - {name: a2, op: all_to_all, in: B, axes: [X, Y], split_axis: 0, concat_axis: 1, out: C}
data: none
"""


def _peak(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("engine", ["fast", "processes"])
def test_the_estimate_covers_what_a_program_really_takes(tmp_path, engine):
    path = tmp_path / "a2a.yaml"
    path.write_text(A2A)
    loaded = load_program(path)
    estimate = run_estimate(lower(loaded.program, loaded.mesh_obj))
    assert (estimate["transfers"], estimate["compute_steps"]) == (2 * 16 * 15 * 2, 16)  # 2 ops, 16 x 15 pairs, 2 pieces; a join per device
    peak = _peak(lambda: run_program(loaded, engine=engine))
    assert peak <= estimate["memory_bytes"]


@pytest.mark.parametrize("engine", ["fast", "processes"])
def test_the_estimate_covers_what_an_hlo_module_really_takes(engine):
    result = run_hlo(HLO / "collective_matmul.txt", "tpu-v5e:2x4", engine=engine)
    estimate = run_estimate(result.program.lowered)
    peak = _peak(lambda: run_hlo(HLO / "collective_matmul.txt", "tpu-v5e:2x4", engine=engine))
    assert estimate["transfers"] == len(result.program.lowered.schedule.transfers) > 0
    assert peak <= estimate["memory_bytes"]


def test_json_shows_the_estimate_the_run_was_checked_with():
    for args in (["scenarios/programs/allgather_matmul.yaml", "--data", "none"], ["--hlo", str(HLO / "psum.txt"), "--topology", "tpu-v5e:2x4"]):
        result = runner.invoke(app, ["program", *args, "--json"])
        assert result.exit_code == 0, result.output
        estimate = json.loads(result.output)["estimate"]
        assert set(estimate) == {"transfers", "compute_steps", "dependencies", "link_crossings", "memory_bytes"}
        assert estimate["transfers"] > 0 and estimate["memory_bytes"] > memory.BYTES_PER_RUN


def test_an_hlo_module_that_cannot_fit_is_refused_with_the_numbers(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 100 * 2**10)
    path = HLO / "psum.txt"
    result = runner.invoke(app, ["program", "--hlo", str(path), "--topology", "tpu-v5e:2x4"])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {path}: this run needs about ") and result.output.count("\n") == 1
    assert "but only 100 KiB is available; use fewer devices, collectives or loop trips, or an algorithm with fewer steps" in result.output


@pytest.mark.parametrize(
    ("args", "advice"),
    [
        (["scenarios/programs/hlo/psum.yaml"], "use fewer devices or ops, or an algorithm with fewer steps"),  # a module runs timing only
        (["scenarios/programs/allgather_matmul.yaml", "--data", "none"], "use fewer devices or ops, or an algorithm with fewer steps"),
        (["scenarios/programs/allgather_matmul.yaml"], "run it timing-only with `data: none`, or use fewer devices or ops or a smaller input"),
    ],
)
def test_running_out_of_memory_never_advises_what_the_run_already_does(monkeypatch, args, advice):
    import netsim.cli.program as program

    def out_of_memory(*args):
        raise MemoryError

    monkeypatch.setattr(program, "run_any", out_of_memory)
    result = runner.invoke(app, ["program", str(ROOT / args[0]), *args[1:]])
    assert result.exit_code == 2
    assert result.output.endswith(f"ran out of memory{' (timing only)' if 'data' not in advice else ''}; {advice}\n")
