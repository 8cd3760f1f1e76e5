"""Compute steps and joins on the compiled loop: the same events as the Python player and the process model.

A join (``Compute(join=True)``) is done the instant its last dependency is counted
off on its device, without the compute unit, and its waiters are counted off right
there, before the next waiter of the step that completed it.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import sample_then_slow
from test_engines import add_one, assert_same, assert_same_payloads, played, random_bundled_case, random_case

from netsim.algorithms.compute import Compute
from netsim.algorithms.transfers import TransferTable
from netsim.engine import play, transfer_columns
from netsim.engine.columns import compute_columns
from netsim.engine.compiled_bundles import BundledBuffers
from netsim.network.topology import ring

JOIN_SEEDS = [seed for seed in range(260) if any(c.join for c in random_case(seed, values=False, joins=True)[2])][:200]


@pytest.fixture
def compiled_always(monkeypatch):
    """The compiled loop plays every schedule it can, however small."""
    import netsim.engine.compiled as compiled

    monkeypatch.setattr(compiled, "MIN_TRANSFERS", 0)
    return compiled


def compiled_run(case, monkeypatch, compiled):
    """``case`` played by the compiled loop (checked: it did not hand the run back)."""
    played_by = []
    real = compiled.compiled_player
    monkeypatch.setattr("netsim.engine.playing.compiled_player", lambda *a: played_by.append(real(*a)) or played_by[-1])
    run = played("fast", *case)
    assert played_by and played_by[0] is not None
    monkeypatch.setattr("netsim.engine.playing.compiled_player", real)
    return run


@pytest.mark.parametrize("seed", sample_then_slow(JOIN_SEEDS, 40))
def test_random_schedules_with_joins_play_the_same_on_every_player(seed, compiled_always, monkeypatch):
    case = random_case(seed, values=False, joins=True)
    compiled = compiled_run(case, monkeypatch, compiled_always)
    assert_same(compiled, played("processes", *case))
    monkeypatch.setattr(compiled_always, "MIN_TRANSFERS", 10**9)
    python = played("fast", *case)
    assert_same(compiled, python)
    assert compiled.events == python.events


def test_the_random_join_schedules_chain_joins_and_feed_transfers_and_compute():
    cases = [random_case(seed, values=False, joins=True) for seed in JOIN_SEEDS]
    assert len(cases) == 200
    joins_of_joins = feeding_transfers = feeding_compute = 0
    for _, transfers, computes, *_ in cases:
        n = len(transfers)
        joined = {n + j for j, c in enumerate(computes) if c.join}
        joins_of_joins += any(d in joined for c in computes if c.join for d in c.deps)
        feeding_transfers += any(d in joined for t in transfers for d in t.deps)
        feeding_compute += any(d in joined for c in computes if not c.join for d in c.deps)
    assert joins_of_joins > 50 and feeding_transfers > 50 and feeding_compute > 50


def hand_case():
    """Device 0 sends 1000 bytes to device 1 (1 s of bytes, 1 s of latency: there at 2 s), which
    waits for them with compute steps C0, join J and C2, in that order; C3 and transfer T1 wait for J."""
    move = lambda src, dst, deps: SimpleNamespace(src=src, dst=dst, key="x", reduce=False, direction=1, deps=deps)  # noqa: E731
    transfers = [move(0, 1, ()), move(1, 2, (3,))]  # T0; T1 waits for J (step 3)
    computes = [
        Compute(device=1, seconds=1.0, deps=(0,), name="C0"),
        Compute(device=1, deps=(0,), join=True, name="J"),
        Compute(device=1, seconds=1.0, deps=(0,), name="C2"),
        Compute(device=1, seconds=1.0, deps=(3,), name="C3"),
    ]
    buffers = [{"x": np.zeros(1000, np.uint8)}, {}, {}, {}]
    return ring(4, bandwidth_Bps=1000.0, latency_s=1.0), transfers, computes, buffers, True, None


@pytest.mark.parametrize("engine", ["compiled", "fast", "processes"])
def test_a_join_is_done_with_its_last_dependency_and_readies_its_waiters_there(engine, compiled_always, monkeypatch):
    case = hand_case()
    if engine == "compiled":
        run = compiled_run(case, monkeypatch, compiled_always)
    else:
        monkeypatch.setattr(compiled_always, "MIN_TRANSFERS", 10**9)
        run = played(engine, *case)
    # T0 arrives at 2 s; counting it off does J first (a join is counted off just before its first
    # waiter, T1: step 1), which readies T1 and C3 there, then C0 and C2: the unit serves C3, C0, C2
    # (one at a time), T1 leaves at 2 s.
    assert run.computes.started_at.tolist() == [3.0, 2.0, 4.0, 2.0]
    assert run.computes.ended_at.tolist() == [4.0, 2.0, 5.0, 3.0]
    assert list(run.sent_at) == [0.0, 2.0] and list(run.arrived_at) == [2.0, 4.0]
    assert run.time == 5.0
    assert (run.compute_units[1].busy_s, run.compute_units[1].max_queue) == (3.0, 3)  # C0 about to start, C3 and C2 queued; J never queues
    # Actions: 0 s: 4 wake-ups, T0's link starts; 1 s: it is done; 2 s: T0 delivered, device 1 wakes, its
    # unit starts C3, T1's link starts; 3 s: C3 done, device 1 wakes, the link is done; 4 s: T1 delivered,
    # device 2 wakes, C0 done, device 1 wakes; 5 s: C2 done, device 1 wakes. None for J.
    assert run.actions == 5 + 1 + 4 + 3 + 4 + 2


def test_the_compiled_loop_plays_compute_steps_unless_they_compute_values(compiled_always):
    topo, transfers, computes, buffers, *_ = hand_case()
    columns, steps = transfer_columns(transfers), compute_columns(computes)
    durations = [1.0, 0.0, 1.0, 1.0]
    assert compiled_always.compiled_player(topo, columns, buffers, True, [0.0] * 4, computes, steps, durations) is not None
    valued = [*computes[:3], Compute(device=1, seconds=1.0, deps=(3,), inputs=("x",), output="y", fn=add_one)]
    assert compiled_always.compiled_player(topo, columns, buffers, True, [0.0] * 4, valued, compute_columns(valued), durations) is None
    run = play(topo, transfers, buffers, computes=valued)  # (the Python player computes the value)
    np.testing.assert_array_equal(run.buffers[1]["y"], np.ones(1000, np.uint8))


def bundled_with_compute(seed, joins):
    """A random bundled schedule (:func:`random_bundled_case`) in which some transfers also wait for a compute
    step on their source that waits for what they wait for (with ``joins``: a join, where there is something)."""
    topo, table, _, buffers, cut_through, start_s = random_bundled_case(seed)
    rng = random.Random(seed)
    n, computes, deps = len(table), [], []
    for i in range(n):
        waits = table.dep_idx[table.dep_ptr[i] : table.dep_ptr[i + 1]].tolist()
        if rng.random() < 0.5:
            if joins and waits and rng.random() < 0.6:
                computes.append(Compute(device=int(table.src[i]), deps=tuple(waits), join=True))
            else:
                computes.append(Compute(device=int(table.src[i]), seconds=rng.choice([0.0, 8e-9, 1.6e-8, 1e-6]), deps=tuple(waits)))
            waits = [*waits, n + len(computes) - 1]
        deps.append(waits)
    ptr = np.cumsum([0] + [len(d) for d in deps])
    idx = np.array([d for w in deps for d in w], np.int64)
    columns = (table.step, table.src, table.dst, table.block, table.piece, table.reduce, table.direction, table.phase)
    return topo, TransferTable(*columns, ptr, idx, table.bundles), computes, buffers, cut_through, start_s


def check_bundled_with_compute(case, monkeypatch, compiled):
    run = compiled_run(case, monkeypatch, compiled)
    assert isinstance(run.buffers, BundledBuffers)  # the bundled loop played it
    processes = played("processes", *case)
    assert_same(run, processes, payloads=False)
    assert_same_payloads(run, processes, same_objects=False)
    monkeypatch.setattr(compiled, "MIN_TRANSFERS", 10**9)
    python = played("fast", *case)
    assert_same(run, python, payloads=False)
    assert run.events == python.events


@pytest.mark.parametrize("seed", sample_then_slow(range(60), 15))
def test_random_bundled_schedules_with_compute_play_the_same_on_every_player(seed, compiled_always, monkeypatch):
    case = bundled_with_compute(seed, joins=False)
    assert case[2]  # (every seed here has compute steps)
    check_bundled_with_compute(case, monkeypatch, compiled_always)


BUNDLED_JOIN_SEEDS = [seed for seed in range(100) if any(c.join for c in bundled_with_compute(seed, joins=True)[2])][:60]


@pytest.mark.parametrize("seed", sample_then_slow(BUNDLED_JOIN_SEEDS, 15))
def test_random_bundled_schedules_with_joins_play_the_same_on_every_player(seed, compiled_always, monkeypatch):
    check_bundled_with_compute(bundled_with_compute(seed, joins=True), monkeypatch, compiled_always)


def test_the_random_bundled_compute_schedules_queue_on_the_units():
    runs = [played("processes", *bundled_with_compute(seed, joins=False)) for seed in range(60)]
    assert sum(1 for run in runs if any(u.max_queue > 1 for u in run.compute_units.values())) > 30


@pytest.mark.parametrize("seed", sample_then_slow(range(40), 10))
def test_the_compiled_waiting_order_is_the_stable_sort_of_the_waiter_keys(seed):
    """waiting_order (one pass, no sort of the dependencies) orders the steps as argsort(waiter_keys, stable) does,
    joins waited for or not, ties between joins with the same first waiter included."""
    from netsim.engine.columns import waiter_keys
    from netsim.engine.kernel_parts import waiting_order

    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 40)), int(rng.integers(1, 12))
    steps = n + m
    deps = [sorted(set(rng.integers(0, steps, int(rng.integers(0, 4))).tolist()) - {s}) for s in range(steps)]
    ptr = np.cumsum([0] + [len(d) for d in deps]).astype(np.int64)
    idx = np.array([d for ds in deps for d in ds], np.int64)
    joins = rng.random(m) < 0.6
    keys = waiter_keys(ptr, idx, joins, n)
    expected = np.arange(steps) if keys is None else np.argsort(keys, kind="stable")
    assert waiting_order(ptr, idx, joins, n).tolist() == expected.tolist()


DMA_SEEDS = [seed for seed in range(120) if sum(not c.join for c in random_case(seed, values=False, joins=True)[2]) >= 2][:60]


def _with_dma(seed):
    """A random timing-only case whose every other compute step (not a join) runs on its device's DMA engine."""
    import dataclasses

    case = list(random_case(seed, values=False, joins=True))
    work = [j for j, c in enumerate(case[2]) if not c.join]
    moved = set(work[::2])
    case[2] = [dataclasses.replace(c, unit=1) if j in moved else c for j, c in enumerate(case[2])]
    return tuple(case)


@pytest.mark.parametrize("seed", DMA_SEEDS)
def test_steps_on_the_dma_engine_play_the_same_on_every_player(seed, compiled_always, monkeypatch):
    case = _with_dma(seed)
    compiled = compiled_run(case, monkeypatch, compiled_always)
    processes = played("processes", *case)
    assert_same(compiled, processes)
    assert compiled.dma_units == processes.dma_units and compiled.dma_units
    monkeypatch.setattr(compiled_always, "MIN_TRANSFERS", 10**9)
    python = played("fast", *case)
    assert_same(compiled, python)
    assert compiled.dma_units == python.dma_units
