"""Programs as data: operations over arrays sharded on a mesh, and what each op makes.

A :class:`Program` is a mesh (named axes and their sizes), the arrays it starts
with (:class:`Sharded`: a global shape, a dtype and, per dimension, the mesh axes
it is split over, as a ``PartitionSpec``) and a list of :class:`Op` s. Each op
reads arrays by name and may write one new array; every device runs every op on
its own shards, as a ``shard_map``'d JAX function would. An op is a small tagged
union (:mod:`netsim.programs.ops`; build any with :meth:`Op.of`), its tag ``op``
the name of its entry in the op registry (:mod:`netsim.semantics.ops`):

:class:`~netsim.programs.ops.CollectiveOp`: ``all_gather``, ``psum_scatter``, ``psum``, ``all_to_all``, ``ppermute``
    ``jax.lax`` collectives over the named mesh ``axes`` (or explicit ``groups``),
    with the collective's own arguments as ``params`` (``axis``, ``tiled``,
    ``scatter_dimension``, ``split_axis``, ``concat_axis``, ``perm`` over positions
    along the axes: those its registry entry declares).
:class:`~netsim.programs.ops.Matmul`, :class:`~netsim.programs.ops.Einsum`: ``matmul``, ``einsum``
    Each device multiplies its shards (``einsum`` with a ``subscripts`` string);
    dimensions contracted over sharded axes leave a partial sum over those axes,
    which a later ``psum`` or ``psum_scatter`` reduces. ``overlap="collective"``
    on a matmul whose first operand is sharded on the contracting dimension runs
    it as a collective matmul: the blocks travel round the axes while each device
    multiplies the block it holds.
:class:`~netsim.programs.ops.Compute`: ``compute``
    Any other work: ``flops`` and ``bytes`` (timed by the roofline) or ``seconds``.

Order comes from data: an op starts on a device once its inputs are ready there,
and once the ops named in its ``after`` are done there. Programs are built from
Python as well as from files (:func:`netsim.programs.files.load_program`);
:meth:`Program.arrays_after` checks a program and says what every array is.

Examples
--------
>>> program = Program(
...     name="gather_then_multiply",
...     mesh={"X": 4},
...     arrays={"A": Sharded((8, 16), "float32", ((), ("X",))), "B": Sharded((16, 4), "float32")},
...     ops=(
...         Op.of("gather", "all_gather", ("A",), "A_full", axes=("X",), axis=1, tiled=True),
...         Op.of("mm", "matmul", ("A_full", "B"), "C"),
...     ),
... )
>>> program.arrays_after()["C"]
Sharded(shape=(8, 4), dtype='float32', sharding=((), ()), partial=())
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from netsim.programs.ops import CollectiveOp, Compute, Einsum, Matmul, Op, ProgramError, matmul_subscripts
from netsim.scenario.suggestions import did_you_mean
from netsim.semantics import ops as registry
from netsim.semantics.sharding import ShardingError

__all__ = [
    "COLLECTIVE_OPS",
    "COMPUTE_OPS",
    "OPS",
    "CollectiveOp",
    "Compute",
    "Einsum",
    "Matmul",
    "Op",
    "Program",
    "ProgramError",
    "Sharded",
    "einsum_subscripts",
    "matmul_subscripts",
]

COLLECTIVE_OPS = tuple(registry.COLLECTIVES)
"""Ops that move data between devices (``jax.lax`` collectives over mesh axes; :data:`netsim.semantics.ops.COLLECTIVES`)."""
COMPUTE_OPS = tuple(registry.COMPUTE_OPS)
"""Ops that run on each device's compute unit (:data:`netsim.semantics.ops.COMPUTE_OPS`)."""
OPS = COLLECTIVE_OPS + COMPUTE_OPS


@dataclass(frozen=True)
class Sharded:
    """An array of a program: global ``shape`` and ``dtype``, split over mesh axes.

    Attributes
    ----------
    shape : tuple of int
        The global shape.
    dtype : str
        A NumPy dtype name, or ``"bfloat16"``.
    sharding : tuple of tuple of str
        Per dimension, the mesh axes it is split over, major to minor (empty:
        replicated), like ``jax.sharding.PartitionSpec``; as there, dimensions
        past its end are replicated. Default: replicated.
    partial : tuple of str
        Mesh axes over which the shards still have to be summed (after a matmul
        that contracted a sharded dimension).
    """

    shape: tuple[int, ...]
    dtype: str = "float32"
    sharding: tuple[tuple[str, ...], ...] = ()
    partial: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.sharding) < len(self.shape):  # as PartitionSpec: dimensions it does not name are replicated
            object.__setattr__(self, "sharding", (*self.sharding, *((),) * (len(self.shape) - len(self.sharding))))

    def local_shape(self, mesh: Mapping[str, int]) -> tuple[int, ...]:
        """The shape of one device's shard.

        Examples
        --------
        >>> Sharded((8, 16), sharding=((), ("X", "Y"))).local_shape({"X": 2, "Y": 4})
        (8, 2)
        """
        return tuple(size // math.prod(mesh[a] for a in axes) for size, axes in zip(self.shape, self.sharding, strict=True))

    @property
    def axes_used(self) -> tuple[str, ...]:
        """Every mesh axis some dimension is split over."""
        return tuple(a for axes in self.sharding for a in axes)


@dataclass(frozen=True)
class Program:
    """A program: a mesh, the arrays it starts with and its ops, in order.

    Attributes
    ----------
    name : str
    mesh : dict of str to int
        Mesh axis name -> size; the sizes multiply to the number of devices.
    arrays : dict of str to Sharded
        The arrays the program starts with.
    ops : tuple of Op
        Each a :class:`~netsim.programs.ops.CollectiveOp`, :class:`~netsim.programs.ops.Matmul`,
        :class:`~netsim.programs.ops.Einsum` or :class:`~netsim.programs.ops.Compute`.
    """

    name: str
    mesh: dict[str, int]
    arrays: dict[str, Sharded]
    ops: tuple[Op, ...]
    description: str | None = field(default=None, compare=False)

    def arrays_after(self) -> dict[str, Sharded]:
        """Every array of the program, the inputs and what each op writes, checked.

        Raises
        ------
        ProgramError
            Naming the op and the field: an unknown array, an array written
            twice, a shape that does not shard, dimensions that do not match.
        """
        for name, array in self.arrays.items():
            _check_array(name, array, self.mesh)
        arrays = dict(self.arrays)
        seen: set[str] = set()
        for op in self.ops:
            if op.name in seen:
                raise ProgramError(op.name, "name", "two ops have this name; give each op its own")
            for name in op.after:
                if name not in seen:
                    raise ProgramError(op.name, "after", f"no earlier op {name!r}; name ops that come before this one")
            for name in op.inputs:
                if name not in arrays:
                    raise ProgramError(op.name, "in", f"no array {name!r}; known so far: {', '.join(arrays) or 'none'}")
            for a in op.axes if isinstance(op, CollectiveOp) else ():
                if a not in self.mesh:
                    raise ProgramError(op.name, "axes", f"no mesh axis {a!r}{did_you_mean(a, list(self.mesh))}; the mesh has {', '.join(self.mesh)}")
            seen.add(op.name)
            made = _infer(op, [arrays[n] for n in op.inputs], self.mesh)
            if (made is None) != (op.output is None):
                raise ProgramError(op.name, "out", "give the array this op writes" if made is not None else "this op writes no array")
            if made is not None and op.output is not None:
                if op.output in arrays:
                    raise ProgramError(op.name, "out", f"array {op.output!r} exists already; give the result a new name")
                arrays[op.output] = made
        return arrays


def _check_array(name: str, array: Sharded, mesh: Mapping[str, int]) -> None:
    if len(array.sharding) != len(array.shape):
        raise ProgramError(name, "sharding", f"gives {len(array.sharding)} entries for {len(array.shape)} dimensions", array=True)
    used = array.axes_used + array.partial
    for a in used:
        if a not in mesh:
            raise ProgramError(name, "sharding", f"no mesh axis {a!r}{did_you_mean(a, list(mesh))}; the mesh has {', '.join(mesh)}", array=True)
        if used.count(a) > 1:
            raise ProgramError(name, "sharding", f"mesh axis {a!r} is used twice", array=True)
    for dim, (size, axes) in enumerate(zip(array.shape, array.sharding, strict=True)):
        parts = math.prod(mesh[a] for a in axes)
        if size % parts:
            raise ProgramError(name, "shape", f"dimension {dim} of {size} does not split into {parts} shards over {'x'.join(axes)}", array=True)


def _infer(op: Op, inputs: list[Sharded], mesh: Mapping[str, int]) -> Sharded | None:
    """What ``op`` makes of its inputs (None for ``compute``), or a ProgramError."""
    if isinstance(op, Compute):
        if op.seconds is None and op.flops <= 0 and op.bytes <= 0:
            raise ProgramError(op.name, "flops", "give flops and/or bytes, or seconds")
        return None
    if isinstance(op, CollectiveOp):
        if len(inputs) != 1:
            raise ProgramError(op.name, "in", f"a collective reads one array, got {len(inputs)}")
        if bool(op.axes) == bool(op.groups or (not op.collective.grouped and not op.axes and op.params["perm"])):
            raise ProgramError(op.name, "axes", "name the mesh axes the collective runs over, or give groups (not both)")
        if not op.axes:
            return _grouped(op, inputs[0], mesh)
        return _collective(op, inputs[0], mesh)
    if len(inputs) != 2:  # a matmul or an einsum
        raise ProgramError(op.name, "in", f"{op.op} multiplies two arrays, got {len(inputs)}")
    if isinstance(op, Einsum) and not op.subscripts:
        raise ProgramError(op.name, "subscripts", "einsum needs subscripts, e.g. 'bd,df->bf'")
    if isinstance(op, Matmul) and op.overlap not in (None, "collective"):
        raise ProgramError(op.name, "overlap", f"unknown overlap {op.overlap!r}; expected collective")
    a, b = inputs
    if isinstance(op, Matmul) and (len(a.shape) < 2 or len(b.shape) != 2):
        raise ProgramError(op.name, "in", f"matmul takes [..., M, K] @ [K, N]; got shapes {list(a.shape)} and {list(b.shape)}")
    return _contract(op, op.subscripts_for(len(a.shape)), a, b, mesh)


def einsum_subscripts(subscripts: str) -> tuple[str, str, str]:
    """``"ab,bc->ac"`` as its three terms (ValueError if it is not two operands and an output).

    Examples
    --------
    >>> einsum_subscripts("bd, df -> bf")
    ('bd', 'df', 'bf')
    >>> einsum_subscripts("ij,ij->")
    ('ij', 'ij', '')
    """
    text = subscripts.replace(" ", "")
    left, arrow, out = text.partition("->")
    terms = left.split(",")
    if not arrow or len(terms) != 2 or not all(t.isalpha() for t in terms) or (out and not out.isalpha()):
        raise ValueError(f"subscripts {subscripts!r} must read like 'bd,df->bf': two operands, an arrow, the output, letters only")
    for term in (*terms, out):
        if len(set(term)) != len(term):
            raise ValueError(f"subscripts {subscripts!r} repeat a letter within one term")
    if set(out) - set(terms[0]) - set(terms[1]):
        raise ValueError(f"subscripts {subscripts!r}: the output has a letter no operand has")
    return terms[0], terms[1], out


def _contract(op: Matmul | Einsum, subscripts: str, a: Sharded, b: Sharded, mesh: Mapping[str, int]) -> Sharded:
    try:
        ta, tb, out = einsum_subscripts(subscripts)
    except ValueError as error:
        raise ProgramError(op.name, "subscripts", str(error)) from None
    for term, array, which in ((ta, a, "first"), (tb, b, "second")):
        if len(term) != len(array.shape):
            raise ProgramError(op.name, "in", f"the {which} operand has {len(array.shape)} dimensions but subscripts give it {len(term)} ({term})")
    if isinstance(op, Matmul) and op.overlap == "collective":
        a = _as_gathered(op, ta, tb, a, b)
    size: dict[str, int] = {}
    split: dict[str, tuple[str, ...]] = {}
    for term, array in ((ta, a), (tb, b)):
        for letter, n, axes in zip(term, array.shape, array.sharding, strict=True):
            if letter in size and size[letter] != n:
                raise ProgramError(op.name, "in", f"{_named(op, letter, ta)} is {size[letter]} in one operand and {n} in the other: the shapes do not match")
            if letter in split and split[letter] != axes:
                raise ProgramError(
                    op.name,
                    "in",
                    f"{_named(op, letter, ta)} is split over {_axes_text(split[letter])} in one operand and {_axes_text(axes)} in the other; gather one first",
                )
            size[letter], split[letter] = n, axes
    contracted = [letter for letter in dict.fromkeys(ta + tb) if letter not in out]
    summed = tuple(ax for letter in contracted for ax in split[letter])
    if set(a.partial) & set(b.partial):
        raise ProgramError(op.name, "in", f"both operands are partial sums over {_axes_text(tuple(set(a.partial) & set(b.partial)))}: psum one first")
    out_sharding = tuple(split[letter] for letter in out)
    used = [ax for axes in out_sharding for ax in axes]
    if len(set(used)) != len(used):
        raise ProgramError(op.name, "in", "two output dimensions are split over the same mesh axis; gather one operand first")
    partial = tuple(dict.fromkeys((*a.partial, *b.partial, *summed)))
    if set(partial) & set(used):
        raise ProgramError(op.name, "in", "an output dimension is split over an axis the result is also a partial sum over")
    unused = [ax for ax in (*a.axes_used, *b.axes_used) if ax not in used and ax not in summed]
    if unused:
        raise ProgramError(op.name, "in", f"an operand is split over {unused[0]!r} along a dimension the other does not share; gather it first")
    dtype = _result_dtype(a.dtype, b.dtype)
    return Sharded(tuple(size[letter] for letter in out), dtype, out_sharding, partial)


def _named(op: Matmul | Einsum, letter: str, first: str) -> str:
    """How an error names a dimension: the subscript letter of an einsum, its role in a matmul."""
    if not isinstance(op, Matmul):
        return f"dimension {letter!r}"
    return "the contracting dimension" if letter == first[-1] else f"dimension {first.index(letter) if letter in first else 'N'}"


def _as_gathered(op: Matmul, ta: str, tb: str, a: Sharded, b: Sharded) -> Sharded:
    """A collective matmul's first operand as the gathered array it stands for (checked)."""
    k = ta[-1]
    axes = a.sharding[-1]
    if not axes:
        raise ProgramError(op.name, "overlap", "a collective matmul is a matmul whose first operand is split over mesh axes along the contracting dimension")
    if b.sharding[tb.index(k)]:
        raise ProgramError(op.name, "overlap", "a collective matmul needs the second operand whole along the contracting dimension")
    if set(axes) & set(a.axes_used[: -len(axes)] + b.axes_used):
        raise ProgramError(op.name, "overlap", f"the operands are also split over {_axes_text(axes)} elsewhere")
    return replace(a, sharding=(*a.sharding[:-1], ()))


def _result_dtype(a: str, b: str) -> str:
    """The dtype of a product: the inputs' when they agree, else the wider float."""
    if a == b:
        return a
    order = ["bfloat16", "float16", "float32", "float64"]
    return max((a, b), key=lambda d: order.index(d) if d in order else len(order))


def _axes_text(axes: tuple[str, ...]) -> str:
    return "x".join(axes) if axes else "no axis"


def _collective(op: CollectiveOp, x: Sharded, mesh: Mapping[str, int]) -> Sharded:
    """A collective's result: the same global value, split differently, or summed over the axes (its registered rule)."""
    collective = op.collective
    if collective.reduces:
        spread = [a for a in op.axes if a in x.axes_used]
        if spread:
            raise ProgramError(op.name, "axes", f"the input is split over {spread[0]!r}: summing over it would add different blocks; gather it first")
    elif x.partial and set(op.axes) & set(x.partial):
        raise ProgramError(op.name, "axes", f"the input is a partial sum over {_axes_text(x.partial)}: psum or psum_scatter it first")
    try:
        return collective.sharded(x, mesh, op.axes, **op.params)
    except ShardingError as error:
        raise ProgramError(op.name, error.field, error.problem) from None


def _grouped(op: CollectiveOp, x: Sharded, mesh: Mapping[str, int]) -> Sharded:
    """A collective over explicit device groups: each device's array is taken whole (timing only)."""
    collective = op.collective
    n_devices = math.prod(mesh.values())
    if x.axes_used or x.partial:
        raise ProgramError(op.name, "groups", "a collective over explicit groups takes an array without sharding (its shape is each device's)")
    members = [d for g in op.groups for d in g] if collective.grouped else [d for pair in op.params["perm"] for d in pair]
    if any(not 0 <= d < n_devices for d in members):
        raise ProgramError(op.name, "groups" if collective.grouped else "perm", f"names a device outside 0..{n_devices - 1}")
    if not collective.grouped:
        return x
    if len(set(members)) != len(members) or len({len(g) for g in op.groups}) != 1:
        raise ProgramError(op.name, "groups", "groups must be of one size, each device in at most one")
    try:
        shape = collective.grouped_shape(x.shape, len(op.groups[0]), **op.params)
    except ShardingError as error:
        raise ProgramError(op.name, error.field, error.problem) from None
    return Sharded(tuple(shape), x.dtype)
