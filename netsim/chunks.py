"""What travels and what comes out when the data is too big to hold, or not wanted.

* :class:`SizeOnly` is a chunk stand-in that carries a size and nothing else.
  The engine only asks a chunk for ``nbytes`` (and adds chunks for
  reductions), so a schedule played with stand-ins takes exactly the same time
  as with real arrays (``data: none``), without allocating the data.
* :func:`shape_only` is an input stand-in: an array of the right shape and
  dtype that occupies one element of memory, for timing-only runs.
* :class:`LazyOutput` is an output that is not materialised: it knows its shape
  and dtype and builds a device's row when someone reads it. A 4096-chip
  all_gather of 1 GiB would otherwise need 4 TiB.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

__all__ = ["LazyOutput", "SizeOnly", "shape_only"]


class SizeOnly:
    """A chunk of ``nbytes`` bytes whose values are not simulated.

    Adding two stand-ins (a reduction) gives a stand-in of the same size.

    Examples
    --------
    >>> a = SizeOnly(4096)
    >>> (a + SizeOnly(4096)).nbytes
    4096
    >>> a
    SizeOnly(4096)
    """

    __slots__ = ("nbytes",)

    def __init__(self, nbytes: int) -> None:
        self.nbytes = int(nbytes)

    def __add__(self, other: SizeOnly) -> SizeOnly:
        if other.nbytes != self.nbytes:
            raise ValueError(f"cannot add chunks of {self.nbytes} and {other.nbytes} bytes")
        return self

    def __repr__(self) -> str:
        return f"SizeOnly({self.nbytes})"


def shape_only(shape: Sequence[int], dtype: np.dtype | str) -> np.ndarray:
    """A read-only array of the given shape and dtype backed by a single element.

    For ``data="none"`` runs: the collectives read its shape and dtype, never its values.

    Examples
    --------
    >>> x = shape_only((4096, 65536), "float32")
    >>> x.shape, x.nbytes, x.base.nbytes
    ((4096, 65536), 1073741824, 4)
    """
    return np.broadcast_to(np.zeros((), dtype), tuple(shape))


class LazyOutput:
    """A stacked ``[n_devices, ...]`` output whose rows are built when read.

    Indexing with a device number returns that device's row as a new array;
    ``np.asarray(output)`` materialises everything (only do that if it fits).

    Examples
    --------
    >>> out = LazyOutput((3, 2), np.dtype("int64"), lambda d: np.array([d, 10 * d]))
    >>> out[2]
    array([ 2, 20])
    >>> int(out[1, 1])
    10
    >>> np.asarray(out).tolist()
    [[0, 0], [1, 10], [2, 20]]
    >>> out
    LazyOutput(shape=(3, 2), dtype=int64, 48 bytes not materialised)
    """

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, row: Callable[[int], np.ndarray]) -> None:
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self._row = row

    @property
    def ndim(self) -> int:
        """Number of dimensions, as for an array."""
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes the output would take if materialised."""
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def row(self, device: int) -> np.ndarray:
        """Device ``device``'s output, built from the chunks it holds."""
        if not -self.shape[0] <= device < self.shape[0]:
            raise IndexError(f"device {device} is out of range for {self.shape[0]} devices")
        return self._row(device % self.shape[0])

    def rows(self) -> Iterator[np.ndarray]:
        """Every device's output, one at a time."""
        return (self._row(d) for d in range(self.shape[0]))

    def __getitem__(self, index):
        if isinstance(index, tuple):
            head, rest = (index[0], index[1:]) if index else (slice(None), ())
        else:
            head, rest = index, ()
        if isinstance(head, (int, np.integer)):
            row = self.row(int(head))
            return row[rest] if rest else row
        devices = range(self.shape[0])[head]
        stacked = np.stack([self._row(d) for d in devices]) if len(devices) else np.empty((0, *self.shape[1:]), self.dtype)
        return stacked[(slice(None), *rest)] if rest else stacked

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        for d in range(self.shape[0]):
            out[d] = self._row(d)
        return out if dtype is None else out.astype(dtype)

    def __repr__(self) -> str:
        return f"LazyOutput(shape={self.shape}, dtype={self.dtype}, {self.nbytes} bytes not materialised)"
