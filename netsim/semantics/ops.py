"""The op registry: every collective and compute op netsim runs, declared once.

As in JAX, where a collective is one primitive with every rule about it registered
beside its definition (``jax/_src/lax/parallel.py``), each op here is one entry that
says everything the rest of netsim needs to know about it by name:

* a **collective** (:class:`Collective`): its layout class in this package and the
  rule that checks its arguments against an input (:meth:`Collective.check`), the
  pattern its algorithms play, its ``jax.lax`` arguments with a scenario's defaults,
  the fields a program file gives it, the HLO opcodes played as it, nccl-tests' bus
  bandwidth factor, the bytes a member must receive whatever the algorithm, the
  algorithm it takes by default and the key of its closed forms;
* a **compute op** (:class:`ComputeOp`): the fields a program file gives it.

What used to be a list of names or an ``if op == ...`` chain elsewhere is derived
from :data:`COLLECTIVES` and :data:`COMPUTE_OPS`: the program model's op lists, the
``collective:`` section of a scenario and the ``ops:`` of a program file, the HLO
mapping, the bus bandwidth, the default algorithms, the closed forms' names and the
JSON schemas of the command line. This module knows no timing.

Adding a collective
-------------------
One entry in :data:`COLLECTIVES` (below), its layout in a module of this package,
its algorithms in :mod:`netsim.algorithms` and its closed forms in
:mod:`netsim.analysis.closed_forms`.

Examples
--------
>>> import numpy as np
>>> gather = COLLECTIVES["all_gather"]
>>> gather.pattern, gather.hlo_opcodes, gather.busbw(8)
('gather', ('all-gather',), 0.875)
>>> gather.check(np.zeros((4, 3)), [[0, 1], [2, 3]], axis=0, tiled=True).output_shape
(6,)
>>> collective("all_sum").name, hlo_collectives()["reduce-scatter"]
('psum', 'psum_scatter')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from netsim.semantics.all_to_all import AllToAllLayout, all_to_all_grouped, all_to_all_sharded
from netsim.semantics.gather import AllGatherLayout, all_gather_grouped, all_gather_sharded
from netsim.semantics.permute import PermuteLayout, ppermute_grouped, ppermute_sharded
from netsim.semantics.reduce import (
    AllReduceLayout,
    ReduceScatterLayout,
    psum_grouped,
    psum_scatter_grouped,
    psum_scatter_sharded,
    psum_sharded,
)

__all__ = ["COLLECTIVES", "COMPUTE_OPS", "OPS", "REQUIRED", "Collective", "ComputeOp", "collective", "hlo_collectives", "lookup"]


class _Required:
    """The default of an argument a scenario must give (``ppermute``'s ``perm``)."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()
"""Marks an argument that has no default."""

GroupsLike = Sequence[Sequence[int]] | None


@dataclass(frozen=True)
class Collective:
    """A collective: everything netsim knows about it by name.

    Attributes
    ----------
    name : str
        The ``jax.lax`` name, as scenarios, program files and results spell it.
    summary : str
        One line: what it does.
    layout : type
        Its layout class (:mod:`netsim.semantics`): ``pattern`` names what its
        algorithms play, ``reference`` gives JAX's answer.
    rule : callable
        ``rule(x, groups, **arguments)``: the layout of the stacked input ``x`` over
        ``groups`` (None: one group of every device); :meth:`check` calls it.
    sharded : callable
        ``sharded(x, mesh, axes, **arguments)``: what it makes of a program's array
        ``x`` split over mesh axes, run over ``axes`` (:mod:`netsim.semantics.sharding`).
    grouped_shape : callable
        ``grouped_shape(shape, n, **arguments)``: a device's shape after it, over explicit
        groups of n.
    arguments : mapping of str to object
        Its ``jax.lax`` keyword arguments besides the groups, with a scenario's
        defaults (:data:`REQUIRED`: none).
    program : mapping of str to object
        The fields an op of a program file takes besides ``name``, ``op``, ``in``,
        ``out`` and ``after``, with their defaults.
    hlo_opcodes : tuple of str
        The HLO instructions played as this collective.
    hlo_dimension : tuple of str
        The arguments an HLO instruction's ``dimensions={d}`` sets.
    busbw : callable
        nccl-tests' bus bandwidth factor for a group of n > 1 (doc/PERFORMANCE.md).
    received_text : str
        In words, the bytes each member must receive, whatever the algorithm.
    received : callable
        ``received(n, input_bytes)``: those bytes for a group of n > 1.
    algorithm : str
        The algorithm it takes when none is named (:data:`netsim.algorithms.ALGORITHMS`).
    closed_form : str
        The name its closed forms are listed under (:data:`netsim.analysis.closed_forms.COST_MODELS`).
    aliases : tuple of str
        Other names for it: MLX's, its pattern's.
    reduces : bool
        Whether it sums the members' values (booleans are summed as int32, as JAX does).
    gathers : bool
        Whether a member's output holds every member's input (nccl-tests counts the
        output's bytes as its size).
    grouped : bool
        Whether it takes ``axis_index_groups`` (or mesh axes).
    untiled_rows : bool
        Whether, untiled, the input's split dimension must be the group size (a
        scenario's ``bytes_per_device`` then becomes [group size, rest]).
    """

    name: str
    summary: str
    layout: type
    rule: Callable[..., Any]
    sharded: Callable[..., Any]
    grouped_shape: Callable[..., tuple[int, ...]]
    arguments: Mapping[str, Any]
    program: Mapping[str, Any]
    hlo_opcodes: tuple[str, ...]
    hlo_dimension: tuple[str, ...]
    busbw: Callable[[int], float]
    received_text: str
    received: Callable[[int, float], float]
    algorithm: str
    closed_form: str
    aliases: tuple[str, ...] = ()
    reduces: bool = False
    gathers: bool = False
    grouped: bool = True
    untiled_rows: bool = False
    kind: str = field(default="collective", init=False)

    @property
    def pattern(self) -> str:
        """What its algorithms play (the layout's ``pattern``).

        Examples
        --------
        >>> COLLECTIVES["psum"].pattern
        'all_reduce'
        """
        return self.layout.pattern

    @property
    def scenario_fields(self) -> dict[str, Any]:
        """The fields of a scenario's ``collective:`` section besides ``op``, with their defaults.

        Examples
        --------
        >>> COLLECTIVES["psum"].scenario_fields
        {'axis_index_groups': None, 'axes': None}
        """
        grouped = {"axis_index_groups": None, "axes": None} if self.grouped else {}
        return {**self.arguments, **grouped}

    def check(self, x: np.ndarray, groups: GroupsLike = None, **arguments: Any) -> Any:
        """Check the arguments against the stacked input ``x``; return the layout.

        Arguments not given take a scenario's defaults.

        Raises
        ------
        ValueError
            For an argument it does not take, one it needs and lacks, or what the
            layout's own check refuses.

        Examples
        --------
        >>> COLLECTIVES["ppermute"].check(np.zeros((4, 2)), [[0, 1], [2, 3]], perm=[(0, 1), (1, 0)]).groups
        ((0, 1), (1, 0), (2, 3), (3, 2))
        >>> COLLECTIVES["psum"].check(np.zeros((4, 2)), axis=0)
        Traceback (most recent call last):
        ...
        ValueError: psum takes no argument 'axis'; it takes none
        """
        unknown = sorted(set(arguments) - set(self.arguments))
        if unknown:
            raise ValueError(f"{self.name} takes no argument {unknown[0]!r}; it takes {', '.join(self.arguments) or 'none'}")
        values = {**self.arguments, **arguments}
        missing = [k for k, v in values.items() if v is REQUIRED]
        if missing:
            raise ValueError(f"{self.name} needs {missing[0]}")
        return self.rule(x, groups, **values)


@dataclass(frozen=True)
class ComputeOp:
    """An op that runs on each device's compute unit.

    Attributes
    ----------
    name : str
    summary : str
    program : mapping of str to object
        The fields an op of a program file takes besides ``name``, ``op``, ``in``,
        ``out`` and ``after``, with their defaults.
    """

    name: str
    summary: str
    program: Mapping[str, Any]
    kind: str = field(default="compute", init=False)


def _permute(x: np.ndarray, groups: GroupsLike, perm: Sequence[Sequence[int]]) -> PermuteLayout:
    """``perm`` pairs positions within every group (None: device indices)."""
    pairs = list(perm) if groups is None else [(g[s], g[t]) for g in groups for s, t in perm]
    return PermuteLayout.check(x, pairs)


def _per_peer(n: int) -> float:
    return (n - 1) / n


def _twice_per_peer(n: int) -> float:
    return 2 * (n - 1) / n


def _one(n: int) -> float:
    return 1.0


_OVER_AXES = {"axes": (), "groups": ()}

COLLECTIVES: Mapping[str, Collective] = MappingProxyType(
    {
        c.name: c
        for c in (
            Collective(
                "all_gather",
                "every member gets every member's input, stacked (or concatenated, tiled) along axis",
                AllGatherLayout,
                lambda x, groups, axis, tiled: AllGatherLayout.check(x, axis, tiled, groups),
                all_gather_sharded,
                all_gather_grouped,
                {"axis": 0, "tiled": False},
                {**_OVER_AXES, "axis": 0, "tiled": True, "algorithm": None},
                ("all-gather",),
                ("axis",),
                _per_peer,
                "(n−1)·input",
                lambda n, b: (n - 1) * b,
                "bidirectional_ring",
                "all_gather",
                gathers=True,
            ),
            Collective(
                "psum_scatter",
                "the members' inputs summed, member k keeping block k of the sum along scatter_dimension",
                ReduceScatterLayout,
                lambda x, groups, scatter_dimension, tiled: ReduceScatterLayout.check(x, scatter_dimension, tiled, groups),
                psum_scatter_sharded,
                psum_scatter_grouped,
                {"scatter_dimension": 0, "tiled": False},
                {**_OVER_AXES, "scatter_dimension": 0, "tiled": True, "algorithm": None},
                ("reduce-scatter",),
                ("scatter_dimension",),
                _per_peer,
                "(n−1)/n·input",
                lambda n, b: (n - 1) / n * b,
                "bidirectional_ring",
                "psum_scatter",
                aliases=("reduce_scatter",),
                reduces=True,
                untiled_rows=True,
            ),
            Collective(
                "psum",
                "every member gets the sum of the members' inputs",
                AllReduceLayout,
                lambda x, groups: AllReduceLayout.check(x, groups),
                psum_sharded,
                psum_grouped,
                {},
                {**_OVER_AXES, "algorithm": None},
                ("all-reduce",),
                (),
                _twice_per_peer,
                "input",
                lambda n, b: float(b),
                "bidirectional_ring",
                "psum",
                aliases=("all_reduce", "all_sum"),
                reduces=True,
            ),
            Collective(
                "all_to_all",
                "member i sends chunk j of its input along split_axis to member j, which concatenates them along concat_axis",
                AllToAllLayout,
                lambda x, groups, split_axis, concat_axis, tiled: AllToAllLayout.check(x, split_axis, concat_axis, tiled, groups),
                all_to_all_sharded,
                all_to_all_grouped,
                {"split_axis": 0, "concat_axis": 0, "tiled": False},
                {**_OVER_AXES, "split_axis": 0, "concat_axis": 0, "tiled": True, "algorithm": None},
                ("all-to-all", "ragged-all-to-all"),
                ("split_axis", "concat_axis"),
                _per_peer,
                "(n−1)/n·input",
                lambda n, b: (n - 1) / n * b,
                "direct",
                "all_to_all",
                untiled_rows=True,
            ),
            Collective(
                "ppermute",
                "each (source, destination) pair of perm sends the source's input; a device no pair sends to gets zeros",
                PermuteLayout,
                _permute,
                ppermute_sharded,
                ppermute_grouped,
                {"perm": REQUIRED},
                {"axes": (), "perm": ()},
                ("collective-permute",),
                (),
                _one,
                "input",
                lambda n, b: 0.0,
                "direct",
                "ppermute",
                grouped=False,
            ),
        )
    }
)
"""Every collective, by name."""

COMPUTE_OPS: Mapping[str, ComputeOp] = MappingProxyType(
    {
        c.name: c
        for c in (
            ComputeOp("matmul", "each device multiplies its shards, [..., M, K] @ [K, N]", {"overlap": None, "algorithm": None, "efficiency": None}),
            ComputeOp("einsum", "each device contracts its shards as subscripts say", {"subscripts": None, "efficiency": None}),
            ComputeOp(
                "compute",
                "any other work: flops and bytes timed by the roofline, or seconds; on the compute unit or (unit: dma) the DMA engine",
                {"flops": 0.0, "bytes": 0.0, "seconds": None, "efficiency": None, "unit": "compute"},
            ),
        )
    }
)
"""Every compute op, by name."""

OPS: Mapping[str, Collective | ComputeOp] = MappingProxyType({**COLLECTIVES, **COMPUTE_OPS})
"""Every op a program runs, collectives first."""

_BY_ALIAS = {alias: c for c in COLLECTIVES.values() for alias in (c.name, *c.aliases)}


def lookup(name: str) -> Collective | None:
    """The collective of a name or an alias, or None.

    Examples
    --------
    >>> lookup("all_sum").name, lookup("program")
    ('psum', None)
    """
    return _BY_ALIAS.get(name)


def collective(name: str) -> Collective:
    """The collective of a name or an alias (MLX's ``all_sum``, a pattern's ``all_reduce``).

    Raises
    ------
    ValueError
        Naming the collectives there are.

    Examples
    --------
    >>> collective("reduce_scatter").name
    'psum_scatter'
    >>> collective("broadcast")
    Traceback (most recent call last):
    ...
    ValueError: unknown collective 'broadcast'; expected one of all_gather, psum_scatter, psum, all_to_all, ppermute
    """
    if name not in _BY_ALIAS:
        raise ValueError(f"unknown collective {name!r}; expected one of {', '.join(COLLECTIVES)}")
    return _BY_ALIAS[name]


def hlo_collectives() -> dict[str, str]:
    """Each HLO collective opcode and the collective netsim plays it as.

    Examples
    --------
    >>> hlo_collectives()["ragged-all-to-all"]
    'all_to_all'
    """
    return {opcode: c.name for c in COLLECTIVES.values() for opcode in c.hlo_opcodes}
