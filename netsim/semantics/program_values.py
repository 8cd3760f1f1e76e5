"""The values of a program's arrays: dtypes, each device's shard, products, the unsharded NumPy reference and its tolerance.

A program's array is a global array split over mesh axes
(:class:`~netsim.programs.model.Sharded`, described here by its ``shape``,
``sharding`` and ``partial`` axes). Device ``d`` holds the block of the global
array at its coordinates along the axes each dimension is split over (major to
minor); when the array is a *partial sum* over some axes, the devices along them
hold addends whose sum is that block.

Products multiply bfloat16 (or float16) inputs with float32 accumulation and round
the result to the output dtype, as a TPU's matrix unit does; float32 and float64
accumulate in their own precision.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["block_of", "dtype_of", "itemsize", "product", "shard", "tolerance"]


def dtype_of(name: str) -> np.dtype:
    """The NumPy dtype of a name, ``"bfloat16"`` included (ml_dtypes, as JAX has it).

    Examples
    --------
    >>> dtype_of("bfloat16").itemsize, dtype_of("float32").name
    (2, 'float32')
    """
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def itemsize(name: str) -> int:
    """Bytes per element of a dtype name.

    Examples
    --------
    >>> itemsize("bfloat16"), itemsize("float32")
    (2, 4)
    """
    return 2 if name == "bfloat16" else np.dtype(name).itemsize


def _accumulator(dtype: np.dtype) -> np.dtype:
    """What a product accumulates in: float32 for narrow floats, the dtype itself otherwise (int64 for ints)."""
    if dtype.kind in "iub":
        return np.dtype(np.int64)
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def product(subscripts: str, a: np.ndarray, b: np.ndarray, out_dtype: np.dtype) -> np.ndarray:
    """``einsum(subscripts, a, b)`` accumulated in float32 (narrow floats) and rounded to ``out_dtype``.

    Examples
    --------
    >>> a = np.ones((2, 3), dtype_of("bfloat16"))
    >>> product("ik,kj->ij", a, a.T, dtype_of("bfloat16"))
    array([[3, 3],
           [3, 3]], dtype=bfloat16)
    """
    wide = _accumulator(np.result_type(a.dtype, b.dtype) if a.dtype == b.dtype else np.dtype(np.float32))
    return np.einsum(subscripts, a.astype(wide), b.astype(wide), optimize=True).astype(out_dtype)


def block_of(device_coords: Mapping[str, int], mesh: Mapping[str, int], shape: Sequence[int], sharding: Sequence[Sequence[str]]) -> tuple[slice, ...]:
    """Where a device's shard lies in the global array.

    Examples
    --------
    >>> block_of({"X": 1, "Y": 2}, {"X": 2, "Y": 4}, (8, 16), ((), ("X", "Y")))
    (slice(0, 8, None), slice(12, 14, None))
    """
    index = []
    for size, axes in zip(shape, sharding, strict=True):
        parts = math.prod(mesh[a] for a in axes)
        position = 0
        for a in axes:
            position = position * mesh[a] + device_coords[a]
        step = size // parts
        index.append(slice(position * step, (position + 1) * step))
    return tuple(index)


def shard(global_value: np.ndarray, device_coords: Mapping[str, int], mesh: Mapping[str, int], sharding: Sequence[Sequence[str]]) -> np.ndarray:
    """A device's shard of a global array (a copy, contiguous).

    Examples
    --------
    >>> shard(np.arange(8), {"X": 3}, {"X": 4}, (("X",),))
    array([6, 7])
    """
    return np.ascontiguousarray(global_value[block_of(device_coords, mesh, global_value.shape, sharding)])


def tolerance(dtype: np.dtype, additions: int, contraction: int) -> float:
    """How far a simulated array may lie from the unsharded NumPy reference, relative to its largest value.

    ``eps * (2 + additions + ceil(log2(contraction)))``: ``eps`` is the dtype's
    machine epsilon (bfloat16: 2**-7); a product rounded once to the dtype may
    differ by a unit in the last place either way, every partial sum added in the
    dtype (``additions``) rounds once more, and a contraction of length K summed in
    another order differs by about log2(K) roundings. Exact (0) for integers.

    Examples
    --------
    >>> tolerance(dtype_of("bfloat16"), 4, 1024)
    0.125
    >>> tolerance(np.dtype(np.int32), 4, 1024)
    0.0
    """
    if dtype.kind not in "fc" and dtype.name != "bfloat16":
        return 0.0
    eps = 2.0**-7 if dtype.name == "bfloat16" else float(np.finfo(dtype).eps)
    return eps * (2 + additions + (math.ceil(math.log2(contraction)) if contraction > 1 else 0))
