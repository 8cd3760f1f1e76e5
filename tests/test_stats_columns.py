"""Statistics computed from the engine's columns against a straightforward reference that reads
every Hop and Transfer object one by one (the way the statistics were first written)."""

import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import netsim
from netsim.analysis.stats import run_stats

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))


def reference(result):
    """Per link: wait and longest queue; per step: start, end, first done, straggler; the waits the critical path resolved."""
    topo = result.topology_obj
    cut_through = result.forwarding != "store_and_forward"
    latency = {link: topo.link(link)["latency_s"] for link in topo.links}
    leaf = result.leaves[0]
    playback, transfers = leaf.playback, list(leaf.schedule.transfers)
    hops = list(playback.hops)
    previous, ready, wait, by_transfer = {}, [], [], defaultdict(list)
    for index, hop in enumerate(hops):
        p = previous.get(hop.transfer)
        r = playback.sent_at[hop.transfer] if p is None else (hops[p].start if cut_through else hops[p].end) + latency[hops[p].link]
        previous[hop.transfer] = index
        by_transfer[hop.transfer].append(index)
        ready.append(r)
        waited = hop.start - r
        wait.append(waited if waited > 1e-12 * abs(hop.start) else 0.0)  # rounding of sums taken in another order is not a wait
    link_wait, marks = defaultdict(float), defaultdict(list)
    for index, hop in enumerate(hops):
        link_wait[hop.link] += wait[index]
        if wait[index] > 0:
            marks[hop.link] += [(ready[index], 1), (hop.start, -1)]
    queue = {}
    for link, events in marks.items():
        depth = best = 0
        for _, delta in sorted(events):
            depth += delta
            best = max(best, depth)
        queue[link] = best
    start, end, phase = {}, {}, {}
    for i, t in enumerate(transfers):
        start[(t.step, t.src)] = min(start.get((t.step, t.src), math.inf), playback.sent_at[i])
        end[(t.step, t.dst)] = max(end.get((t.step, t.dst), -math.inf), playback.arrived_at[i])
        phase.setdefault(t.step, t.phase)
    steps = []
    for step in sorted(phase):
        ends = [(d, v) for (s, d), v in end.items() if s == step]
        straggler, last = max(ends, key=lambda dv: (dv[1], -dv[0]))
        first_send = min(v for (s, _), v in start.items() if s == step)
        steps.append((step, phase[step], first_send, last, min(v for _, v in ends), straggler))
    windows = []  # when each crossing the critical path reached by waiting for its link was ready, and when it started
    for step in leaf.critical_path.steps:
        if step.waited_for == "link":
            index = next(i for i in by_transfer[step.transfer] if hops[i].link == step.link)
            windows.append((max(ready[index], leaf.critical_path.origin_s), hops[index].start, topo.link_name(step.link)))
    return link_wait, queue, steps, windows


EXTRA = ("store-and-forward-straggler", "strided-groups-queue")
"""Two runs beside the bundled scenarios: a straggler on a store-and-forward ring with a slow link, and strided groups that queue."""


@pytest.fixture(scope="module")
def results(bundled_runs):
    """Every bundled scenario (run once per session, see conftest) and the two runs of EXTRA: {name: Result}."""
    x = np.arange(8 * 4096, dtype=np.float32).reshape(8, 4096)
    topo = netsim.ring(8).degrade_link(2, 3, bandwidth_factor=0.25)
    return {
        **bundled_runs,
        "store-and-forward-straggler": netsim.all_gather(x, topology=topo, stragglers={5: 3e-6}, cut_through=False),
        "strided-groups-queue": netsim.all_gather(x, axis_index_groups=[[0, 2, 4, 6], [1, 3, 5, 7]], algorithm="ring"),
    }


@pytest.mark.parametrize("name", [path.stem for path in SCENARIOS] + list(EXTRA))
def test_statistics_from_columns_equal_the_object_by_object_reference(name, results):
    result = results[name]
    stats = run_stats(result)
    link_wait, queue, steps, windows = reference(result)
    for usage in stats.links:
        assert usage.wait_s == link_wait.get(usage.link, 0.0), usage.name
        assert usage.longest_queue == queue.get(usage.link, 0), usage.name
    assert [(s.step, s.phase, s.start_s, s.end_s, s.first_done_s, s.straggler) for s in stats.steps] == steps
    path = stats.critical_path
    assert path.path == result.critical_path  # the one path the run walked, split, not walked again
    crossings = [step for step in result.critical_path.steps if step.link is not None]
    assert (path.transfers, path.hops) == (len({step.transfer for step in result.critical_path.steps}), len(crossings))
    parts = (path.latency_s, path.transmission_s, path.queueing_s, path.straggle_s)
    assert min(parts) >= 0
    assert sum(parts) == pytest.approx(result.time, rel=1e-12)
    covered, reach = 0.0, -math.inf  # queueing: the time covered by the waits the path resolved, each counted once
    for lo, hi, _ in sorted(windows):
        covered += max(0.0, hi - max(lo, reach))
        reach = max(reach, hi)
    assert path.queueing_s == pytest.approx(covered, rel=1e-9, abs=1e-15)
    assert {name for name, _ in path.queued_on} == {name for lo, hi, name in windows if hi > lo}


def test_some_case_above_has_queues_and_late_starts(results):
    """The cases above are not all trivial: some link queues, and a straggler shows on a critical path."""
    assert any(u.longest_queue > 0 for r in results.values() for u in run_stats(r).links)
    assert any(run_stats(r).critical_path.straggle_s > 0 for r in results.values())


@pytest.mark.parametrize(
    "run",
    [
        lambda x: netsim.all_gather(x, topology=netsim.ring(8)),
        lambda x: netsim.psum(x, topology=netsim.torus((2, 4)), algorithm="rabenseifner"),
        lambda x: netsim.all_gather(x, topology=netsim.ring(8), stragglers={3: 2e-6}),
        lambda x: netsim.all_to_all(x, 0, 0, topology=netsim.torus((2, 4)), tiled=True),
        lambda x: netsim.all_gather({"a": x, "b": x[:, :3]}, topology=netsim.ring(8), algorithm="ring"),
    ],
)
def test_the_compiled_step_pass_gives_the_step_summaries_of_the_sorting_one(run, monkeypatch):
    """Big runs' step summaries come from one compiled pass (netsim.analysis.steps_compiled): the same, forced here on small runs."""
    from netsim.analysis import steps

    result = run(np.random.default_rng(5).standard_normal((8, 16)).astype(np.float32))
    offset = 0.0
    for index, leaf in enumerate(result.leaves):
        sorting = steps._steps(index, leaf.schedule, leaf.playback, offset, False, result.n_devices)
        monkeypatch.setattr(steps, "COMPILED_MIN", 0)
        compiled = steps._steps(index, leaf.schedule, leaf.playback, offset, False, result.n_devices)
        monkeypatch.setattr(steps, "COMPILED_MIN", 10**12)
        assert compiled == sorting and sorting[0]
        offset += leaf.playback.time


@pytest.mark.parametrize("n_ops", [3, 5000])  # every (op, link) pair an entry; and few of them used (sorted out)
def test_link_sharing_names_the_ops_whose_intervals_on_a_link_overlap(n_ops):
    from netsim.analysis.op_estimates import link_sharing
    from netsim.engine.columns import HopList

    rng = np.random.default_rng(n_ops)
    n_hops, n_links, n_transfers = 400, 6, 120
    transfer = rng.integers(0, n_transfers, n_hops)
    link = rng.integers(0, n_links, n_hops)
    start = rng.random(n_hops).round(2)
    end = start + rng.random(n_hops).round(2) / 4
    op_of_transfer = rng.choice(np.arange(n_ops)[:: max(n_ops // 4, 1)], n_transfers)
    hops = HopList(transfer, link, start, end, [(k, k + 1, (0, 1)) for k in range(n_links)])
    expected = [set() for _ in range(n_ops)]  # by the definition: each (op, link) one interval, first start to last end
    spans = {}
    for t, lk, a, b in zip(transfer, link, start, end, strict=True):
        key = (int(op_of_transfer[t]), int(lk))
        lo, hi = spans.get(key, (np.inf, -np.inf))
        spans[key] = (min(lo, a), max(hi, b))
    for (o1, l1), (a1, b1) in spans.items():
        for (o2, l2), (a2, b2) in spans.items():
            if l1 == l2 and o1 != o2 and a1 < b2 and a2 < b1:
                expected[o1].add(o2)
    assert link_sharing(hops, op_of_transfer, n_ops) == expected
    assert link_sharing(hops, op_of_transfer, n_ops, at_once=7) == expected  # (the hops a few at a time, as a big run's)
    assert any(expected)


def test_link_totals_taken_a_slice_of_hops_at_a_time_are_bincounts_own_sums():
    """Bytes, messages and busy time per link, the hops read 5 at a time, equal NumPy's bincount over them all,
    every float bit for bit (the busy times are added in hop order either way)."""
    from netsim.engine.columns import hops_and_links

    rng = np.random.default_rng(11)
    n_hops, n_links = 103, 4
    transfer, link = rng.integers(0, 40, n_hops).astype(np.int32), rng.integers(0, n_links, n_hops).astype(np.int32)
    start = np.zeros(n_hops)
    end = rng.random(n_hops) * 10.0 ** rng.integers(-17, 1, n_hops)  # (durations of every size: another order of additions rounds otherwise)
    nbytes = rng.integers(1, 2**20, 40).astype(np.int64)
    link_ids = [(k, k + 1, (0, 1)) for k in range(n_links)]
    _, links = hops_and_links((transfer, link, start, end), nbytes, link_ids, [0] * n_links, at_once=5)
    busy = np.bincount(link, weights=end - start, minlength=n_links)
    total = np.bincount(link, weights=nbytes[transfer], minlength=n_links)
    assert [links[lk].busy_s for lk in link_ids] == busy.tolist()
    assert [links[lk].bytes for lk in link_ids] == total.astype(np.int64).tolist()
    assert [links[lk].messages for lk in link_ids] == np.bincount(link, minlength=n_links).tolist()
