"""One closed form of the registry (:class:`CostModel`), and how it becomes an estimate of a given kind.

A closed form is *exact* on the layouts where it has been derived from the schedule
its algorithm plays (and is checked against the simulation, tests/test_estimate_kinds.py);
elsewhere a run gets a *lower bound* (see :mod:`netsim.analysis.closed_forms.bounds`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from netsim.analysis.closed_forms.bounds import bytes_in, bytes_in_bound
from netsim.analysis.closed_forms.geometry import Geometry
from netsim.analysis.closed_forms.terms import AlphaBeta, Estimate, _evaluate, canonical_collective
from netsim.semantics.ops import COLLECTIVES

__all__ = ["BOUNDS", "Cost", "CostModel", "Exactness", "lower_bound", "never"]

Cost = Callable[[Geometry, float, float, float], AlphaBeta]
"""``cost(geometry, bytes_per_device, alpha, B)``: a closed form's two terms."""

Exactness = Callable[[Geometry], bool]
"""``exact(geometry)``: whether a closed form equals the simulated time on that layout."""

BOUNDS = "lower bounds from the engine's timing (netsim.analysis.closed_forms.bounds)"
_RECEIVED = {c.closed_form: c.received_text for c in COLLECTIVES.values()}


def never(g: Geometry) -> bool:
    """Exact on no layout."""
    return False


def _one_cable_pair(g: Geometry) -> bool:
    """Two neighbours joined by one link each way (a line of 2)."""
    return g.n == 2 and g.neighbours and not g.wraparound[0]


@dataclass(frozen=True)
class CostModel:
    """One closed form in the registry.

    Attributes
    ----------
    collective, algorithm : str
    topologies : frozenset of str
        :attr:`Geometry.kind` values it applies to, or ``"any"``.
    formula, source : str
        The form in symbols and where it comes from.
    cost : Cost
        Evaluates it; ``bytes_per_device`` is one device's input, whatever the collective.
    exact : Exactness
        The layouts on which it equals the simulated time.
    chain : Cost or None
        A chain of dependent transfers, each at least α + m/B: a lower bound on any
        layout (the form itself when None).
    chain_formula : str
    special : tuple of (Exactness, Cost, str)
        Other exact forms of the same algorithm, for other layouts (e.g. a line), exact
        when blocks split into equal pieces (else a lower bound: the larger piece
        goes first, the smaller follows).
    pieces : int or callable
        What a block is cut into (the largest piece sets the pace when they differ);
        a callable takes the number of axes the group spans.
    per_block : bool
        Whether ``s`` in the form is one block (input / n) rather than the input.

    Examples
    --------
    >>> from netsim.analysis.closed_forms.registry import lookup
    >>> m = lookup("all_gather", "ring", "ring")
    >>> e = m.estimate(Geometry((16,), (True,)), 4096, 1e-6, 45e9)
    >>> round(e.crossover_bytes), e.regime, e.kind     # alpha = s/B at s = 45 kB
    (45000, 'latency-bound', 'exact')
    >>> m.estimate(Geometry((16,), (True,), neighbours=False, diameter=8, in_links=2), 4096, 1e-6, 45e9).kind
    'lower_bound'
    """

    collective: str
    algorithm: str
    topologies: frozenset[str]
    formula: str
    source: str
    cost: Cost
    exact: Exactness = never
    chain: Cost | None = None
    chain_formula: str = ""
    special: tuple[tuple[Exactness, Cost, str], ...] = ()
    pieces: int | Callable[[int], int] = 1
    per_block: bool = False

    def estimate(self, geometry: Geometry, bytes_per_device: float, latency_s: float, bandwidth_Bps: float, item_bytes: int = 1) -> Estimate:
        """The closed form for this group and payload: exact where it is, else a lower bound.

        ``item_bytes`` is the size of one array element: blocks are cut into pieces
        of whole elements, so when a block does not split evenly the exact forms are
        evaluated for the largest piece.
        """
        g, b = geometry, float(bytes_per_device)
        if _one_cable_pair(g) and self.collective in ("all_gather", "psum_scatter", "all_to_all"):
            text = f"α + R/B, R = {_RECEIVED[self.collective]}: two neighbours, one link each way, every byte across it from the start"
            return _evaluate(lambda x: AlphaBeta(latency_s, bytes_in(self.collective, 2, x) / bandwidth_Bps), b, text, self.source)
        padded = self._padded(g, b, item_bytes)
        if self.exact(g):
            # the largest piece sets the pace of every step it takes
            return _evaluate(lambda x: self.cost(g, x * padded / b if b else x, latency_s, bandwidth_Bps), b, self.formula, self.source)
        for exact, cost, text in self.special:
            smallest = self._padded(g, b, item_bytes, largest=False)
            if exact(g) and padded == smallest:
                return _evaluate(lambda x, cost=cost: cost(g, x * padded / b if b else x, latency_s, bandwidth_Bps), b, text, self.source)
            if exact(g):  # uneven pieces: which piece takes the slowest chain depends on the layout; the smallest bounds it
                shrunk = smallest / b if b else 1.0
                return lower_bound(self.collective, g, b, latency_s, bandwidth_Bps, lambda g, x, a, B, cost=cost, k=shrunk: cost(g, x * k, a, B), text)
        return lower_bound(self.collective, g, b, latency_s, bandwidth_Bps, self.chain or self.cost, self.chain_formula or self.formula)

    def _padded(self, g: Geometry, b: float, item_bytes: int, largest: bool = True) -> float:
        """The input as if every block were cut into equal pieces of the largest piece's size (``largest=False``: the smallest's)."""
        pieces = self.pieces(len(g.dims)) if callable(self.pieces) else self.pieces
        if self.collective == "ppermute":  # a pair's pieces go back to back on one route, or one per route
            pieces = g.routes if g.routes >= 2 else 1
        if (pieces <= 1 and not self.per_block) or item_bytes <= 0 or b <= 0:
            return b
        blocks = g.n if self.per_block else 1
        items = round(b / item_bytes)
        if largest:  # of the largest block (the first blocks take one more item)
            block = -(-items // blocks)
            return blocks * -(-block // pieces) * pieces * item_bytes
        return blocks * (items // blocks // pieces) * pieces * item_bytes


def lower_bound(collective: str, g: Geometry, b: float, alpha: float, B: float, chain: Cost | None, text: str) -> Estimate:
    """The larger of a chain bound and the bytes-in bound, as a ``lower_bound`` estimate.

    Examples
    --------
    >>> g = Geometry((4, 4), (True, True), diameter=4, in_links=4)
    >>> e = lower_bound("all_gather", g, 45000, 1e-6, 45e9, None, "")
    >>> e.kind, round(e.time_s * 1e6, 9), e.formula
    ('lower_bound', 4.75, '≥ α + R/(L·B), R = (n−1)·input, L = 4 links into a member')
    """
    collective = canonical_collective(collective)
    candidates = []
    if chain is not None:
        candidates.append((chain(g, b, alpha, B), f"a chain of dependent transfers, {text}", lambda x: chain(g, x, alpha, B)))
    inflow = bytes_in_bound(collective, g, b, alpha, B)
    if inflow is not None:
        what = f"α + R/(L·B), R = {_RECEIVED.get(collective, 'bytes in')}, L = {g.in_links} links into a member"
        candidates.append((inflow, what, lambda x: bytes_in_bound(collective, g, x, alpha, B)))
    if not candidates:
        return Estimate("nothing to bound", BOUNDS, 0.0, 0.0, 0.0, math.inf, float(b), "lower_bound")
    _, what, cost = max(candidates, key=lambda c: c[0].time_s)
    return _evaluate(cost, b, "≥ " + what, BOUNDS, "lower_bound")
