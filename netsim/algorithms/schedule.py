"""Collective algorithms as plain schedules: which chunk moves where, at which step.

A :class:`Schedule` is a value. It lists :class:`~netsim.algorithms.transfers.Transfer` s, each moving the chunk
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
:data:`~netsim.algorithms.registry.ALGORITHMS`: :mod:`netsim.algorithms.rings` has ``ring``,
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
    ring or a line (no wraparound). An :class:`~netsim.algorithms.registry.AxesAlgorithm` plans with that
    shape; :func:`build_schedule` takes it as ``group_shape`` and ``wraparound``.
    Without them a group is one axis that wraps. Other algorithms ignore them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from numbers import Integral

from netsim.algorithms.bundles import BundleTable, as_table
from netsim.algorithms.compute import Compute
from netsim.algorithms.planning import _planned_with_arrays, _planned_with_rows
from netsim.algorithms.registry import ALGORITHMS, Algorithm, AxesAlgorithm, AxesMoves, Move, MoveFn, check_algorithm
from netsim.algorithms.transfers import Key, Transfer, TransferTable
from netsim.semantics.patterns import PATTERNS

__all__ = ["Schedule", "build_schedule"]


@dataclass(frozen=True)
class Schedule:
    """The full plan of one collective on a set of groups.

    Attributes
    ----------
    algorithm : str
    pattern : str
        One of :data:`~netsim.algorithms.registry.PATTERNS`.
    groups : tuple of tuple of int
        Device indices of each group, in ring order.
    pieces : int
        Number of pieces each block is cut into.
    transfers : sequence of Transfer
        A :class:`~netsim.algorithms.transfers.TransferTable` when built by :func:`build_schedule` (a tuple
        for algorithms that send one message per step); any sequence of
        :class:`Transfer` works.
    group_shape : tuple of int or None
        The groups' shape over mesh axes, when the algorithm used one.
    computes : tuple of Compute
        Compute steps beside the transfers (:class:`~netsim.algorithms.compute.Compute`),
        numbered after them: with n transfers, compute step j is ``n + j`` in
        anyone's ``deps``. Collectives have none; programs do.
    group_wraparound : tuple of bool or None
        Per axis of ``group_shape``, whether the algorithm planned it as a ring (True) or a line.
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
    computes: tuple[Compute, ...] = ()
    group_wraparound: tuple[bool, ...] | None = None

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

        Compute steps follow the transfers, numbered after them:

        >>> import dataclasses
        >>> from netsim.algorithms.compute import Compute
        >>> two = build_schedule("gather", [[0, 1]], "ring")
        >>> print(dataclasses.replace(two, computes=(Compute(device=1, flops=2e9, deps=(0,), name="matmul"),)).table())
        step  src  dst  block  piece  op     after
           0    0    1      0      0  place  -
           0    1    0      1      0  place  -
        #2: device 1 computes matmul (2e+09 flops, 0 B) after #0
        """
        lines = ["step  src  dst  block  piece  op     after"]
        for t in self.transfers:
            after = ",".join(f"#{d}" for d in t.deps) or "-"
            op = "add" if t.reduce else "place"
            lines.append(f"{t.step:4d} {t.src:4d} {t.dst:4d} {t.key[0]:6d} {t.key[1]:6d}  {op:<5}  {after}")
        n = len(self.transfers)
        for j, c in enumerate(self.computes):
            work = f"{c.seconds:g} s" if c.seconds is not None else f"{c.flops:g} flops, {c.bytes:g} B"
            after = ",".join(f"#{d}" for d in c.deps) or "-"
            lines.append(f"#{n + j}: device {c.device} computes {c.name or ''} ({work}) after {after}".replace("  (", " ("))
        return "\n".join(lines)


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
        A name from :data:`~netsim.algorithms.registry.ALGORITHMS`; default ``"bidirectional_ring"``
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
        shape, wraps = _without_unit_axes(shape, wraps)
        pieces = plan.pieces(len(shape))
        bundles = None if plan.bundles is None else as_table(plan.bundles(shape, wraps, pattern))
        gather, reduce_scatter, all_to_all = (
            None if moves is None else partial(_shaped, moves, shape, wraps)
            for moves in (plan.gather_array or plan.gather, plan.reduce_scatter, plan.all_to_all)
        )
        plan = Algorithm(pieces, gather, reduce_scatter, all_to_all=all_to_all)
    moves = {"reduce_scatter": plan.reduce_scatter, "gather": plan.gather, "all_to_all": plan.all_to_all}
    phases: list[tuple[str, MoveFn]] = [(phase, moves[phase]) for phase in PATTERNS[pattern].phases if moves[phase] is not None]

    used_shape = shape if isinstance(ALGORITHMS[algorithm], AxesAlgorithm) else None
    if plan.one_message_per_step:
        transfers: Sequence[Transfer] = _planned_with_rows(phases, groups)
    else:
        shaped = isinstance(ALGORITHMS[algorithm], AxesAlgorithm)
        transfers = _planned_with_arrays(algorithm, phases, groups, shaped, bundles)
    return Schedule(algorithm, pattern, groups, plan.pieces, transfers, used_shape, group_wraparound=wraps if used_shape is not None else None)


def _shaped(moves: AxesMoves, shape: tuple[int, ...], wraps: tuple[bool, ...], _n: int) -> Iterator[Move]:
    return moves(shape, wraps)


def _without_unit_axes(shape: tuple[int, ...], wraps: tuple[bool, ...]) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """The group's axes of more than one member: nothing moves along an axis of 1, and the
    members' row-major order is the same without it.

    Examples
    --------
    >>> _without_unit_axes((2, 1, 4), (True, False, False))
    ((2, 4), (True, False))
    >>> _without_unit_axes((1, 1), (True, True))
    ((1,), (True,))
    """
    kept = [a for a, d in enumerate(shape) if d > 1] or [0]
    return tuple(shape[a] for a in kept), tuple(wraps[a] for a in kept)


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
