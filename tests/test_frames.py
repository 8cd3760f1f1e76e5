"""Replay and frames: the drawing state agrees with what the engine actually moved."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import netsim
from netsim.algorithms.schedule import Schedule
from netsim.algorithms.transfers import Transfer
from netsim.network.topology import ring, torus
from netsim.semantics.gather import AllGatherLayout
from netsim.semantics.reduce import AllReduceLayout, ReduceScatterLayout
from netsim.teaching.frames import build_frames, frame_times
from netsim.teaching.replay import Replay

CASES = [
    ("all_gather", lambda x, **kw: netsim.all_gather(x, **kw), lambda x: AllGatherLayout.check(x, 0, False, None)),
    ("psum_scatter", lambda x, **kw: netsim.psum_scatter(x, tiled=True, **kw), lambda x: ReduceScatterLayout.check(x, 0, True, None)),
    ("psum", lambda x, **kw: netsim.psum(x, **kw), lambda x: AllReduceLayout.check(x, None)),
]


@pytest.mark.parametrize("algorithm", ["ring", "bidirectional_ring", "bidirectional_halfway"])
@pytest.mark.parametrize(("name", "run", "make_layout"), CASES, ids=[c[0] for c in CASES])
def test_replayed_sources_rebuild_every_chunk_the_engine_holds_at_the_end(name, run, make_layout, algorithm):
    # Integer inputs so that sums are exact: chunk == sum of its sources' shares, bit for bit.
    x = np.random.default_rng(3).integers(-50, 50, size=(5, 10)).astype(np.int64)
    result = run(x, algorithm=algorithm, topology=ring(5))
    leaf = result.leaves[0]
    blocks = make_layout(x).blocks(x)
    replay = Replay(leaf.schedule, leaf.playback)
    for device, held in enumerate(replay.end):
        assert set(held) == set(leaf.playback.buffers[device])
        for (block, piece), sources in held.items():
            shares = [np.array_split(blocks[s][block], leaf.schedule.pieces)[piece] for s in sorted(sources)]
            np.testing.assert_array_equal(leaf.playback.buffers[device][(block, piece)], np.sum(shares, axis=0))


def test_all_gather_on_a_ring_of_4_has_the_frames_asked_for_and_ends_with_the_simulated_output():
    x = np.arange(4 * 3).reshape(4, 3) * 10  # every device's row differs
    result = netsim.all_gather(x, algorithm="ring", topology=ring(4))
    frames = build_frames(result, n_frames=7)
    assert len(frames) == 7
    assert [f.index for f in frames] == list(range(7))
    assert [f.time_s for f in frames] == pytest.approx([k * result.time / 6 for k in range(7)], rel=1e-12)
    assert frames[-1].time_s == result.time
    last = frames[-1]
    assert last.flights == () and last.step is None and last.caption.startswith("done: 3 steps")
    for device, slots in enumerate(last.buffers):
        assert [(s.block, s.piece) for s in slots] == [(j, 0) for j in range(4)]
        for slot in slots:
            (source,) = slot.sources  # a gathered block comes from exactly one device
            np.testing.assert_array_equal(result.output[device][slot.block], x[source])
            assert slot.colour == source and slot.shade == 1.0
    first = frames[0]
    assert [[s.sources for s in slots] for slots in first.buffers] == [[frozenset({d}) if j == d else frozenset() for j in range(4)] for d in range(4)]


def test_reduce_scatter_slots_darken_as_shares_are_added():
    x = np.ones((4, 8), np.int32)
    result = netsim.psum_scatter(x, tiled=True, algorithm="ring", topology=ring(4))
    frames = build_frames(result, n_frames=9)
    shades = [[s.shade for s in f.buffers[2]] for f in frames]
    assert shades[0] == [0.25] * 4
    for before, after in itertools.pairwise(shades):
        assert all(a >= b for a, b in zip(after, before, strict=True))
    final = frames[-1].buffers
    for device in range(4):
        own = final[device][device]
        assert own.sources == frozenset(range(4)) and own.shade == 1.0
        assert result.output[device].tolist() == [4, 4]  # the sum of the 4 shares the slot says it holds


def test_chunks_move_at_their_simulated_pace_a_slow_link_looks_slow():
    topology = ring(4, bandwidth_Bps=1e9, latency_s=1e-7)
    topology.graph.edges[1, 2, (0, 1)]["bandwidth_Bps"] = 2.5e8  # link 1->2 is 4x slower
    result = netsim.all_gather(np.zeros((4, 1000), np.uint8), algorithm="ring", topology=topology)
    frames = build_frames(result, n_frames=41)
    early = next(f for f in frames if f.time_s > 0 and f.flights)
    progress = {f.link[:2]: f.progress for f in early.flights}
    assert progress[(1, 2)] == pytest.approx(progress[(0, 1)] / 4, rel=0.2)
    for frame in frames:
        for flight in frame.flights:
            assert 0.0 <= flight.progress <= 1.0
            assert flight.link in topology.graph.edges(keys=True)
    # the slow link holds up everything behind it: some chunk waits at a device
    assert any(f.waiting for frame in frames for f in frame.flights)


def test_frame_counts_below_two_are_refused():
    with pytest.raises(ValueError, match=r"n_frames must be an integer >= 2 \(the first frame is the start, the last the end\), got 1"):
        frame_times(1.0, 1)


def test_an_unknown_pattern_is_read_from_the_schedule():
    # a broadcast written by hand: 0 sends to 1, 1 forwards to 2
    moves = (Transfer(0, 0, 1, (0, 0), False, 1, (), "broadcast"), Transfer(1, 1, 2, (0, 0), False, 1, (0,), "broadcast"))
    schedule = Schedule("hand", "broadcast", ((0, 1, 2),), 1, moves)
    playback = netsim.engine.play(torus((3,)), moves, [{(0, 0): np.ones(4)}, {}, {}])
    replay = Replay(schedule, playback)
    assert replay.start == [{(0, 0): frozenset({0})}, {}, {}]
    assert replay.end == [{(0, 0): frozenset({0})}] * 3
    assert replay.after_step(0) == [{(0, 0): frozenset({0})}, {(0, 0): frozenset({0})}, {}]
