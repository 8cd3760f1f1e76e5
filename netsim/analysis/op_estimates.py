"""Each op of a program beside its closed form: the estimate, its kind, what bounds it, and one line on why.

A collective op is looked up in the same registry as ``netsim run`` looks up a
collective (:func:`netsim.analysis.closed_forms.registry.estimate_collective`, for the
op's groups, algorithm, payload per device and the topology's nominal links), and its
kind (``exact``, ``lower_bound``, ``upper_bound`` or ``none``) and formula are the
registry's. A compute op is timed by the roofline ``max(flops / peak_flops, bytes /
hbm_bandwidth)`` (or the seconds it was given): that is how netsim times it, so its
estimate is ``exact``, except a collective matmul, which also waits for its blocks to
arrive (``lower_bound``).

The one-line why uses the words of :func:`netsim.analysis.why.explain` where the same
thing is meant ("1.715x the lower bound", "has no wraparound, so the ring closes the
long way back"), read from the op's own numbers: no critical path per op is walked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from netsim.analysis.across_slices import across_slices, ici_link
from netsim.analysis.closed_forms.geometry import permutation_loads, ports
from netsim.analysis.closed_forms.registry import estimate_collective
from netsim.analysis.closed_forms.terms import canonical_collective
from netsim.analysis.why import TOLERANCE, nominal_link
from netsim.columnar import AT_ONCE
from netsim.engine.columns import hop_arrays
from netsim.network.calibration import in_force
from netsim.network.slices import SlicedTopology
from netsim.network.units import format_bytes, format_seconds
from netsim.semantics.program_values import itemsize

__all__ = ["OpEstimate", "link_sharing", "op_estimate", "op_why"]

WHAT = {"lower_bound": "the lower bound", "upper_bound": "the upper bound"}


@dataclass(frozen=True)
class OpEstimate:
    """What the closed forms say about one op of a program (seconds, bytes).

    Attributes
    ----------
    estimate_s : float or None
        The closed form (None when the registry has none: ``note`` says why).
    kind : str
        ``exact``, ``lower_bound``, ``upper_bound`` or ``none``.
    bound : str
        What limits it: ``ICI``, ``DCN`` (a collective across slices), ``HBM``, ``compute`` or ``given``.
    algorithm : str or None
        A collective's algorithm (None for compute).
    bytes_per_device : int or None
        A collective's input per device (None for compute).
    formula, layout, note : str
        The registry's formula, the group's layout in words, and why there is no formula.
    """

    estimate_s: float | None
    kind: str
    bound: str
    algorithm: str | None = None
    bytes_per_device: int | None = None
    formula: str = ""
    layout: str = ""
    note: str = ""
    line_without_wraparound: bool = False


def op_estimate(record: Any, lowered: Any, topology: Any, peak: float | None, hbm: float | None, comm_s: float = 0.0) -> OpEstimate:
    """The closed form of one lowered op (``comm_s``: how long its own transfers took, for a collective matmul).

    Examples
    --------
    >>> import netsim
    >>> r = netsim.run_program("scenarios/programs/allgather_matmul.yaml")
    >>> run, t = r.program, r.topology_obj
    >>> facts = t.device(0)
    >>> e = op_estimate(run.lowered.ops[0], run.lowered, t, facts["peak_flops"], facts["hbm_bandwidth_Bps"])
    >>> e.kind, e.bound, e.algorithm, e.bytes_per_device, e.layout
    ('exact', 'ICI', 'multiaxis', 131072, 'line of 4')
    """
    op = record.op
    if record.collective:
        array = lowered.arrays[op.inputs[0]]
        nbytes = math.prod(array.local_shape(lowered.mesh.shape)) * itemsize(array.dtype)
        latency, bandwidth = nominal_link(topology)
        groups = record.layout.groups
        if isinstance(topology, SlicedTopology):  # across slices: the DCN's closed forms (netsim.analysis.across_slices)
            axes = tuple(getattr(op, "axes", None) or ())
            planned = getattr(record, "planned", None)  # over mesh axes: the groups' axes as the algorithm planned them, not one flat ring
            shape = lowered.mesh.groups(list(axes)).shape if axes and planned is not None else None  # (a mesh axis over several physical axes: each)
            shape = shape if shape is not None and len(shape) == len(planned) else None
            sliced = across_slices(topology, op.op, record.algorithm, groups, nbytes, *ici_link(topology), shape, planned if shape else None)
            if sliced is not None:
                e = sliced.estimate
                return OpEstimate(e.time_s, e.kind, "DCN", record.algorithm, nbytes, e.formula, f"group across {sliced.slices} slices")
        shape: dict[str, Any] = {"planned": getattr(record, "planned", None)}
        if canonical_collective(op.op) == "ppermute":
            pairs = [(int(a), int(b)) for a, b in groups]
            hops, shared, spread = permutation_loads(topology.dims, topology.wraparound, pairs)
            shape = {"hops": hops, "shared": shared, "routes": spread, "ports": ports(topology.dims, topology.wraparound, pairs), "pieces": record.pieces}
            groups = pairs or [(0,)]
        try:
            closed = estimate_collective(
                op.op,
                record.algorithm,
                topology.dims,
                topology.wraparound,
                groups,
                nbytes,
                latency,  # (the effective rate: a calibrated run's link efficiency applied)
                bandwidth,
                item_bytes=itemsize(array.dtype),
                fixed_s=in_force(topology).collective_overhead_s,
                **shape,
            )
        except (ValueError, KeyError) as error:
            return OpEstimate(None, "none", "ICI", record.algorithm, nbytes, note=f"no closed form: {error}")
        e, geometry = closed.estimate, closed.geometry
        ring = "ring" in (record.algorithm or "") and (geometry.planned is None or any(geometry.planned))  # (a line planned as a line closes nothing)
        line = geometry.kind in ("line", "mesh") and geometry.neighbours and ring
        if e is None:
            return OpEstimate(None, "none", "ICI", record.algorithm, nbytes, layout=geometry.describe(), note=closed.note, line_without_wraparound=line)
        return OpEstimate(e.time_s, e.kind, "ICI", record.algorithm, nbytes, e.formula, geometry.describe(), line_without_wraparound=line)
    if record.seconds is not None:
        return OpEstimate(record.seconds, "exact", "given", formula="the seconds the op was given")
    efficiency = getattr(record, "efficiency", 1.0)
    flops_s = record.flops / (peak * efficiency) if peak else 0.0
    bytes_s = record.bytes / hbm if hbm else 0.0
    compute = max(flops_s, bytes_s)
    bound = "compute" if flops_s >= bytes_s else "HBM"
    if record.collective_matmul:
        kind = "lower_bound"
        bound = "ICI" if comm_s > compute else bound  # its blocks arrive slower than it multiplies them
    else:
        kind = "exact"
    hbm_text = f"{format_bytes(record.bytes)} at {(hbm or 0) / 1e9:.4g} GB/s of HBM"
    at = f"{_si(peak or 0)}FLOP/s" + (f" x {efficiency:.3g} (its compute efficiency)" if efficiency != 1 else "")
    formula = f"{_si(record.flops)}FLOP at {at}" if bound == "compute" else hbm_text
    return OpEstimate(compute, kind, bound, formula=formula)


def _si(x: float) -> str:
    """A count with an SI prefix and a trailing space: ``8.59 G``.

    Examples
    --------
    >>> _si(8.59e9), _si(1.97e14), _si(12)
    ('8.59 G', '197 T', '12 ')
    """
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}"
    return f"{x:.3g} "


def op_why(time_s: float, e: OpEstimate, beside: list[str]) -> str:
    """One line on why an op took ``time_s`` against its closed form ``e``; ``beside``: ops on its links at the same time.

    Examples
    --------
    >>> e = OpEstimate(75.9e-6, "lower_bound", "ICI", "ring", 4 << 20, "≥ ...", "line of 4", line_without_wraparound=True)
    >>> op_why(130.2e-6, e, [])
    "1.715x the lower bound: the group's line of 4 has no wraparound, so the ring closes the long way back"
    >>> op_why(2.265e-6, OpEstimate(2.265e-6, "exact", "HBM", formula="1.5 MiB at 810 GB/s of HBM"), [])
    'as the estimate: 1.5 MiB at 810 GB/s of HBM'
    """
    if e.estimate_s is None:
        return e.note or "no closed form"
    what = WHAT.get(e.kind, "the estimate")
    if e.estimate_s <= 0:
        return f"{format_seconds(time_s)} against {what} of 0 s: {e.formula}"
    ratio = time_s / e.estimate_s
    if e.algorithm is None:  # compute
        if abs(ratio - 1) <= TOLERANCE:
            return f"as the estimate: {e.formula}"
        waited = "it waits for its blocks to arrive over ICI" if e.bound == "ICI" or e.kind == "lower_bound" else "it waits for its inputs"
        return f"{ratio:.3f}x {what} ({e.formula}): {waited}"
    where = f"for a {e.layout}: {e.formula}" if e.layout else e.formula
    if abs(ratio - 1) <= TOLERANCE:
        return f"as {what} {where}"
    parts = []
    if e.line_without_wraparound and ratio > 1:
        parts.append(f"the group's {e.layout} has no wraparound, so the ring closes the long way back")
    if beside:
        shown = ", ".join(beside[:3]) + (f" and {len(beside) - 3} more" if len(beside) > 3 else "")
        parts.append(f"contention: it shares links with {shown}, on them at the same time")
    if not parts and e.kind == "lower_bound":
        parts.append(f"a bound, not {e.algorithm}'s time: no exact form for it on a {e.layout} ({e.formula})")
    if not parts:
        parts.append(f"{format_seconds(time_s)} against {format_seconds(e.estimate_s)} {where}")
    return f"{ratio:.3f}x {what}: " + "; ".join(parts)


def link_sharing(hops: Any, op_of_transfer: np.ndarray, n_ops: int, at_once: int = AT_ONCE) -> list[set[int]]:
    """Per op, the other ops that used one of its links while it was on that link.

    ``hops`` is a playback's hops; ``op_of_transfer[i]`` the op transfer ``i`` belongs to.
    Each (op, link) pair is taken as one interval, from its first hop's start to its last
    hop's end there. The hops are read ``at_once`` at a time where the pairs are few.

    Examples
    --------
    >>> from netsim.engine import Hop
    >>> L = (0, 1, (0, 1))
    >>> hops = [Hop(0, L, 0.0, 1.0), Hop(1, L, 0.5, 2.0), Hop(2, (1, 2, (0, 1)), 0.0, 1.0)]
    >>> link_sharing(hops, np.array([0, 1, 2]), 3)
    [{1}, {0}, set()]
    """
    transfer, link, start, end, ids = hop_arrays(hops)
    shared: list[set[int]] = [set() for _ in range(n_ops)]
    if not len(transfer):
        return shared
    if n_ops * len(ids) <= min(4 * len(transfer), 1 << 24):  # every (op, link) pair an entry (256 MiB at most): no sort of the hops (12.6 M: 2 s)
        first = np.full(n_ops * len(ids), np.inf)
        last = np.full(n_ops * len(ids), -np.inf)
        for lo in range(0, len(transfer), at_once):  # (``at_once`` hops at a time: no array of pairs a hop)
            part = slice(lo, lo + at_once)
            pair = op_of_transfer[transfer[part]].astype(np.int64)
            pair *= len(ids)
            pair += link[part]
            np.minimum.at(first, pair, start[part])
            np.maximum.at(last, pair, end[part])
        keys = np.flatnonzero(last > -np.inf)  # the pairs used, in order, as np.unique gives them
        first, last = first[keys], last[keys]
    else:
        pair = op_of_transfer[transfer].astype(np.int64) * len(ids) + link
        keys, inverse = np.unique(pair, return_inverse=True)
        first = np.full(len(keys), np.inf)
        last = np.full(len(keys), -np.inf)
        np.minimum.at(first, inverse, start)
        np.maximum.at(last, inverse, end)
    ops_of, links_of = np.divmod(keys, len(ids))
    order = np.argsort(links_of, kind="stable")
    bounds = np.flatnonzero(np.diff(links_of[order])) + 1
    for group in np.split(order, bounds):
        if len(group) < 2:
            continue
        a, b, who = first[group], last[group], ops_of[group]
        overlap = (a[:, None] < b[None, :]) & (a[None, :] < b[:, None])
        for i, j in zip(*np.nonzero(overlap), strict=True):
            if i != j:
                shared[int(who[i])].add(int(who[j]))
    return shared
