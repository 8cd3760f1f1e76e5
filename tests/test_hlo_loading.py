"""Modules as libtpu writes them load, and what cannot load is one line naming the file and line (exit 2)."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from netsim.cli.main import app
from netsim.programs.hlo import hlo_from_text
from netsim.programs.hlo.groups import parse_replica_groups
from netsim.programs.hlo.run import TPU_SOURCE_DTYPES, run_hlo

runner = CliRunner()
TPU = ROOT / "scenarios" / "programs" / "hlo" / "tpu" / "v5e_4x4"

ADD = """%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
"""


def _all_reduce(groups: str, devices: int = 4) -> str:
    return f"""HloModule m, num_partitions={devices}
{ADD}
ENTRY %main (x: f32[256]) -> f32[256] {{
  %x = f32[256]{{0}} parameter(0)
  ROOT %ar = f32[256]{{0}} all-reduce(%x), channel_id=1, replica_groups={groups}, use_global_device_ids=true, to_apply=%add
}}
"""


def _refused(tmp_path, text: str, *more: str) -> str:
    module = tmp_path / "m.txt"
    module.write_text(text)
    result = runner.invoke(app, ["program", "--hlo", str(module), "--topology", "tpu-v5e:2x2", *more])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    return result.output.strip().replace(str(module), "m.txt")


def test_mesh_groups_that_name_an_axis_of_size_1_load_as_libtpu_writes_them():
    # libtpu for v5e 16x16: mesh['axis_0'=256,'axis_1'=1,'axis_2'=1] {'axis_0','axis_1'}; before: "(1, 1, 1) is not in list"
    groups = parse_replica_groups("mesh['axis_0'=4,'axis_1'=1,'axis_2'=1] {'axis_0','axis_1'}")
    assert groups == [[0, 1, 2, 3]]
    assert parse_replica_groups("mesh['a'=2,'b'=1,'c'=2] {'b'}") == [[0], [1], [2], [3]]
    program = hlo_from_text(_all_reduce("mesh['axis_0'=4,'axis_1'=1,'axis_2'=1] {'axis_0','axis_1'}"))
    assert program.collectives[0].op.groups == [[0, 1, 2, 3]]


@pytest.mark.parametrize(
    ("groups", "problem"),
    [
        ("mesh['x'=0,'y'=4] {'y'}", "mesh axis 'x'=0 has no device; every axis has a size of at least 1"),
        ("mesh['x'=4] {'x':(2)0}", "sub-axis 'x':(2)0 has a pre-size or size of 0; both are at least 1"),
        ("mesh['x'=4] {'x':(0)2}", "sub-axis 'x':(0)2 has a pre-size or size of 0; both are at least 1"),
        ("mesh['x'=2,'x'=2] {'x'}", "mesh axis 'x' is named twice in mesh['x'=2,'x'=2]"),
        (
            "[2,2]<=[1000000000000,1000000000000]",
            "[1000000000000,1000000000000] names 1000000000000000000000000 device ids, more than the 65536 devices a module may have",
        ),
    ],
)
def test_bad_mesh_groups_are_one_line_naming_the_file_and_line(tmp_path, groups, problem):
    # before: ZeroDivisionError tracebacks, a duplicate axis accepted, NumPy's "array is too big"
    assert _refused(tmp_path, _all_reduce(groups)) == f"error: m.txt: line 10: all-reduce ar: {problem}"


def test_a_permute_repeating_a_source_names_the_file_and_line(tmp_path):
    text = """HloModule m, num_partitions=4
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %cp = f32[4] collective-permute(%x), channel_id=1, source_target_pairs={{0,1},{0,2}}
}
"""
    # before: "error: perm repeats source 0: (0, 2) and (0, 1) both send from it", no file
    expected = "error: m.txt: line 4: collective-permute cp: source_target_pairs repeat the source 0: {0,1} and {0,2} both send from it"
    assert _refused(tmp_path, text) == expected


LOOP = (
    """HloModule m, num_partitions=2
%cond (s: (s64[], f32[4])) -> pred[] {
  %s = (s64[], f32[4]) parameter(0)
  %i = s64[] get-tuple-element(%s), index=0
  %n = s64[] constant(LIMIT)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s64[], f32[4])) -> (s64[], f32[4]) {
  %s = (s64[], f32[4]) parameter(0)
  %i = s64[] get-tuple-element(%s), index=0
  %x = f32[4] get-tuple-element(%s), index=1
  %one = s64[] constant(1)
  %next = s64[] add(%i, %one)
  %ar = f32[4] all-reduce(%x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
  ROOT %t = (s64[], f32[4]) tuple(%next, %ar)
}
"""
    + ADD
    + """ENTRY %main (x: f32[4]) -> (s64[], f32[4]) {
  %x = f32[4] parameter(0)
  %zero = s64[] constant(0)
  %start = (s64[], f32[4]) tuple(%zero, %x)
  ROOT %w = (s64[], f32[4]) while(%start), condition=%cond, body=%body
}
"""
)


@pytest.mark.parametrize("limit", [10**18 + 1, 10**38])
def test_trip_counts_read_from_a_condition_are_whole_numbers(limit):
    # before: through floats, 10^18+1 became 10^18 and passed the cap; 10^38 was echoed with other digits
    with pytest.raises(ValueError) as error:
        hlo_from_text(LOOP.replace("LIMIT", str(limit)), "m.txt")
    assert str(error.value) == f"m.txt: line 26: while w: its condition gives {limit} trips, more than 10^18"
    assert hlo_from_text(LOOP.replace("LIMIT", str(10**18))).long_loops[0].trips == 10**18


def test_dtypes_source_is_refused_for_a_module_the_tpu_compiler_wrote(tmp_path):
    # before: the TPU module's real f32 dot outputs were halved (23.64 -> 20.89 us)
    for name in ("mlp.txt", "mlp.devices.json"):
        shutil.copy(TPU / name, tmp_path / name)
    program = tmp_path / "p.yaml"
    program.write_text("name: p\nhlo: mlp.txt\ntopology: tpu-v5e:4x4\ndtypes: source\n")
    result = runner.invoke(app, ["program", str(program)])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {program}: dtypes: {TPU_SOURCE_DTYPES}"
    (tmp_path / "mlp.devices.json").unlink()  # the layouts say it as well
    with pytest.raises(ValueError, match="dtypes: source times a module XLA's CPU compiler upcast"):
        run_hlo(tmp_path / "mlp.txt", "tpu-v5e:4x4", dtypes="source")
    cpu = run_hlo(ROOT / "scenarios" / "programs" / "hlo" / "mlp.txt", "tpu-v5e:2x4", dtypes="source")
    assert cpu.program.dtypes.startswith("source")


def test_a_tpu_module_runs_on_a_sliced_topology_in_the_tpus_order_per_slice(tmp_path):
    shutil.copy(TPU / "psum.txt", tmp_path / "psum.txt")  # without its device map (written for one 4x4 slice)
    result = run_hlo(tmp_path / "psum.txt", "tpu-v5e:2x4x2slices")  # before: "cannot read the slice shape '2x4x2slices'"
    placed = result.program.device_map
    assert placed.slices == (0,) * 8 + (1,) * 8
    assert placed.coords[:4] == placed.coords[8:12] == ((0, 0), (1, 0), (0, 1), (1, 1))
    assert result.time > 0


def test_a_device_map_places_devices_on_their_slices_and_one_for_another_slice_is_refused(tmp_path):
    shutil.copy(TPU / "psum.txt", tmp_path / "psum.txt")
    devices = [{"id": i, "coords": [i % 2, (i // 2) % 4, 0], "core_on_chip": 0, "slice_index": 1 - i // 8} for i in range(16)]
    (tmp_path / "psum.devices.json").write_text(json.dumps({"devices": devices}))
    result = run_hlo(tmp_path / "psum.txt", "tpu-v5e:2x4x2slices")
    nodes = result.program.device_map.nodes((2, 2, 4), 16, n_slices=2)
    assert nodes[:2] == [8, 12] and nodes[8:10] == [0, 4]  # ids 0..7 on slice 1; row-major x, y in a 2x4
    assert result.time > 0
    shutil.copy(TPU / "psum.devices.json", tmp_path / "psum.devices.json")  # the map of the 4x4 slice it was compiled for
    result = runner.invoke(app, ["program", "--hlo", str(tmp_path / "psum.txt"), "--topology", "tpu-v5e:2x4x2slices"])
    assert result.exit_code == 2
    expected = f"error: {tmp_path / 'psum.devices.json'}: device 4 at [2, 0, 0] is outside a slice 2x4 of 2 (it was written for v5e:4x4)"
    assert result.output.strip() == expected
