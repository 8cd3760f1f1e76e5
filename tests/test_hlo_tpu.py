"""Modules the TPU compiler wrote (libtpu, ahead of time, scenarios/programs/hlo/tpu/): they parse, run in their expected time,
carry bf16 collectives of the sizes the programs imply, and list their devices in the TPU's own order."""
# ruff: noqa: E501  (HLO instructions are written on one line each, as XLA prints them)

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import load_script
from typer.testing import CliRunner

import netsim
from netsim.analysis.hlo_stats import collectives, hlo_summary
from netsim.cli import app
from netsim.network.device_mesh import Mesh
from netsim.network.device_order import tpu_device_order
from netsim.programs.hlo import hlo_from_text, load_hlo
from netsim.programs.hlo.devices import load_device_map
from netsim.programs.hlo.run import run_hlo, run_hlo_program
from netsim.programs.hlo.text import parse_module

ROOT = Path(__file__).resolve().parent.parent
HLO = ROOT / "scenarios" / "programs" / "hlo"
TPU = HLO / "tpu"
PROGRAMS = sorted(TPU.glob("*/*.yaml"))
SLICES = sorted(p for p in TPU.iterdir() if p.is_dir())

# the examples' global bf16 arguments (netsim/programs/hlo/examples.py) and how each is split over the mesh (x, y)
ONE_BLOCK = {"all_gather": ((1024, 1024), ("x", "y")), "psum": ((1024, 1024), ("x", "y")), "all_to_all": ((1024, 1024), ("x", "y"))}
ONE_BLOCK |= {"ppermute": ((1024, 1024), ("x", "y")), "psum_scatter": ((2048, 1024), ("x", None))}


@pytest.fixture(scope="module")
def runs():
    return {path: run_hlo_program(path, compare=False) for path in PROGRAMS}


def test_every_slice_named_is_bundled():
    assert [p.name for p in SLICES] == ["tpu7x_2x2x1", "v4_4x4x4", "v5e_4x4", "v5e_4x4x2slices", "v5p_16x16x16", "v6e_8x16"]
    for folder in SLICES:
        for module in folder.glob("*.txt"):
            assert module.with_suffix(".yaml").is_file() and module.with_name(module.stem + ".devices.json").is_file(), module


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_tpu_compiled_module_runs_in_its_expected_time(path, runs):
    assert runs[path].time == pytest.approx(yaml.safe_load(path.read_text())["expected"]["time_s"], rel=1e-12)


def _per_device_bytes(shape: tuple[int, ...], spec: tuple, mesh: dict[str, int]) -> int:
    return 2 * math.prod(d // (mesh[s] if s else 1) for d, s in zip(shape, spec, strict=True))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_collectives_keep_bf16_and_move_what_the_program_implies(path, runs):
    listed = collectives(runs[path])
    assert listed and {c["dtype"] for c in listed} == {"bf16"}, path
    mesh = json.loads(path.with_name(path.stem + ".devices.json").read_text())["mesh"]
    if path.stem in ONE_BLOCK:  # a shard_map'd collective: each device puts in its block of the argument
        shape, spec = ONE_BLOCK[path.stem]
        assert [c["bytes"] for c in listed] == [_per_device_bytes(shape, spec, mesh)]
    if path.stem == "mlp":  # one all-reduce over y of each device's [batch / x, model] partial sums
        (reduce,) = listed
        assert (reduce["op"], reduce["bytes"], reduce["group_size"]) == ("all-reduce", 2 * (256 // mesh["x"]) * 1024, mesh["y"])


def test_a_scan_without_known_trip_count_runs_as_often_as_its_condition_says(runs):
    # the TPU compiler writes no known_trip_count: the loop's counter starts at 0, adds 1, stops at 4
    for folder in ("v5e_4x4", "tpu7x_2x2x1"):
        (permute,) = collectives(runs[TPU / folder / "collective_matmul.yaml"])
        assert permute["op"] == "collective-permute" and permute["count"] == 4


def test_tpu7x_sparsecore_computations_are_read_and_their_collectives_run():
    text = (TPU / "tpu7x_2x2x1" / "psum.txt").read_text()
    module = parse_module(text)
    offloaded = [c for c in module.computations.values() if c.execution_thread == "sparsecore"]
    assert len(offloaded) == text.count('}, execution_thread="sparsecore"') > 0
    (step,) = load_hlo(TPU / "tpu7x_2x2x1" / "psum.txt").collectives
    assert step.op.op == "all-reduce" and step.op.asynchronous and step.op.groups == [[0, 4], [1, 5], [2, 6], [3, 7]]  # over x of the 2x4 mesh


@pytest.mark.parametrize("folder", [p for p in SLICES if not p.name.endswith("slices")], ids=lambda p: p.name)
def test_compiled_device_lists_are_the_tpus_own_order(folder):  # (the multi-slice module's mesh is laid by create_hybrid_device_mesh)
    sidecar = json.loads(next(folder.glob("*.devices.json")).read_text())
    dims = tuple(int(d) for d in sidecar["compiler"]["topology"].partition(":")[2].split("x"))
    per_chip = 2 if folder.name.startswith("tpu7x") else 1
    listed = [(tuple(d["coords"][: len(dims)]), d["core_on_chip"]) for d in sidecar["devices"]]
    assert listed == tpu_device_order(dims, per_chip)
    assert sidecar["compiler"]["libtpu"] == "0.0.42.1" and sidecar["compiler"]["platform"] == "tpu"


def test_a_permute_inside_a_module_has_the_closed_form_it_has_alone():
    v5e = netsim.tpu_slice("tpu-v5e:2x4")
    ring = [(r * 4 + i, r * 4 + (i + 1) % 4) for r in range(2) for i in range(4)]
    alone = netsim.analyse(netsim.ppermute(np.zeros((8, 512, 256), np.float32), ring, topology=v5e)).estimate.time_s
    (permute,) = collectives(run_hlo(HLO / "ppermute.txt", v5e))  # its device map: CPU devices, ids row-major
    assert permute["estimate_s"] == pytest.approx(alone, rel=1e-12) and alone == pytest.approx(3e-6 + 512 * 256 * 4 / 45e9, rel=1e-12)
    (looped,) = collectives(run_hlo(HLO / "collective_matmul.txt", v5e))
    assert looped["estimate_s"] == pytest.approx(4 * alone, rel=1e-12)


def test_on_a_chip_without_figures_compute_is_unknown_and_the_communication_still_runs(tmp_path):
    v2 = netsim.tpu_slice("tpu-v2:2x4")  # the scaling book gives no v2 chip figures
    result = run_hlo(HLO / "mlp.txt", v2)
    (reduce,) = collectives(result)
    summary = hlo_summary(result)
    assert summary["hlo"]["compute_unknown"] == 3 and result.time == pytest.approx(reduce["time_s"], rel=1e-12)
    alone = netsim.psum(np.zeros((8, 128, 1024), np.float32), axis_index_groups=Mesh({"x": 2, "y": 4}, v2).groups("y"), topology=v2).time
    assert reduce["time_s"] == pytest.approx(alone, rel=1e-12)
    shown = CliRunner().invoke(app, ["program", "--hlo", str(HLO / "mlp.txt"), "--topology", "tpu-v2:2x4"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "unknown: the chip has no figures (3 compute step(s) not timed; the communication is simulated)" in shown.output
    # with a clock, the step that carries the compiler's estimated_cycles (11660, the TPU module's matmul fusion) is timed
    module = TPU / "v5e_4x4" / "mlp.txt"
    unclocked, clocked = run_hlo(module, "tpu-v2:4x4"), run_hlo(module, "tpu-v2:4x4", clock_hz=1.5e9)
    assert [hlo_summary(r)["hlo"]["compute_unknown"] for r in (unclocked, clocked)] == [2, 1]
    assert clocked.time == pytest.approx(unclocked.time + 11660 / 1.5e9, rel=1e-12)


def test_the_compilers_algorithms_play_by_default_with_netsims_own_beside():
    compared = run_hlo_program(TPU / "v5e_4x4" / "mlp.yaml")
    own = run_hlo(TPU / "v5e_4x4" / "mlp.txt", "tpu-v5e:4x4", algorithm="netsim")
    (reduce,), (mine,) = collectives(compared), collectives(own)
    assert compared.program.algorithm == "compiler" and own.program.algorithm == "netsim"
    assert (reduce["played_with"], reduce["algorithm"], reduce["other_time_s"]) == ("compiler", "ring", mine["time_s"]) and mine["algorithm"] == "multiaxis"
    assert reduce["note"] == "StrategyRing{colors:1 phases:1}: one ring, one direction"
    # has_reordering_map: each ring of 4 goes round its block of chips, every step one hop on the 4x4 grid
    record = next(r for r in compared.program.hlo.records if hasattr(r.step.op, "groups"))
    rings = compared.program.hlo.lowered.ops[record.index].layout.groups
    assert len(rings) == 4 and all(len(ring) == 4 for ring in rings)
    for ring in rings:
        for a, b in zip(ring, ring[1:] + ring[:1], strict=True):
            assert abs(a // 4 - b // 4) + abs(a % 4 - b % 4) == 1, ring


def test_the_docs_table_of_compiler_algorithms_is_what_the_script_makes(runs):
    script = load_script("scripts/make_hlo_algorithm_table.py", "make_hlo_algorithm_table")
    doc = (ROOT / "docs" / "hlo.md").read_text()
    assert f"{script.BEGIN}\n{script.table(runs)}{script.END}" in doc


def test_the_docs_commands_run():
    lines = (ROOT / "docs" / "hlo.md").read_text().splitlines()
    commands = [line.split()[1:] for line in lines if line.startswith("    ") and line.strip().startswith("netsim program ")]
    assert len(commands) == 4
    for args in commands:
        shown = CliRunner().invoke(app, args, env={"COLUMNS": "120"})
        assert shown.exit_code == 0, (args, shown.output)
        assert "compiled by" in shown.output
        assert ("in_order" if "--sync-collectives" in args else "overlap") in shown.output  # TPU-compiled: overlap unless asked


def test_without_its_device_map_a_tpu_module_runs_where_its_map_would_put_it(tmp_path):
    # the TPU's own order is what libtpu's executable assigned: without the map, every id lands on the same chip
    for folder, name in (("v5e_4x4", "tpu-v5e:4x4"), ("tpu7x_2x2x1", "tpu7x:2x2x1")):
        bare = tmp_path / f"{folder}.txt"
        bare.write_text((TPU / folder / "mlp.txt").read_text())
        with_map, without = run_hlo(TPU / folder / "mlp.txt", name, compare=False), run_hlo(bare, name, compare=False)
        assert without.program.device_map.source.startswith("the TPU's own device order")
        topology = netsim.tpu_slice(name)
        placed = [r.program.device_map.nodes(tuple(topology.dims), topology.n_devices) for r in (with_map, without)]
        assert placed[0] == placed[1]
    # what the map adds is the mesh: without it, groups are matched against the slice's own axes
    assert without.program.hlo.mesh_source == "the slice's axes" and with_map.program.hlo.mesh_source == "the module's mesh"


def test_a_strategy_netsim_does_not_know_is_said_and_netsims_own_plays():
    text = (TPU / "v5e_4x4" / "mlp.txt").read_text().replace('"strategy":"StrategyRing"', '"strategy":"StrategyHypercube"')
    text = text.replace("StrategyRing{", "StrategyHypercube{").replace('"emitter":"RotatedPincerShortEmitter"', '"emitter":"HypercubeEmitter"')
    module = TPU / "v5e_4x4" / "mlp.txt"
    (unknown,) = collectives(run_hlo(hlo_from_text(text), "tpu-v5e:4x4", device_map=load_device_map(module, 16), compare=False))
    (own,) = collectives(run_hlo(module, "tpu-v5e:4x4", algorithm="netsim", compare=False))
    assert unknown["note"] == "StrategyHypercube{colors:1 phases:1}: not understood; netsim plays its own algorithm"
    assert (unknown["algorithm"], unknown["time_s"]) == (own["algorithm"], own["time_s"])


def test_dtypes_source_times_a_cpu_modules_upcast_collectives_at_its_parameters_dtype(tmp_path):
    # the CPU compiler upcast nothing here (f32 parameters): source changes nothing; with bf16 parameters, halves the bytes
    (as_compiled,) = collectives(run_hlo(HLO / "mlp.txt", "tpu-v5e:2x4", dtypes="source"))
    bf16 = (HLO / "mlp.txt").read_text().replace("%param = f32[128,1024]{1,0} parameter(0)", "%param = bf16[128,1024]{1,0} parameter(0)")
    assert bf16 != (HLO / "mlp.txt").read_text()
    module = tmp_path / "mlp.txt"
    module.write_text(bf16)
    (module.parent / "mlp.devices.json").write_text((HLO / "mlp.devices.json").read_text())
    program = tmp_path / "mlp.yaml"
    program.write_text("name: m\nhlo: mlp.txt\ntopology: tpu-v5e:2x4\ndtypes: source\n")
    result = run_hlo_program(program)
    (source,) = collectives(result)
    assert (as_compiled["dtype"], as_compiled["bytes"]) == ("f32", 128 * 1024 * 4)
    assert (source["dtype"], source["bytes"]) == ("bf16", 128 * 1024 * 2)
    assert hlo_summary(result)["hlo"]["dtypes"] == "source: f32 collectives and dots timed at the arguments' bf16"


GATHER_0_TO_7 = """HloModule m, is_scheduled=true, num_partitions=16
ENTRY %main (p: bf16[256,1024]) -> bf16[2048,1024] {
  %p = bf16[256,1024]{1,0} parameter(0)
  ROOT %ag = bf16[2048,1024]{1,0} all-gather(%p), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7},{8,9,10,11,12,13,14,15}}, dimensions={0}, use_global_device_ids=true, CONFIG
}"""


def test_a_group_listed_0_to_7_is_a_block_of_chips_and_the_compilers_ring_goes_round_it():
    config = 'backend_config={"collective_algorithm_config":{"emitter":"1DAllGatherNonMajorDim","debug":"has_reordering_map: true"}}'
    module = hlo_from_text(GATHER_0_TO_7.replace("CONFIG", config))
    compiled, listed = (run_hlo(module, "tpu-v5e:4x4", algorithm=a, compare=False) for a in ("compiler", "netsim"))
    # without a device map, ids 0..7 are the chips (x, y) with x in 0..3, y in 0..1: a 4x2 block (chip 4x + y), not a row
    (ring,) = {tuple(sorted(g)) for g in compiled.program.hlo.lowered.ops[0].layout.groups if 0 in g}
    assert ring == (0, 1, 4, 5, 8, 9, 12, 13)
    (fast,), (slow,) = collectives(compiled), collectives(listed)
    # round the block, every step one hop: the closed form of a bidirectional ring of 8, exactly
    assert fast["time_s"] == pytest.approx(fast["estimate_s"], rel=1e-12)
    assert fast["estimate_s"] == pytest.approx(7 * 1e-6 + 7 / 8 * 8 * 256 * 1024 * 2 / 2 / 45e9, rel=1e-12)
    # the same ring in the order listed crosses two hops at every turn of the block
    assert slow["time_s"] > 1.7 * fast["time_s"]


PSUM_16 = """HloModule m, is_scheduled=true, num_partitions=16
%add (a: bf16[], b: bf16[]) -> bf16[] {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  ROOT %s = bf16[] add(%a, %b)
}
ENTRY %main (p: bf16[1024,1024]) -> bf16[1024,1024] {
  %p = bf16[1024,1024]{1,0} parameter(0)
  ROOT %ar = bf16[1024,1024]{1,0} all-reduce(%p), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}}, use_global_device_ids=true, to_apply=%add, backend_config={"collective_algorithm_config":{"emitter":"RotatedPincerEmitter","strategy":"UniDirectionNDRingStrategy","debug":"UniDirectionNDRingStrategy{colors:4 phases:2}"}}
}"""


def test_a_compiler_ring_along_the_axes_too_big_to_stream_sends_one_message_per_step(monkeypatch):
    import netsim.programs.hlo.translate as translate

    module = hlo_from_text(PSUM_16)
    (streamed,) = collectives(run_hlo(module, "tpu-v5e:4x4", compare=False))
    assert streamed["algorithm"] == "multiaxis"  # 16 x 15 x 4 pieces x 2 phases = 1,920 transfers: under the bound
    monkeypatch.setattr(translate, "BUNDLED_ABOVE", 1000)
    run = run_hlo(module, "tpu-v5e:4x4", compare=False)
    (bundled,) = collectives(run)
    assert bundled["algorithm"] == "multiaxis_bundled"
    assert bundled["note"].endswith("; one message per ring step (streamed, its 1,920 transfers would be 2x the bound)")
    # the same plan as a psum of the same bytes a device over the slice's two axes, played alone
    topology = netsim.network.presets.tpu_slice("tpu-v5e:4x4")
    x = np.broadcast_to(np.zeros((), np.float32), (16, 1024 * 1024 // 2))
    groups = Mesh({"x": 4, "y": 4}, topology).groups(("x", "y"))
    alone = netsim.psum(x, axis_index_groups=groups, algorithm="multiaxis_bundled", topology=topology, data="none")
    assert bundled["time_s"] == pytest.approx(alone.time, rel=1e-12)
    assert len(run.program.hlo.lowered.schedule.transfers) == 2 * 2 * (2 * 3 + 2 * 3) * 16  # phases x parts x (halves x steps on each axis) x members
