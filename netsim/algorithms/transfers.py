"""The rows of a schedule: :class:`Transfer`, and :class:`TransferTable` that keeps many as columns.

A transfer moves the chunk ``key = (block, piece)`` from one device to another,
placing it or adding it into the receiver's copy, once the transfers it waits for
have arrived (see :mod:`netsim.algorithms.schedule`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsim.columnar import factorize

__all__ = ["PHASES", "Key", "Transfer", "TransferTable"]

Key = tuple[int, int]
PHASES = ("reduce_scatter", "gather", "all_to_all", "permute")
"""Names of the phases a transfer may belong to (``TransferTable.phase`` indexes this)."""


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
    >>> from netsim.algorithms.schedule import build_schedule
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
        aliases: Any = None,
        route_dst: np.ndarray | None = None,
    ) -> None:
        self.step, self.src, self.dst, self.block, self.piece = step, src, dst, block, piece
        # Played on representatives (netsim.programs.symmetry): the device and link each stands for, and where each
        # transfer's route goes (``dst`` is the representative it is delivered to; the route's links are aliased).
        self.aliases, self.route_dst = aliases, route_dst
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
            blocks, key_pieces = (column.tolist() for column in divmod(code, pieces))
            self._columns = {
                "src": self.src,
                "dst": self.dst,
                "direction": self.direction,
                "reduce": self.reduce,
                "key_index": key_index.reshape(-1),
                "keys": list(zip(blocks, key_pieces, strict=True)),
                "dep_ptr": self.dep_ptr,
                "dep_idx": self.dep_idx,
                "bundles": self.bundles,
                "aliases": self.aliases,
                "route_dst": self.route_dst,
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
