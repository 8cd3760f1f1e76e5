"""Bundles (messages of several chunks) and the multiaxis_bundled all_gather."""

from __future__ import annotations

import math

import numpy as np
import pytest

import netsim
from netsim import Mesh, outputs
from netsim.algorithms.bundled import bundles as bundle_table
from netsim.algorithms.bundled import gather_array
from netsim.algorithms.bundles import Bundle, BundleTable, made_of_arrays, opened_codes, unbundled
from netsim.algorithms.planning import _with_deps
from netsim.algorithms.registry import ALGORITHMS
from netsim.algorithms.schedule import build_schedule
from netsim.algorithms.transfers import TransferTable
from netsim.analysis.closed_forms import multiaxis_bundled
from netsim.checks.errors import InvariantError
from netsim.checks.invariants import check_playback
from netsim.checks.memory import transfers_of
from netsim.engine import EngineError, play
from netsim.engine.compiled_bundles import BundledBuffers
from netsim.network.topology import torus
from netsim.semantics.chunks import SizeOnly
from netsim.semantics.gather import AllGatherLayout

ALPHA, B = 1e-6, 45e9
NAMES = ("x", "y", "z")


def mesh_of(dims):
    topo = torus(dims, bandwidth_Bps=B, latency_s=ALPHA)
    return Mesh(dict(zip(NAMES, dims, strict=False)), topo)


def made_of(key, bundles, is_sent):
    """What a device takes to make bundle ``key``, one part at a time (the reference of made_of_arrays)."""
    out = []
    for part in bundles[key]:
        if part in bundles and not is_sent(part):
            out.extend(made_of(part, bundles, is_sent))
        else:
            out.append(part)
    return out


def test_made_of_reference_makes_again_what_it_is_not_sent():
    table = {"abc": ("ab", "c"), "ab": ("a", "b")}
    assert made_of("abc", table, lambda key: key == "c") == ["a", "b", "c"]
    assert made_of("abc", table, lambda key: key in ("ab", "c")) == ["ab", "c"]


def reference_all_gather(x, groups):
    """JAX's all_gather(axis=0, tiled=False) with axis_index_groups, written independently."""
    out = np.empty((x.shape[0], len(groups[0]), *x.shape[1:]), x.dtype)
    for group in groups:
        for d in group:
            out[d] = x[list(group)]
    return out


# --- the pieces -----------------------------------------------------------------------


def test_bundle_refers_to_its_parts_and_weighs_them():
    a, b = np.arange(3, dtype=np.int64), np.arange(5, dtype=np.int8)
    bundle = Bundle([a, Bundle([b])])
    assert bundle.nbytes == 24 + 5
    assert bundle.parts[0] is a and bundle.parts[1].parts[0] is b


def test_unbundled_opens_nested_bundles_and_refuses_a_chunk_held_twice():
    a, b, c = (np.full(2, v) for v in range(3))
    table = {"ab": ("a", "b"), "abc": ("ab", "c")}
    opened = unbundled({"abc": Bundle([Bundle([a, b]), c])}, table)
    assert set(opened) == {"a", "b", "c"} and opened["a"] is a and opened["c"] is c
    with pytest.raises(ValueError, match=r"^chunk 'a' is held twice$"):
        unbundled({"ab": Bundle([a, b]), "a": a}, table)


def test_bundle_table_is_the_mapping_it_was_built_from():
    plain = {(4, 0): ((0, 0), (2, 0)), (6, 1): ((4, 0), (1, 1), (3, 1))}
    table = BundleTable.from_dict(plain)
    assert dict(table) == plain and len(table) == 2 and (5, 0) not in table
    with pytest.raises(ValueError, match=r"^ptr must have 3 entries ending at 5$"):
        BundleTable(table.key_array, np.array([0, 2, 4]), table.part_array)


def test_made_of_arrays_agrees_with_made_of_one_by_one():
    table = bundle_table((3, 2, 2), (True, True, True))
    pieces = 6
    codes = table.codes(pieces)
    rng = np.random.default_rng(1)
    keys = list(table)
    chosen = [keys[k] for k in rng.choice(len(keys), 40, replace=False)]
    devices = rng.integers(0, 12, 40)
    sent = {(int(d), key) for d in range(12) for key in keys if rng.random() < 0.3}
    which, part = made_of_arrays(
        codes,
        devices,
        np.array([b * pieces + p for b, p in chosen]),
        lambda d, c: np.array([(int(x), (int(y) // pieces, int(y) % pieces)) in sent for x, y in zip(d, c, strict=True)], bool),
    )
    for k, (device, key) in enumerate(zip(devices.tolist(), chosen, strict=True)):
        expected = made_of(key, table, lambda part, device=device: (device, part) in sent)
        got = [(int(c) // pieces, int(c) % pieces) for c in part[which == k]]
        assert sorted(got) == sorted(expected)


def test_opened_codes_give_every_chunk_a_bundle_carries():
    dims = (2, 3, 2)
    table = bundle_table(dims, (True,) * 3)
    n, pieces = math.prod(dims), 6
    keys = np.array([b * pieces + p for b, p in table], np.int64)
    ptr, flat = opened_codes(table.codes(pieces), keys)
    for k, key in enumerate(table):
        expected = sorted(b * pieces + p for b, p in unbundled({key: _payload(key, table)}, table))
        assert sorted(flat[ptr[k] : ptr[k + 1]].tolist()) == expected
        assert all(c // pieces < n for c in expected)  # only real blocks inside


def _payload(key, table):
    parts = table.get(key)
    return SizeOnly(1) if parts is None else Bundle([_payload(p, table) for p in parts])


# --- the schedule ---------------------------------------------------------------------


@pytest.mark.parametrize("dims", [(2, 2), (4, 4), (2, 3, 4), (4, 4, 4)])
def test_bundled_plan_has_one_transfer_per_step_per_link_direction_and_part(dims):
    k, n = len(dims), math.prod(dims)
    moves = gather_array(dims, (True,) * k)
    # every part goes through every axis; each stage: n members x (d-1) steps x 2 halves
    assert len(moves) == k * sum(n * (d - 1) * 2 for d in dims)
    # the array is ordered by step, then sender
    assert np.all(np.diff(moves[:, 0] * n + moves[:, 1]) >= 0)


@pytest.mark.parametrize(("dims", "axes"), [((4, 4, 4), ("x", "y", "z")), ((4, 4, 4), ("x", "y")), ((2, 3, 4), ("z", "x"))])
def test_the_memory_estimate_counts_the_transfers_the_plan_makes(dims, axes):
    mesh = mesh_of(dims)
    groups = mesh.groups(axes)
    s = build_schedule("gather", groups, "multiaxis_bundled", group_shape=groups.shape, wraparound=groups.wraparound)
    assert transfers_of(ALGORITHMS["multiaxis_bundled"], math.prod(dims), groups.shape) == len(s.transfers)


def test_a_member_makes_its_bundle_only_once_its_parts_have_arrived():
    s = build_schedule("gather", [list(range(8))], "multiaxis_bundled", group_shape=(2, 2, 2))
    t, table = s.transfers, s.bundles
    arrivals = {}
    for i, tr in enumerate(t):
        arrivals.setdefault((tr.dst, tr.key), []).append(i)
    for i, tr in enumerate(t):
        if tr.key in table and (tr.src, tr.key) not in arrivals:  # a maker
            needed = made_of(tr.key, table, lambda part, src=tr.src: (src, part) in arrivals)
            waits = {a for part in needed for a in arrivals.get((tr.src, part), [])}
            assert waits and waits <= set(tr.deps), (i, tr)


def test_without_the_waits_for_parts_the_engine_refuses_to_make_a_bundle():
    dims = (2, 2)
    s = build_schedule("gather", [list(range(4))], "multiaxis_bundled", group_shape=dims)
    t = s.transfers
    ptr, idx = _with_deps(t.step, t.src, t.dst, t.block, t.piece)  # only waits for the same key
    bare = TransferTable(t.step, t.src, t.dst, t.block, t.piece, t.reduce, t.direction, t.phase, ptr, idx, s.bundles)
    start = [{(m, p): SizeOnly(8) for p in range(4)} for m in range(4)]
    with pytest.raises(EngineError, match=r"^device \d must send chunk \(\d, \d\) \(transfer #\d+\) but does not hold it$"):
        play(mesh_of(dims).topology, bare, start)


# --- results: JAX's output, closed-form times -----------------------------------------


@pytest.mark.parametrize(
    ("dims", "axes"),
    [((2, 2), ("x", "y")), ((4, 4), ("x", "y")), ((2, 4), ("x", "y")), ((2, 3, 4), ("x", "y", "z")), ((2, 2, 3), ("x", "z")), ((4, 2, 2), ("y", "z"))],
)
def test_output_equals_the_numpy_reference_bit_for_bit(dims, axes):
    mesh = mesh_of(dims)
    n = math.prod(dims)
    x = np.arange(n * 4 * 3 * 12, dtype=np.int32).reshape(n, 4, 36) * 7 - 1000
    groups = mesh.groups(axes)
    result = netsim.all_gather(x, axis_index_groups=groups, algorithm="multiaxis_bundled")
    expected = reference_all_gather(x, [tuple(g) for g in groups])
    assert result.output.dtype == x.dtype and np.array_equal(result.output, expected)
    assert result.verified


def test_lazy_output_holds_the_owners_own_arrays():
    mesh = mesh_of((2, 2, 2))
    x = np.arange(8 * 60, dtype=np.int64).reshape(8, 60)
    result = netsim.all_gather(x, axis_index_groups=mesh.groups(NAMES), algorithm="multiaxis_bundled", output="lazy")
    assert "the owner's own array" in result.verification
    assert np.array_equal(result.output[5], x) and np.array_equal(np.asarray(result.output), reference_all_gather(x, [tuple(range(8))]))


def test_the_lazy_check_finds_a_copied_chunk_inside_a_bundle():
    mesh = mesh_of((2, 2))
    x = np.arange(4 * 40, dtype=np.int32).reshape(4, 40)
    result = netsim.all_gather(x, axis_index_groups=mesh.groups(("x", "y")), algorithm="multiaxis_bundled", output="lazy")
    run = result.leaves[0].playback
    layout = AllGatherLayout.check(x, axis=0, tiled=False, axis_index_groups=None)
    sources = [{(d, p): piece for p, piece in enumerate(np.array_split(x[d], 4))} for d in range(4)]
    with pytest.raises(EngineError, match=r"^all_gather: a device holds a chunk that is not its owner's array; this is a netsim bug"):
        outputs._check_bundled_sources("all_gather", layout, run, sources, 4)  # not the arrays the run moved
    sources = [{key: chunk for key, chunk in held.items() if key not in run.bundles} for held in run.buffers]  # each device's own
    sources = [{(d, p): sources[d][(d, p)] for p in range(4)} for d in range(4)]
    outputs._check_bundled_sources("all_gather", layout, run, sources, 4)  # as it ran: fine
    device, key = next((d, k) for d, held in enumerate(run.buffers) for k in held if k in run.bundles)
    bundle = run.buffers[device][key]
    run.buffers[device][key] = Bundle([part.copy() for part in bundle.parts])  # same values, not the owners' arrays
    with pytest.raises(EngineError, match=r"^all_gather: a device holds a chunk that is not its owner's array; this is a netsim bug"):
        outputs._check_bundled_sources("all_gather", layout, run, sources, 4)


@pytest.mark.parametrize("dims", [(2, 2), (4, 4), (3, 3), (2, 2, 2), (4, 4, 4), (3, 3, 3)])
def test_time_equals_the_closed_form_on_equal_axes(dims):
    mesh = mesh_of(dims)
    n, k = math.prod(dims), len(dims)
    x = np.zeros((n, 2 * k * 1000), np.float32)  # pieces of equal size
    result = netsim.all_gather(x, axis_index_groups=mesh.groups(NAMES[:k]), algorithm="multiaxis_bundled", data="none")
    formula = sum(d - 1 for d in dims) * ALPHA + (n - 1) * x[0].nbytes / (2 * k * B)
    assert result.time == pytest.approx(formula, rel=1e-9)
    assert multiaxis_bundled(dims, x[0].nbytes, ALPHA, B).time_s == pytest.approx(formula, rel=1e-12)
    # multiaxis lets chunks go on as they arrive and hides some of the alphas; never slower
    streamed = netsim.all_gather(x, axis_index_groups=mesh.groups(NAMES[:k]), algorithm="multiaxis", data="none")
    assert streamed.time <= result.time


def test_unequal_axes_take_longer_than_the_slowest_part_alone():
    dims = (2, 3, 4)
    mesh = mesh_of(dims)
    x = np.zeros((24, 6 * 1000), np.float32)
    result = netsim.all_gather(x, axis_index_groups=mesh.groups(NAMES), algorithm="multiaxis_bundled", data="none")
    slowest = multiaxis_bundled(dims, x[0].nbytes, ALPHA, B).time_s
    # parts meet on an axis when their stages have different lengths: contention adds
    # time (about 10% here), but each part still has two link directions of its own most of the time
    assert slowest < result.time < 1.25 * slowest


def test_timing_only_equals_the_real_run_bit_for_bit():
    mesh = mesh_of((4, 4))
    x = np.arange(16 * 4 * 1001, dtype=np.float32).reshape(16, -1)  # pieces of unequal size
    real = netsim.all_gather(x, axis_index_groups=mesh.groups(("x", "y")), algorithm="multiaxis_bundled")
    sizes = netsim.all_gather(x, axis_index_groups=mesh.groups(("x", "y")), algorithm="multiaxis_bundled", data="none")
    assert real.time == sizes.time
    assert list(real.leaves[0].playback.arrived_at) == list(sizes.leaves[0].playback.arrived_at)


# --- the invariants catch a wrong bundle table ------------------------------------------


@pytest.mark.parametrize(
    ("parts", "detail"),
    [
        (((0, 0),), r"without chunk \(2, 0\)"),  # member 0's bundle forgets the block of member 2
        (((0, 0), (2, 0), (0, 0)), r"with chunk \(0, 0\) twice"),  # ... or carries its own twice
    ],
)
def test_the_invariants_open_the_bundles_a_device_ends_with(parts, detail):
    dims = (2, 2)
    s = build_schedule("gather", [list(range(4))], "multiaxis_bundled", group_shape=dims)
    t = s.transfers
    table = dict(s.bundles)
    table[(4, 0)] = parts
    wrong = TransferTable(t.step, t.src, t.dst, t.block, t.piece, t.reduce, t.direction, t.phase, t.dep_ptr, t.dep_idx, BundleTable.from_dict(table))
    start = [{(m, p): SizeOnly(8) for p in range(4)} for m in range(4)]
    topo = mesh_of(dims).topology
    run = play(topo, wrong, start)
    with pytest.raises(InvariantError, match=rf"^invariant 'chunks' violated: device 1 ends {detail}; this is a bug in netsim"):
        check_playback(topo, wrong, start, run, groups=s.groups, pattern="gather", wanted=lambda d: range(4))
    check_playback(topo, t, start, play(topo, t, start), groups=s.groups, pattern="gather", wanted=lambda d: range(4))  # the right table passes


def test_a_transfer_that_leaves_before_its_chunk_is_there_is_caught():
    dims = (2, 2)
    s = build_schedule("gather", [list(range(4))], "multiaxis_bundled", group_shape=dims)
    t = s.transfers
    start = [{(m, p): SizeOnly(8) for p in range(4)} for m in range(4)]
    topo = mesh_of(dims).topology
    run = play(topo, t, start)
    maker = next(i for i, tr in enumerate(t) if tr.key in s.bundles)
    # A schedule without the waits for parts, and a run in which member 0 made its bundle at 0 s
    ptr, idx = _with_deps(t.step, t.src, t.dst, t.block, t.piece)
    bare = TransferTable(t.step, t.src, t.dst, t.block, t.piece, t.reduce, t.direction, t.phase, ptr, idx, s.bundles)
    run.sent_at[maker] = 0.0
    with pytest.raises(InvariantError, match=rf"^invariant 'chunks' violated: transfer #{maker} leaves device 0 before chunk \(2, 0\) is there"):
        check_playback(topo, bare, start, run, groups=s.groups, pattern="gather", wanted=lambda d: range(4))


def test_bundles_are_refused_outside_gathers():
    dims = (2, 2)
    s = build_schedule("gather", [list(range(4))], "multiaxis_bundled", group_shape=dims)
    start = [{(m, p): SizeOnly(8) for p in range(4)} for m in range(4)]
    topo = mesh_of(dims).topology
    run = play(topo, s.transfers, start)
    with pytest.raises(InvariantError, match=r"bundles are only played in gathers and reductions, not in a all_to_all"):
        check_playback(topo, s.transfers, start, run, groups=s.groups, pattern="all_to_all", wanted=lambda d: range(4))


# --- reductions: each step's partial sums as one message ----------------------------------


@pytest.mark.parametrize(("dims", "axes"), [((2, 2), ("x", "y")), ((4, 4), ("x", "y")), ((2, 3, 4), ("x", "y", "z")), ((2, 2, 3), ("x", "z"))])
@pytest.mark.parametrize("engine", ["processes", "fast"])
def test_bundled_reductions_equal_the_numpy_reference_bit_for_bit(dims, axes, engine):
    mesh = mesh_of(dims)
    n = math.prod(dims)
    x = np.arange(n * n * 24, dtype=np.int32).reshape(n, n * 24) * 7 - 1000
    groups = [tuple(g) for g in mesh.groups(axes)]
    psum = netsim.psum(x, axis_index_groups=mesh.groups(axes), algorithm="multiaxis_bundled", engine=engine)
    scatter = netsim.psum_scatter(x, scatter_dimension=0, tiled=True, axis_index_groups=mesh.groups(axes), algorithm="multiaxis_bundled", engine=engine)
    for group in groups:
        total = x[list(group)].sum(axis=0)
        assert all(np.array_equal(psum.output[d], total) for d in group)
        share = total.reshape(len(group), -1)
        assert all(np.array_equal(scatter.output[d], share[k]) for k, d in enumerate(group))
    assert psum.verified and scatter.verified
    assert len(psum.leaves[0].schedule.transfers) == 2 * len(scatter.leaves[0].schedule.transfers)  # a gather's as many again


@pytest.mark.parametrize("dims", [(4, 4), (3, 3, 3), (4, 4, 4)])
def test_bundled_reduce_scatter_takes_the_bundled_gathers_time_and_psum_twice_that(dims, compiled_always):
    mesh = mesh_of(dims)
    n, k = math.prod(dims), len(dims)
    x = np.zeros((n, n * 2 * k * 250), np.float32)  # each member's block of every other: n blocks of equal pieces
    groups = mesh.groups(NAMES[:k])
    block = x[0].nbytes // n
    formula = sum(d - 1 for d in dims) * ALPHA + (n - 1) * block / (2 * k * B)  # the gather's stages, backwards
    scatter = netsim.psum_scatter(x, scatter_dimension=0, tiled=True, axis_index_groups=groups, algorithm="multiaxis_bundled", data="none", engine="fast")
    assert isinstance(scatter.leaves[0].playback.buffers, BundledBuffers)  # the compiled loop played it
    assert scatter.time == pytest.approx(formula, rel=1e-9)
    psum = netsim.psum(x, axis_index_groups=groups, algorithm="multiaxis_bundled", data="none", engine="fast")
    assert psum.time == pytest.approx(2 * formula, rel=1e-9)
    processes = netsim.psum(x, axis_index_groups=groups, algorithm="multiaxis_bundled", data="none", engine="processes")
    assert list(psum.leaves[0].playback.arrived_at) == list(processes.leaves[0].playback.arrived_at)  # the same events, bit for bit
    streamed = netsim.psum(x, axis_index_groups=groups, algorithm="multiaxis", data="none")
    assert streamed.time <= psum.time  # streaming hides some of the alphas
    plans = (len(psum.leaves[0].schedule.transfers), len(streamed.leaves[0].schedule.transfers))
    assert plans[0] == 2 * k * sum(2 * (d - 1) for d in dims) * n < plans[1]  # a step's partial sums: one message


def test_a_bundled_reduce_scatter_stage_waits_for_the_super_block_the_stage_before_summed():
    s = build_schedule("reduce_scatter", [list(range(4))], "multiaxis_bundled", group_shape=(2, 2))
    t = s.transfers
    # member 0 sends block 2 of piece 0 along axis 0 once member 1 has brought the super-block {0, 2} (key 8)
    second = next(i for i, x in enumerate(t) if x.step == 1 and x.src == 0 and x.key == (2, 0))
    assert [t[j].key for j in t[second].deps] == [(8, 0)] and t[t[second].deps[0]].dst == 0
    assert s.bundles[(8, 0)] == ((0, 0), (2, 0))


def test_explain_says_what_a_bundle_carries():
    from netsim.teaching.explain import explain

    mesh = mesh_of((2, 2))
    x = np.arange(4 * 8, dtype=np.int32).reshape(4, 8)
    text = explain(netsim.all_gather(x, axis_index_groups=mesh.groups(("x", "y")), algorithm="multiaxis_bundled"))
    # step 2 (stage 1): member 0 sends its line along axis 0 (members 0 and 2) as one message along axis 1
    assert "every device sends everything it has gathered so far as one bundle" in text
    assert "0 → 1   bundle of 2 blocks (0, 2)" in text


# --- the same on the compiled loop ---------------------------------------------------------


@pytest.fixture
def compiled_always(monkeypatch):
    """The fast player's compiled loop plays every bundled schedule, however small."""
    import netsim.engine.compiled as compiled

    monkeypatch.setattr(compiled, "MIN_TRANSFERS", 0)


@pytest.mark.parametrize(("dims", "axes"), [((2, 2), ("x", "y")), ((2, 3, 4), ("x", "y", "z")), ((2, 2, 3), ("x", "z")), ((3, 3, 3), ("x", "y", "z"))])
def test_the_compiled_loop_gives_the_reference_output_and_the_process_models_time(dims, axes, compiled_always):
    mesh = mesh_of(dims)
    n = math.prod(dims)
    x = np.arange(n * 4 * 3 * 12, dtype=np.int32).reshape(n, 4, 36) * 7 - 1000
    groups = mesh.groups(axes)
    compiled = netsim.all_gather(x, axis_index_groups=groups, algorithm="multiaxis_bundled", engine="fast")
    assert isinstance(compiled.leaves[0].playback.buffers, BundledBuffers)  # the compiled loop played it
    assert compiled.verified and np.array_equal(compiled.output, reference_all_gather(x, [tuple(g) for g in groups]))
    processes = netsim.all_gather(x, axis_index_groups=groups, algorithm="multiaxis_bundled", engine="processes")
    assert compiled.time == processes.time
    assert list(compiled.leaves[0].playback.arrived_at) == list(processes.leaves[0].playback.arrived_at)
    sizes = netsim.all_gather(x, axis_index_groups=groups, algorithm="multiaxis_bundled", engine="fast", data="none")
    assert sizes.time == processes.time


@pytest.mark.parametrize("dims", [(4, 4), (4, 4, 4)])
def test_the_compiled_loop_gives_the_closed_form(dims, compiled_always):
    mesh = mesh_of(dims)
    n, k = math.prod(dims), len(dims)
    x = np.zeros((n, 2 * k * 1000), np.float32)
    result = netsim.all_gather(x, axis_index_groups=mesh.groups(NAMES[:k]), algorithm="multiaxis_bundled", data="none", engine="fast")
    assert isinstance(result.leaves[0].playback.buffers, BundledBuffers)
    assert result.time == pytest.approx(sum(d - 1 for d in dims) * ALPHA + (n - 1) * x[0].nbytes / (2 * k * B), rel=1e-9)
