"""``multiaxis_bundled``: the multiaxis collectives with one message per ring step.

The same stages as ``multiaxis`` (see :mod:`netsim.algorithms.torus`): each block
is cut into 2k pieces, part i goes through the axes from axis i on, both ways
round every ring, all axes working at once. What differs is the message. In
``multiaxis`` the stage along axis a_s moves a member's super-block (everything
it gathered on a_0..a_{s-1}) as separate chunks, each free to leave as soon as
it arrives. Here the super-block is one message, a *bundle* (see
:mod:`netsim.algorithms.schedule`): at step 0 of a stage a member makes it from what it
holds, once all of it has arrived, and every later step forwards the bundle
received at the one before, whole.

That is how a ring all-gather is written on real hardware (one DMA per step,
not one per block) and what the scaling book's cost assumes. It also makes the
plan small: a 16x16x16 torus gathers over its 4096 chips with 1.1 million
transfers instead of 100 million.

Timing
    A stage along an axis of n chips runs n-1 steps, each an alpha plus one
    bundle over one link; parts never share a link direction (at every stage
    each part is on a different axis, its two halves going opposite ways), so
    with equal axes

        T = sum over stages s of (n_s - 1) * (alpha + (N_s / (2k)) * c / B)

    where c is a member's block, N_s the members whose blocks a bundle carries
    at stage s (1, then n_0, then n_0 n_1, ...) and B one link direction's
    bandwidth (see :func:`netsim.analysis.closed_forms.torus.multiaxis_bundled`). Each
    stage waits for the one before to end at every chip, so unlike
    ``multiaxis`` it pays every step's alpha: (n-1) alpha per stage, k (n-1)
    alpha in all, where ``multiaxis`` streams its chunks and overlaps them.

Keys
    Stage 0 moves chunks ``(member, piece)``. The bundle a member m sends at
    stage s >= 1 has key ``(N + (s - 1) N + m, piece)``; its parts are the
    stage s-1 keys of the members of m's line along the axis of stage s-1, in
    order along that line.

Reduce-scatter (and all-reduce: reduce-scatter, then the gather above)
    The same stages backwards, as ``multiaxis`` runs them, each step's partial sums
    one message. At the stage along axis a_s (the last gathered first) a ring
    reduce-scatter runs down every line of a_s over super-blocks: the blocks
    that agree with the member on the axes already reduced and take, on a_s, one
    value each. The super-block a member sends is a bundle of the next stage's
    super-blocks (blocks at the last stage), keyed ``(k N + r N + b, piece)`` at
    reduce stage r, b its first block. A member that receives it adds it, part
    by part, into the parts it holds, and the next step sends the bundle made
    again from them (:func:`netsim.engine.payloads.add_into`): one message a
    step, whose size falls stage by stage from N/n_{a_s} blocks to one. Its first
    step at a stage waits for the stage before to have brought its whole
    super-block (the bundle containing the one it sends). The time is the
    gather's, stages reversed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from netsim.algorithms.bundles import BundleTable
from netsim.algorithms.registry import AxesAlgorithm, register
from netsim.algorithms.torus import _one_axis, _rotations, _strides
from netsim.columnar import stable_order

__all__ = ["bundles", "gather_array", "reduce_scatter_array"]


def _line_starts(shape: tuple[int, ...], axis: int) -> np.ndarray:
    """The members at coordinate 0 on ``axis``: one per line of that axis."""
    strides = _strides(shape)
    members = np.arange(math.prod(shape), dtype=np.int64)
    return members[members // strides[axis] % shape[axis] == 0]


def _orders(shape: tuple[int, ...]) -> list[list[int]]:
    """Each part's axes in the order it crosses them, axes of size 1 left out (nothing moves along them,
    so no bundle is made there: the next stage bundles what the stage before it brought)."""
    return [[axis for axis in order if shape[axis] > 1] for order in _rotations(len(shape))]


def _key_block(stage: int, member: np.ndarray | int, n: int) -> np.ndarray | int:
    """The ``block`` of the key a member sends at a stage: its own block, then its bundles."""
    return member if stage == 0 else n + (stage - 1) * n + member


def gather_array(shape: tuple[int, ...], wraps: tuple[bool, ...]) -> np.ndarray:
    """The moves ``[moves, 6]`` of the bundled multiaxis all_gather on a group of this shape.

    Examples
    --------
    >>> moves = gather_array((2, 2), (True, True))
    >>> len(moves)  # 2 parts x 2 stages x 2 lines x 1 step x 2 members x 2 halves
    32
    >>> moves[:4].tolist()  # step 0, member 0: its own block, halves of parts 0 and 1
    [[0, 0, 2, 0, 0, 1], [0, 0, 2, 0, 1, -1], [0, 0, 1, 0, 2, 1], [0, 0, 1, 0, 3, -1]]
    >>> moves[16:18].tolist()  # step 1 (stage 1), member 0 sends its part-0 bundle (block 4 + 0) along axis 1
    [[1, 0, 1, 4, 0, 1], [1, 0, 1, 4, 1, -1]]
    """
    return _moves(shape, wraps, "gather", lambda stage, stages, starts, along: _key_block(stage, starts + along, math.prod(shape)))


def _reduce_key(stage: int, last: int, first_block: np.ndarray, n: int, k: int) -> np.ndarray:
    """The ``block`` of the key sent at reduce stage ``stage``: a bundle's, else (the last stage) the block's own."""
    return first_block if stage == last else k * n + stage * n + first_block


def _fixed(members: np.ndarray, shape: tuple[int, ...], axes: list[int] | tuple[int, ...]) -> np.ndarray:
    """The members' position with every coordinate but those on ``axes`` set to 0."""
    strides = _strides(shape)
    out = np.zeros_like(members)
    for axis in axes:
        out += members // strides[axis] % shape[axis] * strides[axis]
    return out


def reduce_scatter_array(shape: tuple[int, ...], wraps: tuple[bool, ...]) -> np.ndarray:
    """The moves ``[moves, 6]`` of the bundled multiaxis reduce-scatter on a group of this shape.

    Examples
    --------
    >>> moves = reduce_scatter_array((2, 2), (True, True))
    >>> len(moves)  # as many as the gather's: 2 parts x 2 stages x 2 lines x 1 step x 2 members x 2 halves
    32
    >>> moves[:2].tolist()  # step 0, member 0, part 0 (gathered along axis 0, then 1): reduced along axis 1 first, one bundle of two blocks
    [[0, 0, 1, 9, 0, 1], [0, 0, 1, 9, 1, -1]]
    """
    n, k = math.prod(shape), len([d for d in shape if d > 1])

    def key(stage: int, stages: list[int], starts: np.ndarray, along: np.ndarray) -> np.ndarray:
        return _reduce_key(stage, k - 1, _fixed(starts, shape, stages[:stage]) + along, n, k)

    return _moves(shape, wraps, "reduce_scatter", key)


def _moves(shape: tuple[int, ...], wraps: tuple[bool, ...], pattern: str, key: Callable[[int, list[int], np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """The moves ``[moves, 6]`` of every part's stages (a reduce-scatter's backwards), one-axis plans down every line;
    ``key(stage, stages, line starts, block's offset along the line)`` names the block each move sends."""
    n = math.prod(shape)
    strides = _strides(shape)
    out = []
    for part, order in enumerate(_orders(shape)):
        offset = 0
        stages = order if pattern == "gather" else order[::-1]
        for stage, axis in enumerate(stages):
            one = np.array(list(_one_axis(pattern, wraps[axis])(shape[axis])), np.int64).reshape(-1, 6)
            starts = _line_starts(shape, axis)[:, None]
            stride = strides[axis]
            moves = np.empty((len(starts), len(one), 6), np.int32)  # (half the memory of int64: a pod has a million moves)
            moves[..., 0] = offset + one[:, 0]
            moves[..., 1] = starts + one[:, 1] * stride
            moves[..., 2] = starts + one[:, 2] * stride
            moves[..., 3] = key(stage, stages, starts, one[:, 3] * stride)
            moves[..., 4] = 2 * part + one[:, 4]
            moves[..., 5] = one[:, 5]
            out.append(moves.reshape(-1, 6))
            offset += 1 + int(one[:, 0].max(initial=-1))
    if not out:
        return np.empty((0, 6), np.int64)
    moves = np.concatenate(out)
    # By step, then sender: the engine handles a member's sends together, and neighbouring
    # transfers in memory play several times faster on big runs than scattered ones.
    return moves[stable_order(moves[:, 0].astype(np.int64) * n + moves[:, 1])]


def _reduce_bundles(shape: tuple[int, ...]) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """The reduce-scatter's bundles: (keys, part counts, parts), a list entry per part, stage and half."""
    n = math.prod(shape)
    strides = _strides(shape)
    members = np.arange(n, dtype=np.int64)
    orders = _orders(shape)
    k = len(orders[0]) if orders else 0
    keys, counts, parts = [], [], []
    for part, order in enumerate(orders):
        backwards = order[::-1]
        for stage in range(k - 1):
            inner = backwards[stage + 1]  # the axis the next stage splits the super-block along
            first = np.unique(_fixed(members, shape, backwards[: stage + 1]))
            split = first[:, None] + np.arange(shape[inner]) * strides[inner]  # [bundle, c]
            for half in (0, 1):
                piece = 2 * part + half
                keys.append(np.stack([_reduce_key(stage, k - 1, first, n, k), np.full(len(first), piece)], axis=1))
                counts.append(np.full(len(first), shape[inner]))
                inner_keys = _reduce_key(stage + 1, k - 1, split, n, k)
                parts.append(np.stack([inner_keys, np.full_like(inner_keys, piece)], axis=2).reshape(-1, 2))
    return keys, counts, parts


def bundles(shape: tuple[int, ...], wraps: tuple[bool, ...], pattern: str = "gather") -> BundleTable:
    """Bundle key -> part keys, for every bundle the ``pattern``'s moves send (:func:`gather_array`'s, :func:`reduce_scatter_array`'s or both).

    Examples
    --------
    >>> table = bundles((2, 2), (True, True))
    >>> table[(4, 0)]  # member 0's stage-1 bundle of piece 0: the blocks of its line along axis 0
    ((0, 0), (2, 0))
    >>> len(table)  # 4 members x 4 pieces, one bundle each (two stages, one of them bundled)
    16
    >>> bundles((2, 2), (True, True), "reduce_scatter")[(9, 0)]  # the reduce-scatter's super-block of piece 0 with blocks 1 and 3 (axis 1 at 1)
    ((1, 0), (3, 0))
    """
    n = math.prod(shape)
    strides = _strides(shape)
    members = np.arange(n, dtype=np.int64)
    keys, parts = [], []
    for part, order in enumerate(_orders(shape)):
        for stage in range(1, len(order)):
            axis = order[stage - 1]
            stride, size = strides[axis], shape[axis]
            line = (members - members // stride % size * stride)[:, None] + np.arange(size) * stride  # [member, k]
            for half in (0, 1):
                piece = 2 * part + half
                keys.append(np.stack([_key_block(stage, members, n), np.full(n, piece)], axis=1))
                parts.append(np.stack([_key_block(stage - 1, line, n), np.full_like(line, piece)], axis=2).reshape(-1, 2))
    sizes = [np.full(n, shape[order[stage - 1]]) for order in _orders(shape) for stage in range(1, len(order)) for _ in (0, 1)]
    if pattern == "reduce_scatter":
        keys, sizes, parts = [], [], []
    if pattern in ("reduce_scatter", "all_reduce"):
        more_keys, more_sizes, more_parts = _reduce_bundles(shape)
        keys, sizes, parts = keys + more_keys, sizes + more_sizes, parts + more_parts
    if not keys:
        return BundleTable(np.zeros((0, 2), np.int64), np.zeros(1, np.int64), np.zeros((0, 2), np.int64))
    keys_a = np.concatenate(keys)
    sizes = np.concatenate(sizes)
    ptr = np.zeros(len(keys_a) + 1, np.int64)
    np.cumsum(sizes, out=ptr[1:])
    return BundleTable(keys_a, ptr, np.concatenate(parts))


register(
    "multiaxis_bundled",
    AxesAlgorithm(
        lambda k: 2 * k,
        None,
        reduce_scatter_array,
        "multiaxis with one message per ring step: each stage sends a member's super-block as one bundle",
        gather_array=gather_array,
        bundles=bundles,
        transfers=lambda shape: len(shape) * sum(2 * (d - 1) for d in shape) * math.prod(shape),
    ),
)
