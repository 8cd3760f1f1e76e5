"""Copies on each device's DMA engine (copy-start / copy-done, host transfers): once, at their real size, beside compute.

Times are checked against hand arithmetic on a v5e chip: 1.97e14 FLOP/s, 8.1e11 B/s of HBM.
"""

from __future__ import annotations

import pytest

from netsim.programs.hlo import hlo_from_text
from netsim.programs.hlo.run import run_hlo

PEAK, HBM = 1.97e14, 8.1e11
MIB = 2**20

# An MLP layer pair, x [8192, 4096] @ w1 [4096, 4096] then @ w2 [4096, 4096] (bf16): w2 (32 MiB) is
# prefetched by a copy-start before the first dot and waited for (copy-done) before the second.
MLP = """HloModule mlp, is_scheduled=true, num_partitions=4
ENTRY %main (x: bf16[8192,4096], w1: bf16[4096,4096], w2: bf16[4096,4096]) -> bf16[8192,4096] {
  %x = bf16[8192,4096]{1,0} parameter(0)
  %w1 = bf16[4096,4096]{1,0} parameter(1)
  %w2 = bf16[4096,4096]{1,0} parameter(2)
  %copy-start = (bf16[4096,4096]{1,0:S(1)}, bf16[4096,4096]{1,0}, u32[]) copy-start(%w2), cross_program_prefetch_index=0
  %h = bf16[8192,4096]{1,0} dot(%x, %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %copy-done = bf16[4096,4096]{1,0:S(1)} copy-done(%copy-start)
  ROOT %y = bf16[8192,4096]{1,0} dot(%h, %copy-done), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}"""


@pytest.fixture(scope="module")
def mlp():
    return run_hlo(hlo_from_text(MLP), "tpu-v5e:2x2")


def test_a_32_mib_prefetch_is_one_dma_of_32_mib(mlp):
    (copy,) = [s for s in mlp.program.module.steps if s.op.opcode == "copy-start"]
    assert (copy.op.unit, copy.op.nbytes) == ("dma", 32 * MIB)  # the copied array once, not the tuple (2 buffers + a u32) and the operand
    dma = mlp.leaves[0].playback.dma_units
    assert sorted(dma) == [0, 1, 2, 3]
    assert all(s.steps == 1 and s.busy_s == pytest.approx(32 * MIB / HBM, rel=1e-12) for s in dma.values())  # 41.4 us each


def test_the_dma_overlaps_the_first_dot(mlp):
    dot = 2 * 8192 * 4096 * 4096  # FLOPs of each dot; MXU-bound: its bytes (64 + 32 + 64 MiB) take 207 us, its FLOPs 1.395 ms
    assert dot / PEAK > 160 * MIB / HBM
    assert mlp.time == pytest.approx(2 * dot / PEAK, rel=1e-12)  # the two dots back to back: the 41.4 us copy is hidden
    compute = mlp.leaves[0].playback.compute_units[0]
    assert (compute.steps, compute.busy_s) == (2, pytest.approx(2 * dot / PEAK, rel=1e-12))


def test_a_copy_waited_for_at_once_is_exposed():
    text = MLP.replace(
        "  %h = bf16[8192,4096]{1,0} dot(%x, %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  %copy-done",
        "  %copy-done",
    ).replace("dot(%h, %copy-done)", "dot(%x, %copy-done)")
    r = run_hlo(hlo_from_text(text), "tpu-v5e:2x2")
    assert r.time == pytest.approx(32 * MIB / HBM + 2 * 8192 * 4096 * 4096 / PEAK, rel=1e-12)  # the copy, then the dot


def test_both_engines_play_the_dma_engine_alike(mlp):
    other = run_hlo(hlo_from_text(MLP), "tpu-v5e:2x2", engine="processes")
    assert other.time == mlp.time
    assert other.leaves[0].playback.dma_units == mlp.leaves[0].playback.dma_units
    assert (other.leaves[0].playback.computes.started_at == mlp.leaves[0].playback.computes.started_at).all()
