"""HLO text import: hand-written snippets for every group spelling, id mode, async and tuple form, loops and errors."""
# ruff: noqa: E501  (HLO instructions are written on one line each, as XLA prints them)

from __future__ import annotations

import numpy as np
import pytest

from netsim.programs.hlo import Collective, Compute, hlo_from_text
from netsim.programs.hlo.groups import parse_replica_groups
from netsim.programs.hlo.shapes import parse_shape
from netsim.scenario import ScenarioError

ADD = "\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n"
"""The reduction the modules' all-reduces name (after ENTRY: the lines of the tests' instructions do not move)."""


def module(body: str, header: str = "num_partitions=8", computations: str = "") -> str:
    lines = "\n".join("  " + line.strip() for line in body.strip().splitlines())
    return f"HloModule m, is_scheduled=true, {header}\n\n{computations}\nENTRY %main (p: f32[8,16]) -> f32[] {{\n{lines}\n}}\n{ADD}"


def only_collective(text: str) -> Collective:
    (step,) = hlo_from_text(text).collectives
    return step.op


# ---- shapes -------------------------------------------------------------------------


def test_tpu_layouts_are_stripped_and_bytes_follow_the_dtype():
    assert parse_shape("bf16[256,4096]{1,0:T(8,128)(2,1)}").nbytes == 256 * 4096 * 2
    assert parse_shape("f32[8,128]{1,0:T(8,128)S(1)}").dims == (8, 128)
    assert parse_shape("s4[16]{0:E(4)}").nbytes == 8  # packed half bytes
    assert parse_shape("f8e4m3fn[3,5]").nbytes == 15
    assert parse_shape("pred[]").nbytes == 1
    tuple_shape = parse_shape("(f32[2]{0}, (bf16[4]{0:T(4)}, u32[]), token[])")
    assert str(tuple_shape) == "(f32[2], (bf16[4], u32[]), token[])"


@pytest.mark.parametrize("text", ["q32[4]", "f32[4", "f32[a]", "f32"])
def test_bad_shapes_are_errors(text):
    with pytest.raises(ValueError):
        parse_shape(text)


# ---- replica groups, three spellings ------------------------------------------------------


def iota_reference(shape, dims, perm):
    return np.arange(np.prod(dims)).reshape(dims).transpose(perm).reshape(shape).tolist()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{0,1,2,3},{4,5,6,7}}", [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ("{{3,1},{0,2}}", [[3, 1], [0, 2]]),
        ("{}", []),
        ("[2,4]<=[8]", [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ("[4,2]<=[2,4]T(1,0)", [[0, 4], [1, 5], [2, 6], [3, 7]]),
        ("[2,4]<=[2,2,2]T(2,1,0)", iota_reference((2, 4), (2, 2, 2), (2, 1, 0))),
        ("[1,8]<=[8]", [list(range(8))]),
        ("mesh['x'=2,'y'=4] {'y'}", [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ("mesh['x'=2,'y'=4] {'x'}", [[0, 4], [1, 5], [2, 6], [3, 7]]),
        ("mesh['x'=2,'y'=4] {'x','y'}", [list(range(8))]),
        ("mesh['x'=2,'y'=4] {'y','x'}", [[0, 4, 1, 5, 2, 6, 3, 7]]),
        ("mesh['x'=2,'y'=4] {}", [[i] for i in range(8)]),
        # device_ids lay the mesh over the ids: here the mesh's x runs along ids 0..3
        ("mesh['x'=4,'y'=2], device_ids=([2,4]T(1,0)) {'x'}", [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ("mesh['axis_0'=4,'axis_1'=1,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_0'}", [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ("mesh['x'=2,'y'=2], device_ids=(3,1,0,2) {'y'}", [[3, 1], [0, 2]]),
        # sub-axes: 'x':(pre)size is the part of x after the first `pre` (major), of that size
        ("mesh['x'=8] {'x':(1)2}", [[0, 4], [1, 5], [2, 6], [3, 7]]),
        ("mesh['x'=8] {'x':(2)4}", [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ("mesh['x'=8] {'x':(4)2,'x':(1)2}", [[0, 4, 1, 5], [2, 6, 3, 7]]),
    ],
)
def test_every_group_spelling(text, expected):
    assert parse_replica_groups(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[2,4]<=[6]", "must have 6 elements"),
        ("[2,4]<=[2,4]T(0,0)", "is not a permutation"),
        ("mesh['x'=2] {'z'}", "unknown mesh axis"),
        ("mesh['x'=2,'y'=2], device_ids=(0,1,2,2) {'y'}", "device_ids must be a permutation"),
        ("mesh['x'=8] {'x':(3)2}", "does not divide"),
        ("(0,1)", "is none of"),
    ],
)
def test_bad_groups_are_errors(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_replica_groups(text)


# ---- id modes --------------------------------------------------------------------


def test_use_global_device_ids_names_flattened_ids():
    text = module(
        "%p = f32[8,16]{1,0} parameter(0)\n%ar = f32[8,16]{1,0} all-reduce(%p), channel_id=1, replica_groups=[4,2]<=[2,4]T(1,0), use_global_device_ids=true, to_apply=%add"
    )
    assert only_collective(text).groups == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_channel_without_global_ids_names_partitions_in_every_replica():
    text = module(
        "%p = f32[8,16]{1,0} parameter(0)\n%ag = f32[16,16]{1,0} all-gather(%p), channel_id=3, replica_groups={{0,1}}, dimensions={0}",
        header="replica_count=2, num_partitions=2",
    )
    collective = only_collective(text)
    assert collective.groups == [[0, 1], [2, 3]]
    assert (collective.dimension, [str(r) for r in collective.results]) == (0, ["f32[16,16]"])


def test_no_channel_names_replicas_in_every_partition():
    text = module(
        "%p = f32[8,16]{1,0} parameter(0)\n%ar = f32[8,16]{1,0} all-reduce(%p), replica_groups={}, to_apply=%add", header="replica_count=2, num_partitions=2"
    )
    assert only_collective(text).groups == [[0, 2], [1, 3]]


def test_collective_permute_pairs_in_partition_and_replica_ids():
    body = "%p = f32[8,16]{1,0} parameter(0)\n%cp = f32[8,16]{1,0} collective-permute(%p), CHANNELsource_target_pairs={{0,1},{1,0}}"
    assert only_collective(module(body.replace("CHANNEL", "channel_id=1, "), header="replica_count=2, num_partitions=2")).pairs == [
        (0, 1),
        (1, 0),
        (2, 3),
        (3, 2),
    ]
    assert only_collective(module(body.replace("CHANNEL", ""), header="replica_count=2, num_partitions=2")).pairs == [(0, 2), (2, 0), (1, 3), (3, 1)]


def test_groups_that_miss_devices_are_an_error_naming_the_line():
    text = module(
        "%p = f32[8,16]{1,0} parameter(0)\n%ar = f32[8,16]{1,0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add"
    )
    with pytest.raises(ScenarioError, match=r"^<hlo>: line 6: all-reduce ar: groups \[\[0, 1\]\] do not cover the 8 devices once each"):
        hlo_from_text(text)


# ---- collectives: shapes, tuple forms, async pairs ----------------------------------------------


def test_tuple_all_to_all_and_combined_all_reduce():
    text = module(
        """
        %p = f32[8,16]{1,0} parameter(0)
        %a = f32[2,16]{1,0} slice(%p), slice={[0:2], [0:16]}
        %b = f32[2,16]{1,0} slice(%p), slice={[2:4], [0:16]}
        %t = (f32[2,16]{1,0}, f32[2,16]{1,0}) all-to-all(%a, %b), channel_id=1, replica_groups=[4,2]<=[8]
        %ar = (f32[2,16]{1,0}, bf16[4]{0}) all-reduce(%a, %b), channel_id=2, replica_groups=[1,8]<=[8], use_global_device_ids=true, to_apply=%add
        """
    )
    a2a, ar = (s.op for s in hlo_from_text(text).collectives)
    assert (a2a.op, a2a.nbytes, a2a.groups, len(a2a.operands)) == ("all-to-all", 2 * 2 * 16 * 4, [[0, 1], [2, 3], [4, 5], [6, 7]], 2)
    assert (ar.op, ar.nbytes, [str(r) for r in ar.results]) == ("all-reduce", 2 * 2 * 16 * 4, ["f32[2,16]", "bf16[4]"])


ASYNC = """
%p = f32[8,16]{1,0} parameter(0)
%ags = (f32[8,16]{1,0}, f32[64,16]{1,0}) all-gather-start(%p), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}, use_global_device_ids=true, backend_config={"collective_algorithm_config":{"emitter":"RingEmitter","strategy":"UniDirection1DRingStrategy{colors:2}"}}
%e = f32[8,16]{1,0} exponential(%p)
%agd = f32[64,16]{1,0} all-gather-done(%ags)
%cps = (f32[8,16]{1,0}, f32[8,16]{1,0}, u32[], u32[]) collective-permute-start(%e), channel_id=2, source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}
%ars = f32[64,16]{1,0} all-reduce-start(%agd), channel_id=3, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%add
%n = f32[8,16]{1,0} negate(%e)
%ard = f32[64,16]{1,0} all-reduce-done(%ars)
%cpd = f32[8,16]{1,0} collective-permute-done(%cps)
%rss = ((f32[64,16]{1,0}), f32[8,16]{1,0}) async-start(%ard), calls=%rs_wrapped
%rsd = f32[8,16]{1,0} async-done(%rss)
ROOT %s = f32[8,16]{1,0} add(%cpd, %rsd)
"""

RS_WRAPPED = """%rs_wrapped (x: f32[64,16]) -> f32[8,16] {
  %x = f32[64,16]{1,0} parameter(0)
  ROOT %rs = f32[8,16]{1,0} reduce-scatter(%x), channel_id=4, replica_groups=[1,8]<=[8], use_global_device_ids=true, dimensions={0}, to_apply=%add
}
"""


def test_async_pairs_overlap_the_work_between_start_and_done():
    program = hlo_from_text(module(ASYNC, computations=RS_WRAPPED))
    by_name = {s.op.name: s for s in program.steps}
    assert list(by_name) == ["ags", "e", "cps", "ars", "n", "rss", "s"]
    ags, e, cps, ars, n, rss, s = by_name.values()
    assert ags.op.asynchronous and [str(r) for r in ags.op.results] == ["f32[64,16]"] and ags.op.nbytes == 8 * 16 * 4
    assert ags.op.compiler_algorithm == '{"emitter":"RingEmitter","strategy":"UniDirection1DRingStrategy{colors:2}"}'
    assert e.deps == ()  # runs while the all-gather is in flight
    assert cps.deps == (ags.index, e.index) and cps.op.pairs[0] == (0, 1)  # written after the all-gather's done
    assert ars.deps == (ags.index, e.index)  # reads the gathered array; the stream had waited for it at the done
    assert n.deps == (ags.index, e.index)  # overlaps the permute and the all-reduce
    assert (rss.op.op, rss.op.name, rss.deps) == ("reduce-scatter", "rss", (cps.index, ars.index, n.index))
    assert [str(r) for r in rss.op.results] == ["f32[8,16]"] and rss.op.dimension == 0
    assert s.deps == (cps.index, ars.index, n.index, rss.index)


def test_a_start_without_done_is_an_error():
    text = module("%p = f32[8,16]{1,0} parameter(0)\n%s = f32[8,16]{1,0} all-reduce-start(%p), channel_id=1, replica_groups={}, to_apply=%add")
    with pytest.raises(ScenarioError, match="line 6: s is started but never waited for"):
        hlo_from_text(text)


# ---- loops, compute, unmodelled ops ---------------------------------------------------------

LOOP = """%body (t: (s32[], f32[8,16])) -> (s32[], f32[8,16]) {
  %t = (s32[], f32[8,16]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %x = f32[8,16]{1,0} get-tuple-element(%t), index=1
  %cp = f32[8,16]{1,0} collective-permute(%x), channel_id=1, source_target_pairs={{0,1},{1,0}}
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  ROOT %r = (s32[], f32[8,16]{1,0}) tuple(%j, %cp)
}

%cond (t: (s32[], f32[8,16])) -> pred[] {
  %t = (s32[], f32[8,16]{1,0}) parameter(0)
  ROOT %c = pred[] constant(true)
}
"""


def test_while_body_runs_its_trip_count_and_carries_dependences():
    text = module(
        """
        %p = f32[8,16]{1,0} parameter(0)
        %z = s32[] constant(0)
        %t = (s32[], f32[8,16]{1,0}) tuple(%z, %p)
        %w = (s32[], f32[8,16]{1,0}) while(%t), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"3"}}
        ROOT %o = f32[8,16]{1,0} get-tuple-element(%w), index=1
        """,
        header="num_partitions=2",
        computations=LOOP,
    )
    program = hlo_from_text(text)
    labels = [s.label for s in program.steps]
    assert labels == ["cp[0]", "j[0]", "cp[1]", "j[1]", "cp[2]", "j[2]"]
    cps = [s for s in program.steps if s.op.name == "cp"]
    assert [s.deps for s in cps] == [(), (0, 1), (2, 3)]  # the permuted block of one iteration is the next one's input
    assert program.unmodelled == []


def test_a_loop_without_trip_count_is_timed_once_and_listed():
    text = module(
        "%p = f32[8,16]{1,0} parameter(0)\n%z = s32[] constant(0)\n%t = (s32[], f32[8,16]{1,0}) tuple(%z, %p)\n"
        "%w = (s32[], f32[8,16]{1,0}) while(%t), condition=%cond, body=%body",
        header="num_partitions=2",
        computations=LOOP,
    )
    program = hlo_from_text(text)
    assert [s.label for s in program.steps] == ["cp[0]", "j[0]"]
    ((name, opcode, line, reason),) = [(u.name, u.opcode, u.line, u.reason) for u in program.unmodelled]
    assert (name, opcode, line) == ("w", "while", text.splitlines().index("  %w = (s32[], f32[8,16]{1,0}) while(%t), condition=%cond, body=%body") + 1)
    assert "known_trip_count" in reason


FUSED = """%fused (a: bf16[64,256], b: bf16[256,128]) -> bf16[64,128] {
  %a = bf16[64,256]{1,0} parameter(0)
  %b = bf16[256,128]{1,0} parameter(1)
  ROOT %d = bf16[64,128]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_dot_and_convolution_flops_bytes_and_estimated_cycles():
    text = module(
        """
        %a = bf16[64,256]{1,0:T(8,128)(2,1)} parameter(0)
        %b = bf16[256,128]{1,0} parameter(1)
        %f = bf16[64,128]{1,0} fusion(%a, %b), kind=kOutput, calls=%fused, backend_config={"estimated_cycles":"5120"}
        %img = f32[4,32,32,3]{3,2,1,0} parameter(2)
        %k = f32[3,3,3,16]{3,2,1,0} parameter(3)
        %conv = f32[4,30,30,16]{3,2,1,0} convolution(%img, %k), window={size=3x3}, dim_labels=b01f_01io->b01f
        %bd = f32[4,8,16]{2,1,0} parameter(4)
        %be = f32[4,16,32]{2,1,0} parameter(5)
        %bdot = f32[4,8,32]{2,1,0} dot(%bd, %be), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
        """,
        computations=FUSED,
    )
    f, conv, bdot = (s.op for s in hlo_from_text(text).steps)
    assert isinstance(f, Compute) and f.flops == 2 * 64 * 256 * 128
    assert f.nbytes == (64 * 256 + 256 * 128 + 64 * 128) * 2 and f.estimated_cycles == 5120
    assert conv.flops == 2 * (4 * 30 * 30 * 16) * (3 * 3 * 3)
    assert bdot.flops == 2 * 4 * 8 * 32 * 16 and bdot.estimated_cycles is None


def test_ops_not_modelled_are_listed_with_their_line():
    text = module(
        """
        %p = f32[8,16]{1,0} parameter(0)
        %tok = token[] after-all()
        %s = (f32[8,16]{1,0}, u32[], token[]) send(%p, %tok), channel_id=5
        %sd = token[] send-done(%s), channel_id=5
        %cc = f32[8,16]{1,0} custom-call(%p), custom_call_target="MyKernel"
        ROOT %e = f32[8,16]{1,0} exponential(%cc)
        """
    )
    program = hlo_from_text(text)
    assert [(u.opcode, u.line) for u in program.unmodelled] == [("send", 7), ("send-done", 8), ("custom-call", 9)]
    assert "MyKernel" in program.unmodelled[2].reason
    assert [s.op.name for s in program.steps] == ["cc", "e"]  # the custom-call is timed by its bytes


# ---- errors name the line ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("HloModule m\nENTRY %main () -> f32[] {\n  %x = f32[] negate(%y)\n}", "line 3: negate x: unknown operand 'y'"),
        ("HloModule m\nENTRY %main () -> f32[] {\n  %x = q9[] constant(0)\n}", "line 3: unknown element type 'q9'"),
        ("HloModule m\nENTRY %main () -> f32[] {\n  x is not an instruction\n}", "line 3: expected an instruction"),
        ("HloModule m\nhello\n", "line 2: not understood: 'hello'"),
        ("HloModule m\nENTRY %main () -> f32[] {\n  %x = f32[] negate(%y\n}", "line 3: unclosed '\\(' after the opcode"),
        ('HloModule m\nENTRY %main () -> f32[] {\n  %x = f32[] constant(0), metadata={op_name="x}\n}', "line 3: unclosed quote"),
        ("HloModule m\nENTRY %main () -> f32[] {\n  %x = f32[] constant(0)\n", "line 2: computation main is not closed"),
        ("ENTRY %main () -> f32[] {\n  %x = f32[] constant(0)\n}", "line 1: no `HloModule name, ...` header"),
        (
            "HloModule m\nENTRY %main () -> f32[] {\n  %c = f32[] call(), to_apply=%nowhere\n}",
            "line 3: call c: to_apply=%nowhere names no computation of the module",
        ),
        (
            "HloModule m, num_partitions=2\nENTRY %main () -> f32[] {\n  %x = f32[4] parameter(0)\n  %a = f32[4] all-reduce(%x), channel_id=1, replica_groups=[2,2]<=[4], to_apply=%s\n}\n%s (a: f32[], b: f32[]) -> f32[] {\n  ROOT %t = f32[] add(%a, %b)\n}",
            "line 4: all-reduce a: groups .* do not cover the 2 devices",
        ),
        ("HloModule m\nENTRY %main () -> f32[] {\n  %x = f32[4] parameter(0)\n  %d = f32[4] all-reduce-done(%x)\n}", "line 4: all-reduce-done d waits for x"),
    ],
)
def test_malformed_hlo_is_one_error_naming_the_line(text, message):
    with pytest.raises(ScenarioError, match="^m.txt: " + message):
        hlo_from_text(text, "m.txt")
