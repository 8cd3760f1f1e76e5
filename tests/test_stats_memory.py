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
