"""``direct``: every member sends straight to every other member, all at once.

There are no steps and no forwarding by other members: each block goes from its
source to its destination along the topology's route (dimension-order, the shorter
way round each axis), and messages that share a link queue for it. Each block is
cut in two halves sent with opposite tie-breaks, so a destination exactly half way
round a ring is reached both ways (like the bidirectional ring); any other
destination gets both halves along the same shortest route, back to back, which
costs what one whole block would.

Patterns and costs (block of s bytes, one-way link bandwidth B, per-hop latency
alpha; T >= max over links of bytes/B, plus the hops of the longest route):

``gather`` (all_gather)
    Member i sends block i to every j. Where every pair has its own one-hop link
    (a ring of 2 or 3): alpha + s/B, or alpha + s/(2B) on a ring of 2, whose two
    cables carry one half each. On a ring of even n, each link direction carries
    n^2/8 blocks: T ~ n^2 s/(8B), worse than a ring's (n-1) s/(2B) for n > 4.
``reduce_scatter``
    Member i sends its contribution to block j straight to j, which adds it in.
    Same link loads as the gather.
``all_to_all``
    Member i sends block (i -> j) to j. With n blocks of c bytes per member on a
    ring of even n, each link direction carries n^2/8 blocks, so bandwidth alone
    gives T = n^2 c/(8B) = V/(4 W_ici), the scaling book's estimate, V = n^2 c the
    bytes over all members and W_ici = 2B. The simulated time adds the latency of
    the longest route (n/2 hops) and the queueing of multi-hop blocks behind others.
    Thakur-Rabenseifner-Gropp's pairwise exchange, (p-1) alpha + n beta, assumes
    one message at a time per process; direct sends everything at once.

:func:`permutation` plans ``ppermute``'s sends the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from netsim.algorithms.registry import Algorithm, Move, register
from netsim.algorithms.schedule import Schedule
from netsim.algorithms.transfers import Transfer

__all__ = ["multipath_permutation", "permutation"]

HALVES = ((0, 1), (1, -1))
"""(piece, tie direction) of the two halves of every block."""


def _order(n: int, i: int) -> Iterator[int]:
    """Destinations of member i, farthest first (offsets n//2, ceil(n/2), n//2 - 1, ...).

    Long routes leave first so they are not stuck behind short ones at the source.
    """
    seen = set()
    for d in range(n // 2, 0, -1):
        for j in ((i + d) % n, (i - d) % n):
            if j != i and j not in seen:
                seen.add(j)
                yield j


def _gather(n: int) -> Iterator[Move]:
    for i in range(n):
        for j in _order(n, i):
            for piece, direction in HALVES:
                yield 0, i, j, i, piece, direction


def _reduce_scatter(n: int) -> Iterator[Move]:
    for i in range(n):
        for j in _order(n, i):
            for piece, direction in HALVES:
                yield 0, i, j, j, piece, direction


def _all_to_all(n: int) -> Iterator[Move]:
    for i in range(n):
        for j in _order(n, i):
            for piece, direction in HALVES:
                yield 0, i, j, i * n + j, piece, direction


def permutation(pairs: Sequence[tuple[int, int]]) -> Schedule:
    """Plan a ``ppermute``: pair k sends block k from its source to its destination.

    Each block goes in two halves along the route, with opposite tie-breaks.
    The schedule's groups are the pairs.

    Examples
    --------
    >>> print(permutation([(0, 1), (1, 0)]).table())
    step  src  dst  block  piece  op     after
       0    0    1      0      0  place  -
       0    0    1      0      1  place  -
       0    1    0      1      0  place  -
       0    1    0      1      1  place  -
    """
    pairs = tuple((int(s), int(d)) for s, d in pairs)
    transfers = tuple(Transfer(0, s, d, (k, piece), False, direction, (), "permute") for k, (s, d) in enumerate(pairs) for piece, direction in HALVES)
    return Schedule("direct", "permute", pairs, len(HALVES), transfers)


def multipath_permutation(pairs: Sequence[tuple[int, int]], shape: Sequence[int]) -> Schedule:
    """Plan a ``multipath`` ppermute: a pair's payload split over disjoint shortest routes.

    On a grid of ``shape``, a pair whose devices differ along r axes can leave by r
    links and arrive by r others: its payload is cut into as many pieces as the most
    axes any pair crosses, and piece j goes in dimension order starting from the
    pair's (j mod r)-th axis (direction ``2 + axis``, see
    :func:`netsim.engine.routes.axis_first_route`), so a corner-to-corner send on a 4x4
    goes half right then down and half down then right, as the scaling book sends it.
    A pair along one axis keeps ``direct``'s two halves with opposite tie-breaks.

    Examples
    --------
    >>> [(t.src, t.dst, t.key, t.direction) for t in multipath_permutation([(0, 15)], (4, 4)).transfers]
    [(0, 15, (0, 0), 2), (0, 15, (0, 1), 3)]
    """
    pairs = tuple((int(s), int(d)) for s, d in pairs)
    crossed = [[a for a, (x, y) in enumerate(zip(_coords(s, shape), _coords(d, shape), strict=True)) if x != y] for s, d in pairs]
    pieces = max([len(axes) for axes in crossed] + [2])
    transfers = []
    for k, ((s, d), axes) in enumerate(zip(pairs, crossed, strict=True)):
        for piece in range(pieces):
            direction = HALVES[piece % 2][1] if len(axes) < 2 else 2 + axes[piece % len(axes)]
            transfers.append(Transfer(0, s, d, (k, piece), False, direction, (), "permute"))
    return Schedule("multipath", "permute", pairs, pieces, tuple(transfers))


def _coords(device: int, shape: Sequence[int]) -> tuple[int, ...]:
    coords = []
    for size in reversed(shape):
        device, c = divmod(device, size)
        coords.append(c)
    return tuple(reversed(coords))


register(
    "direct",
    Algorithm(
        len(HALVES),
        _gather,
        _reduce_scatter,
        "every pair sent at once, routed, contending for links",
        all_to_all=_all_to_all,
        each_piece_once=("gather", "reduce_scatter", "all_reduce", "all_to_all"),
    ),
)
