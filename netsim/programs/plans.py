"""Which plan a program's collective runs as, and how many transfers it makes, found before anything is lowered.

:func:`collective_plan` is what the lowering (:mod:`netsim.programs.lowering`) plans a
collective op with: its layout (pattern and groups, as JAX lays them out), its algorithm
(the op's, else the default for the pattern) and the group shape of mesh axes.
:func:`planned_transfers` counts the transfers of that plan without making it: every
plan whose registry entry says so (``each_piece_once``: the streaming plans of
``gather``, ``reduce_scatter`` and ``all_reduce``, and ``direct`` ``all_to_all``) moves
each of a member's pieces to each other member of its group in one transfer (``n (n - 1) pieces`` a group, twice for an all-reduce: its two
phases); an algorithm that says its own count (``multiaxis_bundled``) is taken at its
word; any other is planned for one group and counted.

The default plan of an all_gather, psum_scatter or psum over several mesh axes is the
streaming ``multiaxis``, unless that would make more than :data:`AUTO_BUNDLED_ABOVE`
transfers (a 4096-chip gather makes 100 M): then it is ``multiaxis_bundled``, one message
per ring step as a TPU sends it (1.1 M transfers on 4096 chips; a reduction's partial
sums, one bundle a step). The same bound holds for the program as a whole
(:func:`bundled_defaults`): where its collectives, each op of a ``repeat:`` block counted
once, would stream more than :data:`AUTO_BUNDLED_ABOVE` transfers together, the biggest
of them whose plan a bundle shrinks play bundled until the rest fit (the Llama-2-70B-shaped
step: 68.1 M transfers for a layer each way streamed, 16.5 M with 14 of its 16 collectives
over 256 chips bundled). On one axis the two plans are the same
and take the same time to the bit; over several, the bundled one waits for each
stage's whole super-block and takes 1 to 47 % longer where measured (tests/test_program_plans.py,
docs/programs_limits.md). The before-run estimate
(:func:`netsim.programs.run.planned_estimate`) adds these up, so a program whose plan
cannot fit is refused before it is built.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import numpy as np

from netsim.algorithms.direct import permutation
from netsim.algorithms.registry import ALGORITHMS, AxesAlgorithm, check_algorithm, default_algorithm
from netsim.algorithms.schedule import Schedule, build_schedule
from netsim.checks.memory import mean_hops
from netsim.network.calibration import in_force
from netsim.network.device_mesh import AxisGroups, Mesh
from netsim.programs.builder import ScheduleBuilder
from netsim.programs.model import CollectiveOp, Matmul, Program, ProgramError, Sharded
from netsim.programs.repeats import written_name
from netsim.semantics.patterns import PATTERNS

__all__ = ["AUTO_BUNDLED_ABOVE", "CollectivePlan", "bundled_defaults", "collective_plan", "plan_schedule", "planned_counts", "planned_transfers"]

AUTO_BUNDLED_ABOVE = 2**24
"""A collective over mesh axes with no algorithm named whose streaming ``multiaxis`` plan would make more than
this many transfers (about 2.6 GiB of memory at 168 B each, for that op alone) plays ``multiaxis_bundled``; so do
the biggest of a program's collectives that would stream more than this many together (:func:`bundled_defaults`)."""

STREAMING = frozenset(name for name, entry in ALGORITHMS.items() if entry.each_piece_once)
"""Algorithms that say, on their registry entry, which plans send each piece to each member once (``each_piece_once``)."""


class CollectivePlan:
    """A collective op's layout (``pattern``, ``groups``), ``algorithm`` and the keyword arguments of its plan (``shaped``)."""

    __slots__ = ("algorithm", "layout", "shaped")

    def __init__(self, layout: Any, algorithm: str, shaped: dict[str, Any]) -> None:
        self.layout, self.algorithm, self.shaped = layout, algorithm, shaped

    @property
    def key(self) -> tuple:
        """What identifies the plan (the lowering plans each once)."""
        return (self.layout.pattern, tuple(map(tuple, self.layout.groups)), self.algorithm, tuple(sorted(self.shaped.items())))


def _layout(op: CollectiveOp, x: Sharded, mesh: Mesh, groups: Any) -> Any:
    proxy = np.broadcast_to(np.zeros((), np.uint8), (mesh.topology.n_devices, *x.local_shape(mesh.shape)))
    collective = op.collective
    arguments = dict(op.params)
    if "perm" in arguments:  # pairs of positions along the axes, or of devices; a pair that stays put moves nothing
        arguments["perm"] = [(s, t) for s, t in arguments["perm"] if s != t]
    return collective.check(proxy, groups if op.axes or collective.grouped else None, **arguments)


_PLANNED: OrderedDict[Any, tuple[Mesh, CollectivePlan]] = OrderedDict()
"""Recent plans by what makes them (ops alike, in a run and in the runs a ``repeat:`` extension plays, plan once)."""
_PLANNED_KEPT = 128


def collective_plan(op: CollectiveOp, x: Sharded, mesh: Mesh, bundled: frozenset[str] = frozenset()) -> CollectivePlan:
    """The plan a collective op of a program runs as: :func:`plan_of`, kept for the ops alike that follow."""
    key = (id(mesh), op.op, op.axes, repr(op.groups), repr(sorted(op.params.items())), op.algorithm, x, written_name(op.name) in bundled)
    found = _PLANNED.get(key)
    if found is not None and found[0] is mesh:
        _PLANNED.move_to_end(key)
        return found[1]
    plan = plan_of(op, x, mesh, bundled)
    _PLANNED[key] = (mesh, plan)
    while len(_PLANNED) > _PLANNED_KEPT:
        _PLANNED.popitem(last=False)
    return plan


def plan_of(op: CollectiveOp, x: Sharded, mesh: Mesh, bundled: frozenset[str] = frozenset()) -> CollectivePlan:
    """The plan a collective op of a program runs as (``x`` its input; ``bundled`` the names, as written,
    of the program's collectives whose default plan is bundled: :func:`bundled_defaults`).

    Raises
    ------
    ProgramError
        If its algorithm cannot run the pattern on its groups.

    Examples
    --------
    >>> from netsim.network.presets import tpu_slice
    >>> from netsim.programs.model import Op
    >>> op = Op.of("g", "all_gather", ("A",), "B", axes=("X", "Y"), axis=0, tiled=True)
    >>> plan = collective_plan(op, Sharded((64, 8), "bfloat16", (("X", "Y"), ())), Mesh({"X": 4, "Y": 4}, tpu_slice("tpu-v5e:4x4")))
    >>> plan.layout.pattern, plan.algorithm, plan.shaped["group_shape"]
    ('gather', 'multiaxis', (4, 4))
    """
    groups: Any = op.groups if isinstance(op.groups, AxisGroups) else mesh.groups(list(op.axes)) if op.axes else [list(g) for g in op.groups]
    over_axes = isinstance(groups, AxisGroups)
    layout = _layout(op, x, mesh, groups)
    if PATTERNS[layout.pattern].pairs:  # pairs, each sent straight along its route
        return CollectivePlan(layout, "direct", {})
    try:
        algorithm = check_algorithm(layout.pattern, len(layout.groups[0]), op.algorithm or default_algorithm(layout.pattern, over_mesh_axes=over_axes))
    except ValueError as error:
        raise ProgramError(op.name, "algorithm", str(error)) from None
    shaped = {"group_shape": groups.shape, "wraparound": groups.wraparound} if over_axes else {}
    plan = CollectivePlan(layout, algorithm, shaped)
    if op.algorithm is None and algorithm == "multiaxis" and (written_name(op.name) in bundled or planned_transfers(plan) > AUTO_BUNDLED_ABOVE):
        plan = CollectivePlan(layout, check_algorithm(layout.pattern, len(layout.groups[0]), "multiaxis_bundled"), shaped)
    return plan


def plan_schedule(plan: CollectivePlan) -> Schedule:
    """The schedule of a plan over all its groups, its transfers as columns (pairs sent straight along their routes).

    Examples
    --------
    >>> from netsim.network.presets import tpu_slice
    >>> from netsim.programs.model import Op
    >>> op = Op.of("g", "all_gather", ("A",), "B", axes=("X",), axis=0, tiled=True)
    >>> plan = collective_plan(op, Sharded((8, 8), "float32", (("X",), ())), Mesh({"X": 4}, tpu_slice("tpu-v5e:2x2")))
    >>> schedule = plan_schedule(plan)
    >>> len(schedule.transfers), schedule.pieces  # each of 4 members' pieces to the 3 others
    (48, 4)
    """
    layout = plan.layout
    if PATTERNS[layout.pattern].pairs:
        return ScheduleBuilder.as_columns(permutation(layout.groups))
    return build_schedule(layout.pattern, layout.groups, plan.algorithm, **plan.shaped)


def bundled_defaults(program: Program, mesh: Mesh) -> frozenset[str]:
    """The collectives (names as written) whose default plan is ``multiaxis_bundled`` because of the program's size.

    Each collective is counted once, whatever the trips of its ``repeat:`` block, so every
    trip (and every run of a loop's extension) plays the same plan. When the program's
    collectives would make more than :data:`AUTO_BUNDLED_ABOVE` transfers together, those
    with no algorithm named whose bundled plan makes fewer transfers than their streaming one
    (over several axes) play bundled, the most transfers saved first (in program order among
    equals), until the rest fit.

    Examples
    --------
    Three gathers over 1024 chips, each 1024 x 1023 x 6 = 6.3 M transfers streamed (18.9 M
    together): the first plays bundled (0.2 M), and the other two stream (12.6 M).

    >>> from netsim.programs.files import program_from_data
    >>> xyz = ["X", "Y", "Z"]
    >>> p = program_from_data({"name": "p", "topology": "tpu-v4:8x8x16", "mesh": {"X": 8, "Y": 8, "Z": 16}, "data": "none",
    ...     "arrays": {f"W{i}": {"shape": [4096, 4096], "dtype": "bfloat16", "sharding": [xyz, None]} for i in (1, 2, 3)},
    ...     "ops": [{"name": f"g{i}", "op": "all_gather", "in": f"W{i}", "axes": xyz, "axis": 0, "tiled": True, "out": f"F{i}"} for i in (1, 2, 3)]})
    >>> sorted(bundled_defaults(p.program, p.mesh_obj)), planned_counts(p.program, p.mesh_obj)["transfers"]
    (['g1'], 12748800)
    """
    arrays = program.arrays_after()
    counted: dict[tuple, int] = {}
    seen: set[str] = set()
    total, savings = 0, []
    for index, op in enumerate(program.ops):
        name = written_name(op.name)
        if not isinstance(op, CollectiveOp) or name in seen:
            continue
        seen.add(name)
        plan = collective_plan(op, arrays[op.inputs[0]], mesh)
        made = planned_transfers(plan, counted)
        total += made
        if op.algorithm is None and plan.algorithm == "multiaxis":
            saved = made - planned_transfers(CollectivePlan(plan.layout, "multiaxis_bundled", plan.shaped), counted)
            if saved > 0:
                savings.append((-saved, index, name))
    chosen = []
    for saved, _, name in sorted(savings):
        if total <= AUTO_BUNDLED_ABOVE:
            break
        total += saved
        chosen.append(name)
    return frozenset(chosen)


def _pieces(algorithm: Any, shape: tuple[int, ...] | None) -> int:
    if isinstance(algorithm, AxesAlgorithm):
        return int(algorithm.pieces(len([d for d in shape or () if d > 1]) or 1))
    return int(algorithm.pieces)


def planned_transfers(plan: CollectivePlan, counted: dict[tuple, int] | None = None) -> int:
    """The transfers ``plan`` makes, counted without making them for the streaming plans (see the module docstring).

    ``counted`` caches the count of plans made for one group, by key.

    Examples
    --------
    >>> from netsim.network.presets import tpu_slice
    >>> from netsim.programs.model import Op
    >>> op = Op.of("g", "all_gather", ("A",), "B", axes=("X", "Y"), axis=0, tiled=True)
    >>> mesh = Mesh({"X": 16, "Y": 16, "Z": 16}, tpu_slice("tpu-v4:16x16x16"))
    >>> planned_transfers(collective_plan(op, Sharded((4096, 8), "bfloat16", (("X", "Y"), ())), mesh))  # 16 groups of 256, 4 pieces
    4177920
    """
    layout, groups = plan.layout, plan.layout.groups
    if not len(groups):
        return 0
    n, many = len(groups[0]), len(groups)
    if PATTERNS[layout.pattern].pairs:
        return sum(len(g) for g in groups)  # a pair per entry of each group (an upper bound: pairs that stay put move nothing)
    entry = ALGORITHMS[plan.algorithm]
    shape = plan.shaped.get("group_shape")
    count = getattr(entry, "transfers", None)
    if count is not None and shape is not None:
        return many * count(tuple(d for d in shape if d > 1) or (1,)) * len(PATTERNS[layout.pattern].phases)
    if layout.pattern in entry.each_piece_once:
        return many * n * (n - 1) * _pieces(entry, shape) * len(PATTERNS[layout.pattern].phases)
    key = (layout.pattern, n, plan.algorithm, tuple(sorted(plan.shaped.items())))
    counted = {} if counted is None else counted
    if key not in counted:
        counted[key] = len(build_schedule(layout.pattern, [list(range(n))], plan.algorithm, **plan.shaped).transfers)
    return many * counted[key]


def planned_counts(program: Program, mesh: Mesh) -> dict[str, float]:
    """What lowering ``program`` on ``mesh`` will make, counted first: transfers, the links they cross, compute steps.

    Collectives as :func:`planned_transfers` counts them; a collective matmul as a gather of
    its first operand over the axes it is split on (two pieces); every matmul, einsum or
    compute op a step per device (a collective matmul one per block), and a launch per
    device and collective where the chip has a fixed cost per collective. A collective that
    waits for several steps on a device waits for one join of them: counted on every device
    (an upper bound: no join where it waits for one step).

    Examples
    --------
    >>> from netsim.programs.files import load_program
    >>> p = load_program("scenarios/programs/megatron_mlp.yaml")
    >>> planned_counts(p.program, p.mesh_obj)["transfers"]
    192
    """
    arrays = program.arrays_after()
    topology, n = mesh.topology, mesh.topology.n_devices
    dims, wraps = tuple(topology.dims), tuple(topology.wraparound)
    launch = 1 if in_force(topology).collective_overhead_s else 0
    counted: dict[tuple, int] = {}
    bundled = bundled_defaults(program, mesh)
    transfers = crossings = compute = 0.0
    for op in program.ops:
        if isinstance(op, CollectiveOp):
            plan = collective_plan(op, arrays[op.inputs[0]], mesh, bundled)
            made = planned_transfers(plan, counted)
            transfers, crossings, compute = transfers + made, crossings + made * mean_hops(plan.algorithm, dims, wraps), compute + (launch + 1) * n
        elif isinstance(op, Matmul) and op.overlap is not None:
            split = arrays[op.inputs[0]].sharding[-1]
            ring = math.prod(mesh.shape[a] for a in split)
            made = n * (ring - 1) * 2
            transfers, crossings, compute = transfers + made, crossings + made, compute + n * ring
        else:
            compute += n
    return {"transfers": int(transfers), "link_crossings": crossings, "compute_steps": int(compute)}
