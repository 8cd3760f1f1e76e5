"""What a collective makes of an array sharded over mesh axes, as ``shard_map`` would: the shared checks.

A program's array (:class:`netsim.programs.model.Sharded`) has a global ``shape``,
per dimension the mesh axes it is split over (``sharding``) and the axes it is still a
partial sum over (``partial``). Each collective's module of this package says what the
collective makes of such an array (its ``*_sharded`` rule, over mesh axes) and of a
device's shape over explicit groups (its ``*_grouped`` rule); the op registry
(:mod:`netsim.semantics.ops`) names them. The rules read only those fields and
``local_shape``, and raise :class:`ShardingError` naming the argument at fault.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ShardingError"]


class ShardingError(ValueError):
    """A collective's argument that does not fit the array: the argument's name and the problem.

    Examples
    --------
    >>> str(ShardingError("axis", "3 is out of range for an array of 2 dimensions"))
    'axis: 3 is out of range for an array of 2 dimensions'
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field, self.problem = field, problem
        super().__init__(f"{field}: {problem}")


def _dim(field: str, value: int, rank: int) -> int:
    """A dimension argument normalised against the rank (-1 is the last)."""
    if not -rank <= value < rank:
        raise ShardingError(field, f"{value} is out of range for an array of {rank} dimensions")
    return value % rank


def _ends_with(axes: tuple[str, ...], tail: tuple[str, ...]) -> bool:
    return len(axes) >= len(tail) and axes[len(axes) - len(tail) :] == tail


def _axes_text(axes: tuple[str, ...]) -> str:
    return "x".join(axes) if axes else "no axis"


def _not_partial(x: Any, axes: tuple[str, ...]) -> Any:
    missing = [a for a in axes if a not in x.partial]
    raise ShardingError("axes", f"the input is not a partial sum over {missing[0]!r}: there is nothing to sum (it would multiply the array by the axis size)")


def _tiled(name: str, tiled: bool, why: str = "") -> None:
    if not tiled:
        raise ShardingError("tiled", f"programs run {name} tiled (tiled: true){why}")
