"""What a run of the compiled loop leaves, read as the Python player leaves it.

:class:`netsim.engine.compiled.CompiledPlayer` (chunks in a devices x keys table)
and :class:`netsim.engine.compiled_bundles.BundledPlayer` (chunks by slot,
bundles made in the loop) fill the loop's arrays differently; once it has run,
both keep its counts, times and hop records the same way, here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from netsim.columnar import index_dtype, signed_ints
from netsim.engine.columns import ColumnList, HopList, hops_and_links, step_dependencies
from netsim.engine.link_model import LinkModel
from netsim.engine.playback import LinkStats
from netsim.engine.routes import Routes
from netsim.network.topology import LinkId, Topology

__all__ = ["CompiledRun", "ComputeSteps"]


class ComputeSteps(NamedTuple):
    """A schedule's compute steps as the compiled loop takes them: each step's device, duration
    (seconds, worked out before the run), whether it is a join, and its dependencies
    (``dep_idx[dep_ptr[j]:dep_ptr[j + 1]]``, numbered as in :func:`netsim.engine.play`).

    Examples
    --------
    >>> from netsim.algorithms.compute import Compute
    >>> from netsim.engine.columns import compute_columns
    >>> steps = [Compute(device=1, seconds=2e-6, deps=(0,)), Compute(device=1, deps=(1,), join=True)]
    >>> found = ComputeSteps.of(steps, compute_columns(steps), [2e-6, 0.0])
    >>> found.device.tolist(), found.join.tolist(), found.dep_idx.tolist()
    ([1, 1], [False, True], [0, 1])
    """

    device: np.ndarray
    duration: np.ndarray
    join: np.ndarray
    dep_ptr: np.ndarray
    dep_idx: np.ndarray
    lane: np.ndarray | None = None
    """Which of its device's units serves each step (0 the compute unit, 1 the DMA engine); None: all 0."""

    @classmethod
    def of(cls, computes: Sequence[Any], columns: dict[str, Any] | None, durations: Sequence[float]) -> ComputeSteps:
        """The steps of ``computes``, from their columns (:func:`~netsim.engine.columns.compute_columns`) and durations."""
        if not computes:
            none = np.zeros(0, np.int64)
            return cls(none, np.zeros(0, np.float64), np.zeros(0, np.bool_), np.zeros(1, np.int64), none)
        join = np.asarray(columns["join"], np.bool_)
        ptr, idx = np.asarray(columns["dep_ptr"], np.int64), signed_ints(columns["dep_idx"])
        lane = np.asarray(columns["unit"], np.int64) if "unit" in columns and np.any(columns["unit"]) else None
        return cls(np.asarray(columns["device"], np.int64), np.asarray(durations, np.float64), join, ptr, idx, lane)

    def dependencies(self, columns: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """Every step's dependencies, transfers' (``columns``) then compute steps': ``dep_ptr``, ``dep_idx``."""
        return step_dependencies(columns, {"dep_ptr": self.dep_ptr, "dep_idx": self.dep_idx})

    def loop_arrays(self, n_devices: int) -> tuple[np.ndarray, ...]:
        """What the loop takes (``computes``): device, duration, join, room for when each step
        started and ended and each unit's longest queue (:meth:`CompiledRun._keep` reads those three),
        and the unit that serves each step (device ``d``'s compute unit is ``d``, its DMA engine ``d + n_devices``)."""
        m = len(self.device)
        lanes = 1 if self.lane is None else int(self.lane.max()) + 1
        unit = self.device if self.lane is None else self.device + n_devices * self.lane
        return self.device, self.duration, self.join, np.full(m, np.nan), np.full(m, np.nan), np.zeros(n_devices * lanes, np.int64), unit

    def taken_in(self, n_devices: int) -> np.ndarray:
        """How many compute steps each device takes in when they are done (joins are not: they are done in passing)."""
        return np.bincount(self.device[~self.join], minlength=n_devices)


class CompiledRun:
    """The loop's counts, per-transfer times, hop records and link queues, as the players' common attributes.

    A subclass sets ``sent_at_array``, ``arrived_at_array``, ``nbytes``, ``record``
    (transfer, link, start, end columns of room for every hop), ``max_queue_array``
    and ``link_ids`` before the loop runs, then calls :meth:`_keep`.
    """

    sent_at_array: np.ndarray
    arrived_at_array: np.ndarray
    nbytes: np.ndarray
    record: tuple[np.ndarray, ...]
    max_queue_array: np.ndarray
    link_ids: list[LinkId]

    def _routes(self, topology: Topology, columns: dict[str, Any]) -> tuple[np.ndarray, ...]:
        """Each transfer's route number, the distinct routes as link numbers (``route_ptr``,
        ``route_links``) and the links' bandwidths and latencies, as the loop takes them; keeps
        ``link_ids`` and the distinct routes as link ids (``route_ids``: the player makes each
        transfer's, ``routes``, from the route numbers once the run is played)."""
        routes = Routes.of_topology(topology)
        self.link_ids = routes.link_ids
        inverse, numbers, ids = routes.distinct(topology, columns) if len(columns["src"]) else (np.zeros(0, np.int32), [], [])
        self.route_ids = ids
        route_ptr = np.zeros(len(numbers) + 1, np.int64)
        np.cumsum([len(r) for r in numbers], out=route_ptr[1:])
        route_links = np.fromiter((k for r in numbers for k in r), np.int64, int(route_ptr[-1]))
        links = LinkModel.of(topology, self.link_ids)
        return inverse, route_ptr, route_links, links.bandwidth_Bps, links.latency_s

    def _number_back(self, order: np.ndarray, missing: np.ndarray, route_of: np.ndarray, spare: tuple[np.ndarray, ...] = ()) -> None:
        """The loop's per-transfer results and hop records, and what each step still waits for (``missing``), numbered
        back from the play order in place (``order``: new number -> old), with each transfer's route number
        (``route_of``); a status naming a transfer names it by its old number.

        Each column is gathered into one scratch array and copied back: a big run's columns are hundreds of
        megabytes, and a fresh one each would be made while the loop's arrays still hold their pages. The
        scratch and the old -> new numbering are made in ``spare`` arrays (the loop's own, done with) where they fit.
        """
        from netsim.engine.play_order import gather, inverse_of

        n = len(order)
        spare = sorted(spare, key=lambda a: a.nbytes, reverse=True)
        scratch = _room(spare, np.float64, max(n, (len(self.record[0]) + 1) // 2))
        rank = _room(spare, index_dtype(n), n)  # old number -> new
        inverse_of(order, rank)
        for column in (self.sent_at_array, self.arrived_at_array, self.nbytes, missing[:n], route_of):
            into = scratch.view(column.dtype)[:n]
            gather(column, rank, into)
            column[:] = into
        hops = self.record[0]
        into = scratch.view(hops.dtype)[: len(hops)]
        gather(order, hops, into)
        hops[:] = into
        if self.status < 0:
            self.status = -1 - int(order[-1 - self.status])

    def _keep(self, counts: np.ndarray, taken: np.ndarray, expected: np.ndarray, missing: Any, n_devices: int, units: tuple = ()) -> int:
        """Keep what the loop counted and recorded; the number of reductions it made.

        ``units``: when each compute step started and ended, and each compute unit's longest queue.
        """
        self.actions, instants, n_records, n_reduced = counts.tolist()
        self.events = instants + 2  # as SimPy counts the Python player's: its start, an event per instant, its end
        self.taken = taken.tolist()
        self.expected = expected.tolist()
        self.missing = missing
        self.sent_at, self.arrived_at = ColumnList(self.sent_at_array), ColumnList(self.arrived_at_array)
        started, ended, unit_max_queue = units or ([], [], np.zeros(n_devices, np.int64))
        self.started: list[float] = np.asarray(started, np.float64).tolist()
        self.ended: list[float] = np.asarray(ended, np.float64).tolist()
        self.unit_max_queue = np.asarray(unit_max_queue).tolist()
        self.record = tuple(c[:n_records] for c in self.record)
        return n_reduced

    @property
    def max_queue(self) -> list[int]:
        return self.max_queue_array.tolist()

    def stats(self) -> tuple[HopList, dict[LinkId, LinkStats]]:
        """Hops in start order and per-link statistics, from the recorded columns."""
        return hops_and_links(self.record, self.nbytes, self.link_ids, self.max_queue)


def hop_count(route_of: np.ndarray, route_ptr: np.ndarray) -> int:
    """The link crossings of transfers taking routes ``route_of`` (of the routes ``route_ptr`` delimits), without an array a transfer.

    Examples
    --------
    >>> hop_count(np.array([1, 1, 0]), np.array([0, 1, 3]))
    5
    """
    return int(np.bincount(route_of, minlength=len(route_ptr) - 1) @ np.diff(route_ptr)) if len(route_of) else 0


def _room(spare: list[np.ndarray], dtype: Any, count: int) -> np.ndarray:
    """``count`` entries of ``dtype`` in the first of ``spare`` (contiguous arrays no longer needed) big enough, taken
    out of the list; a fresh array when none is.

    Examples
    --------
    >>> spare = [np.zeros(10, np.int32)]
    >>> _room(spare, np.float64, 5).shape, spare, _room(spare, np.float64, 5).shape
    ((5,), [], (5,))
    """
    size = count * np.dtype(dtype).itemsize
    for k, array in enumerate(spare):
        if array.nbytes >= size and array.flags.c_contiguous and array.ctypes.data % np.dtype(dtype).alignment == 0:
            del spare[k]
            return array.reshape(-1).view(np.uint8)[:size].view(dtype)
    return np.empty(count, dtype)


def waiting_lists(dep_ptr: np.ndarray, dep_idx: np.ndarray, n_transfers: int, joins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Who waits for each step (``waiter[wait_ptr[t]:wait_ptr[t + 1]]`` for step t), in the order they are counted off.

    That is step order, but for a join, which comes just before its first waiter
    (:func:`netsim.engine.columns.waiter_keys`), as the other players count off.
    """
    from netsim.engine.kernel_parts import waiters, waiting_order

    steps = len(dep_ptr) - 1
    joined = len(joins) and joins.any()  # (if so, the argsort of waiter_keys, in one pass)
    order = waiting_order(dep_ptr, dep_idx, np.asarray(joins, np.bool_), n_transfers) if joined else np.arange(steps, dtype=np.int64)
    wait_ptr = np.zeros(steps + 1, index_dtype(len(dep_idx)))  # (the loop holds it: 4 bytes a step while it fits)
    return wait_ptr, waiters(dep_ptr, dep_idx, order, wait_ptr)
