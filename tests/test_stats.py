"""Run statistics read from the playback: conservation of bytes, memory, steps, queues, critical path."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import runnable

import netsim
from netsim.algorithms.registry import ALGORITHMS
from netsim.algorithms.schedule import build_schedule
from netsim.analysis.stats import run_stats
from netsim.analysis.why import analyse
from netsim.engine import play
from netsim.network.topology import mesh, ring, torus
from netsim.result import LeafRun, Result

ALPHA, B = 1e-6, 45e9


def runs():
    """A spread of runs: every collective and algorithm, groups, tori, meshes, store-and-forward, pytrees."""
    x = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
    for algorithm in ALGORITHMS:
        if algorithm in runnable("gather", 8):
            yield netsim.all_gather(x, algorithm=algorithm)
        if algorithm in runnable("reduce_scatter", 8):
            yield netsim.psum_scatter(x.reshape(8, 8, 8), algorithm=algorithm)
        if algorithm in runnable("all_reduce", 4):
            yield netsim.psum(x, algorithm=algorithm, axis_index_groups=[[0, 2, 4, 6], [1, 3, 5, 7]])
    y = np.arange(16 * 32, dtype=np.int32).reshape(16, 32)
    yield netsim.all_gather(y, topology=torus((4, 4)))
    yield netsim.psum(y, topology=mesh((4, 4)), algorithm="bidirectional_halfway")
    yield netsim.all_gather(x, topology=mesh((8,)), algorithm="ring", cut_through=False)
    yield netsim.all_gather({"a": x, "b": x[:, :3]}, algorithm="ring")


@pytest.fixture(scope="module")
def all_runs(bundled_runs):
    return [(r, run_stats(r)) for r in [*runs(), *bundled_runs.values()]]


def test_link_bytes_equal_transfer_bytes_times_hops(all_runs):
    for result, stats in all_runs:
        expected = sum(nbytes * len(route) for leaf in result.leaves for nbytes, route in zip(leaf.playback.nbytes, leaf.playback.routes, strict=True))
        assert sum(u.bytes for u in stats.links) == expected == stats.hop_bytes
        assert sum(u.messages for u in stats.links) == sum(len(route) for leaf in result.leaves for route in leaf.playback.routes)


def test_bytes_sent_equal_bytes_received_across_the_system(all_runs):
    for result, stats in all_runs:
        sent = sum(d.bytes_sent for d in stats.devices)
        received = sum(d.bytes_received for d in stats.devices)
        assert sent == received == stats.transfer_bytes == sum(sum(leaf.playback.nbytes) for leaf in result.leaves)


def test_per_device_bytes_are_the_schedules(all_runs):
    for result, stats in all_runs:
        sent, received = [0] * result.n_devices, [0] * result.n_devices
        for leaf in result.leaves:
            for i, t in enumerate(leaf.schedule.transfers):
                sent[t.src] += leaf.playback.nbytes[i]
                received[t.dst] += leaf.playback.nbytes[i]
        assert [d.bytes_sent for d in stats.devices] == sent
        assert [d.bytes_received for d in stats.devices] == received


def test_critical_path_parts_add_up_to_the_simulated_time(all_runs):
    for result, stats in all_runs:
        p = stats.critical_path
        assert p.latency_s + p.transmission_s + p.queueing_s + p.straggle_s == pytest.approx(result.time, rel=1e-9)
        assert min(p.latency_s, p.transmission_s, p.queueing_s, p.straggle_s) >= 0


def test_utilisation_is_busy_time_over_the_run(all_runs):
    for result, stats in all_runs:
        for u in stats.links:
            engine_busy = sum(leaf.playback.links[u.link].busy_s for leaf in result.leaves)
            assert u.busy_s == pytest.approx(engine_busy, rel=1e-12)
            assert u.utilisation == pytest.approx(engine_busy / result.time, rel=1e-12)
            assert 0 <= u.utilisation <= 1 + 1e-12


def test_all_gather_multiplies_memory_by_the_group_size():
    for n in (2, 4, 8):
        x = np.zeros((n, 1024), np.float32)
        for algorithm in (a for a in ALGORITHMS if a in runnable("gather", x.shape[0])):
            stats = run_stats(netsim.all_gather(x, algorithm=algorithm))
            for d in stats.devices:
                assert d.input_bytes == 4096
                assert d.output_bytes == n * 4096
                assert d.peak_bytes == n * 4096  # everything it gathered, nothing more
                assert d.finish_s > 0


def test_reduce_scatter_memory_is_input_plus_receive_buffers():
    n, s = 4, 4096
    stats = run_stats(netsim.psum_scatter(np.zeros((n, n, s // 4), np.float32), algorithm="ring"))
    for d in stats.devices:
        assert d.input_bytes == n * s
        assert d.output_bytes == s
        assert d.peak_in_flight_bytes == s  # one block arriving per step
        assert d.peak_bytes == n * s + s


def test_contention_free_ring_steps_end_together():
    n, s = 8, 2**16
    result = netsim.all_gather(np.zeros((n, s // 4), np.float32), algorithm="ring")
    stats = run_stats(result)
    step_time = ALPHA + s / B
    assert len(stats.steps) == n - 1
    for st in stats.steps:
        assert st.start_s == pytest.approx(st.step * step_time, rel=1e-9, abs=1e-15)
        assert st.end_s == pytest.approx((st.step + 1) * step_time, rel=1e-9)
        assert st.first_done_s == pytest.approx(st.end_s, rel=1e-9)
    assert len(stats.step_timings) == n * (n - 1)
    assert all(u.longest_queue == 0 and u.wait_s == 0 for u in stats.links)


def test_contention_is_counted_on_the_shared_links(bundled_runs):
    # allgather_ring4_strided: each 1 MiB block crosses two links and meets the other group's block.
    stats = run_stats(bundled_runs["allgather_ring4_strided"])
    used = [u for u in stats.links if u.bytes]
    assert {u.name for u in used} == {"0->1", "1->2", "2->3", "3->0"}
    s = 2**20
    for u in used:
        assert (u.bytes, u.messages, u.longest_queue) == (2 * s, 2, 1)
        assert u.wait_s == pytest.approx(s / B - ALPHA, rel=1e-9)  # the second hop waits for the first message
    assert stats.critical_path.queueing_s == pytest.approx(s / B - ALPHA, rel=1e-9)
    assert stats.max_route_hops == 2


def test_statistics_split_the_runs_one_critical_path(bundled_runs):
    # allgather_ring4_strided: the path is device 1's block crossing 1->2 (from time 0), then device 0's block, which was
    # ready there one latency later and waited for the link until the first left it; then one latency to device 2.
    result = bundled_runs["allgather_ring4_strided"]
    path = run_stats(result).critical_path
    assert path.path == result.critical_path
    assert [(step.link_name, step.waited_for) for step in result.critical_path.steps] == [("1->2", "data"), ("1->2", "link")]
    s = 2**20
    assert (path.transfers, path.hops) == (2, 2)
    assert path.queueing_s == pytest.approx(s / B - ALPHA, rel=1e-9)  # from 0's block being ready (α) to the link freeing (s/B)
    assert path.transmission_s == pytest.approx(s / B + ALPHA, rel=1e-9)  # 1's block before 0's was ready, then 0's block
    assert path.latency_s == pytest.approx(ALPHA, rel=1e-9)
    assert path.straggle_s == 0
    assert path.latency_s + path.transmission_s + path.queueing_s == pytest.approx(result.time, rel=1e-12)


def test_stragglers_show_in_steps_and_critical_path():
    n, s, late = 4, 4096, 5e-6
    topology = ring(n, bandwidth_Bps=B, latency_s=ALPHA)
    schedule = build_schedule("gather", [list(range(n))], "ring")
    buffers = [{(d, 0): np.zeros(s, np.uint8)} for d in range(n)]
    playback = play(topology, schedule.transfers, buffers, start_s=[0, 0, late, 0])
    result = Result(
        output=np.zeros((n, n, s), np.uint8),
        time=playback.time,
        collective="all_gather",
        algorithm="ring",
        topology=topology.name,
        n_devices=n,
        groups=schedule.groups,
        bytes_per_device=s,
        total_bytes=n * s,
        verified=False,
        leaves=[LeafRun((n, s), "uint8", schedule, playback)],
        topology_obj=topology,
    )
    stats = run_stats(result)
    p = stats.critical_path
    assert p.straggle_s == pytest.approx(late, rel=1e-9)
    assert p.latency_s + p.transmission_s + p.queueing_s + p.straggle_s == pytest.approx(playback.time, rel=1e-9)
    assert stats.steps[0].straggler == 3  # device 2 sends late, so device 3 finishes step 0 last
    assert "stragglers: late starts add 5 us" in analyse(result).why


def test_stats_need_the_topology():
    result = dataclasses.replace(netsim.all_gather(np.arange(4)), topology_obj=None)
    with pytest.raises(ValueError, match="carries no topology"):
        run_stats(result)


def test_path_facts_are_path_facts_once_statistics_are_kept():
    from netsim.analysis.path_stats import PathFacts, path_facts

    result = netsim.all_gather(np.zeros((4, 64), np.float32), axis_index_groups=[[0, 2], [1, 3]], algorithm="ring")
    before = path_facts(result)
    netsim.stats(result)  # computed once for this result and kept
    after = path_facts(result)
    assert isinstance(after, PathFacts) and after == before


def test_timing_only_runs_report_the_output_s_real_size():
    from netsim.analysis.stats import run_stats as _run_stats

    x = {"a": np.zeros((8, 1024), np.float32), "b": np.zeros((8, 3), np.int8)}
    sizes = _run_stats(netsim.all_gather(x, data="none")).devices[0].output_bytes
    assert sizes == _run_stats(netsim.all_gather(x)).devices[0].output_bytes == 8 * 1024 * 4 + 8 * 3
    scattered = _run_stats(netsim.psum_scatter(np.zeros((4, 4, 10), np.float32), data="none")).devices[0]
    assert scattered.output_bytes == 10 * 4  # one block of the input
