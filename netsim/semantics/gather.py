"""All-gather: JAX's layout and the NumPy reference."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from netsim.semantics.chunks import SLICE_ELEMENTS
from netsim.semantics.groups import Groups, _canonical_axis, _check_stacked, _flat, _Layout, normalize_groups
from netsim.semantics.sharding import ShardingError, _axes_text, _dim, _ends_with, _tiled

__all__ = ["AllGatherLayout", "all_gather_grouped", "all_gather_reference", "all_gather_sharded"]


@dataclass(frozen=True)
class AllGatherLayout(_Layout):
    """``jax.lax.all_gather(x, axis=axis, tiled=tiled, axis_index_groups=groups)``.

    Block j of a group is member j's whole input. Untiled stacks the blocks on a
    new axis ``axis`` (normalised against rank+1, so -1 is a new last axis); tiled
    concatenates them along the existing ``axis`` (normalised against the rank;
    scalars are rejected).

    Examples
    --------
    >>> layout = AllGatherLayout.check(np.zeros((4, 3)), axis=-1, tiled=False, axis_index_groups=None)
    >>> layout.axis, layout.block_shape, layout.output_shape
    (1, (3,), (3, 4))
    """

    axis: int
    tiled: bool
    groups: Groups
    block_shape: tuple[int, ...]
    pattern = "gather"

    @classmethod
    def check(cls, x: np.ndarray, axis: int, tiled: bool, axis_index_groups: Sequence[Sequence[int]] | None) -> AllGatherLayout:
        """Validate the arguments against the stacked input ``x``."""
        _check_stacked(x)
        groups = normalize_groups(axis_index_groups, x.shape[0])
        rank = x.ndim - 1
        if tiled:
            if rank == 0:
                raise ValueError("all_gather with tiled=True needs at least one dimension per device; got scalars")
            axis = _canonical_axis(axis, rank, "axis")
        else:
            axis = _canonical_axis(axis, rank + 1, "axis")
        return cls(axis, bool(tiled), groups, x.shape[1:])

    @property
    def output_shape(self) -> tuple[int, ...]:
        """Shape of one device's output."""
        n, shape, a = len(self.groups[0]), self.block_shape, self.axis
        if self.tiled:
            return (*shape[:a], n * shape[a], *shape[a + 1 :])
        return (*shape[:a], n, *shape[a:])

    def blocks(self, x: np.ndarray) -> list[dict[int, np.ndarray]]:
        """Per device, the blocks it starts with: member j holds block j (a flat view)."""
        held: list[dict[int, np.ndarray]] = [{} for _ in range(x.shape[0])]
        for group in self.groups:
            for j, device in enumerate(group):
                held[device][j] = _flat(x[device])
        return held

    def block_count(self) -> int:
        """One block per member of the largest group."""
        return max(map(len, self.groups))

    def block_sizes(self, n_devices: int) -> list[dict[int, int]]:
        """Member j starts with block j: one device's whole input.

        Examples
        --------
        >>> AllGatherLayout.check(np.zeros((2, 3)), 0, False, None).block_sizes(2)
        [{0: 3}, {1: 3}]
        """
        sizes: list[dict[int, int]] = [{} for _ in range(n_devices)]
        for group in self.groups:
            for j, device in enumerate(group):
                sizes[device][j] = math.prod(self.block_shape)
        return sizes

    def slot(self, row: np.ndarray, block: int) -> np.ndarray:
        """The view of one device's output where block ``block`` belongs."""
        if self.tiled:
            size = self.block_shape[self.axis]
            index = (slice(None),) * self.axis + (slice(block * size, (block + 1) * size),)
            return row[index]
        return row[block, ...] if self.axis == 0 else np.moveaxis(row, self.axis, 0)[block, ...]

    def reference_rows(self, x: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        everyone = tuple(range(x.shape[0]))
        for group in self.groups:
            if self.axis == 0 and tuple(group) == everyone and x.flags.c_contiguous:
                # every device's input, in device order, along the leading axis: x itself (no copy of a big input)
                gathered = x.reshape(-1, *x.shape[2:]) if self.tiled else x
            else:
                members = [x[d] for d in group]
                gathered = np.concatenate(members, self.axis) if self.tiled else np.stack(members, self.axis)
            for d in group:
                yield d, gathered

    def reference_parts(
        self, x: np.ndarray, devices: Collection[int] | None = None, max_elements: int = SLICE_ELEMENTS
    ) -> Iterator[tuple[int, tuple, np.ndarray]]:
        """Member j's input, as it is (a view), is what ``np.stack`` puts at index j of ``axis``
        (``np.concatenate``: the j-th run of ``shape[axis]`` along it).

        Examples
        --------
        >>> x = np.arange(12).reshape(2, 2, 3)
        >>> layout = AllGatherLayout.check(x, 1, True, None)
        >>> layout.output_shape
        (2, 6)
        >>> for d, index, part in layout.reference_parts(x, devices=[1]):
        ...     print(d, index, np.shares_memory(part, x))
        1 (slice(None, None, None), slice(0, 3, None)) True
        1 (slice(None, None, None), slice(3, 6, None)) True
        """
        lead = (slice(None),) * self.axis
        size = self.block_shape[self.axis] if self.tiled else 0
        for group in self.groups:
            for d in group:
                if devices is not None and d not in devices:
                    continue
                for j, member in enumerate(group):
                    yield d, (*lead, slice(j * size, (j + 1) * size) if self.tiled else j), x[member, ...]


def all_gather_reference(x: np.ndarray, axis: int = 0, tiled: bool = False, axis_index_groups: Sequence[Sequence[int]] | None = None) -> np.ndarray:
    """JAX's all_gather computed directly from its definition.

    Examples
    --------
    >>> all_gather_reference(np.arange(4))[2]
    array([0, 1, 2, 3])
    >>> all_gather_reference(np.arange(16).reshape(4, 4), axis_index_groups=[[0, 2], [3, 1]])[1]
    array([[12, 13, 14, 15],
           [ 4,  5,  6,  7]])
    """
    x = np.asarray(x)
    return AllGatherLayout.check(x, axis, tiled, axis_index_groups).reference(x)


def all_gather_sharded(x: Any, mesh: Mapping[str, int], axes: tuple[str, ...], axis: int, tiled: bool) -> Any:
    """A program's all_gather over mesh ``axes``: dimension ``axis`` is no longer split over them (they come last).

    Examples
    --------
    >>> from netsim.programs.model import Sharded
    >>> all_gather_sharded(Sharded((8, 4), sharding=(("X", "Y"), ())), {"X": 2, "Y": 2}, ("Y",), 0, True).sharding
    (('X',), ())
    """
    _tiled("all_gather", tiled, ": the result is the gathered array")
    sharding = list(x.sharding)
    dim = _dim("axis", axis, len(x.shape))
    if not _ends_with(sharding[dim], axes):
        raise ShardingError("axis", f"dimension {dim} is split over {_axes_text(sharding[dim])}, not over {_axes_text(axes)} (last): nothing to gather there")
    sharding[dim] = sharding[dim][: len(sharding[dim]) - len(axes)]
    return replace(x, sharding=tuple(sharding))


def all_gather_grouped(shape: tuple[int, ...], n: int, axis: int, tiled: bool) -> tuple[int, ...]:
    """A device's shape after a tiled all_gather over groups of ``n``.

    Examples
    --------
    >>> all_gather_grouped((4, 3), 2, axis=-1, tiled=True)
    (4, 6)
    """
    _tiled("all_gather", tiled)
    out = list(shape)
    out[_dim("axis", axis, len(shape))] *= n
    return tuple(out)
