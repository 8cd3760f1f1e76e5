"""FLOPs of HLO modules as XLA's cost analysis counts them (netsim/programs/hlo/flops.py).

Three references: XLA's own loop over (kernel, output) taps (``GetConvolutionFlops``,
transcribed below, independent of netsim's closed form); hand counts of small written
convolutions; and ``compiled.cost_analysis()["flops"]`` of TPU-compiled modules, recorded by
scripts/hlo_flops_libtpu.py in tests/hlo/flops/libtpu_flops.json (and compiled afresh where
libtpu is installed).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from netsim.programs.hlo.flops import Window, module_flops, valid_taps
from netsim.programs.hlo.text import parse_module

ROOT = Path(__file__).resolve().parent.parent
RECORDED = json.loads((ROOT / "tests" / "hlo" / "flops" / "libtpu_flops.json").read_text())


def xla_loop(w: Window, input_size: int, kernel_size: int, output_size: int) -> int:
    """XLA's GetConvolutionFlops inner loops, one spatial dim, as written there."""
    count = 0
    for k in range(kernel_size):
        for o in range(output_size):
            undilated = o * w.stride - w.pad_low + k * w.rhs_dilate
            index = undilated // w.lhs_dilate if w.lhs_dilate > 1 else undilated
            if undilated != index * w.lhs_dilate:
                continue
            if 0 <= index < input_size:
                count += 1
    return count


def test_valid_taps_equal_xla_loop_on_every_small_window():
    cases = itertools.product((1, 2, 5), (1, 3), (1, 2, 3), (0, 2), (0, 1), (1, 2, 3), (1, 2))
    for input_size, kernel, stride, pad_low, pad_high, lhs, rhs in cases:
        dilated = (input_size - 1) * lhs + 1 + pad_low + pad_high
        span = (kernel - 1) * rhs + 1
        if dilated < span:
            continue
        output = (dilated - span) // stride + 1
        w = Window(kernel, stride, pad_low, pad_high, lhs, rhs)
        assert valid_taps(w, input_size, kernel, output) == xla_loop(w, input_size, kernel, output), w


def _conv_module(lhs: str, rhs: str, out: str, attrs: str) -> str:
    return f"""HloModule m
ENTRY %main (a: {lhs}, b: {rhs}) -> {out} {{
  %a = {lhs} parameter(0)
  %b = {rhs} parameter(1)
  ROOT %c = {out} convolution(%a, %b), {attrs}
}}"""


@pytest.mark.parametrize(
    ("lhs", "rhs", "out", "attrs", "expected"),
    [
        # a 1-D convolution, 3 taps over 8 inputs, 'same' padding: 8 * 3 taps less the 2 on padding = 22; 4 in, 5 out, batch 2
        ("f32[2,8,4]", "f32[3,4,5]", "f32[2,8,5]", "window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f", 2 * 22 * 4 * 5 * 2),
        # a batch of 32 in a spatial dim of 1 input, window 32 padded 31 each side, reversed: one tap per output (32), not 32 * 32
        ("bf16[4,1,16]", "bf16[32,16,8]", "bf16[4,32,8]", "window={size=32 pad=31_31 rhs_reversal=1}, dim_labels=b0f_0io->b0f", 2 * 32 * 16 * 8 * 4),
        # lhs dilation 6 on 6 inputs, window 6, stride 5: each output (6) reads one real input: 6 taps, not 36
        ("bf16[2,6,8]", "bf16[6,8,16]", "bf16[2,6,16]", "window={size=6 stride=5 lhs_dilate=6}, dim_labels=b0f_0io->b0f", 2 * 6 * 8 * 16 * 2),
        # two feature groups: each output feature reads 4 / 2 input features; 2-D window 2x2 over 3x3, no padding: 4 outputs * 4 taps
        ("f32[1,3,3,4]", "f32[2,2,2,6]", "f32[1,2,2,6]", "window={size=2x2}, dim_labels=b01f_01io->b01f, feature_group_count=2", 2 * 16 * 2 * 6),
    ],
)
def test_hand_counted_convolutions(lhs, rhs, out, attrs, expected):
    assert module_flops(parse_module(_conv_module(lhs, rhs, out, attrs))) == expected


def test_elementwise_and_reduce_in_a_fusion_count_as_xla_does():
    text = """HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
%fused (p: bf16[16,32]) -> f32[16] {
  %p = bf16[16,32]{1,0} parameter(0)
  %c = f32[16,32]{1,0} convert(%p)
  %e = f32[16,32]{1,0} exponential(%c)
  %m = f32[16,32]{1,0} multiply(%e, %c)
  %z = f32[] constant(0)
  ROOT %r = f32[16]{0} reduce(%m, %z), dimensions={1}, to_apply=%add
}
ENTRY %main (a: bf16[16,32]) -> f32[16] {
  %a = bf16[16,32]{1,0} parameter(0)
  ROOT %f = f32[16]{0} fusion(%a), kind=kLoop, calls=%fused
}"""
    # convert 512 + multiply 512 (exponential is a transcendental: no FLOPs) + reduce (512 - 16) adds
    assert module_flops(parse_module(text)) == 512 + 512 + 496


def test_loops_counted_once_as_xla_or_by_their_trips():
    path = ROOT / "tests" / "hlo" / "flops" / "scan_layers.txt"  # 6 layers of tanh(x @ w), x [256 / 4, 512] per device
    module = parse_module(path.read_text())
    one_layer = 2 * 64 * 512 * 512 + 2 * 64 * 512  # the dot, and the two converts around tanh
    counter = 2  # the loop counter's scalar add and the condition's compare (HloCostAnalysis counts them; libtpu's figure leaves them out)
    assert module_flops(module) == one_layer + counter
    assert RECORDED["modules"]["tests/hlo/flops/scan_layers.txt"]["flops"] == one_layer
    assert module_flops(module, "trips") == 6 * (one_layer + 1)  # the body (its counter's add included) each trip; conditions not counted


@pytest.mark.parametrize("path", sorted(RECORDED["modules"]))
def test_module_flops_match_libtpu_cost_analysis(path):
    xla = RECORDED["modules"][path]["flops"]
    text = (ROOT / path).read_text()
    ours = module_flops(parse_module(text))
    unknown = text.count(" custom-call(")  # XLA adds -1 FLOP for each custom-call it cannot price; netsim counts 0
    assert abs(ours - xla) <= 0.02 * abs(xla) + unknown, (ours, xla)


COMPILE = """
import json, os, sys
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import topologies
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(np.array(topologies.get_topology_desc(platform="tpu", topology_name="v5e:2x2", chip_config_name="default").devices).reshape(4), ("x",))
a = lambda s, sp: jax.ShapeDtypeStruct(s, jnp.bfloat16, sharding=NamedSharding(mesh, P(*sp)))
def attention(q, k, v):
    return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(jnp.einsum("bqd,bkd->bqk", q, k), axis=-1), v)
def conv(x, k):
    return jax.lax.conv_general_dilated(x, k, (1, 2), ((2, 0), (1, 1)), lhs_dilation=(1, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"))
out = []
for fn, args in ((attention, [a((16, 256, 128), ("x",))] * 3), (conv, [a((4, 16, 16, 32), ()), a((3, 3, 32, 64), ())])):
    compiled = jax.jit(fn).lower(*args).compile()
    out.append([compiled.as_text(), compiled.cost_analysis()["flops"]])
json.dump(out, sys.stdout)
"""


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None, reason="needs libtpu (the jax[tpu] extra): the recorded figures are checked above")
def test_fresh_libtpu_compiles_match():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", COMPILE], check=True, env=env, capture_output=True, text=True, timeout=300)
    for text, xla in json.loads(done.stdout):
        assert abs(module_flops(parse_module(text)) - xla) <= 0.02 * xla
