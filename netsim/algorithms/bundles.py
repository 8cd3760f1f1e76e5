"""Bundles: messages made of several chunks.

A ring all-gather on real hardware sends, at each step, everything a chip
received at the step before as one message, not one message per block. A
schedule says so with *bundles*: a bundle has a key of its own, like a chunk,
and a list of parts (chunks or other bundles). The table of them is a
:class:`BundleTable` (any mapping from bundle key to part keys will do).

* The device that first sends a bundle makes it from the parts it holds: a
  :class:`Bundle`, one payload that refers to its parts (never copies them)
  and weighs what they weigh together. Devices it reaches keep it whole.
* :func:`unbundled` opens a device's bundles back into its chunks.
* :func:`made_of_arrays` says what devices must hold to make bundles, for many
  at once, on integer codes.
* :func:`opened_codes` gives the chunks each of many keys carries.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["Bundle", "BundleTable", "leaves", "made_of_arrays", "open_once", "opened_codes", "unbundled"]

Key = tuple[int, int]


class Bundle:
    """Several chunks sent as one message: the parts, by reference, and their total size.

    Examples
    --------
    >>> a, b = np.zeros(3, np.float32), np.ones(5, np.float32)
    >>> bundle = Bundle((a, b))
    >>> bundle.nbytes, bundle.parts[1] is b
    (32, True)
    >>> Bundle((bundle, np.zeros(2)))
    Bundle(2 parts, 48 bytes)
    """

    __slots__ = ("nbytes", "parts")

    def __init__(self, parts: Sequence[Any]) -> None:
        self.parts = tuple(parts)
        self.nbytes = sum([part.nbytes for part in self.parts])

    def __repr__(self) -> str:
        return f"Bundle({len(self.parts)} parts, {self.nbytes} bytes)"


class BundleTable(Mapping):
    """Bundle key -> its parts' keys, kept as integer arrays: a read-only mapping.

    Parameters (kept as ``key_array``, ``ptr``, ``part_array``)
    ----------
    keys : int array ``[bundles, 2]``
        Each bundle's key ``(block, piece)``.
    ptr : int array ``[bundles + 1]``
        Bundle k's parts are ``parts[ptr[k]:ptr[k + 1]]``.
    parts : int array ``[parts, 2]``
        The parts' keys ``(block, piece)``, bundle after bundle.

    Examples
    --------
    >>> table = BundleTable.from_dict({(4, 0): ((0, 0), (2, 0)), (5, 0): ((4, 0), (1, 0))})
    >>> table[(5, 0)], (3, 0) in table, len(table)
    (((4, 0), (1, 0)), False, 2)
    >>> key_code, ptr, part_code = table.codes(pieces=1)
    >>> key_code.tolist(), ptr.tolist(), part_code.tolist()
    ([4, 5], [0, 2, 4], [0, 2, 4, 1])
    """

    def __init__(self, keys: np.ndarray, ptr: np.ndarray, parts: np.ndarray) -> None:
        self.key_array = np.asarray(keys, np.int64).reshape(-1, 2)
        self.ptr = np.asarray(ptr, np.int64)
        self.part_array = np.asarray(parts, np.int64).reshape(-1, 2)
        if len(self.ptr) != len(self.key_array) + 1 or self.ptr[-1] != len(self.part_array):
            raise ValueError(f"ptr must have {len(self.key_array) + 1} entries ending at {len(self.part_array)}")
        self._row: dict[Key, int] | None = None
        self._parts: list[Key] | None = None
        self._bounds: list[int] = []

    @classmethod
    def from_dict(cls, table: Mapping[Key, Sequence[Key]]) -> BundleTable:
        """The table of a plain mapping of bundle key -> part keys."""
        keys = np.array(list(table), np.int64).reshape(-1, 2)
        lengths = np.fromiter((len(parts) for parts in table.values()), np.int64, len(table))
        ptr = np.zeros(len(table) + 1, np.int64)
        np.cumsum(lengths, out=ptr[1:])
        parts = np.array([part for parts in table.values() for part in parts], np.int64).reshape(-1, 2)
        return cls(keys, ptr, parts)

    def _rows(self) -> dict[Key, int]:
        if self._row is None:
            self._row = {(b, p): k for k, (b, p) in enumerate(self.key_array.tolist())}
        return self._row

    def __getitem__(self, key: Hashable) -> tuple[Key, ...]:
        parts = self.get(key, _MISSING)
        if parts is _MISSING:
            raise KeyError(key)
        return parts

    def get(self, key: Hashable, default: Any = None) -> tuple[Key, ...] | Any:
        """The parts of bundle ``key``, or ``default`` if it is none (fast: the engine asks for every bundle it makes)."""
        k = self._rows().get(key)
        if k is None:
            return default
        if self._parts is None:
            self._parts, self._bounds = list(map(tuple, self.part_array.tolist())), self.ptr.tolist()
        return tuple(self._parts[self._bounds[k] : self._bounds[k + 1]])

    def __contains__(self, key: object) -> bool:
        return key in self._rows()

    def __iter__(self) -> Iterator[Key]:
        return iter(self._rows())

    def __len__(self) -> int:
        return len(self.key_array)

    def codes(self, pieces: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(key_code, ptr, part_code)``, keys as ``block * pieces + piece``."""
        return self.key_array @ np.array([pieces, 1]), self.ptr, self.part_array @ np.array([pieces, 1])


_MISSING = object()


def as_table(bundles: Mapping[Hashable, Sequence[Hashable]]) -> BundleTable:
    """``bundles`` as a :class:`BundleTable` (itself if it is one)."""
    return bundles if isinstance(bundles, BundleTable) else BundleTable.from_dict(bundles)


def unbundled(buffer: Mapping[Hashable, Any], bundles: Mapping[Hashable, Sequence[Hashable]], sums: bool = False) -> dict[Hashable, Any]:
    """A device's chunks with every bundle opened (recursively) into the chunks it carries.

    ``sums``: a reduction's buffer, whose gather brings the sums in bundles over the
    device's own contributions: a chunk a bundle carries replaces the one held alone.

    Raises
    ------
    ValueError
        If two bundles (or, unless ``sums``, a bundle and the buffer) carry the same chunk.

    Examples
    --------
    >>> held = {"a": np.zeros(1), "bc": Bundle((np.zeros(2), np.zeros(3)))}
    >>> sorted((k, c.size) for k, c in unbundled(held, {"bc": ("b", "c")}).items())
    [('a', 1), ('b', 2), ('c', 3)]
    """
    if not bundles:
        return dict(buffer)
    out: dict[Hashable, Any] = {}
    alone = {key: chunk for key, chunk in buffer.items() if key not in bundles} if sums else out
    stack = [(key, chunk) for key, chunk in buffer.items() if key in bundles] if sums else list(buffer.items())
    while stack:
        key, chunk = stack.pop()
        parts = bundles.get(key)
        if parts is not None:
            stack.extend(zip(parts, chunk.parts, strict=True))
        elif key in out:
            raise ValueError(f"chunk {key!r} is held twice")
        else:
            out[key] = chunk
    return {**alone, **out} if sums else out


def leaves(key: Hashable, bundles: Mapping[Hashable, Sequence[Hashable]]) -> list[Hashable]:
    """The chunk keys ``key`` carries: itself if it is no bundle, else its parts', every bundle opened.

    Examples
    --------
    >>> leaves("abc", {"abc": ("ab", "c"), "ab": ("a", "b")}), leaves("a", {})
    (['a', 'b', 'c'], ['a'])
    """
    parts = bundles.get(key)
    return [key] if parts is None else [leaf for part in parts for leaf in leaves(part, bundles)]


def open_once(codes: tuple[np.ndarray, np.ndarray, np.ndarray], bundle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For bundle codes, ``(which, part)``: every part of each, ``which`` indexing ``bundle`` (bundle by bundle).

    Examples
    --------
    >>> codes = BundleTable.from_dict({(5, 0): ((4, 0), (2, 0)), (4, 0): ((0, 0), (1, 0))}).codes(1)
    >>> which, part = open_once(codes, np.array([4, 5]))
    >>> which.tolist(), part.tolist()
    ([0, 0, 1, 1], [0, 1, 4, 2])
    """
    key_code, ptr, part_code = codes
    order = np.argsort(key_code)
    row = order[np.searchsorted(key_code, bundle, sorter=order)]
    counts = ptr[row + 1] - ptr[row]
    starts = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    which = np.repeat(np.arange(len(bundle), dtype=np.int64), counts)
    return which, part_code[np.repeat(ptr[row] - starts, counts) + np.arange(int(counts.sum()))]


def made_of_arrays(
    codes: tuple[np.ndarray, np.ndarray, np.ndarray], device: np.ndarray, bundle: np.ndarray, is_sent: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """What each of many devices must hold to make a bundle, keys as integer codes.

    Each part the device is sent (``is_sent``) or that is no bundle (a chunk it
    holds from the start); a part that is a bundle it is never sent, it makes in
    turn, from that bundle's own parts.

    Parameters
    ----------
    codes : tuple of arrays
        ``BundleTable.codes(pieces)``.
    device, bundle : int arrays
        Who makes which bundle.
    is_sent : callable
        ``is_sent(devices, codes)``: bool array, whether each device is sent that key.

    Returns
    -------
    which, part : int arrays
        Pair ``which[k]`` must hold ``part[k]``, sorted by ``which`` (parts in no set order).

    Examples
    --------
    >>> codes = BundleTable.from_dict({(5, 0): ((4, 0), (2, 0)), (4, 0): ((0, 0), (1, 0))}).codes(1)
    >>> which, part = made_of_arrays(codes, np.array([7, 8]), np.array([5, 5]), lambda d, c: (d == 8) & (c == 4))
    >>> which.tolist(), part.tolist()
    ([0, 0, 0, 1, 1], [2, 0, 1, 4, 2])
    """
    is_bundle = np.zeros(int(max(codes[0].max(initial=-1), codes[2].max(initial=-1))) + 2, bool)
    is_bundle[codes[0]] = True
    out_which, out_part = [], []
    which, device, bundle = np.arange(len(bundle), dtype=np.int64), np.asarray(device, np.int64), np.asarray(bundle, np.int64)
    while len(bundle):
        k, part = open_once(codes, bundle)
        which, device = which[k], device[k]
        again = is_bundle[np.minimum(part, len(is_bundle) - 1)] & (part >= 0)
        if again.any():
            again[again] = ~is_sent(device[again], part[again])
        out_which.append(which[~again])
        out_part.append(part[~again])
        which, device, bundle = which[again], device[again], part[again]
    which = np.concatenate(out_which) if out_which else np.zeros(0, np.int64)
    part = np.concatenate(out_part) if out_part else np.zeros(0, np.int64)
    order = np.argsort(which, kind="stable")
    return which[order], part[order]


def opened_codes(codes: tuple[np.ndarray, np.ndarray, np.ndarray], keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The chunk codes each key carries, every bundle opened: key k's are ``flat[ptr[k]:ptr[k + 1]]`` (in no set order).

    Examples
    --------
    >>> codes = BundleTable.from_dict({(5, 0): ((4, 0), (2, 0)), (4, 0): ((0, 0), (1, 0))}).codes(1)
    >>> ptr, flat = opened_codes(codes, np.array([3, 5, 4]))
    >>> ptr.tolist(), flat.tolist()
    ([0, 1, 4, 6], [3, 2, 0, 1, 0, 1])
    """
    keys = np.asarray(keys, np.int64)
    plain = ~np.isin(keys, codes[0])
    bundles = np.flatnonzero(~plain)
    which, part = made_of_arrays(codes, np.zeros(len(bundles), np.int64), keys[bundles], lambda d, c: np.zeros(len(c), bool))
    which = np.concatenate([bundles[which], np.flatnonzero(plain)])
    part = np.concatenate([part, np.asarray(keys, np.int64)[plain]])
    order = np.argsort(which, kind="stable")
    ptr = np.zeros(len(keys) + 1, np.int64)
    np.cumsum(np.bincount(which, minlength=len(keys)), out=ptr[1:])
    return ptr, part[order]
