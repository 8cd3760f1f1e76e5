"""Collectives over several torus axes: schedules, and timings against closed forms.

Notation: N devices in the group, k axes of sizes n_i, s bytes per block, V = N*s the
gathered bytes, B the one-way bandwidth of a link direction, W_ici = 2B (the scaling book's
bidirectional bandwidth of one axis), alpha the hop latency.

Timing-only runs play the schedule with stand-ins for arrays that carry just a size, so a
4x4x4 all_gather of 6 MiB blocks costs no memory; the engine moves whatever it is given
and charges nbytes / bandwidth. The outputs of the same algorithms are checked against the
reference in tests/test_mesh.py and by every bundled scenario.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pytest
from conftest import ROOT
from test_schedules import replay

import netsim
from netsim.algorithms.schedule import build_schedule
from netsim.algorithms.torus import line_gather, line_reduce_scatter
from netsim.engine import play
from netsim.network.device_mesh import Mesh
from netsim.network.presets import tpu_slice
from netsim.network.topology import mesh, torus

B = 45e9
ALPHA = 1e-6
W_ICI = 2 * B


@dataclass(frozen=True)
class Sized:
    """A payload that is only a size: what the engine needs to time a transfer."""

    nbytes: int

    def __add__(self, other: Sized) -> Sized:
        assert other.nbytes == self.nbytes
        return self


def timing(topology, pattern, shape, block_bytes, algorithm="multiaxis", wraps=None):
    """Simulated time of one group of all devices, laid row-major over ``shape``."""
    n = math.prod(shape)
    schedule = build_schedule(pattern, [list(range(n))], algorithm, group_shape=shape, wraparound=wraps)
    q, r = divmod(block_bytes, schedule.pieces)
    sizes = [q + (p < r) for p in range(schedule.pieces)]
    buffers = [{(b, p): Sized(sizes[p]) for b in range(n) for p in range(schedule.pieces) if pattern != "gather" or b == d} for d in range(topology.n_devices)]
    return play(topology, schedule.transfers, buffers).time


def run(name):
    return netsim.simulate(netsim.load_scenario(ROOT / "scenarios" / f"{name}.yaml"))


# --- schedules ------------------------------------------------------------------------------------

SHAPES = [((2, 3), (True, True)), ((4, 4), (True, False)), ((2, 2, 2), (True, True, True)), ((3, 1, 2), (False, True, False)), ((5,), (False,))]


@pytest.mark.parametrize("algorithm", ["multiaxis", "dimension_ordered"])
@pytest.mark.parametrize(("shape", "wraps"), SHAPES)
def test_every_block_reaches_everyone_once_and_every_sum_is_complete(algorithm, shape, wraps):
    n = math.prod(shape)
    group = list(range(n))[::-1]
    gather = build_schedule("gather", [group], algorithm, shape, wraps)
    assert all(count == 1 for count in Counter((t.dst, t.key) for t in gather.transfers).values())
    held = replay(gather, n)
    assert all(held[(d, (b, p))] == {group[b]} for d in group for b in range(n) for p in range(gather.pieces))
    scatter = build_schedule("reduce_scatter", [group], algorithm, shape, wraps)
    held = replay(scatter, n)
    assert all(held[(d, (pos, p))] == set(group) for pos, d in enumerate(group) for p in range(scatter.pieces))
    total = build_schedule("all_reduce", [group], algorithm, shape, wraps)
    held = replay(total, n)
    assert all(held[(d, (b, p))] == set(group) for d in group for b in range(n) for p in range(total.pieces))
    # multiaxis cuts a block in two per axis it moves along; an axis of one member moves nothing
    moving = sum(d > 1 for d in shape)
    assert gather.pieces == (2 * moving if algorithm == "multiaxis" else 2)
    assert gather.group_shape == tuple(d for d in shape if d > 1)


def test_on_one_wrapped_axis_multiaxis_is_the_bidirectional_ring():
    for pattern in ("gather", "reduce_scatter", "all_reduce"):
        ring = build_schedule(pattern, [[3, 1, 0, 2, 4]], "bidirectional_ring")
        for algorithm in ("multiaxis", "dimension_ordered"):
            assert build_schedule(pattern, [[3, 1, 0, 2, 4]], algorithm).transfers == ring.transfers


def test_multiaxis_keeps_every_axis_busy_with_equal_loads():
    # 4x4: each link direction carries (N-1)/(2k) = 3.75 blocks = 15 quarter-block chunks.
    s = build_schedule("gather", [list(range(16))], "multiaxis", (4, 4))
    t = torus((4, 4))
    load = Counter(t.route(x.src, x.dst, x.direction) for x in s.transfers)
    assert set(load.values()) == {15} and len(load) == t.graph.number_of_edges()
    ordered = Counter(t.route(x.src, x.dst, x.direction) for x in build_schedule("gather", [list(range(16))], "dimension_ordered", (4, 4)).transfers)
    # dimension-ordered: 3 half blocks on each data link, 12 on each model link
    assert sorted(set(ordered.values())) == [3, 12]


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_line_plans(n):
    moves = list(line_gather(n))
    assert max(m[0] for m in moves) == n - 2
    into_end = [m for m in moves if m[2] == n - 1]
    assert len(into_end) == 2 * (n - 1)  # both halves of every other block cross the last link
    assert all(abs(i - j) == 1 for _, i, j, *_ in moves)
    rs = list(line_reduce_scatter(n))
    assert max(m[0] for m in rs) == n - 2 and all(abs(i - j) == 1 for _, i, j, *_ in rs)


def test_bad_group_shapes():
    with pytest.raises(ValueError, match=r"^group_shape \(4, 2\) does not fit groups of 16: give positive sizes whose product is 16$"):
        build_schedule("gather", [list(range(16))], "multiaxis", (4, 2))
    with pytest.raises(ValueError, match=r"^wraparound must give one bool per axis of group_shape \(4, 4\), got \[True\]$"):
        build_schedule("gather", [list(range(16))], "multiaxis", (4, 4), [True])


# --- multi-axis all_gather against the scaling book's bound --------------------------------------


@pytest.mark.parametrize(("dims", "block"), [((4, 4), 4 << 20), ((4, 4, 4), 6 << 20)])
def test_multiaxis_all_gather_reaches_the_bound_and_dimension_ordered_is_slower(dims, block):
    k, n = len(dims), math.prod(dims)
    V = n * block
    book = V / (W_ICI * k)  # the scaling book: T = V / (W_ici * N_axes)
    exact = (n - 1) / n * book  # what each device must receive, over its 2k incoming links
    t = torus(dims)
    multiaxis = timing(t, "gather", dims, block)
    # Bandwidth-bound, every link direction is busy for exactly its share, except that it idles one
    # hop latency waiting for the last chunk from its neighbour, and that chunk takes one more to land.
    assert multiaxis == pytest.approx(exact + 2 * ALPHA, rel=1e-9)
    assert multiaxis == pytest.approx(exact, rel=0.02)
    # Against the book's formula as written: 4x4x4 is within 2 %; on 4x4 the time is 15/16 of it
    # (plus 2 us), because V counts the 1/16 every device already holds.
    assert multiaxis / book == pytest.approx((n - 1) / n + 2 * ALPHA / book, rel=1e-9)
    if n == 64:
        assert multiaxis == pytest.approx(book, rel=0.02)
    # Dimension-ordered: the last axis must carry every block not already in its ring,
    # (n_last - 1)/n_last of V over one axis, while the other axes' links sit idle part of the time.
    last = dims[-1]
    ordered = timing(t, "gather", dims, block, "dimension_ordered")
    assert ordered == pytest.approx((last - 1) / last * V / W_ICI + 2 * ALPHA, rel=1e-9)
    ratio = ordered / multiaxis
    bandwidth_ratio = ((last - 1) / last) / ((n - 1) / n / k)  # 1.6 on 4x4, 2.29 on 4x4x4
    assert ratio == pytest.approx(bandwidth_ratio, rel=0.01)
    assert ratio > (1.55 if n == 16 else 2.2)


@pytest.mark.parametrize(("dims", "block"), [((4, 4), 4 << 20), ((4, 4, 4), 6 << 20)])
def test_multiaxis_reduce_scatter_and_psum_are_bandwidth_bound_too(dims, block):
    k, n = len(dims), math.prod(dims)
    exact = (n - 1) / n * n * block / (W_ICI * k)  # V = one device's input = n blocks
    hops = sum(d - 1 for d in dims)
    t = torus(dims)
    rs = timing(t, "reduce_scatter", dims, block)
    assert exact + ALPHA <= rs <= exact + hops * ALPHA
    assert rs == pytest.approx(exact, rel=0.02)
    if k == 2:  # (4x4x4 too, but it takes seconds)
        ar = timing(t, "all_reduce", dims, block)
        assert 2 * exact + ALPHA <= ar <= 2 * exact + 2 * hops * ALPHA  # the book's all-reduce: twice the all_gather


def test_bundled_4x4_scenarios_match_their_closed_forms():
    s, n = 256 << 10, 16
    V = n * s
    multi, ordered = run("allgather_torus4x4_multiaxis"), run("allgather_torus4x4_dimension_ordered")
    assert multi.verified and ordered.verified
    assert multi.time == pytest.approx((n - 1) / n * V / (W_ICI * 2) + 2 * ALPHA, rel=1e-9)
    assert ordered.time == pytest.approx(3 / 4 * V / W_ICI + 2 * ALPHA, rel=1e-9)
    assert multi.time == pytest.approx(V / (W_ICI * 2), rel=0.025)  # the book's 23.30 us
    assert ordered.time / multi.time == pytest.approx(1.5497, rel=1e-4)


# --- the scaling book's TPU v4 example ------------------------------------------------------------


def test_the_books_tpu_v4_all_gather_over_x():
    # bf16 [B, D] = [1024, 4096] sharded [B_X, D_Y] on a v4 4x4x4 (W_ici = 9e10 B/s), all_gather over X.
    # The shard is [256, 1024] int16 (2 bytes, like bf16); the gathered [B, D_Y] is V bytes.
    V = 2 * 1024 * 4096 // 4
    book = V / 9e10
    assert book == pytest.approx(23.3e-6, rel=1e-3)
    result = run("allgather_tpu_v4_book_example")
    shard = V // 4
    assert result.bytes_per_device == shard and result.verified
    assert result.groups[:2] == ((0, 16, 32, 48), (1, 17, 33, 49))  # X is physical axis 0
    # the book's scheme: each shard both ways, 2 hops of a whole shard at 45 GB/s each way
    assert result.time == pytest.approx(2 * (ALPHA + shard / 45e9), rel=1e-9)
    assert result.time - 2 * ALPHA == pytest.approx(book, rel=1e-9)  # exactly V / W_ici
    # netsim's default over the axis (the bidirectional ring): 3 hops of half a shard
    scenario = netsim.load_scenario(ROOT / "scenarios" / "allgather_tpu_v4_book_example.yaml")
    default = netsim.all_gather(scenario.make_input(), axis=0, tiled=True, axis_index_groups=scenario.groups)
    assert default.algorithm == "multiaxis"
    assert default.time == pytest.approx(3 * (ALPHA + shard / (2 * 45e9)), rel=1e-9)
    np.testing.assert_array_equal(default.output, result.output)


# --- an axis without wraparound -------------------------------------------------------------------


def line_time(n, s):
    """The line algorithm: both halves of every block go both ways, pipelined. The time is the
    longer of two paths: the second half of the farthest block, n-1 hops behind the first half,
    (n-1)(alpha + c) + c; or the link into an end, which carries 2(n-1) halves, 2(n-1)c + alpha.
    c = s/(2B), the time of half a block on a link."""
    c = s / (2 * B)
    return max((n - 1) * (ALPHA + c) + c, 2 * (n - 1) * c + ALPHA)


@pytest.mark.parametrize("n", [2, 3, 4, 8])
@pytest.mark.parametrize("s", [64, 4096, 65536, 1 << 20])
def test_the_line_algorithm_takes_its_closed_form(n, s):
    assert timing(mesh((n,)), "gather", (n,), s, wraps=(False,)) == pytest.approx(line_time(n, s), rel=1e-9)


def test_an_axis_without_wraparound_is_slower_by_the_closed_form():
    # TPU v5e 8x4: the axis of 4 does not wrap. The same axis with wraparound runs the
    # bidirectional ring, (n-1)(alpha + s/(2B)).
    n, s = 4, 256 << 10
    line, wrapped = run("allgather_tpu_v5e_8x4_line"), run("allgather_torus8x4_wrapped")
    assert line.verified and wrapped.verified and line.groups == wrapped.groups
    ring = (n - 1) * (ALPHA + s / (2 * B))
    assert wrapped.time == pytest.approx(ring, rel=1e-9)
    assert line.time == pytest.approx((n - 1) * s / B + ALPHA, rel=1e-9)  # bandwidth-bound: s/(2B) >= alpha
    assert line.time / wrapped.time == pytest.approx(line_time(n, s) / ring, rel=1e-9)  # 1.574
    # the ratio tends to 2 as the payload grows: "typically doubles the time"
    big = 64 << 20
    assert line_time(n, big) / ((n - 1) * (ALPHA + big / (2 * B))) == pytest.approx(2, rel=0.01)


def test_a_ring_forced_onto_a_line_is_slower_still():
    # The bidirectional ring's closing transfers take the long way, n-1 hops, over links the
    # neighbours' transfers use too.
    m = Mesh({"data": 8, "model": 4}, tpu_slice("tpu-v5e:8x4"))
    x = np.zeros((32, 1 << 16), np.float32)
    groups = m.groups("model")
    line = netsim.all_gather(x, axis_index_groups=groups)
    forced = netsim.all_gather(x, axis_index_groups=groups, algorithm="bidirectional_ring")
    assert line.time == pytest.approx(line_time(4, 1 << 18), rel=1e-9)
    assert forced.time > line.time
    assert max(len(route) for route in forced.leaves[0].playback.routes) == 3


def test_a_whole_torus_without_a_mesh_runs_the_multi_axis_algorithm_and_says_so():
    x = np.zeros((16, 4096), np.float32)
    default = netsim.all_gather(x, topology=netsim.torus((4, 4)))
    assert default.algorithm == "multiaxis" and default.axes == ("physical axis 0", "physical axis 1")
    ring = netsim.all_gather(x, topology=netsim.torus((4, 4)), algorithm="bidirectional_ring")
    assert ring.time > 2 * default.time  # a 1-D ring routed through the torus
    line = netsim.psum(x, topology=netsim.mesh((4, 4)))  # without wraparound: the line algorithm on each axis
    assert line.algorithm == "multiaxis" and line.verified
    assert netsim.all_gather(x[:4], topology=netsim.torus((4,))).algorithm == "bidirectional_ring"  # one axis: unchanged
    groups = netsim.all_gather(x, topology=netsim.torus((4, 4)), axis_index_groups=[list(range(8)), list(range(8, 16))])
    assert groups.algorithm == "bidirectional_ring"  # groups given: as asked


# (8, 2, 2) and (4, 4, 4) in place of the 8x8x8 pod: the same kinds of axes (an axis of 8, three even axes) with 1/16
# and 1/8 of its devices; the pod's 262,144 moves per layout, built one tuple at a time, took 1 GB and 12 s of CPU
@pytest.mark.parametrize("shape", [(4,), (2, 2), (4, 4), (3, 4, 5), (4, 1, 3), (8, 2, 2), (4, 4, 4)])
@pytest.mark.parametrize(("algorithm", "orders"), [("multiaxis", "_rotations"), ("dimension_ordered", "_in_order")])
def test_the_axis_by_axis_gathers_planned_as_arrays_are_the_moves_one_by_one(shape, algorithm, orders):
    """multiaxis and dimension_ordered plan their gathers as int arrays: the same moves, in the same order, as the
    generator that yields them one tuple at a time (the array form keeps a pod's planning off the Python loop)."""
    import itertools

    from netsim.algorithms import ALGORITHMS
    from netsim.algorithms import torus as plans

    for wraps in itertools.product((True, False), repeat=len(shape)):
        one_by_one = np.array(list(plans._axis_by_axis("gather", getattr(plans, orders))(shape, wraps)), np.int64).reshape(-1, 6)
        as_array = ALGORITHMS[algorithm].gather_array(shape, wraps)
        assert as_array.dtype == np.int64 and as_array.shape == one_by_one.shape
        assert (as_array == one_by_one).all()
