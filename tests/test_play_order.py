"""The compiled player's numbering of transfers in play order: the same events, read nearly in order, counted."""

from __future__ import annotations

import random

import numpy as np
import pytest

from netsim.algorithms.compute import Compute
from netsim.algorithms.schedule import build_schedule
from netsim.engine import compiled, play
from netsim.engine.columns import step_dependencies, transfer_columns
from netsim.engine.compiled_run import waiting_lists
from netsim.engine.play_order import in_play_order
from netsim.network.topology import torus


def random_dag(seed, n, m):
    """``n`` transfers then ``m`` compute steps, each waiting for up to 3 steps (any numbers, no cycle): wait lists and counts."""
    rng = random.Random(seed)
    steps = n + m
    rank = list(range(steps))
    rng.shuffle(rank)  # a hidden order the dependencies follow
    deps = [sorted(rng.sample([s for s in range(steps) if rank[s] < rank[t]], min(rng.choice([0, 0, 1, 2, 3]), rank[t]))) for t in range(steps)]
    ptr = np.zeros(steps + 1, np.int64)
    np.cumsum([len(d) for d in deps], out=ptr[1:])
    idx = np.array([d for ds in deps for d in ds], np.int64)
    wait_ptr, waiter = waiting_lists(ptr, idx, n, np.zeros(m, np.bool_))
    return deps, wait_ptr, waiter, np.diff(ptr).astype(np.int32)


@pytest.mark.parametrize("seed", range(5))
def test_play_order_is_a_numbering_in_dependency_order_that_keeps_every_list(seed):
    n, m = 60, 15
    deps, wait_ptr, waiter, missing = random_dag(seed, n, m)
    order, rank, ptr, idx = in_play_order(wait_ptr, waiter, missing, n)
    assert sorted(order.tolist()) == list(range(n))
    assert rank[order].tolist() == list(range(n))
    ready = [t for t in range(n) if not deps[t]]
    assert order[: len(ready)].tolist() == ready  # what waits for nothing first, in its order
    place = {int(old): new for new, old in enumerate(order)}
    for t in range(n):  # a transfer comes after every transfer it waits for
        assert all(place[d] < place[t] for d in deps[t] if d < n)
    new = lambda s: int(rank[s]) if s < n else s  # noqa: E731
    for old in range(n + m):  # each list is the old one, renamed, in its order
        assert idx[ptr[new(old)] : ptr[new(old) + 1]].tolist() == [new(w) for w in waiter[wait_ptr[old] : wait_ptr[old + 1]]]


def test_a_wait_that_cannot_end_leaves_its_transfers_last_in_their_order():
    wait_ptr, waiter = np.array([0, 0, 0, 1]), np.array([1], np.int32)  # 1 waits for 2, which waits for 1
    order, rank, ptr, idx = in_play_order(wait_ptr, waiter, np.array([0, 1, 1], np.int32), 3)
    assert order.tolist() == rank.tolist() == [0, 1, 2] and ptr.tolist() == [0, 0, 0, 1] and idx.tolist() == [1]


@pytest.fixture(scope="module")
def torus_gather():
    """A multiaxis all_gather on a 4x4x4 torus (24,192 transfers, compiled) and a compute step after it on each
    device (a program: renumbered), its play."""
    topo = torus((4, 4, 4), True, 45e9, 1e-6)
    schedule = build_schedule("gather", [list(range(64))], "multiaxis", group_shape=(4, 4, 4), wraparound=(True,) * 3)
    buffers = [{(d, p): np.zeros(64, np.uint8) for p in range(schedule.pieces)} for d in range(64)]
    last = {int(t.dst): i for i, t in enumerate(schedule.transfers)}  # (each device's last arrival, in the schedule's numbering)
    computes = [Compute(device=d, seconds=1e-6, deps=(last[d],)) for d in range(64)]
    return topo, schedule.transfers, computes, buffers, play(topo, schedule.transfers, buffers, computes=computes)


def test_the_compiled_loop_plays_the_same_events_in_the_schedule_numbering(torus_gather, monkeypatch):
    topo, transfers, computes, buffers, run = torus_gather
    same = lambda wait_ptr, waiter, missing, n: (np.arange(n, dtype=np.int32), np.arange(n, dtype=np.int32), wait_ptr, waiter)  # noqa: E731
    monkeypatch.setattr(compiled, "in_play_order", same)
    again = play(topo, transfers, buffers, computes=computes)
    assert again.engine == run.engine == "fast"
    assert (again.time, again.actions, again.events) == (run.time, run.actions, run.events)
    assert list(again.sent_at) == list(run.sent_at) and list(again.arrived_at) == list(run.arrived_at)
    assert [(h.transfer, h.link, h.start, h.end) for h in again.hops] == [(h.transfer, h.link, h.start, h.end) for h in run.hops]
    assert list(again.nbytes) == list(run.nbytes) and list(again.routes) == list(run.routes)  # (numbered back, routes made after)
    np.testing.assert_array_equal(again.computes.started_at, run.computes.started_at)
    assert [list(b) for b in again.buffers] == [list(b) for b in run.buffers]


def test_the_loop_reads_transfers_nearly_in_the_order_they_play(torus_gather):
    """Counted, not timed: transfers played one after the other are a few hundred numbers apart in the loop's
    numbering (their arrays' entries close in memory), thousands in the schedule's."""
    _, transfers, _, _, run = torus_gather
    n = len(transfers)
    assert run.actions <= 3 * len(run.hops) + 3 * 64  # actions per chunk move (a hop each), and per compute step
    played = np.array([h.transfer for h in run.hops])
    first = played[np.sort(np.unique(played, return_index=True)[1])]  # each transfer where it first played
    columns = transfer_columns(transfers)
    ptr, idx = step_dependencies(columns, {"dep_ptr": np.zeros(1, np.int64), "dep_idx": np.zeros(0, np.int64)})
    wait_ptr, waiter = waiting_lists(ptr, idx, n, np.zeros(0, np.bool_))
    rank = in_play_order(wait_ptr, waiter, np.diff(ptr).astype(np.int32), n)[1]
    apart_before, apart_now = np.abs(np.diff(first)).mean(), np.abs(np.diff(rank[first])).mean()
    assert apart_now <= n / 20  # 678 here (24,192 transfers)
    assert apart_before >= 4 * apart_now  # 5,106 in the schedule's numbering
