"""The chunks every device starts a lowered program's collectives from, made or counted.

A collective's blocks are cut into pieces, each a chunk ``(block + the op's block offset,
piece)`` a device holds before the run: :func:`start_pairs` lists them, one shared list per
op and block (a reduction's every device holds every block: a whole training step's
millions of entries are made once per op and block), :func:`start_chunks` makes them into
each device's dict, :func:`start_chunk_count` counts them without making them (for the
memory estimate, :func:`netsim.programs.run.memory_needed`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from netsim.engine.size_buffers import SizeBuffers

if TYPE_CHECKING:
    from netsim.programs.lowering import Lowered

__all__ = ["start_chunk_count", "start_chunks", "start_pairs", "start_sizes"]

Pair = tuple[tuple[int, int], tuple[int, int, int]]


def start_chunks(lowered: Lowered) -> list[dict[tuple[int, int], tuple[int, int, int]]]:
    """Per device, the chunks the collectives start from: key -> (op index, block, elements).

    Examples
    --------
    >>> from netsim.programs.files import load_program
    >>> from netsim.programs.lowering import lower
    >>> p = load_program("scenarios/programs/megatron_mlp.yaml")
    >>> held = start_chunks(lower(p.program, p.mesh_obj))
    >>> len(held) == p.mesh_obj.topology.n_devices, sum(map(len, held)) == start_chunk_count(lower(p.program, p.mesh_obj))
    (True, True)
    """
    held: list[dict[tuple[int, int], tuple[int, int, int]]] = []
    for lists in start_pairs(lowered):
        chunks: dict[tuple[int, int], tuple[int, int, int]] = {}
        for pairs in lists:
            chunks.update(pairs)
        held.append(chunks)
    return held


def start_chunk_count(lowered: Lowered) -> int:
    """How many chunks the devices start with, all told, counted without making them (played on representatives: a
    chunk of each size sent, on each of them)."""
    n = lowered.mesh.topology.n_devices
    if lowered.quotient is not None:
        return int(lowered.quotient.aliases.kept.sum()) * len(lowered.size_classes)
    return sum(op.pieces * sum(map(len, op.layout.block_sizes(n))) for op in lowered.ops if op.layout is not None)


def start_pairs(lowered: Lowered) -> list[list[list[Pair]]]:
    """:func:`start_chunks` as lists of ``(key, entry)`` pairs per device, one per block it holds, in the same order;
    devices that hold the same block of an op share the list."""
    held: list[list[list[Pair]]] = [[] for _ in range(lowered.mesh.topology.n_devices)]
    for index, op in enumerate(lowered.ops):
        if op.layout is None:  # a compute op (a collective matmul has its gather's layout)
            continue
        entries: dict[tuple[int, int], list[Pair]] = {}
        for device, blocks in enumerate(op.layout.block_sizes(len(held))):
            for block, elements in blocks.items():
                pairs = entries.get((block, elements))
                if pairs is None:
                    small, big = divmod(elements, op.pieces)
                    offset = block + op.block_offset
                    pairs = entries[(block, elements)] = [((offset, p), (index, block, small + (p < big))) for p in range(op.pieces)]
                held[device].append(pairs)
    return held


def start_sizes(lowered: Lowered, widths: Sequence[int]) -> SizeBuffers:
    """:func:`start_chunks` as size-only chunks held in columns (op ``i``'s elements ``widths[i]`` bytes each):
    the same keys and sizes, in the same order on each device, without a dict per device.

    Examples
    --------
    >>> from netsim.programs.files import load_program
    >>> from netsim.programs.lowering import lower
    >>> p = load_program("scenarios/programs/megatron_mlp.yaml")
    >>> low = lower(p.program, p.mesh_obj)
    >>> sized, held = start_sizes(low, [4] * len(low.ops)), start_chunks(low)
    >>> all(list(sized[d]) == list(held[d]) for d in range(len(held)))
    True
    """
    n = lowered.mesh.topology.n_devices
    if lowered.quotient is not None:  # played on representatives: each holds a chunk of each size sent, keyed (k, 0)
        holders, sizes = np.flatnonzero(lowered.quotient.aliases.kept), lowered.size_classes
        keys = np.stack([np.tile(np.arange(len(sizes)), len(holders)), np.zeros(len(holders) * len(sizes), np.int64)], axis=1)
        return SizeBuffers(n, np.repeat(holders, len(sizes)), keys, np.tile(sizes, len(holders)))
    parts: list[tuple[np.ndarray, ...]] = []
    for index, op in enumerate(lowered.ops):
        if op.layout is None:  # a compute op (a collective matmul has its gather's layout)
            continue
        sizes = op.layout.block_sizes(n)
        m = sum(map(len, sizes))
        device = np.repeat(np.arange(n, dtype=np.int64), [len(b) for b in sizes])
        block = np.fromiter(itertools.chain.from_iterable(sizes), np.int64, m)
        elements = np.fromiter(itertools.chain.from_iterable(b.values() for b in sizes), np.int64, m)
        pieces = op.pieces
        small, big = np.divmod(elements, pieces)
        piece = np.tile(np.arange(pieces, dtype=np.int64), m)
        count = np.repeat(small, pieces) + (piece < np.repeat(big, pieces))
        parts.append((np.repeat(device, pieces), np.repeat(block + op.block_offset, pieces), piece, count * widths[index]))
    if not parts:
        return SizeBuffers(n, np.zeros(0, np.int64), np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
    device, block, piece, nbytes = (np.concatenate(column) for column in zip(*parts, strict=True))
    order = np.argsort(device, kind="stable")
    return SizeBuffers(n, device[order], np.stack([block[order], piece[order]], axis=1), nbytes[order])
