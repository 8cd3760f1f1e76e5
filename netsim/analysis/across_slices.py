"""The closed forms of a collective whose groups span several slices, read off a run or a scenario.

A group whose members lie in different slices of a :class:`~netsim.network.slices.SlicedTopology`
crosses the DCN, whose links are not the ICI's: the single-network forms of
:mod:`netsim.analysis.closed_forms` do not apply. :func:`across_slices` finds S (slices a
group spans), M (its members per slice), the inner axes and how the algorithm plans
them, and the NICs' sharing, and evaluates
:func:`~netsim.analysis.closed_forms.multislice.estimate_across_slices`: its estimate, and
the ICI and DCN terms side by side. :func:`with_slices` puts it in a
:class:`~netsim.analysis.closed_forms.registry.CollectiveEstimate` for ``netsim run``,
``estimate``, ``explain`` and sweeps.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from netsim.algorithms.registry import ALGORITHMS, AxesAlgorithm
from netsim.analysis.closed_forms.multislice import DcnPath, MultisliceEstimate, book_across_slices, dcn_bound, estimate_across_slices
from netsim.analysis.closed_forms.registry import CollectiveEstimate
from netsim.analysis.closed_forms.terms import with_fixed_cost
from netsim.engine.link_model import effective_bandwidth
from netsim.network.calibration import in_force
from netsim.network.slices import SlicedTopology

__all__ = ["across_slices", "dcn_path", "ici_link", "leaves_across_slices", "with_slices"]


def dcn_path(topology: SlicedTopology, groups: Sequence[Sequence[int]] | None = None) -> DcnPath:
    """The DCN's links of ``topology``, ``devices_per_nic`` counting only the devices of ``groups`` that cross slices.

    Examples
    --------
    >>> from netsim.network.presets import tpu_slice
    >>> dcn_path(tpu_slice("tpu-v5e:4x4x2slices"))
    DcnPath(nic_bandwidth_Bps=12500000000.0, nic_latency_s=1e-05, pcie_bandwidth_Bps=16000000000.0, pcie_latency_s=1e-06, devices_per_nic=4)
    """
    facts = topology.graph.graph["dcn"]
    c = facts["devices_per_nic"]
    if groups is not None:
        size = topology.slice_size
        crossing = {d for g in groups if len({x // size for x in g}) > 1 for d in g}
        c = max(Counter(topology.nic_of(d) for d in crossing).values(), default=c)
    return DcnPath(facts["nic_bandwidth_Bps"], facts["nic_latency_s"], facts["pcie_bandwidth_Bps"], facts["pcie_latency_s"], c)


def across_slices(
    topology: Any,
    collective: str,
    algorithm: str,
    groups: Sequence[Sequence[int]],
    bytes_per_device: float,
    latency_s: float,
    bandwidth_Bps: float,
    group_shape: Sequence[int] | None = None,
    group_wraparound: Sequence[bool] | None = None,
) -> MultisliceEstimate | None:
    """The closed form of a collective across slices, or None when no group crosses the DCN.

    ``group_shape`` and ``group_wraparound`` are the groups' axes as an algorithm over
    mesh axes planned them (None: one flat ring of the members in order).

    Examples
    --------
    >>> from netsim.network.presets import tpu_slice
    >>> from netsim.network.device_mesh import Mesh
    >>> t = tpu_slice("tpu-v5e:4x4x2slices")
    >>> groups = Mesh({"dcn": 2, "x": 4, "y": 4}, t).groups("dcn")
    >>> e = across_slices(t, "psum", "multiaxis", groups, 2**20, 1e-6, 45e9, (2,), (True,))
    >>> e.estimate.kind, e.terms_text()
    ('exact', 'ICI 0 us | DCN 357.544 us')
    """
    if not isinstance(topology, SlicedTopology) or not groups:
        return None
    found = _across_slices(topology, collective, algorithm, groups, bytes_per_device, latency_s, bandwidth_Bps, group_shape, group_wraparound)
    fixed = in_force(topology).collective_overhead_s  # calibrated: the fixed cost per collective, a step before the first byte leaves
    return found if found is None or not fixed else replace(found, estimate=with_fixed_cost(found.estimate, fixed))


def _across_slices(
    topology: SlicedTopology,
    collective: str,
    algorithm: str,
    groups: Sequence[Sequence[int]],
    bytes_per_device: float,
    latency_s: float,
    bandwidth_Bps: float,
    group_shape: Sequence[int] | None,
    group_wraparound: Sequence[bool] | None,
) -> MultisliceEstimate | None:
    size = topology.slice_size
    spans = [len({d // size for d in g}) for g in groups]
    S = max(spans)
    if S <= 1:
        return None
    group = list(groups[spans.index(S)])
    M = len(group) // S
    path = dcn_path(topology, groups)
    plan = ALGORITHMS.get(algorithm)
    if M == 1:
        return estimate_across_slices(collective, algorithm, bytes_per_device, S, (), (), latency_s, bandwidth_Bps, path)
    if isinstance(plan, AxesAlgorithm) and group_shape is not None:
        kept = [(d, w) for d, w in zip(group_shape, group_wraparound or (True,) * len(group_shape), strict=True) if d > 1]
        pieces = plan.pieces(len(kept))
        strides = [math.prod(d for d, _ in kept[k + 1 :]) for k in range(len(kept))]
        crosses = [len(group) > strides[k] and group[0] // size != group[strides[k]] // size for k in range(len(kept))]
        outer = next((k for k, (d, _) in enumerate(kept) if d == S and crosses[k]), None)
        if outer is not None:  # the DCN axis; the exact forms want it first (the hierarchical algorithm's outer axis)
            inner = tuple(d for k, (d, _) in enumerate(kept) if k != outer)
            rings = tuple(w for k, (_, w) in enumerate(kept) if k != outer)
            if outer == 0 and len(inner) == 1 and rings[0]:  # the exact form wants each slice's members a ring of neighbours
                rings = (all(_ring_of_neighbours(topology, g[k * M : (k + 1) * M]) for g in groups for k in range(S)),)
            args = (collective, algorithm, bytes_per_device, S, inner, rings, latency_s, bandwidth_Bps, path)
            found = estimate_across_slices(*args, pieces=pieces, exact=outer == 0)
            if algorithm == "hierarchical" and outer != 0:  # it runs its first axis as the slow network's: say so, the run is slower for it
                return replace(found, estimate=replace(found.estimate, formula=found.estimate.formula + DCN_NOT_FIRST))
            return found
    return estimate_across_slices(collective, algorithm, bytes_per_device, S, (M,), (False,), latency_s, bandwidth_Bps, path, flat_order=True)


DCN_NOT_FIRST = (
    " (the DCN axis is not the group's first, which hierarchical takes as the slow network's: list it first in axes for the plan XLA uses across slices)"
)


def _ring_of_neighbours(topology: SlicedTopology, members: Sequence[int]) -> bool:
    """Whether ``members`` in order, the last followed by the first, are each one hop from the next, on distinct links both ways round.

    Examples
    --------
    >>> from netsim.network.presets import tpu_slice
    >>> t = tpu_slice("tpu-v5e:2x2x2slices")
    >>> _ring_of_neighbours(t, [0, 1, 3, 2]), _ring_of_neighbours(t, [0, 1, 2, 3])
    (True, False)
    """
    n = len(members)
    if n <= 2:
        return n == 1 or all(len(topology.route(u, v, 1)) == 1 for u, v in ((members[0], members[1]), (members[1], members[0])))
    links = []
    for i in range(n):
        forward, backward = topology.route(members[i], members[(i + 1) % n], 1), topology.route(members[(i + 1) % n], members[i], -1)
        if len(forward) != 1 or len(backward) != 1:
            return False
        links += [forward[0], backward[0]]
    return len(set(links)) == 2 * n


def with_slices(closed: CollectiveEstimate, estimate: MultisliceEstimate | None, path: DcnPath | None = None) -> CollectiveEstimate:
    """``closed`` with the across-slices estimate in place of the single-network one (unchanged when None).

    The book estimate is the scaling book's all-reduce across pods (psum only); ``bound_s`` is the DCN's bytes bound.
    """
    if estimate is None:
        return closed
    bound = book = None
    if path is not None:
        D, S, M = estimate.estimate.bytes_per_device, estimate.slices, estimate.members_per_slice
        bound = dcn_bound(closed.collective, D, S, M, path).time_s
        book = book_across_slices(closed.collective, D, S, M, path.nic_bandwidth_Bps / path.devices_per_nic)
    return replace(closed, estimate=estimate.estimate, book=book, book_bandwidth_s=None, bound_s=bound, note="")


def ici_link(topology: SlicedTopology) -> tuple[float, float]:
    """(latency_s, bandwidth_Bps) of the ICI's links (the first link between two devices, at its effective rate); the defaults when a slice has none."""
    n = topology.n_devices
    for u, v, data in topology.graph.edges(data=True):
        if u < n and v < n:
            return data["latency_s"], effective_bandwidth(data["bandwidth_Bps"], in_force(topology).link_efficiency)
    return 1e-6, 45e9


def leaves_across_slices(result: Any, per_leaf: list[CollectiveEstimate]) -> list[CollectiveEstimate] | None:
    """A run's per-leaf closed forms across slices, in place of ``per_leaf``; None when no group crosses the DCN.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> from netsim.analysis.why import analyse
    >>> t = netsim.tpu_slice("tpu-v5e:2x2x2slices")
    >>> r = netsim.psum(np.ones((8, 1024), np.float32), netsim.Mesh({"dcn": 2, "x": 2, "y": 2}, t).groups("dcn"), t)
    >>> a = analyse(r)
    >>> a.estimate.kind, a.ratio == 1.0 or round(a.ratio, 12)
    ('exact', True)
    """
    topology = result.topology_obj
    if not isinstance(topology, SlicedTopology) or not result.leaves:
        return None
    alpha, B = ici_link(topology)
    out = []
    for closed, leaf in zip(per_leaf, result.leaves, strict=True):
        payload = int(np.prod(leaf.shape[1:], dtype=np.int64)) * np.dtype(leaf.dtype).itemsize
        schedule = leaf.schedule
        estimate = across_slices(
            topology, result.collective, result.algorithm, schedule.groups, payload, alpha, B, schedule.group_shape, schedule.group_wraparound
        )
        if estimate is None:
            return None
        out.append(with_slices(closed, estimate, dcn_path(topology, schedule.groups)))
    return out


COMPARED = ("hierarchical", "multiaxis", "bidirectional_ring", "ring")
"""The algorithms ``netsim estimate`` compares across slices: the hierarchical one, and flat ones."""


def scenario_across_slices(
    scenario: Any, mine: CollectiveEstimate, payload: float, algorithm: str
) -> tuple[CollectiveEstimate, list[tuple[str, CollectiveEstimate]]] | None:
    """A scenario's closed forms across slices (its own, and :data:`COMPARED`); None when no group crosses the DCN.

    Builds the scenario's topology (a multi-slice graph of a few thousand devices builds in well under a second).
    """
    topology = scenario.topology_obj
    groups = scenario.groups if scenario.groups is not None else scenario.layout().groups
    if not isinstance(topology, SlicedTopology) or not groups:
        return None
    alpha, B = ici_link(topology)
    path = dcn_path(topology, groups)
    shape, wraps = getattr(groups, "shape", None), getattr(groups, "wraparound", None)

    def one(name: str) -> CollectiveEstimate | None:
        planned = shape if isinstance(ALGORITHMS.get(name), AxesAlgorithm) else None
        estimate = across_slices(topology, mine.collective, name, list(groups), payload, alpha, B, planned, wraps)
        return None if estimate is None else with_slices(replace(mine, algorithm=name), estimate, path)

    own = one(algorithm)
    if own is None:
        return None
    pattern = {"psum": "all_reduce", "all_gather": "gather", "psum_scatter": "reduce_scatter"}.get(mine.collective)
    compared = [(name, one(name)) for name in COMPARED if pattern is not None and ALGORITHMS[name].runs(pattern)]
    return own, [(name, c) for name, c in compared if c is not None]
