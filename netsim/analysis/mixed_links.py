"""Closed forms on topologies whose links differ: what a promise made for one link still holds.

The closed forms take one link, α and B: the one most links share (the *nominal* link).
A run that also crosses links of other speeds, such as the link between the two
devices of a TPU7x chip (:mod:`netsim.network.chiplets`), may not equal its form; a
lower bound still holds if every other link it crosses is no faster than the
nominal one (bandwidth no higher, latency no lower), and an upper bound if every
one is no slower. Everything else says ``none``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from netsim.analysis.closed_forms.registry import CollectiveEstimate
from netsim.analysis.closed_forms.terms import Estimate
from netsim.engine.link_model import effective_bandwidth
from netsim.network.calibration import efficiency_of

if TYPE_CHECKING:
    from netsim.result import Result

__all__ = ["crossed_links", "other_links", "with_other_links"]


def crossed_links(result: Result) -> set[tuple[float, float]]:
    """The (latency_s, bandwidth_Bps) of every link a run crossed (the effective rate: a calibrated run's link efficiency applied).

    Each distinct route is read once: where the engine kept its routes as columns (each
    transfer's number among the distinct routes), only the routes used are walked, not one
    hop per transfer; each distinct link's speed is then looked up once.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> crossed_links(netsim.all_gather(np.zeros((4, 8), np.float32), topology=netsim.ring(4)))
    {(1e-06, 45000000000.0)}
    """
    topology = result.topology_obj
    links: set[Any] = set()
    for leaf in result.leaves:
        routes = leaf.playback.routes
        kept = routes.columns() if hasattr(routes, "columns") else None
        if kept is not None:
            inverse, distinct = kept
            for k in np.flatnonzero(np.bincount(np.asarray(inverse), minlength=len(distinct))).tolist():
                links.update(distinct[k])
        else:
            for route in routes:
                links.update(route)
    speeds = set()
    for k in links:
        d = topology.link(k)
        speeds.add((d["latency_s"], effective_bandwidth(d["bandwidth_Bps"], efficiency_of(topology, k))))
    return speeds


def other_links(crossed: Iterable[tuple[float, float]], latency_s: float, bandwidth_Bps: float) -> set[tuple[float, float]]:
    """The (latency_s, bandwidth_Bps) of the crossed links that are not the nominal link.

    Examples
    --------
    >>> sorted(other_links([(1e-6, 45e9), (1e-6, 90e9)], 1e-6, 45e9))
    [(1e-06, 90000000000.0)]
    """
    return {link for link in crossed if link != (latency_s, bandwidth_Bps)}


def _held(estimate: Estimate | None, others: set[tuple[float, float]], latency_s: float, bandwidth_Bps: float) -> Estimate | None:
    if estimate is None or not others or estimate.kind == "none":
        return estimate
    faster = any(b > bandwidth_Bps or a < latency_s for a, b in others)
    slower = any(b < bandwidth_Bps or a > latency_s for a, b in others)
    if (estimate.kind == "lower_bound" and not faster) or (estimate.kind == "upper_bound" and not slower):
        return estimate
    speeds = ", ".join(f"{b / 1e9:.6g} GB/s and {a * 1e6:.6g} us" for a, b in sorted(others))
    return replace(
        estimate, kind="none", formula=f"{estimate.formula} (for links of {bandwidth_Bps / 1e9:.6g} GB/s; the run also crosses links of {speeds}: no promise)"
    )


def with_other_links(closed: CollectiveEstimate, others: set[tuple[float, float]], latency_s: float, bandwidth_Bps: float) -> CollectiveEstimate:
    """``closed`` with its promises kept only where links of other speeds leave them true.

    ``others`` are the links a run crosses besides the nominal one (:func:`other_links`).
    An exact form becomes ``none``; a lower bound (the estimate's, or ``bound_s``) is
    dropped if any of them is faster, an upper bound if any is slower.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> from netsim.analysis.why import analyse
    >>> r = netsim.ppermute(np.zeros((8, 1024), np.float32), perm=[(0, 1), (2, 0)], topology="tpu7x:2x2x1")
    >>> analyse(r).estimate.kind  # 0 -> 1 crosses the on-chip link, 2 -> 0 a lane: no promise
    'none'
    """
    if not others:
        return closed
    faster = any(b > bandwidth_Bps or a < latency_s for a, b in others)
    return replace(
        closed,
        estimate=_held(closed.estimate, others, latency_s, bandwidth_Bps),
        bound_s=None if faster else closed.bound_s,
    )
