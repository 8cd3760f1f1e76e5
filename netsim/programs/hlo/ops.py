"""The plain intermediate form of an HLO module: collectives, compute and what is not modelled.

These are data only; :mod:`netsim.programs.hlo.flatten` makes them from a module, and
the program import lowers them into a program.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netsim.programs.hlo.shapes import Array
from netsim.semantics.ops import hlo_collectives

__all__ = ["COLLECTIVES", "Collective", "Compute", "HloProgram", "Step", "Unmodelled"]

COLLECTIVES = tuple(hlo_collectives())
"""The HLO collectives read (each also as an async ``*-start`` / ``*-done`` pair): those of :data:`netsim.semantics.ops.COLLECTIVES`."""


@dataclass(frozen=True)
class Collective:
    """One collective instruction, per device.

    Attributes
    ----------
    name : str
        The instruction's name in the module (of the ``*-start`` for an async pair).
    op : str
        One of :data:`COLLECTIVES`.
    operands : tuple of Array
        What each device puts in (several for a combined or tuple-form collective).
    results : tuple of Array
        What each device gets out.
    groups : list of list of int
        The device groups, as global device ids (empty for ``collective-permute``).
    pairs : list of (int, int)
        ``collective-permute`` only: (source, target) global device ids.
    dimension : int or None
        The gathered, scattered or split dimension, where the op has one.
    asynchronous : bool
        Written as a ``*-start`` / ``*-done`` pair: work between them overlaps it.
    compiler_algorithm : str or None
        The TPU compiler's ``collective_algorithm_config``, as written, when present.
    line : int
        Where it is in the module's text.
    dcn : str
        For a collective across slices that the TPU compiler wrote as megascale host
        ``send``/``recv``, its ``_xla_megascale_transfer_type`` (``ALL_REDUCE``); its
        ``groups`` are then one device each, the same device of every slice making the
        group once the slices are known (:mod:`netsim.programs.hlo.megascale`). Empty otherwise.
    """

    name: str
    op: str
    operands: tuple[Array, ...]
    results: tuple[Array, ...]
    groups: list[list[int]]
    pairs: list[tuple[int, int]] = field(default_factory=list)
    dimension: int | None = None
    asynchronous: bool = False
    compiler_algorithm: str | None = None
    line: int = 0
    dcn: str = ""

    @property
    def nbytes(self) -> int:
        """Bytes each device puts in."""
        return sum(a.nbytes for a in self.operands)

    @property
    def group_size(self) -> int:
        """Devices per group (2 for a permute: a sender and a receiver)."""
        return 2 if self.op == "collective-permute" else len(self.groups[0])


@dataclass(frozen=True)
class Compute:
    """Work on each device's compute unit (or its DMA engine): FLOPs, HBM bytes and the compiler's cycles if given.

    ``flops`` are counted as XLA's cost analysis counts them (:mod:`netsim.programs.hlo.flops`);
    ``matmuls`` are the dots and convolutions among them as ``(B, M, N, K)``, which the
    MXU times (:mod:`netsim.programs.hlo.mxu`). ``unit="dma"``: a copy (``copy-start``, a
    host transfer) on the device's DMA engine, ``nbytes`` its real size.
    """

    name: str
    opcode: str
    flops: int
    nbytes: int
    estimated_cycles: int | None = None
    line: int = 0
    matmuls: tuple[tuple[int, int, int, int], ...] = ()
    unit: str = "compute"


@dataclass(frozen=True)
class Unmodelled:
    """An instruction netsim does not time, and why (listed in every report, never dropped)."""

    name: str
    opcode: str
    line: int
    reason: str


@dataclass(frozen=True)
class Step:
    """One execution of a collective or compute instruction, after the steps it waits for.

    ``iteration`` holds the enclosing ``while`` loops' iteration numbers, outermost first.
    """

    index: int
    op: Collective | Compute
    deps: tuple[int, ...]
    iteration: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        """The instruction's name, with ``[i,j]`` for its loop iterations."""
        return self.op.name + (f"[{','.join(map(str, self.iteration))}]" if self.iteration else "")


@dataclass
class HloProgram:
    """A module flattened: its steps in scheduled order (loops unrolled) and what is not modelled.

    A module with loops of more trips than :data:`~netsim.programs.hlo.loops.FULL_TRIPS`
    keeps its ``parsed`` text and those ``long_loops`` (their steps are those of one trip
    each): :func:`~netsim.programs.hlo.run.run_hlo` plays a few trips and extends.
    """

    module: str
    devices: int
    steps: list[Step]
    unmodelled: list[Unmodelled]
    scheduled: bool
    long_loops: tuple = ()
    parsed: Any = field(default=None, repr=False)
    parameter_dtypes: tuple[str, ...] = ()
    """The element types of the ENTRY computation's parameters (the program's arguments), in order."""
    memory: Any = field(default=None, repr=False)
    """The HBM one device holds at the module's peak (:func:`netsim.programs.hlo.memory.module_memory`), when read from text."""
    tpu_layouts: bool = False
    """Whether the module's layouts are the TPU's (tiles such as ``T(8,128)``): the TPU compiler wrote it."""
    overlap_sync: bool = False
    """Whether its steps were flattened with sync collectives leaving the stream free (:func:`~netsim.programs.hlo.flatten.flatten`'s ``overlap_sync``)."""
    text: str = field(default="", repr=False)
    """The module's text, as it was read."""
    flops: int | None = None
    """Its compute FLOPs per device as XLA's cost analysis counts them, each loop by its trips (:func:`~netsim.programs.hlo.flops.module_flops`)."""

    @property
    def collectives(self) -> list[Step]:
        """The collective steps, in order."""
        return [s for s in self.steps if isinstance(s.op, Collective)]
