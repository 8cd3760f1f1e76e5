"""The schedule a program is lowered into, built op by op: transfer columns and compute steps in batches.

:func:`netsim.programs.lowering.lower` appends each collective's transfers
(:meth:`ScheduleBuilder.add_schedule`) and each op's compute steps, one batch per
op on all its devices (:meth:`ScheduleBuilder.add_computes`), and takes the
schedule at the end (:meth:`ScheduleBuilder.schedule`): transfers as a
:class:`~netsim.algorithms.transfers.TransferTable`, compute steps as a
:class:`~netsim.algorithms.compute_table.ComputeTable`. Until then a compute step
is referred to as ``-(j + 1)``; in the schedule it is step ``n + j`` after the
``n`` transfers.

What an op waits for on each device is either one array of shape
``(devices, k)`` (row ``d``: the ``k`` steps it waits for on device ``d``; the common
case of an op after compute ops) or a list of one sequence of steps per device.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, NamedTuple

import numpy as np

from netsim.algorithms.bundles import BundleTable, as_table
from netsim.algorithms.compute_table import ComputeTable
from netsim.algorithms.schedule import Schedule
from netsim.algorithms.transfers import PHASES, TransferTable
from netsim.columnar import index_dtype

__all__ = ["Ragged", "ScheduleBuilder", "Waits", "blocks_taken"]


class Ragged:
    """Per device, a run of steps of its own length: device ``d``'s are ``idx[ptr[d]:ptr[d + 1]]``.

    Examples
    --------
    >>> r = Ragged.of([(5,), (), (6, 7)])
    >>> len(r), r[2].tolist(), r.counts.tolist(), r.rows(np.array([2, 0])).idx.tolist()
    (3, [6, 7], [1, 0, 2], [6, 7, 5])
    >>> Ragged.side_by_side([r, Ragged.of(np.array([[1], [2], [3]]))]).idx.tolist()
    [5, 1, 2, 6, 7, 3]
    """

    __slots__ = ("idx", "ptr")

    def __init__(self, ptr: np.ndarray, idx: np.ndarray) -> None:
        self.ptr, self.idx = ptr, idx

    @classmethod
    def of(cls, waits: Any) -> Ragged:
        """``waits`` (an array ``(devices, k)``, a Ragged, or one sequence per device) as a Ragged."""
        if isinstance(waits, Ragged):
            return waits
        if isinstance(waits, np.ndarray):
            n, k = waits.shape
            return cls(np.arange(n + 1, dtype=np.int64) * k, waits.reshape(-1))
        counts = np.fromiter((len(w) for w in waits), np.int64, len(waits))
        ptr = np.zeros(len(waits) + 1, np.int64)
        np.cumsum(counts, out=ptr[1:])
        rows = [np.asarray(w, np.int64).reshape(-1) for w in waits if len(w)]
        return cls(ptr, np.concatenate(rows) if rows else np.zeros(0, np.int64))

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def __getitem__(self, device: int) -> np.ndarray:
        return self.idx[self.ptr[device] : self.ptr[device + 1]]

    @property
    def counts(self) -> np.ndarray:
        """How many steps each device has."""
        return np.diff(self.ptr)

    def rows(self, which: np.ndarray) -> Ragged:
        """The runs of devices ``which``, in that order."""
        counts = self.counts[which]
        ptr = np.zeros(len(which) + 1, np.int64)
        np.cumsum(counts, out=ptr[1:])
        return Ragged(ptr, self.idx[np.repeat(self.ptr[which] - ptr[:-1], counts) + np.arange(ptr[-1])])

    @staticmethod
    def side_by_side(parts: list[Ragged]) -> Ragged | None:
        """Each device's runs of ``parts``, one after another; None when a device would wait for a step twice."""
        n = len(parts[0])
        counts = sum(part.counts for part in parts)
        ptr = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=ptr[1:])
        idx = np.empty(int(ptr[-1]), np.int64)
        offset = ptr[:-1].copy()
        for part in parts:
            own = part.counts
            row = np.repeat(np.arange(n), own)
            idx[offset[row] + np.arange(len(part.idx)) - part.ptr[row]] = part.idx
            offset += own
        spans = sorted((int(part.idx.min()), int(part.idx.max())) for part in parts if len(part.idx))
        apart = all(a[1] < b[0] for a, b in itertools.pairwise(spans))  # (no step in two parts: none twice)
        if len(idx) > n and not apart:  # (a step twice on one device: each part's own order is kept only by the merge one device at a time)
            row = np.repeat(np.arange(n), counts)
            order = np.lexsort((idx, row))
            if np.any((idx[order][1:] == idx[order][:-1]) & (row[order][1:] == row[order][:-1])):
                return None
        return Ragged(ptr, idx)


class _Batch(NamedTuple):
    """Compute steps added together: one on each of ``devices``, the i-th waiting for ``deps[i]``; the rest the same for all."""

    devices: np.ndarray
    seconds: float | None
    flops: float
    bytes: float
    deps: Any
    name: str
    join: bool
    efficiency: float
    unit: int


Waits = np.ndarray | Ragged | list[Any]
"""Per device, the steps an op waits for: an int array ``(devices, k)``, a :class:`Ragged`, or one sequence per device."""


class ScheduleBuilder:
    """Collects transfer columns and batches of compute steps; compute steps are referred to as ``-(j + 1)`` until the end.

    Examples
    --------
    >>> b = ScheduleBuilder(2)
    >>> first = b.add_computes(np.arange(2), 4.0, 2.0, None, np.zeros((2, 0), np.int64), "mm")
    >>> b.add_computes(np.arange(2), 0.0, 0.0, 1e-6, first[:, None], "add").tolist()
    [-3, -4]
    >>> s = b.schedule()
    >>> len(s.computes), s.computes[2].deps.tolist(), s.computes[3].name
    (4, [0], 'add')
    """

    def __init__(self, n_devices: int, alias: np.ndarray | None = None) -> None:
        self.n_devices = n_devices
        self.alias = alias  # (played on representatives: the device each stands for; only theirs get compute steps)
        self.sizes: list[np.ndarray] = []  # (then each transfer's bytes, op after op: its chunk stands for one of that size)
        self.size_classes = np.zeros(0, np.int64)  # (the sizes, as the schedule numbers its chunks)
        self.columns: dict[str, list[np.ndarray]] = {k: [] for k in ("step", "src", "dst", "block", "piece", "reduce", "direction", "phase")}
        self.ptrs: list[np.ndarray] = []
        self.idxs: list[np.ndarray] = []
        self.n_dependencies = 0  # entries of self.idxs, all together
        self.n_transfers = 0
        self.steps = 0
        self.blocks = 0
        self.n_computes = 0
        self.batches: list[_Batch] = []  # the compute steps, op after op
        self.bundles: list[BundleTable] = []  # each bundled collective's bundles, their blocks renumbered
        self.plans: dict[Any, Schedule] = {}  # a collective's schedule, by what plans it: ops alike are planned once
        self.kept: dict[int, tuple[TransferTable, dict[str, np.ndarray]]] = {}  # its columns, converted once (see _kept)

    def add_schedule(self, schedule: Schedule, extra: Waits, blocks: int = 0, nbytes: np.ndarray | None = None) -> tuple[range, int, np.ndarray, np.ndarray]:
        """Append a collective's transfers, each also waiting for ``extra[src]``; (range, block offset, dst, block) of them.

        ``blocks`` block numbers are reserved for the op at least (its layout's, some of which may never travel:
        an all-to-all's last member keeps its own last block).

        Where a device waits for several steps, its transfers wait for one join of them
        (:class:`~netsim.algorithms.compute.Compute` ``join=True``): one dependency each,
        however many arrivals the op waits for. ``nbytes``: each transfer's size, when the
        schedule is played on representatives.
        """
        if nbytes is not None:
            self.sizes.append(nbytes)
        waits, step = self.joined(extra)
        table = schedule.transfers
        if not isinstance(table, TransferTable):
            table = _as_table(list(table))
        n, base, offset = len(table), self.n_transfers, self.blocks
        kept = self._kept(table)
        self.columns["step"].append((kept["step"] + self.steps).astype(np.int32))
        self.columns["block"].append((kept["block"] + offset).astype(np.int32))
        for name in ("src", "dst", "piece", "reduce", "direction", "phase"):  # (a plan's own arrays, shared by the ops alike)
            self.columns[name].append(kept[name])
        ptr, idx = _with_extra(kept["dep_ptr"], kept["dep_idx"] + base, kept["src64"], waits, step)
        self.ptrs.append(ptr[1:] + self.n_dependencies)
        self.idxs.append(idx)
        self.n_dependencies += len(idx)
        self.n_transfers += n
        self.steps += schedule.n_steps
        if table.bundles:  # bundle keys and their parts move with the collective's blocks
            bundles = as_table(table.bundles)
            keys, parts = bundles.key_array.copy(), bundles.part_array.copy()
            keys[:, 0] += offset
            parts[:, 0] += offset
            self.bundles.append(BundleTable(keys, bundles.ptr, parts))
        self.blocks += max(blocks_taken(table), blocks)
        return range(base, base + n), offset, kept["dst64"], kept["block"]

    @staticmethod
    def as_columns(schedule: Schedule) -> Schedule:
        """``schedule`` with its transfers as a :class:`~netsim.algorithms.transfers.TransferTable` (a plan given
        transfer by transfer, kept to be added again: converted once)."""
        if isinstance(schedule.transfers, TransferTable):
            return schedule
        return dataclasses.replace(schedule, transfers=_as_table(list(schedule.transfers)))

    def _kept(self, table: TransferTable) -> dict[str, np.ndarray]:
        """A plan's columns as the lowering keeps them, converted once per plan (ops alike share a plan): int32
        (half the memory of int64; a program's steps, devices, blocks and pieces stay far below 2**31), a
        direction (the ways a route can go: a few) and a phase int8, and the int64 forms the lowering computes with."""
        found = self.kept.get(id(table))
        if found is None or found[0] is not table:
            i32 = {name: getattr(table, name).astype(np.int32) for name in ("src", "dst", "piece")}
            i64 = {name: getattr(table, name).astype(np.int64) for name in ("step", "block", "dep_ptr", "dep_idx")}
            small = table.direction.astype(np.int8) if table.direction.size == 0 or abs(table.direction).max() < 100 else table.direction
            more = {"reduce": np.asarray(table.reduce, bool), "phase": table.phase.astype(np.int8), "direction": small}
            found = (table, {**i32, **i64, **more, "src64": table.src.astype(np.int64), "dst64": table.dst.astype(np.int64)})
            self.kept[id(table)] = found
        return found[1]

    def add_computes(
        self, devices: np.ndarray, flops: float, nbytes: float, seconds: float | None, deps: Waits, name: str, join=False, eff=1.0, unit=0
    ) -> np.ndarray:
        """One compute step on each of ``devices``, the i-th waiting for ``deps[i]``: their codes (an int64 array)."""
        m = len(devices)
        devices = np.asarray(devices, np.int64)
        keep = None if self.alias is None else np.flatnonzero(self.alias[devices] == devices)
        if keep is not None and len(keep) < m:  # only the representatives' steps; another device's code is its representative's
            self.batches.append(_Batch(devices[keep], seconds, flops, nbytes, _rows(deps, keep), name, join, eff, unit))
            codes = np.full(m, -1, np.int64)
            codes[keep] = -np.arange(self.n_computes + 1, self.n_computes + len(keep) + 1, dtype=np.int64)
            self.n_computes += len(keep)
            where = np.full(self.n_devices, -1, np.int64)
            where[devices] = np.arange(m)
            rep = where[self.alias[devices]]
            codes = np.where(rep >= 0, codes[np.maximum(rep, 0)], codes)
            return codes
        self.batches.append(_Batch(devices, seconds, flops, nbytes, deps, name, join, eff, unit))
        codes = -np.arange(self.n_computes + 1, self.n_computes + m + 1, dtype=np.int64)
        self.n_computes += m
        return codes

    def joined(self, waits: Waits) -> tuple[np.ndarray, np.ndarray]:
        """Per device, whether it waits for one step and which (0 where none): several steps are joined into one
        (:class:`~netsim.algorithms.compute.Compute` ``join=True``)."""
        n = len(waits)
        if isinstance(waits, np.ndarray):
            if waits.shape[1] == 0:
                return np.zeros(n, np.int64), np.zeros(n, np.int64)
            step = waits[:, 0] if waits.shape[1] == 1 else self.add_computes(np.arange(n), 0.0, 0.0, 0.0, waits, "join", join=True)
            return np.ones(n, np.int64), step
        if not isinstance(waits, np.ndarray):  # (one sequence per device, or a Ragged)
            waits = Ragged.of(waits)
            counts = waits.counts
            step = np.zeros(n, np.int64)
            single = counts == 1
            step[single] = waits.idx[waits.ptr[:-1][single]]
            several = np.flatnonzero(counts > 1)
            if len(several):  # (one join each, made device after device)
                step[several] = self.add_computes(several, 0.0, 0.0, 0.0, waits.rows(several), "join", join=True)
            return (counts > 0).astype(np.int64), step

    def schedule(self, aliases: Any = None) -> Schedule:
        """The schedule built: every transfer, then every compute step, dependencies numbered as the players take them.

        ``aliases`` (:class:`~netsim.network.translations.Translations`): the schedule is played on representatives,
        each transfer carrying a chunk keyed ``(k, 0)`` by its size, the k-th of :attr:`size_classes`.
        """
        n = self.n_transfers
        if self.ptrs:
            cols = {k: np.concatenate(v) for k, v in self.columns.items()}
            kind = index_dtype(n + self.n_computes, sum(len(i) for i in self.idxs))
            ptr = np.concatenate([np.zeros(1, np.int64), *self.ptrs], dtype=kind)
            idx = np.concatenate(self.idxs, dtype=kind)  # (a fresh array: renumbered in place)
            _renumber(idx, n)
        else:
            cols = {k: np.zeros(0, np.int8 if k == "phase" else bool if k == "reduce" else np.int32) for k in self.columns}
            ptr, idx = np.zeros(1, np.int64), np.zeros(0, np.int64)
        bundles = None
        if self.bundles:
            sizes = [len(b.part_array) for b in self.bundles]
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
            bundles = BundleTable(
                np.concatenate([b.key_array for b in self.bundles]),
                np.concatenate([[0]] + [b.ptr[1:] + s for b, s in zip(self.bundles, starts, strict=True)]),
                np.concatenate([b.part_array for b in self.bundles]),
            )
        if aliases is not None:  # (a chunk per size: the kept transfers' chunks are not the ones their sources hold)
            self.size_classes, which = np.unique(np.concatenate(self.sizes) if self.sizes else np.zeros(0, np.int64), return_inverse=True)
            cols["block"], cols["piece"] = which.astype(np.int32).reshape(-1), np.zeros(n, np.int32)
            cols["reduce"], bundles = np.zeros(n, bool), None
            route_dst, cols["dst"] = cols["dst"], aliases.device[cols["dst"]].astype(np.int32)
        columns = (cols["step"], cols["src"], cols["dst"], cols["block"], cols["piece"], cols["reduce"], cols["direction"], cols["phase"])
        table = TransferTable(*columns, ptr, idx, bundles=bundles, aliases=aliases, route_dst=None if aliases is None else route_dst)
        return Schedule("program", "program", ((*range(self.n_devices),),), 1, table, None, self._computes(n))

    def _computes(self, n: int) -> ComputeTable:
        """The compute steps' columns, batch by batch; compute step j (coded ``-(j + 1)``) becomes step ``n + j``."""
        names: dict[str, int] = {}
        device, counts, idxs, scalars = [], [], [], []
        for devices, seconds, flops, nbytes, deps, name, join, eff, unit in self.batches:
            m = len(devices)
            device.append(np.asarray(devices, np.int64))
            scalars.append((m, np.nan if seconds is None else seconds, flops, nbytes, eff, join, unit, names.setdefault(name, len(names))))
            if isinstance(deps, np.ndarray):  # (m, k): k each
                counts.append(np.full(m, deps.shape[1], np.int64))
                idxs.append(deps.reshape(-1))
            elif isinstance(deps, Ragged):
                counts.append(deps.counts)
                idxs.append(deps.idx)
            else:
                counts.append(np.fromiter((len(d) for d in deps), np.int64, m))
                idxs.extend(np.asarray(d, np.int64).reshape(-1) for d in deps if len(d))
        sizes = np.array([s[0] for s in scalars], np.int64)

        def column(k: int, dtype: Any) -> np.ndarray:
            return np.repeat(np.array([s[k] for s in scalars], dtype), sizes)

        kind = index_dtype(n + self.n_computes, sum(len(i) for i in idxs))
        dep_ptr = np.zeros(self.n_computes + 1, kind)
        if counts:
            np.cumsum(np.concatenate(counts), out=dep_ptr[1:])
        dep_idx = np.concatenate(idxs, dtype=kind) if idxs else np.zeros(0, kind)  # (a fresh array)
        _renumber(dep_idx, n)
        return ComputeTable(
            np.concatenate(device) if device else np.zeros(0, np.int64),
            column(1, np.float64), column(2, np.float64), column(3, np.float64), column(4, np.float64),
            column(5, bool), column(6, np.int64), column(7, np.int64), tuple(names), dep_ptr, dep_idx,
        )  # fmt: skip


def blocks_taken(table: TransferTable) -> int:
    """The block numbers a plan's transfers and bundles use (one past the highest).

    Examples
    --------
    >>> from netsim.algorithms.schedule import build_schedule
    >>> blocks_taken(build_schedule("gather", [[0, 1, 2]], "ring").transfers)
    3
    """
    last = int(table.block.max()) if len(table) else -1
    if table.bundles:
        last = max(last, int(as_table(table.bundles).key_array[:, 0].max(initial=-1)))
    return last + 1


def _rows(deps: Waits, rows: np.ndarray) -> Waits:
    """The waits of ``rows`` of a batch, as they were given."""
    if isinstance(deps, np.ndarray):
        return deps[rows]
    if isinstance(deps, Ragged):
        return deps.rows(rows)
    return [deps[i] for i in rows.tolist()]


def _renumber(idx: np.ndarray, n: int) -> None:
    """Compute step j, coded ``-(j + 1)``, as step ``n + j``, in place.

    Examples
    --------
    >>> idx = np.array([3, -1, -2])
    >>> _renumber(idx, 10); idx.tolist()
    [3, 10, 11]
    """
    np.subtract(n - 1, idx, out=idx, where=idx < 0)


def _as_table(rows: list[Any]) -> TransferTable:
    """Transfers given one by one (ppermute's plan) as columns."""
    ptr = np.concatenate([[0], np.cumsum([len(t.deps) for t in rows], dtype=np.int64)]).astype(np.int64)
    return TransferTable(
        np.array([t.step for t in rows], np.int64),
        np.array([t.src for t in rows], np.int64),
        np.array([t.dst for t in rows], np.int64),
        np.array([t.key[0] for t in rows], np.int64),
        np.array([t.key[1] for t in rows], np.int64),
        np.array([t.reduce for t in rows], bool),
        np.array([t.direction for t in rows], np.int64),
        np.array([PHASES.index(t.phase) for t in rows], np.int8),
        ptr,
        np.array([d for t in rows for d in t.deps], np.int64),
    )


def _with_extra(dep_ptr: np.ndarray, dep_idx: np.ndarray, src: np.ndarray, waits: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each transfer's dependencies, then ``step[src]`` where ``waits[src]``: what its source waits for before the op starts.

    Examples
    --------
    >>> ptr, idx = _with_extra(np.array([0, 0, 1]), np.array([0]), np.array([1, 0]), np.array([0, 1]), np.array([0, -3]))
    >>> ptr.tolist(), idx.tolist()
    ([0, 1, 2], [-3, 0])
    """
    if not waits.any():
        return dep_ptr - dep_ptr[0], dep_idx
    add = waits[src]
    ptr = np.zeros(len(src) + 1, np.int64)
    np.cumsum(np.diff(dep_ptr) + add, out=ptr[1:])
    last = ptr[1:][add > 0] - 1  # each transfer's extra step ends its list
    own = np.ones(int(ptr[-1]), bool)
    own[last] = False
    idx = np.empty(int(ptr[-1]), np.int64)
    idx[own] = dep_idx
    idx[last] = step[src[add > 0]]
    return ptr, idx
