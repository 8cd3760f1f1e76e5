"""The order in which a TPU slice lists its devices: device id ``i`` of a module compiled without a device map.

JAX numbers a TPU slice's devices host by host: ``jax.devices()`` (and the abstract devices
of ``jax.experimental.topologies.get_topology_desc``) lists the chips of the first host,
then the second, and so on. Each host holds a block of 2x2x1 chips (``chips_per_host_bounds``
(2, 2, 1) for v4, v5e, v5p, v6e and TPU7x); hosts follow each other along x first, then y,
then z; within a host chips go along x first, then y; on TPU7x, whose chips show two
devices, the two cores of a chip come one after the other. On a v5e 4x4 slice, ids 0..7
are the chips (0,0), (1,0), (0,1), (1,1), (2,0), (3,0), (2,1), (3,1): a mesh laid over
``jax.devices()`` row by row is not laid row by row over the chips.

This is the order libtpu 0.0.42 (JAX 0.10.2) gives for every slice of those generations
tried (v5e 2x2 to 16x16, v6e 4x8 to 16x16, v4 2x2x4 to 4x4x8, v5p 2x2x2 to 16x16x16,
TPU7x 2x2x1 to 4x4x4); the TPU-compiled modules bundled in
``scenarios/programs/hlo/tpu/`` carry their device lists, and the tests check them
against :func:`tpu_device_order`. An axis shorter than 2 makes the host block shorter.
"""

from __future__ import annotations

import itertools

__all__ = ["HOST_BLOCK", "tpu_device_order"]

HOST_BLOCK = (2, 2, 1)
"""Chips per host along x, y and z (libtpu's default ``chips_per_host_bounds``)."""


def tpu_device_order(dims: tuple[int, ...], devices_per_chip: int = 1) -> list[tuple[tuple[int, ...], int]]:
    """Per device id, ``(chip coordinates, core on the chip)`` in the TPU's own order.

    Parameters
    ----------
    dims : tuple of int
        The slice's chips along x, y (and z), as in its name (``tpu-v5e:4x4`` is (4, 4)).
    devices_per_chip : int
        2 on TPU7x, whose two cores are two devices.

    Examples
    --------
    >>> [coords for coords, _ in tpu_device_order((4, 4))[:8]]
    [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1)]
    >>> tpu_device_order((2, 2, 1), devices_per_chip=2)[:3]
    [((0, 0, 0), 0), ((0, 0, 0), 1), ((1, 0, 0), 0)]
    """
    if not dims or any(d < 1 for d in dims) or devices_per_chip < 1:
        raise ValueError(f"expected positive axis sizes and devices per chip, got {dims} and {devices_per_chip}")
    block = tuple(min(b, d) for b, d in zip(HOST_BLOCK, dims, strict=False)) + (1,) * max(0, len(dims) - len(HOST_BLOCK))
    hosts = [range(-(-d // b)) for d, b in zip(dims, block, strict=True)]
    order = []
    for host in itertools.product(*reversed(hosts)):  # the last axis slowest, x fastest
        corner = [h * b for h, b in zip(reversed(host), block, strict=True)]
        for offset in itertools.product(*(range(b) for b in reversed(block))):
            coords = tuple(c + o for c, o in zip(corner, reversed(offset), strict=True))
            if all(c < d for c, d in zip(coords, dims, strict=True)):
                order.extend((coords, core) for core in range(devices_per_chip))
    return order


def physical_ring(nodes: list[int], dims: tuple[int, ...]) -> list[int]:
    """``nodes`` (row-major indices on ``dims``) in an order where each follows its neighbour on the grid, where one exists.

    The TPU compiler reorders a ring's members this way (``has_reordering_map``): a group
    along one axis is taken in coordinate order; a group that fills a rectangle with an
    even side goes round it (along the first row, back along the others in a serpentine,
    up the first column), every step one hop. Other groups keep row-major order.

    Examples
    --------
    >>> physical_ring([0, 1, 4, 5], (4, 4))  # the 2x2 block (0,0) (0,1) (1,0) (1,1)
    [0, 1, 5, 4]
    >>> physical_ring([12, 4, 8, 0], (4, 4))  # a column
    [0, 4, 8, 12]
    """
    strides = [1] * len(dims)
    for axis in range(len(dims) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * dims[axis + 1]
    coords = {n: tuple(n // s % d for s, d in zip(strides, dims, strict=True)) for n in nodes}
    values = [sorted({c[a] for c in coords.values()}) for a in range(len(dims))]
    varying = [a for a, v in enumerate(values) if len(v) > 1]
    ordered = sorted(nodes)
    if len(varying) != 2 or len(nodes) != len(values[varying[0]]) * len(values[varying[1]]):
        return ordered
    rows, cols = (values[a] for a in varying)
    if len(rows) % 2:
        rows, cols, varying = cols, rows, varying[::-1]
    if len(rows) % 2 or len(cols) < 2:
        return ordered
    at = {(c[varying[0]], c[varying[1]]): n for n, c in coords.items()}
    cycle = [(rows[0], c) for c in cols]
    for i, r in enumerate(rows[1:], start=1):
        cycle += [(r, c) for c in (cols[:0:-1] if i % 2 else cols[1:])]
    cycle += [(r, cols[0]) for r in rows[:0:-1]]
    return [at[place] for place in cycle]
