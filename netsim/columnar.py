"""NumPy helpers for columns of millions of rows: stable orders and dense factorisation.

A big run has millions of transfers and link crossings. Sorting them is cheap
with NumPy's fast (unstable) sort, but ``np.argsort(kind="stable")`` on int64
is a Timsort, several times slower (and its radix sort of small ints is slow to
start), and ``np.unique(return_inverse=True)`` sorts too. On this kind of machine fresh memory is dear as well (every new
page costs a fault), so these helpers also keep their temporaries few.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["AT_ONCE", "factorize", "in_sorted", "index_dtype", "searchsorted_many", "signed_ints", "stable_order"]


AT_ONCE = 1 << 22
"""Entries a pass over a big run's columns takes at a time where a whole-column temporary is not needed
(32 MiB of int64: a 12.6 M-transfer run's temporaries would otherwise be made beside its columns)."""


def stable_order(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` for non-negative ints, several times faster.

    A permutation of ``0..n-1`` is inverted directly; other values are packed
    with their position into one unique int64, so the fast unstable sort gives
    the stable order.

    Examples
    --------
    >>> stable_order(np.array([2, 0, 2, 1, 0])).tolist()
    [1, 4, 3, 0, 2]
    >>> stable_order(np.array([2, 0, 1])).tolist()
    [1, 2, 0]
    """
    n = len(values)
    if n == 0:
        return np.zeros(0, np.int64)
    low, top = int(values.min()), int(values.max())
    if low < 0 or top >= 2**62 // n:
        return np.argsort(values, kind="stable")
    if top < 2**15 and n >= 2**16:  # few distinct values (links, devices): NumPy's radix sort of int16, in one pass
        return np.argsort(values.astype(np.int16), kind="stable")
    positions = np.arange(n, dtype=np.int64)
    if low == 0 and top == n - 1:  # perhaps a permutation (each transfer crossing one link, say)
        order = np.full(n, -1, np.int64)
        order[values] = positions
        # n values in range(n) fill all n slots only if no two are equal: no -1 left means a permutation.
        if int(order.min()) >= 0:
            return order
        del order
    packed = values.astype(np.int64)
    packed *= n
    packed += positions
    del positions
    packed.sort()
    packed %= n
    return packed


def factorize(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for non-negative ints (inverse flat).

    When the codes span a range not much wider than their number, a table over
    the range replaces the sort (and the inverse is int32, half the memory).

    Examples
    --------
    >>> unique, inverse = factorize(np.array([7, 3, 7, 9]))
    >>> unique.tolist(), inverse.tolist()
    ([3, 7, 9], [1, 0, 1, 2])
    """
    n = len(codes)
    if n == 0:
        return np.zeros(0, codes.dtype), np.zeros(0, np.int64)
    low, high = int(codes.min()), int(codes.max())
    if low >= 0 and high >= 4 * n + 1024 and high < 2**62 // n:  # sparse: the codes sorted with their positions
        packed = codes.astype(np.int64)
        packed *= n
        packed += np.arange(n, dtype=np.int64)
        packed.sort()
        position = packed % n
        packed //= n
        new = np.empty(n, bool)
        new[0] = True
        np.not_equal(packed[1:], packed[:-1], out=new[1:])
        unique = packed[new].astype(codes.dtype, copy=False)
        inverse = np.empty(n, np.int64)
        inverse[position] = np.cumsum(new) - 1
        return unique, inverse
    if low < 0 or high >= 4 * n + 1024:
        unique, inverse = np.unique(codes, return_inverse=True)
        return unique, inverse.reshape(-1).astype(np.int64, copy=False)
    present = np.zeros(high + 1, bool)
    present[codes] = True
    unique = np.flatnonzero(present).astype(codes.dtype, copy=False)
    rank = np.cumsum(present, dtype=index_dtype(high))
    rank -= 1
    return unique, rank[codes]


def in_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Whether each value is in ``sorted_set`` (sorted ascending): ``np.isin`` without sorting again.

    Examples
    --------
    >>> in_sorted(np.array([3, 4, 9, 0]), np.array([0, 3, 5])).tolist()
    [True, False, False, True]
    """
    if not len(sorted_set):
        return np.zeros(len(values), bool)
    spot = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[spot] == values


def searchsorted_many(sorted_values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``np.searchsorted(sorted_values, queries)`` for non-negative int queries, the queries taken in sorted order.

    A binary search per query in no order reads memory at random; in sorted order
    (packed with their positions, NumPy's fast sort) it is several times faster
    for a million queries.

    Examples
    --------
    >>> searchsorted_many(np.array([1, 3, 5]), np.array([4, 0, 5, 9])).tolist()
    [2, 0, 2, 3]
    """
    n = len(queries)
    if n < 2**16 or int(queries.min()) < 0 or int(queries.max()) >= 2**62 // n:
        return np.searchsorted(sorted_values, queries)
    packed = queries.astype(np.int64)
    packed *= n
    packed += np.arange(n, dtype=np.int64)
    packed.sort()
    where = packed % n
    packed //= n
    out = np.empty(n, np.int64)
    out[where] = np.searchsorted(sorted_values, packed)
    return out


def signed_ints(values: Any) -> np.ndarray:
    """An array of signed ints as it is (int32 or int64: a program's dependency lists are int32 while they fit), anything else as int64.

    Examples
    --------
    >>> signed_ints(np.arange(3, dtype=np.int32)).dtype.name, signed_ints([1, 2]).dtype.name
    ('int32', 'int64')
    """
    values = np.asarray(values)
    return values if values.dtype.kind == "i" else values.astype(np.int64)


def index_dtype(*bounds: int) -> type:
    """The integer type for numbers below every bound: int32 (half the memory) while they fit, else int64.

    Examples
    --------
    >>> index_dtype(10**6, 4 * 10**7).__name__, index_dtype(10**6, 2**31).__name__
    ('int32', 'int64')
    """
    return np.int32 if max(bounds, default=0) < 2**31 else np.int64
