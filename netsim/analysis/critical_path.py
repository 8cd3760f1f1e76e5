"""The critical path of a run: the chain of link crossings that set its finish time.

Read backwards from the last arrival. Each link crossing (a :class:`~netsim.engine.Hop`)
started either as soon as its message was ready there, or later, when the link came
free. "Ready" means: on the first link, when the source sent the chunk; on a later
link, when the message's head arrived (one latency after it started on the previous
link with cut-through forwarding, after its tail with store-and-forward), as the link
model says (:func:`netsim.engine.link_model.head_ready`). If the link
was the reason, the chain continues with the crossing that held the link; if the
message was, it continues with the message's previous link, or, at the source, with
the arrival the chunk waited for (the latest of its ``deps``), or ends at the moment
the source device started (time 0, or later for a straggler).

Nothing is re-simulated: the path is computed from the playback alone, so a degraded
link or a late device shows up on it exactly when it decided the time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from netsim.columnar import stable_order
from netsim.engine import Playback, TransferLike, transfer_columns
from netsim.engine.columns import hop_arrays
from netsim.engine.critical_path import CriticalPath, PathStep
from netsim.engine.link_model import head_ready
from netsim.network.topology import Topology

__all__ = ["critical_path"]


def _not_after(a: float, b: float) -> bool:
    """a <= b up to rounding (times are sums of the same floats in a different order)."""
    return a <= b + 1e-12 * max(abs(a), abs(b), 1e-9)


def critical_path(
    topology: Topology,
    transfers: Sequence[TransferLike],
    playback: Playback,
    *,
    start_s: Sequence[float] | None = None,
    cut_through: bool = True,
) -> CriticalPath:
    """The chain of link crossings that set the finish time of a playback.

    Parameters
    ----------
    topology : Topology
        The topology played on (for link latencies and names).
    transfers : sequence of Transfer
        The schedule's transfers, as played.
    playback : Playback
        What :func:`netsim.engine.play` returned.
    start_s : sequence of float, optional
        Device start times given to ``play`` (stragglers); default all 0.
    cut_through : bool, default True
        The forwarding mode given to ``play``.

    Returns
    -------
    CriticalPath

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace as T
    >>> from netsim.engine import play
    >>> from netsim.network.topology import ring
    >>> topo = ring(2, bandwidth_Bps=1e9, latency_s=1e-6)
    >>> moves = [T(src=0, dst=1, key="x", reduce=False, direction=1, deps=())]
    >>> run = play(topo, moves, [{"x": np.zeros(1000, np.uint8)}, {}], start_s=[20e-6, 0.0])
    >>> path = critical_path(topo, moves, run, start_s=[20e-6, 0.0])
    >>> path.describe()
    'device 0 starts at 20 us; 0->1'
    >>> round(path.finish_s * 1e6, 6)  # 20 us late + 1 us latency + 1000 B at 1 GB/s
    22.0
    """
    n = len(transfers)
    if n == 0:
        return CriticalPath((), None, 0.0, playback.time)
    start_s = [0.0] * topology.n_devices if start_s is None else list(start_s)
    columns = transfer_columns(transfers)
    src, dst, dep_ptr, dep_idx = (np.asarray(columns[name]) for name in ("src", "dst", "dep_ptr", "dep_idx"))
    hops = playback.hops
    hop_transfer, hop_link, hop_start, hop_end, link_ids = hop_arrays(hops)
    link_of = link_ids.__getitem__
    # For the crossings on the path only: the same message's crossing before it, and the crossing before it on its link.
    shared = getattr(hops, "order", None)  # a HopList keeps its orders (the invariant checks sorted by link already)
    of_message = _Runs(hop_transfer, shared("transfer") if callable(shared) else stable_order(hop_transfer))
    on_link = _Runs(hop_link, shared("link") if callable(shared) else stable_order(hop_link))
    arrival = np.asarray(playback.arrived_at, float)
    arrived, sent = arrival.item, np.asarray(playback.sent_at, float).item  # (a few items read: never the whole list)
    last = max(range(n), key=lambda t: (arrived(t), -t)) if np.isnan(arrival).any() else int(np.argmax(arrival))
    i, h = last, of_message.last(last)
    steps: list[PathStep] = []
    if h < 0:
        steps.append(PathStep(i, None, "local", sent(i), arrived(i), "data"))
    while True:
        if h < 0:
            source = int(src[i])
            deps = [d for d in dep_idx[dep_ptr[i] : dep_ptr[i + 1]].tolist() if d < len(dst) and dst[d] == source]  # (arrivals, not compute steps)
            late_start = start_s[source] > 0 and _not_after(sent(i), start_s[source])
            if deps and not late_start:
                j = max(deps, key=lambda d: (arrived(d), -d))
                if _not_after(sent(i), arrived(j)):
                    i, h = j, of_message.last(j)
                    if h < 0:
                        steps.append(PathStep(i, None, "local", sent(i), arrived(i), "data"))
                    continue
            origin = (source, start_s[source])
            break
        link = link_of(int(hop_link[h]))
        start, end = float(hop_start[h]), float(hop_end[h])
        previous = of_message.before(h)
        if previous < 0:
            ready = sent(i)
        else:
            latency = topology.link(link_of(int(hop_link[previous])))["latency_s"]
            ready = head_ready(float(hop_start[previous]), float(hop_end[previous]), latency, cut_through)
        blocker = on_link.before(h)
        if blocker >= 0 and not _not_after(start, ready):
            steps.append(PathStep(i, link, topology.link_name(link), start, end, "link"))
            i, h = int(hop_transfer[blocker]), blocker
        else:
            steps.append(PathStep(i, link, topology.link_name(link), start, end, "data"))
            h = previous
    steps.reverse()
    return CriticalPath(tuple(steps), origin[0], origin[1], arrived(last))


class _Runs:
    """Crossings grouped by a column (message or link), answering for one crossing at a time.

    ``order`` sorts ``group`` (non-negative ints) stably: each group's crossings are a
    run of it, in the order they started; ``starts[v]`` is where group v's run begins.
    """

    def __init__(self, group: np.ndarray, order: np.ndarray) -> None:
        self.group, self.order = group, order
        counts = np.bincount(group) if len(group) else np.zeros(0, np.int64)
        self.starts = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=self.starts[1:])
        self.bound = self.starts.item

    def _run(self, value: int) -> tuple[int, int]:
        if not 0 <= value < len(self.starts) - 1:
            return 0, 0
        return self.bound(value), self.bound(value + 1)

    def last(self, value: int) -> int:
        """The last crossing of group ``value`` (-1 if it has none)."""
        lo, hi = self._run(value)
        return int(self.order[hi - 1]) if hi > lo else -1

    def before(self, k: int) -> int:
        """The crossing before crossing ``k`` in its group (-1 if it is the first)."""
        lo, hi = self._run(int(self.group[k]))
        j = lo + int(self.order[lo:hi].searchsorted(k))
        return int(self.order[j - 1]) if j > lo else -1
