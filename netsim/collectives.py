"""The Python API: collectives that mirror ``jax.lax`` and return simulated results.

Each function takes the input stacked ``[n_devices, ...]`` (as :func:`jax.pmap`
does), plans the collective with an algorithm from :mod:`netsim.algorithms`, plays
it on a topology with :mod:`netsim.engine.fast`, moving the real arrays, builds JAX's
output from what each device holds at the end, and checks it against the NumPy
reference in :mod:`netsim.semantics`.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
import operator
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from netsim.algorithms.bundles import unbundled
from netsim.algorithms.direct import permutation
from netsim.algorithms.registry import ALGORITHMS, check_algorithm, default_algorithm
from netsim.algorithms.schedule import Schedule, build_schedule
from netsim.analysis.critical_path import critical_path
from netsim.checks.invariants import InvariantError, check_playback
from netsim.checks.memory import MATERIALISE_LIMIT_BYTES, MemoryLimitError, check_memory, estimate_memory, pieces_of, transfers_of
from netsim.engine import EngineError, Playback, play
from netsim.network.device_mesh import AxisGroups
from netsim.network.presets import is_slice_name, tpu_slice
from netsim.network.topology import Topology, UnreachableError, ring
from netsim.network.units import format_bytes
from netsim.result import LeafRun, Result
from netsim.semantics.all_to_all import AllToAllLayout
from netsim.semantics.chunks import SLICE_ELEMENTS, LazyOutput, SizeOnly, bounded_slices, shape_only
from netsim.semantics.gather import AllGatherLayout
from netsim.semantics.permute import PermuteLayout
from netsim.semantics.reduce import AllReduceLayout, ReduceScatterLayout

__all__ = [
    "DATA_MODES",
    "MATERIALISE_LIMIT_BYTES",
    "OUTPUT_MODES",
    "all_gather",
    "all_to_all",
    "ppermute",
    "provenance",
    "psum",
    "psum_scatter",
    "resolve_topology",
    "simulate",
    "start_times",
]

TopologyLike = Topology | str | Path | None
Groups = Sequence[Sequence[int]] | None
Stragglers = Mapping[int, float] | None

DATA_MODES = ("values", "none")
"""``data=``: move the real arrays, or stand-ins that carry sizes only (same timings)."""
OUTPUT_MODES = ("auto", "full", "lazy")
"""``output=``: materialise the stacked output, keep it lazy, or decide by its size."""
SAMPLED_DEVICES = 2
"""A lazy output's values are checked on this many devices drawn at random (seed 0), plus the first and the last."""


def resolve_topology(topology: TopologyLike, n_devices: int) -> Topology:
    """The topology to run on: a default ring, a bundled or file topology, or the object given.

    Parameters
    ----------
    topology : Topology, str, pathlib.Path or None
        None means a ring of ``n_devices`` with 45 GB/s and 1 us links; a string
        names a TPU slice (``"tpu-v5e:8x16"``, see :mod:`netsim.network.presets`), a file
        in ``topologies/`` (with or without ``.yaml``) or a path.
    n_devices : int
        Leading dimension of the input; the topology must have exactly this many.

    Examples
    --------
    >>> resolve_topology(None, 8).name
    'ring8'
    >>> resolve_topology("torus4x4", 16).dims
    (4, 4)
    >>> resolve_topology("tpu-v5e:8x4", 32).wraparound
    (False, False)
    """
    if topology is None:
        return ring(n_devices)
    if isinstance(topology, str) and is_slice_name(topology):
        topology = tpu_slice(topology)
    elif isinstance(topology, (str, Path)):
        from netsim.scenario import load_topology

        topology = load_topology(topology)
    if not isinstance(topology, Topology):
        raise ValueError(f"topology must be a Topology, a topology name or a path, got {topology!r}")
    if topology.n_devices != n_devices:
        raise ValueError(f"input has {n_devices} devices on its leading axis but topology {topology.name} has {topology.n_devices}")
    return topology


def start_times(stragglers: Stragglers, n_devices: int) -> list[float]:
    """Each device's start time, seconds, from ``{device: delay_s}`` (others start at 0).

    Examples
    --------
    >>> start_times({2: 20e-6}, 4)
    [0.0, 0.0, 2e-05, 0.0]
    >>> start_times({4: 1e-6}, 4)
    Traceback (most recent call last):
    ...
    ValueError: stragglers names device 4, but there are 4 devices (0..3)
    """
    start = [0.0] * n_devices
    for device, delay in (stragglers or {}).items():
        if isinstance(device, bool) or not isinstance(device, (int, np.integer)) or not 0 <= device < n_devices:
            raise ValueError(f"stragglers names device {device!r}, but there are {n_devices} devices (0..{n_devices - 1})")
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay < math.inf:
            raise ValueError(f"stragglers gives device {device} a delay of {delay!r}; expected a finite number of seconds >= 0")
        start[int(device)] = float(delay)
    return start


def _fault_names(topology: Topology) -> tuple[str, ...]:
    """The topology's down and degraded links, as people read them."""
    names = [f"{topology.link_name(link)} down" for link in topology.down_links]
    for link in dict.fromkeys(topology.degraded_links):
        if topology.graph.has_edge(*link):
            data = topology.link(link)
            names.append(f"{topology.link_name(link)} at {data['bandwidth_Bps'] / 1e9:.6g} GB/s, {data['latency_s'] * 1e6:.6g} us")
    return tuple(names)


def _leaves(tree: Any) -> tuple[list[np.ndarray], Callable[[list[Any]], Any]]:
    """Flatten a pytree of dicts, lists and tuples (dict keys sorted, as in JAX)."""
    if isinstance(tree, dict):
        keys = sorted(tree)
        parts = [_leaves(tree[k]) for k in keys]
    elif isinstance(tree, (list, tuple)):
        keys = None
        parts = [_leaves(v) for v in tree]
    else:
        return [np.asarray(tree)], lambda values: values[0]
    counts = [len(leaves) for leaves, _ in parts]

    def rebuild(values: list[Any]) -> Any:
        out, start = [], 0
        for (_, unflatten), count in zip(parts, counts, strict=True):
            out.append(unflatten(values[start : start + count]))
            start += count
        if keys is not None:
            return dict(zip(keys, out, strict=True))
        if isinstance(tree, tuple):
            return type(tree)(*out) if hasattr(tree, "_fields") else type(tree)(out)
        return out

    return [leaf for leaves, _ in parts for leaf in leaves], rebuild


def _matches(actual: np.ndarray, expected: np.ndarray, exact: bool, group_size: int, scale: float) -> bool:
    """Whether ``actual`` equals ``expected``: exactly, or for sums of floats within a few ulps per addend.

    ``scale`` is the largest magnitude in the whole reference ``expected`` is part
    of (at least 1); it sets the absolute tolerance. Compared a slice at a time,
    so the check needs no temporaries the size of the output.
    """
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return False
    slices = bounded_slices(expected.shape, SLICE_ELEMENTS)
    if exact or not np.issubdtype(expected.dtype, np.inexact):
        nan = np.issubdtype(expected.dtype, np.inexact)
        return all(np.array_equal(actual[i], expected[i], equal_nan=nan) for i in slices)
    # Sums in a different order differ by rounding only: allow a few ulps per addend.
    tolerance = 4 * np.finfo(expected.dtype).eps * group_size
    return all(np.allclose(actual[i], expected[i], rtol=tolerance, atol=tolerance * scale) for i in slices)


def _largest(expected: np.ndarray, scale: float = 1.0) -> float:
    """The larger of ``scale`` and the largest magnitude in ``expected`` (NaN if there is one), a slice at a time."""
    for i in bounded_slices(np.shape(expected), SLICE_ELEMENTS):
        scale = np.maximum(scale, np.max(np.abs(expected[i]), initial=1.0))
    return float(scale)


def _first_difference(layout: Any, leaf: np.ndarray, output: np.ndarray, exact: bool, group_size: int) -> int | None:
    """The first device, in the reference's order, whose output differs from the NumPy reference; None if none does.

    The reference comes a part of a row at a time (``layout.reference_parts``),
    never a whole row. The tolerance for sums of floats depends on the largest
    value of a device's whole reference, known only at the end: each part is
    compared with the largest value seen so far (a part that matches then also
    matches with the final, larger tolerance), and the devices with a part that
    did not are compared again with the final one.
    """
    strict = exact or not np.issubdtype(leaf.dtype, np.inexact)
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
    scale = 1.0 if exact or not np.issubdtype(expected.dtype, np.inexact) else _largest(expected)
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


def _held(playback: Playback, device: int) -> dict:
    """The chunks a device ends with, its bundles opened (the buffer itself when there are none)."""
    buffer = playback.buffers[device]
    return unbundled(buffer, playback.bundles) if playback.bundles else buffer


def _output(collective: str, layout: Any, playback: Playback, pieces: int, dtype: np.dtype) -> np.ndarray:
    """JAX's stacked output, written straight from the chunks each device holds at the end.

    Devices that want no block (ppermute's non-destinations) keep zeros.
    """
    out = np.zeros((len(playback.buffers), *layout.output_shape), dtype)
    for device in range(len(playback.buffers)):
        buffer = _held(playback, device)
        for block in layout.wanted(device):
            try:
                chunks = [buffer[(block, p)] for p in range(pieces)]
            except KeyError as missing:
                raise EngineError(f"{collective}: device {device} ended without chunk {missing}; this is a netsim bug, please report it") from None
            _write(layout.slot(out[device, ...], block), chunks)
    return out


def _row(collective: str, layout: Any, buffer: dict, device: int, pieces: int, dtype: np.dtype) -> np.ndarray:
    """One device's output, written from the chunks it holds (for lazy outputs)."""
    row = np.empty(layout.output_shape, dtype)
    for block in layout.wanted(device):
        try:
            chunks = [buffer[(block, p)] for p in range(pieces)]
        except KeyError as missing:
            raise EngineError(f"{collective}: device {device} ended without chunk {missing}; this is a netsim bug, please report it") from None
        _write(layout.slot(row, block), chunks)
    return row


def _size_buffers(layout: Any, pieces: int, itemsize: int, n_devices: int) -> list[dict]:
    """Each device's starting chunks as :class:`SizeOnly` stand-ins of the sizes np.array_split gives."""
    buffers = []
    for held in layout.block_sizes(n_devices):
        buffer = {}
        for block, elements in held.items():
            small, big = divmod(elements, pieces)
            for p in range(pieces):
                buffer[(block, p)] = SizeOnly((small + (p < big)) * itemsize)
        buffers.append(buffer)
    return buffers


def _check_sources(collective: str, layout: Any, playback: Playback, sources: list[dict], pieces: int) -> None:
    """:func:`_check_lazy`'s first check: every device holds every chunk its output needs and,
    for gathers, each is the very array its owner started with."""
    gather = layout.pattern == "gather"
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
                if whole is None:
                    whole = dict(zip(keys, owned, strict=True)) if all(type(c) is np.ndarray and c.size > 1 for c in owned) else {}
                if whole and _holds_exactly(buffer, whole):
                    continue
            try:
                held = list(map(buffer.__getitem__, keys))
            except KeyError as missing:
                raise EngineError(f"{collective}: device {device} ended without chunk {missing}; this is a netsim bug, please report it") from None
            if gather and not all(map(operator.is_, held, owned)):
                raise EngineError(f"{collective}: device {device} holds a chunk that is not its owner's array; this is a netsim bug, please report it")


def _check_bundled_sources(collective: str, layout: Any, playback: Playback, sources: list[dict], pieces: int) -> None:
    """:func:`_check_lazy`'s first check when bundles travelled, without opening every device's.

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


def _check_lazy(collective: str, layout: Any, leaf: np.ndarray, playback: Playback, sources: list[dict], pieces: int, output: LazyOutput) -> str:
    """Verify a lazy output without materialising it; return what was checked.

    Every device must hold every chunk its output needs; for gathers each must be
    the very array its owner started with (so nothing was copied or mixed up),
    in order. Values are compared with the NumPy reference on a few devices,
    block by block, straight from the chunks: the check holds one device's
    reference row at a time (built from ``layout.reference_parts``, whose sums
    take a slice at a time), never a simulated row.
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
            for _, index, part in single.reference_parts(leaf, devices=(device,)):
                expected_row[index] = part
            buffer = _held(playback, device)
            for block in layout.wanted(device):
                chunks = [buffer[(block, p)] for p in range(pieces)]
                if not _chunks_match(chunks, layout.slot(expected_row, block), gather, len(group)):
                    raise EngineError(
                        f"{collective}: device {device}'s simulated output differs from the NumPy reference in block {block}; "
                        "this is a netsim bug, please report it"
                    )
    what = "every device holds each chunk of its output, the owner's own array, in order" if gather else "every device holds each chunk of its output"
    return f"lazy output ({format_bytes(output.nbytes)} not materialised): {what}; values equal the NumPy reference on devices {sampled}"


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


def _simulate(
    collective: str,
    x: Any,
    make_layout: Callable[[np.ndarray], Any],
    topology: TopologyLike,
    algorithm: str | None,
    verify: bool,
    cut_through: bool = True,
    plan: Callable[[Any], Schedule] | None = None,
    axis_index_groups: Groups = None,
    stragglers: Stragglers = None,
    data: str = "values",
    output: str = "auto",
) -> Result:
    if data not in DATA_MODES:
        raise ValueError(f"data must be one of {', '.join(map(repr, DATA_MODES))}, got {data!r}")
    if output not in OUTPUT_MODES:
        raise ValueError(f"output must be one of {', '.join(map(repr, OUTPUT_MODES))}, got {output!r}")
    leaves, rebuild = _leaves(x)
    if not leaves:
        raise ValueError("input pytree has no arrays")
    n_devices = leaves[0].shape[0] if leaves[0].ndim else 0
    for leaf in leaves:
        if leaf.ndim == 0 or leaf.shape[0] != n_devices:
            raise ValueError(f"every input array must be stacked [n_devices, ...] with the same n_devices; got shapes {[a.shape for a in leaves]}")
    layouts = [make_layout(leaf) for leaf in leaves]
    axes = axis_index_groups if isinstance(axis_index_groups, AxisGroups) else None
    topo = resolve_topology(axes.topology if axes is not None and topology is None else topology, n_devices)
    shape = {}
    if axes is not None:
        if (topo.dims, topo.wraparound) != (axes.topology.dims, axes.topology.wraparound):
            raise ValueError(f"axis_index_groups come from a mesh on {axes.topology.name} but the topology is {topo.name}; pass the mesh's topology or none")
        if algorithm is None:
            algorithm = default_algorithm(layouts[0].pattern, over_mesh_axes=True)
        shape = {"group_shape": axes.shape, "wraparound": axes.wraparound}
    if plan is None:
        algorithm = check_algorithm(layouts[0].pattern, len(layouts[0].groups[0]), algorithm)
    start_s = start_times(stragglers, n_devices)
    pieces = pieces_of(ALGORITHMS.get(algorithm))
    group_size = len(layouts[0].groups[0]) if layouts[0].groups else 1
    if data == "values":
        out_bytes = max(n_devices * math.prod(layout.output_shape) * leaf.dtype.itemsize for leaf, layout in zip(leaves, layouts, strict=True))
        materialised = output == "full" or (output == "auto" and out_bytes <= MATERIALISE_LIMIT_BYTES)
        input_bytes = sum(leaf[0].nbytes for leaf in leaves)
        transfers = transfers_of(ALGORITHMS.get(algorithm), n_devices, axes.shape if axes is not None else None)
        check_memory(estimate_memory(collective, n_devices, group_size, input_bytes, pieces, input_exists=True, materialised=materialised, transfers=transfers))
    outputs, runs, time, checks = [], [], 0.0, []
    for leaf, layout in zip(leaves, layouts, strict=True):
        schedule = build_schedule(layout.pattern, layout.groups, algorithm, **shape) if plan is None else plan(layout)
        algorithm = schedule.algorithm
        if data == "none":
            buffers = _size_buffers(layout, schedule.pieces, leaf.dtype.itemsize, n_devices)
        else:
            buffers = [
                {(b, p): piece for b, block in held.items() for p, piece in enumerate(np.array_split(block, schedule.pieces))} for held in layout.blocks(leaf)
            ]
        playback = play(topo, schedule.transfers, buffers, cut_through=cut_through, start_s=start_s)
        check_playback(topo, schedule.transfers, buffers, playback, groups=schedule.groups, pattern=layout.pattern, wanted=layout.wanted)
        out_bytes = n_devices * int(np.prod(layout.output_shape, dtype=np.int64)) * leaf.dtype.itemsize
        exact = layout.pattern in ("gather", "all_to_all", "permute")
        if data == "none":
            result = None
            checks.append("not materialised: data none, chunks carried sizes only (timings are those of the real data)")
        elif output == "full" or (output == "auto" and out_bytes <= MATERIALISE_LIMIT_BYTES):
            result = _output(collective, layout, playback, schedule.pieces, leaf.dtype)
            if verify:
                device = _first_difference(layout, leaf, result, exact, len(layout.groups[0]) if layout.groups else 1)
                if device is not None:
                    where = f"{collective} with {algorithm} on {topo.name}"
                    raise InvariantError("output", f"{where}: device {device}'s simulated output differs from the NumPy reference")
                checks.append("equals the NumPy reference of JAX's semantics on every device")
        else:
            final, pieces, dtype = playback, schedule.pieces, leaf.dtype
            result = LazyOutput(
                (n_devices, *layout.output_shape),
                dtype,
                lambda device, layout=layout, final=final, pieces=pieces, dtype=dtype: _row(collective, layout, _held(final, device), device, pieces, dtype),
            )
            if verify:
                checks.append(_check_lazy(collective, layout, leaf, playback, buffers, schedule.pieces, result))
        outputs.append(result)
        path = critical_path(topo, schedule.transfers, playback, start_s=start_s, cut_through=cut_through)
        runs.append(LeafRun(leaf.shape, str(leaf.dtype), schedule, playback, path.shifted(time)))
        time += playback.time
    groups = layouts[0].groups
    n = len(groups[0]) if groups else 0
    per_device = sum(leaf[0].nbytes for leaf in leaves)
    verified = verify and data == "values"
    return Result(
        output=rebuild(outputs),
        time=time,
        collective=collective,
        algorithm=algorithm,
        topology=topo.name,
        n_devices=n_devices,
        groups=groups,
        bytes_per_device=per_device,
        total_bytes=per_device * n if collective == "all_gather" else per_device,
        verified=verified,
        leaves=runs,
        topology_obj=topo,
        forwarding="cut_through" if cut_through else "store_and_forward",
        axes=axes.axes if axes is not None else None,
        faults=_fault_names(topo),
        stragglers={d: t for d, t in enumerate(start_s) if t > 0},
        provenance={"netsim_version": _version(), "scenario": None, "seed": None},
        verification="; ".join(dict.fromkeys(checks)) if checks else "verification off",
    )


def _version() -> str:
    from netsim.version import __version__

    return __version__


def all_gather(
    x: Any,
    axis: int = 0,
    tiled: bool = False,
    axis_index_groups: Groups = None,
    topology: TopologyLike = None,
    algorithm: str | None = None,
    *,
    verify: bool = True,
    cut_through: bool = True,
    stragglers: Stragglers = None,
    data: str = "values",
    output: str = "auto",
) -> Result:
    """Simulate ``jax.lax.all_gather`` over the leading (device) axis of ``x``.

    Parameters
    ----------
    x : array_like or pytree
        Input stacked ``[n_devices, ...]``; dicts, lists and tuples of arrays are
        gathered leaf by leaf.
    axis : int, default 0
        Where the gathered axis goes; untiled it is a new axis (normalised against
        rank+1), tiled an existing one.
    tiled : bool, default False
        Concatenate along ``axis`` instead of stacking on a new one.
    axis_index_groups : list of list of int, optional
        Groups of device indices; member k of a group supplies block k. May be
        the groups of mesh axes, ``mesh.groups(["data", "model"])`` (see
        :class:`netsim.Mesh`): then the mesh's topology is the default and the
        algorithm knows the axes.
    topology : Topology, str or None
        Where to run; None is a ring of n devices (45 GB/s, 1 us per hop), or
        the mesh's topology for groups from a mesh.
    algorithm : str, optional
        A name from :data:`netsim.ALGORITHMS`: ``"ring"``, ``"bidirectional_ring"``
        (default), ``"bidirectional_halfway"``, ...; over mesh axes ``"multiaxis"``
        (their default) or ``"dimension_ordered"``.
    verify : bool, default True
        Check the output against the NumPy reference.
    cut_through : bool, default True
        Cut-through forwarding on multi-hop routes; False for store-and-forward.
    stragglers : dict, optional
        ``{device: delay_s}``: devices that start late (they send nothing before).
    data : {"values", "none"}, default "values"
        ``"none"`` moves stand-ins that carry sizes only: the same schedule and
        the same timings, bit for bit, without the data; ``x`` may then be
        :func:`netsim.semantics.chunks.shape_only` and the output is None.
    output : {"auto", "full", "lazy"}, default "auto"
        ``"full"`` materialises the stacked output; ``"lazy"`` returns a
        :class:`netsim.semantics.chunks.LazyOutput` that builds a device's row when read,
        verified without materialising it (``Result.verification`` says how);
        ``"auto"`` is full up to :data:`MATERIALISE_LIMIT_BYTES`, lazy above.

    Returns
    -------
    Result
        ``.output`` equals JAX's, ``.time`` is the simulated time in seconds.

    Raises
    ------
    ValueError
        If the axis is out of range, the groups are illegal, the topology does not
        have n devices, the algorithm is unknown, a straggler is not a device, down
        links leave two devices that must talk without a route
        (:class:`~netsim.network.topology.UnreachableError`), or the run would not fit in
        memory (:class:`~netsim.checks.memory.MemoryLimitError`).
    InvariantError
        If the run broke one of :mod:`netsim.checks.invariants` (a bug in netsim).

    Examples
    --------
    >>> r = all_gather(np.arange(4))
    >>> r.output
    array([[0, 1, 2, 3],
           [0, 1, 2, 3],
           [0, 1, 2, 3],
           [0, 1, 2, 3]])
    >>> r.verified
    True
    >>> all_gather(np.arange(16).reshape(4, 4), axis_index_groups=[[0, 2], [3, 1]]).output[1]
    array([[12, 13, 14, 15],
           [ 4,  5,  6,  7]])
    """
    return _simulate(
        "all_gather",
        x,
        lambda leaf: AllGatherLayout.check(leaf, axis, tiled, axis_index_groups),
        topology,
        algorithm,
        verify,
        cut_through,
        axis_index_groups=axis_index_groups,
        stragglers=stragglers,
        data=data,
        output=output,
    )


def psum_scatter(
    x: Any,
    scatter_dimension: int = 0,
    axis_index_groups: Groups = None,
    tiled: bool = False,
    topology: TopologyLike = None,
    algorithm: str | None = None,
    *,
    verify: bool = True,
    cut_through: bool = True,
    stragglers: Stragglers = None,
    data: str = "values",
    output: str = "auto",
) -> Result:
    """Simulate ``jax.lax.psum_scatter`` (a reduce-scatter) over the device axis of ``x``.

    Untiled, ``shape[scatter_dimension]`` must equal the group size and that
    dimension is removed; tiled, it must be divisible by the group size and is kept.
    Member k of each group receives block k of the group's sum. Other parameters
    as in :func:`all_gather`.

    Examples
    --------
    >>> psum_scatter(np.arange(16).reshape(4, 4)).output
    array([24, 28, 32, 36])
    >>> psum_scatter(np.arange(16).reshape(4, 4), axis_index_groups=[[0, 2], [3, 1]], tiled=True).output
    array([[ 8, 10],
           [20, 22],
           [12, 14],
           [16, 18]])
    """
    return _simulate(
        "psum_scatter",
        x,
        lambda leaf: ReduceScatterLayout.check(leaf, scatter_dimension, tiled, axis_index_groups),
        topology,
        algorithm,
        verify,
        cut_through,
        axis_index_groups=axis_index_groups,
        stragglers=stragglers,
        data=data,
        output=output,
    )


def psum(
    x: Any,
    axis_index_groups: Groups = None,
    topology: TopologyLike = None,
    algorithm: str | None = None,
    *,
    verify: bool = True,
    cut_through: bool = True,
    stragglers: Stragglers = None,
    data: str = "values",
    output: str = "auto",
) -> Result:
    """Simulate ``jax.lax.psum`` (an all-reduce: reduce-scatter then all-gather).

    Every member of a group receives the group's sum. Other parameters as in
    :func:`all_gather`.

    Examples
    --------
    >>> psum(np.arange(4), axis_index_groups=[[0, 1], [2, 3]]).output
    array([1, 1, 5, 5])
    """
    return _simulate(
        "psum",
        x,
        lambda leaf: AllReduceLayout.check(leaf, axis_index_groups),
        topology,
        algorithm,
        verify,
        cut_through,
        axis_index_groups=axis_index_groups,
        stragglers=stragglers,
        data=data,
        output=output,
    )


def all_to_all(
    x: Any,
    split_axis: int,
    concat_axis: int,
    axis_index_groups: Groups = None,
    tiled: bool = False,
    topology: TopologyLike = None,
    algorithm: str | None = None,
    *,
    verify: bool = True,
    cut_through: bool = True,
    stragglers: Stragglers = None,
    data: str = "values",
    output: str = "auto",
) -> Result:
    """Simulate ``jax.lax.all_to_all`` over the device axis of ``x``.

    Every member cuts its input into n chunks along ``split_axis`` and sends chunk
    j to member j of its group; each member concatenates what it receives, in the
    order of the senders' positions, along ``concat_axis``.

    Parameters
    ----------
    x : array_like or pytree
        Input stacked ``[n_devices, ...]``.
    split_axis, concat_axis : int
        Axes of one device's input (negative counts from the end). Untiled,
        ``shape[split_axis]`` must equal the group size; the split axis goes and a
        new axis of size n appears at ``concat_axis``, so the rank is kept. Tiled,
        ``shape[split_axis]`` must be divisible by the group size, and the chunks
        are concatenated along the existing ``concat_axis``.
    axis_index_groups : list of list of int, optional
        Groups of device indices; member j of a group receives chunk j.
    tiled : bool, default False
    topology, verify, cut_through, stragglers, data, output
        As in :func:`all_gather`.
    algorithm : str, optional
        ``"direct"`` (default: every pair at once, routed, contending for links).

    Returns
    -------
    Result

    Raises
    ------
    ValueError
        If an axis is out of range, the split axis does not fit the group size,
        the groups are illegal, or the algorithm cannot run all_to_all.

    Examples
    --------
    >>> all_to_all(np.arange(9).reshape(3, 3), split_axis=0, concat_axis=0).output
    array([[0, 3, 6],
           [1, 4, 7],
           [2, 5, 8]])
    >>> all_to_all(np.arange(16).reshape(4, 4), 0, 0, axis_index_groups=[[0, 2], [3, 1]], tiled=True).output
    array([[ 0,  1,  8,  9],
           [14, 15,  6,  7],
           [ 2,  3, 10, 11],
           [12, 13,  4,  5]])
    """
    return _simulate(
        "all_to_all",
        x,
        lambda leaf: AllToAllLayout.check(leaf, split_axis, concat_axis, tiled, axis_index_groups),
        topology,
        algorithm,
        verify,
        cut_through,
        axis_index_groups=axis_index_groups,
        stragglers=stragglers,
        data=data,
        output=output,
    )


def ppermute(
    x: Any,
    perm: Sequence[Sequence[int]],
    topology: TopologyLike = None,
    *,
    verify: bool = True,
    cut_through: bool = True,
    stragglers: Stragglers = None,
    data: str = "values",
    output: str = "auto",
) -> Result:
    """Simulate ``jax.lax.ppermute``: each (source, destination) pair of ``perm`` sends one device's input.

    Every pair's payload goes straight along its route (the ``direct`` plan), all
    at once; devices that are no pair's destination get zeros.

    Parameters
    ----------
    x : array_like or pytree
        Input stacked ``[n_devices, ...]``.
    perm : list of (int, int)
        (source, destination) device indices; no source and no destination may
        appear twice.
    topology, verify, cut_through, stragglers
        As in :func:`all_gather`.

    Returns
    -------
    Result
        ``.groups`` holds the pairs.

    Raises
    ------
    ValueError
        If a pair is malformed, an index is out of range, or a source or a
        destination repeats.

    Examples
    --------
    >>> ppermute(np.arange(4), perm=[(0, 1), (1, 2), (2, 3), (3, 0)]).output
    array([3, 0, 1, 2])
    >>> ppermute(np.arange(1, 5), perm=[(0, 2)]).output
    array([0, 0, 1, 0])
    """
    return _simulate(
        "ppermute",
        x,
        lambda leaf: PermuteLayout.check(leaf, perm),
        topology,
        "direct",
        verify,
        cut_through,
        plan=lambda layout: permutation(layout.groups),
        stragglers=stragglers,
        data=data,
        output=output,
    )


def simulate(scenario: Any) -> Result:
    """Run a scenario loaded with :func:`netsim.scenario.load_scenario`.

    The input is drawn from the scenario's seed, so the same scenario gives the
    same output and the same timings every time. A collective over mesh axes
    runs ``multiaxis`` unless the scenario names an algorithm.

    Examples
    --------
    >>> from netsim.scenario import load_scenario
    >>> r = simulate(load_scenario("scenarios/allgather_ring8.yaml"))
    >>> r.collective, r.verified
    ('all_gather', True)
    """
    spec = scenario.collective
    groups = scenario.groups
    options = {
        "topology": scenario.topology_obj,
        "algorithm": scenario.algorithm,
        "cut_through": scenario.forwarding == "cut_through",
        "stragglers": dict(getattr(scenario, "stragglers", None) or {}),
    }
    if scenario.data == "none":
        options["data"] = "none"
        x = shape_only((scenario.topology_obj.n_devices, *scenario.shape), scenario.input.dtype)
    else:
        x = scenario.make_input()
    try:
        if spec.op == "all_gather":
            result = all_gather(x, spec.axis, spec.tiled, groups, **options)
        elif spec.op == "all_to_all":
            result = all_to_all(x, spec.split_axis, spec.concat_axis, groups, spec.tiled, **options)
        elif spec.op == "ppermute":
            options.pop("algorithm")
            result = ppermute(x, spec.perm, **options)
        elif spec.op == "psum_scatter":
            result = psum_scatter(x, spec.scatter_dimension, groups, spec.tiled, **options)
        else:
            result = psum(x, groups, **options)
    except EngineError as error:
        # A bug in netsim: say what reproduces it.
        error.args = (f"{error} (scenario {getattr(scenario, 'source', scenario.name)}, seed {scenario.seed})",)
        raise
    except (UnreachableError, MemoryLimitError) as error:
        # load_scenario checks both up front; should the run still hit one, name the file and field
        from netsim.scenario import ScenarioError

        field = "faults" if isinstance(error, UnreachableError) else "input"
        raise ScenarioError(getattr(scenario, "source", scenario.name), field, str(error)) from None
    result.scenario = scenario.name
    result.provenance = provenance(scenario)
    return result


def provenance(scenario: Any) -> dict[str, Any]:
    """What reproduces a scenario's run: netsim's version, the scenario as run and its seed.

    The scenario as run is self-contained (:meth:`netsim.scenario.Scenario.as_run`:
    defaults filled in, the topology inline); result.json records the same.

    Examples
    --------
    >>> from netsim.scenario import load_scenario
    >>> p = provenance(load_scenario("scenarios/allgather_ring8.yaml"))
    >>> p["seed"], p["scenario"]["algorithm"], p["scenario"]["topology"]["dims"]
    (0, 'bidirectional_ring', [8])
    """
    as_run = scenario.as_run() if hasattr(scenario, "as_run") else scenario.model_dump(mode="json")
    return {"netsim_version": _version(), "scenario": as_run, "seed": scenario.seed, "source": getattr(scenario, "source", None)}
