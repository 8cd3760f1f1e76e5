"""Each invariant holds on real runs, and fires when a playback is corrupted on purpose."""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import sample_then_slow
from typer.testing import CliRunner

import netsim
from netsim.algorithms.schedule import Schedule, build_schedule
from netsim.checks.arrays import _Arrays, _dependency_order
from netsim.checks.chunks import _chunks_folded, _held_codes
from netsim.checks.chunks_compiled import chunks_pass
from netsim.checks.chunks_placed import _chunks_placed
from netsim.checks.conservation import _check_device_bytes
from netsim.checks.errors import InvariantError
from netsim.checks.invariants import check_playback
from netsim.cli.main import app
from netsim.engine import play
from netsim.network.topology import ring, torus

runner = CliRunner()


@pytest.fixture(autouse=True, params=["numpy", "compiled"])
def checked(request, monkeypatch):
    """Every test twice: as small runs check (NumPy), then as big ones do (each compiled pass first)."""
    if request.param == "compiled":
        monkeypatch.setattr("netsim.checks.arrays.COMPILED_MIN", 0)
    return request.param


def start_buffers(schedule: Schedule, n_devices: int, size: int = 8) -> list[dict]:
    """Each device's chunks at the start, written from the definition of each pattern."""
    buffers: list[dict] = [{} for _ in range(n_devices)]
    for group in schedule.groups:
        n = len(group)
        for k, device in enumerate(group):
            blocks = {"gather": [k], "all_to_all": [k * n + j for j in range(n)]}.get(schedule.pattern, range(n))
            for block in blocks:
                for piece in range(schedule.pieces):
                    buffers[device][(block, piece)] = np.full(size, device, np.int64)
    return buffers


def wanted_of(schedule: Schedule):
    def wanted(device):
        group = next(g for g in schedule.groups if device in g)
        n, k = len(group), group.index(device)
        return {"reduce_scatter": [k], "all_to_all": range(k, n * n, n)}.get(schedule.pattern, range(n))

    return wanted


def played(pattern="gather", algorithm="bidirectional_ring", groups=((0, 1, 2, 3),), topology=None):
    topology = topology or ring(4)
    schedule = build_schedule(pattern, groups, algorithm)
    buffers = start_buffers(schedule, topology.n_devices)
    run = play(topology, schedule.transfers, buffers)
    run.hops = list(run.hops)  # a plain list, so tests can corrupt it
    return topology, schedule, buffers, run


def check(topology, schedule, buffers, playback, transfers=None):
    check_playback(
        topology,
        schedule.transfers if transfers is None else transfers,
        buffers,
        playback,
        groups=schedule.groups,
        pattern=schedule.pattern,
        wanted=wanted_of(schedule),
    )


PLANS = [
    (pattern, algorithm)
    for pattern in ("gather", "reduce_scatter", "all_reduce", "all_to_all")
    for algorithm in sorted(netsim.ALGORITHMS)
    if netsim.ALGORITHMS[algorithm].runs(pattern)
]


@pytest.mark.parametrize(("pattern", "algorithm"), PLANS, ids=[f"{p}-{a}" for p, a in PLANS])
@pytest.mark.parametrize("groups", [((0, 1, 2, 3),), ((0, 2), (3, 1)), ((3, 0, 2, 1),)])
def test_real_runs_satisfy_every_invariant(pattern, algorithm, groups):
    check(*played(pattern, algorithm, groups))
    check(*played(pattern, algorithm, groups, topology=ring(4).fail_link(1, 2)))


def test_every_pattern_and_algorithm_is_covered():
    assert {p for p, _ in PLANS} == {"gather", "reduce_scatter", "all_reduce", "all_to_all"}
    assert {a for _, a in PLANS} == set(netsim.ALGORITHMS)


def test_ppermute_runs_satisfy_every_invariant():
    # pairs overlap (a device is one pair's source and another's destination, or its own)
    perm = [(0, 2), (2, 3), (3, 0), (1, 1)]
    x = np.arange(4 * 6, dtype=np.int32).reshape(4, 6)
    for topology in (ring(4), ring(4).fail_link(2, 3), torus((2, 2))):
        result = netsim.ppermute(x, perm, topology=topology)  # checks every invariant inside
        np.testing.assert_array_equal(result.output, x[[3, 1, 0, 2]])


def test_invariants_hold_with_multi_hop_routes_on_a_torus():
    t = torus((3, 3))
    groups = (tuple(range(9)),)
    check(*played("all_reduce", "ring", groups, topology=t))


def fires(invariant, message, topology, schedule, buffers, playback, transfers=None):
    with pytest.raises(InvariantError) as error:
        check(topology, schedule, buffers, playback, transfers)
    assert error.value.invariant == invariant
    assert message in str(error.value)
    assert str(error.value).startswith(f"invariant '{invariant}' violated: ")
    assert str(error.value).endswith("this is a bug in netsim, please report it")


# drained ---------------------------------------------------------------------------------


def test_a_transfer_that_never_arrived_is_caught():
    topology, schedule, buffers, run = played()
    run.arrived_at[5] = float("nan")
    fires("drained", f"transfers [5] never arrived: devices [{schedule.transfers[5].dst}] did not finish", topology, schedule, buffers, run)


def test_a_transfer_sent_before_what_it_waits_for_is_caught():
    topology, schedule, buffers, run = played(algorithm="ring")
    i = next(i for i, t in enumerate(schedule.transfers) if t.deps)
    run.sent_at[i] = run.arrived_at[schedule.transfers[i].deps[0]] / 2
    fires("drained", f"transfer #{i} left at", topology, schedule, buffers, run)


def test_a_wrong_finish_time_is_caught():
    topology, schedule, buffers, run = played()
    run.time *= 2
    fires("drained", "is not the last arrival", topology, schedule, buffers, run)


# delivery --------------------------------------------------------------------------------


def test_a_lost_link_crossing_is_caught():
    topology, schedule, buffers, run = played()
    lost = run.hops.pop(3)
    fires(
        "delivery",
        f"transfer #{lost.transfer} ({schedule.transfers[lost.transfer].src}->{schedule.transfers[lost.transfer].dst}) crossed 0 link(s) []",
        topology,
        schedule,
        buffers,
        run,
    )


def test_a_duplicated_link_crossing_is_caught():
    topology, schedule, buffers, run = played()
    run.hops.append(copy.copy(run.hops[0]))
    fires("delivery", f"transfer #{run.hops[0].transfer} ", topology, schedule, buffers, run)


def test_a_chunk_delivered_to_the_wrong_device_is_caught():
    topology, schedule, buffers, run = played(algorithm="ring")
    # transfer 0 goes 0->1; make its route and crossing go 0->3 instead
    wrong = (0, 3, (0, -1))
    run.routes[0] = (wrong,)
    index = next(k for k, hop in enumerate(run.hops) if hop.transfer == 0)
    run.hops[index] = replace(run.hops[index], link=wrong)
    fires("delivery", "transfer #0 for device 1 was delivered to device 3", topology, schedule, buffers, run)


def test_a_chunk_leaving_its_group_is_caught():
    topology, schedule, buffers, run = played(groups=((0, 1), (2, 3)), algorithm="ring")
    transfers = list(schedule.transfers)
    transfers[0] = replace(transfers[0], dst=2)
    fires("delivery", "transfer #0 moves a chunk from device 0 to device 2, outside its group", topology, schedule, buffers, run, transfers)


def test_one_group_of_every_device_is_checked_as_any_partition():
    from netsim.checks.delivery import _outside_groups

    rng = np.random.default_rng(0)
    src, dst = rng.integers(-4, 4, 50).astype(np.int32), rng.integers(-4, 4, 50).astype(np.int32)
    assert not _outside_groups(((2, 0, 3, 1),), src, dst, 4).any()
    assert _outside_groups(((2, 0, 3),), src, dst, 4).any()  # (device 1 in no group)
    with pytest.raises(IndexError):  # a device out of range, as the group numbers' table says
        _outside_groups(((2, 0, 3, 1),), src, np.append(dst[1:], 4), 4)


# link bytes ------------------------------------------------------------------------------


def test_link_counters_that_disagree_with_the_crossings_are_caught():
    topology, schedule, buffers, run = played()
    link = (0, 1, (0, 1))
    run.links[link].bytes += 1
    fires("link bytes", "link 0->1 counted", topology, schedule, buffers, run)


def test_two_messages_on_a_link_at_once_are_caught():
    topology, schedule, buffers, run = played(algorithm="ring")
    link = (0, 1, (0, 1))
    first, second = [k for k, hop in enumerate(run.hops) if hop.link == link][:2]
    longer = run.hops[second].start + 1e-6 - run.hops[first].end
    run.hops[first] = replace(run.hops[first], end=run.hops[first].end + longer)
    run.links[link].busy_s += longer  # the counters agree: only the overlap is wrong
    fires("link bytes", f"link 0->1 carried transfer #{run.hops[second].transfer} from", topology, schedule, buffers, run)


# device bytes ----------------------------------------------------------------------------


def test_a_chunk_of_the_wrong_size_is_caught():
    topology, schedule, buffers, run = played(algorithm="ring")
    i = run.hops[0].transfer
    run.nbytes[i] += 8
    run.links[run.hops[0].link].bytes += 8
    fires("device bytes", f"transfer #{i} carried 72 B of chunk", topology, schedule, buffers, run)


def test_bytes_that_appear_inside_a_device_are_caught():
    # Link counters say 1->2 carried a message that nothing sent: the check on its own.
    topology, schedule, buffers, run = played(algorithm="ring")
    run.links[(1, 2, (0, 1))].bytes += 64
    with pytest.raises(InvariantError, match=r"device 1 took in .* but put out .* \(forwarded 0 B in, 64 B out\)"):
        _check_device_bytes(schedule.transfers, buffers, run, _Arrays(topology, schedule.transfers, run))


# chunks ----------------------------------------------------------------------------------


def test_a_gather_that_misses_a_block_is_caught():
    # Drop a transfer from the schedule: the run completes, but a device lacks a block.
    schedule = build_schedule("gather", [(0, 1, 2)], "ring")
    last = len(schedule.transfers) - 1
    short = replace(schedule, transfers=schedule.transfers[:last])
    topology = ring(3)
    buffers = start_buffers(short, 3)
    run = play(topology, short.transfers, buffers)
    t = schedule.transfers[last]
    fires("chunks", f"device {t.dst} ends with chunk {t.key!r} without the data of group member(s) [{t.key[0]}]", topology, short, buffers, run)


def test_a_block_delivered_twice_is_caught():
    schedule = build_schedule("gather", [(0, 1, 2)], "ring")
    twice = replace(schedule, transfers=(*schedule.transfers, schedule.transfers[-1]))
    topology = ring(3)
    buffers = start_buffers(twice, 3)
    run = play(topology, twice.transfers, buffers)
    t = schedule.transfers[-1]
    fires(
        "chunks",
        f"device {t.dst}, chunk {t.key!r}: transfer #{len(schedule.transfers)} delivers a chunk that is already there a second time",
        topology,
        twice,
        buffers,
        run,
    )


def test_a_contribution_added_twice_is_caught():
    schedule = build_schedule("reduce_scatter", [(0, 1, 2)], "ring")
    twice = replace(schedule, transfers=(*schedule.transfers, schedule.transfers[-1]))
    topology = ring(3)
    buffers = start_buffers(twice, 3)
    run = play(topology, twice.transfers, buffers)
    t = schedule.transfers[-1]
    fires("chunks", f"transfer #{len(schedule.transfers)} adds the data of member(s) [", topology, twice, buffers, run)
    assert t.reduce


def test_a_block_from_the_wrong_member_is_caught():
    # Check a gather played for the group (0, 1, 2) as if the group were (1, 0, 2): device 0's
    # block lands where member 0 (device 1) should have supplied it.
    topology, schedule, buffers, run = played(groups=((0, 1, 2),), algorithm="ring", topology=ring(3))
    with pytest.raises(InvariantError) as error:
        check_playback(topology, schedule.transfers, buffers, run, groups=((1, 0, 2),), pattern="gather", wanted=lambda d: range(3))
    assert error.value.invariant == "chunks"
    assert "ends with chunk (0, 0) without the data of group member(s) [0]" in str(error.value)


# In the library and the CLI -------------------------------------------------------------


def test_a_broken_output_is_an_internal_error_with_scenario_and_seed(tmp_path, monkeypatch):
    monkeypatch.setattr("netsim.outputs._matches", lambda *args: False)
    with pytest.raises(InvariantError, match=r"invariant 'output' violated: all_gather with ring on ring4: device 0's simulated output differs"):
        netsim.all_gather(np.arange(4), algorithm="ring")
    path = tmp_path / "s.yaml"
    path.write_text("name: t\ntopology: ring4\ncollective: {op: all_gather}\ninput: {shape: [4]}\nseed: 42\n")
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 3
    line = result.output.strip()
    assert len(line.splitlines()) == 1
    assert line.startswith(f"error: internal error in netsim while running {path}: invariant 'output' violated: ")
    assert line.endswith(f"this is a bug in netsim, please report it (scenario {path}, seed 42)")


def test_a_corrupted_playback_inside_a_run_is_an_internal_error(tmp_path, monkeypatch):
    real_play = netsim.run.play

    def lossy(*args, **kwargs):
        run = real_play(*args, **kwargs)
        run.hops = list(run.hops)[:-1]
        return run

    monkeypatch.setattr("netsim.run.play", lossy)
    path = tmp_path / "s.yaml"
    path.write_text("name: t\ntopology: ring8\ncollective: {op: psum}\ninput: {shape: [16]}\nseed: 3\n")
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 3
    assert "invariant 'delivery' violated" in result.output and "(scenario" in result.output and "seed 3)" in result.output


# The two replays of the chunks check -----------------------------------------------------


def chunk_errors(replay, topology, schedule, buffers, run, groups, wanted):
    """What one replay of the chunks check says: None, or the message it raises."""

    a = _Arrays(topology, schedule.transfers, run)
    key_ids: dict = {}
    for held in buffers:
        for key in held:
            key_ids.setdefault(key, len(key_ids))
    key_id = np.array([key_ids.get(a.keys[k], -1) for k in a.key_index.tolist()], np.int64)
    position = {d: k for members in groups for k, d in enumerate(members)}
    size = len(groups[0])
    args = [a, buffers, _dependency_order(a), position, size, schedule.pattern, wanted, key_ids, key_id]
    if replay is _chunks_placed:
        args.append(np.array([d * len(key_ids) + key_ids[k] for d, held in enumerate(buffers) for k in held], np.int64))
    try:
        replay(*args)
    except InvariantError as error:
        return str(error)
    return None


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("algorithm", ["ring", "bidirectional_ring", "recursive_doubling", "direct", "multiaxis"])
@pytest.mark.parametrize("corruption", ["none", "drop", "twice", "regroup", "swap"])
def test_the_array_replay_says_what_the_step_by_step_replay_says(algorithm, corruption, compiled, monkeypatch):
    if compiled:  # (the array replay first runs its compiled pass, as on big runs)
        monkeypatch.setattr("netsim.checks.arrays.COMPILED_MIN", 0)
    pattern = "all_to_all" if algorithm == "direct" else "gather"
    schedule = build_schedule(pattern, [(0, 1, 2, 3)], algorithm)
    transfers = list(schedule.transfers)
    if corruption == "drop":
        transfers = transfers[:-1]
    elif corruption == "twice":
        transfers = [*transfers, transfers[-1], transfers[0]]
    short = replace(schedule, transfers=tuple(transfers))
    topology = ring(4)
    buffers = start_buffers(short, 4)
    run = play(topology, short.transfers, buffers)
    groups = {"regroup": ((1, 0, 2, 3),), "swap": ((0, 1, 3, 2),)}.get(corruption, short.groups)
    wanted = wanted_of(short)
    placed = chunk_errors(_chunks_placed, topology, short, buffers, run, groups, wanted)
    folded = chunk_errors(_chunks_folded, topology, short, buffers, run, groups, wanted)
    assert placed == folded
    assert (placed is None) == (corruption == "none")


@pytest.mark.parametrize(
    ("pattern", "algorithm"),
    [
        ("reduce_scatter", "ring"),
        ("reduce_scatter", "bidirectional_ring"),
        ("all_reduce", "ring"),
        ("all_reduce", "rabenseifner"),
        ("all_reduce", "direct"),
        ("gather", "ring"),
        ("all_to_all", "direct"),
    ],
)
@pytest.mark.parametrize("corruption", ["none", "drop", "twice", "regroup", "swap", "wide"])
def test_the_compiled_replay_passes_exactly_what_the_step_by_step_replay_passes(pattern, algorithm, corruption):
    groups = ((0, 1, 2, 3, 4, 5, 6, 7),) if corruption == "wide" else ((0, 1, 2, 3),)
    schedule = build_schedule(pattern, groups, algorithm)
    transfers = list(schedule.transfers)
    if corruption == "drop":
        transfers = transfers[:-1]
    elif corruption == "twice":
        transfers = [*transfers, transfers[-1], transfers[0]]
    short = replace(schedule, transfers=tuple(transfers))
    topology = ring(len(groups[0]))
    buffers = start_buffers(short, topology.n_devices)
    run = play(topology, short.transfers, buffers)
    groups = {"regroup": ((1, 0, 2, 3),), "swap": ((0, 1, 3, 2),)}.get(corruption, short.groups)
    wanted = wanted_of(short)
    folded = chunk_errors(_chunks_folded, topology, short, buffers, run, groups, wanted)
    a = _Arrays(topology, short.transfers, run)
    key_ids, held_codes = _held_codes(buffers)
    key_id = np.array([key_ids.get(a.keys[k], -1) for k in a.key_index.tolist()], np.int64)
    position = {d: k for members in groups for k, d in enumerate(members)}
    passes = chunks_pass(a, buffers, _dependency_order(a), position, len(groups[0]), short.pattern, wanted, key_ids, key_id, held_codes)
    assert passes == (folded is None)
    assert passes == (corruption in ("none", "wide") or (corruption in ("regroup", "swap") and pattern in ("reduce_scatter", "all_reduce")))


@pytest.mark.parametrize("seed", sample_then_slow(range(40), 10))
def test_the_compiled_array_replay_raises_what_the_numpy_one_raises(seed, monkeypatch):
    # Gathers with transfers dropped, repeated, re-keyed or given extra waits (some with two
    # feeds of the same chunk): the compiled pass passes a run only if the NumPy replay does,
    # leaves the start table as it was when it does not, and the error is the same.
    rng = np.random.default_rng(seed)
    algorithm = ["ring", "bidirectional_ring", "recursive_doubling", "direct"][seed % 4]
    schedule = build_schedule("all_to_all" if algorithm == "direct" else "gather", [(0, 1, 2, 3)], algorithm)
    transfers = list(schedule.transfers)
    for _ in range(int(rng.integers(0, 3))):
        k = int(rng.integers(len(transfers)))
        change = rng.choice(["drop", "twice", "rekey", "wait"]) if seed else "none"
        if change == "drop":
            del transfers[k]
            transfers = [replace(t, deps=tuple(d - (d > k) for d in t.deps if d != k)) for t in transfers]
        elif change == "twice":
            transfers.append(replace(transfers[k], deps=()))
        elif change == "rekey":
            transfers[k] = replace(transfers[k], key=transfers[int(rng.integers(len(transfers)))].key)
        elif change == "wait":  # wait for every earlier arrival at the source as well
            transfers[k] = replace(transfers[k], deps=tuple(j for j in range(k) if transfers[j].dst == transfers[k].src))
    short = replace(schedule, transfers=tuple(transfers))
    topology = ring(4)
    buffers = start_buffers(short, 4)
    try:
        run = play(topology, short.transfers, buffers)
    except Exception:  # (a corruption the engine refuses)
        return
    says = []
    for threshold in (10**9, 0):
        monkeypatch.setattr("netsim.checks.arrays.COMPILED_MIN", threshold)
        says.append(chunk_errors(_chunks_placed, topology, short, buffers, run, short.groups, wanted_of(short)))
    assert says[0] == says[1]


def test_the_compiled_overlap_check_finds_what_the_sorted_check_finds():
    # Crossings on 3 links, some starting as (or a rounding before, or well before) the one before them there ended.
    from netsim.checks.arrays import _later
    from netsim.checks.passes_compiled import link_sums

    says = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        link = rng.integers(0, 3, 30)
        start = np.cumsum(rng.choice([1e-6, 2e-6], 30)) + 1.0
        end = start + rng.choice([0.0, 1e-6, 2e-6, 3e-6], 30, p=[0.3, 0.4, 0.25, 0.05])
        end[rng.integers(30)] += rng.choice([0.0, 1e-15, 1e-8])  # (beyond 1e-9 relative rounding: a fault; within: none)
        order = np.argsort(link, kind="stable")
        same_link = link[order][1:] == link[order][:-1]
        sorted_says = bool((_later(end[order][:-1], start[order][1:]) & same_link).any())
        ok, *_, overlap = link_sums(link, np.zeros(30, np.int64), np.ones(1, np.int64), start, end, 3)
        assert ok and overlap == sorted_says
        says.append(sorted_says)
    assert 5 < sum(says) < 35  # both answers met


def test_the_compiled_sums_are_numpys_to_the_bit():
    from netsim.checks.passes_compiled import device_sums, link_sums

    rng = np.random.default_rng(0)
    h, n, m = 5000, 700, 13
    link, transfer = rng.integers(0, m, h), rng.integers(0, n, h)
    nbytes, start = rng.integers(1, 10**9, n), rng.random(h) * 1e-3
    end = start + rng.random(h) * 1e-6
    ok, carried, messages, busy, _ = link_sums(link, transfer, nbytes, start, end, m)
    assert ok
    assert np.array_equal(carried, np.bincount(link, weights=nbytes[transfer], minlength=m))
    assert np.array_equal(messages, np.bincount(link, minlength=m))
    assert np.array_equal(busy, np.bincount(link, weights=end - start, minlength=m))
    src, dst, key = rng.integers(0, m, n).astype(np.int32), rng.integers(0, m, n).astype(np.int32), rng.integers(0, 5, n)
    moving = rng.random(n) < 0.8
    ok, sent, received = device_sums(np.full(5, -1, np.int64), key, nbytes, src, dst, moving, m)
    assert ok
    assert np.array_equal(sent, np.bincount(src[moving], weights=nbytes[moving].astype(float), minlength=m))
    assert np.array_equal(received, np.bincount(dst[moving], weights=nbytes[moving].astype(float), minlength=m))
    assert not link_sums(link - 1, transfer, nbytes, start, end, m)[0]  # (a link out of range: NumPy's check raises)
    assert not device_sums(np.full(5, 8, np.int64), key, nbytes, src, dst, moving, m)[0]  # (a chunk of the wrong size)


def _computing_run():
    """Device 0 computes 2 us, then sends x to 1 (1000 B at 1 GB/s, 1 us hop); 1 joins the arrival, then computes 1 us."""
    import dataclasses

    from netsim.algorithms.compute import Compute
    from netsim.network.topology import ring

    topo = ring(2, bandwidth_Bps=1e9, latency_s=1e-6)
    moves = [SimpleNamespace(src=0, dst=1, key="x", reduce=False, direction=1, deps=(1,))]
    steps = [Compute(device=0, seconds=2e-6), Compute(device=1, deps=(0,), join=True), Compute(device=1, seconds=1e-6, deps=(2,))]
    start = [{"x": np.zeros(1000, np.uint8)}, {}]
    run = play(topo, moves, start, computes=steps, engine="fast")
    return topo, moves, start, run, steps, dataclasses


def test_a_program_like_run_passes_the_compute_invariant():
    topo, moves, start, run, steps, _ = _computing_run()
    check_playback(topo, moves, start, run, computes=steps)
    assert run.computes.started_at.tolist() == pytest.approx([0.0, 4e-06, 4e-06], rel=1e-12)
    assert run.computes.ended_at.tolist() == pytest.approx([2e-06, 4e-06, 5e-06], rel=1e-12)
    assert run.computes.started_at[1] == run.computes.ended_at[1] == run.arrived_at[0]  # the join: when x arrived


@pytest.mark.parametrize(
    "started, ended, message",
    [
        ([0.0, 4e-6, 3e-6], [2e-6, 4e-6, 5e-6], "compute step #2 started at 3e-06 s, before compute step #1 ended at 4e-06 s, which it waits for"),
        ([0.0, 3e-6, 4e-6], [2e-6, 3e-6, 5e-6], "compute step #1 started at 3e-06 s, before transfer #0 arrived at 4e-06 s, which it waits for"),
        ([0.0, 4e-6, 4.5e-6], [2e-6, 4.5e-6, 5e-6], "join #1 was done from 4e-06 s to 4.5e-06 s, not when its last dependency was (4e-06 s)"),
        ([0.0, 4e-6, 5.5e-6], [2e-6, 4e-6, 5e-6], "compute step #2 started at 5.5e-06 s and ended at 5e-06 s"),
    ],
)
def test_a_corrupted_compute_record_breaks_the_compute_invariant(started, ended, message):
    topo, moves, start, run, steps, dataclasses = _computing_run()
    from netsim.engine.playback import ComputeRecord

    bad = dataclasses.replace(run, computes=ComputeRecord(np.array(started), np.array(ended)))
    with pytest.raises(InvariantError, match="^" + re.escape(f"invariant 'compute' violated: {message}; this is a bug in netsim")):
        check_playback(topo, moves, start, bad, computes=steps)


def test_two_steps_at_once_on_one_unit_and_a_transfer_before_its_compute_step():
    import dataclasses

    from netsim.algorithms.compute import Compute
    from netsim.engine.playback import ComputeRecord
    from netsim.network.topology import ring

    topo = ring(2, bandwidth_Bps=1e9, latency_s=1e-6)
    steps = [Compute(device=0, seconds=2e-6), Compute(device=0, seconds=2e-6)]
    moves = [SimpleNamespace(src=0, dst=1, key="x", reduce=False, direction=1, deps=(2,))]
    start = [{"x": np.zeros(1000, np.uint8)}, {}]
    run = play(topo, moves, start, computes=steps, engine="processes")
    check_playback(topo, moves, start, run, computes=steps)
    overlapping = dataclasses.replace(run, computes=ComputeRecord(np.array([0.0, 1e-6]), np.array([2e-6, 3e-6])))
    message = "device 0's compute unit ran step #1 from 1e-06 s while step #0 ran until 2e-06 s (one step at a time)"
    with pytest.raises(InvariantError, match=re.escape(message)):
        check_playback(topo, moves, start, overlapping, computes=steps)
    # a step of no time that ran at the instant the other started (first, as a unit may take it) is not at once with it
    zero = [Compute(device=0, seconds=2e-6), Compute(device=0, seconds=0.0)]
    played = play(topo, [], [{}, {}], computes=zero, engine="processes")
    check_playback(topo, [], [{}, {}], dataclasses.replace(played, computes=ComputeRecord(np.array([0.0, 0.0]), np.array([2e-6, 0.0]))), computes=zero)
    early = dataclasses.replace(run, sent_at=[1e-6], arrived_at=[3e-6], time=4e-6)
    with pytest.raises(InvariantError, match=re.escape("transfer #0 left at 1e-06 s, before compute step #1 it waits for ended at 4e-06 s")):
        check_playback(topo, moves, start, early, computes=steps)


def test_each_steps_last_dependency_is_found_a_slice_of_entries_at_a_time():
    """The compute check's last dependency per step, taken about ``entries`` entries at a time, is the maximum
    over each step's own list (against an independent loop), whatever the slice and however the lists fall."""
    from netsim.checks.computes import _last_dependency

    rng = np.random.default_rng(7)
    for _ in range(200):
        m = int(rng.integers(1, 40))
        counts = np.where(rng.random(m) < 0.3, 0, rng.integers(1, 9, m))
        ptr = np.concatenate([[0], np.cumsum(counts)])
        idx, done = rng.integers(0, 12, int(ptr[-1])), rng.random(12)
        expected = [max((done[d] for d in idx[ptr[j] : ptr[j + 1]]), default=-np.inf) for j in range(m)]
        for entries in (1, 2, 5, 1 << 22):
            assert _last_dependency(ptr, idx, done, entries).tolist() == expected
