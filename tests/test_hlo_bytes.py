"""HBM bytes of HLO compute instructions (netsim/programs/hlo/compute.py), as XLA's cost analysis counts them, by hand."""

from __future__ import annotations

from netsim.programs.hlo.compute import instruction_bytes
from netsim.programs.hlo.text import parse_module

LAYER = 1024 * 1024 * 2  # one layer's bf16[1024, 1024] weights


def _bytes(text: str) -> int:
    module = parse_module(text)
    entry = module.entry
    return instruction_bytes(entry.root, {i.name: i.shape for i in entry.instructions}, module)


def test_a_scanned_layer_reads_its_own_weights_not_the_stack():
    text = """HloModule m
%f (w: bf16[48,1024,1024], i: s32[], x: bf16[1024,1024]) -> bf16[1024,1024] {
  %w = bf16[48,1024,1024]{2,1,0} parameter(0)
  %i = s32[] parameter(1)
  %x = bf16[1024,1024]{1,0} parameter(2)
  %z = s32[] constant(0)
  %d = bf16[1,1024,1024]{2,1,0} dynamic-slice(%w, %i, %z, %z), dynamic_slice_sizes={1,1024,1024}
  %b = bf16[1024,1024]{1,0} bitcast(%d)
  ROOT %a = bf16[1024,1024]{1,0} add(%b, %x)
}
ENTRY %main (w: bf16[48,1024,1024], i: s32[], x: bf16[1024,1024]) -> bf16[1024,1024] {
  %w = bf16[48,1024,1024]{2,1,0} parameter(0)
  %i = s32[] parameter(1)
  %x = bf16[1024,1024]{1,0} parameter(2)
  ROOT %l = bf16[1024,1024]{1,0} fusion(%w, %i, %x), kind=kLoop, calls=%f
}"""
    assert _bytes(text) == LAYER + 4 + LAYER + LAYER  # the slice taken, the index, x, the result (not 48 layers)


def test_arrays_in_on_chip_memory_move_no_hbm_bytes():
    text = """HloModule m
ENTRY %main (a: bf16[1024,1024], b: bf16[1024,1024]) -> bf16[1024,1024] {
  %a = bf16[1024,1024]{1,0:T(8,128)(2,1)S(1)} parameter(0)
  %b = bf16[1024,1024]{1,0:T(8,128)(2,1)} parameter(1)
  ROOT %s = bf16[1024,1024]{1,0:T(8,128)(2,1)S(1)} add(%a, %b)
}"""
    assert _bytes(text) == LAYER  # only b is in HBM; a and the result are in memory space 1


def test_a_fusion_updating_a_buffer_in_place_moves_the_update_only():
    text = """HloModule m
%f (buf: bf16[1024,1024], u: bf16[8,1024], i: s32[]) -> bf16[1024,1024] {
  %buf = bf16[1024,1024]{1,0} parameter(0)
  %u = bf16[8,1024]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %z = s32[] constant(0)
  ROOT %d = bf16[1024,1024]{1,0} dynamic-update-slice(%buf, %u, %i, %z)
}
ENTRY %main (buf: bf16[1024,1024], u: bf16[8,1024], i: s32[]) -> bf16[1024,1024] {
  %buf = bf16[1024,1024]{1,0} parameter(0)
  %u = bf16[8,1024]{1,0} parameter(1)
  %i = s32[] parameter(2)
  ROOT %l = bf16[1024,1024]{1,0} fusion(%buf, %u, %i), kind=kLoop, calls=%f
}"""
    assert _bytes(text) == 8 * 1024 * 2 + 4 + 8 * 1024 * 2  # the update read, the index, the update written
