"""HLO modules simulated on a slice: times against collectives run alone and the roofline, overlap of async pairs, the report and the CLI."""
# ruff: noqa: E501  (HLO instructions are written on one line each, as XLA prints them)

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import netsim
from netsim.analysis.hlo_stats import axis_bytes, collectives
from netsim.cli import app
from netsim.network.device_mesh import Mesh
from netsim.programs.hlo import hlo_from_text
from netsim.programs.hlo.devices import DeviceMap, device_map_from_data
from netsim.programs.hlo.run import run_hlo, run_hlo_program

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = sorted((ROOT / "scenarios" / "programs" / "hlo").glob("*.yaml"))
V5E = netsim.tpu_slice("tpu-v5e:2x4")
PEAK, HBM = V5E.device(0)["peak_flops"], V5E.device(0)["hbm_bandwidth_Bps"]
MESH = Mesh({"x": 2, "y": 4}, V5E)
ROW_MAJOR = DeviceMap((None,) * 8, (0,) * 8, {}, "row-major")
"""Module id i on chip i: the modules written here name groups of chips in a row."""
runner = CliRunner()


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_every_bundled_hlo_program_runs_in_its_expected_time(path):
    expected = yaml.safe_load(path.read_text())["expected"]["time_s"]
    assert run_hlo_program(path).time == pytest.approx(expected, rel=1e-12)


def test_a_module_of_one_collective_takes_what_the_collective_takes_alone():
    cases = {
        "psum": netsim.psum(np.zeros((8, 512, 256), np.float32), axis_index_groups=MESH.groups("x"), topology=V5E),
        "all_gather": netsim.all_gather(np.zeros((8, 512, 256), np.float32), axis=1, tiled=True, axis_index_groups=MESH.groups("y"), topology=V5E),
        "psum_scatter": netsim.psum_scatter(
            np.zeros((8, 1024, 1024), np.float32), scatter_dimension=0, tiled=True, axis_index_groups=MESH.groups("y"), topology=V5E
        ),
        "ppermute": netsim.ppermute(np.zeros((8, 512, 256), np.float32), [(r * 4 + i, r * 4 + (i + 1) % 4) for r in range(2) for i in range(4)], topology=V5E),
    }
    for name, alone in cases.items():
        (collective,) = collectives(run_hlo(ROOT / f"scenarios/programs/hlo/{name}.txt", V5E))
        assert collective["time_s"] == pytest.approx(alone.time, rel=1e-12), name


ADD = "\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n"
"""The reduction the modules' all-reduces name (after ENTRY: the lines of the tests' instructions do not move)."""


def module(body: str, computations: str = "") -> str:
    lines = "\n".join("  " + line.strip() for line in body.strip().splitlines())
    return f"HloModule m, is_scheduled=true, num_partitions=8\n\n{computations}\nENTRY %main (p: bf16[1024,1024]) -> f32[] {{\n{lines}\n}}\n{ADD}"


DOT = """%mm (a: bf16[1024,1024], b: bf16[1024,1024]) -> bf16[1024,1024] {
  %a = bf16[1024,1024]{1,0} parameter(0)
  %b = bf16[1024,1024]{1,0} parameter(1)
  ROOT %d = bf16[1024,1024]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
GATHER = 'channel_id=1, replica_groups=[2,4]<=[8], dimensions={0}, use_global_device_ids=true, backend_config={"collective_algorithm_config":{"strategy":"UniDirection1DRingStrategy{colors:2}"}}'
ROOFLINE = max(2 * 1024**3 / PEAK, 3 * 1024 * 1024 * 2 / HBM)


def _gather_alone() -> float:
    return netsim.all_gather(np.zeros((8, 1024, 1024), np.float16), axis=0, tiled=True, axis_index_groups=MESH.groups("y"), topology=V5E).time


def test_an_async_pair_overlaps_the_work_written_between_start_and_done():
    sync = module(
        f"%p = bf16[1024,1024]{{1,0}} parameter(0)\n%ag = bf16[4096,1024]{{1,0}} all-gather(%p), {GATHER}\n%f = bf16[1024,1024]{{1,0}} fusion(%p, %p), kind=kOutput, calls=%mm",
        DOT,
    )
    overlapped = module(
        f"""
        %p = bf16[1024,1024]{{1,0}} parameter(0)
        %ags = (bf16[1024,1024]{{1,0}}, bf16[4096,1024]{{1,0}}) all-gather-start(%p), {GATHER}
        %f = bf16[1024,1024]{{1,0}} fusion(%p, %p), kind=kOutput, calls=%mm
        %agd = bf16[4096,1024]{{1,0}} all-gather-done(%ags)
        """,
        DOT,
    )
    comm = _gather_alone()
    assert run_hlo(hlo_from_text(sync), V5E, device_map=ROW_MAJOR, algorithm="netsim").time == pytest.approx(comm + ROOFLINE, rel=1e-12)
    assert run_hlo(hlo_from_text(overlapped), V5E, device_map=ROW_MAJOR, algorithm="netsim").time == pytest.approx(max(comm, ROOFLINE), rel=1e-12)


def test_a_sync_collective_holds_the_stream_in_order_and_lets_independent_work_run_beside_it_under_overlap():
    text = module(
        f"%p = bf16[1024,1024]{{1,0}} parameter(0)\n%ag = bf16[4096,1024]{{1,0}} all-gather(%p), {GATHER}\n%f = bf16[1024,1024]{{1,0}} fusion(%p, %p), kind=kOutput, calls=%mm",
        DOT,
    )
    comm = _gather_alone()
    runs = {mode: run_hlo(hlo_from_text(text), V5E, device_map=ROW_MAJOR, algorithm="netsim", sync_collectives=mode) for mode in ("in_order", "overlap")}
    assert runs["in_order"].time == pytest.approx(comm + ROOFLINE, rel=1e-12)
    assert runs["overlap"].time == pytest.approx(max(comm, ROOFLINE), rel=1e-12)  # the fusion does not read the gather
    assert runs["overlap"].program.sync_collectives == "overlap" and "sync collectives: overlap" in runs["overlap"].program.describe()[3]
    # the default: in order for a module without the TPU's layouts or device map, overlap for one the TPU compiler wrote
    assert run_hlo(hlo_from_text(text), V5E, device_map=ROW_MAJOR, algorithm="netsim").program.sync_collectives == "in_order"
    tpu = DeviceMap((None,) * 8, (0,) * 8, {}, "row-major", compiler={"platform": "tpu"})
    default = run_hlo(hlo_from_text(text), V5E, device_map=tpu, algorithm="netsim")
    assert default.program.sync_collectives == "overlap" and default.time == pytest.approx(runs["overlap"].time, rel=1e-12)
    with pytest.raises(ValueError, match=r"^sync_collectives must be 'overlap' or 'in_order', got 'later'$"):
        run_hlo(hlo_from_text(text), V5E, device_map=ROW_MAJOR, sync_collectives="later")
    bare = hlo_from_text(text)
    bare.text = ""  # steps made without a text cannot be flattened again: in order by default, refused when overlap is asked for
    assert run_hlo(bare, V5E, device_map=tpu, algorithm="netsim").program.sync_collectives == "in_order"
    with pytest.raises(ValueError, match=r"^sync_collectives='overlap' needs the module's text \(HloProgram.text\), to flatten it again$"):
        run_hlo(bare, V5E, device_map=tpu, sync_collectives="overlap")


def test_a_tpu_compiled_module_is_read_once_its_steps_flattened_as_it_plays(monkeypatch):
    import netsim.programs.hlo as hlo

    reads = []
    real = hlo.parse_module
    monkeypatch.setattr(hlo, "parse_module", lambda text: reads.append(len(text)) or real(text))
    module = ROOT / "scenarios" / "programs" / "hlo" / "tpu" / "v5e_4x4" / "mlp.txt"
    default = run_hlo(module, "tpu-v5e:4x4", compare=False)
    assert default.program.sync_collectives == "overlap" and len(reads) == 1  # (the TPU's layouts: flattened to overlap when read)
    in_order = run_hlo(module, "tpu-v5e:4x4", compare=False, sync_collectives="in_order")
    assert in_order.program.sync_collectives == "in_order" and len(reads) == 3  # (read, then flattened in order again from its text)


def test_cli_sync_collectives_is_reported_and_checked():
    path = str(ROOT / "scenarios" / "programs" / "hlo" / "psum.txt")
    out = runner.invoke(app, ["program", "--hlo", path, "--topology", "tpu-v5e:2x4", "--sync-collectives", "overlap", "--json"])
    assert out.exit_code == 0 and json.loads(out.output)["hlo"]["sync_collectives"] == "overlap"
    bad = runner.invoke(app, ["program", "--hlo", path, "--topology", "tpu-v5e:2x4", "--sync-collectives", "later"])
    assert bad.exit_code == 2 and "--sync-collectives: overlap or in_order, not 'later'" in bad.output


def test_estimated_cycles_time_a_compute_step_when_a_clock_is_given():
    text = module(
        '%p = bf16[1024,1024]{1,0} parameter(0)\n%f = bf16[1024,1024]{1,0} fusion(%p, %p), kind=kOutput, calls=%mm, backend_config={"estimated_cycles":"3000000"}',
        DOT,
    )
    program = hlo_from_text(text)
    assert run_hlo(program, V5E, device_map=ROW_MAJOR).time == pytest.approx(ROOFLINE, rel=1e-12)
    assert run_hlo(program, V5E, clock_hz=1.5e9, device_map=ROW_MAJOR).time == pytest.approx(3e6 / 1.5e9, rel=1e-12)


def test_the_collectives_list_reports_each_instruction_with_the_compilers_algorithm():
    text = module(
        f"%p = bf16[1024,1024]{{1,0}} parameter(0)\n%ag = bf16[4096,1024]{{1,0}} all-gather(%p), {GATHER}\n%ar = bf16[1024,1024]{{1,0}} all-reduce(%p), channel_id=2, replica_groups=[4,2]<=[2,4]T(1,0), use_global_device_ids=true, to_apply=%add"
    )
    default = collectives(run_hlo(hlo_from_text(text), V5E, device_map=ROW_MAJOR))  # the module names an algorithm: the compiler's, by default
    result = run_hlo(hlo_from_text(text), V5E, device_map=ROW_MAJOR, algorithm="netsim")
    listed = collectives(result)
    assert [c["hlo_name"] for c in listed] == sorted(["ag", "ar"], key=lambda n: -next(c["time_s"] for c in listed if c["hlo_name"] == n))
    ag = next(c for c in listed if c["hlo_name"] == "ag")
    assert {k: ag[k] for k in ("op", "shape", "dtype", "bytes", "group_size", "groups", "count", "axes")} == {
        "op": "all-gather", "shape": [1024, 1024], "dtype": "bf16", "bytes": 2 * 1024 * 1024, "group_size": 4, "groups": [[0, 1, 2, 3], [4, 5, 6, 7]], "count": 1, "axes": ["ici1"],
    }  # fmt: skip
    assert ag["compiler_algorithm"] == '{"strategy":"UniDirection1DRingStrategy{colors:2}"}' and ag["algorithm"] == "multiaxis"
    assert ag["time_s"] == _gather_alone()
    # played with the compiler's two-colour ring (both ways round each group of 4, in the order listed), netsim's own beside it
    compiled = next(c for c in default if c["hlo_name"] == "ag")
    ring = netsim.all_gather(
        np.zeros((8, 1024, 1024), np.float16), axis=0, tiled=True, axis_index_groups=[[0, 1, 2, 3], [4, 5, 6, 7]], algorithm="bidirectional_ring", topology=V5E
    )
    assert (compiled["played_with"], compiled["algorithm"], compiled["time_s"], compiled["other_time_s"]) == (
        "compiler",
        "bidirectional_ring",
        ring.time,
        ag["time_s"],
    )
    assert compiled["note"] == "UniDirection1DRingStrategy{colors:2}: one ring, 2 colours taken as both directions"
    ar = next(c for c in listed if c["hlo_name"] == "ar")
    assert ar["groups"] == [[0, 4], [1, 5], [2, 6], [3, 7]] and ar["compiler_algorithm"] is None and ar["axes"] == ["ici0"]


def test_a_loop_counts_every_run_of_its_collective():
    result = run_hlo_program(ROOT / "scenarios/programs/hlo/collective_matmul.yaml")
    (permute,) = collectives(result)
    one = netsim.ppermute(np.zeros((8, 512, 256), np.float32), [(r * 4 + i, r * 4 + (i + 1) % 4) for r in range(2) for i in range(4)], topology=V5E).time
    assert permute["count"] == 4 and permute["time_s"] == pytest.approx(4 * one, rel=1e-12)
    assert axis_bytes(result) == {"y": 4 * 512 * 256 * 4}


def test_a_device_map_places_ids_on_chips_and_groups_follow():
    # mesh (x, y) over ids row-major, laid on the slice with y reversed: id x*4 + y at (x, 3 - y)
    reversed_y = {"devices": [{"id": i, "coords": [i // 4, 3 - i % 4, 0], "core_on_chip": 0} for i in range(8)], "mesh": {"x": 2, "y": 4}}
    program = hlo_from_text((ROOT / "scenarios/programs/hlo/ppermute.txt").read_text())
    placed = run_hlo(program, V5E, device_map=device_map_from_data(reversed_y, 8))
    layout = placed.program.hlo.lowered.ops[0].layout
    assert sorted(layout.groups) == sorted((r * 4 + 3 - i, r * 4 + 3 - (i + 1) % 4) for r in range(2) for i in range(4))
    assert placed.program.hlo.records[0].axes == ("y",) and not placed.program.device_map.row_major
    row_major = run_hlo(program, V5E, device_map=ROW_MAJOR)
    assert sorted(row_major.program.hlo.lowered.ops[0].layout.groups) == sorted((r * 4 + i, r * 4 + (i + 1) % 4) for r in range(2) for i in range(4))
    # without a device map: the TPU's own order, ids (0,0) (1,0) (0,1) (1,1) (0,2) ... on a 2x4 slice (chip x*4 + y)
    tpu_order = run_hlo(program, V5E)
    chip = [0, 4, 1, 5, 2, 6, 3, 7]
    assert sorted(tpu_order.program.hlo.lowered.ops[0].layout.groups) == sorted(
        (chip[r * 4 + i], chip[r * 4 + (i + 1) % 4]) for r in range(2) for i in range(4)
    )
    assert tpu_order.program.device_map.source.startswith("the TPU's own device order for tpu-v5e:2x4")
    with pytest.raises(ValueError, match="device 0 at \\[2, 3, 0\\] is outside the slice 2x4"):
        run_hlo(program, V5E, device_map=device_map_from_data({"devices": [{"id": i, "coords": [2 + i // 4, 3 - i % 4, 0]} for i in range(8)]}, 8))


def test_cli_hlo_json_has_collectives_and_the_program_totals():
    result = runner.invoke(app, ["program", "--hlo", str(ROOT / "scenarios/programs/hlo/mlp.txt"), "--topology", "tpu-v5e:2x4", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"time_s", "compute_s", "communication_s", "exposed_communication_s", "ops", "collectives", "hlo"} <= set(data)
    assert data["hlo"]["devices"] == 8 and data["hlo"]["unmodelled"] == [] and list(data["hlo"]["axis_bytes"]) == ["y"]
    (c,) = data["collectives"]
    assert set(c) >= {"hlo_name", "op", "shape", "dtype", "bytes", "group_size", "groups", "count", "time_s", "estimate_s", "algorithm", "compiler_algorithm"}
    assert data["hlo"]["placement"].startswith("row-major over the slice")
    table = runner.invoke(app, ["program", str(ROOT / "scenarios/programs/hlo/mlp.yaml")])
    assert table.exit_code == 0 and "all-reduce" in table.output and "row-major" in table.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--hlo", "MODULE", "--topology", "tpu-v5e:4x4"], "the module runs on 8 devices but the topology has 16 chips"),
        (["--hlo", "MODULE"], "say which slice it runs on, e.g. --topology tpu-v5e:4x4"),
        (["--hlo", "BAD", "--topology", "tpu-v5e:2x4"], "BAD: line 3: negate x: unknown operand 'y'"),
        ([], "give a program file"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(tmp_path, args, message):
    bad = tmp_path / "bad.txt"
    bad.write_text("HloModule m, num_partitions=8\nENTRY %main () -> f32[] {\n  %x = f32[] negate(%y)\n}\n")
    args = [str(ROOT / "scenarios/programs/hlo/psum.txt") if a == "MODULE" else str(bad) if a == "BAD" else a for a in args]
    result = runner.invoke(app, ["program", *args])
    assert result.exit_code == 2
    assert message.replace("BAD", str(bad)) in result.output and result.output.count("\n") == 1


EDGES = (
    """HloModule m, num_partitions=4
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0},{1},{2},{3}}, use_global_device_ids=true, to_apply=%add
  %cp = f32[8]{0} collective-permute(%p), channel_id=2, source_target_pairs={{0,0},{1,1}}
  %r = f32[6]{0} parameter(1)
  %o = s64[4]{0} parameter(2)
  %s = s64[4]{0} parameter(3)
  %ra = f32[6]{0} ragged-all-to-all(%r, %r, %o, %s, %o, %s), channel_id=3, replica_groups={{0,1,2,3}}
  ROOT %a2a = f32[8]{0} all-to-all(%p), channel_id=4, replica_groups={{0,1,2,3}}, dimensions={0}
}"""
    + ADD
)


def test_array_and_ragged_all_to_all_singletons_and_self_permutes():
    slice_ = netsim.tpu_slice("tpu-v5e:2x2")
    listed = {c["hlo_name"]: c for c in collectives(run_hlo(hlo_from_text(EDGES), slice_))}
    dense = netsim.all_to_all(np.zeros((4, 8), np.float32), split_axis=0, concat_axis=0, tiled=True, topology=slice_).time
    assert listed["a2a"]["time_s"] == pytest.approx(dense, rel=1e-12)
    # ragged: its 6-element input buffer, the most it can send, padded to split 4 ways
    assert listed["ra"]["time_s"] == pytest.approx(dense, rel=1e-12) and "largest size" in listed["ra"]["note"]
    assert listed["ar"]["time_s"] == 0.0 and listed["cp"]["time_s"] == 0.0 and "nothing moves" in listed["cp"]["note"]


LOOP = """%mm (a: bf16[1024,1024], b: bf16[1024,1024]) -> bf16[1024,1024] {
  %a = bf16[1024,1024]{1,0} parameter(0)
  %b = bf16[1024,1024]{1,0} parameter(1)
  ROOT %d = bf16[1024,1024]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%body (t: (s32[], bf16[1024,1024], bf16[1024,1024])) -> (s32[], bf16[1024,1024], bf16[1024,1024]) {
  %t = (s32[], bf16[1024,1024]{1,0:T(8,128)(2,1)}, bf16[1024,1024]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %x = bf16[1024,1024]{1,0:T(8,128)(2,1)} get-tuple-element(%t), index=1
  %acc = bf16[1024,1024]{1,0} get-tuple-element(%t), index=2
  %cps = (bf16[1024,1024]{1,0}, bf16[1024,1024]{1,0}, u32[], u32[]) collective-permute-start(%x), channel_id=1, source_target_pairs=PAIRS
  %f = bf16[1024,1024]{1,0} fusion(%x, %acc), kind=kOutput, calls=%mm
  %cpd = bf16[1024,1024]{1,0} collective-permute-done(%cps)
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  ROOT %r = (s32[], bf16[1024,1024]{1,0}, bf16[1024,1024]{1,0}) tuple(%j, %cpd, %f)
}

%cond (t: (s32[], bf16[1024,1024], bf16[1024,1024])) -> pred[] {
  %t = (s32[], bf16[1024,1024]{1,0}, bf16[1024,1024]{1,0}) parameter(0)
  ROOT %c = pred[] constant(true)
}

ENTRY %main (p: bf16[1024,1024]) -> bf16[1024,1024] {
  %p = bf16[1024,1024]{1,0} parameter(0)
  %z = s32[] constant(0)
  %t = (s32[], bf16[1024,1024]{1,0}, bf16[1024,1024]{1,0}) tuple(%z, %p, %p)
  %w = (s32[], bf16[1024,1024]{1,0}, bf16[1024,1024]{1,0}) while(%t), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"4"}}
  ROOT %o = bf16[1024,1024]{1,0} get-tuple-element(%w), index=2
}
"""


def test_a_tpu_style_collective_matmul_loop_overlaps_each_permute_with_its_multiply():
    ring = [(r * 4 + i, r * 4 + (i + 1) % 4) for r in range(2) for i in range(4)]
    text = "HloModule cm, is_scheduled=true, num_partitions=8\n\n" + LOOP.replace("PAIRS", "{" + ",".join(f"{{{s},{t}}}" for s, t in ring) + "}")
    # on a torus whose axes wrap every pair is one hop: all devices keep in step
    wrapped = netsim.torus((2, 4), bandwidth_Bps=45e9, latency_s=1e-6).with_device(V5E.device(0))
    result = run_hlo(hlo_from_text(text), wrapped)
    permute = netsim.ppermute(np.zeros((8, 1024, 1024), np.float16), ring, topology=wrapped).time
    counter = 3 * 4 / HBM  # the loop counter's add (two s32 read, one written), after the done on the stream
    assert result.time == pytest.approx(4 * (max(permute, ROOFLINE) + counter), rel=1e-12)
    (listed,) = collectives(result)
    assert listed["count"] == 4 and listed["time_s"] == pytest.approx(4 * permute, rel=1e-12)


def test_a_bad_device_map_is_one_line_naming_its_file_and_field(tmp_path):
    module = tmp_path / "psum.txt"
    module.write_text((ROOT / "scenarios/programs/hlo/psum.txt").read_text())
    (tmp_path / "psum.devices.json").write_text(json.dumps({"devices": [{"id": i, "coords": "here"} for i in range(8)]}))
    result = runner.invoke(app, ["program", "--hlo", str(module), "--topology", "tpu-v5e:2x4"])
    assert result.exit_code == 2
    assert f"{tmp_path / 'psum.devices.json'}: devices[0].coords: expected a list of non-negative ints or null, got 'here'" in result.output


def test_hlo_runs_write_a_trace(tmp_path):
    trace = tmp_path / "t.json"
    result = runner.invoke(app, ["program", str(ROOT / "scenarios/programs/hlo/collective_matmul.yaml"), "--trace", str(trace)])
    assert result.exit_code == 0, result.output
    events = json.loads(trace.read_text())
    names = {e.get("name") for e in (events["traceEvents"] if isinstance(events, dict) else events)}
    assert {f"ynn_fusion[{i}]" for i in range(4)} <= names and any(str(n).startswith("block ") for n in names)


def test_netsim_run_on_an_hlo_program_file_says_how_to_run_it():
    result = runner.invoke(app, ["run", str(ROOT / "scenarios/programs/hlo/psum.yaml")])
    assert result.exit_code == 2 and "this is an HLO program file (it has hlo): run it with `netsim program`" in result.output


def test_hlo_json_follows_the_program_schema(tmp_path):
    import jsonschema

    from netsim.cli.schema import schema

    for args in (
        ["--hlo", str(ROOT / "scenarios/programs/hlo/collective_matmul.txt"), "--topology", "tpu-v5e:2x4"],
        [str(ROOT / "scenarios/programs/hlo/all_to_all.yaml")],
    ):
        result = runner.invoke(app, ["program", *args, "--json"])
        assert result.exit_code == 0, result.output
        jsonschema.validate(json.loads(result.output), schema("program"))


def test_a_collective_sent_as_bundles_counts_the_bytes_each_bundle_carries(monkeypatch):
    """An all-reduce over both axes of a 2x4 slice, planned one message per ring step (multiaxis_bundled, as a
    256-chip step's all-reduces are): each device's bytes received are those the run's transfers delivered to it."""
    import netsim.programs.plans as plans
    from netsim.analysis.hlo_stats import received_bytes

    monkeypatch.setattr(plans, "AUTO_BUNDLED_ABOVE", 0)
    text = (ROOT / "scenarios/programs/hlo/psum.txt").read_text().replace("replica_groups={{0,4},{1,5},{2,6},{3,7}}", "replica_groups={{0,1,2,3,4,5,6,7}}")
    result = run_hlo(hlo_from_text(text), V5E, compare=False)
    lowered = result.program.hlo.lowered
    (record,) = [r for r in result.program.hlo.records if len(lowered.ops[r.index].transfers)]
    assert lowered.ops[record.index].algorithm == "multiaxis_bundled" and lowered.schedule.transfers.bundles
    playback = result.leaves[0].playback
    span = lowered.ops[record.index].transfers
    delivered = np.bincount(
        np.asarray(lowered.schedule.transfers.dst[span.start : span.stop], np.int64), weights=np.asarray(playback.nbytes)[span.start : span.stop], minlength=8
    )
    assert received_bytes(lowered, record.index).tolist() == delivered.astype(np.int64).tolist()
    assert axis_bytes(result) == {"ici0,ici1": int(delivered.max())}
