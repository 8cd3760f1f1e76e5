"""Groups of devices, and what every layout shares.

``axis_index_groups`` is a list of groups of device indices; every index appears
exactly once and all groups have the same size. The order inside a group matters:
in an all_gather member k supplies block k of the result, in a psum_scatter member
k receives block k of the sum. :func:`normalize_groups` checks it.

``_Layout`` is the interface every layout of this package offers the simulation
(see :mod:`netsim.semantics`); the small helpers here check axes and inputs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator, Sequence

import numpy as np

from netsim.semantics.chunks import SLICE_ELEMENTS

__all__ = ["Groups", "normalize_groups"]

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


def _flat(a: np.ndarray) -> np.ndarray:
    """A 1-D view of a contiguous array (a copy only if it was not contiguous)."""
    return np.ascontiguousarray(a).reshape(-1)


class _Layout:
    """What every layout offers the simulation (see :mod:`netsim.semantics`)."""

    groups: Groups
    pattern: str

    def wanted(self, device: int) -> Sequence[int]:
        """Blocks a device must hold at the end (all of them, unless a layout says otherwise)."""
        return range(len(self.groups[0]))

    def block_rows(self, x: np.ndarray) -> np.ndarray | None:
        """The blocks of :meth:`blocks` as the rows of one 2-D view of ``x``, when they are: every
        device holds blocks ``0..k-1``, equal and flat, and device d's block b is row ``d * k + b``.
        None otherwise (the default)."""
        return None

    def reference(self, x: np.ndarray) -> np.ndarray:
        """JAX's output for the whole stacked input, from :meth:`reference_rows`."""
        rows = dict(self.reference_rows(x))
        return np.stack([rows[d] for d in range(x.shape[0])])

    def block_count(self) -> int:
        """How many block numbers the layout uses (blocks ``0 .. count-1``), whether or not each travels.

        A lowering reserves them for its op, so that no other op's blocks share a number.
        """
        n = 1 + max((d for group in self.groups for d in group), default=-1)
        return 1 + max((max(sizes, default=-1) for sizes in self.block_sizes(n)), default=-1)

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
