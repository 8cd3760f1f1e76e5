"""JAX's output from the chunks each device ends with, and its check against the NumPy reference.

After a run every device holds chunks ``(block, piece)``; a layout from
:mod:`netsim.semantics` says where each block goes in JAX's output.
:func:`stacked_output` writes the whole stacked output, :func:`output_row` one device's row
(for a :class:`~netsim.semantics.chunks.LazyOutput`). :func:`first_difference`
compares a materialised output with the NumPy reference, a part of a row at a
time; :func:`check_lazy_output` checks a lazy one without materialising it.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import operator
import warnings
from typing import Any

import numpy as np

from netsim.algorithms.bundles import unbundled
from netsim.engine import EngineError, Playback
from netsim.engine.table_buffers import TableBuffers
from netsim.network.units import format_bytes
from netsim.semantics.chunks import SLICE_ELEMENTS, LazyOutput, bounded_slices

__all__ = ["SAMPLED_DEVICES", "check_lazy_output", "first_difference", "held_chunks", "output_row", "stacked_output"]

SAMPLED_DEVICES = 2
"""A lazy output's values are checked on this many devices drawn at random (seed 0), plus the first and the last."""


def _is_float(dtype: Any) -> bool:
    """Whether ``dtype`` holds floating-point numbers: NumPy's, or ml_dtypes' (bfloat16, float8_*), which NumPy does not call inexact."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.inexact):
        return True
    if not dtype.type.__module__.startswith("ml_dtypes"):
        return False
    import ml_dtypes

    try:
        ml_dtypes.finfo(dtype)
    except ValueError:  # an ml_dtypes integer (int4)
        return False
    return True


def _eps(dtype: Any) -> float:
    if np.issubdtype(dtype, np.inexact):
        return float(np.finfo(dtype).eps)
    import ml_dtypes

    return float(ml_dtypes.finfo(dtype).eps)


def _matches(actual: np.ndarray, expected: np.ndarray, exact: bool, group_size: int, scale: float) -> bool:
    """Whether ``actual`` equals ``expected``: exactly, or for sums of floats within a few ulps per addend.

    ``scale`` is the largest finite magnitude in the whole reference ``expected`` is
    part of (at least 1); it sets the absolute tolerance. NaN matches NaN and an
    infinity the same infinity (as JAX's sums give them); nothing else matches a
    non-finite value. Compared a slice at a time, so the check needs no temporaries
    the size of the output.
    """
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return False
    slices = bounded_slices(expected.shape, SLICE_ELEMENTS)
    floats = _is_float(expected.dtype)
    if exact or not floats:
        if floats and not np.issubdtype(expected.dtype, np.inexact):  # ml_dtypes: compare as float32, NaN equal to NaN
            return all(
                _same_bits(actual[i], expected[i]) or np.array_equal(actual[i].astype(np.float32), expected[i].astype(np.float32), equal_nan=True)
                for i in slices
            )
        return all(_same_bits(actual[i], expected[i]) or np.array_equal(actual[i], expected[i], equal_nan=floats) for i in slices)
    # Sums in a different order differ by rounding only: allow a few ulps per addend.
    tolerance = 4 * _eps(expected.dtype) * group_size
    if np.issubdtype(expected.dtype, np.complexfloating):  # both parts compared (a cast to float would drop the imaginary one)
        wide = np.complex128 if np.dtype(expected.dtype).itemsize >= 16 else np.complex64
    else:
        wide = np.float64 if np.dtype(expected.dtype).itemsize >= 8 else np.float32
    return all(np.allclose(actual[i].astype(wide), expected[i].astype(wide), rtol=tolerance, atol=tolerance * scale, equal_nan=True) for i in slices)


def _same_bits(actual: np.ndarray, expected: np.ndarray) -> bool:
    """Whether two arrays of one dtype hold the same bits (then they are equal, NaN for NaN): one integer comparison, where
    ``np.array_equal(..., equal_nan=True)`` takes about a hundred times as long; False for elements not of 1, 2, 4 or 8 bytes."""
    unsigned = None if actual.dtype.hasobject else {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(actual.dtype.itemsize)
    return unsigned is not None and bool((actual.view(unsigned) == expected.view(unsigned)).all())


def _largest(expected: np.ndarray, scale: float = 1.0) -> float:
    """The larger of ``scale`` and the largest finite magnitude in ``expected``, a slice at a time.

    Infinities and NaN are left out: they must match exactly, and would otherwise make
    the tolerance infinite (and the check vacuous).
    """
    for i in bounded_slices(np.shape(expected), SLICE_ELEMENTS):
        part = np.abs(np.asarray(expected[i])).astype(np.float64)  # (a complex value's modulus)
        scale = np.maximum(scale, np.max(part, initial=1.0, where=np.isfinite(part)))
    return float(scale)


def first_difference(layout: Any, leaf: np.ndarray, output: np.ndarray, exact: bool, group_size: int) -> int | None:
    """The first device, in the reference's order, whose output differs from the NumPy reference; None if none does.

    Parameters
    ----------
    layout : layout of :mod:`netsim.semantics`
        The collective's layout for the stacked input ``leaf`` (it yields the reference).
    leaf, output : numpy.ndarray
        The stacked input and output ``[n_devices, ...]``.
    exact : bool
        Compare bit for bit (gathers, permutes); else within the tolerance of sums
        of ``group_size`` terms.
    group_size : int

    Examples
    --------
    >>> import numpy as np, netsim
    >>> from netsim.semantics.gather import AllGatherLayout
    >>> x = np.arange(8).reshape(4, 2)
    >>> out = netsim.all_gather(x).output
    >>> layout = AllGatherLayout.check(x, 0, False, None)
    >>> first_difference(layout, x, out, exact=True, group_size=4) is None
    True
    >>> out[3, 0, 0] = 99
    >>> first_difference(layout, x, out, exact=True, group_size=4)
    3

    The reference comes a part of a row at a time (``layout.reference_parts``),
    never a whole row. The tolerance for sums of floats depends on the largest
    value of a device's whole reference, known only at the end: each part is
    compared with the largest value seen so far (a part that matches then also
    matches with the final, larger tolerance), and the devices with a part that
    did not are compared again with the final one.
    """
    strict = exact or not _is_float(leaf.dtype)
    scale: dict[int, float] = {}
    differ: set[int] = set()
    for device, index, expected in layout.reference_parts(leaf):
        scale[device] = 1.0 if strict else _largest(expected, scale.get(device, 1.0))
        if device not in differ and not _matches(output[device, ...][index], expected, exact, group_size, scale[device]):
            differ.add(device)
    if differ and not strict:
        suspects, differ = differ, set()
        for device, index, expected in layout.reference_parts(leaf, devices=suspects):
            if device not in differ and not _matches(output[device, ...][index], expected, exact, group_size, scale[device]):
                differ.add(device)
    return next((device for device in scale if device in differ), None)


def _flat_range(chunks: list[np.ndarray], starts: list[int], start: int, stop: int) -> np.ndarray:
    """Elements ``start:stop`` of the flat chunks laid end to end (``starts``: where each begins).

    A view when they lie in one chunk; otherwise a copy of those elements only.
    """
    i = bisect.bisect_right(starts, start, hi=len(chunks)) - 1
    first = chunks[i][start - starts[i] : stop - starts[i]]
    if first.size == stop - start:
        return first
    parts, got = [first], first.size
    while got < stop - start:
        i += 1
        parts.append(chunks[i][: stop - start - got])
        got += parts[-1].size
    return np.concatenate(parts)


def _chunks_match(chunks: list[np.ndarray], expected: np.ndarray, exact: bool, group_size: int) -> bool:
    """Whether a block's flat chunks, in order, hold ``expected`` (a view into a reference row) in C order.

    Compared a slice at a time, without joining the chunks (as :func:`_matches`
    would compare them joined, the tolerance set by the whole block).
    """
    sizes = [chunk.size for chunk in chunks]
    if sum(sizes) != expected.size:
        return False
    scale = 1.0 if exact or not _is_float(expected.dtype) else _largest(expected)
    starts, position = list(itertools.accumulate(sizes, initial=0)), 0
    for index in bounded_slices(expected.shape, SLICE_ELEMENTS):
        part = expected[index]
        size = np.size(part)
        if not _matches(_flat_range(chunks, starts, position, position + size), np.reshape(part, -1), exact, group_size, scale):
            return False
        position += size
    return True


def _write(target: np.ndarray, pieces: list[np.ndarray]) -> None:
    """Copy a block's pieces, in order, into its place in the output."""
    if sum(p.size for p in pieces) != target.size:
        raise EngineError(f"pieces of {sum(p.size for p in pieces)} elements do not fill a block of {target.size}; this is a netsim bug, please report it")
    if len(pieces) == 1:
        target[...] = pieces[0].reshape(target.shape)
    elif target.flags.c_contiguous:
        flat, offset = target.reshape(-1), 0
        for piece in pieces:
            flat[offset : offset + piece.size] = piece
            offset += piece.size
    else:
        # A strided view: written a slice at a time, copying only slices that straddle two pieces.
        starts, position = list(itertools.accumulate((p.size for p in pieces), initial=0)), 0
        for index in bounded_slices(target.shape, SLICE_ELEMENTS):
            part = target[index]
            part[...] = _flat_range(pieces, starts, position, position + part.size).reshape(part.shape)
            position += part.size


def held_chunks(playback: Playback, device: int, sums: bool = False) -> dict:
    """The chunks a device ends with, ``(block, piece)`` -> chunk, its bundles opened (the buffer itself when there are none;
    ``sums``: a reduction's, whose bundles bring sums over the device's own contributions).

    Examples
    --------
    >>> import numpy as np, netsim
    >>> leaf = netsim.all_gather(np.arange(8).reshape(4, 2)).leaves[0]
    >>> sorted(held_chunks(leaf.playback, 2))[:3]
    [(0, 0), (0, 1), (1, 0)]
    """
    return unbundled(playback.buffers[device], playback.bundles, sums=sums) if playback.bundles else playback.buffers[device]


def stacked_output(collective: str, layout: Any, playback: Playback, pieces: int, dtype: np.dtype) -> np.ndarray:
    """JAX's stacked output, written straight from the chunks each device holds at the end.

    Devices that want no block (ppermute's non-destinations) keep zeros.

    Parameters
    ----------
    collective : str
        Its name, for the error message.
    layout : layout of :mod:`netsim.semantics`
        Which blocks each device wants, and where they go in its output.
    playback : Playback
        What the engine played.
    pieces : int
        Chunks per block (``Schedule.pieces``).
    dtype : numpy.dtype

    Returns
    -------
    numpy.ndarray
        ``[n_devices, *layout.output_shape]``.

    Raises
    ------
    EngineError
        If a device ended without a chunk its output needs (a bug in netsim).

    Examples
    --------
    >>> import numpy as np, netsim
    >>> from netsim.semantics.gather import AllGatherLayout
    >>> x = np.arange(8).reshape(4, 2)
    >>> leaf = netsim.all_gather(x).leaves[0]
    >>> layout = AllGatherLayout.check(x, 0, False, None)
    >>> stacked_output("all_gather", layout, leaf.playback, leaf.schedule.pieces, x.dtype)[2].tolist()
    [[0, 1], [2, 3], [4, 5], [6, 7]]
    """
    out = np.zeros((len(playback.buffers), *layout.output_shape), dtype)
    for device in range(len(playback.buffers)):
        _fill(out[device, ...], collective, layout, held_chunks(playback, device, layout.pattern != "gather"), device, pieces)
    return out


def output_row(collective: str, layout: Any, buffer: dict, device: int, pieces: int, dtype: np.dtype) -> np.ndarray:
    """One device's output, written from the chunks it holds (for lazy outputs, and a program's arrays).

    Parameters are those of :func:`stacked_output`, with ``buffer`` the device's
    chunks (:func:`held_chunks`) and ``device`` its number.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> from netsim.semantics.gather import AllGatherLayout
    >>> x = np.arange(8).reshape(4, 2)
    >>> leaf = netsim.all_gather(x).leaves[0]
    >>> layout = AllGatherLayout.check(x, 0, False, None)
    >>> output_row("all_gather", layout, held_chunks(leaf.playback, 1), 1, leaf.schedule.pieces, x.dtype).tolist()
    [[0, 1], [2, 3], [4, 5], [6, 7]]
    """
    row = np.empty(layout.output_shape, dtype)
    _fill(row, collective, layout, buffer, device, pieces)
    return row


def _fill(row: np.ndarray, collective: str, layout: Any, buffer: dict, device: int, pieces: int) -> None:
    """Write into ``row`` every block ``device``'s output wants, from the chunks ``buffer`` holds."""
    for block in layout.wanted(device):
        try:
            chunks = [buffer[(block, p)] for p in range(pieces)]
        except KeyError as missing:
            raise EngineError(f"{collective}: device {device} ended without chunk {missing}; this is a netsim bug, please report it") from None
        _write(layout.slot(row, block), chunks)


def _check_sources(collective: str, layout: Any, playback: Playback, sources: list[dict], pieces: int) -> None:
    """:func:`check_lazy_output`'s first check: each device holds every chunk its output needs (for gathers, its owner's own array)."""
    gather = layout.pattern == "gather"
    if gather and isinstance(playback.buffers, TableBuffers) and _table_holds_sources(layout, playback.buffers, pieces):
        return
    keys_of: dict[range, list[tuple[int, int]]] = {}
    for group in layout.groups:
        owned: tuple | None = None
        whole: dict | None = None  # for gathers: every chunk a device must hold, by key, when a buffer can be tested at once
        for device in group:
            wanted = layout.wanted(device)
            keys = keys_of.get(wanted)
            if keys is None:
                keys = keys_of[wanted] = [(block, p) for block in wanted for p in range(pieces)]
            buffer = playback.buffers[device]
            if gather:
                owned = owned or tuple(sources[group[block]][(block, p)] for block, p in keys)
                if whole is None:  # (keyed by the buffer's own key objects, so the comparison finds them by identity)
                    same = {key: key for key in buffer}
                    whole = dict(zip(map(same.get, keys, keys), owned, strict=True)) if all(type(c) is np.ndarray and c.size > 1 for c in owned) else {}
                if whole and _holds_exactly(buffer, whole):
                    continue
            if not gather:  # (held is enough: the values are compared on the sampled devices)
                missing = next((key for key in keys if key not in buffer), None)
                if missing is not None:
                    raise EngineError(f"{collective}: device {device} ended without chunk {missing!r}; this is a netsim bug, please report it")
                continue
            try:
                held = list(map(buffer.__getitem__, keys))
            except KeyError as missing:
                raise EngineError(f"{collective}: device {device} ended without chunk {missing}; this is a netsim bug, please report it") from None
            if not all(map(operator.is_, held, owned)):
                raise EngineError(f"{collective}: device {device} holds a chunk that is not its owner's array; this is a netsim bug, please report it")


def _table_holds_sources(layout: Any, buffers: TableBuffers, pieces: int) -> bool:
    """Whether every device of a gather holds exactly the chunks its output needs, each the one its
    owner started with, compared as chunk numbers in the compiled loop's table (False: look closer)."""
    number = buffers.number
    for group in layout.groups:
        members = np.asarray(group, np.int64)
        wanted = [layout.wanted(d) for d in group]
        if any(w != wanted[0] for w in wanted):
            return False
        keys = [(block, p) for block in wanted[0] for p in range(pieces)]
        if any(key not in number for key in keys) or any(buffers.lengths[d] != len(keys) for d in group):
            return False
        key_numbers = np.fromiter(map(number.__getitem__, keys), np.int64, len(keys))
        owners = members[np.repeat(np.fromiter(wanted[0], np.int64, len(wanted[0])), pieces)]
        if not buffers.moved_from(members, owners, key_numbers):
            return False
    return True


def _check_bundled_sources(collective: str, layout: Any, playback: Playback, sources: list[dict], pieces: int) -> None:
    """:func:`check_lazy_output`'s first check when bundles travelled, without opening every device's.

    Devices share the bundle objects they were sent, so each distinct (object, key)
    is opened once: its parts must be the bundles and chunks its key names, every
    chunk its owner's own array. Each device must then carry as many chunks as its
    output needs (which ones, exactly, the invariants checked).
    """
    bundles, group_of = playback.bundles, {d: g for g in layout.groups for d in g}
    count: dict[tuple[int, Any], int] = {}

    def chunks_in(key: Any, chunk: Any, group: tuple[int, ...]) -> int:
        seen = count.get((id(chunk), key))
        if seen is None:
            parts = bundles.get(key)
            if parts is None:
                block, _ = key
                if chunk is not sources[group[block]].get(key):
                    raise EngineError(f"{collective}: a device holds a chunk that is not its owner's array; this is a netsim bug, please report it")
                seen = 1
            else:
                seen = sum(chunks_in(part, inner, group) for part, inner in zip(parts, chunk.parts, strict=True))
            count[(id(chunk), key)] = seen
        return seen

    for device, buffer in enumerate(playback.buffers):
        group = group_of.get(device, ())
        held = sum(chunks_in(key, chunk, group) for key, chunk in buffer.items())
        needed = len(layout.wanted(device)) * pieces
        if held != needed:
            raise EngineError(f"{collective}: device {device} ended with {held} chunks, not {needed}; this is a netsim bug, please report it")


def check_lazy_output(collective: str, layout: Any, leaf: np.ndarray, playback: Playback, sources: list[dict], pieces: int, output: LazyOutput) -> str:
    """Verify a lazy output without materialising it; return what was checked.

    ``sources`` are the buffers the devices started with; the other parameters are
    those of :func:`stacked_output` and :func:`first_difference`.

    Raises
    ------
    EngineError
        If a device lacks a chunk, holds a copy where the owner's array was due, or
        a sampled value differs from the NumPy reference (a bug in netsim).

    Examples
    --------
    >>> import numpy as np, netsim
    >>> print(netsim.all_gather(np.arange(8).reshape(4, 2), output="lazy").verification)  # doctest: +ELLIPSIS
    lazy output (256 B not materialised): every device holds each chunk of its output, ...; values equal the NumPy reference on devices [0, 2, 3]

    Every device must hold every chunk its output needs; for gathers each must be
    the very array its owner started with (so nothing was copied or mixed up),
    in order. Values are compared with the NumPy reference on a few devices,
    block by block, straight from the chunks: the check holds one device's
    reference row at a time (built from ``layout.reference_parts``, whose sums
    take a slice at a time), never a simulated row. A block whose slot is the
    place of one reference part is compared with that part as it is (a gather's
    is its owner's input, a view): chunks that are that very memory, end to end,
    hold its values without being read.
    """
    gather = layout.pattern == "gather"
    (_check_bundled_sources if playback.bundles else _check_sources)(collective, layout, playback, sources, pieces)
    n = leaf.shape[0]
    sampled = sorted({0, n - 1, *np.random.default_rng(0).choice(n, size=min(n, SAMPLED_DEVICES), replace=False).tolist()})
    expected_row = np.empty(layout.output_shape, leaf.dtype)  # one device's answer at a time, in the same array
    for group in layout.groups:
        members = [d for d in group if d in sampled]
        if not members:
            continue
        single = dataclasses.replace(layout, groups=(group,))
        for device in members:
            parts = _parts_by_place(expected_row, single.reference_parts(leaf, devices=(device,)))
            buffer = held_chunks(playback, device, layout.pattern != "gather")
            for block in layout.wanted(device):
                chunks = [buffer[(block, p)] for p in range(pieces)]
                slot = layout.slot(expected_row, block)
                found = parts.get(_place(slot)) if parts is not None else None
                if found is not None:
                    expected = found[1]
                else:  # (the reference row, written out once for this device)
                    for index, part in (parts or {}).values():
                        expected_row[index] = part
                    parts, expected = None, slot
                if not (_same_memory(chunks, expected) or _chunks_match(chunks, expected, gather, len(group))):
                    raise EngineError(
                        f"{collective}: device {device}'s simulated output differs from the NumPy reference in block {block}; "
                        "this is a netsim bug, please report it"
                    )
    what = "every device holds each chunk of its output, the owner's own array, in order" if gather else "every device holds each chunk of its output"
    return f"lazy output ({format_bytes(output.nbytes)} not materialised): {what}; values equal the NumPy reference on devices {sampled}"


def _place(view: np.ndarray) -> tuple:
    """Where a view of a row lies in it: its first element's address, its shape and strides."""
    return view.__array_interface__["data"][0], view.shape, view.strides


def _parts_by_place(row: np.ndarray, parts: Any) -> dict[tuple, tuple[Any, np.ndarray]] | None:
    """A device's reference parts (index into ``row``, part) by the place each is written to (:func:`_place`).

    The parts tile the row, each in a place of its own: a block whose slot is one
    of these places is compared with that part itself, as it would be with the row
    the parts make, and nothing is copied. When a part would be cast or broadcast
    on its way into the row, the row is written out instead, and None returned.
    """
    listed = [(index, np.asarray(part)) for _, index, part in parts]
    places: dict[tuple, tuple[Any, np.ndarray]] = {}
    for index, part in listed:
        view = row[index]
        if part.shape != view.shape or part.dtype != row.dtype:
            for index, part in listed:
                row[index] = part
            return None
        places[_place(view)] = (index, part)
    return places


def _same_memory(chunks: list[Any], expected: np.ndarray) -> bool:
    """Whether the chunks, laid end to end, are the very memory of ``expected`` (C order, same dtype): then they hold its values."""
    if not expected.flags.c_contiguous:
        return False
    address, size = expected.__array_interface__["data"][0], 0
    for chunk in chunks:
        if type(chunk) is not np.ndarray or chunk.dtype != expected.dtype or not chunk.flags.c_contiguous:
            return False
        if chunk.size and chunk.__array_interface__["data"][0] != address + size * expected.itemsize:
            return False
        size += chunk.size
    return size == expected.size


def _holds_exactly(buffer: dict, whole: dict) -> bool:
    """Whether ``buffer`` holds exactly the keys of ``whole``, each the very same array.

    One dict comparison, in C: values are compared with ``==`` after an identity
    test, and the arrays here have more than one element, so anything but the same
    array makes ``==`` raise or answer False. False means: look closer.
    """
    if len(buffer) != len(whole):
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return buffer == whole
    except Exception:  # an array compared with a different array: its truth value is ambiguous
        return False
