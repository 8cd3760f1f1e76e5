"""What the engine takes and what it gives back: transfers, compute steps and the playback.

The engine plays any schedule: *transfers* (a chunk moving from one device to
another, hop by hop over the links of its route) and *compute steps* (a device
working for a while), each waiting for others to be done. Steps are numbered
transfers first: with ``n`` transfers, compute step ``j`` is step ``n + j`` in the
``deps`` of any step. A transfer waits for arrivals at its source and for compute
steps on its source; a compute step waits for arrivals at its device and for
compute steps on its device.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from netsim.network.topology import LinkId

__all__ = ["ComputeLike", "ComputeRecord", "ComputeStats", "EngineError", "Hop", "LinkStats", "Playback", "TransferLike"]


class TransferLike(Protocol):
    """What the engine needs to know about a transfer (see :class:`netsim.algorithms.transfers.Transfer`).

    A sequence of transfers may also offer ``columns()``, returning the same
    facts as whole arrays (see :func:`play`), which spares the engine from
    reading millions of objects one by one.
    """

    src: int
    dst: int
    key: Hashable
    reduce: bool
    direction: int
    deps: tuple[int, ...]


class ComputeLike(Protocol):
    """What the engine needs to know about a compute step (see :class:`netsim.algorithms.compute.Compute`).

    Device ``device`` works for ``seconds``, or, when that is None, for
    ``max(flops / peak_flops, bytes / hbm_bandwidth_Bps)`` at its chip's rates
    (:meth:`netsim.network.topology.Topology.device`), once every step in ``deps``
    is done. When it is done, and ``fn`` is not None, the device stores
    ``fn(*(its chunks at inputs))`` as its chunk ``output``.
    """

    device: int
    seconds: float | None
    flops: float
    bytes: float
    deps: tuple[int, ...]
    inputs: tuple[Hashable, ...]
    output: Hashable | None
    fn: Callable[..., Any] | None


class EngineError(RuntimeError):
    """A schedule could not be played: a chunk was missing or the run deadlocked.

    This is a bug in the schedule (netsim's own), never a user mistake.
    """


@dataclass(slots=True)
class Hop:
    """One message crossing one link."""

    transfer: int
    link: LinkId
    start: float
    end: float


@dataclass(slots=True)
class LinkStats:
    """What one directed link did during the run."""

    bytes: int = 0
    messages: int = 0
    busy_s: float = 0.0
    max_queue: int = 0


@dataclass(slots=True)
class ComputeStats:
    """What one device's compute unit did during the run."""

    steps: int = 0
    busy_s: float = 0.0
    max_queue: int = 0


@dataclass(frozen=True)
class ComputeRecord:
    """When each compute step of a run started and ended (seconds), as arrays indexed by step."""

    started_at: np.ndarray
    ended_at: np.ndarray

    def __len__(self) -> int:
        return len(self.started_at)


@dataclass
class Playback:
    """Everything a run produced.

    Attributes
    ----------
    buffers : list of dict
        Each device's chunks at the end.
    time : float
        When the last transfer arrived or the last compute step ended, seconds.
    sent_at, arrived_at : list of float
        Per transfer: when it left its source, when its tail reached its destination.
    nbytes : list of int
        Per transfer: size of the chunk it carried.
    hops : HopList
        Every link crossing (:class:`Hop`), in the order they started (ties in
        the order they were requested).
    links : dict
        :class:`LinkStats` for every link of the topology.
    events : int
        SimPy events processed (one per distinct instant at which something happens).
    routes : list of tuple
        Per transfer: the links it crossed.
    actions : int
        Discrete events the engine handled: messages reaching the end of a link,
        links starting and finishing messages, devices waking up (the events of
        the straightforward SimPy model, which would have as many SimPy events).
    bundles : dict
        Bundle key -> part keys, as the schedule named them (empty if none).
    computes : ComputeRecord
        When each compute step started and ended (empty if the schedule has none).
    compute_units : dict
        :class:`ComputeStats` for every device that computed.
    dma_units : dict
        :class:`ComputeStats` of every device's DMA engine that moved data (steps with ``unit=1``).
    engine : str
        Which engine played the run: ``"processes"`` (the model as SimPy
        processes, :mod:`netsim.engine.processes`) or ``"fast"`` (the fast player,
        :mod:`netsim.engine.fast`). Both give the same numbers.
    """

    buffers: list[dict[Hashable, Any]]
    time: float
    sent_at: list[float]
    arrived_at: list[float]
    nbytes: list[int]
    hops: Sequence[Hop]
    links: dict[LinkId, LinkStats]
    events: int = 0
    routes: list[tuple[LinkId, ...]] = field(default_factory=list)
    actions: int = 0
    bundles: dict[Hashable, tuple[Hashable, ...]] = field(default_factory=dict)
    computes: ComputeRecord = field(default_factory=lambda: ComputeRecord(np.zeros(0), np.zeros(0)))
    compute_units: dict[int, ComputeStats] = field(default_factory=dict)
    engine: str = "fast"
    dma_units: dict[int, ComputeStats] = field(default_factory=dict)
