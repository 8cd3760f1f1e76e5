"""Devices' starting buffers of size-only chunks, held as columns: a timing-only run of millions of chunks.

A timing-only run starts every device with stand-ins (:class:`~netsim.semantics.chunks.SizeOnly`):
a whole training step on 256 chips starts with millions of them, under ``(block, piece)`` keys.
:class:`SizeBuffers` keeps them as three arrays (holder, key, size) that the compiled player and
the checks read as they are, and makes a device's dict only when someone reads it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from netsim.engine.made_when_read import MadeWhenRead
from netsim.semantics.chunks import SizeOnly

__all__ = ["SizeBuffers"]


class SizeBuffers(MadeWhenRead):
    """Each device's starting chunks (dicts, as :func:`netsim.engine.play` takes them): chunk ``i`` is held by
    device ``holder[i]`` under the key ``(keys[i, 0], keys[i, 1])`` and is ``SizeOnly(nbytes[i])``, one stand-in
    shared by every chunk of a size.

    ``holder`` is sorted: a device's chunks are consecutive, in the order its dict lists them.
    A device's dict is made when first read, then kept.

    Examples
    --------
    >>> b = SizeBuffers(2, np.array([0, 0, 1]), np.array([[0, 0], [1, 0], [0, 0]]), np.array([8, 4, 8]))
    >>> len(b), b[0], b[1][(0, 0)] is b[0][(0, 0)]
    (2, {(0, 0): SizeOnly(8), (1, 0): SizeOnly(4)}, True)
    >>> b.key_sizes([(1, 0), (2, 0)]).tolist()
    [4, -1]
    """

    def __init__(self, n_devices: int, holder: np.ndarray, keys: np.ndarray, nbytes: np.ndarray) -> None:
        self.holder = np.asarray(holder, np.int64)
        self.keys = np.asarray(keys, np.int64).reshape(-1, 2)
        self.nbytes = np.asarray(nbytes, np.int64)
        if not len(self.holder) == len(self.keys) == len(self.nbytes):
            raise ValueError(f"holder, keys and nbytes must give one entry per chunk: {len(self.holder)}, {len(self.keys)}, {len(self.nbytes)}")
        if len(self.holder) and (np.any(np.diff(self.holder) < 0) or self.holder[0] < 0 or self.holder[-1] >= n_devices):
            raise ValueError(f"holder must be sorted device numbers below {n_devices}")
        super().__init__(n_devices)
        self.bounds = np.searchsorted(self.holder, np.arange(n_devices + 1))
        self._shared: tuple[list[SizeOnly], np.ndarray] | None = None  # (the stand-ins, each chunk's): made when a chunk is read

    def _stand_ins(self) -> tuple[list[SizeOnly], np.ndarray]:
        """One stand-in per size, and which each chunk is."""
        if self._shared is None:
            sizes, which = np.unique(self.nbytes, return_inverse=True)
            self._shared = ([SizeOnly(int(s)) for s in sizes], which.reshape(-1))
        return self._shared

    def _make(self, device: int) -> dict:
        a, b = int(self.bounds[device]), int(self.bounds[device + 1])
        stand_ins, which = self._stand_ins()
        keys = zip(self.keys[a:b, 0].tolist(), self.keys[a:b, 1].tolist(), strict=True)
        return dict(zip(keys, map(stand_ins.__getitem__, which[a:b].tolist()), strict=True))

    def counts(self) -> np.ndarray:
        """How many chunks each device starts with."""
        return np.diff(self.bounds)

    def chunk_list(self) -> list[SizeOnly]:
        """Every device's chunks, buffer after buffer: the very stand-ins the dicts hold."""
        stand_ins, which = self._stand_ins()
        return list(map(stand_ins.__getitem__, which.tolist()))

    def key_sizes(self, keys: Sequence[tuple[int, int]]) -> np.ndarray:
        """Each key's size in the first buffer holding it (-1: none holds it)."""
        if not len(keys) or not len(self.keys):
            return np.full(len(keys), -1, np.int64)
        wanted = np.array(keys, np.int64).reshape(-1, 2)
        width = int(max(self.keys[:, 1].max(), wanted[:, 1].max())) + 1
        code = self.keys[:, 0] * width + self.keys[:, 1]
        held, first = np.unique(code, return_index=True)
        asked = wanted[:, 0] * width + wanted[:, 1]
        at = np.minimum(np.searchsorted(held, asked), len(held) - 1)
        return np.where(held[at] == asked, self.nbytes[first[at]], -1)

    def __repr__(self) -> str:
        return f"SizeBuffers({len(self)} devices, {len(self.holder)} chunks)"
