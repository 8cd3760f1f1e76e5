"""What travels and what comes out when the data is too big to hold, or not wanted.

* :class:`SizeOnly` is a chunk stand-in that carries a size and nothing else.
  The engine only asks a chunk for ``nbytes`` (and adds chunks for
  reductions), so a schedule played with stand-ins takes exactly the same time
  as with real arrays (``data: none``), without allocating the data.
* :class:`Bundle` is a message made of several chunks (or bundles): it carries
  references to its parts, never copies, and weighs what they weigh together.
  :func:`unbundled` opens a device's bundles back into its chunks.
* :func:`shape_only` is an input stand-in: an array of the right shape and
  dtype that occupies one element of memory, for timing-only runs.
* :class:`LazyOutput` is an output that is not materialised: it knows its shape
  and dtype and builds a device's row when someone reads it. A 4096-chip
  all_gather of 1 GiB would otherwise need 4 TiB.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["Bundle", "LazyOutput", "SizeOnly", "made_of", "shape_only", "unbundled"]


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


class Bundle:
    """Several chunks sent as one message: the parts, by reference, and their total size.

    A schedule names what a bundle holds (``bundles``: bundle key -> part keys);
    the device that first sends it makes it from the parts it holds, and
    whoever receives it holds the same parts, not copies.

    Examples
    --------
    >>> a, b = np.zeros(3, np.float32), np.ones(5, np.float32)
    >>> bundle = Bundle((a, b))
    >>> bundle.nbytes, bundle.parts[1] is b
    (32, True)
    >>> Bundle((bundle, SizeOnly(8)))
    Bundle(2 parts, 40 bytes)
    """

    __slots__ = ("nbytes", "parts")

    def __init__(self, parts: Sequence[Any]) -> None:
        self.parts = tuple(parts)
        self.nbytes = sum(int(part.nbytes) for part in self.parts)

    def __repr__(self) -> str:
        return f"Bundle({len(self.parts)} parts, {self.nbytes} bytes)"


def unbundled(buffer: Mapping[Hashable, Any], bundles: Mapping[Hashable, Sequence[Hashable]]) -> dict[Hashable, Any]:
    """A device's chunks with every bundle opened (recursively) into the chunks it carries.

    Parameters
    ----------
    buffer : mapping
        Key -> chunk, where some keys may be bundles.
    bundles : mapping
        Bundle key -> the keys of its parts, in the order of ``Bundle.parts``.

    Raises
    ------
    ValueError
        If two bundles (or a bundle and the buffer) carry the same chunk.

    Examples
    --------
    >>> held = {"a": SizeOnly(1), "bc": Bundle((SizeOnly(2), SizeOnly(3)))}
    >>> sorted((k, c.nbytes) for k, c in unbundled(held, {"bc": ("b", "c")}).items())
    [('a', 1), ('b', 2), ('c', 3)]
    """
    if not bundles:
        return dict(buffer)
    out: dict[Hashable, Any] = {}
    stack = list(buffer.items())
    while stack:
        key, chunk = stack.pop()
        parts = bundles.get(key)
        if parts is not None:
            stack.extend(zip(parts, chunk.parts, strict=True))
        elif key in out:
            raise ValueError(f"chunk {key!r} is held twice")
        else:
            out[key] = chunk
    return out


def made_of(key: Hashable, bundles: Mapping[Hashable, Sequence[Hashable]], is_sent: Callable[[Hashable], bool]) -> list[Hashable]:
    """What a device takes to make the bundle ``key``: the keys it must hold by then.

    Each part the device is sent (``is_sent(part)``) or that is no bundle (a
    chunk it holds from the start); a part that is a bundle it is never sent,
    it makes in turn, from that bundle's own parts.

    Examples
    --------
    >>> table = {"abc": ("ab", "c"), "ab": ("a", "b")}
    >>> made_of("abc", table, lambda key: key == "c")  # "ab" is made again from a and b
    ['a', 'b', 'c']
    >>> made_of("abc", table, lambda key: key in ("ab", "c"))
    ['ab', 'c']
    """
    out: list[Hashable] = []
    for part in bundles[key]:
        if part in bundles and not is_sent(part):
            out.extend(made_of(part, bundles, is_sent))
        else:
            out.append(part)
    return out


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
