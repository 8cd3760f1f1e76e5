"""The link model (netsim.engine.link_model): its arithmetic by hand, and every player agreeing with it."""

from __future__ import annotations

from types import SimpleNamespace as T

import numpy as np
import pytest

from netsim.engine import Link, compiled, play
from netsim.engine.link_model import LinkModel, head_ready, serve, transmission_s
from netsim.network.topology import ring

# Powers of two: every sum below is exact, so the hand arithmetic is compared with ==.
LATENCY, BANDWIDTH, SIZE = 2.0**-20, 2.0**30, 2**12  # s / B = 2**-18 s


def two_hops(cut_through=True):
    links = LinkModel.of(ring(4, bandwidth_Bps=BANDWIDTH, latency_s=LATENCY), cut_through=cut_through)
    return links, (links.number[(0, 1, (0, 1))], links.number[(1, 2, (0, 1))])


def test_a_two_hop_message_alone_takes_the_hand_arithmetic():
    links, route = two_hops()
    h, s = 2, SIZE
    assert links.alone(s, route) == [0.0, LATENCY, h * LATENCY + s / BANDWIDTH]  # cut-through: h latency + s / B
    start, second, arrival = links.store_and_forward().alone(s, route)
    assert (start, second, arrival) == (0.0, LATENCY + s / BANDWIDTH, h * (LATENCY + s / BANDWIDTH))  # h (latency + s / B)
    assert links.alone(s, route, sent_at=1.0)[-1] == 1.0 + (h * LATENCY + s / BANDWIDTH)


def test_serve_waits_for_the_tail_and_says_when_the_message_goes_on():
    tx = transmission_s(SIZE, BANDWIDTH)
    assert tx == 2.0**-18
    # First hop: the tail given is ignored; the head goes on one latency after the start (cut-through) or after the end.
    assert serve(0.0, tx, LATENCY, 99.0, 0, False, True) == (tx, tx, LATENCY, tx + LATENCY)
    assert serve(0.0, tx, LATENCY, 99.0, 0, False, False) == (tx, tx, tx + LATENCY, tx + LATENCY)
    # A later hop whose tail is still coming: done when it arrives; delivered a latency after that.
    end, hold, reach, tail = serve(1.0, tx, LATENCY, 2.0, 1, True, True)
    assert (end, hold, reach, tail) == (2.0, 1.0, 1.0 + LATENCY, 2.0 + LATENCY)
    assert head_ready(1.0, 2.0, LATENCY, True) == 1.0 + LATENCY
    assert head_ready(1.0, 2.0, LATENCY, False) == 2.0 + LATENCY
    np.testing.assert_array_equal(head_ready(np.array([0.0, 1.0]), np.array([1.0, 3.0]), np.array([0.5, 0.25]), False), [1.5, 3.25])


def test_the_link_model_is_frozen_and_reads_the_topology():
    topology = ring(4, bandwidth_Bps=BANDWIDTH, latency_s=LATENCY).degrade_link(0, 1, bandwidth_factor=0.5)
    links = LinkModel.of(topology, cut_through=False)
    assert links.link_ids == tuple(topology.links) and not links.cut_through
    assert links.bandwidth_Bps[links.number[(0, 1, (0, 1))]] == BANDWIDTH / 2
    with pytest.raises(ValueError, match="read-only"):
        links.latency_s[0] = 1.0
    with pytest.raises(AttributeError):
        links.cut_through = True


def contended(n=8):
    """Messages of different sizes, 1 to 3 hops each way round a ring, many sharing links at once."""
    moves = [T(src=s, dst=(s + d * k) % n, key=(s, k, d), reduce=False, direction=d, deps=()) for s in range(n) for k in (1, 2, 3) for d in (1, -1)]
    buffers = [{(s, k, d): np.zeros(1000 * (1 + (s + k) % 3), np.uint8) for k in (1, 2, 3) for d in (1, -1)} for s in range(n)]
    return ring(n, bandwidth_Bps=1e9, latency_s=3e-7), moves, buffers


def check_hops_follow_the_link_model(topology, moves, run, cut_through):
    """Every recorded crossing: its end and the next one's earliest start as serve() says, bit for bit."""
    links = LinkModel.of(topology, cut_through=cut_through)
    by_transfer = {}
    for hop in run.hops:
        by_transfer.setdefault(hop.transfer, []).append(hop)
    waited = 0
    for t, hops in by_transfer.items():
        tail_at = run.sent_at[t]
        ready = run.sent_at[t]
        for h, hop in enumerate(hops):
            k = links.number[hop.link]
            assert hop.start >= ready
            waited += hop.start > ready
            tx = transmission_s(run.nbytes[t], float(links.bandwidth_Bps[k]))
            end, hold, reach, tail_at = serve(hop.start, tx, float(links.latency_s[k]), tail_at, h, h == len(hops) - 1, cut_through)
            assert (hop.end, hold) == (end, end - hop.start)
            ready = hop.start + reach
        assert run.arrived_at[t] == ready
    assert waited  # the links really were contended


@pytest.mark.parametrize("cut_through", [True, False])
def test_every_player_agrees_with_the_link_model_under_contention(cut_through, monkeypatch):
    topology, moves, buffers = contended()
    processes = play(topology, moves, buffers, cut_through=cut_through, engine="processes")
    monkeypatch.setattr(compiled, "MIN_TRANSFERS", 10**9)
    fast = play(topology, moves, buffers, cut_through=cut_through, engine="fast")
    monkeypatch.setattr(compiled, "MIN_TRANSFERS", 0)
    played_by = []
    real = compiled.compiled_player
    monkeypatch.setattr("netsim.engine.playing.compiled_player", lambda *a: played_by.append(real(*a)) or played_by[-1])
    loop = play(topology, moves, buffers, cut_through=cut_through, engine="fast")
    assert isinstance(played_by[0], compiled.CompiledPlayer)
    for run in (processes, fast, loop):
        check_hops_follow_the_link_model(topology, moves, run, cut_through)
    for run in (fast, loop):
        assert [(h.transfer, h.link, h.start, h.end) for h in run.hops] == [(h.transfer, h.link, h.start, h.end) for h in processes.hops]
        assert list(run.arrived_at) == list(processes.arrived_at)


class OverheadLink(Link):
    overhead_s = 0.5e-6

    def transmission_s(self, message):
        return super().transmission_s(message) + self.overhead_s


def test_a_link_class_plays_on_the_process_model_only():
    topology, moves, buffers = contended(4)
    assert play(topology, moves, buffers, link_class=OverheadLink).engine == "processes"
    with pytest.raises(ValueError) as refused:
        play(topology, moves, buffers, engine="fast", link_class=OverheadLink)
    assert str(refused.value) == (
        "the fast player and its compiled loop play only the built-in links and compute units: they time messages by "
        "netsim.engine.link_model and compute steps by compute_time_s, never calling a class's methods; "
        "use engine='processes' with link_class or compute_class"
    )
