"""What a run returns, as frozen data: the output, the time and how they came about.

A :class:`Result` is the same for every run: a collective's (``kind="collective"``)
or a program's (``kind="program"``, with its :class:`ProgramRun`). It is data and
computes nothing from what it holds beyond a few properties of its own fields
(``algbw``, ``output_digest``); statistics, analysis and drawings are functions in
their own packages that take it as an argument (:func:`netsim.stats`,
:func:`netsim.analyse`, :func:`netsim.animate`). This module imports none of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import numpy as np

from netsim.algorithms.schedule import Schedule
from netsim.engine import Playback
from netsim.engine.critical_path import CriticalPath
from netsim.network.topology import Topology
from netsim.network.units import format_seconds
from netsim.semantics import ops as registry
from netsim.semantics.chunks import LazyOutput

__all__ = ["KINDS", "LeafRun", "ProgramRun", "Result", "busbw_factor"]

KINDS = ("collective", "program")
"""What a :class:`Result` can be the run of."""


def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests' bus bandwidth factor for a group of n (doc/PERFORMANCE.md), as the op registry gives it.

    Examples
    --------
    >>> busbw_factor("all_gather", 8), busbw_factor("psum", 4), busbw_factor("ppermute", 2)
    (0.875, 1.5, 1.0)
    """
    if n <= 1:
        return 0.0
    known = registry.lookup(collective)
    return known.busbw(n) if known is not None else (n - 1) / n


@dataclass(frozen=True)
class LeafRun:
    """The simulation of one array (one leaf of the input pytree), or of a program's one schedule.

    ``critical_path`` is the chain of link crossings that set the leaf's finish time,
    when the run walked it (a collective's run does, as it plays); None when it did
    not (a program's run), and then :func:`netsim.analysis.path_stats.path_facts` walks it when asked.
    """

    shape: tuple[int, ...]
    dtype: str
    schedule: Schedule
    playback: Playback
    critical_path: CriticalPath | None = None
    output_shape: tuple[int, ...] | None = None
    """One device's output shape (known even when the output is not materialised)."""


@dataclass(frozen=True)
class ProgramRun:
    """What a program's run adds to its :class:`Result`.

    Attributes
    ----------
    lowered : netsim.programs.lowering.Lowered
        The program, its arrays, its mesh and the schedule it ran as.
    checks : dict
        Array name -> (largest difference from the unsharded NumPy computation,
        relative to the reference's largest magnitude; the tolerance allowed).
        Empty for a timing-only run.
    repeats : BlockExtension or None
        For a program with ``repeat:`` blocks extended past the trips played: what was
        played and extended.
    compute_s, communication_s, exposed_communication_s : float or None
        Where the time went (:mod:`netsim.analysis.program_times`): the busiest
        device's compute, the time a collective was in flight, and the part of it
        the critical device's compute did not hide. None when the run did not say.
    """

    lowered: Any  # a netsim.programs.lowering.Lowered (programs sit above Result: not imported, not even to type it)
    checks: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    _: KW_ONLY
    compute_s: float | None = None
    communication_s: float | None = None
    exposed_communication_s: float | None = None
    repeats: Any = None
    """How the time was extended past the trips of ``repeat:`` blocks played (a :class:`~netsim.programs.repeats.BlockExtension`; None: every trip played)."""

    def describe(self) -> tuple[str, ...]:
        """Lines that explain the run beyond its times (what compiled it, where it ran), shown under the result's repr; none by default."""
        return ()


@dataclass(frozen=True)
class Result:
    """A simulated run: a collective (``kind="collective"``) or a program (``kind="program"``).

    Frozen: a new result with some fields changed is ``dataclasses.replace(result, ...)``.

    Attributes
    ----------
    output : numpy.ndarray or pytree
        Stacked ``[n_devices, ...]`` output, equal to what JAX returns.
    time : float
        Simulated seconds from the first send to the last arrival. With a pytree
        the leaves run one after another and the times add up.
    collective, algorithm, topology : str
        What ran where (``collective`` is ``"program"`` for a program).
    groups : tuple of tuple of int
        The device groups (axis_index_groups, or one group of all devices).
    bytes_per_device : int
        Input bytes on each device (all leaves).
    total_bytes : int
        The collective's size S in nccl-tests' sense: all_gather n x per-device
        input; psum_scatter, psum, all_to_all and ppermute one device's input.
    verified : bool
        Whether the output was checked against the independent NumPy reference.
    leaves : tuple of LeafRun
        Schedule and playback of each leaf (a program: one, its whole schedule).
    scenario : str or None
        Name of the scenario that ran, if any.
    topology_obj : Topology or None
        The topology it ran on (for statistics, estimates and drawings).
    forwarding : str
        ``"cut_through"`` or ``"store_and_forward"``.
    axes : tuple of str or None
        The mesh axes the collective ran over, when the groups came from a mesh.
    faults : tuple of str
        Down and degraded links of the topology, e.g. ``"3->4 down"``.
    stragglers : dict
        ``{device: start_s}`` of the devices that started late.
    provenance : dict
        What reproduces the run: ``netsim_version``, ``scenario`` (the scenario as
        run, every field, or None from the Python API) and ``seed``.
    verification : str
        How the output was checked, or why it was not (lazy outputs are checked
        without being materialised; ``data="none"`` runs have no output).
    engine : str
        Which engine played the run: ``"processes"`` (the model as SimPy
        processes) or ``"fast"`` (the fast player of the same events); both give
        the same numbers.
    kind : {"collective", "program"}
        What ran: one collective (:func:`netsim.all_gather` and the others,
        :func:`netsim.simulate`) or a program (:func:`netsim.run_program`, an HLO module).
    program : ProgramRun or None
        A program's part, exactly when ``kind == "program"``: its ops, schedule and
        value checks; ``output`` then maps each array an op made to its shards,
        stacked ``[n_devices, ...]``.

    Raises
    ------
    ValueError
        If ``kind`` is not one of :data:`KINDS`, or a program's result has no
        ``program`` part (or a collective's has one).
    """

    output: Any
    time: float
    collective: str
    algorithm: str
    topology: str
    n_devices: int
    groups: tuple[tuple[int, ...], ...]
    bytes_per_device: int
    total_bytes: int
    verified: bool
    leaves: tuple[LeafRun, ...] = field(default=(), repr=False)
    scenario: str | None = None
    topology_obj: Topology | None = field(default=None, repr=False)
    forwarding: str = "cut_through"
    axes: tuple[str, ...] | None = None
    faults: tuple[str, ...] = ()
    stragglers: dict[int, float] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict, repr=False)
    verification: str = ""
    engine: str = "fast"
    kind: str = "collective"
    program: ProgramRun | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}, got {self.kind!r}")
        if self.kind == "program" and self.program is None:
            raise ValueError("a program's result needs a program part (program=ProgramRun(...))")
        if self.kind == "collective" and self.program is not None:
            raise ValueError("a collective's result has no program part (program=None), or is a program's (kind='program')")
        if not isinstance(self.leaves, tuple):
            object.__setattr__(self, "leaves", tuple(self.leaves))

    def __repr__(self) -> str:
        """One line: what ran, where, how long; the output's shape, not its values.

        Examples
        --------
        >>> import numpy as np, netsim
        >>> netsim.all_gather(np.arange(16, dtype=np.int32).reshape(4, 4), algorithm="ring")
        Result(all_gather, ring, ring4, 4 devices, time=3.00107e-06 s, output int32[4, 4, 4], verified=True)
        """
        where = f"{self.scenario}: " if self.scenario else ""
        if self.program is not None:
            ops = _count(len(self.program.lowered.ops), "op")
            lines = "".join(f"\n  {line}" for line in self.program.describe())
            return f"Result({where}program of {ops}, {self.topology}, {self.n_devices} devices, {self._program_summary()}){lines}"
        shape = getattr(self.output, "shape", None)
        dtype = getattr(self.output, "dtype", None)
        output = f"{dtype}[{', '.join(map(str, shape))}]" if shape is not None else type(self.output).__name__
        return (
            f"Result({where}{self.collective}, {self.algorithm}, {self.topology}, {self.n_devices} devices, "
            f"time={self.time:.6g} s, output {output}, verified={self.verified})"
        )

    def _program_summary(self) -> str:
        """A program's times (in the unit that reads best) and its output, for :meth:`__repr__`."""
        times = [f"time={format_seconds(self.time)}"]
        if self.compute_s is not None:
            times.append(f"compute={format_seconds(self.compute_s)}")
        if self.communication_s is not None:
            exposed = f" ({format_seconds(self.exposed_communication_s)} exposed)" if self.exposed_communication_s is not None else ""
            times.append(f"communication={format_seconds(self.communication_s)}{exposed}")
        if isinstance(self.output, Mapping) and self.output:
            output = f"output {_count(len(self.output), 'array')} ({', '.join(list(self.output)[:4])}{', ...' if len(self.output) > 4 else ''})"
        else:
            output = "timing only"
        return f"{', '.join(times)}, {output}, verified={self.verified}"

    def report(self, model: dict[str, float] | None = None) -> Any:
        """The step report of an HLO module's run, as ``netsim program`` prints it (``netsim.report(result)``).

        It delegates to the run's own ``program`` (an HLO run knows its report); this
        module imports no analysis. ``model``: the transformer's shape, for MaxText's FLOP
        formula (see :mod:`netsim.analysis.step_report`).

        Examples
        --------
        >>> from netsim.programs.hlo.run import run_hlo
        >>> step = run_hlo("scenarios/programs/hlo/tpu/v5e_4x4/mlp.txt", "tpu-v5e:4x4").report()
        >>> step.critical_device, step.dma_s > 0, [line.split()[:2] for line in str(step).splitlines() if "step time" in line]
        (0, True, [['step', 'time']])
        """
        run = self.program
        if run is None or not hasattr(run, "report_of"):
            raise ValueError("a step report is an HLO module's (run_hlo, netsim.from_jax, netsim program --hlo); for another program use netsim.report(result)")
        return run.report_of(self, model)

    @property
    def compute_s(self) -> float | None:
        """Seconds of work of the busiest device's compute unit: 0 for a collective alone, None if the run did not say.

        Examples
        --------
        >>> import netsim
        >>> r = netsim.run_program("scenarios/programs/allgather_matmul.yaml")
        >>> round(r.compute_s * 1e6, 3), round(r.communication_s * 1e6, 3), r.exposed_communication_s == r.communication_s
        (2.265, 9.738, True)
        """
        return self.program.compute_s if self.program is not None else 0.0

    @property
    def communication_s(self) -> float | None:
        """Seconds during which a collective was in flight: a collective's whole time; None if a program's run did not say."""
        return self.program.communication_s if self.program is not None else self.time

    @property
    def exposed_communication_s(self) -> float | None:
        """Seconds of communication the critical device's compute did not hide: a collective's whole time; None if a program's run did not say."""
        return self.program.exposed_communication_s if self.program is not None else self.time

    @property
    def group_size(self) -> int:
        """Devices in each group (2 for ppermute, whose groups are its pairs; 0 if there are none)."""
        return len(self.groups[0]) if self.groups else 0

    @property
    def critical_path(self) -> CriticalPath:
        """The chain of link crossings that set the finish time, over all leaves in order, as the run kept it.

        Empty for a run that kept none (a program's);
        :func:`netsim.analysis.path_stats.path_facts` walks it then (``path_facts(result).critical_path.path``).
        """
        return CriticalPath.joined([leaf.critical_path for leaf in self.leaves if leaf.critical_path is not None], self.time)

    @property
    def output_digest(self) -> str:
        """SHA-256 of what defines the output: equal digests, equal outputs (:attr:`output_digest_of` says what).

        A materialised output is hashed whole (shape, dtype and bytes of every
        leaf). A lazy output is never built for it: what defines it is hashed
        instead, the collective with its layout and the input's shape, dtype and
        bytes (so a lazy and a materialised run of the same input hash differently).

        Examples
        --------
        >>> import netsim
        >>> a, b = (netsim.psum(np.arange(8)) for _ in range(2))
        >>> a.output_digest == b.output_digest != netsim.psum(np.arange(8) + 1).output_digest
        True
        """
        digest = hashlib.sha256()
        for leaf in _arrays(self.output):
            if leaf is None:  # nothing materialised
                digest.update(b"None;")
                continue
            if isinstance(leaf, LazyOutput):
                if leaf.defined_by is None:  # row by row: never the whole output at once
                    digest.update(f"{leaf.shape}{leaf.dtype.str};".encode())
                    for device in range(leaf.shape[0]):
                        digest.update(np.ascontiguousarray(leaf.row(device)).reshape(-1).view(np.uint8))
                    continue
                description, inputs = leaf.defined_by
                digest.update(f"lazy {leaf.shape}{leaf.dtype.str}; {description};".encode())
                for array in inputs:
                    _hash_array(digest, np.asarray(array))
                continue
            _hash_array(digest, np.asarray(leaf))
        return digest.hexdigest()

    @property
    def output_digest_of(self) -> str:
        """What :attr:`output_digest` hashed, in words.

        Examples
        --------
        >>> import netsim
        >>> netsim.psum(np.arange(8)).output_digest_of
        'every output byte (shape, dtype and values)'
        """
        leaves = _arrays(self.output)
        if all(leaf is None for leaf in leaves):
            return "nothing: no output (data: none)"
        lazy = [leaf for leaf in leaves if isinstance(leaf, LazyOutput) and leaf.defined_by is not None]
        if not lazy:
            return "every output byte (shape, dtype and values)"
        size = sum(leaf.nbytes for leaf in lazy)
        return f"the input's bytes with the collective and its layout, which define the lazy output ({size} bytes, not materialised)"

    @property
    def algbw(self) -> float:
        """nccl-tests algorithm bandwidth S / t, bytes per second (0 if nothing moved)."""
        return self.total_bytes / self.time if self.time > 0 else 0.0

    @property
    def busbw(self) -> float:
        """nccl-tests bus bandwidth: algbw times (n-1)/n, or 2(n-1)/n for all-reduce."""
        return self.algbw * busbw_factor(self.collective, self.group_size)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _hash_array(digest: Any, array: np.ndarray) -> None:
    """Shape, dtype and bytes of an array into ``digest``."""
    digest.update(f"{array.shape}{array.dtype.str};".encode())
    digest.update(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def _arrays(tree: Any) -> list[Any]:
    """The arrays of an output pytree, in the order the input's leaves were flattened."""
    if isinstance(tree, dict):
        return [a for key in sorted(tree) for a in _arrays(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [a for item in tree for a in _arrays(item)]
    return [tree]
