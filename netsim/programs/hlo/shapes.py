"""HLO shapes: ``bf16[256,4096]{1,0:T(8,128)(2,1)}`` read into a dtype and dims, layouts stripped.

An array shape is a dtype, its dims and an optional layout in braces (the minor-to-major
order, and on TPU the tiling and memory space after a colon). Only the dtype and the dims
matter to the time data takes to move, so the layout is read past and dropped. A dim
written ``<=N`` is dynamic with bound ``N``: its bound is taken (the largest size it can
have). A tuple shape is ``(shape, shape, ...)``, possibly nested.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

__all__ = ["DTYPE_BITS", "Array", "TupleShape", "leaves", "nbytes", "parse_shape", "read_shape"]

DTYPE_BITS: dict[str, int] = {
    "pred": 8,
    "s2": 2,
    "s4": 4,
    "s8": 8,
    "s16": 16,
    "s32": 32,
    "s64": 64,
    "u2": 2,
    "u4": 4,
    "u8": 8,
    "u16": 16,
    "u32": 32,
    "u64": 64,
    "f4e2m1fn": 4,
    "f8e3m4": 8,
    "f8e4m3": 8,
    "f8e4m3fn": 8,
    "f8e4m3fnuz": 8,
    "f8e4m3b11fnuz": 8,
    "f8e5m2": 8,
    "f8e5m2fnuz": 8,
    "f8e8m0fnu": 8,
    "bf16": 16,
    "f16": 16,
    "f32": 32,
    "f64": 64,
    "c64": 64,
    "c128": 128,
    "token": 0,
    "opaque": 0,
}
"""Bits per element of every HLO element type (``token`` and ``opaque`` carry no data)."""


@dataclass(frozen=True)
class Array:
    """An array shape: its HLO element type (``"bf16"``) and dims (bounds for dynamic dims).

    ``memory_space`` is the ``S(n)`` of its layout: 0 (none written) the default memory,
    HBM; others the compiler's faster, smaller memories (XLA's memory space assignment:
    1 the "alternate memory", on-chip). It takes no part in comparisons.
    """

    dtype: str
    dims: tuple[int, ...]
    memory_space: int = field(default=0, compare=False, repr=False)

    @property
    def elements(self) -> int:
        """The number of elements (1 for a scalar)."""
        return math.prod(self.dims)

    @property
    def nbytes(self) -> int:
        """Bytes the array holds, sub-byte types packed: ``ceil(elements * bits / 8)``."""
        return -(-self.elements * DTYPE_BITS[self.dtype] // 8)

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.dims))}]"


@dataclass(frozen=True)
class TupleShape:
    """A tuple shape: its element shapes, in order."""

    elements: tuple[Array | TupleShape, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.elements)) + ")"


Shape = Array | TupleShape

_DTYPE = re.compile(r"[a-z][a-z0-9]*")
_DIM = re.compile(r"(<=)?(\d+)$")
_SPACE = re.compile(r"S\((\d+)\)")


def leaves(shape: Shape) -> list[Array]:
    """The arrays of a shape, tuples flattened in order.

    Examples
    --------
    >>> [str(a) for a in leaves(parse_shape("(f32[2], (bf16[3,4], /*index=2*/s32[]))"))]
    ['f32[2]', 'bf16[3,4]', 's32[]']
    """
    if isinstance(shape, Array):
        return [shape]
    return [leaf for element in shape.elements for leaf in leaves(element)]


def nbytes(shape: Shape) -> int:
    """Bytes of all the arrays of a shape.

    Examples
    --------
    >>> nbytes(parse_shape("(f32[2,3]{1,0}, bf16[8])"))
    40
    """
    return sum(leaf.nbytes for leaf in leaves(shape))


def _skip_balanced(text: str, start: int, opening: str, closing: str) -> int:
    """The index just past the bracket that closes the one at ``start``."""
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return index + 1
    raise ValueError(f"unbalanced {opening!r} in {text[start : start + 60]!r}")


MAX_TUPLE_DEPTH = 64
"""The deepest tuple shape read (tuples in tuples); XLA's own are a few levels deep."""


def read_shape(text: str, start: int = 0, depth: int = 0) -> tuple[Shape, int]:
    """Read one shape from ``text`` at ``start``: (the shape, the index just past it).

    ``depth`` is how many tuples enclose it (more than :data:`MAX_TUPLE_DEPTH` is refused).

    Raises
    ------
    ValueError
        If no shape starts there, or the dtype is unknown.

    Examples
    --------
    >>> shape, end = read_shape("bf16[256,4096]{1,0:T(8,128)(2,1)} all-gather(%x)")
    >>> str(shape), end
    ('bf16[256,4096]', 33)
    """
    index = start
    while index < len(text) and text[index] == " ":
        index += 1
    if text.startswith("(", index):
        if depth >= MAX_TUPLE_DEPTH:
            raise ValueError(f"a tuple shape nested more than {MAX_TUPLE_DEPTH} deep")
        elements = []
        index += 1
        while True:
            while index < len(text) and text[index] == " ":
                index += 1
            if text.startswith("/*", index) and "*/" in text[index:]:  # /*index=5*/ before a long tuple's elements
                index = text.index("*/", index) + 2
                continue
            if text.startswith(")", index):
                return TupleShape(tuple(elements)), index + 1
            element, index = read_shape(text, index, depth + 1)
            elements.append(element)
            while index < len(text) and text[index] == " ":
                index += 1
            if text.startswith(",", index):
                index += 1
            elif not text.startswith(")", index):
                raise ValueError(f"expected ',' or ')' in the tuple shape at {text[index : index + 30]!r}")
    match = _DTYPE.match(text, index)
    if match is None:
        raise ValueError(f"expected a shape such as f32[8,128] at {text[index : index + 30]!r}")
    dtype = match.group()
    if dtype not in DTYPE_BITS:
        raise ValueError(f"unknown element type {dtype!r}; known: {', '.join(DTYPE_BITS)}")
    index = match.end()
    if not text.startswith("[", index):
        raise ValueError(f"expected '[' after the element type {dtype!r}")
    end = text.index("]", index) if "]" in text[index:] else -1
    if end < 0:
        raise ValueError(f"unclosed '[' in the shape {text[start : start + 30]!r}")
    dims = []
    for part in filter(None, (p.strip() for p in text[index + 1 : end].split(","))):
        dim = _DIM.match(part)
        if dim is None:
            raise ValueError(f"bad dimension {part!r} in the shape {text[start : end + 1]!r}")
        dims.append(int(dim.group(2)))
    index = end + 1
    space = 0
    if text.startswith("{", index):
        layout_end = _skip_balanced(text, index, "{", "}")
        found = _SPACE.search(text, index, layout_end)
        space, index = (int(found.group(1)) if found else 0), layout_end
    return Array(dtype, tuple(dims), space), index


def parse_shape(text: str) -> Shape:
    """The shape written in ``text``, which must hold nothing else.

    Examples
    --------
    >>> parse_shape("f32[8,128]{1,0}")
    Array(dtype='f32', dims=(8, 128))
    >>> parse_shape("s32[<=16]").dims
    (16,)
    """
    shape, end = read_shape(text)
    if text[end:].strip():
        raise ValueError(f"unexpected {text[end:].strip()!r} after the shape {text[:end].strip()!r}")
    return shape
