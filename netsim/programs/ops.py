"""A program's ops: a small tagged union, each member's fields declared in the op registry.

Every op has a ``name``, the arrays it reads (``inputs``), the one it writes
(``output``, or None), the ops it waits for (``after``) and its tag, ``op``: the
name of its entry in the op registry (:data:`netsim.semantics.ops.OPS`). What else
it holds depends on its kind, one class each:

:class:`CollectiveOp`
    A ``jax.lax`` collective (``op`` one of :data:`netsim.semantics.ops.COLLECTIVES`)
    over mesh ``axes`` or explicit ``groups`` of devices, with an ``algorithm`` and
    ``params``: the collective's own ``jax.lax`` arguments, exactly those its registry
    entry declares (``axis`` and ``tiled`` for ``all_gather``, ``perm`` for
    ``ppermute``, none for ``psum``), defaults filled in.
:class:`Matmul`
    ``[..., M, K] @ [K, N]`` on each device's shards; ``overlap="collective"`` runs it
    as a collective matmul, whose gather takes ``algorithm``.
:class:`Einsum`
    Two shards contracted as ``subscripts`` say.
:class:`Compute`
    Any other work: ``flops`` and ``bytes`` (timed by the roofline) or ``seconds``.

:meth:`Op.of` picks the class from the registry and refuses a field the op does not
take, so code builds any op with one call and reads it by its class (``isinstance``
or ``match``). The fields each op takes besides ``name``, ``op``, ``inputs``,
``output`` and ``after`` are its registry entry's ``program`` fields, the same a
program file gives it (:mod:`netsim.programs.files`). Whether an op fits the arrays
it reads is :meth:`netsim.programs.model.Program.arrays_after`'s check.

Examples
--------
>>> gather = Op.of("g", "all_gather", ("A",), "B", axes=("X",), axis=1, tiled=True)
>>> type(gather).__name__, gather.params
('CollectiveOp', {'axis': 1, 'tiled': True})
>>> Op.of("mm", "matmul", ("B", "W"), "C")
Matmul(name='mm', op='matmul', inputs=('B', 'W'), output='C', after=(), overlap=None, algorithm=None, efficiency=None)
>>> Op.of("s", "psum", ("A",), "B", axes=("X",), tiled=True)
Traceback (most recent call last):
...
netsim.programs.ops.ProgramError: op 's': tiled: psum takes no tiled; besides name, inputs, output and after it takes algorithm, axes, groups
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from netsim.semantics import ops as registry

if TYPE_CHECKING:
    from netsim.network.device_mesh import AxisGroups

__all__ = ["COMPUTE_CLASSES", "CollectiveOp", "Compute", "Einsum", "Matmul", "Op", "ProgramError", "matmul_subscripts"]


class ProgramError(ValueError):
    """A program that cannot run: names the op (or array) and its field.

    Examples
    --------
    >>> str(ProgramError("mm", "in", "no array 'Q'"))
    "op 'mm': in: no array 'Q'"
    """

    def __init__(self, op: str, field: str, problem: str, *, array: bool = False) -> None:
        self.op, self.field, self.problem, self.array = op, field, problem, array
        super().__init__(f"{'array' if array else 'op'} {op!r}: {field}: {problem}")


@dataclass(frozen=True)
class Op:
    """What every op of a program has; build one with :meth:`Op.of` or a member class.

    Attributes
    ----------
    name : str
        Unique within the program; reports and ``after`` use it.
    op : str
        The tag: the op's name in the registry (:data:`netsim.semantics.ops.OPS`),
        e.g. ``"all_gather"`` or ``"matmul"``.
    inputs : tuple of str
        Arrays read (a collective reads one, a matmul or einsum two; ``compute`` may
        read any, for order only).
    output : str or None
        The array written (``compute`` writes none).
    after : tuple of str
        Ops that must be done on a device before this one starts there.

    Raises
    ------
    ProgramError
        For a tag the class does not hold (``Op`` itself holds none: it is the
        union's base).
    """

    KINDS: ClassVar[tuple[str, ...]] = ()
    """The tags a class holds."""

    name: str
    op: str
    inputs: tuple[str, ...] = ()
    output: str | None = None
    _: KW_ONLY
    after: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        kinds = type(self).KINDS
        if self.op not in kinds:
            held = f"holds {', '.join(kinds)}" if kinds else "is the union's base (build an op with Op.of)"
            raise ProgramError(self.name, "op", f"{type(self).__name__} {held}, not {self.op!r}")

    @staticmethod
    def of(name: str, op: str, inputs: tuple[str, ...] = (), output: str | None = None, *, after: tuple[str, ...] = (), **fields: Any) -> Op:
        """The op of registry name ``op``, as the class of its kind, with ``fields`` checked.

        Parameters
        ----------
        name, op, inputs, output, after
            As in :class:`Op`.
        **fields
            The fields of the op's kind: for a collective ``axes``, ``groups``,
            ``algorithm`` and its own ``jax.lax`` arguments (``axis=1, tiled=True``);
            ``overlap`` and ``algorithm`` for a matmul; ``subscripts`` for an einsum;
            ``flops``, ``bytes`` and ``seconds`` for ``compute``. Those not given take
            the class's defaults.

        Returns
        -------
        Op
            A :class:`CollectiveOp`, :class:`Matmul`, :class:`Einsum` or :class:`Compute`.

        Raises
        ------
        ProgramError
            Naming the op and the field: an unknown op, or a field it does not take.

        Examples
        --------
        >>> Op.of("work", "compute", after=("g",), seconds=1e-6)
        Compute(name='work', op='compute', inputs=(), output=None, after=('g',), flops=0.0, bytes=0.0, seconds=1e-06, efficiency=None)
        >>> Op.of("shift", "ppermute", ("A",), "B", axes=("X",), perm=((0, 1), (1, 0))).params
        {'perm': ((0, 1), (1, 0))}
        >>> Op.of("c", "compute", axes=("X",))  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        netsim.programs.ops.ProgramError: op 'c': axes: compute takes no axes; besides name, inputs, output and after it takes
        bytes, efficiency, flops, seconds, unit
        >>> Op.of("b", "broadcast")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        netsim.programs.ops.ProgramError: op 'b': op: unknown op 'broadcast'; expected one of all_gather, psum_scatter, ..., compute
        """
        if op not in registry.OPS:
            raise ProgramError(name, "op", f"unknown op {op!r}; expected one of {', '.join(registry.OPS)}")
        _refuse_extra(name, op, fields)
        if op in registry.COLLECTIVES:
            own = {key: fields.pop(key) for key in ("axes", "groups", "algorithm") if key in fields}
            return CollectiveOp(name, op, inputs, output, after=after, params=fields, **own)
        return COMPUTE_CLASSES[op](name, inputs, output, after=after, **fields)

    def program_fields(self) -> dict[str, Any]:
        """Its fields besides name, op, inputs, output and after, as a program file names them.

        Those of its registry entry (:attr:`netsim.semantics.ops.Collective.program`), in
        its order; a collective's ``params`` among them.

        Examples
        --------
        >>> Op.of("g", "all_gather", ("A",), "B", axes=("X",), tiled=True).program_fields()
        {'axes': ('X',), 'groups': (), 'axis': 0, 'tiled': True, 'algorithm': None}
        """
        return {key: getattr(self, key) for key in registry.OPS[self.op].program}


def _refuse_extra(name: str, op: str, fields: Iterable[str]) -> None:
    """Refuse a field the registry does not declare for ``op`` (its ``program`` fields)."""
    takes = registry.OPS[op].program
    extra = [key for key in fields if key not in takes]
    if extra:
        besides = f"besides name, inputs, output and after it takes {', '.join(sorted(takes)) or 'nothing'}"
        raise ProgramError(name, extra[0], f"{op} takes no {extra[0]}; {besides}")


@dataclass(frozen=True)
class CollectiveOp(Op):
    """A ``jax.lax`` collective over mesh axes or explicit groups of devices.

    Attributes
    ----------
    axes : tuple of str
        The mesh axes it runs over.
    groups : tuple of tuple of int, or AxisGroups
        Instead of ``axes``: explicit groups of device indices (as an HLO module's
        replica groups; ``ppermute`` takes none, its ``perm`` then pairs devices).
        Such a collective acts on each device's array as a whole (its shape is the
        device's shape: declare the array without sharding), so the program runs
        timing-only. Groups given as a :class:`~netsim.network.device_mesh.AxisGroups`
        (the devices along axes of some mesh of the same devices, e.g. the slice's
        own axes) run as a collective over those axes would: the default multi-axis
        algorithm, on rings or lines as the axes have them.
    algorithm : str or None
        The algorithm (default: the one the collective takes over mesh axes).
    params : dict of str to object
        Its own ``jax.lax`` arguments, those of its registry entry
        (:attr:`netsim.semantics.ops.Collective.arguments`), each one present:
        ``axis``, ``tiled``, ``scatter_dimension``, ``split_axis``, ``concat_axis``
        as in ``jax.lax`` (``tiled`` defaults to false, as there); ``perm``: pairs of
        positions along ``axes`` (or of devices, without axes), none by default.

    Raises
    ------
    ProgramError
        For an op that is not a collective, or a parameter (or ``groups``,
        ``algorithm``) the collective does not take.

    Examples
    --------
    >>> op = CollectiveOp("rs", "psum_scatter", ("P",), "R", axes=("Y",), params={"tiled": True})
    >>> op.params, op.collective.reduces, op.over_devices
    ({'scatter_dimension': 0, 'tiled': True}, True, False)
    >>> CollectiveOp("g", "all_gather", ("A",), "B", axes=("X",), params={"perm": ((0, 1),)})
    Traceback (most recent call last):
    ...
    netsim.programs.ops.ProgramError: op 'g': perm: all_gather takes no parameter 'perm'; its parameters are axis, tiled
    """

    KINDS: ClassVar[tuple[str, ...]] = tuple(registry.COLLECTIVES)

    _: KW_ONLY
    axes: tuple[str, ...] = ()
    groups: tuple[tuple[int, ...], ...] | AxisGroups = ()
    algorithm: str | None = None
    params: dict[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        collective = self.collective
        _refuse_extra(self.name, self.op, [key for key in ("groups", "algorithm") if getattr(self, key)])
        extra = [key for key in self.params if key not in collective.arguments]
        if extra:
            raise ProgramError(
                self.name, extra[0], f"{self.op} takes no parameter {extra[0]!r}; its parameters are {', '.join(collective.arguments) or 'none'}"
            )
        defaults = {key: collective.program.get(key) if value is registry.REQUIRED else value for key, value in collective.arguments.items()}
        object.__setattr__(self, "params", {**defaults, **self.params})

    def program_fields(self) -> dict[str, Any]:
        """Its fields as a program file names them, ``params`` among them (:meth:`Op.program_fields`)."""
        return {key: self.params[key] if key in self.params else getattr(self, key) for key in self.collective.program}

    @property
    def collective(self) -> registry.Collective:
        """Its registry entry (:data:`netsim.semantics.ops.COLLECTIVES`)."""
        return registry.COLLECTIVES[self.op]

    @property
    def over_devices(self) -> bool:
        """Whether it runs over explicit devices (``groups``, or a ``ppermute``'s pairs of devices), not mesh axes."""
        return bool(self.groups) or (not self.collective.grouped and not self.axes)


@dataclass(frozen=True)
class Matmul(Op):
    """``[..., M, K] @ [K, N]`` on each device's shards.

    Dimensions contracted over sharded axes leave a partial sum over those axes,
    which a later ``psum`` or ``psum_scatter`` reduces.

    Attributes
    ----------
    overlap : str or None
        ``"collective"``: a matmul whose first operand is sharded on the contracting
        dimension run as a collective matmul: the blocks travel round the axes while
        each device multiplies the block it holds.
    algorithm : str or None
        A collective matmul's gather algorithm (default: the one ``all_gather`` takes).
    efficiency : float or None
        The fraction of the chip's peak FLOP/s it reaches; None: the chip's (1 under
        ``calibration: nominal``, the generation's measured value under ``calibrated``).

    Examples
    --------
    >>> Matmul("mm", ("A", "W"), "C", overlap="collective").subscripts_for(3)
    'abc,cd->abd'
    """

    KINDS: ClassVar[tuple[str, ...]] = ("matmul",)

    op: str = field(default="matmul", init=False)
    _: KW_ONLY
    overlap: str | None = None
    algorithm: str | None = None
    efficiency: float | None = None

    def subscripts_for(self, rank: int) -> str:
        """The einsum it computes, for a first operand of ``rank`` dimensions (:func:`matmul_subscripts`)."""
        return matmul_subscripts(rank)


@dataclass(frozen=True)
class Einsum(Op):
    """Two shards contracted as ``subscripts`` say; contracted sharded dimensions leave a partial sum.

    Attributes
    ----------
    subscripts : str or None
        E.g. ``"bd,df->bf"`` (a program without them does not check).
    efficiency : float or None
        As a matmul's.

    Examples
    --------
    >>> Einsum("e", ("A", "W"), "P", subscripts="ik,kj->ij").subscripts_for(2)
    'ik,kj->ij'
    """

    KINDS: ClassVar[tuple[str, ...]] = ("einsum",)

    op: str = field(default="einsum", init=False)
    _: KW_ONLY
    subscripts: str | None = None
    efficiency: float | None = None

    def subscripts_for(self, rank: int) -> str:
        """Its ``subscripts`` (``rank`` is the first operand's, which they give already)."""
        return self.subscripts or ""


@dataclass(frozen=True)
class Compute(Op):
    """Any other work on each device's compute unit (or DMA engine): it reads its inputs for order only and writes nothing.

    Attributes
    ----------
    flops, bytes : float
        The work per device, timed by the roofline: ``max(flops / peak_flops,
        bytes / hbm_bandwidth)``.
    seconds : float or None
        Instead: how long it takes.
    efficiency : float or None
        The fraction of the peak FLOP/s it reaches (as for a matmul).
    unit : {"compute", "dma"}
        ``dma``: a copy on the device's DMA engine, beside its compute unit (one copy at
        a time, its bytes at the HBM bandwidth).

    Examples
    --------
    >>> Compute("other", ("Q",), flops=1e9, bytes=1e6).seconds is None
    True
    """

    KINDS: ClassVar[tuple[str, ...]] = ("compute",)

    op: str = field(default="compute", init=False)
    _: KW_ONLY
    flops: float = 0.0
    bytes: float = 0.0
    seconds: float | None = None
    efficiency: float | None = None
    unit: str = field(default="compute", repr=False)

    def __post_init__(self) -> None:
        if self.unit not in ("compute", "dma"):
            raise ProgramError(self.name, "unit", f"must be 'compute' or 'dma', got {self.unit!r}")


COMPUTE_CLASSES: dict[str, type[Matmul] | type[Einsum] | type[Compute]] = {cls.KINDS[0]: cls for cls in (Matmul, Einsum, Compute)}
"""Each compute op of the registry (:data:`netsim.semantics.ops.COMPUTE_OPS`) and its class."""


def matmul_subscripts(rank: int) -> str:
    """The einsum of a matmul ``[..., M, K] @ [K, N]`` with a first operand of ``rank`` dimensions.

    Examples
    --------
    >>> matmul_subscripts(3)
    'abc,cd->abd'
    """
    letters = "abcdefghijklmnopqrstuvwxy"
    lead, k, n = letters[: rank - 1], letters[rank - 1], letters[rank]
    return f"{lead}{k},{k}{n}->{lead}{n}"
