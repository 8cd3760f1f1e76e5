"""JAX's collective semantics: argument checks, output layouts and NumPy references.

This is the only module that knows how ``jax.lax`` lays out the result of a
collective. Inputs are stacked ``[n_devices, ...]`` as :func:`jax.pmap` takes them,
and so are outputs.

Two things live here:

* **Layouts** (:class:`AllGatherLayout`, :class:`ReduceScatterLayout`,
  :class:`AllReduceLayout`, :class:`AllToAllLayout`, :class:`PermuteLayout`) turn each device's input into the *blocks* an
  algorithm moves (``blocks``), and say where each block a device holds at the
  end goes in JAX's output (``output_shape`` and ``slot``). They are what the
  simulation uses.
* **References** (each layout's ``reference_rows`` and ``reference_parts``, and the functions
  :func:`all_gather_reference`, :func:`psum_scatter_reference`,
  :func:`psum_reference`, :func:`all_to_all_reference`,
  :func:`ppermute_reference`) compute JAX's answer straight from the definition, with
  no blocks, pieces or schedules, so that a simulated output can be checked
  against something that did not come from the same code. ``reference_parts``
  gives a device's answer a region of its output at a time (views of the input
  for gathers, sums of bounded slices for reductions), so that checking a big
  output needs no memory for a whole row of the answer.

axis_index_groups
    A list of groups of device indices; every index appears exactly once and all
    groups have the same size. The order inside a group matters: in an all_gather
    member k supplies block k of the result, in a psum_scatter member k receives
    block k of the sum.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from netsim.semantics.chunks import SLICE_ELEMENTS, bounded_slices

__all__ = [
    "AllGatherLayout",
    "AllReduceLayout",
    "AllToAllLayout",
    "PermuteLayout",
    "ReduceScatterLayout",
    "all_gather_reference",
    "all_to_all_reference",
    "normalize_groups",
    "normalize_perm",
    "ppermute_reference",
    "psum_reference",
    "psum_scatter_reference",
]

Groups = tuple[tuple[int, ...], ...]


def normalize_groups(axis_index_groups: Sequence[Sequence[int]] | None, n_devices: int) -> Groups:
    """Check ``axis_index_groups`` and return it as a tuple of tuples.

    ``None`` means one group of every device in index order.

    Raises
    ------
    ValueError
        If an entry is not an integer, an index is out of range or repeated, an
        index is missing, or the groups differ in size.

    Examples
    --------
    >>> normalize_groups([[0, 2], [3, 1]], 4)
    ((0, 2), (3, 1))
    >>> normalize_groups(None, 3)
    ((0, 1, 2),)
    >>> normalize_groups([[0, 1], [2]], 3)
    Traceback (most recent call last):
    ...
    ValueError: axis_index_groups must all have the same size, got sizes [2, 1] in [[0, 1], [2]]
    """
    if axis_index_groups is None:
        return (tuple(range(n_devices)),)
    try:
        groups = [list(g) for g in axis_index_groups]
    except TypeError:
        raise ValueError(f"axis_index_groups must be a list of lists of device indices, got {axis_index_groups!r}") from None
    if not groups or any(not g for g in groups):
        raise ValueError(f"axis_index_groups must be non-empty lists of device indices, got {groups!r}")
    for g in groups:
        for i in g:
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
                raise ValueError(f"axis_index_groups entries must be integers, got {i!r} in {groups!r}")
    sizes = [len(g) for g in groups]
    if len(set(sizes)) > 1:
        raise ValueError(f"axis_index_groups must all have the same size, got sizes {sizes} in {groups!r}")
    flat = [int(i) for g in groups for i in g]
    bad = sorted({i for i in flat if not 0 <= i < n_devices})
    if bad:
        raise ValueError(f"axis_index_groups index {bad[0]} is out of range for {n_devices} devices (valid: 0..{n_devices - 1})")
    repeated = sorted(i for i, count in Counter(flat).items() if count > 1)
    if repeated:
        raise ValueError(f"axis_index_groups must cover every device exactly once; device {repeated[0]} appears more than once in {groups!r}")
    missing = sorted(set(range(n_devices)) - set(flat))
    if missing:
        raise ValueError(f"axis_index_groups must cover every device exactly once; device {missing[0]} is in no group of {groups!r}")
    return tuple(tuple(int(i) for i in g) for g in groups)


def _canonical_axis(axis: int, ndim: int, what: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ValueError(f"{what} must be an integer, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what}={axis} is out of range for {ndim} dimension(s) (valid: {-ndim}..{ndim - 1})")
    return int(axis) % ndim


def _check_stacked(x: np.ndarray, n_devices: int | None = None) -> None:
    if x.ndim < 1:
        raise ValueError("input must be stacked [n_devices, ...]; got a scalar")
    if n_devices is not None and x.shape[0] != n_devices:
        raise ValueError(f"input has {x.shape[0]} devices on its leading axis but the topology has {n_devices}")


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


def _flat(a: np.ndarray) -> np.ndarray:
    """A 1-D view of a contiguous array (a copy only if it was not contiguous)."""
    return np.ascontiguousarray(a).reshape(-1)


class _Layout:
    """What every layout offers the simulation (see the module docstring)."""

    groups: Groups
    pattern: str

    def wanted(self, device: int) -> Sequence[int]:
        """Blocks a device must hold at the end (all of them, unless a layout says otherwise)."""
        return range(len(self.groups[0]))

    def reference(self, x: np.ndarray) -> np.ndarray:
        """JAX's output for the whole stacked input, from :meth:`reference_rows`."""
        rows = dict(self.reference_rows(x))
        return np.stack([rows[d] for d in range(x.shape[0])])

    def block_sizes(self, n_devices: int) -> list[dict[int, int]]:
        """Per device, the blocks it starts with and their sizes in elements.

        What :meth:`blocks` would hold, without touching any data (for runs that
        carry sizes only).
        """
        raise NotImplementedError

    def reference_rows(self, x: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        """``(device, expected output)`` pairs, one group at a time.

        Members of a group may share one array, so checking a big output needs
        memory for one group's answer, not for every device's.
        """
        raise NotImplementedError

    def reference_parts(
        self, x: np.ndarray, devices: Collection[int] | None = None, max_elements: int = SLICE_ELEMENTS
    ) -> Iterator[tuple[int, tuple, np.ndarray]]:
        """``(device, index, expected)``: JAX's answer for ``output_row[index]`` of a device.

        For each device, the indices (basic indexing into one device's output)
        cover its output exactly once; parts come group by group, as in
        :meth:`reference_rows`, and a device's first part comes in the same order.
        ``devices`` restricts the parts to these devices. Layouts that can say
        more precisely (gathers: views of the input; reductions: sums of at most
        ``max_elements`` elements) override this; the default gives whole rows.
        """
        for device, row in self.reference_rows(x):
            if devices is None or device in devices:
                yield device, (), row


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
        return np.moveaxis(row, self.axis, 0)[block, ...]

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

    def blocks(self, x: np.ndarray) -> list[dict[int, np.ndarray]]:
        """Per device, its contribution to every block (flat, contiguous)."""
        n = len(self.groups[0])
        return [{k: _flat(part) for k, part in enumerate(np.split(x[d], n, axis=self.scatter_dimension))} for d in range(x.shape[0])]

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

    def block_sizes(self, n_devices: int) -> list[dict[int, int]]:
        """Every device contributes to every block of the flattened input."""
        bounds = self._bounds
        sizes = {k: bounds[k + 1] - bounds[k] for k in range(len(bounds) - 1)}
        return [dict(sizes) for _ in range(n_devices)]

    def blocks(self, x: np.ndarray) -> list[dict[int, np.ndarray]]:
        """Per device, its contribution to every block (flat views)."""
        n = len(self.groups[0])
        return [dict(enumerate(np.array_split(_flat(x[d]), n))) for d in range(x.shape[0])]

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


def normalize_perm(perm: Sequence[Sequence[int]], n_devices: int) -> tuple[tuple[int, int], ...]:
    """Check a ``ppermute`` permutation and return it as a tuple of (source, destination) pairs.

    Raises
    ------
    ValueError
        If an entry is not a pair of integers, an index is out of range, or a
        source or a destination appears twice.

    Examples
    --------
    >>> normalize_perm([[0, 1], (1, 2)], 4)
    ((0, 1), (1, 2))
    >>> normalize_perm([(0, 1), (2, 1)], 4)
    Traceback (most recent call last):
    ...
    ValueError: perm repeats destination 1: (0, 1) and (2, 1) both send to it
    """
    try:
        pairs = [tuple(p) for p in perm]
    except TypeError:
        raise ValueError(f"perm must be a list of (source, destination) pairs, got {perm!r}") from None
    for p in pairs:
        if len(p) != 2:
            raise ValueError(f"perm must be a list of (source, destination) pairs; {p!r} is not a pair")
        for i in p:
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
                raise ValueError(f"perm entries must be integer device indices, got {i!r} in {p!r}")
    pairs = [(int(s), int(d)) for s, d in pairs]
    for p in pairs:
        for i in p:
            if not 0 <= i < n_devices:
                raise ValueError(f"perm index {i} is out of range for {n_devices} devices (valid: 0..{n_devices - 1}), in {p}")
    for end, what, verb in ((0, "source", "send from"), (1, "destination", "send to")):
        first: dict[int, tuple[int, int]] = {}
        for p in pairs:
            if p[end] in first:
                raise ValueError(f"perm repeats {what} {p[end]}: {first[p[end]]} and {p} both {verb} it")
            first[p[end]] = p
    return tuple(pairs)


@dataclass(frozen=True)
class PermuteLayout(_Layout):
    """``jax.lax.ppermute(x, perm)``: device d receives the input of the device that sends to it.

    ``perm`` lists (source, destination) pairs over the device axis; no source and
    no destination may repeat. A device that is no pair's destination gets zeros.
    Block k is pair k's payload, held by its source and wanted by its destination.

    Examples
    --------
    >>> layout = PermuteLayout.check(np.zeros((3, 2)), [(0, 1), (1, 2)])
    >>> layout.groups, list(layout.wanted(0)), list(layout.wanted(2))
    (((0, 1), (1, 2)), [], [1])
    """

    groups: Groups
    shape: tuple[int, ...]
    pattern = "permute"

    @classmethod
    def check(cls, x: np.ndarray, perm: Sequence[Sequence[int]]) -> PermuteLayout:
        """Validate the arguments against the stacked input ``x``."""
        _check_stacked(x)
        return cls(normalize_perm(perm, x.shape[0]), x.shape[1:])

    @property
    def output_shape(self) -> tuple[int, ...]:
        """Shape of one device's output."""
        return self.shape

    def block_sizes(self, n_devices: int) -> list[dict[int, int]]:
        """The source of pair k starts with block k: its whole input."""
        sizes: list[dict[int, int]] = [{} for _ in range(n_devices)]
        for k, (source, _) in enumerate(self.groups):
            sizes[source][k] = math.prod(self.shape)
        return sizes

    def blocks(self, x: np.ndarray) -> list[dict[int, np.ndarray]]:
        """Per device, the payload of the pair it is the source of (flat)."""
        held: list[dict[int, np.ndarray]] = [{} for _ in range(x.shape[0])]
        for k, (source, _) in enumerate(self.groups):
            held[source][k] = _flat(x[source])
        return held

    def wanted(self, device: int) -> list[int]:
        """The pair whose destination the device is, if any."""
        return [k for k, (_, destination) in enumerate(self.groups) if destination == device]

    def slot(self, row: np.ndarray, block: int) -> np.ndarray:
        """A device's output is the one payload it receives."""
        return row

    def reference_rows(self, x: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        senders = {destination: source for source, destination in self.groups}
        zeros = np.zeros(self.shape, x.dtype)
        for device in range(x.shape[0]):
            yield device, x[senders[device]] if device in senders else zeros


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


def ppermute_reference(x: np.ndarray, perm: Sequence[Sequence[int]]) -> np.ndarray:
    """JAX's ppermute computed directly from its definition.

    Examples
    --------
    >>> ppermute_reference(np.arange(4), [(0, 1), (1, 2), (2, 3)])
    array([0, 0, 1, 2])
    """
    x = np.asarray(x)
    return PermuteLayout.check(x, perm).reference(x)
