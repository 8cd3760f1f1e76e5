"""ppermute: the permutation's check, JAX's layout and the NumPy reference."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsim.semantics.groups import Groups, _check_stacked, _flat, _Layout
from netsim.semantics.sharding import ShardingError

__all__ = ["PermuteLayout", "normalize_perm", "ppermute_grouped", "ppermute_reference", "ppermute_sharded"]


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
    if isinstance(perm, tuple):  # (a program's permutes repeat their pairs, trip after trip: checked once each)
        try:
            return _normalized(perm, n_devices)
        except TypeError:  # (unhashable entries: checked, and said, below)
            pass
    return _normalize(perm, n_devices)


def _normalize(perm: Sequence[Sequence[int]], n_devices: int) -> tuple[tuple[int, int], ...]:
    """:func:`normalize_perm`, uncached."""
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


_normalized = functools.lru_cache(maxsize=1024)(_normalize)


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

    def block_count(self) -> int:
        """One block per pair."""
        return len(self.groups)

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


def ppermute_reference(x: np.ndarray, perm: Sequence[Sequence[int]]) -> np.ndarray:
    """JAX's ppermute computed directly from its definition.

    Examples
    --------
    >>> ppermute_reference(np.arange(4), [(0, 1), (1, 2), (2, 3)])
    array([0, 0, 1, 2])
    """
    x = np.asarray(x)
    return PermuteLayout.check(x, perm).reference(x)


def ppermute_sharded(x: Any, mesh: Mapping[str, int], axes: tuple[str, ...], perm: Sequence[Sequence[int]]) -> Any:
    """A program's ppermute along one mesh axis: shards move, the array's blocks with them (the array is the same).

    Examples
    --------
    >>> from netsim.programs.model import Sharded
    >>> ppermute_sharded(Sharded((8,), sharding=(("X",),)), {"X": 2}, ("X",), [(0, 1)])
    Traceback (most recent call last):
    ...
    netsim.semantics.sharding.ShardingError: perm: must move every position 0..1 along 'X' exactly once, got [[0, 1]]
    """
    if len(axes) != 1:
        raise ShardingError("axes", "ppermute runs over one mesh axis")
    n = math.prod(mesh[a] for a in axes)
    sources, targets = [s for s, _ in perm], [t for _, t in perm]
    if sorted(sources) != list(range(n)) or sorted(targets) != list(range(n)):
        raise ShardingError("perm", f"must move every position 0..{n - 1} along {axes[0]!r} exactly once, got {[list(p) for p in perm]}")
    return x


def ppermute_grouped(shape: tuple[int, ...], n: int, perm: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """A device's shape after a ppermute: unchanged."""
    return shape
