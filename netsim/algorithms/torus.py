"""Collectives over several mesh axes at once: ``multiaxis`` and ``dimension_ordered``.

The group's members are laid row-major over k axes of sizes (n_0, ..., n_{k-1})
(see :mod:`netsim.network.device_mesh`); N = n_0 ... n_{k-1} members, block b belongs to the
member at position b. Along one axis the members form a *line* of that axis (the
members that differ only in it), which is a ring or, without wraparound, a line.

Gathering axis after axis
    To all-gather, gather along one axis, then along the next with everything
    gathered so far, and so on: after the stage along axis a_s, a member holds the
    blocks that agree with it on the axes not yet gathered. The stage along a_s
    moves, down every line of a_s, the "super-block" a member has collected so far
    (the blocks gathered on a_0..a_{s-1}), as separate chunks. A reduce-scatter
    runs the same stages backwards, with partial sums: first along a_{k-1} over
    all blocks, last along a_0 over the blocks the member will own.

Along one axis
    On a ring: the bidirectional ring (half of each chunk each way round,
    (n-1) steps). On a line: every chunk goes both ways along the line,
    pipelined: (n-1) steps too, but the link into an end of the line carries
    n-1 chunks where a ring link carries (n-1)/2: the missing link doubles the
    bandwidth time. Both keep every link one hop.

``multiaxis`` (the default for a collective over mesh axes)
    Each block is cut into k parts (each cut again in two halves for the two
    directions); part i is gathered along axis i first, then i+1, ..., wrapping
    round, so at every moment each axis's links carry some part: all the axes
    work at once. With equal axes, each link direction carries (N-1)/(2k) blocks
    in all, so a bandwidth-bound all_gather of V gathered bytes takes

        T = (N-1)/N * V / (W_ici * k)     with W_ici = 2B, both directions of a link,

    the scaling book's V / (W_ici * k) without the 1/N share each member already
    holds. Latency adds sum_i (n_i - 1) hops. On one axis it is exactly the
    bidirectional ring (or the line on an axis without wraparound).
``dimension_ordered``
    The whole of each block goes along a_0 first, then a_1, ... (the order
    given). Chunks move on as soon as they arrive, so the stages overlap, but
    the last axis's links must carry every block that is not already in their
    line: n_0 ... n_{k-2} (n_{k-1} - 1) / 2 blocks per link direction, against
    (N-1)/(2k) for multiaxis. The last axis is the bottleneck:

        T ~= (n_{k-1} - 1)/n_{k-1} * V / W_ici,

    1.6 times the multiaxis time on a 4x4 torus and 2.29 times on 4x4x4.

    It also runs all_to_all (:func:`dimension_ordered_all_to_all`): block i -> j
    goes along a_0 to the member with j's coordinate there, which forwards it
    along a_1, and so on; each stage is a direct all_to_all within the lines of
    one axis. The links carry what ``direct``'s dimension-order routes put on
    them; the stages overlap, so the time lies between the busiest link plus a
    hop and the stages in turn (see :func:`netsim.analysis.closed_forms.direct.dimension_ordered_all_to_all`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator

import numpy as np

from netsim.algorithms.direct import HALVES
from netsim.algorithms.direct import _order as _farthest_first
from netsim.algorithms.registry import ALGORITHMS, AxesAlgorithm, Move, register

__all__ = ["dimension_ordered_all_to_all", "line_gather", "line_reduce_scatter"]

OneAxis = Callable[[int], Iterator[Move]]


def line_gather(n: int) -> Iterator[Move]:
    """All-gather along a line of n members without wraparound; both halves of a block go both ways.

    At step t member i passes block i-t to the right and block i+t to the left,
    so blocks travel pipelined towards both ends: n-1 steps, and the link into
    an end of the line carries n-1 blocks.

    Examples
    --------
    >>> [(t, i, j, b) for t, i, j, b, piece, _ in line_gather(3) if piece == 0]
    [(0, 0, 1, 0), (0, 1, 2, 1), (1, 1, 2, 0), (0, 1, 0, 1), (0, 2, 1, 2), (1, 1, 0, 2)]
    """
    for piece in (0, 1):
        for t in range(n - 1):
            for i in range(t, n - 1):
                yield t, i, i + 1, i - t, piece, 1
        for t in range(n - 1):
            for i in range(1, n - t):
                yield t, i, i - 1, i + t, piece, -1


def line_reduce_scatter(n: int) -> Iterator[Move]:
    """Reduce-scatter along a line: block k is summed along two chains meeting at member k.

    One chain starts at member 0 and comes right, one starts at member n-1 and
    comes left; the farthest blocks leave first so the chains pipeline: n-1
    steps, the mirror image of :func:`line_gather`.

    Examples
    --------
    >>> [(t, i, j, b) for t, i, j, b, piece, _ in line_reduce_scatter(3) if piece == 0]
    [(0, 0, 1, 2), (1, 0, 1, 1), (1, 1, 2, 2), (0, 2, 1, 0), (1, 1, 0, 0), (1, 2, 1, 1)]
    """
    for piece in (0, 1):
        for t in range(n - 1):
            for i in range(min(t, n - 2) + 1):
                yield t, i, i + 1, n - 1 - t + i, piece, 1
        for t in range(n - 1):
            for m in range(max(1, n - 1 - t), n):
                yield t, m, m - 1, t - (n - 1 - m), piece, -1


def _one_axis(pattern: str, ring: bool) -> OneAxis:
    bidirectional = ALGORITHMS["bidirectional_ring"]
    if pattern == "gather":
        return bidirectional.gather if ring else line_gather
    return bidirectional.reduce_scatter if ring else line_reduce_scatter


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(math.prod(shape[a + 1 :]) for a in range(len(shape)))


def _stage(shape: tuple[int, ...], axis: int, ranging: tuple[int, ...], one_axis: list[Move], part: int) -> Iterator[Move]:
    """The moves of one stage along ``axis``: every line of it moves, per combination of
    the ``ranging`` axes (those whose blocks it carries), the 1-D plan of that axis."""
    strides = _strides(shape)
    others = [a for a in range(len(shape)) if a != axis]
    for coords in itertools.product(*(range(shape[a]) for a in others)):
        base = sum(c * strides[a] for a, c in zip(others, coords, strict=True))
        own = dict(zip(others, coords, strict=True))
        for values in itertools.product(*(range(shape[a]) for a in ranging)):
            block_base = base + sum((v - own[a]) * strides[a] for a, v in zip(ranging, values, strict=True))
            for step, i, j, b, piece, direction in one_axis:
                stride = strides[axis]
                yield step, base + i * stride, base + j * stride, block_base + b * stride, 2 * part + piece, direction


def _stage_plans(
    pattern: str, orders: Callable[[int], list[tuple[int, ...]]], shape: tuple[int, ...], wraps: tuple[bool, ...]
) -> Iterator[tuple[int, int, tuple[int, ...], list[Move], int]]:
    """Each stage of each part, in order: (part, axis, the axes whose blocks it carries, the axis's 1-D moves, its first step)."""
    for part, order in enumerate(orders(len(shape))):
        stages = list(enumerate(order))
        if pattern == "reduce_scatter":
            stages.reverse()
        offset = 0
        for position, axis in stages:
            one_axis = list(_one_axis(pattern, wraps[axis])(shape[axis]))
            yield part, axis, order[:position], one_axis, offset
            offset += 1 + max((m[0] for m in one_axis), default=-1)


def _axis_by_axis(pattern: str, orders: Callable[[int], list[tuple[int, ...]]]) -> Callable[[tuple[int, ...], tuple[bool, ...]], Iterator[Move]]:
    """Moves of a gather or reduce-scatter in which part i goes through the axes in ``orders(k)[i]``."""

    def moves(shape: tuple[int, ...], wraps: tuple[bool, ...]) -> Iterator[Move]:
        for part, axis, ranging, one_axis, offset in _stage_plans(pattern, orders, shape, wraps):
            for step, *rest in _stage(shape, axis, ranging, one_axis, part):
                yield (offset + step, *rest)

    return moves


def _stage_array(shape: tuple[int, ...], axis: int, ranging: tuple[int, ...], one_axis: np.ndarray, part: int) -> np.ndarray:
    """:func:`_stage` as an int array ``[moves, 6]``, the rows in the same order, without a tuple per move."""
    strides = np.array(_strides(shape), np.int64)
    others = [a for a in range(len(shape)) if a != axis]
    coords = np.indices([shape[a] for a in others], np.int64).reshape(len(others), -1) if others else np.zeros((0, 1), np.int64)  # (product's order)
    base = strides[others] @ coords if others else np.zeros(1, np.int64)
    if ranging:
        values = np.indices([shape[a] for a in ranging], np.int64).reshape(len(ranging), -1)
        own = coords[[others.index(a) for a in ranging]]
        block_base = base[:, None] + np.einsum("a,arv->rv", strides[list(ranging)], values[:, None, :] - own[:, :, None])
    else:
        block_base = base[:, None]
    step, i, j, b, piece, direction = one_axis.T
    stride = strides[axis]
    out = np.empty((*block_base.shape, len(one_axis), 6), np.int64)
    out[..., 0] = step
    out[..., 1] = base[:, None, None] + i * stride
    out[..., 2] = base[:, None, None] + j * stride
    out[..., 3] = block_base[:, :, None] + b * stride
    out[..., 4] = 2 * part + piece
    out[..., 5] = direction
    return out.reshape(-1, 6)


def _axis_by_axis_array(pattern: str, orders: Callable[[int], list[tuple[int, ...]]]) -> Callable[[tuple[int, ...], tuple[bool, ...]], np.ndarray]:
    """:func:`_axis_by_axis` as an int array ``[moves, 6]`` (the same moves in the same order)."""

    def moves(shape: tuple[int, ...], wraps: tuple[bool, ...]) -> np.ndarray:
        stages_moves = []
        for part, axis, ranging, one_axis, offset in _stage_plans(pattern, orders, shape, wraps):
            stage = _stage_array(shape, axis, ranging, np.array(one_axis, np.int64).reshape(-1, 6), part)
            stage[:, 0] += offset
            stages_moves.append(stage)
        return np.concatenate(stages_moves) if stages_moves else np.zeros((0, 6), np.int64)

    return moves


def _rotations(k: int) -> list[tuple[int, ...]]:
    """Part i visits axes i, i+1, ..., k-1, 0, ..., i-1."""
    return [tuple((i + s) % k for s in range(k)) for i in range(k)]


def _in_order(k: int) -> list[tuple[int, ...]]:
    """One part, visiting the axes in the order given."""
    return [tuple(range(k))]


def _axis_order(d: int, c: int, ring: bool) -> list[int]:
    """Coordinates a member at ``c`` on an axis of ``d`` sends to, farthest first (as ``direct`` does)."""
    if ring:
        return list(_farthest_first(d, c))
    return sorted((t for t in range(d) if t != c), key=lambda t: (-abs(t - c), t))


def _distance(d: int, a: int, b: int, ring: bool) -> int:
    """Hops between coordinates a and b on an axis of d (the shorter way on a ring)."""
    return min(abs(a - b), d - abs(a - b)) if ring else abs(a - b)


def _offset(strides: tuple[int, ...], coords: list[int], axes: range, values: tuple[int, ...]) -> int:
    """Position change from moving the ``axes`` coordinates from ``coords`` to ``values``."""
    return sum((v - coords[a]) * strides[a] for a, v in zip(axes, values, strict=True))


def dimension_ordered_all_to_all(shape: tuple[int, ...], wraps: tuple[bool, ...]) -> Iterator[Move]:
    """All_to_all one axis after the other: a direct all_to_all within the lines of each axis.

    Block ``i*n + j`` goes first along axis 0, to the member with j's coordinate on
    axis 0 and i's on the others, then along axis 1, and so on, each step placing it
    at the member reached, which passes it on. Before the step along axis a a member
    holds the blocks whose source agrees with it on axes a.. and whose destination
    agrees with it on axes ..a-1; it sends to every other member of its line of a
    the n/n_a of them whose destination has that member's coordinate on a. Each block
    goes in two halves with opposite tie directions, as in ``direct``: a member half
    way round a ring gets one half each way. Destinations farthest first and, to
    each, the blocks with the most hops still to go on later axes first (so they
    reach the next axis's links early); on one axis this is exactly ``direct``.

    Examples
    --------
    >>> # member 0 sends block 0->3 (to forward) before block 0->2 (which stays at 2)
    >>> [(t, i, j, b) for t, i, j, b, piece, _ in dimension_ordered_all_to_all((2, 2), (True, True)) if piece == 0][:6]
    [(0, 0, 2, 3), (0, 0, 2, 2), (0, 1, 3, 6), (0, 1, 3, 7), (0, 2, 0, 9), (0, 2, 0, 8)]
    """
    n = math.prod(shape)
    strides = _strides(shape)
    for axis, (d, ring) in enumerate(zip(shape, wraps, strict=True)):
        stride = strides[axis]
        before, after = range(axis), range(axis + 1, len(shape))
        for m in range(n):
            coords = [m // strides[a] % shape[a] for a in range(len(shape))]
            # sources: m's coordinates on axes axis.., any on ..axis-1
            sources = [m + _offset(strides, coords, before, values) for values in itertools.product(*(range(shape[a]) for a in before))]
            for t in _axis_order(d, coords[axis], ring):
                to = m + (t - coords[axis]) * stride
                # destinations: m's coordinates on ..axis-1, t on axis, any on axis+1..
                targets = [to + _offset(strides, coords, after, values) for values in itertools.product(*(range(shape[a]) for a in after))]
                targets.sort(key=lambda j: -sum(_distance(shape[a], j // strides[a] % shape[a], coords[a], wraps[a]) for a in after))
                for i in sources:
                    for j in targets:
                        for piece, direction in HALVES:
                            yield axis, m, to, i * n + j, piece, direction


register(
    "multiaxis",
    AxesAlgorithm(
        lambda k: 2 * k,
        _axis_by_axis("gather", _rotations),
        _axis_by_axis("reduce_scatter", _rotations),
        "a part of each block per axis, each part going through the axes from a different one: all axes at once",
        gather_array=_axis_by_axis_array("gather", _rotations),
        each_piece_once=("gather", "reduce_scatter", "all_reduce"),
    ),
)
register(
    "dimension_ordered",
    AxesAlgorithm(
        lambda k: 2,
        _axis_by_axis("gather", _in_order),
        _axis_by_axis("reduce_scatter", _in_order),
        "whole blocks, one axis after the other in the order given",
        all_to_all=dimension_ordered_all_to_all,
        gather_array=_axis_by_axis_array("gather", _in_order),
        each_piece_once=("gather", "reduce_scatter", "all_reduce"),
    ),
)
