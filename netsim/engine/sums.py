"""The compiled player's reductions, computed after its loop: in waves of whole arrays where the chunks allow.

The loop notes each reduction (``held + arrived``, as chunk numbers) in the order
it happened; :func:`reduced` computes them. A sum can be computed once its two
operands are: a reduction's *wave* is one more than the latest wave of its
operands (the chunks devices started with are wave 0). When every operand is an
array of one shape and dtype, and adding two gives an array of that shape and
dtype, each wave is one NumPy addition over rows: ``np.add(held_rows,
arrived_rows, out=...)`` adds element by element with the same operands in the
same order as ``held + arrived`` one at a time, so every sum is bit for bit the
same. Otherwise the sums are added one at a time, in the order they happened.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit

__all__ = ["reduced"]


@njit(cache=True)
def _waves(sum_of, sum_with, first):
    """Each reduction's wave: one more than its operands' latest (the starting chunks, numbers below ``first``, are wave 0)."""
    wave = np.zeros(len(sum_of), np.int64)
    for r in range(len(sum_of)):
        a, b = sum_of[r] - first, sum_with[r] - first
        w = 0
        if a >= 0:
            w = wave[a]
        if b >= 0 and wave[b] > w:
            w = wave[b]
        wave[r] = w + 1
    return wave


def _one_class(chunks: Sequence[Any], numbers: np.ndarray) -> tuple[tuple[int, ...], np.dtype] | None:
    """The shape and dtype every chunk of ``numbers`` has, when they are arrays of one shape (not 0-d) and dtype."""
    if not len(numbers):
        return None
    picked = [chunks[c] for c in numbers.tolist()]
    if any(type(chunk) is not np.ndarray for chunk in picked):
        return None
    shape, dtype = picked[0].shape, picked[0].dtype
    if not shape or any(chunk.shape != shape or chunk.dtype != dtype for chunk in picked):
        return None
    return shape, dtype


def reduced(
    chunks: Sequence[Any], sum_of: np.ndarray, sum_with: np.ndarray, kept: np.ndarray, rows: np.ndarray | None = None, row_of: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The sums ``chunks[sum_of[r]] + chunks[sum_with[r]]``, in order (an object array), where sum r is
    chunk ``len(chunks) + r``, and their sizes.

    Only the sums ``kept`` says (a bool per sum) are handed back (None for the others),
    each a view of one array holding just those when they come in waves. ``rows``, if
    given, holds every chunk's values: chunk c is ``rows[row_of[c]]`` (the same shape,
    dtype and values). Exceptions from an addition propagate.

    Examples
    --------
    Chunk 3 is chunk 0 plus chunk 1; chunk 4, the one kept, is chunk 3 plus chunk 2:

    >>> chunks = list(np.arange(6.0).reshape(3, 2))
    >>> sums, nbytes = reduced(chunks, np.array([0, 3]), np.array([1, 2]), np.array([False, True]))
    >>> sums[0] is None, sums[1].tolist(), nbytes.tolist()
    (True, [6.0, 9.0], [16, 16])
    """
    first, n = len(chunks), len(sum_of)
    if n == 0:
        return np.zeros(0, object), np.zeros(0, np.int64)
    base: np.ndarray | None = None
    if rows is not None and row_of is not None and rows.ndim > 1 and len(row_of) == first:
        base, kind = rows, (rows.shape[1:], rows.dtype)
    else:
        operands = np.concatenate((sum_of, sum_with))
        starting = np.unique(operands[operands < first])
        del operands
        kind = _one_class(chunks, starting)
    if kind is not None:
        probe = chunks[int(sum_of[0])] + chunks[int(sum_with[0])]
        if type(probe) is not np.ndarray or (probe.shape, probe.dtype) != kind:
            kind = None
    if kind is None:  # one at a time, in the order they happened
        made: list[Any] = list(chunks)
        made.extend(made[a] + made[b] for a, b in zip(sum_of.tolist(), sum_with.tolist(), strict=True))
        sums = made[first:]
        del made
        nbytes = np.fromiter((chunk.nbytes for chunk in sums), np.int64, n)
        out = np.full(n, None, object)
        out[kept] = np.fromiter(itertools.compress(sums, kept.tolist()), object, int(np.count_nonzero(kept)))
        return out, nbytes
    shape, dtype = kind
    if base is None:  # the starting operands' values, row by row
        base, row_of = np.stack([chunks[c] for c in starting.tolist()]), np.full(first, -1, np.int64)
        row_of[starting] = np.arange(len(starting))
    wave = _waves(sum_of, sum_with, first)
    order = np.argsort(wave, kind="stable")  # the sums by wave, in the order they happened within one
    row = np.empty(n, np.int64)
    row[order] = np.arange(n)
    pool = np.empty((n, *shape), dtype)
    ends = np.flatnonzero(np.diff(wave[order])) + 1
    for lo, hi in zip([0, *ends.tolist()], [*ends.tolist(), n], strict=True):
        these = order[lo:hi]
        np.add(_rows(base, row_of, pool, row, first, sum_of[these]), _rows(base, row_of, pool, row, first, sum_with[these]), out=pool[lo:hi])
    keep_rows = row[kept]
    if len(keep_rows) < n:  # (only what the buffers keep stays in memory)
        pool = pool[np.sort(keep_rows)]
        row[kept] = np.argsort(np.argsort(keep_rows))
    out = np.full(n, None, object)
    out[kept] = np.fromiter(pool, object, len(pool))[row[kept]]  # (a view of each row)
    return out, np.full(n, probe.nbytes, np.int64)


def _rows(base: np.ndarray, row_of: np.ndarray, pool: np.ndarray, row: np.ndarray, first: int, numbers: np.ndarray) -> np.ndarray:
    """The values of chunks ``numbers``: starting chunks from ``base`` (chunk c is ``base[row_of[c]]``), sums from ``pool``."""
    summed = numbers >= first
    if summed.all():
        return pool[row[numbers - first]]
    if not summed.any():
        return base[row_of[numbers]]
    values = np.empty((len(numbers), *pool.shape[1:]), pool.dtype)
    values[summed] = pool[row[numbers[summed] - first]]
    values[~summed] = base[row_of[numbers[~summed]]]
    return values
