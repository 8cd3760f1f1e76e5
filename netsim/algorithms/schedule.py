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
    all-gather of the reduced blocks. ``all_to_all``: member i starts with the
    blocks ``i*n + j`` (from i, for j) for every j and must end with every block
    ``j*n + i`` (from j, for i).

One message per step
    Most algorithms let a chunk leave as soon as it has arrived. Algorithms that
    follow the textbook's step structure (recursive doubling and halving) instead
    send, at each step, one message made of several blocks, once the previous
    step's message has arrived. netsim sends such a message as one transfer per
    block, all leaving together, and makes each wait for every arrival of the
    source's previous step. Back to back on the same route, m transfers of s bytes
    arrive exactly when one message of m*s bytes would (h*alpha + m*s/B with
    cut-through forwarding), so the times match the closed forms.

Messages of several chunks (bundles)
    An algorithm may send a chunk made of other chunks as one message: a
    *bundle*, named by a key of its own, ``(block, piece)`` with ``block`` at or
    above the group size. The schedule's ``bundles`` maps each bundle key to its
    parts' keys (parts may be bundles). The member that first sends a bundle
    makes it from the parts it holds, so that transfer waits for their arrivals
    there; the members it reaches forward it whole. See ``multiaxis_bundled``.

Algorithms live in the modules of this package and register themselves in
:data:`ALGORITHMS`: :mod:`netsim.algorithms.rings` has ``ring``,
``bidirectional_ring`` (the default) and ``bidirectional_halfway``;
:mod:`netsim.algorithms.direct` has ``direct`` (every pair at once, the default for
all_to_all); :mod:`netsim.algorithms.recursive_doubling`,
:mod:`netsim.algorithms.recursive_halving` and :mod:`netsim.algorithms.rabenseifner`
have the algorithms of those names; :mod:`netsim.algorithms.torus` has ``multiaxis``
and ``dimension_ordered`` (which also runs all_to_all, axis by axis);
:mod:`netsim.algorithms.bundled` has ``multiaxis_bundled`` (multiaxis sending
bundles, one message per ring step).

Groups with a shape
    A group laid over several mesh axes (see :mod:`netsim.network.device_mesh`) has a shape,
    e.g. (4, 4): its members are row-major over the axes, and each axis is a
    ring or a line (no wraparound). An :class:`AxesAlgorithm` plans with that
    shape; :func:`build_schedule` takes it as ``group_shape`` and ``wraparound``.
    Without them a group is one axis that wraps. Other algorithms ignore them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from numbers import Integral
from typing import Any

import numpy as np

from netsim.algorithms.bundles import BundleTable, as_table, made_of_arrays
from netsim.columnar import factorize, in_sorted, stable_order

__all__ = [
    "ALGORITHMS",
    "DEFAULT_ALGORITHM",
    "DEFAULT_AXES_ALGORITHM",
    "PATTERNS",
    "Algorithm",
    "AxesAlgorithm",
    "Move",
    "Schedule",
    "Transfer",
    "TransferTable",
    "build_schedule",
    "check_algorithm",
    "default_algorithm",
    "register",
]

PATTERNS = ("gather", "reduce_scatter", "all_reduce", "all_to_all")
DEFAULT_ALGORITHM = "bidirectional_ring"
DEFAULT_AXES_ALGORITHM = "multiaxis"
"""The default for a collective over mesh axes (groups from :meth:`netsim.Mesh.groups`)."""
_DEFAULTS = {"all_to_all": "direct", "permute": "direct"}

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
        ``"gather"``, ``"reduce_scatter"``, ``"all_to_all"`` or ``"permute"``.
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
        bundles: Mapping[Key, Sequence[Key]] | None = None,
    ) -> None:
        self.step, self.src, self.dst, self.block, self.piece = step, src, dst, block, piece
        self.reduce, self.direction, self.phase = reduce, direction, phase
        self.dep_ptr, self.dep_idx = dep_ptr, dep_idx
        self.bundles: Mapping[Key, Sequence[Key]] = bundles if bundles is not None and len(bundles) else {}
        self._items: tuple[Transfer, ...] | None = None
        self._columns: dict[str, Any] | None = None

    def columns(self) -> dict[str, Any]:
        """The arrays :func:`netsim.engine.play` reads instead of the objects (see there)."""
        if self._columns is None:
            pieces = int(self.piece.max()) + 1 if len(self.piece) else 1
            code, key_index = factorize(self.block * pieces + self.piece)
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
                "bundles": self.bundles,
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
        A :class:`TransferTable` when built by :func:`build_schedule` (a tuple
        for algorithms that send one message per step); any sequence of
        :class:`Transfer` works.
    group_shape : tuple of int or None
        The groups' shape over mesh axes, when the algorithm used one.
    """

    @property
    def bundles(self) -> Mapping[Key, Sequence[Key]]:
        """Bundle key -> its parts' keys, for algorithms that send bundles (see the module docstring)."""
        return getattr(self.transfers, "bundles", None) or {}

    algorithm: str
    pattern: str
    groups: tuple[tuple[int, ...], ...]
    pieces: int
    transfers: Sequence[Transfer]
    group_shape: tuple[int, ...] | None = None

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


MoveFn = Callable[[int], Iterator[Move]]


@dataclass(frozen=True)
class Algorithm:
    """How an algorithm cuts blocks and moves them within one group.

    Attributes
    ----------
    pieces : int
        Pieces each block is cut into.
    gather, reduce_scatter : callable or None
        ``f(n)`` yields the :data:`Move` s of that pattern for a group of ``n``
        (positions 0..n-1 in group order); ``all_reduce`` is reduce_scatter then
        gather. None if the algorithm does not do that pattern.
    description : str
        One line for reports.
    all_to_all : callable or None
        Moves of the all_to_all pattern (block ``i*n + j`` goes from i to j).
    patterns : tuple of str, optional
        Restricts the patterns the algorithm offers (e.g. only ``all_reduce``);
        by default every pattern its move generators make possible.
    power_of_two : bool
        The algorithm needs a group size that is a power of two.
    one_message_per_step : bool
        A member sends a step's blocks only once everything its previous step
        brought has arrived (see "One message per step" above).
    gather_array, reduce_scatter_array : callable, optional
        The same moves, in the same order, as an int array of shape ``[moves, 6]``
        (a faster way to plan very large groups; tests check it equals the generator).
    """

    pieces: int
    gather: MoveFn | None
    reduce_scatter: MoveFn | None
    description: str = ""
    all_to_all: MoveFn | None = None
    patterns: tuple[str, ...] | None = None
    power_of_two: bool = False
    one_message_per_step: bool = False
    gather_array: Callable[[int], np.ndarray] | None = None
    reduce_scatter_array: Callable[[int], np.ndarray] | None = None

    def runs(self, pattern: str) -> bool:
        """Whether the algorithm can play ``pattern``.

        Examples
        --------
        >>> ALGORITHMS["ring"].runs("all_to_all"), ALGORITHMS["direct"].runs("all_to_all")
        (False, True)
        """
        if self.patterns is not None:
            return pattern in self.patterns
        needs = {
            "gather": (self.gather,),
            "reduce_scatter": (self.reduce_scatter,),
            "all_reduce": (self.reduce_scatter, self.gather),
            "all_to_all": (self.all_to_all,),
        }[pattern]
        return all(moves is not None for moves in needs)


AxesMoves = Callable[[tuple[int, ...], tuple[bool, ...]], Iterator[Move]]


@dataclass(frozen=True)
class AxesAlgorithm:
    """An algorithm that plans with the group's shape over mesh axes.

    Attributes
    ----------
    pieces : callable
        ``f(k)``: pieces each block is cut into, for a group over k axes.
    gather, reduce_scatter : callable
        ``f(shape, wraparound)`` yields the :data:`Move` s of that pattern for a
        group of that shape (positions row-major over the axes); ``wraparound``
        says, per axis, whether it is a ring (True) or a line (False).
        ``all_reduce`` is reduce_scatter then gather.
    description : str
        One line for reports.
    all_to_all : callable or None
        ``f(shape, wraparound)``: moves of the all_to_all pattern (block ``i*n + j``
        goes from i to j, possibly through other members), or None if the
        algorithm does not run it.
    gather_array : callable, optional
        ``f(shape, wraparound)``: the gather's moves as an int array ``[moves, 6]``
        (planned without a Python tuple per move; used instead of ``gather``).
    bundles : callable, optional
        ``f(shape, wraparound)``: bundle key -> part keys (a mapping, best a
        :class:`netsim.algorithms.bundles.BundleTable`), for algorithms whose moves send
        bundles (see the module docstring).
    patterns : tuple of str, optional
        Restricts the patterns it plays (default: gathers, reductions and,
        with moves for it, all_to_all).
    transfers : callable, optional
        ``f(shape)``: how many transfers one group of that shape makes (for
        memory estimates made before planning).
    """

    pieces: Callable[[int], int]
    gather: AxesMoves | None
    reduce_scatter: AxesMoves | None
    description: str = ""
    all_to_all: AxesMoves | None = None
    gather_array: Callable[[tuple[int, ...], tuple[bool, ...]], np.ndarray] | None = None
    bundles: Callable[[tuple[int, ...], tuple[bool, ...]], Mapping[Key, Sequence[Key]]] | None = None
    patterns: tuple[str, ...] | None = None
    transfers: Callable[[tuple[int, ...]], int] | None = None
    power_of_two = False
    one_message_per_step = False

    def runs(self, pattern: str) -> bool:
        """Whether the algorithm can play ``pattern``: gathers, reductions and, if it has moves for it, all_to_all.

        Examples
        --------
        >>> ALGORITHMS["multiaxis"].runs("all_reduce"), ALGORITHMS["multiaxis"].runs("all_to_all")
        (True, False)
        >>> ALGORITHMS["dimension_ordered"].runs("all_to_all")
        True
        """
        if self.patterns is not None:
            return pattern in self.patterns
        return pattern in ("gather", "reduce_scatter", "all_reduce") or (pattern == "all_to_all" and self.all_to_all is not None)


ALGORITHMS: dict[str, Algorithm | AxesAlgorithm] = {}
"""Algorithm name -> :class:`Algorithm` or :class:`AxesAlgorithm`. Modules of this package add theirs with :func:`register`."""


def register(name: str, algorithm: Algorithm | AxesAlgorithm) -> Algorithm | AxesAlgorithm:
    """Make an algorithm selectable by name."""
    if name in ALGORITHMS:
        raise ValueError(f"algorithm {name!r} is already registered")
    ALGORITHMS[name] = algorithm
    return algorithm


def default_algorithm(pattern: str, over_mesh_axes: bool = False) -> str:
    """The algorithm a pattern uses when none is named.

    Over mesh axes (groups from :meth:`netsim.Mesh.groups`) that is
    :data:`DEFAULT_AXES_ALGORITHM` wherever it can play the pattern.

    Examples
    --------
    >>> default_algorithm("gather"), default_algorithm("all_to_all"), default_algorithm("permute")
    ('bidirectional_ring', 'direct', 'direct')
    >>> default_algorithm("gather", over_mesh_axes=True), default_algorithm("all_to_all", over_mesh_axes=True)
    ('multiaxis', 'direct')
    """
    if over_mesh_axes and pattern in PATTERNS and ALGORITHMS[DEFAULT_AXES_ALGORITHM].runs(pattern):
        return DEFAULT_AXES_ALGORITHM
    return _DEFAULTS.get(pattern, DEFAULT_ALGORITHM)


def check_algorithm(pattern: str, group_size: int, algorithm: str | None = None) -> str:
    """The algorithm to use for a pattern on groups of ``group_size``, or a ValueError saying why not.

    Examples
    --------
    >>> check_algorithm("all_to_all", 8)
    'direct'
    >>> check_algorithm("gather", 6, "recursive_doubling")
    Traceback (most recent call last):
    ...
    ValueError: recursive_doubling needs a power-of-two group size, got 6
    """
    algorithm = default_algorithm(pattern) if algorithm is None else algorithm
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern {pattern!r}; expected one of {', '.join(PATTERNS)}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}")
    plan = ALGORITHMS[algorithm]
    if not plan.runs(pattern):
        able = [name for name, other in ALGORITHMS.items() if other.runs(pattern)]
        raise ValueError(f"algorithm {algorithm!r} does not run the {pattern} pattern; algorithms that do: {', '.join(able)}")
    if plan.power_of_two and (group_size < 1 or group_size & (group_size - 1)):
        raise ValueError(f"{algorithm} needs a power-of-two group size, got {group_size}")
    return algorithm


def build_schedule(
    pattern: str,
    groups: Sequence[Sequence[int]],
    algorithm: str | None = None,
    group_shape: Sequence[int] | None = None,
    wraparound: Sequence[bool] | None = None,
) -> Schedule:
    """Plan a collective over the given groups with the named algorithm.

    Parameters
    ----------
    pattern : {"gather", "reduce_scatter", "all_reduce", "all_to_all"}
        What the collective does with blocks (see the module docstring).
    groups : sequence of sequence of int
        Device indices of each group, in ring order; all groups run at once.
    algorithm : str, optional
        A name from :data:`ALGORITHMS`; default ``"bidirectional_ring"``
        (``"direct"`` for all_to_all).
    group_shape : sequence of int, optional
        The groups' shape over mesh axes (members row-major over them); its
        product is the group size. Default: one axis of the whole group.
    wraparound : sequence of bool, optional
        Per axis of ``group_shape``: a ring (True, the default) or a line.

    Returns
    -------
    Schedule

    Raises
    ------
    ValueError
        If the pattern or the algorithm is unknown, the algorithm does not run the
        pattern, it needs a power-of-two group size and the groups are not, or
        the shape does not fit the groups.

    Examples
    --------
    >>> s = build_schedule("all_reduce", [[0, 1, 2, 3]], "ring")
    >>> s.n_steps, len(s.transfers)
    (6, 24)
    >>> build_schedule("gather", [[0, 1, 2, 3, 4, 5, 6, 7]], "bidirectional_halfway").n_steps
    4
    >>> s = build_schedule("gather", [[0, 1, 2, 3]], "multiaxis", group_shape=(2, 2))
    >>> s.pieces, s.group_shape
    (4, (2, 2))
    """
    groups = tuple(tuple(int(d) for d in g) for g in groups)
    algorithm = check_algorithm(pattern, len(groups[0]) if groups else 1, algorithm)
    plan = ALGORITHMS[algorithm]
    shape, wraps = _check_shape(groups, group_shape, wraparound)
    bundles: BundleTable | None = None
    if isinstance(plan, AxesAlgorithm):
        pieces = plan.pieces(len(shape))
        bundles = None if plan.bundles is None else as_table(plan.bundles(shape, wraps))
        gather, reduce_scatter, all_to_all = (
            None if moves is None else partial(_shaped, moves, shape, wraps)
            for moves in (plan.gather_array or plan.gather, plan.reduce_scatter, plan.all_to_all)
        )
        plan = Algorithm(pieces, gather, reduce_scatter, all_to_all=all_to_all)
    phases: list[tuple[str, MoveFn]] = []
    if pattern in ("reduce_scatter", "all_reduce") and plan.reduce_scatter is not None:
        phases.append(("reduce_scatter", plan.reduce_scatter))
    if pattern in ("gather", "all_reduce") and plan.gather is not None:
        phases.append(("gather", plan.gather))
    if pattern == "all_to_all" and plan.all_to_all is not None:
        phases.append(("all_to_all", plan.all_to_all))

    used_shape = shape if isinstance(ALGORITHMS[algorithm], AxesAlgorithm) else None
    if plan.one_message_per_step:
        transfers: Sequence[Transfer] = _planned_with_rows(phases, groups)
    else:
        shaped = isinstance(ALGORITHMS[algorithm], AxesAlgorithm)
        transfers = _planned_with_arrays(algorithm, phases, groups, shaped, bundles)
    return Schedule(algorithm, pattern, groups, plan.pieces, transfers, used_shape)


def _planned_with_rows(phases: list[tuple[str, MoveFn]], groups: tuple[tuple[int, ...], ...]) -> tuple[Transfer, ...]:
    """Transfers one by one, for algorithms that send one message per step (they are small)."""
    rows: list[tuple[int, int, int, Key, bool, int, str]] = []
    offset = 0
    for phase, moves in phases:
        last = -1
        planned: dict[int, list[Move]] = {}
        for group in groups:
            if len(group) not in planned:
                planned[len(group)] = list(moves(len(group)))
            for step, i, j, block, piece, direction in planned[len(group)]:
                rows.append((offset + step, group[i], group[j], (block, piece), phase == "reduce_scatter", direction, phase))
                last = max(last, step)
        offset += last + 1
    rows.sort(key=lambda r: r[0])
    return _with_deps_per_step(rows)


def _planned_with_arrays(
    algorithm: str, phases: list[tuple[str, MoveFn]], groups: tuple[tuple[int, ...], ...], shaped: bool, bundles: BundleTable | None = None
) -> TransferTable:
    """Transfers as columns: the moves of one group, copied for every group with NumPy.

    Columns in the order phase, group, move; then a stable sort by step (as the plan reads).
    Keys are group positions, so every group shares ``bundles``.
    """
    names = ("step", "src", "dst", "block", "piece", "direction", "phase")
    parts: dict[str, list[np.ndarray]] = {name: [] for name in names}
    offset = 0
    for phase, generate in phases:
        last = -1
        for members, moves in _by_group(algorithm, phase, groups, None if not shaped else generate):
            copies = len(members)
            step = np.array(moves[:, 0], dtype=np.int32)
            step += offset
            parts["step"].append(_copied(step, copies))
            parts["src"].append(members[:, moves[:, 1]].reshape(-1))
            parts["dst"].append(members[:, moves[:, 2]].reshape(-1))
            for name, column in (("block", 3), ("piece", 4), ("direction", 5)):
                parts[name].append(_copied(np.ascontiguousarray(moves[:, column], dtype=np.int32), copies))
            parts["phase"].append(np.full(len(moves) * copies, PHASES.index(phase), np.int8))
            if len(moves):
                last = max(last, int(moves[:, 0].max()))
        offset += last + 1
    columns = {name: (parts[name][0] if len(parts[name]) == 1 else np.concatenate(parts[name])) if parts[name] else np.empty(0, np.int32) for name in names}
    parts.clear()
    order = _stable_order(columns["step"])
    for name in names:
        columns[name] = columns[name][order]
    del order
    step, src, dst, block, piece = (columns[name] for name in ("step", "src", "dst", "block", "piece"))
    dep_ptr, dep_idx = _with_deps(step, src, dst, block, piece)
    if bundles:
        dep_ptr, dep_idx = _with_parts(step, src, dst, block, piece, dep_ptr, dep_idx, bundles)
    phase_code = columns["phase"].astype(np.int8)
    reduce = phase_code == PHASES.index("reduce_scatter")
    return TransferTable(step, src, dst, block, piece, reduce, columns["direction"], phase_code, dep_ptr, dep_idx, bundles)


def _copied(column: np.ndarray, copies: int) -> np.ndarray:
    """The column once per group (as it is, for one group)."""
    return column if copies == 1 else np.tile(column, copies)


def _copied(column: np.ndarray, copies: int) -> np.ndarray:
    """The column once per group (as it is, for one group)."""
    return column if copies == 1 else np.tile(column, copies)


PHASES = ("reduce_scatter", "gather", "all_to_all", "permute")
"""Names of the phases a transfer may belong to (``TransferTable.phase`` indexes this)."""


@lru_cache(maxsize=64)
def _moves(algorithm: str, phase: str, n: int) -> np.ndarray:
    """The moves of one group of n, ``[moves, 6]``, computed once per algorithm, phase and size."""
    plan = ALGORITHMS[algorithm]
    vectorised = {"gather": plan.gather_array, "reduce_scatter": plan.reduce_scatter_array}.get(phase)
    if vectorised is not None:
        moves = np.asarray(vectorised(n)).reshape(-1, 6)  # (int32 for the rings: big groups have millions of moves)
    else:
        generate = {"gather": plan.gather, "reduce_scatter": plan.reduce_scatter, "all_to_all": plan.all_to_all}[phase]
        moves = np.array(list(generate(n)), np.int64).reshape(-1, 6)
    moves.flags.writeable = False
    return moves


def _by_group(algorithm: str, phase: str, groups: tuple[tuple[int, ...], ...], shaped_moves: MoveFn | None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(members [groups, n], moves)`` for runs of consecutive groups of one size, in group order.

    ``shaped_moves`` plans a group laid over mesh axes (its moves depend on the
    shape, so they are not cached by size).
    """
    start = 0
    while start < len(groups):
        stop = start
        while stop < len(groups) and len(groups[stop]) == len(groups[start]):
            stop += 1
        n = len(groups[start])
        members = np.array(groups[start:stop], np.int32).reshape(stop - start, n)
        if shaped_moves is None:
            yield members, _moves(algorithm, phase, n)
        else:
            moves = shaped_moves(n)
            yield members, moves if isinstance(moves, np.ndarray) else np.array(list(moves), np.int64).reshape(-1, 6)
        start = stop


def _shaped(moves: AxesMoves, shape: tuple[int, ...], wraps: tuple[bool, ...], _n: int) -> Iterator[Move]:
    return moves(shape, wraps)


def _check_shape(
    groups: tuple[tuple[int, ...], ...], group_shape: Sequence[int] | None, wraparound: Sequence[bool] | None
) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    n = len(groups[0]) if groups else 0
    shape = (n,) if group_shape is None else tuple(group_shape)
    if any(isinstance(d, bool) or not isinstance(d, Integral) or d < 1 for d in shape) or (groups and math.prod(shape) != n):
        raise ValueError(f"group_shape {shape!r} does not fit groups of {n}: give positive sizes whose product is {n}")
    wraps = (True,) * len(shape) if wraparound is None else tuple(wraparound)
    if len(wraps) != len(shape) or not all(isinstance(w, bool) for w in wraps):
        raise ValueError(f"wraparound must give one bool per axis of group_shape {shape!r}, got {wraparound!r}")
    return tuple(int(d) for d in shape), wraps


def _with_deps_per_step(rows: list[tuple[int, int, int, Key, bool, int, str]]) -> tuple[Transfer, ...]:
    """Attach to each transfer the earlier arrivals of its chunk at its source.

    A chunk may only leave a device once every transfer of an earlier step that
    brings (or adds into) that chunk there has arrived, and also for everything
    that arrived at its source in the source's latest earlier step with arrivals
    (the previous message). ``rows`` are sorted by step.
    """
    arrivals: dict[tuple[int, Key], list[int]] = {}
    latest: dict[int, tuple[int, list[int]]] = {}
    transfers: list[Transfer] = []
    start = 0
    while start < len(rows):
        stop = start
        while stop < len(rows) and rows[stop][0] == rows[start][0]:
            stop += 1
        for index in range(start, stop):
            step, src, dst, key, reduce, direction, phase = rows[index]
            deps = arrivals.get((src, key), [])
            if src in latest:
                deps = sorted(set(deps).union(latest[src][1]))
            transfers.append(Transfer(step, src, dst, key, reduce, direction, tuple(deps), phase))
        for index in range(start, stop):
            step, _, dst, key, *_ = rows[index]
            arrivals.setdefault((dst, key), []).append(index)
            if latest.get(dst, (None,))[0] != step:
                latest[dst] = (step, [])
            latest[dst][1].append(index)
        start = stop
    return tuple(transfers)


def _with_parts(
    step: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    block: np.ndarray,
    piece: np.ndarray,
    dep_ptr: np.ndarray,
    dep_idx: np.ndarray,
    bundles: BundleTable,
) -> tuple[np.ndarray, np.ndarray]:
    """Make each transfer that sends a bundle its source was never sent wait for the parts.

    Such a transfer makes the bundle: it waits for every arrival at its source, at
    an earlier step, of each part; a part that never arrives there but is a bundle
    itself stands for its own parts, and so on (a part that is neither was there
    from the start). Other transfers keep the dependencies they have.
    """
    n = len(step)
    pieces = 1 + max(int(piece.max()), int(bundles.key_array[:, 1].max(initial=0)), int(bundles.part_array[:, 1].max(initial=0)))
    codes = bundles.codes(pieces)
    code = block.astype(np.int64) * pieces + piece
    steps = int(step.max()) + 1
    n_codes = 1 + max(int(code.max()), int(codes[0].max(initial=0)), int(codes[2].max(initial=0)))
    makes = np.flatnonzero(np.isin(code, codes[0]) & (np.diff(dep_ptr) == 0))
    if not len(makes):
        return dep_ptr, dep_idx
    # Arrivals by (device, key, step), to find those of a part at a source before a step.
    arrival = (dst.astype(np.int64) * n_codes + code) * steps + step
    by_arrival = np.argsort(arrival, kind="stable")
    arrival = arrival[by_arrival]
    arrives = arrival // steps  # sorted: keep the first of each run
    arrives = arrives[np.concatenate([[True], arrives[1:] != arrives[:-1]])]

    which, part = made_of_arrays(codes, src[makes].astype(np.int64), code[makes], lambda device, part: in_sorted(device * n_codes + part, arrives))
    owner = makes[which]
    base = (src[owner].astype(np.int64) * n_codes + part) * steps
    lo = np.searchsorted(arrival, base)
    counts = np.searchsorted(arrival, base + step[owner]) - lo
    starts = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    new_owner = np.repeat(owner, counts)
    new_dep = by_arrival[np.repeat(lo - starts, counts) + np.arange(int(counts.sum()))]
    # Merge: the old dependencies, plus the new ones (the makers had none), sorted per transfer.
    old_owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(dep_ptr))
    pairs = np.concatenate([old_owner * n + dep_idx, new_owner * n + new_dep])  # (waiter, awaited) as one int
    pairs.sort()
    pairs = pairs[np.concatenate([[True], pairs[1:] != pairs[:-1]])]
    all_owner, all_dep = np.divmod(pairs, n)
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(all_owner, minlength=n), out=ptr[1:])
    return ptr, all_dep


def _stable_order(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` for non-negative ints, several times faster (see :func:`netsim.columnar.stable_order`)."""
    return stable_order(values)


def _with_deps(step: np.ndarray, src: np.ndarray, dst: np.ndarray, block: np.ndarray, piece: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Attach to each transfer the earlier arrivals of its chunk at its source.

    A chunk may only leave a device once every transfer of an earlier step that
    brings (or adds into) that chunk there has arrived. The transfers are sorted
    by step; transfer i waits for ``dep_idx[dep_ptr[i]:dep_ptr[i+1]]``, in
    increasing order.

    How: every transfer is an arrival (at dst) and a departure (from src) of its
    chunk. Sorted together by (device, chunk, step, departures before arrivals),
    a departure waits for the arrivals of its group sorted before it. When no
    device receives a chunk twice (gathers), a table of each (device, chunk)'s
    one arrival gives the same without sorting (:func:`_with_one_arrival_each`).
    """
    n = len(step)
    if n == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.int64)
    pieces = int(piece.max()) + 1
    chunks = (int(block.max()) + 1) * pieces
    steps = int(step.max()) + 1
    single = _with_one_arrival_each(step, src, dst, block, piece, chunks)
    if single is not None:
        return single
    codes = np.empty(2 * n, np.int64)  # arrivals, then departures: ((device, chunk), step, departure first)
    for half, device, kind in ((codes[:n], dst, 1), (codes[n:], src, 0)):
        half[:] = device
        half *= chunks
        half += block.astype(np.int64) * pieces + piece
        half *= steps
        half += step
        half *= 2
        half += kind
    order = _stable_order(codes)  # positions < n are arrivals
    codes = codes[order]
    codes //= 2 * steps  # the (device, chunk) group of each position
    is_arrival = order < n
    arrivals_before = np.cumsum(is_arrival)
    arrivals_before -= is_arrival
    new_group = np.empty(2 * n, bool)
    new_group[0] = True
    np.not_equal(codes[1:], codes[:-1], out=new_group[1:])
    del codes
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(2 * n), 0))
    del new_group
    leaving = ~is_arrival
    transfer = order[leaving] - n
    lo = np.empty(n, np.int64)
    hi = np.empty(n, np.int64)
    lo[transfer] = arrivals_before[group_start[leaving]]
    hi[transfer] = arrivals_before[leaving]
    del group_start, arrivals_before, transfer
    counts = hi - lo
    dep_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=dep_ptr[1:])
    positions = np.repeat(lo - dep_ptr[:-1], counts)
    positions += np.arange(dep_ptr[-1])
    return dep_ptr, order[is_arrival][positions]


def _with_one_arrival_each(
    step: np.ndarray, src: np.ndarray, dst: np.ndarray, block: np.ndarray, piece: np.ndarray, chunks: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_with_deps` when every (device, chunk) has at most one arrival, else None.

    A departure then waits for the one arrival of its chunk at its source, if
    that arrival belongs to an earlier step. Reads a table over (device, chunk),
    so only when that table is not much bigger than the schedule.
    """
    n = len(step)
    pieces = chunks // (int(block.max()) + 1)
    size = (max(int(src.max()), int(dst.max())) + 1) * chunks
    if size > 4 * n + 1024:
        return None
    chunk = block.astype(np.int64)
    chunk *= pieces
    chunk += piece
    code = dst.astype(np.int64)
    code *= chunks
    code += chunk
    seen = np.zeros(size, bool)
    seen[code] = True
    if int(np.count_nonzero(seen)) != n:  # some (device, chunk) receives twice
        return None
    del seen
    arrival = np.full(size, -1, np.int64)
    arrival[code] = np.arange(n, dtype=np.int64)
    np.multiply(src, chunks, out=code, dtype=np.int64)
    code += chunk
    del chunk
    waited = arrival[code]
    del code, arrival
    has = waited >= 0
    has &= step[waited] < step
    dep_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(has, out=dep_ptr[1:])
    return dep_ptr, waited[has]
