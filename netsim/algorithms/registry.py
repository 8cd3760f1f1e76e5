"""What an algorithm is, the algorithms by name, and which one a collective uses.

An algorithm says how it moves blocks within one group: an :class:`Algorithm`
by the group's size, an :class:`AxesAlgorithm` by the group's shape over mesh
axes. Each module of this package registers its algorithms in :data:`ALGORITHMS`
with :func:`register`; :func:`default_algorithm` and :func:`check_algorithm` say
which one a collective uses. :func:`netsim.algorithms.schedule.build_schedule`
turns one into a schedule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from netsim.algorithms.transfers import Key
from netsim.semantics.ops import COLLECTIVES

__all__ = [
    "ALGORITHMS",
    "DEFAULT_ALGORITHM",
    "DEFAULT_AXES_ALGORITHM",
    "PATTERNS",
    "Algorithm",
    "AxesAlgorithm",
    "AxesMoves",
    "Move",
    "MoveFn",
    "check_algorithm",
    "default_algorithm",
    "register",
]

PATTERNS = ("gather", "reduce_scatter", "all_reduce", "all_to_all")
DEFAULT_ALGORITHM = "bidirectional_ring"
DEFAULT_AXES_ALGORITHM = "multiaxis"
"""The default for a collective over mesh axes (groups from :meth:`netsim.Mesh.groups`)."""
_DEFAULTS = {c.pattern: c.algorithm for c in COLLECTIVES.values()}
"""Each pattern's default, from the op registry (:data:`netsim.semantics.ops.COLLECTIVES`)."""


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
        brought has arrived (see "One message per step" in :mod:`netsim.algorithms.schedule`).
    gather_array, reduce_scatter_array : callable, optional
        The same moves, in the same order, as an int array of shape ``[moves, 6]``
        (a faster way to plan very large groups; tests check it equals the generator).
    each_piece_once : tuple of str
        The patterns whose plan sends each of a member's pieces to each other member
        of its group in one transfer (``n (n - 1) pieces`` a group and phase): what a
        program's transfers are counted by before they are planned
        (:func:`netsim.programs.plans.planned_transfers`; tests check it against the plans).
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
    each_piece_once: tuple[str, ...] = ()

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
        ``f(shape, wraparound, pattern)``: bundle key -> part keys (a mapping, best a
        :class:`netsim.algorithms.bundles.BundleTable`) of the bundles that pattern's
        moves send, for algorithms that send bundles (see :mod:`netsim.algorithms.schedule`).
    patterns : tuple of str, optional
        Restricts the patterns it plays (default: gathers, reductions and,
        with moves for it, all_to_all).
    transfers : callable, optional
        ``f(shape)``: how many transfers one group of that shape makes (for
        memory estimates made before planning).
    each_piece_once : tuple of str
        The patterns whose plan sends each of a member's pieces to each other member
        of its group in one transfer (``n (n - 1) pieces`` a group and phase): what a
        program's transfers are counted by before they are planned
        (:func:`netsim.programs.plans.planned_transfers`; tests check it against the plans).
    """

    pieces: Callable[[int], int]
    gather: AxesMoves | None
    reduce_scatter: AxesMoves | None
    description: str = ""
    all_to_all: AxesMoves | None = None
    gather_array: Callable[[tuple[int, ...], tuple[bool, ...]], np.ndarray] | None = None
    bundles: Callable[[tuple[int, ...], tuple[bool, ...], str], Mapping[Key, Sequence[Key]]] | None = None
    patterns: tuple[str, ...] | None = None
    transfers: Callable[[tuple[int, ...]], int] | None = None
    each_piece_once: tuple[str, ...] = ()
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
