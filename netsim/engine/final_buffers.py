"""Devices' buffers at the end of a compiled run with reductions, each chunk looked up when read.

The compiled loop leaves numbers: which chunk each device holds under each key.
:class:`FinalBuffers` keeps them, and makes a device's buffer (a read-only
mapping, :class:`FinalBuffer`) when it is first read; a chunk is looked up when
its key is: a chunk held at the start is that very object, a sum comes from
:class:`netsim.engine.sums.Sums`. A run whose buffers nobody reads in full never
builds hundreds of thousands of dict entries.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from netsim.engine.made_when_read import MadeWhenRead

__all__ = ["FinalBuffer", "FinalBuffers"]


class FinalBuffer(Mapping):
    """One device's chunks at the end, by key, in the order the Python player's dict holds them (read-only).

    Examples
    --------
    >>> buffer = FinalBuffer(["a", "b"], {"a": 0, "b": 1}, [1, 0], ["x", "y"].__getitem__)
    >>> dict(buffer), len(buffer), "c" in buffer
    ({'a': 'y', 'b': 'x'}, 2, False)
    """

    __slots__ = ("_chunk", "_index", "_keys", "_numbers")

    def __init__(self, keys: Sequence[Hashable], index: dict[Hashable, int], numbers: Sequence[int], chunk: Any) -> None:
        self._keys, self._index, self._numbers, self._chunk = keys, index, numbers, chunk

    def __getitem__(self, key: Hashable) -> Any:
        return self._chunk(int(self._numbers[self._index[key]]))

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"FinalBuffer({len(self)} chunks)"


class FinalBuffers(MadeWhenRead):
    """Each device's buffer at the end (:class:`FinalBuffer`), made when first read.

    Device d holds, in order, ``keys[start[d]:start[d + 1]]`` and under them the chunks
    numbered ``numbers[start[d]:start[d + 1]]``: number u is ``entries[u]`` (the chunks held
    at the start) below ``len(entries)``, else sum ``u - len(entries)`` of ``sums``.

    Examples
    --------
    >>> buffers = FinalBuffers(["a", "b", "a"], np.array([0, 2, 3]), np.array([1, 0, 2]), np.array([10, 20], object), [30])
    >>> [dict(b) for b in buffers]
    [{'a': 20, 'b': 10}, {'a': 30}]
    """

    def __init__(self, keys: list[Hashable], start: np.ndarray, numbers: np.ndarray, entries: np.ndarray, sums: Any) -> None:
        self._keys, self._start, self._numbers = keys, start.tolist(), numbers
        self._entries, self._sums, self._first = entries, sums, len(entries)
        super().__init__(len(start) - 1)
        self._last: tuple[list[Hashable], dict[Hashable, int]] = ([], {})

    def chunk(self, number: int) -> Any:
        """Chunk ``number``: a chunk held at the start, or a sum."""
        return self._entries[number] if number < self._first else self._sums[number - self._first]

    def _make(self, device: int) -> FinalBuffer:
        a, b = self._start[device], self._start[device + 1]
        keys = self._keys[a:b]
        last_keys, index = self._last
        if keys != last_keys:  # (devices mostly hold the same keys, the very same objects, in the same order)
            index = {key: i for i, key in enumerate(keys)}
            self._last = keys, index
        return FinalBuffer(keys, index, self._numbers[a:b], self.chunk)

    def __repr__(self) -> str:
        return f"FinalBuffers({len(self)} devices)"
