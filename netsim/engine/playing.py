"""Play a schedule with either engine: the process model or the fast player, same numbers."""

from __future__ import annotations

import gc
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from netsim.engine.columns import ColumnList, as_array, compute_columns, hops_and_links, transfer_columns
from netsim.engine.compiled import compiled_player
from netsim.engine.fast import FastPlayer
from netsim.engine.link_model import LinkModel
from netsim.engine.payloads import sizes
from netsim.engine.playback import ComputeLike, ComputeRecord, ComputeStats, EngineError, Playback, TransferLike
from netsim.engine.processes import ComputeUnit, Link, Model, compute_times_s
from netsim.engine.routes import Routes, check_schedule
from netsim.network.topology import Topology

__all__ = ["ENGINES", "play"]

ENGINES = ("processes", "fast")
"""The engines that play a schedule: the model as SimPy processes, and the fast player."""


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Keep Python's cyclic garbage collector out of a run.

    A run allocates millions of small objects that live until it ends; the
    collector would walk them again and again (a fifth to two thirds of the time
    in profiles) and find nothing to free.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _rates(topology: Topology) -> list[tuple[float | None, float | None]]:
    """Each device's peak FLOP/s and HBM bandwidth (bytes/s), None where the topology does not say."""
    facts = [topology.device(d) for d in range(topology.n_devices)]
    return [(f["peak_flops"], f["hbm_bandwidth_Bps"]) for f in facts]


def play(
    topology: Topology,
    transfers: Sequence[TransferLike],
    buffers: Sequence[dict[Hashable, Any]],
    *,
    computes: Sequence[ComputeLike] = (),
    cut_through: bool = True,
    start_s: Sequence[float] | None = None,
    engine: str | None = None,
    link_class: type[Link] | None = None,
    compute_class: type[ComputeUnit] | None = None,
) -> Playback:
    """Simulate the transfers and compute steps on the topology, moving the real payloads.

    Parameters
    ----------
    topology : Topology
    transfers : sequence of Transfer
        What to move; each waits for its ``deps`` to be done at its source before
        it leaves. The sequence may offer a ``columns()`` method returning a
        mapping of arrays, one entry per transfer: ``src``, ``dst``,
        ``direction``, ``reduce``, ``key_index`` (into the list ``keys``), and the
        dependencies as ``dep_ptr`` / ``dep_idx`` (transfer i waits for
        ``dep_idx[dep_ptr[i]:dep_ptr[i+1]]``).
    buffers : sequence of dict
        Each device's chunks at the start, keyed as the transfers' ``key``. The
        dicts are copied; the arrays in them are not. A chunk may be anything
        with an ``nbytes`` (and ``+`` for reductions).
    computes : sequence of Compute, optional
        Compute steps (:class:`netsim.algorithms.compute.Compute`). Steps are
        numbered transfers first: with n transfers, compute step j is step
        ``n + j`` in anyone's ``deps``.
    cut_through : bool, default True
        Cut-through forwarding; False for store-and-forward.
    start_s : sequence of float, optional
        When each device starts, seconds (stragglers). Chunks sent to a device
        before it starts wait in its memory; it sends nothing before it starts.
    engine : {"fast", "processes"}, optional
        The fast player, or the model as SimPy processes
        (:mod:`netsim.engine.processes`): the same events, the same numbers.
        By default the fast player, or the processes when a class is given.
    link_class, compute_class : type, optional
        Your own :class:`~netsim.engine.processes.Link` or
        :class:`~netsim.engine.processes.ComputeUnit` subclass; the process model
        plays the run (the fast player refuses them: it reads the link model of
        :mod:`netsim.engine.link_model`, not a class's methods).

    Returns
    -------
    Playback

    Raises
    ------
    ValueError
        If a step names a device outside the topology, waits for what is not
        another step or is not done where it starts, or a compute step cannot
        be timed.
    EngineError
        If a transfer needs a chunk its source does not hold, or steps are still
        waiting when nothing more can happen (a deadlock in the schedule).

    Examples
    --------
    A transfer waits for a compute step, and a compute step waits for it:

    >>> import numpy as np
    >>> from types import SimpleNamespace as T
    >>> from netsim.algorithms.compute import Compute
    >>> from netsim.network.topology import ring
    >>> move = T(src=0, dst=2, key="x", reduce=False, direction=1, deps=(1,))  # after compute step 0 (step 1)
    >>> steps = [Compute(device=0, seconds=2e-6), Compute(device=2, seconds=1e-6, deps=(0,))]
    >>> run = play(ring(4, bandwidth_Bps=1e9, latency_s=1e-6), [move], [{"x": np.zeros(1000, np.uint8)}, {}, {}, {}], computes=steps)
    >>> round(run.time * 1e6, 6)  # 2 us of compute, 2 hops of 1 us plus 1 us of bytes, 1 us of compute
    6.0
    >>> run.buffers[2]["x"] is run.buffers[0]["x"]  # moved, not copied
    True
    """
    if engine is None:
        engine = "processes" if link_class is not None or compute_class is not None else "fast"
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if (link_class is not None or compute_class is not None) and engine == "fast":
        raise ValueError(
            "the fast player and its compiled loop play only the built-in links and compute units: they time messages by "
            "netsim.engine.link_model and compute steps by compute_time_s, never calling a class's methods; "
            "use engine='processes' with link_class or compute_class"
        )
    n_devices = topology.n_devices
    if len(buffers) != n_devices:
        raise ValueError(f"need one buffer per device: got {len(buffers)} for {n_devices} devices")
    if start_s is None:
        start_s = [0.0] * n_devices
    with _gc_paused():
        columns = transfer_columns(transfers)
        computed = compute_columns(computes)
        check_schedule(columns, computed, n_devices)
        if len(start_s) != n_devices or any(not 0 <= t < float("inf") for t in start_s):
            raise ValueError(f"start_s must give a finite time >= 0 for each of the {n_devices} devices, got {list(start_s)!r}")
        devices = computed["device"].tolist()
        if engine == "fast":
            rates = _rates(topology) if devices else []  # (every device's, for the process model's compute units)
            durations = compute_times_s(computed, rates).tolist() if devices else []  # (compute_time_s of each, to the bit)
            run = compiled_player(topology, columns, buffers, cut_through, start_s, computes, computed, durations)
            if run is None:
                run = FastPlayer(topology, columns, buffers, cut_through, start_s, computes, computed, durations)
                run.run()
            waiting = [d for d in range(n_devices) if run.taken[d] < run.expected[d]]
            hops, links = run.stats() if not waiting else (None, None)
            route_ids, actions, unit_queues = run.routes, run.actions, run.unit_max_queue
        else:
            routes = Routes.of_topology(topology)
            route, route_ids = routes.of(topology, columns) if len(columns["src"]) else ([], [])
            run = Model(
                LinkModel.of(topology, routes.link_ids, cut_through=cut_through),
                route,
                columns,
                computes,
                computed,
                buffers,
                _rates(topology),
                start_s=start_s,
                link_class=link_class or Link,
                compute_class=compute_class or ComputeUnit,
            )
            run.run()
            waiting = [d.index for d in run.devices if d.expected]
            hops, links = hops_and_links(run.record, run.nbytes, routes.link_ids, [link.max_queue for link in run.links]) if not waiting else (None, None)
            late = sum(1 for s in start_s if s > 0)
            # The process model's events less each process's start, each device's end and the late devices' timeouts:
            # the events the fast player handles as actions.
            actions = run.events - len(run.links) - n_devices - len(run.units) - late
            unit_queues = [unit.max_queue for unit in run.units]
        if waiting:
            stuck = [int(i) for i, left in enumerate(run.missing) if left]
            raise EngineError(f"deadlock: devices {waiting} still wait for chunks; steps {stuck[:10]} never became ready")
        started, ended = np.array(run.started, np.float64), np.array(run.ended, np.float64)
        playback = Playback(
            buffers=run.buffers,
            time=max(float(as_array(run.arrived_at, np.float64).max(initial=0.0)), max(run.ended, default=0.0)),
            sent_at=run.sent_at,
            arrived_at=run.arrived_at,
            nbytes=ColumnList(run.nbytes) if isinstance(run.nbytes, np.ndarray) else sizes(run.nbytes),
            hops=hops,
            links=links,
            events=run.events,
            routes=route_ids,
            actions=actions,
            bundles=run.bundles,
            computes=ComputeRecord(started, ended),
            compute_units=_unit_stats(devices, started, ended, unit_queues, computed["join"] | (computed["unit"] != 0)),
            engine=engine,
            dma_units=_unit_stats(devices, started, ended, unit_queues[n_devices:], computed["unit"] != 1),
        )
        del run  # its per-transfer lists go now: the collector, back on, need not walk them
    return playback


def _unit_stats(devices: list[int], started: np.ndarray, ended: np.ndarray, max_queue: Sequence[int], others: np.ndarray) -> dict[int, ComputeStats]:
    """What one unit of each device did, for the devices it worked on (in device order); ``others`` are no work of that unit (joins, other units' steps)."""
    work = ~others
    if not work.any():
        return {}
    device = np.asarray(devices, np.int64)[work]
    steps = np.bincount(device)
    busy = np.bincount(device, weights=(ended - started)[work])
    return {d: ComputeStats(int(steps[d]), float(busy[d]), int(max_queue[d])) for d in np.flatnonzero(steps).tolist()}
