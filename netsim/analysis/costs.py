"""Closed-form costs of collectives, in the α–β form, and the scaling book's estimates.

Every closed form splits a collective's time into a **latency term** (the per-hop
latencies α it pays one after another) and a **bandwidth term** (bytes over link
bandwidth). Which term is larger is the *regime* (latency-bound or bandwidth-bound);
the per-device payload at which they are equal is the *crossover*. Both terms are
linear in what they count, so the crossover is the payload times latency/bandwidth.

Notation (as in the project's COST_MODELS.md): a group of ``n`` devices, ``s`` bytes per
block, ``α`` the per-hop latency, ``B`` the one-way bandwidth of one link direction,
``W_ici = 2B`` the scaling book's bidirectional bandwidth of one axis, ``V`` the bytes of
the whole collective (the gathered array for all_gather, one device's full input for a
reduction, the bytes over all devices for all_to_all).

Sources
    * J. Austin et al., *How to Scale Your Model* ("the scaling book"),
      jax-ml.github.io/scaling-book, chapters on TPUs and sharded matmuls: W_ici, the
      one- and multi-axis all_gather, reduce-scatter, all-reduce and all-to-all estimates.
    * R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective Communication
      Operations in MPICH", IJHPCA 19(1), 2005: the α–β costs of ring, recursive
      doubling / halving and Rabenseifner's algorithm (with γ = 0: reductions are free).
    * NVIDIA nccl-tests, doc/PERFORMANCE.md: algbw, busbw and the (n−1)/n factors.

The pure functions below compute one closed form each. :data:`COST_MODELS` lists them
keyed by (collective, algorithm, topology) so a run looks up its own with :func:`lookup`
(``None`` means "no closed form"), and :func:`estimate_collective` applies the right one
to a group layout on a grid without building any graph, so it is instant even for a
4096-chip pod. Nothing here simulates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "COST_MODELS",
    "AlphaBeta",
    "CollectiveEstimate",
    "CostModel",
    "Estimate",
    "Geometry",
    "bidirectional_halfway",
    "bidirectional_ring",
    "book_all_gather",
    "book_all_reduce",
    "book_all_to_all",
    "book_estimate",
    "canonical_collective",
    "dimension_ordered",
    "dimension_ordered_all_to_all",
    "direct_all_gather",
    "direct_all_to_all",
    "estimate",
    "estimate_collective",
    "group_geometry",
    "hops_between",
    "lookup",
    "multiaxis",
    "multiaxis_bundled",
    "point_to_point",
    "rabenseifner_all_reduce",
    "recursive_doubling_all_gather",
    "recursive_doubling_all_reduce",
    "recursive_halving_reduce_scatter",
    "ring",
]


@dataclass(frozen=True)
class AlphaBeta:
    """A closed form evaluated: the latency term and the bandwidth term, in seconds.

    ``combine`` says how they make a time: ``"sum"`` for the α–β form (latency +
    bandwidth), ``"max"`` for the scaling book's ``max(T_min·X/2, V/W_ici)``.

    Examples
    --------
    >>> AlphaBeta(2.0, 3.0).time_s, AlphaBeta(2.0, 3.0, "max").time_s
    (5.0, 3.0)
    >>> AlphaBeta(2.0, 3.0).regime
    'bandwidth-bound'
    """

    latency_s: float
    bandwidth_s: float
    combine: str = "sum"

    @property
    def time_s(self) -> float:
        """The estimated time, seconds."""
        if self.combine == "max":
            return max(self.latency_s, self.bandwidth_s)
        return self.latency_s + self.bandwidth_s

    @property
    def regime(self) -> str:
        """``"latency-bound"`` if the latency term is the larger, else ``"bandwidth-bound"``."""
        return "latency-bound" if self.latency_s > self.bandwidth_s else "bandwidth-bound"


def _lg(n: int) -> int:
    """Rounds of a doubling algorithm: ceil(log2 n)."""
    return max(0, math.ceil(math.log2(n))) if n > 1 else 0


# --- rings (what netsim's contention-free rings reproduce exactly) ---------------------


def ring(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """Unidirectional ring all_gather or reduce-scatter: (n−1)·α + (n−1)·s/B.

    n−1 steps; in each, every device sends one block of ``s`` bytes to its neighbour.
    Thakur, Rabenseifner & Gropp (2005) write it (p−1)α + ((p−1)/p)·nβ with n = p·s
    bytes in total; nccl-tests' busbw factor (n−1)/n comes from the same count.

    Examples
    --------
    >>> ab = ring(8, 262144, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 6)
    (7.0, 40.777956)
    """
    return AlphaBeta((n - 1) * alpha, (n - 1) * s / B)


def bidirectional_ring(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """Bidirectional ring all_gather or reduce-scatter: (n−1)·α + (n−1)·s/(2B).

    Each block is cut in two halves, one going each way round, so every link direction
    carries half a block per step (COST_MODELS.md, "Rings"; the scaling book's W_ici = 2B).

    Examples
    --------
    >>> ab = bidirectional_ring(8, 262144, 1e-6, 45e9)
    >>> round(ab.time_s * 1e6, 6)
    27.388978
    """
    return AlphaBeta((n - 1) * alpha, (n - 1) * s / (2 * B))


def bidirectional_halfway(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """The scaling book's scheme: ⌊n/2⌋·α + ⌊n/2⌋·s/B.

    Every block is sent both ways and each copy goes about half way round, so ⌊n/2⌋
    steps of a whole block (the book's ring all_gather on an axis with wraparound).

    Examples
    --------
    >>> ab = bidirectional_halfway(8, 262144, 1e-6, 45e9)
    >>> round(ab.time_s * 1e6, 6)
    27.301689
    """
    return AlphaBeta((n // 2) * alpha, (n // 2) * s / B)


# --- Thakur, Rabenseifner & Gropp 2005 (every pair one hop apart) ---------------------


def recursive_doubling_all_gather(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """Recursive-doubling all_gather: ⌈lg n⌉·α + (n−1)·s/B.

    Thakur, Rabenseifner & Gropp 2005, Sec. 4.1: ⌈lg p⌉α + ((p−1)/p)·nβ with n = p·s.
    It assumes every pair of partners is one hop apart; on a ring or torus partners
    2^k apart share links, and the simulated time shows it.

    Examples
    --------
    >>> ab = recursive_doubling_all_gather(8, 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (3.0, 7.0)
    """
    return AlphaBeta(_lg(n) * alpha, (n - 1) * s / B)


def recursive_halving_reduce_scatter(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """Recursive-halving reduce-scatter: ⌈lg n⌉·α + (n−1)·s/B, s = one block (input/n).

    Thakur, Rabenseifner & Gropp 2005, Sec. 4.2: lg p·α + ((p−1)/p)·n·(β+γ), γ = 0.

    Examples
    --------
    >>> ab = recursive_halving_reduce_scatter(4, 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (2.0, 3.0)
    """
    return AlphaBeta(_lg(n) * alpha, (n - 1) * s / B)


def recursive_doubling_all_reduce(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """Recursive-doubling all-reduce: ⌈lg n⌉·α + ⌈lg n⌉·n·s/B (the whole input each round).

    Thakur, Rabenseifner & Gropp 2005, Sec. 4.4: lg p·α + n·lg p·(β+γ), with the input
    n = p·s bytes and γ = 0.

    Examples
    --------
    >>> ab = recursive_doubling_all_reduce(4, 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (2.0, 8.0)
    """
    return AlphaBeta(_lg(n) * alpha, _lg(n) * n * s / B)


def rabenseifner_all_reduce(n: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """Rabenseifner's all-reduce (recursive-halving reduce-scatter, recursive-doubling
    all_gather): 2⌈lg n⌉·α + 2(n−1)·s/B.

    Thakur, Rabenseifner & Gropp 2005, Sec. 4.4: 2 lg p·α + 2((p−1)/p)·nβ + ((p−1)/p)·nγ
    with n = p·s and γ = 0.

    Examples
    --------
    >>> ab = rabenseifner_all_reduce(4, 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (4.0, 6.0)
    """
    return AlphaBeta(2 * _lg(n) * alpha, 2 * (n - 1) * s / B)


# --- direct algorithms: every pair routed hop by hop (link loads counted) --------------


def _ring_distance_sum(d: int) -> int:
    """Sum over x in 1..d-1 of the shorter way round a ring of d: ⌊d²/4⌋."""
    return d * d // 4


def direct_all_gather(dims: Sequence[int], s: float, alpha: float, B: float) -> AlphaBeta:
    """Direct all_gather on a ring or torus: every device sends its block to every other.

    Latency: the farthest member, Σ⌊d_i/2⌋ hops. Bandwidth: the busiest axis's links,
    counting routes the way the scaling book counts its all-to-all: on axis i every
    source's block crosses, summed over destinations, (N/d_i)·⌊d_i²/4⌋ links of that
    axis, and the axis has 2N link directions, so max_i N·⌊d_i²/4⌋/(2·d_i) · s/B. This
    assumes the load spreads evenly over both directions (a lower bound: shortest-path
    routing sends ties on even axes one way).

    Examples
    --------
    >>> ab = direct_all_gather((8,), 45000, 1e-6, 45e9)   # 16 block-hops per link direction / 2
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (4.0, 8.0)
    """
    N = math.prod(dims)
    load = max((N * _ring_distance_sum(d) / (2 * d) for d in dims), default=0.0)
    return AlphaBeta(sum(d // 2 for d in dims) * alpha, load * s / B)


def direct_all_to_all(dims: Sequence[int], s: float, alpha: float, B: float) -> AlphaBeta:
    """Direct all_to_all on a ring or torus, s = one device's whole input.

    Each device sends s/N bytes to every device. On axis i the bytes times hops add up
    to N·(N/d_i)·⌊d_i²/4⌋·s/N over 2N link directions: max_i ⌊d_i²/4⌋/(2·d_i) · s/B, which
    is the scaling book's V/(4·W_ici) on a ring and V·max(A,B,C)/(4·N·W_ici) on a torus
    (V = N·s, W_ici = 2B) for even sizes. Latency: the farthest pair, Σ⌊d_i/2⌋ hops.

    Examples
    --------
    >>> ab = direct_all_to_all((8,), 45000, 1e-6, 45e9)    # V/(4 W_ici) = 8 s / (8 B)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (4.0, 1.0)
    """
    load = max((_ring_distance_sum(d) / (2 * d) for d in dims), default=0.0)
    return AlphaBeta(sum(d // 2 for d in dims) * alpha, load * s / B)


def dimension_ordered_all_to_all(dims: Sequence[int], s: float, alpha: float, B: float) -> AlphaBeta:
    """Dimension-ordered all_to_all on a torus, axes in turn: an upper bound on netsim's schedule.

    Every phase moves the whole input along one axis (the data for other coordinates of
    that axis), so with a barrier between axes the costs add: Σ_i ⌊d_i²/4⌋/(2·d_i) · s/B
    and Σ⌊d_i/2⌋ hops. That is what this returns. The ``dimension_ordered`` schedule of
    :mod:`netsim.algorithms.torus` has no barrier: a chunk moves on along the next axis
    as soon as it reaches the intermediate member, so the phases overlap and the time is
    less. Its links carry exactly the loads of :func:`direct_all_to_all` (a block takes
    the same route, dimension order, only stopping at the corners), so the simulated time
    T lies between

        max_i ⌊d_i²/4⌋/(2·d_i) · s/B + α  <=  T  <=  this sum,

    the lower bound being the busiest link plus the last chunk's final hop. Where it
    lands between them depends on how the queues of the axes interleave, which has no
    closed form: without latency it takes 9 chunk times where the busiest link carries 8
    on 4x4, 36.5 for 32 on 4x4x4. On a 2x2 torus nothing
    queues and T = s/(4B) + 2α exactly (tests/test_all_to_all_torus.py).

    Examples
    --------
    >>> ab = dimension_ordered_all_to_all((4, 4), 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (4.0, 1.0)
    """
    load = sum(_ring_distance_sum(d) / (2 * d) for d in dims)
    return AlphaBeta(sum(d // 2 for d in dims) * alpha, load * s / B)


# --- multi-axis tori (the scaling book's V/(W_ici·k)) ----------------------------------


def multiaxis(dims: Sequence[int], s: float, alpha: float, B: float) -> AlphaBeta:
    """All_gather / reduce-scatter over k torus axes at once: Σ(d_i−1)·α + (N−1)·s/(2kB).

    The payload is split in k parts that go round the axes in different orders, so all
    2k link directions of every device carry data at once: each device receives
    (N−1)·s bytes over 2k links. This is the scaling book's multi-axis bound
    V/(W_ici·k) (times (N−1)/N, the device's own block never travels), exact when the
    axes have equal sizes. Latency: a bidirectional ring on each axis in turn.

    Examples
    --------
    >>> ab = multiaxis((4, 4), 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (6.0, 3.75)
    """
    N, k = math.prod(dims), len(dims)
    return AlphaBeta(sum(d - 1 for d in dims) * alpha, (N - 1) * s / (2 * k * B) if k else 0.0)


def multiaxis_bundled(dims: Sequence[int], s: float, alpha: float, B: float) -> AlphaBeta:
    """All_gather over k torus axes at once, one message per ring step: the slowest part's stages.

    Part i goes along axes i, i+1, ... (wrapping round). At its stage along an axis
    of d devices it runs d−1 ring steps, each sending one bundle of P blocks' shares
    s/(2k) each way, P the product of the axes it gathered before; a stage starts
    when the last has ended. So part i takes Σ_stages (d−1)·(α + P·s/(2kB)) and the
    collective the slowest part. With equal axes this is Σ(d_i−1)·α + (N−1)·s/(2kB),
    the :func:`multiaxis` form, exactly: every step pays its α (``multiaxis``
    overlaps chunks and hides some). With unequal axes parts can meet on an axis,
    so it is an estimate there.

    Examples
    --------
    >>> ab = multiaxis_bundled((4, 4), 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (6.0, 3.75)
    """
    k = len(dims)
    if not k:
        return AlphaBeta(0.0, 0.0)
    slowest = None
    for i in range(k):
        gathered, latency, bandwidth = 1, 0.0, 0.0
        for stage in range(k):
            d = dims[(i + stage) % k]
            latency += (d - 1) * alpha
            bandwidth += (d - 1) * gathered * s / (2 * k * B)
            gathered *= d
        if slowest is None or latency + bandwidth > slowest.time_s:
            slowest = AlphaBeta(latency, bandwidth)
    return slowest


def dimension_ordered(dims: Sequence[int], s: float, alpha: float, B: float) -> AlphaBeta:
    """All_gather / reduce-scatter one torus axis after the other: Σ(d_i−1)·α + (N−1)·s/(2B).

    A bidirectional ring on each axis in turn, each phase gathering blocks d_i times
    bigger than the last, so the bandwidth terms add up to (N−1)·s/(2B): k times the
    multi-axis time, since only one axis's links work at a time.

    Examples
    --------
    >>> ab = dimension_ordered((4, 4), 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (6.0, 7.5)
    """
    N = math.prod(dims)
    return AlphaBeta(sum(d - 1 for d in dims) * alpha, (N - 1) * s / (2 * B))


def point_to_point(hops: int, s: float, alpha: float, B: float) -> AlphaBeta:
    """One message over ``hops`` links with cut-through forwarding: hops·α + s/B.

    The scaling book prices a point-to-point transfer this way (e.g. a 4x4 corner-to-
    corner send as data time plus 6 µs). ppermute moves every pair at once, so the
    farthest pair sets the latency term when no two pairs share a link.

    Examples
    --------
    >>> ab = point_to_point(6, 45000, 1e-6, 45e9)
    >>> round(ab.latency_s * 1e6, 9), round(ab.bandwidth_s * 1e6, 9)
    (6.0, 1.0)
    """
    return AlphaBeta(hops * alpha, s / B)


# --- the scaling book's estimates ---------------------------------------------------------


def book_all_gather(dims: Sequence[int], wraparound: Sequence[bool], V: float, T_min: float, W_ici: float) -> AlphaBeta:
    """The scaling book's all_gather over the axes ``dims``: max(T_min·Σ|X_i|/2, V/(W_ici·k)).

    V is the gathered bytes and W_ici the bidirectional bandwidth of one axis. One axis
    gives max(T_min·X/2, V/W_ici), independent of X when bandwidth-bound. An axis without
    wraparound "typically doubles the time" (the book): the bandwidth term is doubled.
    The book prices reduce-scatter the same, with V the input.

    Examples
    --------
    >>> ab = book_all_gather((8,), (True,), 8 * 262144, 1e-6, 90e9)
    >>> round(ab.time_s * 1e6, 6), ab.regime
    (23.301689, 'bandwidth-bound')
    >>> round(book_all_gather((4, 4, 4), (True,) * 3, 3 * 90e3, 1e-6, 90e9).time_s * 1e6, 9)
    6.0
    """
    k = len(dims)
    factor = 1 if all(wraparound) else 2
    return AlphaBeta(T_min * sum(dims) / 2, factor * V / (W_ici * k) if k else 0.0, "max")


def book_all_reduce(dims: Sequence[int], wraparound: Sequence[bool], V: float, T_min: float, W_ici: float) -> AlphaBeta:
    """The scaling book's all-reduce: a reduce-scatter then an all_gather, 2·max(T_min·ΣX/2, V/(W_ici·k)).

    Examples
    --------
    >>> round(book_all_reduce((4,), (True,), 90e3, 1e-6, 90e9).time_s * 1e6, 9)
    4.0
    """
    half = book_all_gather(dims, wraparound, V, T_min, W_ici)
    return AlphaBeta(2 * half.latency_s, 2 * half.bandwidth_s, "max")


def book_all_to_all(dims: Sequence[int], wraparound: Sequence[bool], V: float, W_ici: float) -> AlphaBeta:
    """The scaling book's all_to_all: V·max(A,B,C)/(4·N·W_ici), V the bytes over all devices.

    On one axis (a bidirectional ring, N = X) this is V/(4·W_ici). The book gives no
    latency term for it; an axis without wraparound doubles the time, as for all_gather.

    Examples
    --------
    >>> ab = book_all_to_all((8,), (True,), 8 * 90e3, 90e9)
    >>> round(ab.bandwidth_s * 1e6, 9), ab.latency_s
    (2.0, 0.0)
    """
    N = math.prod(dims)
    factor = 1 if all(wraparound) else 2
    return AlphaBeta(0.0, factor * V * max(dims, default=0) / (4 * N * W_ici) if N else 0.0, "max")


# --- where a group lies on the grid ---------------------------------------------------


@dataclass(frozen=True)
class Geometry:
    """How one group of devices lies on a ring, torus or mesh.

    Attributes
    ----------
    dims : tuple of int
        Sizes of the axes the group spans (only the axes along which its members differ).
    wraparound : tuple of bool
        Whether the group can close a ring along each of those axes.
    regular : bool
        False when the members do not fill a sub-grid (then only closed forms that do
        not depend on the layout apply).
    hops : int or None
        Longest route between communicating members, where known (for ppermute).
    """

    dims: tuple[int, ...]
    wraparound: tuple[bool, ...]
    regular: bool = True
    hops: int | None = None

    @property
    def n(self) -> int:
        """Devices in the group."""
        return math.prod(self.dims)

    @property
    def kind(self) -> str:
        """``single``, ``ring``, ``line``, ``torus``, ``mesh`` or ``irregular``.

        Examples
        --------
        >>> Geometry((8,), (True,)).kind, Geometry((4, 4), (True, False)).kind
        ('ring', 'mesh')
        """
        if self.n == 1:
            return "single"
        if not self.regular:
            return "irregular"
        if len(self.dims) == 1:
            return "ring" if self.wraparound[0] else "line"
        return "torus" if all(self.wraparound) else "mesh"

    def describe(self) -> str:
        """Words for reports, e.g. ``torus 16x16x16``.

        Examples
        --------
        >>> Geometry((16, 16, 16), (True,) * 3).describe(), Geometry((8,), (True,)).describe()
        ('torus 16x16x16', 'ring of 8')
        """
        kind = self.kind
        if kind in ("ring", "line"):
            return f"{kind} of {self.dims[0]}"
        if kind == "irregular":
            return f"{self.n} devices that do not fill a sub-grid"
        if kind == "single":
            return "one device"
        return f"{kind} " + "x".join(map(str, self.dims))


def _evenly_spaced(values: np.ndarray, size: int) -> bool:
    """Whether sorted distinct coordinates are evenly spaced round a ring of ``size``."""
    gaps = np.diff(np.append(values, values[0] + size))
    return bool(np.all(gaps == gaps[0]))


def group_geometry(dims: Sequence[int], wraparound: Sequence[bool], members: Sequence[int]) -> Geometry:
    """The sub-grid a group of devices spans on a grid of ``dims`` (row-major numbering).

    An axis is spanned when members differ along it. It can close a ring when the grid
    wraps there and the members' coordinates are evenly spaced round it (a whole axis,
    or a strided subset), or when only two members lie on it.

    Examples
    --------
    >>> group_geometry((4, 4), (True, True), [0, 1, 2, 3])
    Geometry(dims=(4,), wraparound=(True,), regular=True, hops=None)
    >>> group_geometry((8,), (True,), [0, 1, 2, 3]).kind      # half a ring is a line
    'line'
    >>> group_geometry((16, 16, 16), (True,) * 3, range(4096)).describe()
    'torus 16x16x16'
    >>> group_geometry((4, 4), (True, True), [0, 5, 10]).kind
    'irregular'
    """
    members = np.asarray(list(members), dtype=np.int64)
    coords = np.unravel_index(members, tuple(dims))
    spanned, wraps = [], []
    for axis, size in enumerate(dims):
        values = np.unique(coords[axis])
        if len(values) < 2:
            continue
        spanned.append(len(values))
        wraps.append(len(values) == 2 or (bool(wraparound[axis]) and _evenly_spaced(values, size)))
    regular = math.prod(spanned) == len(members)
    if not regular:
        return Geometry((len(members),), (False,), regular=False)
    return Geometry(tuple(spanned), tuple(wraps))


def hops_between(dims: Sequence[int], wraparound: Sequence[bool], a: int, b: int) -> int:
    """Links on the dimension-order route from device ``a`` to ``b`` (the shorter way on wrapped axes).

    Examples
    --------
    >>> hops_between((4, 4), (True, True), 0, 15), hops_between((4, 4), (False, False), 0, 15)
    (2, 6)
    """
    coords = np.unravel_index([a, b], tuple(dims))
    total = 0
    for (x, y), size, wrap in zip(coords, dims, wraparound, strict=True):
        d = abs(int(x) - int(y))
        total += min(d, size - d) if wrap else d
    return total


# --- the registry --------------------------------------------------------------------------

_ALIASES = {"all_reduce": "psum", "all_sum": "psum", "reduce_scatter": "psum_scatter"}
ANY = "any"
"""A cost model that applies whatever the group's layout (it assumes one hop per step)."""


def canonical_collective(name: str) -> str:
    """The collective's name in the registry (``all_reduce`` and ``all_sum`` are ``psum``).

    Examples
    --------
    >>> canonical_collective("all_sum"), canonical_collective("all_gather")
    ('psum', 'all_gather')
    """
    return _ALIASES.get(name, name)


@dataclass(frozen=True)
class Estimate:
    """A closed form applied to one run's numbers.

    Attributes
    ----------
    latency_s, bandwidth_s, time_s : float
        The two terms and the time they make (their sum, or for the book their max).
    formula : str
        The closed form in symbols.
    source : str
        Where the formula comes from.
    crossover_bytes : float
        Per-device payload at which the two terms are equal (inf when nothing scales
        with the payload).
    bytes_per_device : float
        The payload the terms were evaluated for.
    """

    formula: str
    source: str
    latency_s: float
    bandwidth_s: float
    time_s: float
    crossover_bytes: float
    bytes_per_device: float = 0.0

    @property
    def regime(self) -> str:
        """``"latency-bound"`` or ``"bandwidth-bound"``: which term is the larger (``"nothing moves"`` if neither)."""
        if self.latency_s == self.bandwidth_s == 0:
            return "nothing moves"
        return "latency-bound" if self.latency_s > self.bandwidth_s else "bandwidth-bound"

    def __add__(self, other: Estimate) -> Estimate:
        """Two collectives run one after the other (the leaves of a pytree).

        The crossover is then for all leaves' payloads growing in proportion.

        Examples
        --------
        >>> a = Estimate("f", "-", 1e-6, 2e-6, 3e-6, 500.0, 1000.0)
        >>> (a + a).time_s, round((a + a).crossover_bytes, 6)
        (6e-06, 1000.0)
        """
        latency, bandwidth, payload = self.latency_s + other.latency_s, self.bandwidth_s + other.bandwidth_s, self.bytes_per_device + other.bytes_per_device
        crossover = payload * latency / bandwidth if bandwidth > 0 else (math.inf if latency > 0 else 0.0)
        return Estimate(self.formula, self.source, latency, bandwidth, self.time_s + other.time_s, crossover, payload)


def _evaluate(cost: Callable[[float], AlphaBeta], bytes_per_device: float, formula: str, source: str) -> Estimate:
    ab = cost(float(bytes_per_device))
    unit = cost(1.0)  # both terms are linear in what they count: the crossover is exact
    crossover = unit.latency_s / unit.bandwidth_s if unit.bandwidth_s > 0 else (math.inf if unit.latency_s > 0 else 0.0)
    return Estimate(formula, source, ab.latency_s, ab.bandwidth_s, ab.time_s, crossover, float(bytes_per_device))


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


BOOK = "the scaling book (jax-ml.github.io/scaling-book)"
THAKUR = "Thakur, Rabenseifner & Gropp 2005"
RINGS = "COST_MODELS.md rings; Thakur, Rabenseifner & Gropp 2005; nccl-tests PERFORMANCE.md"
DERIVED = "link loads counted as the scaling book counts its all-to-all"


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


def book_estimate(collective: str, geometry: Geometry, bytes_per_device: float, latency_s: float, bandwidth_Bps: float) -> Estimate | None:
    """The scaling book's estimate for one group (T_min = α, W_ici = 2B), or None where it has none.

    Examples
    --------
    >>> e = book_estimate("all_gather", Geometry((16, 16, 16), (True,) * 3), 2**20, 1e-6, 45e9)
    >>> e.formula
    'max(T_min·Σ|X_i|/2, V/(W_ici·k)), V = n·input, k = 3'
    """
    collective = canonical_collective(collective)
    g, W = geometry, 2 * bandwidth_Bps
    if g.kind in ("single", "irregular"):
        return None
    k = len(g.dims)
    if collective in ("all_gather", "psum_scatter"):
        volume = "V = n·input" if collective == "all_gather" else "V = input"
        scale = g.n if collective == "all_gather" else 1

        def cost(b: float) -> AlphaBeta:
            return book_all_gather(g.dims, g.wraparound, scale * b, latency_s, W)

        formula = ("max(T_min·X/2, V/W_ici)" if k == 1 else "max(T_min·Σ|X_i|/2, V/(W_ici·k))") + f", {volume}" + (f", k = {k}" if k > 1 else "")
    elif collective == "psum":

        def cost(b: float) -> AlphaBeta:
            return book_all_reduce(g.dims, g.wraparound, b, latency_s, W)

        formula = "2·max(T_min·Σ|X_i|/2, V/(W_ici·k)), V = input"
    elif collective == "all_to_all":

        def cost(b: float) -> AlphaBeta:
            return book_all_to_all(g.dims, g.wraparound, g.n * b, W)

        formula = "V/(4·W_ici), V = n·input" if k == 1 else "V·max(A,B,C)/(4·N·W_ici), V = N·input"
    elif collective == "ppermute":

        def cost(b: float) -> AlphaBeta:
            return point_to_point(g.hops or 0, b, latency_s, bandwidth_Bps)

        formula = "h·α + s/B"
    else:
        return None
    if not all(g.wraparound) and collective != "ppermute":
        formula += "; ×2 on the bandwidth term: no wraparound"
    return _evaluate(cost, bytes_per_device, formula, BOOK)


def _bound(collective: str, geometry: Geometry, bytes_per_device: float, bandwidth_Bps: float) -> tuple[float, float] | None:
    """(V/(W_ici·k), the same counting only bytes that must move): the bandwidth bound."""
    collective = canonical_collective(collective)
    g, W = geometry, 2 * bandwidth_Bps
    k = len(g.dims)
    if g.kind in ("single", "irregular") or k == 0:
        return None
    moved = (g.n - 1) / g.n
    if collective == "all_gather":
        V = g.n * bytes_per_device
        return V / (W * k), moved * V / (W * k)
    if collective == "psum_scatter":
        return bytes_per_device / (W * k), moved * bytes_per_device / (W * k)
    if collective == "psum":
        return 2 * bytes_per_device / (W * k), 2 * moved * bytes_per_device / (W * k)
    if collective == "all_to_all":
        book = book_all_to_all(g.dims, g.wraparound, g.n * bytes_per_device, W).bandwidth_s
        return book, book
    if collective == "ppermute":
        return bytes_per_device / bandwidth_Bps, bytes_per_device / bandwidth_Bps
    return None


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
