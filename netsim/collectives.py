"""The Python API: collectives that mirror ``jax.lax`` and return simulated results.

Each function takes the input stacked ``[n_devices, ...]`` (as :func:`jax.pmap`
does), plans the collective with an algorithm from :mod:`netsim.schedules`, plays
it on a topology with :mod:`netsim.engine`, moving the real arrays, builds JAX's
output from what each device holds at the end, and checks it against the NumPy
reference in :mod:`netsim.semantics`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from netsim.engine import EngineError, Playback, play
from netsim.result import LeafRun, Result
from netsim.schedules import DEFAULT_ALGORITHM, build_schedule
from netsim.semantics import AllGatherLayout, AllReduceLayout, ReduceScatterLayout
from netsim.topology import Topology, ring

__all__ = ["all_gather", "psum", "psum_scatter", "resolve_topology", "simulate"]

TopologyLike = Topology | str | Path | None
Groups = Sequence[Sequence[int]] | None


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
    if exact or not np.issubdtype(expected.dtype, np.inexact):
        return bool(np.array_equal(actual, expected, equal_nan=np.issubdtype(expected.dtype, np.inexact)))
    # Sums in a different order differ by rounding only: allow a few ulps per addend.
    tolerance = 4 * np.finfo(expected.dtype).eps * group_size
    scale = float(np.max(np.abs(expected), initial=1.0))
    return bool(np.allclose(actual, expected, rtol=tolerance, atol=tolerance * scale))


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


def _simulate(
    collective: str,
    x: Any,
    make_layout: Callable[[np.ndarray], Any],
    topology: TopologyLike,
    algorithm: str | None,
    verify: bool,
    cut_through: bool = True,
) -> Result:
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
    outputs, runs, time = [], [], 0.0
    for leaf, layout in zip(leaves, layouts, strict=True):
        schedule = build_schedule(layout.pattern, layout.groups, algorithm)
        buffers = [
            {(b, p): piece for b, block in held.items() for p, piece in enumerate(np.array_split(block, schedule.pieces))} for held in layout.blocks(leaf)
        ]
        playback = play(topo, schedule.transfers, buffers, cut_through=cut_through)
        output = _output(collective, layout, playback, schedule.pieces, leaf.dtype)
        if verify:
            exact = layout.pattern == "gather"
            for device, expected in layout.reference_rows(leaf):
                if not _matches(output[device], expected, exact, len(layout.groups[0])):
                    raise EngineError(
                        f"{collective} with {algorithm} on {topo.name}: device {device}'s simulated output differs from the NumPy reference; "
                        "this is a netsim bug, please report it"
                    )
        outputs.append(output)
        runs.append(LeafRun(leaf.shape, str(leaf.dtype), schedule, playback))
        time += playback.time
    groups = layouts[0].groups
    n = len(groups[0])
    per_device = sum(leaf[0].nbytes for leaf in leaves)
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
        verified=verify,
        leaves=runs,
        topology_obj=topo,
        forwarding="cut_through" if cut_through else "store_and_forward",
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
    )


def psum(
    x: Any,
    axis_index_groups: Groups = None,
    topology: TopologyLike = None,
    algorithm: str | None = None,
    *,
    verify: bool = True,
    cut_through: bool = True,
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
    x = scenario.make_input()
    if spec.op == "all_gather":
        result = all_gather(x, spec.axis, spec.tiled, spec.axis_index_groups, **options)
    elif spec.op == "psum_scatter":
        result = psum_scatter(x, spec.scatter_dimension, spec.axis_index_groups, spec.tiled, **options)
    else:
        result = psum(x, spec.axis_index_groups, **options)
    result.scenario = scenario.name
    return result
