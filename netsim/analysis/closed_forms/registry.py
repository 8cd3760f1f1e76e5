"""The registry of closed forms, and applying them to a collective's groups.

:data:`COST_MODELS` lists every closed form keyed by (collective, algorithm, kind of
layout); :func:`lookup` finds a run's own, :func:`estimate` evaluates it for one group,
and :func:`estimate_collective` applies it, the scaling book's estimate and a lower bound to
a collective's groups on a grid without building any graph.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from netsim.analysis.closed_forms.book import _bound, book_estimate
from netsim.analysis.closed_forms.bounds import bytes_in_bound
from netsim.analysis.closed_forms.catalogue import ANY, COST_MODELS
from netsim.analysis.closed_forms.geometry import Geometry, group_geometry
from netsim.analysis.closed_forms.model import CostModel, lower_bound
from netsim.analysis.closed_forms.terms import Estimate, canonical_collective, with_fixed_cost

__all__ = ["ANY", "COST_MODELS", "CollectiveEstimate", "CostModel", "estimate", "estimate_collective", "lookup"]


def lookup(collective: str, algorithm: str, topology: str) -> CostModel | None:
    """The closed form for a collective, algorithm and layout kind, or None if there is none.

    Examples
    --------
    >>> lookup("all_gather", "bidirectional_ring", "torus").formula
    '(n−1)·(α + s/(2B)), s = input per device'
    >>> lookup("all_to_all", "direct", "line") is None
    True
    >>> lookup("all_reduce", "rabenseifner", "ring").collective
    'psum'
    """
    collective = canonical_collective(collective)
    for wanted in (algorithm, "*"):
        for model in COST_MODELS:
            if model.collective == collective and model.algorithm == wanted and (topology in model.topologies or ANY in model.topologies):
                return model
    return None


def estimate(
    collective: str, algorithm: str, geometry: Geometry, bytes_per_device: float, latency_s: float, bandwidth_Bps: float, item_bytes: int = 1
) -> Estimate | None:
    """The closed-form estimate of one group's collective, or None when there is no closed form.

    Examples
    --------
    >>> e = estimate("all_gather", "ring", Geometry((8,), (True,)), 262144, 1e-6, 45e9)
    >>> round(e.time_s * 1e6, 6), e.regime
    (47.777956, 'bandwidth-bound')
    """
    if geometry.n == 1:
        return Estimate("one device: nothing moves", "-", 0.0, 0.0, 0.0, math.inf, float(bytes_per_device))
    model = lookup(collective, algorithm, geometry.kind)
    if model is None:
        collective = canonical_collective(collective)
        if bytes_in_bound(collective, geometry, bytes_per_device, latency_s, bandwidth_Bps) is None:
            return None
        return lower_bound(collective, geometry, bytes_per_device, latency_s, bandwidth_Bps, None, "")
    return model.estimate(geometry, bytes_per_device, latency_s, bandwidth_Bps, item_bytes)


@functools.lru_cache(maxsize=4096)
def _geometry(dims: tuple[int, ...], wraparound: tuple[bool, ...], members: tuple[int, ...]) -> Geometry:
    """:func:`group_geometry`, worked out once per group (a program's ops over the same groups, a step's loop trips)."""
    return group_geometry(dims, wraparound, members)


@dataclass(frozen=True)
class CollectiveEstimate:
    """Everything the closed forms say about one collective on one layout.

    Attributes
    ----------
    collective, algorithm : str
    geometry : Geometry
        The (slowest) group's layout.
    estimate : Estimate or None
        The algorithm's closed form; None when there is none (``note`` says so).
    book : Estimate or None
        The scaling book's estimate, where it has one.
    book_bandwidth_s : float or None
        The scaling book's bandwidth figure V/(W_ici·N_axes) (for psum twice that). It
        counts all of V, the share a member already holds included, so a run can beat it:
        it is not a bound.
    bound_s : float or None
        A lower bound for any algorithm: α + R/(L·B), R the bytes a member must take
        in, L the fewest links into a member (:mod:`netsim.analysis.closed_forms.bounds`).
    note : str
        Why there is no closed form, or empty.
    """

    collective: str
    algorithm: str
    geometry: Geometry
    estimate: Estimate | None
    book: Estimate | None
    book_bandwidth_s: float | None
    bound_s: float | None
    note: str = ""


def estimate_collective(
    collective: str,
    algorithm: str,
    dims: Sequence[int],
    wraparound: Sequence[bool],
    groups: Sequence[Sequence[int]],
    bytes_per_device: float,
    latency_s: float,
    bandwidth_Bps: float,
    *,
    hops: int | None = None,
    shared: int = 1,
    routes: int = 1,
    ports: int = 1,
    pieces: int = 2,
    planned: Sequence[bool] | None = None,
    item_bytes: int = 1,
    fixed_s: float = 0.0,
) -> CollectiveEstimate:
    """Apply the closed forms to a collective's groups on a grid, without building any graph.

    Groups run at once; when they lie differently the slowest one's estimate is taken.

    Parameters
    ----------
    collective, algorithm : str
    dims, wraparound : sequence
        The topology's axes and whether each wraps.
    groups : sequence of sequence of int
        Device indices of each group (row-major on ``dims``).
    bytes_per_device : float
        One device's input, bytes.
    latency_s, bandwidth_Bps : float
        The links' per-hop latency and one-way bandwidth.
    hops : int, optional
        Longest route between communicating devices (ppermute).
    shared : int, default 1
        Most pairs whose routes cross one link (ppermute).
    routes : int, default 1
        Routes each ppermute pair's payload is spread over (0 when pairs differ).
    ports : int, default 1
        Axes along which the farthest ppermute pair differs.
    pieces : int, default 2
        Pieces a ppermute payload is cut into.
    planned : sequence of bool, optional
        The wraparound per axis the algorithm planned with, for groups over mesh axes.
    item_bytes : int, default 1
        Bytes of one array element (blocks are cut into whole elements).
    fixed_s : float, default 0
        The fixed cost per collective (calibrated runs), added to every estimate and
        bound as a term of its own; ``bandwidth_Bps`` is then the links' effective rate.

    Examples
    --------
    >>> e = estimate_collective("all_gather", "bidirectional_ring", (16, 16, 16), (True,) * 3, [range(4096)], 2**20, 1e-6, 45e9)
    >>> e.geometry.describe(), e.estimate.regime, round(e.book.time_s * 1e3, 3)
    ('torus 16x16x16', 'bandwidth-bound', 15.907)
    """
    groups = [tuple(g) for g in groups] or [(0,)]  # a ppermute with no pairs: one device, nothing moves
    grid = (tuple(dims), tuple(wraparound))
    geometries = {_geometry(*grid, g) for g in set(groups)}
    extra = {"shared": shared, "routes": routes, "ports": ports, "pieces": pieces, "planned": None if planned is None else tuple(planned)}
    if hops is not None:
        extra["hops"] = hops
    geometries = {replace(g, **extra) for g in geometries}
    ordered = sorted(geometries, key=lambda g: (g.n, g.dims, g.wraparound, g.regular, repr(g)))  # repr: ties never follow the hash seed
    per_geometry = [(g, estimate(collective, algorithm, g, bytes_per_device, latency_s, bandwidth_Bps, item_bytes)) for g in ordered]
    known = [(g, e) for g, e in per_geometry if e is not None]
    if known:
        geometry, chosen = max(known, key=lambda ge: ge[1].time_s)
        note = ""
    else:
        geometry, chosen = ordered[0], None
        note = f"no closed form for {collective} with {algorithm} on a {geometry.describe()}"
    book = book_estimate(collective, geometry, bytes_per_device, latency_s, bandwidth_Bps)
    figures = _bound(collective, geometry, bytes_per_device, bandwidth_Bps)
    inflow = bytes_in_bound(collective, geometry, bytes_per_device, latency_s, bandwidth_Bps)
    bound_s = None if inflow is None else inflow.time_s + fixed_s if inflow.time_s > 0 else inflow.time_s
    chosen, book = with_fixed_cost(chosen, fixed_s), with_fixed_cost(book, fixed_s)
    return CollectiveEstimate(canonical_collective(collective), algorithm, geometry, chosen, book, figures[0] if figures else None, bound_s, note)
