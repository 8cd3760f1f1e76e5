"""memory_over_time._memory on whole arrays against the straightforward event loop it replaced."""

from __future__ import annotations

import numpy as np
import pytest

import netsim
from netsim.analysis.memory_over_time import _memory
from netsim.network.topology import ring, torus


def memory_one_event_at_a_time(schedule, playback, n_devices):
    """The straightforward replay: events in (time, arrivals first, then incoming, then sends, transfer) order."""
    transfers = schedule.transfers
    events = []
    for i, t in enumerate(transfers):
        events.append((playback.arrived_at[i], 0, t.dst, "arrive", i))
        events.append((playback.sent_at[i], 1, t.dst, "incoming", i))
        events.append((playback.sent_at[i], 2, t.src, "send", i))
    events.sort(key=lambda e: (e[0], e[1], e[4]))
    seen = [set() for _ in range(n_devices)]
    extra, flight, peak, peak_flight = (np.zeros(n_devices, np.int64) for _ in range(4))
    for _, _, device, kind, i in events:
        t, nbytes = transfers[i], playback.nbytes[i]
        if kind == "incoming":
            flight[device] += nbytes
        elif kind == "send":
            seen[device].add(t.key)  # first touched by a send: its input
        else:
            flight[device] -= nbytes
            if t.key not in seen[device]:
                seen[device].add(t.key)
                if not t.reduce:
                    extra[device] += nbytes
        peak[device] = max(peak[device], extra[device] + flight[device])
        peak_flight[device] = max(peak_flight[device], flight[device])
    return peak, extra, peak_flight


RUNS = [
    lambda x: netsim.all_gather(x, topology=ring(4)),
    lambda x: netsim.psum(x, topology=ring(4)),
    lambda x: netsim.psum_scatter(x, topology=ring(4), tiled=True),
    lambda x: netsim.all_to_all(x, 0, 0, topology=ring(4), tiled=True),
    lambda x: netsim.all_gather(x, topology=ring(4), stragglers={1: 3e-6}),
    lambda x: netsim.psum(x, topology=torus((2, 2)), algorithm="rabenseifner"),
    lambda x: netsim.all_gather(x, topology=ring(4), algorithm="recursive_doubling"),
    lambda x: netsim.all_gather(x, axis_index_groups=netsim.Mesh({"a": 2, "b": 2}, torus((2, 2))).groups(("a", "b")), algorithm="multiaxis_bundled"),
]


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("columns", [4, 24, 100])
def test_memory_on_arrays_equals_the_event_loop(run, columns):
    x = np.random.default_rng(columns).standard_normal((4, columns)).astype(np.float32)
    result = run(x)
    for leaf in result.leaves:
        got = _memory(leaf.schedule, leaf.playback, result.n_devices)
        expected = memory_one_event_at_a_time(leaf.schedule, leaf.playback, result.n_devices)
        for a, b in zip(got, expected, strict=True):
            assert a.tolist() == b.tolist()
        assert got[0].max() > 0  # something was held: the comparison is not of zeros


@pytest.mark.parametrize("run", RUNS)
def test_the_compiled_memory_pass_equals_the_event_loop(run, monkeypatch):
    """Big runs are read by one compiled pass (netsim.analysis.memory_compiled): the same numbers, here forced on small runs."""
    from netsim.analysis import memory_over_time

    monkeypatch.setattr(memory_over_time, "COMPILED_MIN", 0)
    result = run(np.random.default_rng(3).standard_normal((4, 24)).astype(np.float32))
    for leaf in result.leaves:
        got = _memory(leaf.schedule, leaf.playback, result.n_devices)
        expected = memory_one_event_at_a_time(leaf.schedule, leaf.playback, result.n_devices)
        assert [a.tolist() for a in got] == [b.tolist() for b in expected]


def test_the_compiled_memory_pass_sorts_events_that_do_not_come_in_time_order():
    from netsim.analysis.memory_compiled import memory_pass

    # device 1 receives transfer 0 after transfer 1 (in transfer order its arrivals are not in time order)
    src, dst, key = np.array([0, 2], np.int64), np.array([1, 1], np.int64), np.array([0, 1], np.int64)
    arrived, sent, size = np.array([5.0, 2.0]), np.array([1.0, 0.0]), np.array([10, 7], np.int64)
    peak, extra, flight = memory_pass(src, dst, np.zeros(2, np.bool_), key, arrived, sent, size, 3)
    # device 1: 7 B on the way from 0 s, 10 B more from 1 s (17 in flight), 7 arrive at 2 s, 10 at 5 s: 17 held at most
    assert peak.tolist() == [0, 17, 0] and extra.tolist() == [0, 17, 0] and flight.tolist() == [0, 17, 0]
