"""Collective algorithms as plain schedules: which chunk moves where, at which step.

A :class:`Schedule` is a value. It lists :class:`Transfer` s, each moving the chunk
``key = (block, piece)`` from one device to another, either *placing* it (gathers)
or *adding* it into the receiver's copy (reductions). Each transfer names the
earlier transfers it waits for, so the plan can be printed, checked and tested
without running a simulation; the engine only plays it.

Blocks and pieces
    A collective over a group of n devices deals in n *blocks*: in an all_gather
    block j is member j's input, in a reduce-scatter block k is the part of every
    input that member k ends up owning. An algorithm may cut each block into
    *pieces* so different pieces can travel different ways round the ring.

Patterns
    ``gather``: member j starts with block j; at the end everyone holds every block.
    ``reduce_scatter``: everyone starts with a contribution to every block; at the
    end member k holds the sum of block k. ``all_reduce``: reduce-scatter, then
    all-gather of the reduced blocks.

Algorithms live in the modules of this package and register themselves in
:data:`ALGORITHMS`: :mod:`netsim.schedules.rings` has ``ring``,
``bidirectional_ring`` (the default) and ``bidirectional_halfway``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

__all__ = ["ALGORITHMS", "DEFAULT_ALGORITHM", "PATTERNS", "Algorithm", "Move", "Schedule", "Transfer", "TransferTable", "build_schedule", "register"]

PATTERNS = ("gather", "reduce_scatter", "all_reduce")
DEFAULT_ALGORITHM = "bidirectional_ring"

Key = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Transfer:
    """One chunk sent from one device to another.

    Attributes
    ----------
    step : int
        Algorithm step the transfer belongs to (for reports; timing comes from
        ``deps``, not from steps).
    src, dst : int
        Device indices.
    key : tuple of int
        ``(block, piece)`` of the chunk.
    reduce : bool
        True if the receiver adds the chunk into its own copy, False if it stores it.
    direction : int
        +1 or -1: the way round the ring; routing breaks ties with it.
    deps : tuple of int
        Indices of the transfers that must have arrived at ``src`` first.
    phase : str
        ``"gather"`` or ``"reduce_scatter"``.
    """

    step: int
    src: int
    dst: int
    key: Key
    reduce: bool
    direction: int
    deps: tuple[int, ...]
    phase: str


class TransferTable(Sequence):
    """The transfers of a schedule, kept as columns: a read-only sequence of :class:`Transfer`.

    Large schedules have millions of transfers; building a :class:`Transfer`
    object for each costs more than simulating them. The table keeps one NumPy
    array per field and builds the objects the first time someone reads them;
    the engine reads the arrays through :meth:`columns`.

    Examples
    --------
    >>> table = build_schedule("gather", [[0, 1, 2]], "ring").transfers
    >>> len(table), table[3]
    (6, Transfer(step=1, src=0, dst=1, key=(2, 0), reduce=False, direction=1, deps=(2,), phase='gather'))
    """

    def __init__(
        self,
        step: np.ndarray,
        src: np.ndarray,
        dst: np.ndarray,
        block: np.ndarray,
        piece: np.ndarray,
        reduce: np.ndarray,
        direction: np.ndarray,
        phase: np.ndarray,
        dep_ptr: np.ndarray,
        dep_idx: np.ndarray,
    ) -> None:
        self.step, self.src, self.dst, self.block, self.piece = step, src, dst, block, piece
        self.reduce, self.direction, self.phase = reduce, direction, phase
        self.dep_ptr, self.dep_idx = dep_ptr, dep_idx
        self._items: tuple[Transfer, ...] | None = None
        self._columns: dict[str, Any] | None = None

    def columns(self) -> dict[str, Any]:
        """The arrays :func:`netsim.engine.play` reads instead of the objects (see there)."""
        if self._columns is None:
            pieces = int(self.piece.max()) + 1 if len(self.piece) else 1
            code, key_index = np.unique(self.block * pieces + self.piece, return_inverse=True)
            keys = [(b, p) for b, p in zip(*divmod(code, pieces), strict=True)]
            self._columns = {
                "src": self.src,
                "dst": self.dst,
                "direction": self.direction,
                "reduce": self.reduce,
                "key_index": key_index.reshape(-1),
                "keys": [(int(b), int(p)) for b, p in keys],
                "dep_ptr": self.dep_ptr,
                "dep_idx": self.dep_idx,
            }
        return self._columns

    def _all(self) -> tuple[Transfer, ...]:
        if self._items is None:
            ptr, idx = self.dep_ptr.tolist(), self.dep_idx.tolist()
            deps = [tuple(idx[a:b]) for a, b in itertools.pairwise(ptr)]
            keys = list(zip(self.block.tolist(), self.piece.tolist(), strict=True))
            phases = [PHASES[p] for p in self.phase.tolist()]
            columns = (self.step.tolist(), self.src.tolist(), self.dst.tolist(), keys, self.reduce.tolist(), self.direction.tolist(), deps, phases)
            self._items = tuple(map(Transfer, *columns))
        return self._items

    def __len__(self) -> int:
        return len(self.step)

    def __getitem__(self, index):
        return self._all()[index]

    def __iter__(self) -> Iterator[Transfer]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (TransferTable, tuple, list)):
            return len(self) == len(other) and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return f"TransferTable({len(self)} transfers)"


@dataclass(frozen=True)
class Schedule:
    """The full plan of one collective on a set of groups.

    Attributes
    ----------
    algorithm : str
    pattern : str
        One of :data:`PATTERNS`.
    groups : tuple of tuple of int
        Device indices of each group, in ring order.
    pieces : int
        Number of pieces each block is cut into.
    transfers : sequence of Transfer
        A :class:`TransferTable` when built by :func:`build_schedule`; any
        sequence of :class:`Transfer` works.
    """

    algorithm: str
    pattern: str
    groups: tuple[tuple[int, ...], ...]
    pieces: int
    transfers: Sequence[Transfer]

    @property
    def n_steps(self) -> int:
        """Number of algorithm steps (0 when nothing moves)."""
        if isinstance(self.transfers, TransferTable):
            return 1 + int(self.transfers.step.max()) if len(self.transfers) else 0
        return 1 + max((t.step for t in self.transfers), default=-1)

    def table(self) -> str:
        """The schedule as a text table, one transfer per line.

        Examples
        --------
        >>> print(build_schedule("gather", [[0, 1, 2]], "ring").table())
        step  src  dst  block  piece  op     after
           0    0    1      0      0  place  -
           0    1    2      1      0  place  -
           0    2    0      2      0  place  -
           1    0    1      2      0  place  #2
           1    1    2      0      0  place  #0
           1    2    0      1      0  place  #1
        """
        lines = ["step  src  dst  block  piece  op     after"]
        for t in self.transfers:
            after = ",".join(f"#{d}" for d in t.deps) or "-"
            op = "add" if t.reduce else "place"
            lines.append(f"{t.step:4d} {t.src:4d} {t.dst:4d} {t.key[0]:6d} {t.key[1]:6d}  {op:<5}  {after}")
        return "\n".join(lines)


# A move within one group: (step, from position, to position, block, piece, direction).
Move = tuple[int, int, int, int, int, int]


@dataclass(frozen=True)
class Algorithm:
    """How an algorithm cuts blocks and moves them within one group.

    Attributes
    ----------
    pieces : int
        Pieces each block is cut into.
    gather, reduce_scatter : callable
        ``f(n)`` yields the :data:`Move` s of that pattern for a group of ``n``
        (positions 0..n-1 in group order); ``all_reduce`` is reduce_scatter then gather.
    description : str
        One line for reports.
    gather_array, reduce_scatter_array : callable, optional
        The same moves, in the same order, as an int array of shape ``[moves, 6]``
        (a faster way to plan very large groups; tests check it equals the generator).
    """

    pieces: int
    gather: Callable[[int], Iterator[Move]]
    reduce_scatter: Callable[[int], Iterator[Move]]
    description: str = ""
    gather_array: Callable[[int], np.ndarray] | None = None
    reduce_scatter_array: Callable[[int], np.ndarray] | None = None


ALGORITHMS: dict[str, Algorithm] = {}
"""Algorithm name -> :class:`Algorithm`. Modules of this package add theirs with :func:`register`."""


def register(name: str, algorithm: Algorithm) -> Algorithm:
    """Make an algorithm selectable by name."""
    if name in ALGORITHMS:
        raise ValueError(f"algorithm {name!r} is already registered")
    ALGORITHMS[name] = algorithm
    return algorithm


def build_schedule(pattern: str, groups: Sequence[Sequence[int]], algorithm: str | None = None) -> Schedule:
    """Plan a collective over the given groups with the named algorithm.

    Parameters
    ----------
    pattern : {"gather", "reduce_scatter", "all_reduce"}
        What the collective does with blocks (see the module docstring).
    groups : sequence of sequence of int
        Device indices of each group, in ring order; all groups run at once.
    algorithm : str, optional
        A name from :data:`ALGORITHMS`; default ``"bidirectional_ring"``.

    Returns
    -------
    Schedule

    Raises
    ------
    ValueError
        If the pattern or the algorithm is unknown.

    Examples
    --------
    >>> s = build_schedule("all_reduce", [[0, 1, 2, 3]], "ring")
    >>> s.n_steps, len(s.transfers)
    (6, 24)
    >>> build_schedule("gather", [[0, 1, 2, 3, 4, 5, 6, 7]], "bidirectional_halfway").n_steps
    4
    """
    algorithm = DEFAULT_ALGORITHM if algorithm is None else algorithm
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern {pattern!r}; expected one of {', '.join(PATTERNS)}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}")
    plan = ALGORITHMS[algorithm]
    groups = tuple(tuple(int(d) for d in g) for g in groups)
    phases: list[str] = []
    if pattern in ("reduce_scatter", "all_reduce"):
        phases.append("reduce_scatter")
    if pattern in ("gather", "all_reduce"):
        phases.append("gather")

    # Rows in the order phase, group, move; then a stable sort by step (as the plan reads).
    parts: list[np.ndarray] = []
    offset = 0
    for phase in phases:
        last = -1
        for members, moves in _by_group(algorithm, phase, groups):
            rows = np.empty((len(moves) * len(members), 8), np.int64)
            rows[:, 0] = np.tile(moves[:, 0] + offset, len(members))
            rows[:, 1] = members[:, moves[:, 1]].reshape(-1)
            rows[:, 2] = members[:, moves[:, 2]].reshape(-1)
            rows[:, 3:6] = np.tile(moves[:, 3:6], (len(members), 1))
            rows[:, 6] = phase == "reduce_scatter"
            rows[:, 7] = PHASES.index(phase)
            parts.append(rows)
            if len(moves):
                last = max(last, int(moves[:, 0].max()))
        offset += last + 1
    rows = np.concatenate(parts) if parts else np.empty((0, 8), np.int64)
    rows = rows[_stable_order(rows[:, 0])]
    step, src, dst, block, piece, direction, reduce, phase_code = (np.ascontiguousarray(column) for column in rows.T)
    dep_ptr, dep_idx = _with_deps(step, src, dst, block, piece)
    table = TransferTable(step, src, dst, block, piece, reduce.astype(bool), direction, phase_code.astype(np.int8), dep_ptr, dep_idx)
    return Schedule(algorithm, pattern, groups, plan.pieces, table)


PHASES = ("reduce_scatter", "gather")
"""Names of the phases a transfer may belong to (``TransferTable.phase`` indexes this)."""


@lru_cache(maxsize=64)
def _moves(algorithm: str, phase: str, n: int) -> np.ndarray:
    """The moves of one group of n, ``[moves, 6]``, computed once per algorithm, phase and size."""
    plan = ALGORITHMS[algorithm]
    vectorised = plan.gather_array if phase == "gather" else plan.reduce_scatter_array
    if vectorised is not None:
        moves = np.asarray(vectorised(n), np.int64).reshape(-1, 6)
    else:
        generate = plan.gather if phase == "gather" else plan.reduce_scatter
        moves = np.array(list(generate(n)), np.int64).reshape(-1, 6)
    moves.flags.writeable = False
    return moves


def _by_group(algorithm: str, phase: str, groups: tuple[tuple[int, ...], ...]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(members [groups, n], moves)`` for runs of consecutive groups of one size, in group order."""
    start = 0
    while start < len(groups):
        stop = start
        while stop < len(groups) and len(groups[stop]) == len(groups[start]):
            stop += 1
        members = np.array(groups[start:stop], np.int64).reshape(stop - start, len(groups[start]))
        yield members, _moves(algorithm, phase, len(groups[start]))
        start = stop


def _stable_order(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` for non-negative ints, several times faster.

    Each value is packed with its position into one unique int64, so the fast
    (unstable, vectorised) sort gives the stable order.
    """
    n = len(values)
    if n == 0 or int(values.max()) >= 2**62 // max(n, 1):
        return np.argsort(values, kind="stable")
    return np.sort(values * n + np.arange(n)) % n


def _with_deps(step: np.ndarray, src: np.ndarray, dst: np.ndarray, block: np.ndarray, piece: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Attach to each transfer the earlier arrivals of its chunk at its source.

    A chunk may only leave a device once every transfer of an earlier step that
    brings (or adds into) that chunk there has arrived. The transfers are sorted
    by step; transfer i waits for ``dep_idx[dep_ptr[i]:dep_ptr[i+1]]``, in
    increasing order.

    How: every transfer is an arrival (at dst) and a departure (from src) of its
    chunk. Sorted together by (device, chunk, step, departures before arrivals),
    a departure waits for the arrivals of its group sorted before it.
    """
    n = len(step)
    if n == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.int64)
    pieces = int(piece.max()) + 1
    chunks = (int(block.max()) + 1) * pieces
    steps = int(step.max()) + 1
    chunk = block * pieces + piece
    arrival = ((dst * chunks + chunk) * steps + step) * 2 + 1
    departure = ((src * chunks + chunk) * steps + step) * 2
    order = _stable_order(np.concatenate([arrival, departure]))  # positions < n are arrivals
    is_arrival = order < n
    group = np.concatenate([arrival, departure])[order] // (2 * steps)  # (device, chunk)
    arrivals_before = np.cumsum(is_arrival) - is_arrival
    first_of_group = np.flatnonzero(np.concatenate([[True], group[1:] != group[:-1]]))
    group_start = np.repeat(first_of_group, np.diff(np.append(first_of_group, len(group))))
    leaving = ~is_arrival
    transfer = order[leaving] - n
    lo = np.empty(n, np.int64)
    hi = np.empty(n, np.int64)
    lo[transfer] = arrivals_before[group_start[leaving]]
    hi[transfer] = arrivals_before[leaving]
    counts = hi - lo
    dep_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=dep_ptr[1:])
    positions = np.repeat(lo - dep_ptr[:-1], counts) + np.arange(dep_ptr[-1])
    return dep_ptr, order[is_arrival][positions].astype(np.int64)


from netsim.schedules import rings as _rings  # noqa: E402,F401  (registers the ring algorithms)
