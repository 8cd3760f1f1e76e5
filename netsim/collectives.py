"""The Python API: collectives that mirror ``jax.lax`` and return simulated results.

Each function takes the input stacked ``[n_devices, ...]`` (as :func:`jax.pmap`
does), plans the collective with an algorithm from :mod:`netsim.schedules`, plays
it on a topology with :mod:`netsim.engine`, moving the real arrays, builds JAX's
output from what each device holds at the end, and checks it against the NumPy
reference in :mod:`netsim.semantics`.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from netsim.chunks import LazyOutput, SizeOnly, shape_only
from netsim.engine import EngineError, Playback, play
from netsim.result import LeafRun, Result
from netsim.schedules import DEFAULT_ALGORITHM, build_schedule
from netsim.semantics import AllGatherLayout, AllReduceLayout, ReduceScatterLayout
from netsim.topology import Topology, ring
from netsim.units import format_bytes

__all__ = ["DATA_MODES", "MATERIALISE_LIMIT_BYTES", "OUTPUT_MODES", "all_gather", "psum", "psum_scatter", "resolve_topology", "simulate"]

TopologyLike = Topology | str | Path | None
Groups = Sequence[Sequence[int]] | None

DATA_MODES = ("values", "none")
"""``data=``: move the real arrays, or stand-ins that carry sizes only (same timings)."""
OUTPUT_MODES = ("auto", "full", "lazy")
"""``output=``: materialise the stacked output, keep it lazy, or decide by its size."""
MATERIALISE_LIMIT_BYTES = 2 * 2**30
"""With ``output="auto"``, outputs larger than this (all devices together) stay lazy."""
SAMPLED_DEVICES = 4
"""A lazy output's values are checked on this many devices (plus the first and the last)."""


def resolve_topology(topology: TopologyLike, n_devices: int) -> Topology:
    """The topology to run on: a default ring, a bundled or file topology, or the object given.

    Parameters
    ----------
    topology : Topology, str, pathlib.Path or None
        None means a ring of ``n_devices`` with 45 GB/s and 1 us links; a string
        names a file in ``topologies/`` (with or without ``.yaml``) or a path.
    n_devices : int
        Leading dimension of the input; the topology must have exactly this many.

    Examples
    --------
    >>> resolve_topology(None, 8).name
    'ring8'
    >>> resolve_topology("torus4x4", 16).dims
    (4, 4)
    """
    if topology is None:
        return ring(n_devices)
    if isinstance(topology, (str, Path)):
        from netsim.scenario import load_topology

        topology = load_topology(topology)
    if not isinstance(topology, Topology):
        raise ValueError(f"topology must be a Topology, a topology name or a path, got {topology!r}")
    if topology.n_devices != n_devices:
        raise ValueError(f"input has {n_devices} devices on its leading axis but topology {topology.name} has {topology.n_devices}")
    return topology


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


def _matches(actual: np.ndarray, expected: np.ndarray, exact: bool, group_size: int) -> bool:
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return False
    # Compare a slice at a time, so the check needs no temporaries the size of the output.
    actual, expected = actual.reshape(-1), np.ascontiguousarray(expected).reshape(-1)
    step = 1 << 20
    if exact or not np.issubdtype(expected.dtype, np.inexact):
        nan = np.issubdtype(expected.dtype, np.inexact)
        return all(np.array_equal(actual[i : i + step], expected[i : i + step], equal_nan=nan) for i in range(0, expected.size, step))
    # Sums in a different order differ by rounding only: allow a few ulps per addend.
    tolerance = 4 * np.finfo(expected.dtype).eps * group_size
    scale = float(np.max(np.abs(expected), initial=1.0))
    return all(np.allclose(actual[i : i + step], expected[i : i + step], rtol=tolerance, atol=tolerance * scale) for i in range(0, expected.size, step))


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
        target[...] = np.concatenate(pieces).reshape(target.shape)


def _output(collective: str, layout: Any, playback: Playback, pieces: int, dtype: np.dtype) -> np.ndarray:
    """JAX's stacked output, written straight from the chunks each device holds at the end."""
    out = np.empty((len(playback.buffers), *layout.output_shape), dtype)
    for device, buffer in enumerate(playback.buffers):
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


def _check_lazy(collective: str, layout: Any, leaf: np.ndarray, playback: Playback, sources: list[dict], pieces: int, output: LazyOutput) -> str:
    """Verify a lazy output without materialising it; return what was checked.

    Every device must hold every chunk its output needs; for gathers each must be
    the very array its owner started with (so nothing was copied or mixed up),
    in order. Values are compared with the NumPy reference on a few devices.
    """
    gather = layout.pattern == "gather"
    keys_of: dict[range, list[tuple[int, int]]] = {}
    for group in layout.groups:
        owned: tuple | None = None
        for device in group:
            wanted = layout.wanted(device)
            keys = keys_of.setdefault(wanted, [(block, p) for block in wanted for p in range(pieces)])
            try:
                held = list(map(playback.buffers[device].__getitem__, keys))
            except KeyError as missing:
                raise EngineError(f"{collective}: device {device} ended without chunk {missing}; this is a netsim bug, please report it") from None
            if gather:
                owned = owned or tuple(sources[group[block]][(block, p)] for block, p in keys)
                if not all(map(operator.is_, held, owned)):
                    raise EngineError(f"{collective}: device {device} holds a chunk that is not its owner's array; this is a netsim bug, please report it")
    n = leaf.shape[0]
    rng = np.random.default_rng(0)
    sampled = sorted({0, n - 1, *rng.choice(n, size=min(n, SAMPLED_DEVICES), replace=False).tolist()})
    exact = gather
    for device in sampled:
        group = next(g for g in layout.groups if device in g)
        expected_row = next(row for d, row in dataclasses.replace(layout, groups=(group,)).reference_rows(leaf) if d == device)
        if not _matches(output[device], expected_row, exact, len(group)):
            raise EngineError(f"{collective}: device {device}'s simulated output differs from the NumPy reference; this is a netsim bug, please report it")
    what = "every device holds each chunk of its output, the owner's own array, in order" if gather else "every device holds each chunk of its output"
    return f"lazy output ({format_bytes(output.nbytes)} not materialised): {what}; values equal the NumPy reference on devices {sampled}"


def _simulate(
    collective: str,
    x: Any,
    make_layout: Callable[[np.ndarray], Any],
    topology: TopologyLike,
    algorithm: str | None,
    verify: bool,
    cut_through: bool = True,
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
    topo = resolve_topology(topology, n_devices)
    algorithm = DEFAULT_ALGORITHM if algorithm is None else algorithm
    outputs, runs, time, checks = [], [], 0.0, []
    for leaf, layout in zip(leaves, layouts, strict=True):
        schedule = build_schedule(layout.pattern, layout.groups, algorithm)
        if data == "none":
            buffers = _size_buffers(layout, schedule.pieces, leaf.dtype.itemsize, n_devices)
        else:
            buffers = [
                {(b, p): piece for b, block in held.items() for p, piece in enumerate(np.array_split(block, schedule.pieces))} for held in layout.blocks(leaf)
            ]
        playback = play(topo, schedule.transfers, buffers, cut_through=cut_through)
        out_bytes = n_devices * int(np.prod(layout.output_shape, dtype=np.int64)) * leaf.dtype.itemsize
        if data == "none":
            result = None
            checks.append("not materialised: data none, chunks carried sizes only (timings are those of the real data)")
        elif output == "full" or (output == "auto" and out_bytes <= MATERIALISE_LIMIT_BYTES):
            result = _output(collective, layout, playback, schedule.pieces, leaf.dtype)
            if verify:
                exact = layout.pattern == "gather"
                for device, expected in layout.reference_rows(leaf):
                    if not _matches(result[device], expected, exact, len(layout.groups[0])):
                        raise EngineError(
                            f"{collective} with {algorithm} on {topo.name}: device {device}'s simulated output differs from the NumPy reference; "
                            "this is a netsim bug, please report it"
                        )
                checks.append("equals the NumPy reference of JAX's semantics on every device")
        else:
            final, pieces, dtype = playback.buffers, schedule.pieces, leaf.dtype
            result = LazyOutput(
                (n_devices, *layout.output_shape),
                dtype,
                lambda device, layout=layout, final=final, pieces=pieces, dtype=dtype: _row(collective, layout, final[device], device, pieces, dtype),
            )
            if verify:
                checks.append(_check_lazy(collective, layout, leaf, playback, buffers, schedule.pieces, result))
        outputs.append(result)
        runs.append(LeafRun(leaf.shape, str(leaf.dtype), schedule, playback))
        time += playback.time
    groups = layouts[0].groups
    n = len(groups[0])
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
        verification="; ".join(dict.fromkeys(checks)) if checks else "verification off",
    )


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
        Groups of device indices; member k of a group supplies block k.
    topology : Topology, str or None
        Where to run; None is a ring of n devices (45 GB/s, 1 us per hop).
    algorithm : str, optional
        ``"ring"``, ``"bidirectional_ring"`` (default) or ``"bidirectional_halfway"``.
    verify : bool, default True
        Check the output against the NumPy reference.
    cut_through : bool, default True
        Cut-through forwarding on multi-hop routes; False for store-and-forward.
    data : {"values", "none"}, default "values"
        ``"none"`` moves stand-ins that carry sizes only: the same schedule and
        the same timings, bit for bit, without the data; ``x`` may then be
        :func:`netsim.chunks.shape_only` and the output is None.
    output : {"auto", "full", "lazy"}, default "auto"
        ``"full"`` materialises the stacked output; ``"lazy"`` returns a
        :class:`netsim.chunks.LazyOutput` that builds a device's row when read,
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
        have n devices, or the algorithm is unknown.

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
        data,
        output,
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
        data,
        output,
    )


def psum(
    x: Any,
    axis_index_groups: Groups = None,
    topology: TopologyLike = None,
    algorithm: str | None = None,
    *,
    verify: bool = True,
    cut_through: bool = True,
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
        data,
        output,
    )


def simulate(scenario: Any) -> Result:
    """Run a scenario loaded with :func:`netsim.scenario.load_scenario`.

    The input is drawn from the scenario's seed, so the same scenario gives the
    same output and the same timings every time.

    Examples
    --------
    >>> from netsim.scenario import load_scenario
    >>> r = simulate(load_scenario("scenarios/allgather_ring8.yaml"))
    >>> r.collective, r.verified
    ('all_gather', True)
    """
    spec = scenario.collective
    options = {
        "topology": scenario.topology_obj,
        "algorithm": scenario.algorithm,
        "cut_through": scenario.forwarding == "cut_through",
    }
    if scenario.data == "none":
        options["data"] = "none"
        x = shape_only((scenario.topology_obj.n_devices, *scenario.shape), scenario.input.dtype)
    else:
        x = scenario.make_input()
    if spec.op == "all_gather":
        result = all_gather(x, spec.axis, spec.tiled, spec.axis_index_groups, **options)
    elif spec.op == "psum_scatter":
        result = psum_scatter(x, spec.scatter_dimension, spec.axis_index_groups, spec.tiled, **options)
    else:
        result = psum(x, spec.axis_index_groups, **options)
    result.scenario = scenario.name
    return result
