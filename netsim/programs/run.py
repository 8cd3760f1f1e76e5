"""Run a program: collectives and compute on a sharded mesh, overlapped where the data allows.

:func:`run_program` takes a program file, its contents as a mapping, or a
:class:`~netsim.programs.model.Program` built in Python; lowers it to one
schedule (:func:`netsim.programs.lowering.lower`); plays it on the
topology, links and compute units at once (:func:`netsim.engine.play`); and, with
values, works out every array from the chunks the devices received
(:mod:`netsim.programs.values`) and checks it against NumPy's unsharded
computation. :func:`netsim.analysis.program_stats.program_stats` reads the result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from netsim.allocator import KEEP_FREED_MIN_DEVICES, keep_freed_memory
from netsim.analysis.program_times import program_times
from netsim.checks.invariants import InvariantError
from netsim.checks.memory import (
    MemoryEstimate,
    MemoryLimitError,
    check_memory,
    estimate_planned_memory,
    estimate_program_memory,
    mean_hops,
)
from netsim.checks.program_memory import device_memory
from netsim.engine import Playback
from netsim.engine.columns import compute_columns
from netsim.network.device_mesh import Mesh
from netsim.network.topology import Topology
from netsim.network.units import format_bytes
from netsim.programs.files import ProgramFile, load_program, program_from_data
from netsim.programs.lowering import Lowered, lower
from netsim.programs.model import CollectiveOp, Program, ProgramError
from netsim.programs.periods import DriftError, fewest_played
from netsim.programs.plans import AUTO_BUNDLED_ABOVE, planned_counts
from netsim.programs.repeats import extend_blocks
from netsim.programs.starts import start_chunk_count
from netsim.programs.symmetry import quotient_of
from netsim.programs.values import check_values, evaluate, inputs_of, start_buffers
from netsim.result import LeafRun, ProgramRun, Result
from netsim.run import TopologyLike, check_engine, choose_engine, play_checked, resolve_topology
from netsim.scenario import ScenarioError
from netsim.semantics.program_values import itemsize
from netsim.version import __version__

__all__ = ["VALUES_LIMIT_BYTES", "ProgramError", "planned_estimate", "play_lowered", "program_result", "run_estimate", "run_program", "values_bytes"]

VALUES_LIMIT_BYTES = 2 * 2**30
"""A run with values that would hold more than this in arrays is refused: run it timing-only."""


def values_bytes(lowered: Any) -> int:
    """About how much memory a run with values holds: every array's shards (as float32 while multiplied) and its float64 reference.

    Examples
    --------
    >>> from netsim.programs.files import load_program
    >>> from netsim.programs.lowering import Lowered, lower
    >>> p = load_program("scenarios/programs/allgather_matmul.yaml")
    >>> values_bytes(lower(p.program, p.mesh_obj)) < VALUES_LIMIT_BYTES
    True
    """
    return _held(lowered.arrays, lowered.mesh)


def _held(arrays: Mapping[str, Any], mesh: Mesh) -> int:
    n = mesh.topology.n_devices
    return sum(4 * n * int(np.prod(array.local_shape(mesh.shape))) + 8 * int(np.prod(array.shape)) for array in arrays.values())


def planned_estimate(program: Program, mesh: Mesh, values: int = 0, engine: str = "auto", quotient: Any = None) -> MemoryEstimate:
    """What playing ``program`` will hold, estimated before it is lowered, from the counts its plans will make
    (:func:`netsim.programs.plans.planned_counts`), in the form :func:`memory_needed` gives the lowered schedule.

    Examples
    --------
    >>> from netsim.programs.files import load_program
    >>> p = load_program("scenarios/programs/fsdp_two_layers.yaml")
    >>> planned_estimate(p.program, p.mesh_obj, engine="fast").total // 2**20  # 96 transfers: the fixed part
    128
    """
    counts = planned_counts(program, mesh)
    if quotient is not None:  # played on one device of each ``order``, after the plans were checked (netsim.programs.symmetry)
        counts = {name: count / quotient.aliases.order for name, count in counts.items()}
    if values or choose_engine(engine, counts["transfers"]) != "fast":  # the Python player (or values): the lowered schedule's form, on the counts
        transfers, steps = counts["transfers"], counts["compute_steps"]
        estimate = estimate_program_memory(transfers, counts["link_crossings"] / max(transfers, 1), steps, 2 * (transfers + steps), values)
    else:
        estimate = estimate_planned_memory(counts["transfers"], counts["compute_steps"], values, counts["link_crossings"])
    return _with_checking(estimate, quotient)


def _with_checking(estimate: MemoryEstimate, quotient: Any) -> MemoryEstimate:
    """``estimate`` and what checking the plans of a run on representatives holds (:func:`netsim.programs.symmetry.check_bytes`)."""
    return estimate if quotient is None else dataclasses.replace(estimate, schedule=estimate.schedule + quotient.checking)


def run_program(
    program: str | Path | Mapping[str, Any] | Program | ProgramFile,
    topology: TopologyLike = None,
    *,
    data: str | None = None,
    seed: int | None = None,
    engine: str | None = None,
) -> Result:
    """Simulate a program and return its :class:`~netsim.result.Result`.

    Parameters
    ----------
    program : path, mapping, Program or ProgramFile
        A program file (``scenarios/programs/*.yaml``), its contents as a
        mapping, or a :class:`~netsim.programs.model.Program`.
    topology : Topology or str, optional
        Where a :class:`Program` runs (a file names its own): a TPU slice such as
        ``"tpu-v5e:4x4"``, a topology file or a Topology.
    data : {"values", "none"}, optional
        Real values, checked against NumPy (the default for a Program), or
        timing only: the same schedule and times, no values. Default: the file's.
    seed : int, optional
        Draws the input arrays (default: the file's, or 0).
    engine : {"auto", "processes", "fast"}, optional
        Which engine plays the run (same numbers); default the file's, or auto.

    Returns
    -------
    Result
        ``time`` the program's simulated seconds; ``output`` each array an op
        made, its shards stacked ``[n_devices, ...]`` (None when timing only);
        ``program`` the ops, the schedule and the value checks.

    Raises
    ------
    netsim.scenario.ScenarioError
        For a bad program file: names the file, the op and the field.
    ProgramError
        For a bad :class:`Program`: names the op and the field.
    InvariantError
        If an array differs from the unsharded NumPy computation by more than
        its tolerance (a bug in netsim).

    Examples
    --------
    >>> import netsim
    >>> r = netsim.run_program("scenarios/programs/allgather_matmul.yaml")
    >>> r.verified, sorted(r.output)
    (True, ['A_full', 'C'])
    """
    loaded = None
    if isinstance(program, (str, Path)):
        loaded = load_program(program)
    elif isinstance(program, Mapping):
        loaded = program_from_data(dict(program))
    elif isinstance(program, ProgramFile):
        loaded = program
    if loaded is not None and topology is not None:
        raise ValueError(f"program {loaded.name!r}: a program file names its own topology ({loaded.topology!r}); topology= goes with a Program")
    if loaded is not None:
        model, mesh = None, loaded.mesh_obj  # the program whole: only when every trip is played
        data = data or loaded.data
        seed = loaded.seed if seed is None else seed
        engine = engine or loaded.engine
    elif isinstance(program, Program):
        model = program
        n = int(np.prod(list(program.mesh.values())))
        try:
            mesh = Mesh(program.mesh, resolve_topology(topology, n))
        except ValueError as error:  # the program's mesh, not one of its ops
            raise ValueError(f"program {program.name!r}: mesh {dict(program.mesh)} on topology {topology!r}: {error}") from None
    else:
        raise ValueError(f"program must be a path, a mapping or a Program, got {type(program).__name__}")
    data, seed, engine = data or "values", seed or 0, engine or "auto"
    if data not in ("values", "none"):
        raise ValueError(f"data must be 'values' or 'none', got {data!r}")
    check_engine(engine)
    symmetric = data == "none" and _symmetric(loaded, mesh)
    if loaded is not None and loaded.repeats and data == "none" and not loaded.unroll:
        return _extended(loaded, mesh, seed, engine, symmetric)
    return _run_model(model or loaded.program, mesh, loaded, data, seed, engine, symmetric)


SYMMETRIC_ABOVE = AUTO_BUNDLED_ABOVE
"""With ``symmetry: auto``, a timing-only program is played on representatives (:mod:`netsim.programs.symmetry`) when
a run of one trip of each ``repeat:`` block, times the most trips of any, would stream more than this many transfers."""


def _symmetric(loaded: ProgramFile | None, mesh: Mesh) -> bool:
    """Whether to play a program file on representatives where its plans allow (a Program built in Python: never)."""
    if loaded is None or loaded.symmetry is False:
        return False
    if loaded.symmetry is True:
        return True
    least = loaded.program_at(tuple(1 for _ in loaded.repeats))
    return planned_counts(least, mesh)["transfers"] * max(loaded.repeats, default=1) > SYMMETRIC_ABOVE


def _extended(loaded: ProgramFile, mesh: Mesh, seed: int, engine: str, symmetric: bool = False) -> Result:
    """A timing-only program with ``repeat:`` blocks: a few trips of each played, the rest extended (:func:`~netsim.programs.repeats.extend_blocks`)."""
    least = tuple(map(fewest_played, loaded.repeats))
    model = loaded.program_at(least)
    quotient = quotient_of(model, mesh) if symmetric else None
    try:  # before any run: the run reported has at least these trips
        check_memory(planned_estimate(model, mesh, 0, engine, quotient), timing_only=True, fewer="fewer devices or ops")
    except MemoryLimitError as error:
        trips = " and ".join(map(str, least))
        raise ScenarioError(
            loaded.source, "ops", f"repeat: extending its blocks plays a run of {trips} trips at the least, and {str(error).replace('this run', 'that run', 1)}"
        ) from None
    kept: dict[tuple[int, ...], Result] = {}  # the last run only (a run holds its schedule): the one reported is played again if it is not that

    def played(trips: tuple[int, ...]) -> Result:
        if trips not in kept:
            kept.clear()
            kept[trips] = _run_model(loaded.program_at(trips), mesh, loaded, "none", seed, engine, symmetric)
        return kept[trips]

    try:
        extension = extend_blocks(loaded.repeats, lambda trips: played(trips).time)
    except DriftError as error:
        raise ScenarioError(loaded.source, "ops", f"{error}; or set unroll: true") from None
    result = played(extension.played)
    return dataclasses.replace(result, time=extension.time_s, program=dataclasses.replace(result.program, repeats=extension))


def _run_model(model: Program, mesh: Mesh, loaded: ProgramFile | None, data: str, seed: int, engine: str, symmetric: bool = False) -> Result:
    """One run of ``model`` on ``mesh``: lowered, checked against memory, played (with values when ``data`` is ``values``;
    timing only on representatives where ``symmetric`` and the plans allow: :mod:`netsim.programs.symmetry`)."""
    quotient = quotient_of(model, mesh) if symmetric and data == "none" else None
    grouped = next((op for op in model.ops if isinstance(op, CollectiveOp) and op.over_devices), None)
    if grouped is not None and data == "values":
        raise ProgramError(grouped.name, "groups", "a collective over explicit groups runs timing-only: use data none")
    if mesh.topology.n_devices >= KEEP_FREED_MIN_DEVICES:
        keep_freed_memory()
    arrays = model.arrays_after()
    held = _held(arrays, mesh) if data == "values" else 0
    if loaded is not None and loaded.require_fit:
        fit = device_memory(model, arrays, mesh.shape, mesh.topology.device(0)["hbm_capacity_bytes"])
        if fit["fits"] is False:
            raise ScenarioError(loaded.source, "require_fit", fit["note"])
        if fit["fits"] is None:  # nothing to check against: say so rather than pass
            raise ScenarioError(loaded.source, "require_fit", f"{fit['note']} to check against; give the topology's device: {{hbm_capacity: 16 GiB}}")

    def refused(message: str, kind: type[ValueError]) -> ValueError:
        return ScenarioError(loaded.source, "data", message) if loaded is not None else kind(f"program {model.name}: {message}")

    if held > VALUES_LIMIT_BYTES:
        need, limit = format_bytes(held), format_bytes(VALUES_LIMIT_BYTES)
        raise refused(f"real values would hold about {need} of arrays (more than {limit}); run it timing-only with data: none", ValueError)
    topo = mesh.topology
    try:
        # before anything is built
        check_memory(planned_estimate(model, mesh, held, engine, quotient), timing_only=data == "none", fewer="fewer devices or ops")
        lowered = lower(model, mesh, quotient)
        check_memory(memory_needed(lowered, held, engine), timing_only=data == "none", fewer="fewer devices or ops")
    except MemoryLimitError as error:
        raise refused(str(error), MemoryLimitError) from None
    playback, pending = play_lowered(lowered, topo, engine, values=data == "values")
    output = None
    checks: dict[str, tuple[float, float]] = {}
    if data == "values":
        inputs, shards = inputs_of(lowered, seed)
        local = evaluate(lowered, playback, pending, shards)
        checks = check_values(lowered, local, inputs)
        for name, (difference, allowed) in checks.items():
            if not difference <= allowed:
                problem = f"differs from the unsharded NumPy computation by {difference:.3g} of its largest value (allowed {allowed:.3g})"
                raise InvariantError("output", f"program {model.name}: array {name} {problem}")
        output = {op.output: np.stack(local[op.output]) for op in model.ops if op.output is not None}
        verification = "every array equals NumPy's unsharded computation within eps(dtype)·(2 + partial-sum additions + ceil(log2 K))·max|reference|"
    else:
        verification = "not materialised: data none, chunks carried sizes only (timings are those of the real data)"
    per_device = sum(int(np.prod(a.local_shape(mesh.shape))) * itemsize(a.dtype) for a in model.arrays.values())
    return program_result(
        lowered,
        topo,
        playback,
        output=output,
        bytes_per_device=per_device,
        total_bytes=per_device,
        verified=data == "values",
        scenario=model.name,
        provenance={"netsim_version": __version__, "program": loaded.model_dump(mode="json") if loaded is not None else None, "seed": seed},
        verification=verification,
        program=ProgramRun(lowered, checks),
    )


def memory_needed(lowered: Lowered, values: int = 0, engine: str = "auto") -> MemoryEstimate:
    """What playing a lowered program will hold, from its counts (:func:`netsim.checks.memory.estimate_program_memory`).

    ``values`` is the bytes its arrays hold (:func:`values_bytes`; 0 when timing only).
    A timing-only run the compiled player plays (``engine``, as
    :func:`netsim.run.choose_engine` picks it) is estimated as measured for that player
    (:func:`netsim.checks.memory.estimate_planned_memory`); the Python player and runs
    with values keep the margin of :func:`netsim.checks.memory.estimate_program_memory`.

    Examples
    --------
    >>> from netsim.programs.files import load_program
    >>> p = load_program("scenarios/programs/fsdp_two_layers.yaml")
    >>> e = memory_needed(lower(p.program, p.mesh_obj))
    >>> e.inputs, e.schedule > 0
    (0, True)
    """
    schedule, topology = lowered.schedule, lowered.mesh.topology
    transfers = len(schedule.transfers)
    crossings = sum(len(r.transfers) * mean_hops(r.algorithm, tuple(topology.dims), tuple(topology.wraparound)) for r in lowered.ops)
    if not values and choose_engine(engine, transfers) == "fast":  # the compiled player, timing only: as measured for it
        return _with_checking(estimate_planned_memory(transfers, len(schedule.computes), 0, crossings, start_chunk_count(lowered)), lowered.quotient)
    estimate = estimate_program_memory(transfers, crossings / max(transfers, 1), len(schedule.computes), _dependencies(schedule), values)
    return _with_checking(estimate, lowered.quotient)


def _dependencies(schedule: Any) -> int:
    """The schedule's dependency entries, transfers' and compute steps'."""
    return int(schedule.transfers.dep_ptr[-1]) + int(compute_columns(schedule.computes)["dep_ptr"][-1])


def run_estimate(lowered: Lowered, values: int = 0) -> dict[str, int]:
    """What a run of ``lowered`` is estimated to hold, from its counts: what the run checked before it played.

    ``netsim program --json`` prints it under ``estimate``: the schedule's transfers,
    its compute steps, its dependency entries, the links its transfers cross (over all
    transfers) and the memory :func:`memory_needed` estimates (``values`` bytes of arrays
    included). Both engines hold about the same (tracemalloc peaks 4.25 and 4.44 MB,
    fast and processes, for a 3968-transfer all_to_all program; estimate 8.45 MB).

    Examples
    --------
    >>> from netsim.programs.files import load_program
    >>> p = load_program("scenarios/programs/allgather_matmul.yaml")
    >>> e = run_estimate(lower(p.program, p.mesh_obj))
    >>> e["transfers"], e["compute_steps"], e["memory_bytes"] > 0
    (96, 16, True)
    """
    schedule, topology = lowered.schedule, lowered.mesh.topology
    crossings = sum(len(r.transfers) * mean_hops(r.algorithm, tuple(topology.dims), tuple(topology.wraparound)) for r in lowered.ops)
    return {
        "transfers": len(schedule.transfers),
        "compute_steps": len(schedule.computes),
        "dependencies": _dependencies(schedule),
        "link_crossings": round(crossings),
        "memory_bytes": memory_needed(lowered, values).total,
    }


def play_lowered(lowered: Lowered, topology: Topology, engine: str | None, values: bool) -> tuple[Playback, Any]:
    """Play a lowered program's schedule on ``topology`` and check the run's invariants.

    Parameters
    ----------
    lowered : Lowered
        A program lowered by :func:`netsim.programs.lowering.lower`.
    topology : Topology
        Where it plays (the lowering's mesh's topology).
    engine : {"auto", "processes", "fast"} or None
        Which engine plays it (None: auto, by the number of transfers).
    values : bool
        Whether the collectives move real values (:class:`~netsim.programs.values.Pending`
        chunks filled in after the run) or sizes only.

    Returns
    -------
    tuple
        The :class:`~netsim.engine.Playback` and the chunks whose values are still to
        be computed (:func:`~netsim.programs.values.evaluate` fills them in).

    Raises
    ------
    InvariantError
        If the run breaks an invariant (:func:`netsim.checks.invariants.check_playback`).

    Examples
    --------
    >>> from netsim.programs.files import load_program
    >>> p = load_program("scenarios/programs/allgather_matmul.yaml")
    >>> playback, _ = play_lowered(lower(p.program, p.mesh_obj), p.topology_obj, None, values=False)
    >>> playback.time == run_program(p, data="none").time
    True
    """
    schedule = lowered.schedule
    buffers, pending = start_buffers(lowered, values)
    return play_checked(topology, schedule, buffers, engine=engine or "auto"), pending


def program_result(lowered: Lowered, topology: Topology, playback: Playback, **fields: Any) -> Result:
    """The :class:`~netsim.result.Result` of a played program: what every program run shares, plus ``fields``.

    Parameters
    ----------
    lowered : Lowered
    topology : Topology
    playback : Playback
        From :func:`play_lowered`.
    **fields
        The rest of the result's fields (``output``, ``verified``, ``program``, ...).

    Returns
    -------
    Result
        ``time`` the playback's; ``algorithm`` every collective's, in order, once each.

    Examples
    --------
    >>> from netsim.programs.files import load_program
    >>> p = load_program("scenarios/programs/allgather_matmul.yaml")
    >>> low = lower(p.program, p.mesh_obj)
    >>> playback, _ = play_lowered(low, p.topology_obj, None, values=False)
    >>> r = program_result(low, p.topology_obj, playback, output=None, bytes_per_device=0, total_bytes=0, verified=False, program=ProgramRun(low, {}))
    >>> r.algorithm, r.n_devices, r.time == playback.time
    ('multiaxis', 16, True)
    """
    algorithms = [r.algorithm for r in lowered.ops if r.algorithm]
    times = program_times(lowered, playback, playback.time)
    fields["program"] = dataclasses.replace(
        fields["program"], compute_s=times.compute_s, communication_s=times.communication_s, exposed_communication_s=times.exposed_communication_s
    )
    return Result(
        time=playback.time,
        collective="program",
        kind="program",
        algorithm=", ".join(dict.fromkeys(algorithms)) or "none",
        topology=topology.name,
        n_devices=topology.n_devices,
        groups=((*range(topology.n_devices),),),
        leaves=(LeafRun((), "", lowered.schedule, playback, None),),
        topology_obj=topology,
        engine=playback.engine,
        **fields,
    )
