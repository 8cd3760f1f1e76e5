"""How a collective runs: from the stacked input to a :class:`~netsim.result.Result`.

:func:`run_collective` is what every function of :mod:`netsim.collectives` and
:mod:`netsim.mlx` calls. It flattens a pytree input into its arrays, resolves the
topology, checks that the run fits in memory (:mod:`netsim.checks.memory`), plans the
collective with an algorithm (:func:`netsim.algorithms.schedule.build_schedule`),
builds each device's starting chunks (real arrays, or size-only stand-ins), plays
them on the topology (:func:`netsim.engine.play`), checks the run's invariants,
writes and verifies JAX's output (:mod:`netsim.outputs`) and follows the critical
path; each array of the pytree runs after the previous one.
"""

from __future__ import annotations

import functools
import gc
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from netsim.algorithms.registry import ALGORITHMS, check_algorithm, default_algorithm
from netsim.algorithms.schedule import Schedule, build_schedule
from netsim.allocator import RETURN_FREED_MIN_BYTES, return_freed_memory
from netsim.analysis.critical_path import critical_path
from netsim.checks.invariants import InvariantError
from netsim.checks.memory import (
    MATERIALISE_LIMIT_BYTES,
    check_memory,
    estimate_memory,
    mean_hops,
    pieces_of,
    transfers_of,
)
from netsim.engine import ComputeUnit, Link
from netsim.engine.row_buffers import RowBuffers
from netsim.network.calibration import in_force
from netsim.network.device_mesh import AxisGroups
from netsim.network.topology import Topology
from netsim.outputs import check_lazy_output, first_difference, held_chunks, output_row, stacked_output
from netsim.result import LeafRun, Result
from netsim.run import TopologyLike, check_engine, play_checked, resolve_topology
from netsim.semantics import ops as registry
from netsim.semantics.chunks import LazyOutput, SizeOnly
from netsim.semantics.patterns import PATTERNS
from netsim.version import __version__

__all__ = [
    "DATA_MODES",
    "OUTPUT_MODES",
    "Groups",
    "Stragglers",
    "flatten_pytree",
    "provenance",
    "run_collective",
    "start_times",
]

Groups = Sequence[Sequence[int]] | None
Stragglers = Mapping[int, float] | None

DATA_MODES = ("values", "none")
"""``data=``: move the real arrays, or stand-ins that carry sizes only (same timings)."""
OUTPUT_MODES = ("auto", "full", "lazy")
"""``output=``: materialise the stacked output, keep it lazy, or decide by its size."""


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
    if stragglers is not None and not hasattr(stragglers, "items"):
        raise ValueError(f"stragglers must map devices to delays in seconds, e.g. {{2: 20e-6}}; got a {type(stragglers).__name__}")
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


def _numbers(collective: str, leaf: Any) -> Any:
    """A leaf as JAX would take it: numbers only (TypeError otherwise); summed booleans count, as int32."""
    dtype = getattr(leaf, "dtype", None)
    if dtype is None or not isinstance(leaf, np.ndarray):
        return leaf
    if dtype.kind in "OUSMm" or (dtype.kind == "V" and not dtype.type.__module__.startswith("ml_dtypes")):
        raise TypeError(f"{collective} moves arrays of numbers (bool, int, float, complex, bfloat16, float8); got an array of {dtype}")
    if dtype == np.bool_ and collective in registry.COLLECTIVES and registry.COLLECTIVES[collective].reduces:
        return leaf.astype(np.int32)  # as jax.lax.psum: True counts 1
    return leaf


def flatten_pytree(tree: Any) -> tuple[list[np.ndarray], Callable[[list[Any]], Any]]:
    """Flatten a pytree of dicts, lists and tuples (dict keys sorted, as in JAX): its arrays, and how to rebuild it.

    Parameters
    ----------
    tree : array, or dict, list or tuple of pytrees

    Returns
    -------
    leaves : list of numpy.ndarray
    rebuild : callable
        ``rebuild(values)`` is the tree with its leaves replaced by ``values``, in order.

    Examples
    --------
    >>> leaves, rebuild = flatten_pytree({"b": [1, 2], "a": 3})
    >>> [int(leaf) for leaf in leaves]
    [3, 1, 2]
    >>> rebuild(["x", "y", "z"])
    {'a': 'x', 'b': ['y', 'z']}
    """
    if isinstance(tree, dict):
        keys = sorted(tree)
        parts = [flatten_pytree(tree[k]) for k in keys]
    elif isinstance(tree, (list, tuple)):
        keys = None
        parts = [flatten_pytree(v) for v in tree]
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


def _pieces(blocks: dict[int, np.ndarray], pieces: int) -> dict[tuple[int, int], np.ndarray]:
    """A device's starting chunks: each block cut in ``pieces`` as ``np.array_split`` cuts it (views, slices along axis 0).

    Examples
    --------
    >>> {key: piece.tolist() for key, piece in _pieces({3: np.arange(5)}, 2).items()}
    {(3, 0): [0, 1, 2], (3, 1): [3, 4]}
    """
    chunks: dict[tuple[int, int], np.ndarray] = {}
    bounds: dict[int, list[tuple[int, int]]] = {}  # by block length: where each piece starts and ends
    for b, block in blocks.items():
        if block.ndim == 0:
            chunks.update(((b, p), piece) for p, piece in enumerate(np.array_split(block, pieces)))
            continue
        cuts = bounds.get(len(block))
        if cuts is None:
            small, big = divmod(len(block), pieces)
            ends = [p * small + min(p, big) for p in range(pieces + 1)]
            cuts = bounds[len(block)] = list(itertools.pairwise(ends))
        for p, (start, end) in enumerate(cuts):
            chunks[(b, p)] = block[start:end]
    return chunks


def _start_buffers(layout: Any, leaf: np.ndarray, pieces: int) -> list[dict]:
    """Each device's starting chunks: its blocks (``layout.blocks``) cut by :func:`_pieces`.

    When the blocks are the rows of one view (``layout.block_rows``) and cut evenly, so are
    the pieces (each a row of one reshape, as ``np.array_split`` cuts it): the buffers are then
    :class:`~netsim.engine.row_buffers.RowBuffers` (every device's keys the same objects, its
    dict made when first read).

    Examples
    --------
    >>> from netsim.semantics.reduce import ReduceScatterLayout
    >>> x = np.arange(16).reshape(2, 8)
    >>> buffers = _start_buffers(ReduceScatterLayout.check(x, 0, True, None), x, 2)
    >>> {key: piece.tolist() for key, piece in buffers[1].items()}
    {(0, 0): [8, 9], (0, 1): [10, 11], (1, 0): [12, 13], (1, 1): [14, 15]}
    """
    rows = layout.block_rows(leaf)
    if rows is None or rows.shape[1] == 0 or rows.shape[1] % pieces:
        return [_pieces(held, pieces) for held in layout.blocks(leaf)]
    rows = rows.reshape(len(rows) * pieces, -1)
    keys = [(b, p) for b in range(len(rows) // (leaf.shape[0] * pieces)) for p in range(pieces)]
    return RowBuffers(keys, rows) if keys else [{} for _ in range(leaf.shape[0])]


def _collector_paused(run: Callable[..., Result]) -> Callable[..., Result]:
    """``run`` with Python's cyclic garbage collector paused (as :func:`netsim.engine.play` pauses it).

    A big run holds lists and dicts of millions of entries from the play to the end
    (routes, buffers); each full collection would walk them all again and free nothing
    (the run's objects go by reference counting).
    """

    @functools.wraps(run)
    def paused(*args: Any, **kwargs: Any) -> Result:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return run(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return paused


@_collector_paused
def run_collective(
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
    engine: str = "auto",
    link_class: type[Link] | None = None,
    compute_class: type[ComputeUnit] | None = None,
) -> Result:
    """Run one collective on a stacked input pytree: the run behind every function of :mod:`netsim.collectives`.

    Parameters
    ----------
    collective : str
        ``"all_gather"``, ``"psum"``, ``"psum_scatter"``, ``"all_to_all"`` or ``"ppermute"``.
    x : array or pytree of arrays
        Each array stacked ``[n_devices, ...]``.
    make_layout : callable
        An array -> its layout (:mod:`netsim.semantics`), checked.
    topology : Topology, str, pathlib.Path or None
        As :func:`resolve_topology`.
    algorithm : str or None
        A name of :data:`netsim.algorithms.ALGORITHMS`; None for the collective's default.
    verify : bool
        Check the output against the NumPy reference.
    cut_through : bool, default True
        Forwarding mode (False: store-and-forward).
    plan : callable, optional
        A layout -> the schedule to play, in place of an algorithm.
    axis_index_groups, stragglers, data, output, engine, link_class, compute_class
        As in :func:`netsim.all_gather`.

    Returns
    -------
    Result

    Examples
    --------
    >>> import numpy as np
    >>> from netsim.semantics.reduce import AllReduceLayout
    >>> r = run_collective("psum", np.arange(8).reshape(4, 2), lambda leaf: AllReduceLayout.check(leaf, None), None, "ring", True)
    >>> r.output[0].tolist(), r.algorithm
    ([12, 16], 'ring')
    """
    check_engine(engine)
    if data not in DATA_MODES:
        raise ValueError(f"data must be one of {', '.join(map(repr, DATA_MODES))}, got {data!r}")
    if output not in OUTPUT_MODES:
        raise ValueError(f"output must be one of {', '.join(map(repr, OUTPUT_MODES))}, got {output!r}")
    leaves, rebuild = flatten_pytree(x)
    if not leaves:
        raise ValueError("input pytree has no arrays")
    leaves = [_numbers(collective, leaf) for leaf in leaves]
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
    axis_names = axes.axes if axes is not None else None
    if axes is None and algorithm is None and plan is None and _whole_torus(topo, layouts[0].groups, n_devices):
        # one group of every device of a torus, no algorithm named: the physical axes are the mesh
        pattern = layouts[0].pattern
        if pattern != "all_to_all":
            algorithm = default_algorithm(pattern, over_mesh_axes=True)
            shape = {"group_shape": topo.dims, "wraparound": topo.wraparound}
            axis_names = tuple(f"physical axis {i}" for i in range(len(topo.dims)))
    if plan is None:
        algorithm = check_algorithm(layouts[0].pattern, len(layouts[0].groups[0]), algorithm)
        across = getattr(topo, "n_slices", 1) > 1  # (a file refuses it on one slice too: netsim.scenario.loading)
        if algorithm == "hierarchical" and across and not shape and layouts[0].groups and len(layouts[0].groups[0]) > 1:  # it would play one flat ring
            raise ValueError(
                "hierarchical runs over mesh axes (the DCN's first, then the slice's), and groups given as device lists have none;"
                " name the axes (e.g. axes: [dcn, ici] with a mesh), or pick another algorithm"
            )
    start_s = start_times(stragglers, n_devices)
    # The fixed cost per collective (calibrated runs): every device launches the collective
    # that long after it is ready, a step of its own before its first byte leaves (one that
    # moves nothing ends at 0 all the same: the playback's time is its last arrival).
    overhead = in_force(topo).collective_overhead_s
    launched = [s + overhead for s in start_s] if overhead else start_s
    pieces = pieces_of(ALGORITHMS.get(algorithm), shape.get("group_shape"))
    group_size = len(layouts[0].groups[0]) if layouts[0].groups else 1
    transfers = transfers_of(ALGORITHMS.get(algorithm), n_devices, shape.get("group_shape"))
    sizes = {"transfers": transfers, "hops": mean_hops(algorithm, tuple(topo.dims), tuple(topo.wraparound)), "algorithm": algorithm}
    if data == "values":
        out_bytes = max(n_devices * math.prod(layout.output_shape) * leaf.dtype.itemsize for leaf, layout in zip(leaves, layouts, strict=True))
        materialised = output == "full" or (output == "auto" and out_bytes <= MATERIALISE_LIMIT_BYTES)
        input_bytes = sum(leaf[0].nbytes for leaf in leaves)
        sizes["itemsize"] = max(leaf.dtype.itemsize for leaf in leaves)
        estimate = estimate_memory(collective, n_devices, group_size, input_bytes, pieces, input_exists=True, materialised=materialised, **sizes)
        check_memory(estimate)
    else:
        estimate = estimate_memory(collective, n_devices, group_size, 0, pieces, data="none", **sizes)
        check_memory(estimate, timing_only=True)
    if estimate.total >= RETURN_FREED_MIN_BYTES:
        return_freed_memory()
    outputs, runs, time, checks = [], [], 0.0, []
    for leaf, layout in zip(leaves, layouts, strict=True):
        schedule = build_schedule(layout.pattern, layout.groups, algorithm, **shape) if plan is None else plan(layout)
        algorithm = schedule.algorithm
        buffers = _size_buffers(layout, schedule.pieces, leaf.dtype.itemsize, n_devices) if data == "none" else _start_buffers(layout, leaf, schedule.pieces)
        playback = play_checked(
            topo,
            schedule,
            buffers,
            engine=engine,
            cut_through=cut_through,
            start_s=launched,
            link_class=link_class,
            compute_class=compute_class,
            pattern=layout.pattern,
            wanted=layout.wanted,
        )
        out_bytes = n_devices * int(np.prod(layout.output_shape, dtype=np.int64)) * leaf.dtype.itemsize
        exact = not PATTERNS[layout.pattern].reduces
        if data == "none":
            result = None
            checks.append("not materialised: data none, chunks carried sizes only (timings are those of the real data)")
        elif output == "full" or (output == "auto" and out_bytes <= MATERIALISE_LIMIT_BYTES):
            result = stacked_output(collective, layout, playback, schedule.pieces, leaf.dtype)
            if verify:
                device = first_difference(layout, leaf, result, exact, len(layout.groups[0]) if layout.groups else 1)
                if device is not None:
                    where = f"{collective} with {algorithm} on {topo.name}"
                    raise InvariantError("output", f"{where}: device {device}'s simulated output differs from the NumPy reference")
                checks.append("equals the NumPy reference of JAX's semantics on every device")
        else:
            final, pieces, dtype = playback, schedule.pieces, leaf.dtype
            result = LazyOutput(
                (n_devices, *layout.output_shape),
                dtype,
                lambda device, layout=layout, final=final, pieces=pieces, dtype=dtype: output_row(
                    collective, layout, held_chunks(final, device, layout.pattern != "gather"), device, pieces, dtype
                ),
                defined_by=(f"{collective} {layout!r}", (leaf,)),  # JAX's output: a function of the input and the layout
            )
            if verify:
                checks.append(check_lazy_output(collective, layout, leaf, playback, buffers, schedule.pieces, result))
        outputs.append(result)
        path = critical_path(topo, schedule.transfers, playback, start_s=launched, cut_through=cut_through)
        runs.append(LeafRun(leaf.shape, str(leaf.dtype), schedule, playback, path.shifted(time), tuple(layout.output_shape)))
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
        total_bytes=per_device * n if registry.collective(collective).gathers else per_device,
        verified=verified,
        leaves=tuple(runs),
        topology_obj=topo,
        forwarding="cut_through" if cut_through else "store_and_forward",
        axes=axis_names,
        faults=_fault_names(topo),
        stragglers={d: t for d, t in enumerate(start_s) if t > 0},
        provenance={"netsim_version": __version__, "scenario": None, "seed": None},
        verification="; ".join(dict.fromkeys(checks)) if checks else "verification off",
        engine=", ".join(dict.fromkeys(run.playback.engine for run in runs)),
    )


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
    return {"netsim_version": __version__, "scenario": as_run, "seed": scenario.seed, "source": getattr(scenario, "source", None)}


def _whole_torus(topology: Any, groups: Any, n_devices: int) -> bool:
    """One group of every device, in order, on a topology of several axes."""
    return len(topology.dims) > 1 and groups is not None and len(groups) == 1 and tuple(groups[0]) == tuple(range(n_devices))
