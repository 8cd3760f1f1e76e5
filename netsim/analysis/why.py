"""Put the closed forms beside a run's simulated time, and say why they differ.

:func:`analyse` looks up the closed form of the run's (collective, algorithm, layout)
in :mod:`netsim.analysis.closed_forms`, evaluates it for the run's payload and links, and
compares it with the simulated time. Where they differ by more than 1 %, the reason is
read from the run itself: its critical path, split by :mod:`netsim.analysis.path_stats`,
divides the simulated time into per-hop latency, transmission, queueing behind other messages
and late starts, and each part is set against the formula's latency and bandwidth
terms (contention on named links, extra hops, a missing wraparound, store-and-forward,
uneven chunks, pipelining, stragglers). Nothing is simulated again and nothing is assumed.

:func:`estimate_scenario` (:mod:`netsim.analysis.scenario_estimates`) gives the same closed forms for a scenario without running
it (``netsim estimate``).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from netsim.analysis.across_slices import leaves_across_slices
from netsim.analysis.closed_forms.geometry import ports
from netsim.analysis.closed_forms.registry import CollectiveEstimate, estimate_collective
from netsim.analysis.closed_forms.terms import Estimate, canonical_collective
from netsim.analysis.mixed_links import crossed_links, other_links, with_other_links
from netsim.analysis.per_result import once_per_result
from netsim.analysis.scenario_estimates import algorithm_estimates, estimate_scenario, planned_wraparound
from netsim.engine.link_model import effective_bandwidth
from netsim.network.calibration import in_force

if TYPE_CHECKING:
    from netsim.analysis.path_stats import PathFacts
    from netsim.analysis.stats import RunStats
    from netsim.network.topology import Topology
    from netsim.result import Result

__all__ = ["TOLERANCE", "Analysis", "algorithm_estimates", "analyse", "estimate_scenario", "leaf_estimates", "nominal_link", "planned_wraparound"]

TOLERANCE = 0.01
"""Relative difference between simulated time and estimate above which a run explains itself."""


@dataclass(frozen=True)
class Analysis:
    """A run's simulated time beside its closed forms.

    Attributes
    ----------
    simulated_s : float
    closed : CollectiveEstimate
        What the closed forms say for the run's layout (of its first leaf).
    estimate : Estimate or None
        The algorithm's closed form for the whole run (leaves added up); None when
        there is none, and ``closed.note`` says so.
    book : Estimate or None
        The scaling book's estimate.
    book_bandwidth_s : float or None
        The scaling book's bandwidth figure V/(W_ici·N_axes) (not a bound: it counts
        the share a member already holds).
    bound_s : float or None
        A lower bound for any algorithm, α + R/(L·B) (see
        :mod:`netsim.analysis.closed_forms.bounds`).
    ratio : float or None
        simulated / estimate.
    why : str
        One line explaining a difference of more than 1 % (empty otherwise).
    latency_s, bandwidth_Bps : float
        The link parameters the formulas used.
    """

    simulated_s: float
    closed: CollectiveEstimate
    estimate: Estimate | None
    book: Estimate | None
    book_bandwidth_s: float | None
    bound_s: float | None
    ratio: float | None
    why: str
    latency_s: float
    bandwidth_Bps: float

    @property
    def regime(self) -> str | None:
        """Latency- or bandwidth-bound, by the algorithm's closed form (else the book's)."""
        chosen = self.estimate or self.book
        return chosen.regime if chosen else None

    @property
    def crossover_bytes(self) -> float | None:
        """Per-device payload at which the latency and bandwidth terms are equal."""
        chosen = self.estimate or self.book
        return chosen.crossover_bytes if chosen else None

    @property
    def bound_fraction(self) -> float | None:
        """The lower bound over the simulated time: how close the run comes to it (at most 1)."""
        return self.bound_s / self.simulated_s if self.bound_s is not None and self.simulated_s > 0 else None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values.

        Examples
        --------
        >>> import numpy as np, netsim
        >>> d = netsim.analyse(netsim.all_gather(np.zeros((8, 1024), np.float32))).as_dict()
        >>> f"{d['ratio']:.6f}", d["regime"], d["formula"]
        ('1.000000', 'latency-bound', '(n−1)·(α + s/(2B)), s = input per device')
        """
        e, b = self.estimate, self.book
        return {
            "estimate_s": e.time_s if e else None,
            "estimate_kind": e.kind if e else "none",
            "estimate_bounds": e.bounds if e else None,
            "latency_term_s": e.latency_s if e else None,
            "bandwidth_term_s": e.bandwidth_s if e else None,
            "formula": e.formula if e else None,
            "formula_source": e.source if e else None,
            "no_closed_form": self.closed.note or None,
            "ratio": self.ratio,
            "regime": self.regime,
            "crossover_bytes_per_device": _finite(self.crossover_bytes),
            "layout": self.closed.geometry.describe(),
            "book_estimate_s": b.time_s if b else None,
            "book_formula": b.formula if b else None,
            "book_bandwidth_s": self.book_bandwidth_s,
            "bound_s": self.bound_s,
            "bound_fraction": self.bound_fraction,
            "why": self.why or None,
            "link_latency_s": self.latency_s,
            "link_bandwidth_Bps": self.bandwidth_Bps,
            **({"fixed_cost_s": e.fixed_s} if e and e.fixed_s else {}),  # calibrated runs: the fixed cost per collective, a term of its own
        }


def _t(seconds: float) -> str:
    """A duration to three significant digits, for explanations.

    Examples
    --------
    >>> _t(2.23016888e-05), _t(1e-06), _t(9.9999999999997e-07), _t(0.0)
    ('22.3 us', '1 us', '1 us', '0 ns')
    """
    seconds = float(f"{seconds:.3g}")  # (rounded first: 999.99 ns is 1 us)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def nominal_link(topology: Topology) -> tuple[float, float]:
    """(latency_s, bandwidth_Bps) shared by most links: the formulas' α and B.

    B is the links' effective rate (:func:`~netsim.engine.link_model.effective_bandwidth`):
    their nominal bandwidth unless the run is calibrated.

    Examples
    --------
    >>> from netsim.network.topology import ring
    >>> nominal_link(ring(4))
    (1e-06, 45000000000.0)
    """
    efficiency = in_force(topology).link_efficiency
    counts = Counter((data["latency_s"], effective_bandwidth(data["bandwidth_Bps"], efficiency)) for _, _, data in topology.graph.edges(data=True))
    if not counts:
        return 0.0, 1.0
    return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]


def run_link(result: Result) -> tuple[float, float]:
    """(latency_s, bandwidth_Bps) the closed forms take: the speed every link the run crossed shares, else :func:`nominal_link`.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> r = netsim.all_gather(np.zeros((8, 1024), np.float32), axis_index_groups=[[0, 1], [2, 3], [4, 5], [6, 7]], topology="tpu7x:2x2x1")
    >>> run_link(r), nominal_link(r.topology_obj)  # the on-chip link's, not the lanes'
    ((1e-06, 90000000000.0), (1e-06, 45000000000.0))
    """
    crossed = crossed_links(result)
    return next(iter(crossed)) if len(crossed) == 1 else nominal_link(result.topology_obj)


def _leaf_bytes(leaf: Any) -> int:
    return int(np.prod(leaf.shape[1:], dtype=np.int64)) * np.dtype(leaf.dtype).itemsize


@once_per_result
def analyse(result: Result, stats: RunStats | None = None) -> Analysis:
    """The closed forms beside a run, and why they differ from it.

    Parameters
    ----------
    result : Result
        A simulated collective (carrying its topology).
    stats : RunStats, optional
        The run's statistics, if already computed; only needed for the explanation.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> a = analyse(netsim.all_gather(np.zeros((4, 2**18), np.float32), algorithm="ring"))
    >>> f"{a.ratio:.6f}", a.regime, a.why
    ('1.000000', 'bandwidth-bound', '')
    >>> strided = netsim.all_gather(np.zeros((4, 2**18), np.float32), axis_index_groups=[[0, 2], [1, 3]], algorithm="ring")
    >>> print(analyse(strided).why)  # doctest: +ELLIPSIS
    1.959x the lower bound: contention: the critical path waited 22.3 us for busy links 1->2 (22.3 us, queue 1); 4 of 4 transfers ...
    """
    topology = result.topology_obj
    if topology is None:
        raise ValueError(f"result of {result.collective} on {result.topology} carries no topology to estimate on")
    crossed = crossed_links(result)
    latency, bandwidth = next(iter(crossed)) if len(crossed) == 1 else nominal_link(topology)
    others = other_links(crossed, latency, bandwidth)
    per_leaf = [with_other_links(c, others, latency, bandwidth) for c in leaf_estimates(result, latency, bandwidth)]
    sliced = leaves_across_slices(result, per_leaf)  # groups across slices: the DCN's forms (netsim.analysis.across_slices)
    if sliced is not None:
        per_leaf, others = sliced, set()
    closed = per_leaf[0]
    estimate = _total([c.estimate for c in per_leaf])
    if estimate is not None and estimate.kind == "exact" and (topology.down_links or topology.degraded_links):
        # the form is exact for the nominal links, not for this run's failed or slowed ones
        estimate = replace(estimate, kind="none", formula=estimate.formula + " (nominal links: no promise where links fail or slow down)")
    elif estimate is not None and estimate.kind == "exact" and any(late > 0 for late in (result.stragglers or {}).values()):
        # the form is exact when every device starts at once, not for this run's late starters
        estimate = replace(estimate, kind="none", formula=estimate.formula + " (every device starting at once: no promise where stragglers start late)")
    book = _total([c.book for c in per_leaf])
    figure = None if any(c.book_bandwidth_s is None for c in per_leaf) else sum(c.book_bandwidth_s for c in per_leaf)
    bound = None if any(c.bound_s is None for c in per_leaf) else sum(c.bound_s for c in per_leaf)
    ratio = result.time / estimate.time_s if estimate is not None and estimate.time_s > 0 else None
    why = ""
    if ratio is not None and abs(ratio - 1) > TOLERANCE:
        from netsim.analysis.path_stats import path_facts

        facts = stats.path_facts() if stats is not None else path_facts(result, topology)
        why = explain(result.time, estimate, facts, closed, latency, getattr(result, "forwarding", "cut_through"))
        if others:  # the formula's B and α are not every link's: say so first
            speeds = ", ".join(f"{b / 1e9:.6g} GB/s and {_t(a)}" for a, b in sorted(others))
            head, _, rest = why.partition(": ")
            why = f"{head}: links of other speeds: the run crosses links of {speeds}, the formula counts {bandwidth / 1e9:.6g} GB/s and {_t(latency)}; {rest}"
    analysis = Analysis(result.time, closed, estimate, book, figure, bound, ratio, why, latency, bandwidth)
    return analysis


def leaf_estimates(result: Result, latency_s: float, bandwidth_Bps: float) -> list[CollectiveEstimate]:
    """The closed forms of each leaf of a run, for links of ``latency_s`` and ``bandwidth_Bps``.

    What the algorithm planned (the axes it took as lines) and, for ppermute, how its
    routes share links are read from the run's schedule and routes.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> r = netsim.all_gather({"a": np.zeros((4, 8), np.float32), "b": np.zeros((4, 2), np.float32)}, algorithm="ring")
    >>> [(e.estimate.kind, e.estimate.bytes_per_device) for e in leaf_estimates(r, 1e-6, 45e9)]
    [('exact', 32.0), ('exact', 8.0)]
    """
    topology = result.topology_obj
    hops, shared, spread, planned, crossed, pieces = None, 1, 1, None, 1, 2
    if result.leaves:
        planned = result.leaves[0].schedule.group_wraparound
    if canonical_collective(result.collective) == "ppermute" and result.leaves:
        leaf = result.leaves[0]
        users: dict[Any, set[Any]] = {}
        by_pair: dict[Any, set[Any]] = {}
        for transfer, route in zip(leaf.schedule.transfers, leaf.playback.routes, strict=True):
            by_pair.setdefault(transfer.key[0], set()).add(tuple(route))
            for link in route:
                users.setdefault(link, set()).add(transfer.key[0])
        hops = max((len(r) for r in leaf.playback.routes), default=0)
        shared = max((len(u) for u in users.values()), default=1)
        counts = {len(routes) for routes in by_pair.values()}
        spread = counts.pop() if len(counts) == 1 else 0
        crossed = ports(topology.dims, topology.wraparound, result.groups)
        pieces = leaf.schedule.pieces
    return [
        estimate_collective(
            result.collective,
            result.algorithm,
            topology.dims,
            topology.wraparound,
            result.groups or [(0,)],  # a ppermute with no pairs moves nothing: one device on its own
            payload,
            latency_s,
            bandwidth_Bps,
            hops=hops,
            shared=shared,
            ports=crossed,
            routes=spread,
            pieces=pieces,
            planned=planned,
            item_bytes=item,
            fixed_s=in_force(topology).collective_overhead_s,
        )
        for payload, item in ([(_leaf_bytes(leaf), np.dtype(leaf.dtype).itemsize) for leaf in result.leaves] or [(0, 1)])
    ]


def _total(parts: list[Estimate | None]) -> Estimate | None:
    """Estimates of leaves run one after the other, or None if any has no closed form."""
    if any(p is None for p in parts):
        return None
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def explain(simulated_s: float, estimate: Estimate, facts: PathFacts, closed: CollectiveEstimate, latency_s: float, forwarding: str = "cut_through") -> str:
    """One line saying why a run's time differs from its closed form, from its critical path.

    The simulated time minus the estimate splits exactly into: queueing on the critical
    path (contention), its per-hop latency minus the formula's latency term, its
    transmission time minus the formula's bandwidth term, and late starts. Parts smaller
    than half a percent of the estimate are left out; the rest are named, largest first.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> from netsim.analysis.path_stats import path_facts
    >>> r = netsim.all_gather(np.zeros((8, 2**14), np.float32), topology=netsim.mesh((8,)))
    >>> a = analyse(r)
    >>> print(explain(r.time, a.estimate, path_facts(r), a.closed, a.latency_s))  # doctest: +NORMALIZE_WHITESPACE
    1.714x the lower bound: latency: the critical path pays 12·α (12 us) over 14 link crossings where the formula counts 7·α (7 us);
    the group's line of 8 has no wraparound, so the ring closes the long way back (routes of up to 7 hops);
    transmission: 7.83 us on the critical path against the formula's 5.1 us; the path runs through the message it queued behind,
    already on the link before the waiting one was ready; contention: the critical path waited 913 ns for busy links
    6->7 (456 ns, queue 1), 3->2 (456 ns, queue 1)
    """
    path = facts.critical_path
    tolerance = 0.005 * max(estimate.time_s, simulated_s)
    parts: list[tuple[float, str]] = []
    if path.queueing_s > tolerance:
        named = ", ".join(f"{name} ({_t(wait)}, queue {facts.longest_queue.get(name, 0)})" for name, wait in path.queued_on[:3])
        more = len(path.queued_on) - 3
        named += f" and {more} more" if more > 0 else ""
        text = f"contention: the critical path waited {_t(path.queueing_s)} for busy links {named}"
        if facts.max_route_hops > 1 and not closed.geometry.neighbours and abs(path.latency_s - estimate.latency_s) <= tolerance:
            text += f"; {facts.multi_hop_transfers} of {facts.transfers} transfers cross more than one link (up to {facts.max_route_hops})"
            text += ": group members are not neighbours"
        parts.append((path.queueing_s, text))
    d_latency = path.latency_s - estimate.latency_s
    if abs(d_latency) > tolerance:
        counted = round(estimate.latency_s / latency_s) if latency_s > 0 else 0
        paid = round(path.latency_s / latency_s) if latency_s > 0 else path.hops
        formula = f"where the formula counts {counted}·α ({_t(estimate.latency_s)})"
        if paid == path.hops:
            text = f"latency: the critical path crosses {path.hops} links ({_t(path.latency_s)}) {formula}"
        else:
            text = f"latency: the critical path pays {paid}·α ({_t(path.latency_s)}) over {path.hops} link crossings {formula}"
        if d_latency < 0 and path.queueing_s > tolerance:
            text += "; crossings queued back to back on a link follow the message before them, not a latency"
        geometry = closed.geometry
        planned_ring = geometry.planned is None or any(geometry.planned)
        if d_latency > 0 and facts.max_route_hops > 1:
            if geometry.kind in ("line", "mesh") and geometry.neighbours and planned_ring:
                text += (
                    f"; the group's {geometry.describe()} has no wraparound, so the ring closes the long way back (routes of up to {facts.max_route_hops} hops)"
                )
            else:
                crossing = f"{facts.multi_hop_transfers} of {facts.transfers} transfers cross more than one link (up to {facts.max_route_hops})"
                text += f"; {crossing}: " + ("group members are not neighbours" if not geometry.neighbours else "the algorithm sends past the nearest members")
        parts.append((d_latency, text))
    d_transmission = path.transmission_s - estimate.bandwidth_s
    if d_transmission > tolerance:
        text = f"transmission: {_t(path.transmission_s)} on the critical path against the formula's {_t(estimate.bandwidth_s)}"
        smallest, largest = facts.chunk_bytes
        if forwarding == "store_and_forward":
            text += "; store-and-forward sends each message whole on every hop"
        elif smallest != largest:
            text += f"; chunks are uneven ({smallest} to {largest} bytes) and the largest sets the pace"
        elif path.queueing_s > tolerance:
            text += "; the path runs through the message it queued behind, already on the link before the waiting one was ready"
        else:
            text += "; messages were held up by slower links further on"
        parts.append((d_transmission, text))
    elif d_transmission < -tolerance and estimate.kind == "lower_bound":
        text = (
            f"transmission: the critical path transmits for {_t(path.transmission_s)}, less than the bound's {_t(estimate.bandwidth_s)}, "
            "which counts bytes on links the critical path does not take"
        )
        parts.append((d_transmission, text))
    elif d_transmission < -tolerance:
        text = (
            f"pipelining: the critical path transmits for {_t(path.transmission_s)}, "
            f"less than the formula's {_t(estimate.bandwidth_s)}: transfers overlap where the formula adds them up"
        )
        parts.append((d_transmission, text))
    straggle = path.straggle_s - estimate.fixed_s  # the fixed cost per collective is a late start the estimate counts
    if straggle > tolerance:
        parts.append((straggle, f"stragglers: late starts add {_t(straggle)} to the critical path"))
    parts.sort(key=lambda p: -abs(p[0]))
    ratio = simulated_s / estimate.time_s
    what = {"lower_bound": "the lower bound", "upper_bound": "the upper bound"}.get(estimate.kind, "the estimate")
    body = "; ".join(text for _, text in parts) or f"several differences each below 0.5 % of {what}"
    return f"{ratio:.3f}x {what}: {body}"
