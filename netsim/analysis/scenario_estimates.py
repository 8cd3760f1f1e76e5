"""The closed forms of a scenario before it runs (``netsim estimate``), and of every algorithm on its layout.

Nothing here simulates or builds a graph: the scenario's topology shape (its axes, links
and calibration in force) is enough, so it is instant for any size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from netsim.analysis.across_slices import scenario_across_slices
from netsim.analysis.closed_forms.geometry import multipath_loads, permutation_loads, ports
from netsim.analysis.closed_forms.registry import COST_MODELS, CollectiveEstimate, estimate_collective
from netsim.analysis.closed_forms.terms import canonical_collective
from netsim.analysis.mixed_links import other_links, with_other_links
from netsim.engine.link_model import effective_bandwidth

__all__ = ["algorithm_estimates", "estimate_scenario", "planned_wraparound"]


def algorithm_estimates(
    collective: str,
    dims: Any,
    wraparound: Any,
    groups: Any,
    bytes_per_device: float,
    latency_s: float,
    bandwidth_Bps: float,
    item_bytes: int = 1,
    fixed_s: float = 0.0,
) -> list[tuple[str, CollectiveEstimate]]:
    """The closed form of every registered algorithm for this collective on this layout.

    Examples
    --------
    >>> rows = algorithm_estimates("all_gather", (8,), (True,), [range(8)], 2**20, 1e-6, 45e9)
    >>> [name for name, e in rows if e.estimate][:3]
    ['ring', 'bidirectional_ring', 'bidirectional_halfway']
    """
    collective = canonical_collective(collective)
    names = list(dict.fromkeys(m.algorithm for m in COST_MODELS if m.collective == collective and m.algorithm != "*"))
    args = (dims, wraparound, groups, bytes_per_device, latency_s, bandwidth_Bps)
    return [
        (name, estimate_collective(collective, name, *args, planned=planned_wraparound(name, groups), item_bytes=item_bytes, fixed_s=fixed_s)) for name in names
    ]


def _axes_default(scenario: Any) -> bool:
    """A scenario over a whole torus with no algorithm named: the multi-axis algorithm plans its physical axes."""
    return scenario.algorithm is None and getattr(scenario, "whole_torus", False) and scenario.resolved_algorithm == "multiaxis"


def planned_wraparound(algorithm: str, groups: Any) -> tuple[bool, ...] | None:
    """The wraparound an algorithm plans a group with: the mesh axes' for a multi-axis
    algorithm on groups from a mesh, else None (one ring).

    Examples
    --------
    >>> import netsim
    >>> groups = netsim.Mesh({"x": 4}, netsim.mesh((4,))).groups("x")
    >>> planned_wraparound("multiaxis", groups), planned_wraparound("ring", groups)
    ((False,), None)
    """
    from netsim.algorithms.registry import ALGORITHMS, AxesAlgorithm
    from netsim.network.device_mesh import AxisGroups

    if isinstance(groups, AxisGroups) and isinstance(ALGORITHMS.get(algorithm), AxesAlgorithm):
        kept = [w for d, w in zip(groups.shape, groups.wraparound, strict=True) if d > 1]  # as the algorithm plans: axes of 1 left out
        return tuple(kept) if kept else tuple(groups.wraparound[:1])
    return None


def estimate_scenario(scenario: Any) -> tuple[CollectiveEstimate, list[tuple[str, CollectiveEstimate]]]:
    """The closed forms for a scenario, without simulating it or building its topology.

    Parameters
    ----------
    scenario : Scenario
        From :func:`netsim.scenario.load_scenario` (``build_topology=False`` keeps it instant).

    Returns
    -------
    (CollectiveEstimate, list)
        The scenario's own algorithm, and every registered algorithm for comparison.

    Examples
    --------
    >>> from netsim.scenario import load_scenario
    >>> mine, others = estimate_scenario(load_scenario("scenarios/allgather_ring8.yaml", build_topology=False))
    >>> round(mine.estimate.time_s * 1e6, 6), mine.estimate.regime
    (27.388978, 'bandwidth-bound')
    """
    shape = scenario.topology_shape
    layout = scenario.layout()
    payload = int(np.prod(scenario.shape, dtype=np.int64)) * np.dtype(scenario.input.dtype).itemsize
    op = scenario.collective.op
    hops, shared, spread, crossed = None, 1, 1, 1
    pairs = getattr(scenario.collective, "perm", None)
    pieces = 2
    if canonical_collective(op) == "ppermute" and pairs:
        pairs = [(int(a), int(b)) for a, b in pairs]
        if scenario.resolved_algorithm == "multipath":
            hops, shared, spread, pieces = multipath_loads(shape.dims, shape.wraparound, pairs)
        else:
            hops, shared, spread = permutation_loads(shape.dims, shape.wraparound, pairs)
        crossed = ports(shape.dims, shape.wraparound, pairs)
    groups = scenario.groups if scenario.groups is not None else (layout.groups or [(0,)])  # no pairs: nothing moves
    others: set[tuple[float, float]] = set()
    efficiency = shape.link_efficiency  # the links' effective rates (1: nominal)
    latency, bandwidth = shape.latency_s, effective_bandwidth(shape.bandwidth_Bps, efficiency)
    if shape.chip_axis is not None:
        chip_link = (shape.chip_link_latency_s, effective_bandwidth(shape.chip_link_bandwidth_Bps, efficiency))
    if shape.chip_axis is not None and all(len({d // 2 for d in group}) == 1 for group in groups):  # every group is on one chip: on-chip links only
        latency, bandwidth = chip_link
    elif shape.chip_axis is not None and any(len({d % 2 for d in group}) > 1 for group in groups):  # a group crosses a chip's own link
        others = other_links([chip_link], latency, bandwidth)
    item = np.dtype(scenario.input.dtype).itemsize
    args = (shape.dims, shape.wraparound, groups, payload, latency, bandwidth)
    mine = estimate_collective(
        op,
        scenario.resolved_algorithm,
        *args,
        hops=hops,
        shared=shared,
        ports=crossed,
        routes=spread,
        pieces=pieces,
        planned=shape.wraparound if _axes_default(scenario) else planned_wraparound(scenario.resolved_algorithm, groups),
        item_bytes=item,
        fixed_s=shape.collective_overhead_s,
    )
    every = algorithm_estimates(op, *args, item_bytes=item, fixed_s=shape.collective_overhead_s)
    held = [(name, with_other_links(c, others, latency, bandwidth)) for name, c in every]
    sliced = scenario_across_slices(scenario, mine, payload, scenario.resolved_algorithm) if shape.slices > 1 else None
    if sliced is not None:  # groups across slices: the DCN's forms (netsim.analysis.across_slices)
        return sliced
    return with_other_links(mine, others, latency, bandwidth), held
