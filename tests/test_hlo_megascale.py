"""Modules compiled for several slices: the TPU compiler's megascale send/recv simulated over the DCN.

The bundled module (scenarios/programs/hlo/tpu/v5e_4x4x2slices/dcn_psum.txt, libtpu 0.0.42.1 with
num_slices=2) reduce-scatters a gradient over a v5e 4x4 slice, then all-reduces each chip's 32 KiB
shard with its peer in the other slice, written as a megascale ALL_REDUCE send/recv. Its DCN time is
checked against the alpha-beta arithmetic of docs/multislice.md, by hand.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from netsim.analysis.hlo_stats import collectives
from netsim.programs.hlo import hlo_from_text, load_hlo
from netsim.programs.hlo.run import run_hlo, run_hlo_program

ROOT = Path(__file__).resolve().parent.parent
MODULE = ROOT / "scenarios/programs/hlo/tpu/v5e_4x4x2slices/dcn_psum.txt"

SEND = (
    "  %send = (bf16[16,8,128]{2,1,0}, u32[], token[]) send(%p, %after-all), channel_id=2, is_host_transfer=true, "
    'frontend_attributes={_xla_host_transfer_handler_name="xla_megascale_runtime",_xla_host_transfer_rendezvous="psum.7_0",'
    '_xla_megascale_transfer_type="KIND"}\n'
)
RECV = (
    "  %recv = (bf16[16,8,128]{2,1,0}, u32[], token[]) recv(%after-all), channel_id=1, is_host_transfer=true, "
    'frontend_attributes={_xla_host_transfer_handler_name="xla_megascale_runtime",_xla_host_transfer_rendezvous="psum.7_0",'
    '_xla_megascale_transfer_type="KIND"}\n'
)
TAIL = (
    "  %send-done = token[] send-done(%send), channel_id=2, is_host_transfer=true\n"
    "  %recv-done = (bf16[16,8,128]{2,1,0}, token[]) recv-done(%recv), channel_id=1, is_host_transfer=true\n"
    "  %gte = bf16[16,8,128]{2,1,0} get-tuple-element(%recv-done), index=0\n"
    "  ROOT %e = bf16[16,8,128]{2,1,0} exponential(%gte)\n}\n"
)


def _module(kind: str = "ALL_REDUCE", recv_first: bool = False) -> str:
    head = "HloModule m, num_partitions=4\nENTRY %main (p: bf16[16,8,128]) -> bf16[16,8,128] {\n"
    head += "  %p = bf16[16,8,128]{2,1,0} parameter(0)\n  %after-all = token[] after-all()\n"
    pair = (RECV + SEND if recv_first else SEND + RECV).replace("KIND", kind)
    return head + pair + TAIL


@pytest.fixture(scope="module")
def two_slices():
    return run_hlo(MODULE, "tpu-v5e:4x4x2slices")


@pytest.fixture(scope="module")
def one_slice():
    return run_hlo(MODULE, "tpu-v5e:4x4")


def test_the_module_is_one_slices_program_whose_dcn_all_reduce_is_a_send_recv_pair():
    text = MODULE.read_text()
    assert "num_partitions=16" in text and '_xla_megascale_transfer_type="ALL_REDUCE"' in text
    module = load_hlo(MODULE)
    assert module.devices == 16 and not module.unmodelled
    reduce_scatter, send = (step.op for step in module.collectives)
    assert (reduce_scatter.op, send.op, send.dcn, send.asynchronous, send.nbytes) == ("reduce-scatter", "all-reduce", "ALL_REDUCE", True, 16 * 8 * 128 * 2)


def test_the_dcn_all_reduce_takes_the_alpha_beta_time_by_hand(two_slices):
    # docs/multislice.md: psum over the DCN alone, 2 slices: L + max(L + (2c+1) h_n, 4c h_n), s = D/2, h_n = s / (2 B_n);
    # v5e: NICs of 100 Gbps = 12.5e9 B/s, 8 chips a host on 2 NICs (c = 4), L = 2 x 1 us (PCIe) + 2 x 10 us (NIC)
    by_name = {c["hlo_name"]: c for c in collectives(two_slices)}
    dcn = by_name["send"]
    d = 16 * 8 * 128 * 2
    h_n = (d / 2) / (2 * 12.5e9)
    latency = 2 * 1e-6 + 2 * 10e-6
    assert (dcn["op"], dcn["group_size"], dcn["bytes"]) == ("all-reduce", 2, d)
    assert dcn["time_s"] == pytest.approx(latency + max(latency + 9 * h_n, 16 * h_n), rel=1e-12)  # 49.898 us
    assert two_slices.program.module.devices == 32 and not two_slices.program.module.unmodelled


def test_each_slice_runs_its_ici_collective_as_a_lone_slice_does(two_slices, one_slice):
    ici = {c["hlo_name"]: c for c in collectives(two_slices)}["reduce-scatter"]
    alone = {c["hlo_name"]: c for c in collectives(one_slice)}["reduce-scatter"]
    assert ici["time_s"] == pytest.approx(alone["time_s"], rel=1e-12) and ici["group_size"] == 16
    # the step: reduce-scatter, then the DCN all-reduce, then the copy out (each waits for the one before)
    dcn = {c["hlo_name"]: c for c in collectives(two_slices)}["send"]["time_s"]
    assert two_slices.time == pytest.approx(ici["time_s"] + dcn + two_slices.compute_s, rel=1e-9)


def test_each_device_runs_at_its_coordinates_in_every_slice(two_slices):
    # the device map holds one slice's coordinates; device d of slice s runs on slice s's chip at d's coordinates
    placed = json.loads(MODULE.with_name("dcn_psum.devices.json").read_text())["devices"]
    by_hand = [s * 16 + d["coords"][0] * 4 + d["coords"][1] for s in range(2) for d in sorted(placed, key=lambda d: d["id"])]
    assert two_slices.program.device_map.nodes((2, 4, 4), 32, n_slices=2) == by_hand
    assert sorted(by_hand) == list(range(32))


def test_on_one_slice_the_dcn_all_reduce_is_listed_as_not_modelled(one_slice):
    ((reason, opcode),) = [(u.reason, u.opcode) for u in one_slice.program.module.unmodelled]
    assert opcode == "send"
    assert reason == "megascale ALL_REDUCE across slices: simulated on a topology of several slices (e.g. tpu-v5e:4x4x2slices), not on one"
    assert [c["hlo_name"] for c in collectives(one_slice)] == ["reduce-scatter"]


def test_the_bundled_program_file_runs_in_its_expected_time():
    import yaml

    path = MODULE.with_suffix(".yaml")
    assert run_hlo_program(path, compare=False).time == pytest.approx(yaml.safe_load(path.read_text())["expected"]["time_s"], rel=1e-12)


def test_the_send_and_recv_are_one_collective_the_dones_wait_for():
    module = hlo_from_text(_module(), "m.txt")
    (send, after) = module.steps
    assert send.op.name == "send" and send.op.groups == [[0], [1], [2], [3]]
    assert after.op.name == "e" and after.deps == (0,)  # the exponential reads the recv-done's value: the transfer
    played = run_hlo(module, "tpu-v5e:2x2x2slices")
    (dcn,) = collectives(played)
    assert (dcn["op"], dcn["group_size"]) == ("all-reduce", 2)


def test_other_megascale_transfers_and_a_recv_before_its_send_are_listed_not_dropped():
    gathered = hlo_from_text(_module("ALL_GATHER"), "m.txt")
    assert not gathered.collectives
    assert {(u.name, u.reason) for u in gathered.unmodelled} == {
        ("send", "megascale ALL_GATHER across slices: not simulated (netsim plays ALL_REDUCE)"),
        ("recv", "megascale ALL_GATHER across slices: not simulated (netsim plays ALL_REDUCE)"),
        ("send-done", "cross-slice (DCN) transfer: not simulated"),
        ("recv-done", "cross-slice (DCN) transfer: not simulated"),
    }
    early = hlo_from_text(_module(recv_first=True), "m.txt")
    assert ("recv", "a megascale recv written before its send: not simulated") in {(u.name, u.reason) for u in early.unmodelled}
    assert [s.op.name for s in early.collectives] == ["send"]


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None, reason="needs libtpu (the tpu extra)")
def test_with_libtpu_the_script_writes_the_bundled_module_again(tmp_path):
    env = {**os.environ, "ALLOW_MULTIPLE_LIBTPU_LOAD": "1", "JAX_PLATFORMS": "cpu"}
    command = [sys.executable, str(ROOT / "scripts/make_tpu_hlo_modules.py"), "--slice", "v5e_4x4x2slices", "--out", str(tmp_path)]
    subprocess.run(command, check=True, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    for name in ("dcn_psum.txt", "dcn_psum.devices.json"):
        assert (tmp_path / "v5e_4x4x2slices" / name).read_text() == (MODULE.parent / name).read_text(), name
