"""Loading a scenario: validate its fields, then check everything that can be checked without simulating."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from netsim.algorithms.registry import ALGORITHMS, check_algorithm
from netsim.checks.memory import MATERIALISE_LIMIT_BYTES, MemoryEstimate, MemoryLimitError, check_memory, estimate_memory, mean_hops, pieces_of, transfers_of
from netsim.network.device_mesh import group_sizes
from netsim.network.topology import Topology
from netsim.scenario.errors import ScenarioError
from netsim.scenario.models import Scenario
from netsim.scenario.topology_spec import MAX_DEVICES
from netsim.scenario.yaml_files import read_yaml, validate
from netsim.semantics.patterns import PATTERNS

_ARGUMENT_FIELDS = (
    ("axis_index_groups", "collective.axis_index_groups"),
    ("scatter_dimension", "collective.scatter_dimension"),
    ("axis", "collective.axis"),
    ("all_gather with tiled", "collective.tiled"),
    ("split_axis", "collective.split_axis"),
    ("concat_axis", "collective.concat_axis"),
    ("perm", "collective.perm"),
)


HIERARCHICAL_NEEDS_AXES = (
    "hierarchical runs over mesh axes (the DCN's first, then the slice's), and axis_index_groups has none;"
    " name the axes (collective.axes: [dcn, ici] with a mesh), or pick another algorithm"
)


def _check_scenario_algorithm(scenario: Scenario, layout: Any) -> None:
    """The algorithm runs the collective on these groups (ppermute: direct, or multipath)."""
    if PATTERNS[layout.pattern].pairs:
        if scenario.algorithm not in (None, "direct", "multipath"):
            problem = f"ppermute sends every pair directly (direct, the default) or over disjoint shortest routes (multipath), got {scenario.algorithm!r}"
            raise ScenarioError(scenario.source, "algorithm", problem)
        return
    if scenario.algorithm == "multipath":
        problem = f"multipath is a ppermute algorithm (a pair's payload over disjoint routes); {scenario.collective.op} cannot run it"
        raise ScenarioError(scenario.source, "algorithm", problem)
    try:
        check_algorithm(layout.pattern, len(layout.groups[0]), scenario.algorithm)
    except ValueError as error:
        raise ScenarioError(scenario.source, "algorithm", str(error)) from None
    if scenario.algorithm == "hierarchical" and getattr(scenario.collective, "axis_index_groups", None) is not None and len(layout.groups[0]) > 1:
        raise ScenarioError(scenario.source, "algorithm", HIERARCHICAL_NEEDS_AXES)


def load_scenario(path: str | Path, *, build_topology: bool = True) -> Scenario:
    """Read and validate a scenario file.

    Everything that can be checked without simulating is checked here: the file's
    fields and units, the topology, the algorithm, and the collective's arguments
    against the input shape and the group layout. With ``build_topology=False`` the
    topology's graph is not built (closed-form estimates need only its shape).

    Raises
    ------
    ScenarioError
        Naming the file, the field and what is expected.

    Examples
    --------
    >>> s = load_scenario("scenarios/allgather_ring8.yaml")
    >>> s.collective.op, s.topology_obj.n_devices
    ('all_gather', 8)
    """
    path = Path(path)
    data = read_yaml(path)
    if isinstance(data, dict) and "grid" in data and "topology" not in data:
        raise ScenarioError(str(path), "", f"this is a study (it has a grid), not a scenario: run it with `netsim sweep {path} -o DIR`")
    return scenario_from_data(data, str(path), path.parent, build_topology=build_topology)


def scenario_from_data(data: Any, source: str, base_dir: Path | None = None, *, build_topology: bool = True) -> Scenario:
    """Validate a scenario given as parsed data (a mapping), as :func:`load_scenario` does.

    Sweeps use it to check each point of a study without writing a file.

    Parameters
    ----------
    data : dict
        The scenario's fields, as a YAML scenario file holds them.
    source : str
        What error messages name as the file, e.g. ``"studies/x.yaml point 3"``.
    base_dir : pathlib.Path, optional
        Where relative topology paths are looked up.
    build_topology : bool, default True
        Build the topology's graph now (closed-form estimates need only its shape).

    Raises
    ------
    ScenarioError
        Naming ``source``, the field and what is expected.

    Examples
    --------
    >>> data = {"name": "t", "topology": "ring4", "collective": {"op": "psum"}, "input": {"shape": [2]}}
    >>> scenario_from_data(data, "inline").topology_obj.n_devices
    4
    """
    if isinstance(data, dict) and "ops" in data and "collective" not in data:
        raise ScenarioError(source, "", "this is a program file (it has ops): run it with `netsim program` or netsim.run_program")
    if isinstance(data, dict) and "hlo" in data and "collective" not in data:
        raise ScenarioError(source, "", "this is an HLO program file (it has hlo): run it with `netsim program` or netsim.programs.hlo.run.run_hlo_program")
    scenario = validate(Scenario, data, source, {"source": source, "base_dir": base_dir})
    topology = scenario.topology_shape  # resolves files and link overrides now
    if topology.n_devices > MAX_DEVICES:
        raise ScenarioError(source, "topology", f"{topology.n_devices} devices is more than netsim simulates ({MAX_DEVICES})")
    if build_topology:
        scenario.topology_obj  # noqa: B018  (builds the graph now)
    _ = scenario.mesh_obj, scenario.groups  # checks the mesh and the axes now
    if scenario.input.shape is None and scenario.input.bytes_per_device is None:
        raise ScenarioError(source, "input", "give either shape (a list of sizes) or bytes_per_device (e.g. '4 MiB')")
    if scenario.input.shape is not None and scenario.input.bytes_per_device is not None:
        raise ScenarioError(source, "input", "give shape or bytes_per_device, not both")
    if scenario.input.bytes_per_device is not None:
        itemsize = np.dtype(scenario.input.dtype).itemsize
        count, rest = divmod(scenario.input.bytes_per_device, itemsize)
        if rest:
            raise ScenarioError(
                source,
                "input.bytes_per_device",
                f"{scenario.input.bytes_per_device} bytes is not a whole number of {scenario.input.dtype} elements ({itemsize} bytes each)",
            )
        if scenario._splits_into_group_rows and count % scenario._group_size:
            raise ScenarioError(
                source,
                "input.bytes_per_device",
                f"{count} elements do not split into {scenario._group_size} equal blocks; pick a multiple of {scenario._group_size * itemsize} bytes",
            )
    total = topology.n_devices * math.prod(scenario.shape) * np.dtype(scenario.input.dtype).itemsize
    if total >= 2**62 and (scenario.data == "none" or not build_topology):  # NumPy indexes with 64 bits (with data, the memory check refuses first)
        problem = f"{topology.n_devices} devices of {_plural(scenario.shape)} is more than an array can index (2**62 bytes in all); use smaller dimensions"
        raise ScenarioError(source, "input.shape" if scenario.input.shape is not None else "input.bytes_per_device", problem)
    for device in scenario.stragglers:
        if device >= topology.n_devices:
            raise ScenarioError(source, f"stragglers.{device}", f"device {device} is not on {topology.name} (devices 0..{topology.n_devices - 1})")
    if build_topology:  # about to simulate (estimates alone need no memory for data)
        _check_memory(scenario, source)
    try:
        layout = scenario.layout()
    except ValueError as error:
        message = str(error).replace("input has", "topology has room for")
        field = next((f for prefix, f in _ARGUMENT_FIELDS if message.startswith(prefix)), "input.shape")
        raise ScenarioError(source, field, message) from None
    _check_scenario_algorithm(scenario, layout)
    if build_topology and scenario.faults:
        _check_reachable(scenario.topology_obj, layout.groups, source)
    return scenario


def memory_estimate(scenario: Scenario) -> MemoryEstimate:
    """What a validated scenario will need in memory, from its sizes alone (see :func:`netsim.checks.memory.estimate_memory`).

    Examples
    --------
    >>> estimate = memory_estimate(load_scenario("scenarios/allgather_ring8.yaml"))
    >>> estimate.outputs == 8 * 8 * 256 * 256 * 4
    True
    """
    itemsize = np.dtype(scenario.input.dtype).itemsize
    input_bytes = math.prod(scenario.shape) * itemsize
    n_devices = scenario.topology_shape.n_devices
    try:  # outputs over the limit stay lazy and take no memory up front
        materialised = n_devices * math.prod(scenario.layout().output_shape) * itemsize <= MATERIALISE_LIMIT_BYTES
    except ValueError:  # bad arguments: the layout check right after this one names them
        materialised = True
    axes = getattr(scenario.collective, "axes", None)
    known = scenario.mesh.shape if scenario.mesh is not None else {}
    op, shape = scenario.collective.op, scenario.topology_shape
    group_shape = None
    if axes is not None and all(a in known for a in axes):  # as the mesh's groups run (a mesh axis over several physical axes: each)
        dims = tuple(shape.dims)
        laid = scenario.mesh.devices is None and math.prod(dims) == math.prod(known.values())
        given = scenario.mesh.axis_dims
        axis_dims = {a: [d] if isinstance(d, int) else d for a, d in given.items()} if given is not None else None
        group_shape = group_sizes(known, dims, axes, axis_dims) if laid else tuple(known[a] for a in axes)
    pieces = pieces_of(ALGORITHMS.get(scenario.algorithm), group_shape)
    transfers = transfers_of(ALGORITHMS.get(scenario.algorithm), n_devices, group_shape)
    try:
        algorithm = scenario.resolved_algorithm
    except ValueError:  # bad arguments: named by the layout check after the memory check
        algorithm = scenario.algorithm
    hops = mean_hops(algorithm, tuple(shape.dims), tuple(shape.wraparound))
    if op == "ppermute":
        transfers = len(scenario.collective.perm) * pieces
    return estimate_memory(
        op,
        n_devices,
        scenario._group_size,
        input_bytes,
        pieces,
        materialised=materialised,
        transfers=transfers,
        data=scenario.data,
        hops=hops,
        algorithm=algorithm,
        itemsize=itemsize,
    )


def _check_memory(scenario: Scenario, source: str) -> None:
    """Refuse, before anything is allocated, a scenario the machine has no memory for (timing-only runs too: their schedule)."""
    try:
        check_memory(memory_estimate(scenario), timing_only=scenario.data == "none")
    except MemoryLimitError as error:
        raise ScenarioError(source, "input", str(error)) from None


def _plural(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) + " elements"


def _check_reachable(topology: Topology, groups: tuple[tuple[int, ...], ...], source: str) -> None:
    """With links down, every member of a group must still reach every other one."""
    if not topology.down_links:
        return
    component = {d: c for c, members in enumerate(nx.strongly_connected_components(topology.graph)) for d in members}
    for group in groups:
        for member in group[1:]:
            if component[member] != component[group[0]]:
                a, b = (group[0], member) if not nx.has_path(topology.graph, group[0], member) else (member, group[0])
                down = ", ".join(topology.link_name(link) for link in topology.down_links[:6])
                raise ScenarioError(
                    source,
                    "faults",
                    f"with links {down}{', ...' if len(topology.down_links) > 6 else ''} down, device {a} cannot reach device {b} "
                    f"of its group {list(group)}; bring a link back up or change the groups",
                )
