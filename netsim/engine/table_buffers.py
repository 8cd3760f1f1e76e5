"""Devices' buffers at the end of a compiled run without reductions, read from the loop's chunk table.

The compiled loop ends with a devices x keys table of chunk numbers (``held``) and,
for each device, the keys it took that it did not start with, in the order they
first came. :class:`TableBuffers` keeps those arrays as they are: a device's
buffer (:class:`TableBuffer`, a read-only mapping) looks its chunks up in the
table when read, and lists its keys in the order the Python player's dict holds
them (those it started with, then the new ones). Nothing is built per entry, so
a 1024-device all_gather ends without two million dict entries, and a check can
compare whole columns of numbers (:meth:`TableBuffers.moved_from`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from netsim.engine.made_when_read import MadeWhenRead

__all__ = ["TableBuffer", "TableBuffers"]


class TableBuffer(Mapping):
    """One device's chunks at the end, by key (read-only), looked up in :class:`TableBuffers`' table.

    Examples
    --------
    >>> buffers = TableBuffers(["a", "b"], np.array([1, 0, -1, 1]), ["x", "y"], [["a"], ["b"]], np.array([1]), np.array([0, 1, 1]), np.array([1, 3]))
    >>> buffer = buffers[0]
    >>> list(buffer), buffer["b"], "b" in buffers[1], "a" in buffers[1], len(buffer)
    (['a', 'b'], 'x', True, False, 2)
    """

    __slots__ = ("_device", "_of", "_row")

    def __init__(self, of: TableBuffers, device: int) -> None:
        self._of, self._device = of, device
        self._row = device * len(of.keys)

    def __getitem__(self, key: Hashable) -> Any:
        c = int(self._of.held[self._row + self._of.number[key]])  # (KeyError: no transfer names the key)
        if c < 0:
            raise KeyError(key)
        return self._of.chunks[c]

    def __contains__(self, key: object) -> bool:
        k = self._of.number.get(key)  # type: ignore[call-overload]
        return k is not None and self._of.held[self._row + k] >= 0

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._of.keys_of(self._device))

    def __len__(self) -> int:
        return self._of.lengths[self._device]

    def __repr__(self) -> str:
        return f"TableBuffer({len(self)} chunks)"


class TableBuffers(MadeWhenRead):
    """Each device's buffer at the end (:class:`TableBuffer`), read from the loop's chunk table.

    Parameters
    ----------
    keys : list
        The keys transfers name; key k's number is its place here.
    held : numpy.ndarray
        ``held[d * len(keys) + k]``: the number of the chunk device d holds under key k, -1 if none.
    chunks : sequence
        Chunk c is ``chunks[c]`` (the very object a device started with).
    start_keys : sequence of lists
        Each device's keys at the start, in its dict's order (every one of them in ``keys``).
    new_keys, new_start : numpy.ndarray
        Device d's new keys, as key numbers in the order they first came: ``new_keys[new_start[d]:new_start[d + 1]]``.
    first_slots : numpy.ndarray
        Where each chunk was at the start, ``d * len(keys) + k`` (for :meth:`moved_from`).

    Examples
    --------
    Two devices, each starting with its own key; device 1 takes ``"a"`` from device 0:

    >>> held = np.array([0, -1, 0, 1])  # device 0 holds chunk 0 under "a"; device 1 chunks 0 and 1
    >>> buffers = TableBuffers(["a", "b"], held, ["x", "y"], [["a"], ["b"]], np.array([0]), np.array([0, 0, 1]), np.array([0, 3]))
    >>> [dict(b) for b in buffers]
    [{'a': 'x'}, {'b': 'y', 'a': 'x'}]
    >>> buffers.moved_from(np.array([1]), np.array([0]), np.array([0]))  # device 1's "a" is device 0's at the start
    True
    >>> buffers.moved_from(np.array([1]), np.array([1]), np.array([0]))  # (device 1 held no "a" at the start)
    False
    """

    def __init__(
        self,
        keys: list[Hashable],
        held: np.ndarray,
        chunks: Sequence[Any],
        start_keys: Sequence[list[Hashable]],
        new_keys: np.ndarray,
        new_start: np.ndarray,
        first_slots: np.ndarray,
    ) -> None:
        self.keys, self.held, self.chunks, self.first_slots = keys, held, chunks, first_slots
        self.number = {key: k for k, key in enumerate(keys)}
        self._start_keys, self._new_keys, self._new_start = start_keys, new_keys, new_start
        self.lengths = (np.fromiter(map(len, start_keys), np.int64, len(start_keys)) + np.diff(new_start)).tolist()
        super().__init__(len(start_keys))

    def keys_of(self, device: int) -> list[Hashable]:
        """Device ``device``'s keys in its dict's order: those it started with, then its new ones as they came."""
        new = self._new_keys[self._new_start[device] : self._new_start[device + 1]].tolist()
        return [*self._start_keys[device], *map(self.keys.__getitem__, new)]

    def moved_from(self, devices: np.ndarray, owners: np.ndarray, key_numbers: np.ndarray) -> bool:
        """Whether each of ``devices`` ends holding, under every key ``key_numbers[j]``, the very chunk
        ``owners[j]`` started with under it (compared a few hundred thousand entries at a time)."""
        n_keys = len(self.keys)
        started_at = owners * n_keys + key_numbers  # (the slot each key's chunk must have started in)
        step = max(1, (1 << 18) // max(1, len(key_numbers)))
        for a in range(0, len(devices), step):
            c = self.held[devices[a : a + step, None] * n_keys + key_numbers]
            if not ((c >= 0).all() and (self.first_slots[c] == started_at).all()):
                return False
        return True

    def _make(self, device: int) -> TableBuffer:
        return TableBuffer(self, device)

    def __repr__(self) -> str:
        return f"TableBuffers({len(self)} devices)"
