"""The Python API: collectives that mirror ``jax.lax`` and return simulated results.

Each function takes the input stacked ``[n_devices, ...]`` (as :func:`jax.pmap`
does), plans the collective with an algorithm from :mod:`netsim.algorithms`, plays
it on a topology with :mod:`netsim.engine`, moving the real arrays, builds JAX's
output from what each device holds at the end, and checks it against the NumPy
reference in :mod:`netsim.semantics`. How a run goes, step by step, is in
:mod:`netsim.pipeline`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from netsim.algorithms.direct import multipath_permutation, permutation
from netsim.checks.memory import MATERIALISE_LIMIT_BYTES, MemoryLimitError
from netsim.engine import ComputeUnit, EngineError, Link
from netsim.network.topology import UnreachableError
from netsim.pipeline import DATA_MODES, OUTPUT_MODES, Groups, Stragglers, flatten_pytree, provenance, run_collective
from netsim.result import Result
from netsim.run import TopologyLike, resolve_topology
from netsim.semantics import ops as registry
from netsim.semantics.all_to_all import AllToAllLayout
from netsim.semantics.chunks import shape_only
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
    "psum",
    "psum_scatter",
    "simulate",
]


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
    engine: str = "auto",
    link_class: type[Link] | None = None,
    compute_class: type[ComputeUnit] | None = None,
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
    engine : {"auto", "processes", "fast"}, default "auto"
        Which engine plays the run: the model as SimPy processes
        (:mod:`netsim.engine.processes`) or the fast player of the same events
        (:mod:`netsim.engine.fast`); both give the same numbers. ``"auto"`` runs
        the processes up to :data:`~netsim.run.AUTO_PROCESSES_MAX_TRANSFERS`
        transfers, the fast player above. ``Result.engine`` says which ran.
    link_class, compute_class : type, optional
        Your own :class:`~netsim.engine.processes.Link` or
        :class:`~netsim.engine.processes.ComputeUnit` subclass (a link with a
        per-message overhead, say): the process model plays the run with it.

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
    >>> import numpy as np
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
    return run_collective(
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
        engine=engine,
        link_class=link_class,
        compute_class=compute_class,
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
    engine: str = "auto",
    link_class: type[Link] | None = None,
    compute_class: type[ComputeUnit] | None = None,
) -> Result:
    """Simulate ``jax.lax.psum_scatter`` (a reduce-scatter) over the device axis of ``x``.

    Untiled, ``shape[scatter_dimension]`` must equal the group size and that
    dimension is removed; tiled, it must be divisible by the group size and is kept.
    Member k of each group receives block k of the group's sum. Other parameters
    as in :func:`all_gather`.

    Examples
    --------
    >>> import numpy as np
    >>> psum_scatter(np.arange(16).reshape(4, 4)).output
    array([24, 28, 32, 36])
    >>> psum_scatter(np.arange(16).reshape(4, 4), axis_index_groups=[[0, 2], [3, 1]], tiled=True).output
    array([[ 8, 10],
           [20, 22],
           [12, 14],
           [16, 18]])
    """
    return run_collective(
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
        engine=engine,
        link_class=link_class,
        compute_class=compute_class,
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
    engine: str = "auto",
    link_class: type[Link] | None = None,
    compute_class: type[ComputeUnit] | None = None,
) -> Result:
    """Simulate ``jax.lax.psum`` (an all-reduce: reduce-scatter then all-gather).

    Every member of a group receives the group's sum. Other parameters as in
    :func:`all_gather`.

    Examples
    --------
    >>> import numpy as np
    >>> psum(np.arange(4), axis_index_groups=[[0, 1], [2, 3]]).output
    array([1, 1, 5, 5])
    """
    return run_collective(
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
        engine=engine,
        link_class=link_class,
        compute_class=compute_class,
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
    engine: str = "auto",
    link_class: type[Link] | None = None,
    compute_class: type[ComputeUnit] | None = None,
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
    >>> import numpy as np
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
    return run_collective(
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
        engine=engine,
        link_class=link_class,
        compute_class=compute_class,
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
    engine: str = "auto",
    link_class: type[Link] | None = None,
    compute_class: type[ComputeUnit] | None = None,
    algorithm: str = "direct",
) -> Result:
    """Simulate ``jax.lax.ppermute``: each (source, destination) pair of ``perm`` sends one device's input.

    Every pair's payload goes straight along its route (the ``direct`` plan), all
    at once; devices that are no pair's destination get zeros. ``algorithm="multipath"``
    splits a pair's payload over disjoint shortest routes, one leaving by each axis the
    pair crosses (the scaling book's "half right, half down" corner-to-corner send).

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
    >>> import numpy as np
    >>> ppermute(np.arange(4), perm=[(0, 1), (1, 2), (2, 3), (3, 0)]).output
    array([3, 0, 1, 2])
    >>> ppermute(np.arange(1, 5), perm=[(0, 2)]).output
    array([0, 0, 1, 0])
    """
    if algorithm not in ("direct", "multipath"):
        raise ValueError(f"ppermute runs the 'direct' or 'multipath' algorithm, got {algorithm!r}")
    if algorithm == "multipath":
        shape = resolve_topology(topology, _device_count(x)).dims

        def plan(layout: Any) -> Any:
            return multipath_permutation(layout.groups, shape)
    else:

        def plan(layout: Any) -> Any:
            return permutation(layout.groups)

    return run_collective(
        "ppermute",
        x,
        lambda leaf: PermuteLayout.check(leaf, perm),
        topology,
        algorithm,
        verify,
        cut_through,
        plan=plan,
        stragglers=stragglers,
        data=data,
        output=output,
        engine=engine,
        link_class=link_class,
        compute_class=compute_class,
    )


def _device_count(x: Any) -> int:
    """The leading (device) axis of the first array of an input pytree."""
    leaves, _ = flatten_pytree(x)
    return int(leaves[0].shape[0]) if leaves and leaves[0].ndim else 0


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
    if not hasattr(scenario, "collective") or not hasattr(scenario, "topology_obj"):
        raise ValueError(f"simulate takes a scenario from netsim.load_scenario; got {type(scenario).__name__}")
    spec = scenario.collective
    groups = scenario.groups
    options = {
        "engine": scenario.engine,
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
        collective = registry.COLLECTIVES[spec.op]
        arguments = {name: getattr(spec, name) for name in collective.arguments}
        if collective.grouped:
            arguments["axis_index_groups"] = groups
        else:
            options["algorithm"] = options["algorithm"] or collective.algorithm
        result = _FUNCTIONS[spec.op](x, **arguments, **options)
    except EngineError as error:
        # A bug in netsim: say what reproduces it.
        error.args = (f"{error} (scenario {getattr(scenario, 'source', scenario.name)}, seed {scenario.seed})",)
        raise
    except (UnreachableError, MemoryLimitError) as error:
        # load_scenario checks both up front; should the run still hit one, name the file and field
        from netsim.scenario.errors import ScenarioError  # (a scenario is loaded by now: its package is imported)

        field = "faults" if isinstance(error, UnreachableError) else "input"
        raise ScenarioError(getattr(scenario, "source", scenario.name), field, str(error)) from None
    return dataclasses.replace(result, scenario=scenario.name, provenance=provenance(scenario))


_FUNCTIONS = {function.__name__: function for function in (all_gather, psum_scatter, psum, all_to_all, ppermute)}
"""Each collective's function, by its name in the op registry."""
