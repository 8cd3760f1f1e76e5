"""Columns: a run's facts as NumPy arrays, with lists that keep their arrays.

A big run has millions of transfers and link crossings. The engine reads a
schedule as columns (:func:`transfer_columns`, :func:`compute_columns`) and leaves
what it recorded as columns too (:class:`HopList`, :class:`ArrayList`), so the
checks and statistics downstream never read millions of Python objects one by one.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import numpy as np

from netsim.columnar import AT_ONCE, index_dtype, signed_ints, stable_order
from netsim.engine.playback import ComputeLike, Hop, LinkStats, TransferLike
from netsim.network.topology import LinkId

__all__ = [
    "ArrayList",
    "ColumnList",
    "HopList",
    "RouteList",
    "as_array",
    "compute_columns",
    "hop_arrays",
    "hops_and_links",
    "step_dependencies",
    "transfer_columns",
    "waiter_keys",
]


class ArrayList(list):
    """A list that also keeps its values as columns (NumPy arrays), until it is changed.

    A :class:`Playback`'s sizes and routes are these: the engine leaves its
    arrays here (for routes, each transfer's number among the distinct routes),
    so the checks (:mod:`netsim.checks`) do not read millions of Python
    objects again. Any change through the list's methods (as tests corrupt a
    playback) drops the columns; it is an ordinary list in every other way.

    Examples
    --------
    >>> times = ArrayList([0.5, 1.5])
    >>> as_array(times, float).tolist(), times.columns() is not None
    ([0.5, 1.5], True)
    >>> times[0] = 2.5
    >>> times.columns() is None, as_array(times, float).tolist()
    (True, [2.5, 1.5])
    """

    __slots__ = ("_columns",)

    def __init__(self, values: Any = (), columns: Any = None) -> None:
        super().__init__(values)
        self._columns = columns

    def columns(self) -> Any:
        """What was kept (an array, or for routes their numbering), or None since a change."""
        return self._columns

    def keep(self, columns: Any) -> None:
        """Keep ``columns`` (read-only) as the list's values until it changes."""
        self._columns = columns


def _dropping_columns(name: str) -> Any:
    method = getattr(list, name)

    def changing(self: ArrayList, *args: Any, **kwargs: Any) -> Any:
        self._columns = None
        return method(self, *args, **kwargs)

    changing.__name__ = name
    changing.__doc__ = method.__doc__
    return changing


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"):
    setattr(ArrayList, _name, _dropping_columns(_name))


class ColumnList(Sequence):
    """A read-mostly sequence kept as a NumPy array, whose Python list is made only when someone reads an item.

    The compiled player leaves a run's per-transfer times and sizes as these: the
    checks and statistics read the array (:func:`as_array`, ``np.asarray``) and never
    pay for millions of Python floats. Reading an item, iterating or comparing makes
    the list (once); changing an item changes the list and drops the array, as an
    :class:`ArrayList` does.

    Examples
    --------
    >>> times = ColumnList(np.array([0.5, 1.5]))
    >>> as_array(times, float).tolist(), times[1], times == [0.5, 1.5]
    ([0.5, 1.5], 1.5, True)
    >>> times[0] = 2.5
    >>> as_array(times, float).tolist(), list(times)
    ([2.5, 1.5], [2.5, 1.5])
    """

    __slots__ = ("_array", "_list")

    def __init__(self, array: np.ndarray) -> None:
        array.flags.writeable = False
        self._array: np.ndarray | None = array
        self._list: list | None = None

    def columns(self) -> np.ndarray | None:
        """The array, or None once an item was changed."""
        return self._array

    def _values(self) -> list:
        if self._list is None:
            self._list = self._array.tolist()
        return self._list

    def __len__(self) -> int:
        return len(self._array) if self._array is not None else len(self._list)

    def __getitem__(self, index):
        return self._values()[index]

    def __setitem__(self, index, value) -> None:
        self._values()[index] = value
        self._array = None

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ColumnList, list, tuple)):
            return self._values() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self._array if self._array is not None else np.array(self._list)
        return array if dtype is None else array.astype(dtype, copy=False)

    def __repr__(self) -> str:
        return f"ColumnList({self._values()!r})"


class RouteList(ColumnList):
    """Each transfer's route (a tuple of link ids), kept as its number among the distinct routes and those
    routes: the list (one tuple object per distinct route, shared) is made only when someone reads an item.

    ``columns()`` gives ``(inverse, distinct)`` (None once an item was changed): the checks and
    statistics read those, not a tuple a transfer.

    Examples
    --------
    >>> routes = RouteList(np.array([1, 0, 1], np.int32), [("a",), ("b", "c")])
    >>> len(routes), routes[0], routes[0] is routes[2], routes.columns()[1]
    (3, ('b', 'c'), True, (('a',), ('b', 'c')))
    >>> routes[1] = ("d",)
    >>> routes.columns() is None, list(routes)
    (True, [('b', 'c'), ('d',), ('b', 'c')])
    """

    __slots__ = ("_distinct",)

    def __init__(self, inverse: np.ndarray, distinct: Sequence[tuple]) -> None:
        super().__init__(inverse)
        self._distinct = tuple(distinct)

    def _values(self) -> list:
        if self._list is None:
            self._list = shared_objects(self._distinct)[self._array].tolist()
        return self._list

    def columns(self) -> tuple[np.ndarray, tuple] | None:  # type: ignore[override]
        """Each transfer's number among the distinct routes and those routes, or None once an item was changed."""
        return None if self._array is None else (self._array, self._distinct)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return shared_objects(self._values())

    def __repr__(self) -> str:
        return f"RouteList({self._values()!r})"


def shared_objects(values: Sequence[Any]) -> np.ndarray:
    """The values as a NumPy object array (each value kept whole, tuples included).

    Examples
    --------
    >>> shared_objects([(1, 2), (3,)]).tolist()
    [(1, 2), (3,)]
    """
    out = np.empty(len(values), object)
    for k, value in enumerate(values):
        out[k] = value
    return out


def as_array(values: Sequence[Any], dtype: Any) -> np.ndarray:
    """``np.asarray(values, dtype)``, read-only; an :class:`ArrayList` is converted once, then reused.

    Examples
    --------
    >>> as_array([1, 2], np.int64)
    array([1, 2])
    """
    kept = values.columns() if isinstance(values, (ArrayList, ColumnList)) else None
    if isinstance(kept, np.ndarray) and kept.dtype == dtype and len(kept) == len(values):
        return kept
    array = np.array(values, dtype)
    array.flags.writeable = False
    if isinstance(values, ArrayList):
        values.keep(array)
    return array


class HopList(Sequence):
    """Every link crossing of a run, in the order they started (a read-only sequence of :class:`Hop`).

    The engine records hops as columns; the :class:`Hop` objects are only built
    when someone reads them. :attr:`columns` gives the columns themselves.
    """

    def __init__(self, transfer: np.ndarray, link: np.ndarray, start: np.ndarray, end: np.ndarray, link_ids: Sequence[LinkId]) -> None:
        self._columns = {"transfer": transfer, "link": link, "start": start, "end": end}
        self._link_ids = link_ids
        self._hops: list[Hop] | None = None
        self._orders: dict[str, np.ndarray] = {}

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """``transfer``, ``link`` (index into :attr:`link_ids`), ``start`` and ``end`` as arrays, in hop order."""
        return self._columns

    @property
    def link_ids(self) -> Sequence[LinkId]:
        """The link each value of ``columns["link"]`` stands for."""
        return self._link_ids

    def order(self, column: str) -> np.ndarray:
        """Hop positions sorted stably by ``column`` (``"transfer"`` or ``"link"``), computed once.

        The invariant checks and the critical path both group the hops by
        transfer and by link; they share these orders.
        """
        order = self._orders.get(column)
        if order is None:
            order = stable_order(self._columns[column])
            order = order.astype(index_dtype(len(order)), copy=False)  # kept with the playback: half the memory
            order.flags.writeable = False
            self._orders[column] = order
        return order

    def _materialise(self) -> list[Hop]:
        if self._hops is None:
            c, ids = self._columns, self._link_ids
            links = [ids[k] for k in c["link"].tolist()]
            self._hops = list(map(Hop, c["transfer"].tolist(), links, c["start"].tolist(), c["end"].tolist()))
        return self._hops

    def __len__(self) -> int:
        return len(self._columns["transfer"])

    def __getitem__(self, index):
        return self._materialise()[index]

    def __iter__(self) -> Iterator[Hop]:
        return iter(self._materialise())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (HopList, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HopList({len(self)} hops)"


def transfer_columns(transfers: Sequence[TransferLike]) -> dict[str, Any]:
    """The transfers as arrays: ``transfers.columns()`` when offered, else the same read from the objects.

    ``src``, ``dst``, ``direction``, ``reduce``, ``key_index`` (into the list ``keys``)
    and the dependencies as ``dep_ptr`` / ``dep_idx`` (see :func:`play`). The engine,
    the invariants, the critical path and the statistics all read transfers this way.

    Examples
    --------
    >>> from types import SimpleNamespace as T
    >>> c = transfer_columns([T(src=0, dst=1, key="x", reduce=False, direction=1, deps=()), T(src=1, dst=2, key="x", reduce=False, direction=1, deps=(0,))])
    >>> c["dst"].tolist(), c["keys"], c["dep_ptr"].tolist(), c["dep_idx"].tolist()
    ([1, 2], ['x'], [0, 0, 1], [0])
    """
    columns = getattr(transfers, "columns", None)
    if callable(columns):
        return columns()
    n = len(transfers)
    index: dict[Hashable, int] = {}
    counts = np.fromiter((len(t.deps) for t in transfers), np.int64, n)
    dep_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=dep_ptr[1:])
    return {
        "src": np.fromiter((t.src for t in transfers), np.int64, n),
        "dst": np.fromiter((t.dst for t in transfers), np.int64, n),
        "direction": np.fromiter((t.direction for t in transfers), np.int64, n),
        "reduce": np.fromiter((bool(t.reduce) for t in transfers), bool, n),
        "key_index": np.fromiter((index.setdefault(t.key, len(index)) for t in transfers), np.int64, n),
        "keys": list(index),
        "dep_ptr": dep_ptr,
        "dep_idx": np.fromiter((d for t in transfers for d in t.deps), np.int64, int(dep_ptr[-1])),
    }


def compute_columns(computes: Sequence[ComputeLike]) -> dict[str, Any]:
    """The compute steps as arrays: ``device``, ``seconds`` (NaN where the step gives
    ``flops`` and ``bytes`` instead), ``flops``, ``bytes``, ``join`` (a step of no work,
    :class:`~netsim.algorithms.compute.Compute`), ``unit`` (0: the device's compute unit,
    1: its DMA engine), ``efficiency`` (the fraction of peak FLOP/s it reaches) and the dependencies as
    ``dep_ptr`` / ``dep_idx`` (numbered as in :func:`netsim.engine.play`).

    Examples
    --------
    >>> from types import SimpleNamespace as C
    >>> c = compute_columns([C(device=1, seconds=2e-6, flops=0, bytes=0, deps=(0,))])
    >>> c["device"].tolist(), c["seconds"].tolist(), c["dep_idx"].tolist()
    ([1], [2e-06], [0])
    """
    held = getattr(computes, "columns", None)
    if isinstance(held, dict):  # steps held as columns already (a lowered program's ComputeTable): as they are
        return held
    n = len(computes)
    counts = np.fromiter((len(c.deps) for c in computes), np.int64, n)
    dep_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=dep_ptr[1:])
    seconds = (float("nan") if c.seconds is None else float(c.seconds) for c in computes)
    return {
        "device": np.fromiter((c.device for c in computes), np.int64, n),
        "seconds": np.fromiter(seconds, np.float64, n),
        "flops": np.fromiter((float(c.flops) for c in computes), np.float64, n),
        "bytes": np.fromiter((float(c.bytes) for c in computes), np.float64, n),
        "join": np.fromiter((bool(getattr(c, "join", False)) for c in computes), bool, n),
        "unit": np.fromiter((int(getattr(c, "unit", 0)) for c in computes), np.int64, n),
        "efficiency": np.fromiter((float(getattr(c, "efficiency", 1.0)) for c in computes), np.float64, n),
        "dep_ptr": dep_ptr,
        "dep_idx": np.concatenate([np.asarray(c.deps, np.int64).reshape(-1) for c in computes]) if n else np.zeros(0, np.int64),
    }


def hops_and_links(
    record: Sequence[array], nbytes: array, link_ids: Sequence[LinkId], max_queue: Sequence[int], at_once: int = AT_ONCE
) -> tuple[HopList, dict[LinkId, LinkStats]]:
    """Hops in start order and per-link statistics, from an engine's records.

    ``record`` is the transfer (int32), link number (int32), start and end
    (float64) of every hop, in the order they started; ``nbytes`` the size of each
    transfer (int64). Both engines finish their runs here, so their statistics are
    computed by the same additions in the same order.
    """
    transfer, link = (np.frombuffer(c, dtype=np.int32) for c in record[:2])  # (int32 as recorded: a big run has millions)
    start, end = (np.frombuffer(c, dtype=np.float64) for c in record[2:])
    n_links = len(link_ids)
    size = np.frombuffer(nbytes, np.int64)
    total_bytes = np.zeros(n_links)
    busy = np.zeros(n_links)
    for lo in range(0, len(link), at_once):  # ``at_once`` hops at a time (no temporary as long as the run's records)
        part = slice(lo, lo + at_once)
        total_bytes += np.bincount(link[part], weights=size[transfer[part]], minlength=n_links)  # (whole bytes: exact in any order)
        np.add.at(busy, link[part], end[part] - start[part])  # (added one by one in hop order, as bincount adds them)
    messages = np.bincount(link, minlength=n_links)
    links = {
        lk: LinkStats(int(b), int(m), float(s), int(q))
        for lk, b, m, s, q in zip(link_ids, total_bytes.tolist(), messages.tolist(), busy.tolist(), max_queue, strict=True)
    }
    return HopList(transfer, link, start, end, link_ids), links


def hop_arrays(hops: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Sequence[LinkId]]:
    """A playback's hops as arrays: transfer, link number, start, end, and the link each number stands for.

    The columns of a :class:`HopList` are returned as they are (no copy); a plain
    sequence of :class:`~netsim.engine.Hop` objects is numbered in the order its
    links first appear. The critical path, the statistics and the drawings read
    hops this way.

    Parameters
    ----------
    hops : HopList or sequence of Hop
        ``Playback.hops``.

    Returns
    -------
    transfer, link, start, end : numpy.ndarray
        One entry per hop, in hop order (int64, int64, float64, float64).
    link_ids : sequence of LinkId
        ``link_ids[link[k]]`` is the link hop ``k`` crossed.

    Examples
    --------
    >>> from netsim.engine import Hop
    >>> transfer, link, start, end, ids = hop_arrays([Hop(0, (0, 1, (0, 1)), 0.0, 1e-6), Hop(1, (1, 2, (0, 1)), 1e-6, 2e-6)])
    >>> transfer.tolist(), link.tolist(), ids
    ([0, 1], [0, 1], [(0, 1, (0, 1)), (1, 2, (0, 1))])
    """
    columns = getattr(hops, "columns", None)
    if isinstance(columns, dict) and hasattr(hops, "link_ids"):
        ids = hops.link_ids
        transfer, link, start, end = (np.asarray(columns[name]) for name in ("transfer", "link", "start", "end"))
        return transfer, link, start, end, ids
    numbers: dict[LinkId, int] = {}
    h = len(hops)
    transfer = np.fromiter((hop.transfer for hop in hops), np.int64, h)
    link = np.fromiter((numbers.setdefault(hop.link, len(numbers)) for hop in hops), np.int64, h)
    start = np.fromiter((hop.start for hop in hops), float, h)
    end = np.fromiter((hop.end for hop in hops), float, h)
    return transfer, link, start, end, list(numbers)


def step_dependencies(transfers: dict[str, Any], computes: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Every step's dependencies as ``dep_ptr``, ``dep_idx``, steps numbered transfers first, then compute steps.

    ``transfers`` and ``computes`` are columns (:func:`transfer_columns`, :func:`compute_columns`).

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> moves = transfer_columns([S(src=0, dst=1, key="x", reduce=False, direction=1, deps=(1,))])
    >>> ptr, idx = step_dependencies(moves, compute_columns([S(device=0, seconds=1.0, flops=0, bytes=0, deps=())]))
    >>> ptr.tolist(), idx.tolist()
    ([0, 1, 1], [1])
    """
    ptr, idx = np.asarray(transfers["dep_ptr"], np.int64), signed_ints(transfers["dep_idx"])
    if len(computes["dep_ptr"]) <= 1:
        return ptr, idx
    return np.concatenate([ptr, ptr[-1] + computes["dep_ptr"][1:]]), np.concatenate([idx, computes["dep_idx"]])


def waiter_keys(dep_ptr: np.ndarray, dep_idx: np.ndarray, joins: np.ndarray | None, n_transfers: int) -> np.ndarray | None:
    """The order in which a step's waiters are counted off: by these keys (None: by step number).

    Steps are numbered transfers first, then compute steps; ``dep_ptr`` / ``dep_idx``
    give every step's dependencies in that numbering, ``joins`` which compute steps are
    joins. A step's waiters are counted off in step order, except that a join is counted
    off just before its first waiter. When no other waiter of the join's dependencies is
    numbered between the join's first and last waiter (as with the joins of a lowered
    program: one op's transfers, numbered together), the join's waiters then become ready
    where they would if they waited for its dependencies themselves.

    Examples
    --------
    Transfers 0, 1, 2 and one compute step (step 3), a join of transfer 0 that transfer 1
    waits for: the join is counted off as if it were step 1, just before it.

    >>> waiter_keys(np.array([0, 0, 1, 1, 2]), np.array([3, 0]), np.array([True]), 3).tolist()
    [1, 3, 5, 2]
    """
    if joins is None or not joins.any():
        return None
    steps = len(dep_ptr) - 1
    waiter = np.repeat(np.arange(steps, dtype=np.int64), np.diff(dep_ptr))
    keys = 2 * np.arange(steps, dtype=np.int64) + 1
    first = np.full(steps, steps, np.int64)
    np.minimum.at(first, dep_idx, waiter)
    join = np.zeros(steps, bool)
    join[n_transfers:] = joins
    waited = join & (first < steps)
    keys[waited] = 2 * first[waited]
    return keys
