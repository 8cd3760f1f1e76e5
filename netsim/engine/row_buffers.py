"""Devices' starting buffers whose chunks are the rows of one array, so a big run can read them all at once."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from netsim.engine.made_when_read import MadeWhenRead

__all__ = ["Chunks", "RowBuffers"]


class RowBuffers(MadeWhenRead):
    """Each device's starting chunks (dicts, as :func:`netsim.engine.play` takes them): every device
    holds ``keys``, in that order, and its chunks are, buffer after buffer, the rows of the array
    ``rows``: device d's j-th chunk is ``rows[d * len(keys) + j]`` (a view of it, the same values,
    shape and dtype).

    A device's dict is made when first read, then kept (the same dict and chunks on every
    read). Engines and checks may read ``keys`` and ``rows`` in place of the dicts (the compiled
    player adds reductions in whole waves of rows); whoever changes a dict must not hand the
    buffers on as RowBuffers.

    Examples
    --------
    >>> x = np.arange(8).reshape(4, 2)
    >>> buffers = RowBuffers(["a", "b"], x)
    >>> len(buffers), buffers[1]["a"].tolist(), buffers.chunk(3) is buffers[1]["b"]
    (2, [4, 5], True)
    """

    def __init__(self, keys: Sequence[Hashable], rows: np.ndarray) -> None:
        self.keys, self.rows = list(keys), rows
        if not self.keys or len(rows) % len(self.keys):
            raise ValueError(f"rows has {len(rows)} rows, not a row per key ({len(self.keys)} keys) for every device")
        super().__init__(len(rows) // len(self.keys))

    def _make(self, device: int) -> dict:
        m = len(self.keys)
        return dict(zip(self.keys, self.rows[device * m : (device + 1) * m], strict=True))

    def chunk(self, number: int) -> np.ndarray:
        """Chunk ``number`` of all buffers' chunks end to end: the very object its device's dict holds."""
        device, j = divmod(number, len(self.keys))
        return self._buffer(device)[self.keys[j]]

    def __repr__(self) -> str:
        return f"RowBuffers({len(self)} devices, {len(self.keys)} chunks each)"


class Chunks(Sequence):
    """Some of :class:`RowBuffers`' chunks, looked up when read: the i-th is ``buffers.chunk(numbers[i])``.

    Examples
    --------
    >>> chunks = Chunks(RowBuffers(["a", "b"], np.arange(8).reshape(4, 2)), np.array([3, 0]))
    >>> len(chunks), [c.tolist() for c in chunks]
    (2, [[6, 7], [0, 1]])
    """

    def __init__(self, buffers: RowBuffers, numbers: np.ndarray) -> None:
        self._buffers, self._numbers = buffers, numbers

    def __len__(self) -> int:
        return len(self._numbers)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._buffers.chunk(int(n)) for n in self._numbers[index]]
        return self._buffers.chunk(int(self._numbers[index]))
