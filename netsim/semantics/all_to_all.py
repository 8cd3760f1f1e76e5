"""All-to-all: JAX's layout and the NumPy reference."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from netsim.semantics.groups import Groups, _canonical_axis, _check_stacked, _flat, _Layout, normalize_groups
from netsim.semantics.sharding import ShardingError, _axes_text, _dim, _ends_with, _tiled

__all__ = ["AllToAllLayout", "all_to_all_grouped", "all_to_all_reference", "all_to_all_sharded"]


@dataclass(frozen=True)
class AllToAllLayout(_Layout):
    """``jax.lax.all_to_all(x, split_axis, concat_axis, axis_index_groups=groups, tiled=tiled)``.

    Each member cuts its input into n chunks along ``split_axis`` and sends chunk j
    to member j; every member puts the chunks it receives, in the order of their
    senders' positions, along ``concat_axis``. Untiled, ``shape[split_axis]`` must
    equal n: the split axis goes (each chunk is one slice) and a new axis of size n
    appears at ``concat_axis``, so the rank stays the same. Tiled,
    ``shape[split_axis]`` must be divisible by n and the chunks are concatenated
    along the existing ``concat_axis``. Both axes are normalised against the rank
    (-1 is the last axis), as positive axes would be.

    Block ``i*n + j`` is the chunk member i sends to member j.

    Examples
    --------
    >>> layout = AllToAllLayout.check(np.zeros((4, 4, 3)), split_axis=0, concat_axis=-1, tiled=False, axis_index_groups=None)
    >>> layout.concat_axis, layout.block_shape, layout.output_shape
    (1, (3,), (3, 4))
    """

    split_axis: int
    concat_axis: int
    tiled: bool
    groups: Groups
    block_shape: tuple[int, ...]
    pattern = "all_to_all"

    @classmethod
    def check(cls, x: np.ndarray, split_axis: int, concat_axis: int, tiled: bool, axis_index_groups: Sequence[Sequence[int]] | None) -> AllToAllLayout:
        """Validate the arguments against the stacked input ``x``."""
        _check_stacked(x)
        groups = normalize_groups(axis_index_groups, x.shape[0])
        n = len(groups[0])
        shape = x.shape[1:]
        if not shape:
            raise ValueError("all_to_all needs at least one dimension per device; got scalars")
        split = _canonical_axis(split_axis, len(shape), "split_axis")
        concat = _canonical_axis(concat_axis, len(shape), "concat_axis")
        size = shape[split]
        if tiled:
            if size % n:
                raise ValueError(f"all_to_all with tiled=True needs shape[{split}]={size} to be divisible by the group size {n}")
            block_shape = (*shape[:split], size // n, *shape[split + 1 :])
        else:
            if size != n:
                raise ValueError(f"all_to_all with tiled=False needs shape[{split}]={size} to equal the group size {n}")
            block_shape = shape[:split] + shape[split + 1 :]
        return cls(split, concat, bool(tiled), groups, block_shape)

    @property
    def output_shape(self) -> tuple[int, ...]:
        """Shape of one device's output."""
        n, shape, c = len(self.groups[0]), self.block_shape, self.concat_axis
        if self.tiled:
            return (*shape[:c], n * shape[c], *shape[c + 1 :])
        return (*shape[:c], n, *shape[c:])

    def block_count(self) -> int:
        """n^2 for groups of n: member i's blocks are ``i*n .. (i+1)*n - 1`` (its own one stays on it).

        Examples
        --------
        >>> AllToAllLayout.check(np.zeros((4, 4, 3)), 0, 0, False, None).block_count()
        16
        """
        return len(self.groups[0]) ** 2

    def block_sizes(self, n_devices: int) -> list[dict[int, int]]:
        """Member i starts with blocks ``i*n + j``, each one n-th of its input.

        Examples
        --------
        >>> AllToAllLayout.check(np.zeros((2, 2, 3)), 0, 0, False, None).block_sizes(2)
        [{0: 3, 1: 3}, {2: 3, 3: 3}]
        """
        n = len(self.groups[0])
        sizes: list[dict[int, int]] = [{} for _ in range(n_devices)]
        for group in self.groups:
            for i, device in enumerate(group):
                sizes[device] = dict.fromkeys(range(i * n, (i + 1) * n), math.prod(self.block_shape))
        return sizes

    def blocks(self, x: np.ndarray) -> list[dict[int, np.ndarray]]:
        """Per device, the chunks it sends: member i holds block ``i*n + j`` for every j (flat)."""
        n = len(self.groups[0])
        held: list[dict[int, np.ndarray]] = [{} for _ in range(x.shape[0])]
        for group in self.groups:
            for i, device in enumerate(group):
                chunks = np.split(x[device], n, axis=self.split_axis)
                held[device] = {i * n + j: _flat(chunk) for j, chunk in enumerate(chunks)}
        return held

    def wanted(self, device: int) -> range:
        """Blocks a device must hold at the end: ``j*n + i`` for every sender j, i its position."""
        group = next(g for g in self.groups if device in g)
        n, i = len(group), group.index(device)
        return range(i, n * n, n)

    def slot(self, row: np.ndarray, block: int) -> np.ndarray:
        """Where the chunk from sender ``block // n`` goes in one device's output."""
        sender = block // len(self.groups[0])
        if self.tiled:
            size = self.block_shape[self.concat_axis]
            index = (slice(None),) * self.concat_axis + (slice(sender * size, (sender + 1) * size),)
            return row[index]
        return np.moveaxis(row, self.concat_axis, 0)[sender, ...]

    def reference_rows(self, x: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        n, split, concat = len(self.groups[0]), self.split_axis, self.concat_axis
        for group in self.groups:
            for i, device in enumerate(group):
                if self.tiled:
                    received = [np.split(x[sender], n, axis=split)[i] for sender in group]
                    yield device, np.concatenate(received, axis=concat)
                else:
                    received = [np.take(x[sender], i, axis=split) for sender in group]
                    yield device, np.stack(received, axis=concat)


def all_to_all_reference(
    x: np.ndarray, split_axis: int, concat_axis: int, axis_index_groups: Sequence[Sequence[int]] | None = None, tiled: bool = False
) -> np.ndarray:
    """JAX's all_to_all computed directly from its definition.

    Examples
    --------
    >>> all_to_all_reference(np.arange(9).reshape(3, 3), 0, 0)
    array([[0, 3, 6],
           [1, 4, 7],
           [2, 5, 8]])
    >>> all_to_all_reference(np.arange(8).reshape(2, 4), 0, 0, tiled=True)
    array([[0, 1, 4, 5],
           [2, 3, 6, 7]])
    """
    x = np.asarray(x)
    return AllToAllLayout.check(x, split_axis, concat_axis, tiled, axis_index_groups).reference(x)


def all_to_all_sharded(x: Any, mesh: Mapping[str, int], axes: tuple[str, ...], split_axis: int, concat_axis: int, tiled: bool) -> Any:
    """A program's all_to_all over mesh ``axes``: they move from ``concat_axis`` (where they come last) to ``split_axis``.

    Examples
    --------
    >>> from netsim.programs.model import Sharded
    >>> all_to_all_sharded(Sharded((8, 4), sharding=(("X",), ())), {"X": 2}, ("X",), 1, 0, True).sharding
    ((), ('X',))
    """
    _tiled("all_to_all", tiled)
    n = math.prod(mesh[a] for a in axes)
    rank, sharding = len(x.shape), list(x.sharding)
    split, concat = _dim("split_axis", split_axis, rank), _dim("concat_axis", concat_axis, rank)
    if split == concat:  # (the members' blocks would be permuted within the dimension: no sharding says where they land)
        raise ShardingError("concat_axis", f"dimension {concat} is also split_axis; split one dimension and concatenate along another")
    if not _ends_with(sharding[concat], axes):
        raise ShardingError("concat_axis", f"dimension {concat} is split over {_axes_text(sharding[concat])}, not over {_axes_text(axes)} (last)")
    if x.local_shape(mesh)[split] % n:
        raise ShardingError("split_axis", f"the shard's dimension {split} of {x.local_shape(mesh)[split]} does not split into {n}")
    sharding[concat] = sharding[concat][: len(sharding[concat]) - len(axes)]
    sharding[split] = (*sharding[split], *axes)
    return replace(x, sharding=tuple(sharding))


def all_to_all_grouped(shape: tuple[int, ...], n: int, split_axis: int, concat_axis: int, tiled: bool) -> tuple[int, ...]:
    """A device's shape after a tiled all_to_all over groups of ``n``.

    Examples
    --------
    >>> all_to_all_grouped((4, 3), 2, split_axis=0, concat_axis=1, tiled=True)
    (2, 6)
    """
    _tiled("all_to_all", tiled)
    out, rank = list(shape), len(shape)
    split, concat = _dim("split_axis", split_axis, rank), _dim("concat_axis", concat_axis, rank)
    if out[split] % n:
        raise ShardingError("split_axis", f"dimension {split} of {out[split]} does not split into {n}")
    out[split] //= n
    out[concat] *= n
    return tuple(out)
