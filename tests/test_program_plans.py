"""A program's plans counted before it is lowered: the same transfers and compute steps as the lowering makes, and a
program too big refused before anything is built (it used to fill memory in the lowering first)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
import tracemalloc

import pytest
import yaml
from conftest import ROOT

import netsim.checks.memory as memory
import netsim.programs.run as program_run
from netsim.algorithms.registry import ALGORITHMS
from netsim.algorithms.schedule import build_schedule
from netsim.programs import plans
from netsim.programs.files import load_program, program_from_data
from netsim.programs.lowering import lower
from netsim.programs.plans import AUTO_BUNDLED_ABOVE, STREAMING, collective_plan, planned_counts, planned_transfers
from netsim.programs.run import memory_needed, planned_estimate, run_program
from netsim.scenario import ScenarioError
from netsim.semantics.ops import COLLECTIVES

sys.path.insert(0, str(ROOT / "bench"))
from programs import fsdp_program


@pytest.mark.parametrize("shape", [(8,), (3, 5), (4, 4), (2, 3, 4)])
@pytest.mark.parametrize("algorithm", sorted(STREAMING))
def test_plans_said_to_send_each_piece_to_each_member_once_do(shape, algorithm):
    n = math.prod(shape)
    shaped = {"group_shape": shape} if algorithm in ("multiaxis", "dimension_ordered") else {}
    for pattern in ALGORITHMS[algorithm].each_piece_once:
        schedule = build_schedule(pattern, [list(range(n))], algorithm, **shaped)
        assert len(schedule.transfers) == n * (n - 1) * schedule.pieces * (2 if pattern == "all_reduce" else 1), pattern
    assert {"ring", "bidirectional_ring", "direct", "multiaxis", "dimension_ordered"} <= STREAMING


def _llama(topology: str, mesh: dict, trips: int, **params) -> dict:
    data = yaml.safe_load((ROOT / "scenarios/programs/steps/llama70b_train_step.yaml").read_text())
    data.update(topology=topology, mesh=mesh, params=params)
    data["ops"] = [{**item, "repeat": trips} if "repeat" in item else item for item in data["ops"]]
    return data


CASES = {
    **{path.stem: load_program(path) for path in sorted((ROOT / "scenarios/programs").glob("*.yaml"))},
    "llama_8": program_from_data(_llama("tpu-v5p:2x2x2", {"fsdp": 2, "tp": 4}, 2, T=512, D=256, F=512, KV=64, V=1024)),
    "llama_64": program_from_data(_llama("tpu-v4:4x4x4", {"fsdp": 16, "tp": 4}, 1, T=4096, D=256, F=512, KV=64, V=1024)),
    "fsdp_v4_64": program_from_data(fsdp_program("tpu-v4:4x4x4", 2, batch=8192, model=512)),
    "all_to_all": program_from_data(
        {
            "name": "a2a",
            "topology": "tpu-v5e:4x4",
            "mesh": {"X": 4, "Y": 4},
            "data": "none",
            "arrays": {"A": {"shape": [4096, 256], "sharding": [["X", "Y"], None]}},
            "ops": [{"name": "a", "op": "all_to_all", "in": "A", "axes": ["X", "Y"], "split_axis": 1, "concat_axis": 0, "out": "B"}],
        }
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_counts_before_lowering_are_the_lowerings(name):
    loaded = CASES[name]
    counts = planned_counts(loaded.program, loaded.mesh_obj)
    lowered = lower(loaded.program, loaded.mesh_obj)
    assert counts["transfers"] == len(lowered.schedule.transfers)
    joins = sum(1 for op in loaded.program.ops if op.op in COLLECTIVES) * loaded.mesh_obj.topology.n_devices
    assert counts["compute_steps"] - joins <= len(lowered.schedule.computes) <= counts["compute_steps"]  # joins: at most one per device and collective
    for engine in ("processes", "fast"):  # the estimate before lowering is the lowered schedule's, within 2x
        before, after = planned_estimate(loaded.program, loaded.mesh_obj, 0, engine).total, memory_needed(lowered, 0, engine).total
        assert 0.5 <= before / after <= 2


PEAK = """
import sys
sys.path.insert(0, "bench")
from programs import fsdp_program
from netsim.programs.files import program_from_data
from netsim.programs.run import planned_estimate, run_program
def status(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field + ":"))
run_program(program_from_data(fsdp_program("tpu-v5e:2x2", 1, batch=512, model=64)))  # the compiled player made first
loaded = program_from_data(fsdp_program(sys.argv[1], 2, batch=8192, model=512))
estimate = planned_estimate(loaded.program, loaded.mesh_obj).total
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak RSS starts again from now
before = status("VmRSS")
run_program(loaded)
print(estimate, status("VmHWM") - before)
"""


@pytest.mark.parametrize("slice_", ["tpu-v4:4x4x8", "tpu-v4:8x8x4"])
def test_the_estimate_before_lowering_is_within_2x_of_what_the_process_grows_by(slice_):
    """FSDP, 2 layers, 195,072 and 783,360 transfers, in a fresh process each (RSS growth 139 and 230 MiB; estimated 187 and 363)."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK, slice_], check=True, cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    estimate, grown = map(int, done.stdout.split())
    assert grown <= estimate <= 2 * grown


def test_a_program_too_big_is_refused_before_it_is_lowered(monkeypatch):
    """FSDP over the 4096 chips of a v4 16x16x16 with the streaming multiaxis named: 201 M transfers. It used to fill about 24 GB
    in the lowering before the estimate refused it; now it is refused from counts, in seconds and a few MB."""
    monkeypatch.setattr(memory, "available_memory", lambda: 16 * 2**30)
    monkeypatch.setattr(program_run, "lower", lambda *args: pytest.fail("lowered before it was refused"))
    loaded = program_from_data(fsdp_program("tpu-v4:16x16x16", 2, algorithm="multiaxis"), "fsdp.yaml")  # streaming, as named
    started = time.perf_counter()
    tracemalloc.start()
    try:
        with pytest.raises(
            ScenarioError, match=r"^fsdp.yaml: data: this run needs about ([\d.]+) GiB of memory \(schedule \1 GiB\) but only 16 GiB is available"
        ):
            run_program(loaded)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20 and time.perf_counter() - started < 60
    counts = planned_counts(loaded.program, loaded.mesh_obj)
    assert counts["transfers"] == 2 * 4096 * 4095 * 6  # two gathers, every piece of 6 to every chip once


def _gather(topology: str, mesh: dict, algorithm: str | None = None) -> dict:
    axes = list(mesh)
    op = {"name": "g", "op": "all_gather", "in": "A", "axes": axes, "axis": 0, "tiled": True, "out": "B", **({"algorithm": algorithm} if algorithm else {})}
    arrays = {"A": {"shape": [2**18, 8], "dtype": "bfloat16", "sharding": [axes, None]}}
    return {"name": "g", "topology": topology, "mesh": mesh, "data": "none", "arrays": arrays, "ops": [op]}


@pytest.mark.parametrize(
    ("topology", "mesh", "axes"),
    [
        ("tpu-v5e:1x8", {"X": 8}, 1),
        ("tpu-v4:4x4x4", {"X": 4, "Y": 16}, 1),  # (a group over X alone)
        ("tpu-v4:4x4x4", {"X": 64}, 3),  # one mesh axis over the three physical axes: it runs along them
        ("tpu-v5e:4x4", {"X": 4, "Y": 4}, 2),
        ("tpu-v4:4x4x4", {"X": 4, "Y": 4, "Z": 4}, 3),
    ],
)
def test_one_message_per_ring_step_takes_the_streaming_time_on_one_axis_and_longer_over_several(topology, mesh, axes):
    def gather(algorithm):
        data = _gather(topology, mesh, algorithm)
        if axes == 1:  # over the first axis alone
            data["ops"][0]["axes"] = data["arrays"]["A"]["sharding"][0] = list(mesh)[:1]
        return run_program(data)

    streaming, bundled = gather("multiaxis"), gather("multiaxis_bundled")
    assert len(streaming.program.lowered.ops[0].planned) == axes
    streaming, bundled = streaming.time, bundled.time
    if axes == 1:
        assert bundled == streaming  # to the bit: on one axis the bundle is the block
    else:
        assert streaming < bundled < 1.5 * streaming  # each stage waits for its whole super-block (4 MiB: 1.14x, 1.33x)


def test_a_gather_too_big_to_stream_plays_bundled_by_default(monkeypatch):
    loaded = program_from_data(fsdp_program("tpu-v4:16x16x16", 1))
    (gather,) = (op for op in loaded.program.ops if op.op == "all_gather")
    plan = collective_plan(gather, loaded.program.arrays_after()[gather.inputs[0]], loaded.mesh_obj)
    assert plan.algorithm == "multiaxis_bundled"  # streaming: 4096 x 4095 x 6 = 100.6 M transfers
    assert planned_transfers(plan) == 3 * (3 * 2 * 15) * 4096 < AUTO_BUNDLED_ABOVE
    # on a small slice with the threshold lowered: the default run is the bundled one, to the bit
    monkeypatch.setattr(plans, "AUTO_BUNDLED_ABOVE", 100)
    default = run_program(_gather("tpu-v5e:4x4", {"X": 4, "Y": 4}))
    assert default.program.lowered.ops[0].algorithm == "multiaxis_bundled"
    assert default.time == run_program(_gather("tpu-v5e:4x4", {"X": 4, "Y": 4}, "multiaxis_bundled")).time
    assert run_program(_gather("tpu-v5e:4x4", {"X": 4, "Y": 4}, "multiaxis")).program.lowered.ops[0].algorithm == "multiaxis"  # as named


def _gathers(topology: str, mesh: dict, sizes: list[int], repeat: int | None = None, algorithms: dict | None = None) -> dict:
    """Gathers of weights of ``sizes`` rows over every mesh axis, each then multiplied (in a ``repeat:`` block if given)."""
    axes, algorithms = list(mesh), algorithms or {}
    arrays = {"x": {"shape": [64, 64], "dtype": "bfloat16", "sharding": [axes, None]}}
    ops = []
    for i, rows in enumerate(sizes):
        arrays[f"W{i}"] = {"shape": [rows, 64], "dtype": "bfloat16", "sharding": [axes, None]}
        gather = {"name": f"g{i}", "op": "all_gather", "in": f"W{i}", "axes": axes, "axis": 0, "tiled": True, "out": f"F{i}"}
        named = {"algorithm": algorithms[f"g{i}"]} if f"g{i}" in algorithms else {}
        ops += [{**gather, **named}, {"name": f"m{i}", "op": "compute", "in": [f"F{i}"], "flops": 1e6}]
    body = [{"repeat": repeat, "ops": ops}] if repeat else ops
    return {"name": "gathers", "topology": topology, "mesh": mesh, "arrays": arrays, "ops": body, "data": "none"}


def test_a_program_streaming_too_much_together_bundles_its_biggest_collectives_first(monkeypatch):
    """Each gather streams 16 x 15 x 4 = 960 transfers on a 4x4 and is bundled to 16 x 2 x 3 x 4 = 384; with the bound at
    2,500, three of them (2,880) are too many together, and one bundled (2,304) is enough."""
    monkeypatch.setattr(plans, "AUTO_BUNDLED_ABOVE", 2500)
    loaded = program_from_data(_gathers("tpu-v5e:4x4", {"X": 4, "Y": 4}, [64, 128, 64]))
    assert planned_transfers(collective_plan(loaded.program.ops[0], loaded.program.arrays_after()["W0"], loaded.mesh_obj)) == 960
    assert plans.bundled_defaults(loaded.program, loaded.mesh_obj) == {"g0"}  # equal savings (sizes do not count): the first
    monkeypatch.setattr(plans, "AUTO_BUNDLED_ABOVE", 2000)  # 2,304 is still too many: a second one
    assert plans.bundled_defaults(loaded.program, loaded.mesh_obj) == {"g0", "g1"}
    monkeypatch.setattr(plans, "AUTO_BUNDLED_ABOVE", 2500)
    lowered = lower(loaded.program, loaded.mesh_obj)
    assert [op.algorithm for op in lowered.ops if op.collective] == ["multiaxis_bundled", "multiaxis", "multiaxis"]
    assert planned_counts(loaded.program, loaded.mesh_obj)["transfers"] == len(lowered.schedule.transfers) == 384 + 2 * 960
    named = run_program(_gathers("tpu-v5e:4x4", {"X": 4, "Y": 4}, [64, 128, 64], algorithms={"g0": "multiaxis_bundled"}))
    assert run_program(loaded).time == named.time  # to the bit: the same plans
    # an algorithm named is kept, and counts in the total: with g0 named streaming, g1 is bundled instead
    loaded = program_from_data(_gathers("tpu-v5e:4x4", {"X": 4, "Y": 4}, [64, 128, 64], algorithms={"g0": "multiaxis"}))
    assert plans.bundled_defaults(loaded.program, loaded.mesh_obj) == {"g1"}
    # on one axis a bundle is the block: nothing to save, nothing bundled
    loaded = program_from_data(_gathers("tpu-v5e:1x16", {"X": 16}, [64, 128, 64]))
    assert plans.bundled_defaults(loaded.program, loaded.mesh_obj) == frozenset()


def test_every_trip_of_a_repeated_block_plays_the_plan_its_op_as_written_gets(monkeypatch):
    """A block's ops are counted once whatever its trips: the runs of a loop's extension, and ``unroll: true``, play one plan."""
    monkeypatch.setattr(plans, "AUTO_BUNDLED_ABOVE", 2500)
    loaded = program_from_data(_gathers("tpu-v5e:4x4", {"X": 4, "Y": 4}, [64, 64, 64], repeat=6))
    for trips in (1, 2, 6):
        program = loaded.program_at((trips,))
        assert plans.bundled_defaults(program, loaded.mesh_obj) == {"g0"}
        algorithms = [op.algorithm for op in lower(program, loaded.mesh_obj).ops if op.collective]
        assert algorithms == ["multiaxis_bundled", "multiaxis", "multiaxis"] * trips
    extended = run_program(loaded)
    unrolled = run_program({**_gathers("tpu-v5e:4x4", {"X": 4, "Y": 4}, [64, 64, 64], repeat=6), "unroll": True})
    assert extended.time == pytest.approx(unrolled.time, rel=1e-9, abs=0)
