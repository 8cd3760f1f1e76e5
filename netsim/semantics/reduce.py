"""Reductions: JAX's layouts and NumPy references of psum_scatter (a reduce-scatter) and psum (an all-reduce).

A group's sum is added in group order, row after row, as :func:`numpy.sum` over
the stacked inputs would; ``_part_sum`` adds one slice of it the same way, so a
big reference can be checked a slice at a time with the same rounding.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from netsim.semantics.chunks import SLICE_ELEMENTS, bounded_slices
from netsim.semantics.groups import Groups, _canonical_axis, _check_stacked, _flat, _Layout, normalize_groups
from netsim.semantics.sharding import ShardingError, _dim, _not_partial, _tiled

__all__ = [
    "AllReduceLayout",
    "ReduceScatterLayout",
    "psum_grouped",
    "psum_reference",
    "psum_scatter_grouped",
    "psum_scatter_reference",
    "psum_scatter_sharded",
    "psum_sharded",
]


def _group_sum(x: np.ndarray, group: Sequence[int]) -> np.ndarray:
    """The sum of the group's inputs, added in group order into one array.

    The same as ``np.sum([x[d] for d in group], axis=0, dtype=x.dtype)`` (which
    also adds row after row), without first stacking the group's inputs.
    """
    total = np.array(x[group[0]], dtype=x.dtype)
    for d in group[1:]:
        np.add(total, x[d], out=total, dtype=x.dtype)
    return total


def _part_sum(x: np.ndarray, group: Sequence[int], block: tuple, index: tuple) -> np.ndarray:
    """``_group_sum(x, group)[block][index]``, adding only those slices of the inputs (same order, same rounding)."""
    total = np.array(x[group[0], ...][block][index], dtype=x.dtype)
    for d in group[1:]:
        np.add(total, x[d, ...][block][index], out=total, dtype=x.dtype)
    return total


@dataclass(frozen=True)
class ReduceScatterLayout(_Layout):
    """``jax.lax.psum_scatter(x, scatter_dimension=d, tiled=tiled, axis_index_groups=groups)``.

    Each input is cut into n blocks along ``scatter_dimension``; member k receives
    the sum over the group of block k. Untiled needs ``shape[d] == n`` and drops
    that dimension; tiled needs ``shape[d] % n == 0`` and keeps it.
    """

    scatter_dimension: int
    tiled: bool
    groups: Groups
    block_shape: tuple[int, ...]
    pattern = "reduce_scatter"

    @classmethod
    def check(cls, x: np.ndarray, scatter_dimension: int, tiled: bool, axis_index_groups: Sequence[Sequence[int]] | None) -> ReduceScatterLayout:
        """Validate the arguments against the stacked input ``x``."""
        _check_stacked(x)
        groups = normalize_groups(axis_index_groups, x.shape[0])
        n = len(groups[0])
        shape = x.shape[1:]
        if not shape:
            raise ValueError("psum_scatter needs at least one dimension per device; got scalars")
        dim = _canonical_axis(scatter_dimension, len(shape), "scatter_dimension")
        size = shape[dim]
        if tiled:
            if size % n:
                raise ValueError(f"psum_scatter with tiled=True needs shape[{dim}]={size} to be divisible by the group size {n}")
            block_shape = (*shape[:dim], size // n, *shape[dim + 1 :])
        else:
            if size != n:
                raise ValueError(f"psum_scatter with tiled=False needs shape[{dim}]={size} to equal the group size {n}")
            block_shape = shape[:dim] + shape[dim + 1 :]
        return cls(dim, bool(tiled), groups, block_shape)

    @property
    def output_shape(self) -> tuple[int, ...]:
        """Shape of one device's output."""
        return self.block_shape

    def block_rows(self, x: np.ndarray) -> np.ndarray | None:
        """Along the first dimension of a contiguous input, blocks are runs of each row: the rows of one reshape.

        Examples
        --------
        >>> x = np.arange(12).reshape(2, 6)
        >>> ReduceScatterLayout.check(x, 0, True, None).block_rows(x).tolist()
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
        """
        if self.scatter_dimension != 0 or not x.flags.c_contiguous:
            return None
        return x.reshape(x.shape[0] * len(self.groups[0]), -1)

    def blocks(self, x: np.ndarray) -> list[dict[int, np.ndarray]]:
        """Per device, its contribution to every block (flat, contiguous)."""
        n = len(self.groups[0])
        rows = self.block_rows(x)
        if rows is not None:  # row views, one reshape
            listed = list(rows)
            return [dict(enumerate(listed[d * n : (d + 1) * n])) for d in range(x.shape[0])]
        return [{k: _flat(part) for k, part in enumerate(np.split(x[d], n, axis=self.scatter_dimension))} for d in range(x.shape[0])]

    def block_count(self) -> int:
        """One block per member of a group."""
        return len(self.groups[0])

    def block_sizes(self, n_devices: int) -> list[dict[int, int]]:
        """Every device contributes to every block; blocks are equal."""
        n = len(self.groups[0])
        return [dict.fromkeys(range(n), math.prod(self.block_shape)) for _ in range(n_devices)]

    def slot(self, row: np.ndarray, block: int) -> np.ndarray:
        """A device's output is the one block it owns."""
        return row

    def wanted(self, device: int) -> range:
        """Blocks a device must hold at the end: its own position in its group."""
        k = next(g.index(device) for g in self.groups if device in g)
        return range(k, k + 1)

    def reference_rows(self, x: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        n, dim = len(self.groups[0]), self.scatter_dimension
        for group in self.groups:
            total = _group_sum(x, group)
            size = total.shape[dim] // n
            for k, d in enumerate(group):
                part = np.take(total, np.arange(k * size, (k + 1) * size), axis=dim)
                yield d, part if self.tiled else np.squeeze(part, axis=dim)

    def reference_parts(
        self, x: np.ndarray, devices: Collection[int] | None = None, max_elements: int = SLICE_ELEMENTS
    ) -> Iterator[tuple[int, tuple, np.ndarray]]:
        """Member k's output, a slice of at most ``max_elements`` at a time: the group's sum
        of that slice of block k (the k-th of n runs along ``scatter_dimension``; untiled, index k).

        Examples
        --------
        >>> x = np.arange(16).reshape(4, 4)
        >>> [(d, part.tolist()) for d, _, part in ReduceScatterLayout.check(x, 0, True, [[0, 1], [2, 3]]).reference_parts(x, max_elements=1)]
        [(0, [4]), (0, [6]), (1, [8]), (1, [10]), (2, [20]), (2, [22]), (3, [24]), (3, [26])]
        """
        n, dim = len(self.groups[0]), self.scatter_dimension
        lead = (slice(None),) * dim
        size = x.shape[1 + dim] // n
        for group in self.groups:
            for k, d in enumerate(group):
                if devices is not None and d not in devices:
                    continue
                block = (*lead, slice(k * size, (k + 1) * size) if self.tiled else k)
                for index in bounded_slices(self.block_shape, max_elements):
                    yield d, index, _part_sum(x, group, block, index)


@dataclass(frozen=True)
class AllReduceLayout(_Layout):
    """``jax.lax.psum(x, axis_index_groups=groups)``: every member gets the group's sum.

    The flattened input is cut into n nearly equal blocks so a reduce-scatter
    followed by an all-gather can move it; any shape, scalars included, works.
    """

    groups: Groups
    shape: tuple[int, ...]
    pattern = "all_reduce"

    @classmethod
    def check(cls, x: np.ndarray, axis_index_groups: Sequence[Sequence[int]] | None) -> AllReduceLayout:
        """Validate the arguments against the stacked input ``x``."""
        _check_stacked(x)
        return cls(normalize_groups(axis_index_groups, x.shape[0]), x.shape[1:])

    @property
    def output_shape(self) -> tuple[int, ...]:
        """Shape of one device's output."""
        return self.shape

    @cached_property
    def _bounds(self) -> list[int]:
        """Where each block starts and ends in the flattened input (np.array_split's rule)."""
        n, size = len(self.groups[0]), math.prod(self.shape)
        small, big = divmod(size, n)
        return [k * small + min(k, big) for k in range(n + 1)]

    def block_count(self) -> int:
        """One block per slice of the flattened input."""
        return len(self._bounds) - 1

    def block_sizes(self, n_devices: int) -> list[dict[int, int]]:
        """Every device contributes to every block of the flattened input."""
        bounds = self._bounds
        sizes = {k: bounds[k + 1] - bounds[k] for k in range(len(bounds) - 1)}
        return [dict(sizes) for _ in range(n_devices)]

    def block_rows(self, x: np.ndarray) -> np.ndarray | None:
        """When the blocks are equal and the input contiguous, they are the rows of one reshape."""
        n = len(self.groups[0])
        if math.prod(self.shape) % n or not x.flags.c_contiguous:
            return None
        return x.reshape(x.shape[0] * n, -1)

    def blocks(self, x: np.ndarray) -> list[dict[int, np.ndarray]]:
        """Per device, its contribution to every block (flat views)."""
        starts, ends = self._bounds[:-1], self._bounds[1:]
        held = []
        for d in range(x.shape[0]):
            flat = _flat(x[d])
            held.append({k: flat[a:b] for k, (a, b) in enumerate(zip(starts, ends, strict=True))})
        return held

    def slot(self, row: np.ndarray, block: int) -> np.ndarray:
        """Block ``block`` is a run of the flattened output."""
        bounds = self._bounds
        return row.reshape(-1)[bounds[block] : bounds[block + 1]]

    def reference_rows(self, x: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        for group in self.groups:
            total = _group_sum(x, group)
            for d in group:
                yield d, total

    def reference_parts(
        self, x: np.ndarray, devices: Collection[int] | None = None, max_elements: int = SLICE_ELEMENTS
    ) -> Iterator[tuple[int, tuple, np.ndarray]]:
        """The group's sum, a slice of at most ``max_elements`` at a time, shared by the members.

        Examples
        --------
        >>> x = np.arange(12).reshape(2, 2, 3)
        >>> [(d, part.tolist()) for d, _, part in AllReduceLayout.check(x, None).reference_parts(x, max_elements=4)]
        [(0, [[6, 8, 10]]), (1, [[6, 8, 10]]), (0, [[12, 14, 16]]), (1, [[12, 14, 16]])]
        """
        for group in self.groups:
            members = [d for d in group if devices is None or d in devices]
            if not members:
                continue
            for index in bounded_slices(self.shape, max_elements):
                total = _part_sum(x, group, (), index)
                for d in members:
                    yield d, index, total


def psum_scatter_reference(
    x: np.ndarray, scatter_dimension: int = 0, tiled: bool = False, axis_index_groups: Sequence[Sequence[int]] | None = None
) -> np.ndarray:
    """JAX's psum_scatter computed directly from its definition.

    Examples
    --------
    >>> psum_scatter_reference(np.arange(16).reshape(4, 4))
    array([24, 28, 32, 36])
    >>> psum_scatter_reference(np.arange(16).reshape(4, 4), tiled=True, axis_index_groups=[[0, 2], [3, 1]])
    array([[ 8, 10],
           [20, 22],
           [12, 14],
           [16, 18]])
    """
    x = np.asarray(x)
    return ReduceScatterLayout.check(x, scatter_dimension, tiled, axis_index_groups).reference(x)


def psum_reference(x: np.ndarray, axis_index_groups: Sequence[Sequence[int]] | None = None) -> np.ndarray:
    """JAX's psum computed directly from its definition.

    Examples
    --------
    >>> psum_reference(np.arange(4), axis_index_groups=[[0, 1], [2, 3]])
    array([1, 1, 5, 5])
    """
    x = np.asarray(x)
    return AllReduceLayout.check(x, axis_index_groups).reference(x)


def psum_scatter_sharded(x: Any, mesh: Mapping[str, int], axes: tuple[str, ...], scatter_dimension: int, tiled: bool) -> Any:
    """A program's psum_scatter over mesh ``axes``: a partial sum over them becomes split over them along ``scatter_dimension``.

    Examples
    --------
    >>> from netsim.programs.model import Sharded
    >>> y = psum_scatter_sharded(Sharded((8, 4), partial=("X",)), {"X": 2}, ("X",), 0, True)
    >>> y.sharding, y.partial
    ((('X',), ()), ())
    """
    partial = tuple(p for p in x.partial if p not in axes)
    _tiled("psum_scatter", tiled)
    if not set(axes) <= set(x.partial):
        _not_partial(x, axes)
    n = math.prod(mesh[a] for a in axes)
    sharding = list(x.sharding)
    dim = _dim("scatter_dimension", scatter_dimension, len(x.shape))
    if x.local_shape(mesh)[dim] % n:
        raise ShardingError("scatter_dimension", f"the shard's dimension {dim} of {x.local_shape(mesh)[dim]} does not split into {n}")
    sharding[dim] = (*sharding[dim], *axes)
    return replace(x, sharding=tuple(sharding), partial=partial)


def psum_scatter_grouped(shape: tuple[int, ...], n: int, scatter_dimension: int, tiled: bool) -> tuple[int, ...]:
    """A device's shape after a tiled psum_scatter over groups of ``n``.

    Examples
    --------
    >>> psum_scatter_grouped((4, 3), 2, scatter_dimension=0, tiled=True)
    (2, 3)
    """
    _tiled("psum_scatter", tiled)
    out = list(shape)
    dim = _dim("scatter_dimension", scatter_dimension, len(shape))
    if out[dim] % n:
        raise ShardingError("scatter_dimension", f"dimension {dim} of {out[dim]} does not split into {n}")
    out[dim] //= n
    return tuple(out)


def psum_sharded(x: Any, mesh: Mapping[str, int], axes: tuple[str, ...]) -> Any:
    """A program's psum over mesh ``axes``: the array is no longer a partial sum over them.

    Examples
    --------
    >>> from netsim.programs.model import Sharded
    >>> psum_sharded(Sharded((8,), partial=("X", "Y")), {"X": 2, "Y": 2}, ("X",)).partial
    ('Y',)
    """
    if not set(axes) <= set(x.partial):
        _not_partial(x, axes)
    return replace(x, partial=tuple(p for p in x.partial if p not in axes))


def psum_grouped(shape: tuple[int, ...], n: int) -> tuple[int, ...]:
    """A device's shape after a psum: unchanged."""
    return shape
