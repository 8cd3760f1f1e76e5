"""What a run costs, counted rather than timed, so an accidental slowdown of the engine fails here.

Wall times are for bench/ (they depend on the machine and its load). These count
things that do not: SimPy events per chunk move and bytes allocated per transfer.
The process model (netsim.engine.processes), a SimPy event per queue operation and
an object per message, has 3.5 events per chunk move; the fast player must stay far
below that, and the bounds below fail for anything like it.
"""

from __future__ import annotations

import sys
import tracemalloc

import numpy as np
import pytest

from netsim.algorithms.schedule import build_schedule
from netsim.engine import compiled, play
from netsim.engine.compiled_bundles import BundledBuffers
from netsim.network.topology import ring, torus


def ring_all_gather(n):
    schedule = build_schedule("gather", [list(range(n))], "bidirectional_ring")
    x = np.zeros((n, 64), np.uint8)
    buffers = [{(d, p): piece for p, piece in enumerate(np.array_split(x[d], 2))} for d in range(n)]
    return ring(n), schedule, buffers


def test_simpy_sees_a_few_events_per_step_not_one_per_chunk_move():
    topo, schedule, buffers = ring_all_gather(64)
    run = play(topo, schedule.transfers, buffers)
    assert len(run.hops) == 2 * 64 * 63
    assert run.events <= 4 * schedule.n_steps  # an event per distinct instant: arrivals and links freeing up
    assert play(topo, schedule.transfers, buffers, engine="processes").events > len(run.hops)  # what the bound guards against


def test_under_contention_at_most_two_events_per_chunk_move():
    topo = torus((4, 4), True, 45e9, 1e-6)
    groups = [[0, 10, 5, 15], [1, 11, 6, 12], [2, 8, 7, 13], [3, 9, 4, 14]]  # members 2 to 4 hops apart: routes share links
    schedule = build_schedule("all_reduce", groups, "bidirectional_ring")
    buffers = [{(b, p): np.zeros(100 + b) for b in range(4) for p in range(2)} for _ in range(16)]
    run = play(topo, schedule.transfers, buffers)
    assert max(s.max_queue for s in run.links.values()) > 1  # links really are contended
    assert run.events <= 2 * len(run.hops)


@pytest.mark.parametrize(("n", "bound"), [(64, 300), (128, 200)])  # the Python player (8,064 moves), the compiled loop (32,512)
def test_memory_per_transfer_stays_small(n, bound):
    topo, schedule, buffers = ring_all_gather(n)
    schedule.transfers.columns()
    play(topo, schedule.transfers, buffers)  # (the compiled loop loads once, outside the measure)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run = play(topo, schedule.transfers, buffers)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert len(run.sent_at) == 2 * n * (n - 1)
    assert peak / len(run.sent_at) < bound  # bytes per transfer, payloads excluded (they are views of x)


def test_a_pod_all_gather_is_a_few_engine_events_per_ring_step_message():
    # multiaxis_bundled sends one message per ring step, link direction and part; each costs
    # the engine at most 3.5 actions (start on a link, arrival, link free, a share of a wake-up).
    dims = (4, 4, 4)
    schedule = build_schedule("gather", [list(range(64))], "multiaxis_bundled", group_shape=dims)
    buffers = [{(d, p): np.zeros(10, np.uint8) for p in range(6)} for d in range(64)]
    run = play(torus(dims), schedule.transfers, buffers)
    assert len(schedule.transfers) == 3 * sum(2 * (d - 1) for d in dims) * 64  # not 64 * 63 * 6 block pieces
    assert run.actions <= 3.5 * len(schedule.transfers)
    assert run.events <= 4 * schedule.n_steps


def _bytecodes(fn, *args, **kwargs):
    """Python bytecodes executed by ``fn(*args, **kwargs)`` (compiled code runs uncounted)."""
    executed = 0

    def tracer(frame, event, arg):
        nonlocal executed
        frame.f_trace_opcodes = True
        if event == "opcode":
            executed += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn(*args, **kwargs)
    finally:
        sys.settrace(None)
    return executed


def test_the_compiled_loop_plays_a_big_ring_with_a_few_python_bytecodes_per_chunk_move():
    # N = 128: 32,512 chunk moves, over compiled.MIN_TRANSFERS. The Python player executes about 353 bytecodes
    # per move (bench/opcodes.py 64); the compiled loop leaves what is around it, about 3 (2.6 measured).
    topo, schedule, buffers = ring_all_gather(128)
    schedule.transfers.columns()
    run = play(topo, schedule.transfers, buffers)  # (compiles, or loads the compiled loop from its cache)
    moves = len(run.hops)
    assert moves == 2 * 128 * 127 >= compiled.MIN_TRANSFERS
    assert run.actions == 3.5 * moves + 128  # the process model's events, one action each (and each device's start)
    assert _bytecodes(play, topo, schedule.transfers, buffers) / moves < 5


def test_the_compiled_loop_plays_a_bundled_pod_slice_with_a_few_python_bytecodes_per_transfer():
    # 8x8x8 multiaxis_bundled: 64,512 transfers (bundles of up to 8 x 8 blocks), over compiled.MIN_TRANSFERS. The
    # Python player executes hundreds of bytecodes per transfer; the compiled loop leaves what is around it, per
    # link (3,072), per distinct route and per starting chunk, none per transfer: 10.7 per transfer measured, and no
    # payload is made until read. Any Python loop over the transfers would add at least 4 more.
    dims = (8, 8, 8)
    schedule = build_schedule("gather", [list(range(512))], "multiaxis_bundled", group_shape=dims)
    buffers = [{(d, p): np.zeros(10, np.uint8) for p in range(6)} for d in range(512)]
    topo = torus(dims)
    schedule.transfers.columns()
    run = play(topo, schedule.transfers, buffers)  # (compiles, or loads the compiled loop from its cache)
    n = len(schedule.transfers)
    assert n == 3 * 3 * 2 * 7 * 512 >= compiled.MIN_TRANSFERS
    assert isinstance(run.buffers, BundledBuffers)  # played by the compiled loop; the bundles not made yet
    assert run.actions <= 3.5 * n
    assert _bytecodes(play, topo, schedule.transfers, buffers) / n < 14
