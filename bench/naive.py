"""A naive reference: the bidirectional ring all_gather written the straightforward SimPy way.

This is what one writes first, and what netsim's engine is measured against in
``bench/run.py``: one SimPy process per device running the algorithm, one
:class:`simpy.Store` per directed link served by its own process, a process per
message for the propagation delay, and the real NumPy chunks (views of the
input, never copied) travelling in the messages. It models the same thing as
netsim (a link is held ``bytes / bandwidth``, the message arrives ``latency``
later, the next message may start while the previous one propagates), so both
give the same simulated time, ``(n - 1) (latency + block / (2 bandwidth))``.

It knows only this one algorithm on a ring; it is not part of netsim.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy


@dataclass
class Message:
    block: int
    piece: int
    data: np.ndarray


class Link:
    """A directed link: a Store of waiting messages, served in order by a process."""

    def __init__(self, env: simpy.Environment, bandwidth_Bps: float, latency_s: float, inbox: simpy.Store) -> None:
        self.env = env
        self.bandwidth_Bps = bandwidth_Bps
        self.latency_s = latency_s
        self.queue = simpy.Store(env)
        self.inbox = inbox
        env.process(self.serve())

    def serve(self):
        while True:
            message = yield self.queue.get()
            yield self.env.timeout(message.data.nbytes / self.bandwidth_Bps)
            self.env.process(self.propagate(message))

    def propagate(self, message: Message):
        yield self.env.timeout(self.latency_s)
        yield self.inbox.put(message)


def ring_all_gather(x: np.ndarray, bandwidth_Bps: float, latency_s: float) -> tuple[float, list[dict], int]:
    """Bidirectional ring all_gather of ``x`` stacked ``[n, ...]``.

    Returns the simulated time, each device's chunks ``{(block, piece): array}``
    and the number of SimPy events processed.
    """
    n = x.shape[0]
    env = simpy.Environment()
    held = [{(d, p): piece for p, piece in enumerate(np.array_split(x[d].reshape(-1), 2))} for d in range(n)]
    from_left = [simpy.Store(env) for _ in range(n)]  # messages travelling +1 arrive here
    from_right = [simpy.Store(env) for _ in range(n)]  # messages travelling -1 arrive here
    right = [Link(env, bandwidth_Bps, latency_s, from_left[(d + 1) % n]) for d in range(n)]
    left = [Link(env, bandwidth_Bps, latency_s, from_right[(d - 1) % n]) for d in range(n)]
    finished = [0.0]

    def device(d: int):
        for t in range(n - 1):
            forward, backward = (d - t) % n, (d + t) % n
            right[d].queue.put(Message(forward, 0, held[d][(forward, 0)]))
            left[d].queue.put(Message(backward, 1, held[d][(backward, 1)]))
            for inbox in (from_left[d], from_right[d]):
                message = yield inbox.get()
                held[d][(message.block, message.piece)] = message.data
        finished[0] = max(finished[0], env.now)

    for d in range(n):
        env.process(device(d))
    events = 0
    while True:
        try:
            env.step()
        except simpy.core.EmptySchedule:
            break
        events += 1
    return finished[0], held, events
