"""The engine on hand-made transfers: latency, bandwidth, pipelining, queues, forwarding."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from netsim.engine import EngineError, play
from netsim.network.topology import ring, torus

B = 1e9
ALPHA = 1e-6


def move(src, dst, key="x", deps=(), reduce=False, direction=1):
    return SimpleNamespace(src=src, dst=dst, key=key, reduce=reduce, direction=direction, deps=tuple(deps))


def buffers(n, **held):
    out = [{} for _ in range(n)]
    for name, (device, array) in held.items():
        out[device][name] = array
    return out


def test_one_hop_costs_latency_plus_bytes_over_bandwidth():
    run = play(ring(2, B, ALPHA), [move(0, 1)], buffers(2, x=(0, np.zeros(500, np.uint8))))
    assert run.time == pytest.approx(ALPHA + 500 / B, rel=1e-12)


@pytest.mark.parametrize("hops", [1, 2, 3, 5])
def test_cut_through_and_store_and_forward(hops):
    s = 10_000
    topo = ring(12, B, ALPHA)
    data = buffers(12, x=(0, np.zeros(s, np.uint8)))
    cut = play(topo, [move(0, hops)], data)
    store = play(topo, [move(0, hops)], data, cut_through=False)
    assert cut.time == pytest.approx(hops * ALPHA + s / B, rel=1e-12)
    assert store.time == pytest.approx(hops * (ALPHA + s / B), rel=1e-12)


def test_back_to_back_messages_pipeline_on_a_link():
    # Two independent messages on the same link: the second starts when the first has left
    # the link, not when it has arrived: 2 s/B + alpha, not 2 (s/B + alpha).
    s = 1000
    data = buffers(2, a=(0, np.zeros(s, np.uint8)), b=(0, np.zeros(s, np.uint8)))
    run = play(ring(2, B, ALPHA), [move(0, 1, "a"), move(0, 1, "b")], data)
    assert run.time == pytest.approx(2 * s / B + ALPHA, rel=1e-12)
    stats = run.links[(0, 1, (0, 1))]
    assert stats.messages == 2 and stats.bytes == 2 * s and stats.max_queue == 2
    assert stats.busy_s == pytest.approx(2 * s / B, rel=1e-12)


def test_dependencies_serialise_steps():
    s = 1000
    transfers = [move(0, 1), move(1, 2, deps=[0]), move(2, 3, deps=[1])]
    run = play(ring(4, B, ALPHA), transfers, buffers(4, x=(0, np.zeros(s, np.uint8))))
    assert run.time == pytest.approx(3 * (ALPHA + s / B), rel=1e-12)
    assert run.sent_at[1] == pytest.approx(run.arrived_at[0])


def test_reduce_adds_into_the_receivers_copy_and_place_moves_a_reference():
    a = np.arange(4, dtype=np.int32)
    b = np.full(4, 10, np.int32)
    data = [{"k": a}, {"k": b}]
    run = play(ring(2, B, ALPHA), [move(0, 1, "k", reduce=True)], data)
    np.testing.assert_array_equal(run.buffers[1]["k"], a + b)
    run = play(ring(2, B, ALPHA), [move(0, 1, "k")], data)
    assert run.buffers[1]["k"] is a
    assert data[1]["k"] is b  # the caller's dicts are not changed


def test_a_slower_later_link_holds_the_message_longer():
    topo = torus((3,), wraparound=False, bandwidth_Bps=B, latency_s=ALPHA)
    slow = topo.graph.edges[1, 2, (0, 1)]
    slow["bandwidth_Bps"] = B / 4
    s = 4000
    run = play(topo, [move(0, 2)], buffers(3, x=(0, np.zeros(s, np.uint8))))
    # head reaches 1 at alpha, the slow link then needs 4 s/B
    assert run.time == pytest.approx(ALPHA + 4 * s / B + ALPHA, rel=1e-12)


def test_a_faster_later_link_cannot_finish_before_the_tail_arrives():
    topo = torus((3,), wraparound=False, bandwidth_Bps=B, latency_s=ALPHA)
    topo.graph.edges[1, 2, (0, 1)]["bandwidth_Bps"] = 4 * B
    s = 4000
    run = play(topo, [move(0, 2)], buffers(3, x=(0, np.zeros(s, np.uint8))))
    assert run.time == pytest.approx(s / B + 2 * ALPHA, rel=1e-12)


def test_fifo_order_when_two_messages_meet_at_a_link():
    # 0->2 and 1->2 both need link 1->2; 1->2 asks first (at time 0), 0->2 at alpha.
    s = 1000
    data = buffers(3, a=(0, np.zeros(s, np.uint8)), b=(1, np.zeros(s, np.uint8)))
    run = play(torus((3,), False, B, ALPHA), [move(0, 2, "a"), move(1, 2, "b")], data)
    assert run.arrived_at[1] == pytest.approx(s / B + ALPHA)
    assert run.arrived_at[0] == pytest.approx(2 * s / B + ALPHA)


def test_missing_chunk_and_deadlock_are_engine_errors():
    with pytest.raises(EngineError, match=r"device 0 must send chunk 'x' \(transfer #0\) but does not hold it"):
        play(ring(2), [move(0, 1)], [{}, {}])
    # two transfers waiting for each other never start
    with pytest.raises(EngineError, match=r"deadlock: devices \[0, 1\] still wait for chunks; steps \[0, 1\] never became ready"):
        play(ring(2), [move(0, 1, deps=[1]), move(1, 0, deps=[0])], [{"x": np.zeros(1)}, {"x": np.zeros(1)}])


def test_bad_transfer_lists_are_value_errors():
    with pytest.raises(ValueError, match=r"transfer #0 names device 5, but the topology has 2"):
        play(ring(2), [move(0, 5)], [{}, {}])
    with pytest.raises(ValueError, match=r"need one buffer per device: got 1 for 2 devices"):
        play(ring(2), [], [{}])


def test_a_late_device_delays_what_depends_on_it():
    s = 1000
    transfers = [move(0, 1), move(1, 2, deps=[0])]
    data = buffers(3, x=(0, np.zeros(s, np.uint8)))
    on_time = play(ring(3, B, ALPHA), transfers, data)
    late = play(ring(3, B, ALPHA), transfers, data, start_s=[0.0, 20e-6, 0.0])
    assert on_time.time == pytest.approx(2 * (ALPHA + s / B), rel=1e-12)
    # device 1 receives at alpha + s/B but only forwards once it starts, at 20 us
    assert late.sent_at[1] == pytest.approx(20e-6)
    assert late.time == pytest.approx(20e-6 + ALPHA + s / B, rel=1e-12)
    with pytest.raises(ValueError, match=r"start_s must give a finite time >= 0 for each of the 3 devices"):
        play(ring(3), transfers, data, start_s=[0.0, -1.0, 0.0])


def test_a_topology_built_again_finds_its_routes_and_a_failed_link_its_detour():
    from netsim.engine.routes import Routes

    first, again = ring(6, B, ALPHA), ring(6, B, ALPHA)
    assert Routes.of_topology(first).of_grid is Routes.of_topology(again).of_grid  # the same grid: routes computed once
    broken = ring(6, B, ALPHA).fail_link(0, 1)
    assert Routes.of_topology(broken).of_grid is not Routes.of_topology(first).of_grid
    data = buffers(6, x=(0, np.zeros(1000, np.uint8)))
    assert play(first, [move(0, 1)], data).routes == [((0, 1, (0, 1)),)]
    assert [len(route) for route in play(broken, [move(0, 1)], data).routes] == [5]  # the long way round
    assert play(again, [move(0, 1)], data).routes == [((0, 1, (0, 1)),)]


def test_a_second_run_on_the_same_topology_reads_the_links_again():
    # Routes are cached per topology between runs; bandwidths and latencies must not be.
    topo = ring(4, B, ALPHA)
    data = buffers(4, x=(0, np.zeros(1000, np.uint8)))
    assert play(topo, [move(0, 2)], data).time == pytest.approx(2 * ALPHA + 1000 / B, rel=1e-12)
    topo.graph.edges[1, 2, (0, 1)]["bandwidth_Bps"] = B / 2
    topo.graph.edges[0, 1, (0, 1)]["latency_s"] = 3 * ALPHA
    assert play(topo, [move(0, 2)], data).time == pytest.approx(3 * ALPHA + ALPHA + 2000 / B, rel=1e-12)
