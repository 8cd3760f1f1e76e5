"""An HLO module becomes a program of the program model, lowered by the same ``lower`` as a program file."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import netsim
from netsim.analysis.program_stats import program_stats
from netsim.network.device_mesh import AxisGroups
from netsim.programs.hlo import hlo_from_text, load_hlo
from netsim.programs.hlo import translate as translate_module
from netsim.programs.hlo.devices import DeviceMap, load_device_map
from netsim.programs.hlo.run import run_hlo
from netsim.programs.hlo.translate import translate
from netsim.programs.lowering import lower
from netsim.programs.model import Op, Program, Sharded

ROOT = Path(__file__).resolve().parent.parent
V5E = netsim.tpu_slice("tpu-v5e:2x4")
PEAK, HBM = V5E.device(0)["peak_flops"], V5E.device(0)["hbm_bandwidth_Bps"]
ROW_MAJOR = DeviceMap((None,) * 8, (0,) * 8, {}, "row-major")


def _columns(lowered):
    table = lowered.schedule.transfers
    return {k: np.asarray(getattr(table, k)).tolist() for k in ("step", "src", "dst", "block", "piece", "dep_ptr", "dep_idx")}


def test_a_module_psum_is_the_program_psum_over_the_same_mesh_axis():
    path = ROOT / "scenarios/programs/hlo/psum.txt"
    translation = translate(load_hlo(path), V5E, load_device_map(path, 8))
    (op,) = translation.program.ops
    assert op.op == "psum" and isinstance(op.groups, AxisGroups) and op.groups.axes == ("x",)
    assert translation.program.arrays[op.inputs[0]] == Sharded((512, 256), "float32")
    # the same collective written as a program over the mesh axis x: the same schedule, transfer for transfer
    written = Program("p", {"x": 2, "y": 4}, {"A": Sharded((512, 256), "float32", partial=("x",))}, (Op.of("s", "psum", ("A",), "B", axes=("x",)),))
    by_hand = lower(written, netsim.Mesh({"x": 2, "y": 4}, V5E))
    from_module = run_hlo(path, V5E).program.lowered
    assert _columns(from_module) == _columns(by_hand)
    assert run_hlo(path, V5E).time == netsim.run_program(written, V5E, data="none").time


def test_groups_on_no_mesh_axes_run_as_listed_and_steps_wait_for_their_dependences():
    text = """HloModule m, num_partitions=8
ENTRY %main (p: f32[64]) -> f32[128] {
  %p = f32[64]{0} parameter(0)
  %ag = f32[128]{0} all-gather(%p), channel_id=1, replica_groups={{0,5},{1,4},{2,7},{3,6}}, dimensions={0}, use_global_device_ids=true
  ROOT %ar = f32[128]{0} all-reduce(%ag), channel_id=2, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%add
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}"""
    program = translate(hlo_from_text(text), V5E, ROW_MAJOR).program
    ag, ar = program.ops
    assert ag.groups == ((0, 5), (1, 4), (2, 7), (3, 6)) and ag.params == {"axis": 0, "tiled": True}
    assert ar.params == {}  # psum takes no parameter (HLO says nothing of tiling it)
    assert ar.after == ("ag",) and ar.groups.axes == ("ici0", "ici1")
    lowered = lower(program, netsim.Mesh({"devices": 8}, V5E))
    assert lowered.ops[0].algorithm == "bidirectional_ring" and lowered.ops[1].algorithm == "multiaxis"
    # every transfer of the all-reduce leaving a device waits for the all-gather's arrivals there (directly or through a join)
    table, computes = lowered.schedule.transfers, lowered.schedule.computes
    n, first = len(table), lowered.ops[1].transfers.start

    def waits_for(i: int) -> set[int]:
        found: set[int] = set()
        for d in table.dep_idx[table.dep_ptr[i] : table.dep_ptr[i + 1]].tolist():
            found |= set(computes[d - n].deps) if d >= n and computes[d - n].join else {d}
        return found

    arrived = {d: {i for i in lowered.ops[0].transfers if table.dst[i] == d} for d in range(8)}
    for i in lowered.ops[1].transfers:
        deps = waits_for(i)
        assert arrived[int(table.src[i])] <= deps and all(first <= d < n or d in arrived[int(table.src[i])] for d in deps)


def test_a_computation_called_twice_gives_two_ops_and_a_step_of_no_work_takes_no_time():
    text = """HloModule m, num_partitions=8
%mm (a: bf16[256,256], b: bf16[256,256]) -> bf16[256,256] {
  %a = bf16[256,256]{1,0} parameter(0)
  %b = bf16[256,256]{1,0} parameter(1)
  ROOT %d = bf16[256,256]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY %main (p: bf16[256,256]) -> bf16[256,256] {
  %p = bf16[256,256]{1,0} parameter(0)
  %c1 = bf16[256,256]{1,0} call(%p, %p), to_apply=%mm
  %c2 = bf16[256,256]{1,0} call(%c1, %p), to_apply=%mm
  ROOT %e = f32[0]{0} custom-call(), custom_call_target="nothing"
}"""
    module = hlo_from_text(text)
    program = translate(module, V5E, ROW_MAJOR).program
    assert [op.name for op in program.ops] == ["d", "d#2", "e"] and program.ops[1].after == ("d",) and program.ops[2].seconds == 0.0
    result = run_hlo(module, V5E)
    one = max(2 * 256**3 / PEAK, 3 * 256 * 256 * 2 / HBM)
    stats = program_stats(result)
    bound = "compute" if 2 * 256**3 / PEAK >= 3 * 256 * 256 * 2 / HBM else "HBM"
    assert [(o.name, o.bound) for o in stats.ops] == [("d", bound), ("d#2", bound), ("e", "given")]
    assert stats.ops[2].estimate_s == 0.0 and result.time == pytest.approx(2 * one, rel=1e-12)


def test_the_translation_uses_only_public_names_of_the_lowering():
    source = inspect.getsource(translate_module)
    assert "from netsim.programs.lowering import Lowered, lower\n" in source and "_Builder" not in source and "_lower_collective" not in source
