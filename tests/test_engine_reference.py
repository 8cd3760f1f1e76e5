"""The fast engine plays every schedule exactly as the spine's SimPy engine did.

tests/reference_engine.py is the spine's engine, kept verbatim: a SimPy process
per link and per device, an event per queue operation. Random schedules full of
ties (equal sizes, latencies that are multiples of each other, stragglers,
contention on shared links, reductions, zero-byte and zero-hop messages) must
give the same numbers bit for bit: times, hops in the same order, link
statistics and final buffers.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest
import reference_engine

from netsim.algorithms.schedule import build_schedule
from netsim.engine import play
from netsim.network.topology import mesh, ring, torus


def random_case(seed):
    rng = random.Random(seed)
    kind = rng.choice(["ring", "torus", "mesh"])
    if kind == "ring":
        topo = ring(rng.randint(2, 8), 1e9, rng.choice([0.0, 1e-6, 2e-6]))
    elif kind == "torus":
        topo = torus((rng.randint(2, 4), rng.randint(2, 4)), True, 1e9, rng.choice([0.0, 1e-6]))
    else:
        topo = mesh((rng.randint(2, 4), rng.randint(1, 3)), 1e9, 1e-6)
    if rng.random() < 0.5:
        for _, _, data in topo.graph.edges(data=True):
            data["bandwidth_Bps"] = rng.choice([1e9, 2e9, 5e8])
    n = topo.n_devices
    keys = ["a", "b", "c"]
    sizes = {k: rng.choice([0, 1000, 2000, 3000]) for k in keys}
    buffers = [{k: np.full(sizes[k] // 8, d + 1, np.int64) for k in keys} for d in range(n)]
    transfers = []
    for i in range(rng.randint(1, 60)):
        deps = tuple(sorted(rng.sample(range(i), min(i, rng.choice([0, 0, 1, 1, 2, 3])))))
        transfers.append(
            SimpleNamespace(
                src=rng.randrange(n), dst=rng.randrange(n), key=rng.choice(keys), reduce=rng.random() < 0.3, direction=rng.choice([1, -1]), deps=deps
            )
        )
    start_s = [rng.choice([0.0, 0.0, 0.0, 1e-6, 3e-6, 2.5e-6]) for _ in range(n)] if rng.random() < 0.3 else None
    return topo, transfers, buffers, rng.random() < 0.7, start_s


def assert_same(topo, transfers, buffers, cut_through=True, start_s=None):
    ours = play(topo, transfers, buffers, cut_through=cut_through, start_s=start_s)
    theirs = reference_engine.play(topo, transfers, buffers, cut_through=cut_through, start_s=start_s)
    assert ours.time == theirs.time
    # The same events. The reference also starts every link and device process, and ends every
    # device process; the engine instead wakes each device once when it starts (at time 0, or at
    # a late device's start_s, which the reference waits for with a timeout of its own).
    late = sum(1 for s in start_s or () if s > 0)
    assert ours.actions == theirs.events - topo.graph.number_of_edges() - topo.n_devices - late
    assert ours.sent_at == theirs.sent_at
    assert ours.arrived_at == theirs.arrived_at
    assert ours.nbytes == theirs.nbytes
    assert ours.routes == theirs.routes
    assert [(h.transfer, h.link, h.start, h.end) for h in ours.hops] == [(h.transfer, h.link, h.start, h.end) for h in theirs.hops]
    stats = lambda links: {link: (s.bytes, s.messages, s.busy_s, s.max_queue) for link, s in links.items()}  # noqa: E731
    assert stats(ours.links) == stats(theirs.links)
    for mine, reference in zip(ours.buffers, theirs.buffers, strict=True):
        assert mine.keys() == reference.keys()
        for key in mine:
            np.testing.assert_array_equal(mine[key], reference[key])


@pytest.mark.parametrize("seed", range(150))
def test_random_schedules_play_exactly_as_the_reference(seed):
    topo, transfers, buffers, cut_through, start_s = random_case(seed)
    assert_same(topo, transfers, buffers, cut_through, start_s)


@pytest.mark.parametrize("algorithm", ["ring", "bidirectional_ring", "bidirectional_halfway"])
@pytest.mark.parametrize("pattern", ["gather", "all_reduce"])
def test_collective_schedules_on_a_torus_play_exactly_as_the_reference(algorithm, pattern):
    topo = torus((4, 3), True, 45e9, 1e-6)
    groups = [[0, 5, 10, 3], [1, 6, 11, 4], [2, 7, 8, 9]]  # diagonal-ish groups: multi-hop routes that share links
    schedule = build_schedule(pattern, groups, algorithm)
    rng = np.random.default_rng(0)
    buffers = [{(b, p): rng.standard_normal(200 + 8 * b) for b in range(4) for p in range(schedule.pieces)} for _ in range(topo.n_devices)]
    assert_same(topo, schedule.transfers, buffers)
    assert_same(topo, schedule.transfers, buffers, cut_through=False, start_s=[0.0, 2e-6] * 6)
