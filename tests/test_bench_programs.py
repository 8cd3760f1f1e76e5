"""The program files bench/programs.py writes: they load, run, and lower to the transfers counted by hand.

A multiaxis all_gather over N devices on k mesh axes cuts every block into 2k pieces
(k parts, each halved for the two directions) and each piece reaches each of the N - 1
other devices once, in one-hop transfers: N * 2k * (N - 1) transfers. A psum over an
axis of n devices (a bidirectional ring) reduce-scatters and all-gathers 2 pieces per
block: 2 * (n * 2 * (n - 1)) per group. Every matmul is one compute step per device.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import load_script

import netsim

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench():
    return load_script("bench/programs.py", "bench_programs")


def test_two_layers_on_2x2_are_the_bundled_fsdp_program(bench, tmp_path):
    """With the bundled file's sizes, the generated 2-layer program is scenarios/programs/fsdp_two_layers.yaml: same time, bit for bit."""
    path = bench.write_program(bench.fsdp_program("tpu-v5e:2x2", 2, batch=12288, model=256), tmp_path)
    bundled = yaml.safe_load((ROOT / "scenarios" / "programs" / "fsdp_two_layers.yaml").read_text())
    result = netsim.run_program(path, data="none")
    schedule = result.leaves[0].schedule
    assert len(schedule.transfers) == 2 * (4 * 4 * 3)
    assert sum(not c.join for c in schedule.computes) == 2 * 4  # the two matmuls on each chip
    assert sum(c.join for c in schedule.computes) == 4  # gather_W2 waits for gather_W1's arrivals on each chip: one join each
    assert result.time == bundled["expected"]["time_s"]


def test_fsdp_with_tensor_parallel_psum_counts_and_values(bench, tmp_path):
    """2 layers on a 2x2x2 slice and the tensor-parallel psum over X: transfers by hand, values equal NumPy's."""
    program = bench.fsdp_program("tpu-v4:2x2x2", 2, batch=64, model=16, tp_psum=True)
    assert [op["name"] for op in program["ops"]] == ["gather_W1", "layer1", "gather_W2", "layer2", "tp_matmul", "tp_psum"]
    result = netsim.run_program(bench.write_program(program, tmp_path), data="values")
    schedule = result.leaves[0].schedule
    gathers = 2 * (8 * 6 * 7)
    psum = 4 * 2 * (2 * 2 * 1)
    assert len(schedule.transfers) == gathers + psum
    assert sum(not c.join for c in schedule.computes) == 3 * 8
    assert sum(c.join for c in schedule.computes) == 8
    assert result.verified


def test_unchained_program_has_no_after(bench):
    chained = bench.fsdp_program("tpu-v5e:4x4", 3)
    unchained = bench.fsdp_program("tpu-v5e:4x4", 3, chained=False)
    assert [op.get("after") for op in chained["ops"] if op["op"] == "all_gather"] == [None, ["gather_W1"], ["gather_W2"]]
    assert all("after" not in op for op in unchained["ops"])
