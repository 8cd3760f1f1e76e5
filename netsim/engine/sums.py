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

:func:`summed` adds every sum in waves too, but keeps only the sums no other sum
adds (the last of each chain): while the waves run, a sum's row is used again once
the sums that add it are done, so the additions stay in a few rows of memory (where
every sum is added only in the next wave, as a ring's partial sums are, a wave's
sums are written in place into one of two blocks of rows, and read there).
:class:`Sums` hands the kept ones back as views and the others, on first read,
from :func:`reduced` (the same additions again, bit for bit the same).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from netsim.engine.compiled_cache import njit

__all__ = ["Sums", "reduced", "summed"]


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


@njit(cache=True)
def _places(order, ends, sum_of, sum_with, first):
    """Where each sum waits until the sums adding it are done: a row of the working rows (``live``, -1 if none
    adds it), or, for a sum no other adds, a row of the kept ones (``last``, -1 otherwise). ``order`` is the
    sums by wave, a wave ending at each of ``ends``; a row is used again once its sum's last adder's wave is done."""
    n = len(sum_of)
    uses = np.zeros(n, np.int64)
    for r in range(n):
        if sum_of[r] >= first:
            uses[sum_of[r] - first] += 1
        if sum_with[r] >= first:
            uses[sum_with[r] - first] += 1
    live, last = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    free = np.empty(n, np.int64)
    n_free, n_live, n_last, lo = 0, 0, 0, 0
    for hi in ends:
        for i in range(lo, hi):
            r = order[i]
            if uses[r] == 0:
                last[r] = n_last
                n_last += 1
            elif n_free:
                n_free -= 1
                live[r] = free[n_free]
            else:
                live[r] = n_live
                n_live += 1
        for i in range(lo, hi):
            r = order[i]
            for c in (sum_of[r], sum_with[r]):
                if c >= first:
                    uses[c - first] -= 1
                    if uses[c - first] == 0:
                        free[n_free] = live[c - first]
                        n_free += 1
        lo = hi
    return live, last, n_live, n_last


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
    rowed = _in_rows(chunks, sum_of, sum_with, rows, row_of)
    if rowed is None:  # one at a time, in the order they happened
        made: list[Any] = list(chunks)
        made.extend(made[a] + made[b] for a, b in zip(sum_of.tolist(), sum_with.tolist(), strict=True))
        sums = made[first:]
        del made
        nbytes = np.fromiter((chunk.nbytes for chunk in sums), np.int64, n)
        out = np.full(n, None, object)
        out[kept] = np.fromiter(itertools.compress(sums, kept.tolist()), object, int(np.count_nonzero(kept)))
        return out, nbytes
    base, row_of, probe = rowed
    wave = _waves(sum_of, sum_with, first)
    order = np.argsort(wave, kind="stable")  # the sums by wave, in the order they happened within one
    row = np.empty(n, np.int64)
    row[order] = np.arange(n)
    pool = np.empty((n, *probe.shape), probe.dtype)
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


def _in_rows(
    chunks: Sequence[Any], sum_of: np.ndarray, sum_with: np.ndarray, rows: np.ndarray | None, row_of: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """When the sums can be added in waves of rows (see the module): the starting chunks' values as rows
    (chunk c is ``base[row_of[c]]``, for those the sums add), ``row_of`` and the first sum (``probe``); else None."""
    first = len(chunks)
    if rows is not None and row_of is not None and rows.ndim > 1 and len(row_of) == first:
        base, kind = rows, (rows.shape[1:], rows.dtype)
    else:
        operands = np.concatenate((sum_of, sum_with))
        starting = np.unique(operands[operands < first])
        del operands
        kind = _one_class(chunks, starting)
        base = None
    if kind is None:
        return None
    probe = chunks[int(sum_of[0])] + chunks[int(sum_with[0])]
    if type(probe) is not np.ndarray or (probe.shape, probe.dtype) != kind:
        return None
    if base is None:  # the starting operands' values, row by row
        base, row_of = np.stack([chunks[c] for c in starting.tolist()]), np.full(first, -1, np.int64)
        row_of[starting] = np.arange(len(starting))
    return base, row_of, probe


def summed(chunks: Sequence[Any], sum_of: np.ndarray, sum_with: np.ndarray, rows: np.ndarray | None = None, row_of: np.ndarray | None = None) -> Sums | None:
    """The sums ``chunks[sum_of[r]] + chunks[sum_with[r]]`` (as :func:`reduced`), all added now, in waves,
    keeping only the last of each chain (see the module); None where they cannot come in waves of rows
    (then :func:`reduced` adds them one at a time). Exceptions from an addition propagate.

    Examples
    --------
    Chunk 3 is chunk 0 plus chunk 1; chunk 4 is chunk 3 plus chunk 2: only chunk 4 is kept,
    chunk 3 is added again when read.

    >>> chunks = list(np.arange(6.0).reshape(3, 2))
    >>> sums = summed(chunks, np.array([0, 3]), np.array([1, 2]))
    >>> sums[1].tolist(), sums[0].tolist(), sums.nbytes
    ([6.0, 9.0], [2.0, 4.0], 16)
    """
    first, n = len(chunks), len(sum_of)
    rowed = _in_rows(chunks, sum_of, sum_with, rows, row_of) if n else None
    if rowed is None or rowed[2].dtype.kind == "O":
        return None
    base, row_of, probe = rowed
    wave = _waves(sum_of, sum_with, first)
    order = np.argsort(wave, kind="stable")  # the sums by wave, in the order they happened within one
    ends = np.append(np.flatnonzero(np.diff(wave[order])) + 1, n)
    if _in_chain(wave, sum_of, sum_with, first):
        added = np.zeros(n, np.bool_)  # (by another sum)
        for operand in (sum_of, sum_with):
            added[operand[operand >= first] - first] = True
        last = np.full(n, -1, np.int64)  # the last of each chain, numbered by wave
        ends_chains = order[~added[order]]
        last[ends_chains] = np.arange(len(ends_chains))
        kept = np.empty((len(ends_chains), *probe.shape), probe.dtype)
        _chained(base, row_of, order, ends, sum_of, sum_with, first, last, kept)
        return Sums(chunks, sum_of, sum_with, (base, row_of), kept, last, probe.nbytes)
    live, last, n_live, n_last = _places(order, ends, sum_of, sum_with, first)
    kept = np.empty((n_last, *probe.shape), probe.dtype)
    out = np.empty((int(np.diff(ends, prepend=0).max()), *probe.shape), probe.dtype)
    work = np.empty((n_live, *probe.shape), probe.dtype)
    for lo, hi in zip([0, *ends[:-1].tolist()], ends.tolist(), strict=True):
        these = order[lo:hi]
        added = np.add(_rows(base, row_of, work, live, first, sum_of[these]), _rows(base, row_of, work, live, first, sum_with[these]), out=out[: hi - lo])
        into = live[these]
        if (into >= 0).all():
            _as_items(work)[into] = _as_items(added)
        else:
            working = into >= 0
            _as_items(work)[into[working]] = _as_items(added)[working]
            _as_items(kept)[last[these[~working]]] = _as_items(added)[~working]
    return Sums(chunks, sum_of, sum_with, (base, row_of), kept, last, probe.nbytes)


def _in_chain(wave: np.ndarray, sum_of: np.ndarray, sum_with: np.ndarray, first: int) -> bool:
    """Whether every sum that another adds is added only in the very next wave (as a ring's partial sums are)."""
    for operand in (sum_of, sum_with):
        adding = operand >= first
        if not np.array_equal(wave[operand[adding] - first] + 1, wave[adding]):
            return False
    return True


def _chained(
    base: np.ndarray,
    row_of: np.ndarray,
    order: np.ndarray,
    ends: np.ndarray,
    sum_of: np.ndarray,
    sum_with: np.ndarray,
    first: int,
    last: np.ndarray,
    kept: np.ndarray,
) -> None:
    """:func:`summed`'s waves when each sum is added only in the next wave (:func:`_in_chain`): a wave's sums are
    written in place, in order, into one of two blocks of rows, the next wave reads them there; the last of
    each chain is copied to ``kept`` (row ``last[r]``)."""
    n = len(order)
    starts = np.concatenate(([0], ends[:-1]))
    at = np.empty(n, np.int64)  # each sum's row in its wave's block
    at[order] = np.arange(n) - np.repeat(starts, ends - starts)
    blocks = np.empty((2, int((ends - starts).max()), *base.shape[1:]), base.dtype)
    per_wave = [np.add.reduceat(flags[order].astype(np.int64), starts).tolist() for flags in (sum_of >= first, sum_with >= first, last >= 0)]  # sums, kept
    where = []  # each operand's row, in order: in its wave's block for a sum, in base for a starting chunk
    for operand in (sum_of, sum_with):
        numbers = operand[order]
        summed = numbers >= first
        row = np.empty(n, np.int64)
        row[summed] = at[numbers[summed] - first]
        row[~summed] = row_of[numbers[~summed]]
        where.append((row, summed))
    for i, (lo, hi) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        previous = blocks[(i + 1) % 2]
        values = []
        for (row, summed), counts in zip(where, per_wave, strict=False):
            if counts[i] == 0:
                values.append(np.take(base, row[lo:hi], axis=0))
            elif counts[i] == hi - lo:
                values.append(np.take(previous, row[lo:hi], axis=0))
            else:
                value = np.empty((hi - lo, *base.shape[1:]), base.dtype)
                value[summed[lo:hi]] = previous[row[lo:hi][summed[lo:hi]]]
                value[~summed[lo:hi]] = base[row[lo:hi][~summed[lo:hi]]]
                values.append(value)
        added = np.add(values[0], values[1], out=blocks[i % 2][: hi - lo])
        if per_wave[2][i]:
            final = last[order[lo:hi]]
            kept[final[final >= 0]] = added[final >= 0]


def _as_items(rows: np.ndarray) -> np.ndarray:
    """C-contiguous rows as one item each (raw bytes: copied as they are, and faster than rows of numbers), when they hold any."""
    elements = math.prod(rows.shape[1:])
    return rows.reshape(len(rows), elements).view(np.dtype((np.void, rows.itemsize * elements))).reshape(len(rows)) if elements else rows


class Sums:
    """A run's sums by number (sum r is ``chunks[sum_of[r]] + chunks[sum_with[r]]``, as :func:`summed` made them).

    The last of each chain are rows of ``kept`` (row ``last[r]``), handed back as views; the
    others are added again, all in waves (:func:`reduced`), when one is first read. Each sum
    is the same object however often it is read. Every sum weighs ``nbytes``.
    """

    def __init__(
        self,
        chunks: Sequence[Any],
        sum_of: np.ndarray,
        sum_with: np.ndarray,
        rows: tuple[np.ndarray, np.ndarray],
        kept: np.ndarray,
        last: np.ndarray,
        nbytes: int,
    ) -> None:
        self._chunks, self._sum_of, self._sum_with, self._rows = chunks, sum_of, sum_with, rows
        self._kept, self._last = kept, last.tolist()
        self._read: dict[int, np.ndarray] = {}
        self._rest: np.ndarray | None = None
        self.nbytes = int(nbytes)

    def __len__(self) -> int:
        return len(self._last)

    def __getitem__(self, r: int) -> np.ndarray:
        chunk = self._read.get(r)
        if chunk is None:
            row = self._last[r]
            if row >= 0:
                chunk = self._kept[row]
            else:
                if self._rest is None:
                    last = np.asarray(self._last)
                    self._rest = reduced(self._chunks, self._sum_of, self._sum_with, last < 0, *self._rows)[0]
                chunk = self._rest[r]
            self._read[r] = chunk
        return chunk


def _rows(base: np.ndarray, row_of: np.ndarray, pool: np.ndarray, row: np.ndarray, first: int, numbers: np.ndarray) -> np.ndarray:
    """The values of chunks ``numbers``: starting chunks from ``base`` (chunk c is ``base[row_of[c]]``), sums from ``pool``."""
    summed = numbers >= first
    if summed.all():
        return np.take(pool, row[numbers - first], axis=0)
    if not summed.any():
        return np.take(base, row_of[numbers], axis=0)
    values = np.empty((len(numbers), *pool.shape[1:]), pool.dtype)
    values[summed] = pool[row[numbers[summed] - first]]
    values[~summed] = base[row_of[numbers[~summed]]]
    return values
