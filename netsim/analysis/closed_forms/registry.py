"""The registry of closed forms, and applying them to a collective's groups.

:data:`COST_MODELS` lists every closed form keyed by (collective, algorithm, kind of
layout); :func:`lookup` finds a run's own, :func:`estimate` evaluates it for one group,
and :func:`estimate_collective` applies it, the scaling book's estimate and its bound to
a collective's groups on a grid without building any graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from netsim.analysis.closed_forms.book import BOOK, _bound, book_estimate
from netsim.analysis.closed_forms.direct import dimension_ordered_all_to_all, direct_all_gather, direct_all_to_all
from netsim.analysis.closed_forms.doubling import (
    rabenseifner_all_reduce,
    recursive_doubling_all_gather,
    recursive_doubling_all_reduce,
    recursive_halving_reduce_scatter,
)
from netsim.analysis.closed_forms.geometry import Geometry, group_geometry
from netsim.analysis.closed_forms.point_to_point import point_to_point
from netsim.analysis.closed_forms.rings import bidirectional_halfway, bidirectional_ring, ring
from netsim.analysis.closed_forms.terms import AlphaBeta, Estimate, _evaluate, canonical_collective
from netsim.analysis.closed_forms.torus import dimension_ordered, multiaxis, multiaxis_bundled

__all__ = ["ANY", "COST_MODELS", "CollectiveEstimate", "CostModel", "estimate", "estimate_collective", "lookup"]

ANY = "any"
"""A cost model that applies whatever the group's layout (it assumes one hop per step)."""

THAKUR = "Thakur, Rabenseifner & Gropp 2005"
RINGS = "COST_MODELS.md rings; Thakur, Rabenseifner & Gropp 2005; nccl-tests PERFORMANCE.md"
DERIVED = "link loads counted as the scaling book counts its all-to-all"


Cost = Callable[[Geometry, float, float, float], AlphaBeta]


@dataclass(frozen=True)
class CostModel:
    """One closed form in the registry.

    ``cost(geometry, bytes_per_device, alpha, B)`` evaluates it; ``bytes_per_device`` is
    one device's input, whatever the collective.
    """

    collective: str
    algorithm: str
    topologies: frozenset[str]
    formula: str
    source: str
    cost: Cost

    def estimate(self, geometry: Geometry, bytes_per_device: float, latency_s: float, bandwidth_Bps: float) -> Estimate:
        """The closed form for this group and payload.

        Examples
        --------
        >>> m = lookup("all_gather", "ring", "ring")
        >>> e = m.estimate(Geometry((16,), (True,)), 4096, 1e-6, 45e9)
        >>> round(e.crossover_bytes), e.regime     # alpha = s/B at s = 45 kB
        (45000, 'latency-bound')
        """
        return _evaluate(lambda b: self.cost(geometry, b, latency_s, bandwidth_Bps), bytes_per_device, self.formula, self.source)


def _per_block(fn: Callable[[int, float, float, float], AlphaBeta], times: int = 1) -> Cost:
    """A ring or Thakur form whose s is one block (input / n), run ``times`` times."""

    def cost(g: Geometry, b: float, alpha: float, B: float) -> AlphaBeta:
        ab = fn(g.n, b / g.n, alpha, B)
        return AlphaBeta(times * ab.latency_s, times * ab.bandwidth_s)

    return cost


def _whole(fn: Callable[[int, float, float, float], AlphaBeta]) -> Cost:
    return lambda g, b, alpha, B: fn(g.n, b, alpha, B)


def _grid(fn: Callable[[Sequence[int], float, float, float], AlphaBeta], per_block: bool = False, times: int = 1) -> Cost:
    def cost(g: Geometry, b: float, alpha: float, B: float) -> AlphaBeta:
        ab = fn(g.dims, b / g.n if per_block else b, alpha, B)
        return AlphaBeta(times * ab.latency_s, times * ab.bandwidth_s)

    return cost


def _models() -> tuple[CostModel, ...]:
    anywhere = frozenset({ANY})
    wrapped = frozenset({"ring", "torus"})
    grids = frozenset({"ring", "line", "torus", "mesh"})
    rings = [
        ("ring", ring, "(n−1)·(α + s/B)", "2·(n−1)·(α + s/B)"),
        ("bidirectional_ring", bidirectional_ring, "(n−1)·(α + s/(2B))", "2·(n−1)·(α + s/(2B))"),
        ("bidirectional_halfway", bidirectional_halfway, "⌊n/2⌋·(α + s/B)", "2·⌊n/2⌋·(α + s/B)"),
    ]
    models = []
    for name, fn, once, twice in rings:
        source = BOOK if name == "bidirectional_halfway" else RINGS
        models += [
            CostModel("all_gather", name, anywhere, once + ", s = input per device", source, _whole(fn)),
            CostModel("psum_scatter", name, anywhere, once + ", s = input/n", source, _per_block(fn)),
            CostModel("psum", name, anywhere, twice + ", s = input/n (reduce-scatter + all_gather)", source, _per_block(fn, 2)),
        ]
    models += [
        CostModel("all_gather", "recursive_doubling", anywhere, "⌈lg n⌉·α + (n−1)·s/B, s = input per device", THAKUR, _whole(recursive_doubling_all_gather)),
        CostModel("psum_scatter", "recursive_halving", anywhere, "⌈lg n⌉·α + (n−1)·s/B, s = input/n", THAKUR, _per_block(recursive_halving_reduce_scatter)),
        CostModel("psum", "recursive_doubling", anywhere, "⌈lg n⌉·α + ⌈lg n⌉·n·s/B, s = input/n", THAKUR, _per_block(recursive_doubling_all_reduce)),
        CostModel("psum", "rabenseifner", anywhere, "2⌈lg n⌉·α + 2(n−1)·s/B, s = input/n", THAKUR, _per_block(rabenseifner_all_reduce)),
        CostModel("all_gather", "direct", wrapped, "Σ⌊d_i/2⌋·α + max_i N⌊d_i²/4⌋/(2d_i)·s/B", DERIVED, _grid(direct_all_gather)),
        CostModel("psum_scatter", "direct", wrapped, "Σ⌊d_i/2⌋·α + max_i N⌊d_i²/4⌋/(2d_i)·s/B, s = input/N", DERIVED, _grid(direct_all_gather, per_block=True)),
        CostModel("all_to_all", "direct", wrapped, "Σ⌊d_i/2⌋·α + max_i ⌊d_i²/4⌋/(2d_i)·s/B (the book's V·max(d)/(4·N·W_ici))", BOOK, _grid(direct_all_to_all)),
        CostModel(
            "all_to_all",
            "dimension_ordered",
            wrapped,
            "≤ Σ⌊d_i/2⌋·α + Σ_i ⌊d_i²/4⌋/(2d_i)·s/B (axes in turn; netsim overlaps them)",
            DERIVED,
            _grid(dimension_ordered_all_to_all),
        ),
    ]
    for name, fn, text in (
        ("multiaxis", multiaxis, "Σ(d_i−1)·α + (N−1)·s/(2kB)"),
        ("dimension_ordered", dimension_ordered, "Σ(d_i−1)·α + (N−1)·s/(2B)"),
    ):
        models += [
            CostModel("all_gather", name, grids, text + ", s = input per device", BOOK, _grid(fn)),
            CostModel("psum_scatter", name, grids, text + ", s = input/N", BOOK, _grid(fn, per_block=True)),
            CostModel("psum", name, grids, "2·(" + text + "), s = input/N", BOOK, _grid(fn, per_block=True, times=2)),
        ]
    models.append(CostModel("all_gather", "multiaxis_bundled", wrapped, "max over parts Σ_stages (d−1)·(α + P·s/(2kB))", BOOK, _grid(multiaxis_bundled)))
    models.append(
        CostModel("ppermute", "direct", anywhere, "h·α + s/B, h = the longest route", BOOK, lambda g, b, alpha, B: point_to_point(g.hops or 0, b, alpha, B)),
    )
    return tuple(models)


COST_MODELS: tuple[CostModel, ...] = _models()
"""Every closed form, each for a (collective, algorithm) on some kinds of layout.

``topologies`` holds :attr:`Geometry.kind` values, or ``"any"`` for forms that do not
depend on the layout (they assume one hop per step); algorithm ``"*"`` matches any."""


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


def estimate(collective: str, algorithm: str, geometry: Geometry, bytes_per_device: float, latency_s: float, bandwidth_Bps: float) -> Estimate | None:
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
        return None
    return model.estimate(geometry, bytes_per_device, latency_s, bandwidth_Bps)


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
    bound_s : float or None
        The book's bandwidth bound V/(W_ici·N_axes) (for psum twice that).
    exact_bound_s : float or None
        The same bound counting only the (n−1)/n of V that has to move.
    note : str
        Why there is no closed form, or empty.
    """

    collective: str
    algorithm: str
    geometry: Geometry
    estimate: Estimate | None
    book: Estimate | None
    bound_s: float | None
    exact_bound_s: float | None
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

    Examples
    --------
    >>> e = estimate_collective("all_gather", "bidirectional_ring", (16, 16, 16), (True,) * 3, [range(4096)], 2**20, 1e-6, 45e9)
    >>> e.geometry.describe(), e.estimate.regime, round(e.book.time_s * 1e3, 3)
    ('torus 16x16x16', 'bandwidth-bound', 15.907)
    """
    geometries = {group_geometry(dims, wraparound, g) for g in {tuple(g) for g in groups}}
    if hops is not None:
        geometries = {Geometry(g.dims, g.wraparound, g.regular, hops) for g in geometries}
    ordered = sorted(geometries, key=lambda g: (g.n, g.dims, g.wraparound, g.regular))
    per_geometry = [(g, estimate(collective, algorithm, g, bytes_per_device, latency_s, bandwidth_Bps)) for g in ordered]
    known = [(g, e) for g, e in per_geometry if e is not None]
    if known:
        geometry, chosen = max(known, key=lambda ge: ge[1].time_s)
        note = ""
    else:
        geometry, chosen = ordered[0], None
        note = f"no closed form for {collective} with {algorithm} on a {geometry.describe()}"
    book = book_estimate(collective, geometry, bytes_per_device, latency_s, bandwidth_Bps)
    bounds = _bound(collective, geometry, bytes_per_device, bandwidth_Bps)
    bound_s, exact_s = bounds if bounds else (None, None)
    return CollectiveEstimate(canonical_collective(collective), algorithm, geometry, chosen, book, bound_s, exact_s, note)
