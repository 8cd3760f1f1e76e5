"""Simulate an HLO module on a slice: its steps as a program, lowered to one schedule and played, timing only.

:func:`run_hlo` reads the module (:mod:`netsim.programs.hlo`), places its device ids on
the slice (the device map beside the module, else row-major), makes it a program of the
program model (:mod:`netsim.programs.hlo.translate`), lowers that as any program is
lowered (:func:`netsim.programs.lowering.lower`) and plays the schedule on the links and
compute units at once. The :class:`~netsim.result.Result` is a program's result
(:func:`netsim.analysis.program_stats.program_stats` reads it) whose ``program`` is an
:class:`HloRun`: the module, each step's record and where the devices were placed.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netsim.allocator import KEEP_FREED_MIN_DEVICES, keep_freed_memory
from netsim.analysis.hlo_stats import collectives
from netsim.analysis.step_report import maxtext_flops, step_report
from netsim.checks.memory import MemoryLimitError, available_memory, check_memory
from netsim.checks.program_memory import fit_note
from netsim.network.topology import Topology
from netsim.programs.hlo import HloProgram, hlo_from_text, load_hlo
from netsim.programs.hlo.devices import CPU_CAVEAT, DeviceMap, default_device_map, load_device_map
from netsim.programs.hlo.dtypes import at_source_dtype, source_dtype
from netsim.programs.hlo.files import HloProgramFile, load_any_program
from netsim.programs.hlo.flatten import flatten
from netsim.programs.hlo.loops import MAX_STEPS, Extension, check_steps, extend, multilinear_at, unrolled_steps
from netsim.programs.hlo.megascale import across_slices, slice_device_map, without_slices
from netsim.programs.hlo.text import HloSyntaxError
from netsim.programs.hlo.translate import HloLowered, lower_hlo
from netsim.programs.hlo.validate import cut_long_words
from netsim.programs.periods import DriftError
from netsim.programs.run import memory_needed, play_lowered, program_result
from netsim.result import ProgramRun, Result
from netsim.run import check_engine, resolve_topology
from netsim.scenario.errors import ScenarioError
from netsim.version import __version__

__all__ = ["TPU_SOURCE_DTYPES", "HloRun", "run_hlo", "run_hlo_program"]

TPU_SOURCE_DTYPES = (
    "source times a module XLA's CPU compiler upcast to f32 at its arguments' dtype; this one was compiled by the TPU compiler, "
    "whose dtypes are those the TPU runs: leave dtypes out (compiled)"
)
"""Why ``dtypes: source`` is refused for a TPU-compiled module (its f32 arrays are real: halving them would be wrong)."""

SYNC_COLLECTIVES = {
    "overlap": "the work after a sync collective that does not read its result runs beside it",
    "in_order": "a sync collective holds the instruction stream until it ends",
}
"""How a collective written synchronous (not as a ``*-start``/``*-done`` pair) plays.

The default is ``overlap`` for a module the TPU compiler wrote, ``in_order`` for any other. A
TPU's TensorCore drives its own collectives, and XLA's TPU flag
``--xla_tpu_overlap_compute_collective_tc`` (set by MaxText's TPU configs) overlaps them with
the compute around them; the same libtpu writes a collective matmul's permutes as sync
instructions for v5e and as ``collective-permute-start``/``-done`` pairs for v5p. ``in_order``
plays the module's text as written.
"""


@dataclass(frozen=True)
class HloRun(ProgramRun):
    """What an HLO module's run adds to a program's: the module and how it was placed and lowered."""

    module: HloProgram | None = None
    hlo: HloLowered | None = None
    device_map: DeviceMap | None = None
    clock_hz: float | None = None
    source: str = ""
    roofline_ici_bytes: dict[str, int] | None = None
    """``jax.experimental.roofline``'s ICI bytes per mesh axis, when the run came from JAX and it applies."""
    extension: Extension | None = None
    """How the time was extended past the trips of long loops played (None: every trip was played)."""
    compiler: str = ""
    """Which compiler made the module, as far as is known (the device map's ``compiler``, or :func:`~netsim.programs.hlo.from_jax.from_jax`'s)."""
    dtypes: str = "as compiled"
    """Which dtypes were timed: ``as compiled``, or ``source: ...`` (:mod:`netsim.programs.hlo.dtypes`)."""
    algorithm: str = "netsim"
    """Whose algorithms played the collectives: ``compiler`` (the TPU compiler's, where the module names them) or ``netsim``."""
    other_times: dict[str, float] | None = None
    """Per collective instruction, its time with netsim's own algorithms when the compiler's played (None when not compared)."""
    memory_needed_bytes: int = 0
    """What the run was estimated to hold before it played (:func:`netsim.programs.run.memory_needed`)."""
    sync_collectives: str = "in_order"
    """How collectives written synchronous played (:data:`SYNC_COLLECTIVES`)."""

    def describe(self) -> tuple[str, ...]:
        """What compiled the module, where its devices ran and what it holds (the lines under the result's repr).

        Examples
        --------
        >>> run_hlo("scenarios/programs/hlo/psum.txt", "tpu-v5e:2x4").program.describe()[0]
        "compiled by: XLA's CPU compiler (CPU-compiled: dtypes as it left them, no async overlap, no compiler algorithms)"
        """
        module = self.module
        if module is None:
            return ()
        placed = self.device_map.source if self.device_map is not None else "row-major"
        kept = f"; text in .program.module_text ({len(self.module_text.splitlines())} lines)" if self.module_text else ""
        held = f"{module.module}: {module.devices} devices, {len(module.collectives)} collective(s), {len(module.unmodelled)} instruction(s) not modelled{kept}"
        timed = f"algorithms: {self.algorithm}; dtypes timed: {self.dtypes}; sync collectives: {self.sync_collectives}"
        return (f"compiled by: {self.compiler or 'not said'}", f"placement: {placed}", f"module: {held}", timed)

    memory: Any = None
    """The HBM one device holds at the module's peak (:class:`~netsim.programs.hlo.memory.ModuleMemory`; None when not known)."""

    model: dict[str, float] | None = None
    """The transformer's shape the step report takes MaxText's FLOP formula from (:data:`~netsim.analysis.step_report.MODEL_FIELDS`), if given."""

    @property
    def flops(self) -> float | None:
        """The module's FLOPs per device as XLA's cost analysis counts them, each loop by its trips (:func:`~netsim.programs.hlo.flops.module_flops`)."""
        return None if self.module is None else self.module.flops

    @property
    def module_text(self) -> str:
        """The module's text, as it was read."""
        return "" if self.module is None else self.module.text

    def report_of(self, result: Result, model: dict[str, float] | None = None) -> Any:
        """The step report of ``result`` (whose ``program`` this is): :func:`netsim.analysis.step_report.step_report`."""
        return step_report(result, model)


def run_hlo(
    module: str | Path | HloProgram,
    topology: Topology | str | Path,
    *,
    device_map: DeviceMap | None = None,
    clock_hz: float | None = None,
    engine: str = "auto",
    name: str | None = None,
    unroll: bool = False,
    algorithm: str | None = None,
    compare: bool = True,
    dtypes: str = "compiled",
    require_fit: bool = False,
    model: dict[str, float] | None = None,
    sync_collectives: str | None = None,
) -> Result:
    """Simulate the HLO module ``module`` (a text file, or already read) on ``topology``, timing only.

    ``while`` loops of more than :data:`~netsim.programs.hlo.loops.FULL_TRIPS` trips are
    played for a few trips, until the time each trip adds is steady or periodic, and the
    rest of their trips are extended by whole periods (:mod:`~netsim.programs.hlo.loops`; said in
    ``result.program.extension``); ``unroll=True`` plays every trip instead (up to
    :data:`~netsim.programs.hlo.loops.MAX_STEPS` steps).

    Parameters
    ----------
    module : path or HloProgram
        The text of a compiled module (``compiled.as_text()``), or :func:`~netsim.programs.hlo.load_hlo`'s result.
    topology : Topology or str
        The slice, e.g. ``"tpu-v5e:4x4"``: as many chips as the module has devices.
    device_map : DeviceMap, optional
        Where each device id runs; default the ``NAME.devices.json`` beside a module
        file, else the TPU's own device order on a TPU slice
        (:func:`~netsim.programs.hlo.devices.default_device_map`), else row-major.
    clock_hz : float, optional
        The chip's clock: compute steps with the compiler's ``estimated_cycles`` take
        ``cycles / clock_hz``; without it every compute step takes its roofline time.
    engine : {"auto", "processes", "fast"}
        Which engine plays the run (same numbers).
    name : str, optional
        The run's name (default: the module's).
    unroll : bool, default False
        Play every trip of long loops instead of extending their steady state.
    algorithm : {"compiler", "netsim"}, optional
        ``compiler``: play each collective with the TPU compiler's algorithm where the
        module names one (:mod:`netsim.programs.hlo.strategies`); ``netsim``: netsim's
        own. Default: ``compiler`` when the module names any, else ``netsim``.
    compare : bool
        When the compiler's algorithms play, also play the module with netsim's own and
        keep each collective's time beside (``result.program.other_times``): the trips the
        reported run played, when long loops were extended (each collective's time in the
        report is that run's).
    dtypes : {"compiled", "source"}
        ``source``: time f32 collectives and dots at the narrowest floating dtype of the
        module's parameters (:func:`~netsim.programs.hlo.dtypes.at_source_dtype`), for a
        module the CPU compiler upcast.
    require_fit : bool, default False
        Refuse, before playing it, a module whose HBM peak per device
        (:mod:`netsim.programs.hlo.memory`) exceeds the chip's HBM.
    model : dict, optional
        The transformer's shape (``params``, ``layers``, ``heads``, ``head_dim``, ``seq``,
        ``per_device_batch``): the step report (``result.report()``) then counts FLOPs by
        MaxText's formula and gives tokens/s (:mod:`netsim.analysis.step_report`).
    sync_collectives : {"overlap", "in_order"}, optional
        How collectives written synchronous play (:data:`SYNC_COLLECTIVES`): ``overlap``
        lets the work after one that does not read it run beside it. Default:
        ``overlap`` for a module the TPU compiler wrote, else ``in_order``.

    Returns
    -------
    Result
        ``time`` the simulated seconds; ``program`` an :class:`HloRun`.

    Raises
    ------
    ScenarioError
        For HLO text that is not understood (naming the line) or a bad device map.
    ValueError
        If the module's devices do not fit the slice.

    Examples
    --------
    >>> r = run_hlo("scenarios/programs/hlo/psum.txt", "tpu-v5e:2x4")
    >>> r.program.device_map.row_major, r.time > 0  # its device map: CPU devices, no coordinates
    (True, True)
    """
    check_engine(engine)
    if clock_hz is not None and not (0 < clock_hz < math.inf):
        raise ValueError(f"clock_hz must be a finite number of Hz > 0, e.g. 1.5e9; got {clock_hz!r}")
    if algorithm not in (None, "compiler", "netsim"):
        raise ValueError(f"algorithm must be 'compiler' or 'netsim', got {algorithm!r}")
    source = str(module) if isinstance(module, (str, Path)) else module.module
    program = load_hlo(module) if isinstance(module, (str, Path)) else module
    topo = resolve_topology(topology, None)
    if device_map is None:
        device_map = load_device_map(module, program.devices, topo.name) if isinstance(module, (str, Path)) else default_device_map(program.devices, topo.name)
    if dtypes not in ("compiled", "source"):
        raise ValueError(f"dtypes must be 'compiled' or 'source', got {dtypes!r}")
    if sync_collectives not in (None, *SYNC_COLLECTIVES):
        raise ValueError(f"sync_collectives must be 'overlap' or 'in_order', got {sync_collectives!r}")
    tpu_compiled = program.tpu_layouts or device_map.compiler.get("platform") == "tpu"
    sync = sync_collectives or ("overlap" if tpu_compiled else "in_order")
    if (sync == "overlap") != program.overlap_sync and not program.long_loops:  # (read the other way: flattened again, from its text)
        if not program.text and sync_collectives is None:
            sync = "overlap" if program.overlap_sync else "in_order"  # (steps made without a text: played as they were flattened)
        elif not program.text:
            raise ValueError(f"sync_collectives={sync!r} needs the module's text (HloProgram.text), to flatten it again")
        else:
            program = hlo_from_text(program.text, source, overlap_sync=sync == "overlap")
    if dtypes == "source" and tpu_compiled:
        raise ScenarioError(source, "dtypes", TPU_SOURCE_DTYPES)
    capacity = topo.device(0).get("hbm_capacity_bytes")
    if require_fit and program.memory is not None and capacity is not None and program.memory.peak_bytes > capacity:
        raise ScenarioError(source, "require_fit", fit_note(program.memory.peak_bytes, capacity))
    if model is not None:
        maxtext_flops(model)  # checks its fields
    if topo.n_devices >= KEEP_FREED_MIN_DEVICES:
        keep_freed_memory()
    wanted = source_dtype(list(program.parameter_dtypes)) if dtypes == "source" else None
    timed = f"source: f32 collectives and dots timed at the arguments' {wanted}" if wanted is not None else "as compiled"
    named = any(step.op.compiler_algorithm for step in program.collectives)
    chosen = algorithm or ("compiler" if named else "netsim")
    play = functools.partial(_play, topo=topo, device_map=device_map, clock_hz=clock_hz, engine=engine, name=name, source=source, wanted=wanted)
    result = _run_loops(program, functools.partial(play, algorithm=chosen), source, unroll, sync == "overlap")
    times = None
    if compare and named and chosen == "compiler":  # netsim's algorithms on the trips the report's run played: one run more
        extension = result.program.extension
        if extension is None:  # (no loop extended: every trip played, as the run reported)
            other = _run_loops(program, functools.partial(play, algorithm="netsim"), source, unroll, sync == "overlap")
        else:
            trips = {loop.line: played for loop, played in zip(extension.loops, extension.played, strict=True)}
            other = play(_flattened(program.parsed, trips, source, sync == "overlap"), algorithm="netsim")
        times = {c["hlo_name"]: c["time_s"] for c in collectives(other)}
        del other
    module = dataclasses.replace(result.program.module, text=program.text, flops=program.flops)  # (a loop's runs are flattened afresh)
    ran = dataclasses.replace(result.program, module=module, other_times=times, dtypes=timed, model=model, memory=program.memory, sync_collectives=sync)
    return dataclasses.replace(result, program=ran)


def _run_loops(program: HloProgram, play: Callable[[HloProgram], Result], source: str, unroll: bool, overlap_sync: bool = False) -> Result:
    """The module played by ``play`` (one run of steps as flattened): whole, or its long loops a few trips each and extended."""
    if not program.long_loops:
        return play(program)
    module_text, loops = program.parsed, program.long_loops
    if unroll:
        trips = {loop.line: loop.trips for loop in loops}
        steps = unrolled_steps(module_text, trips)
        if steps > MAX_STEPS:
            raise ScenarioError(
                source, "unroll", f"every trip of its long loops is {steps} steps, more than the {MAX_STEPS} netsim plays; leave the loops extended"
            )
        return play(_flattened(module_text, trips, source, overlap_sync))
    kept: dict[tuple, Result] = {}  # only the last run (a run holds its schedule): the one reported is played again if it is not that
    needs: dict[tuple[int, ...], float] = {}  # trips (loop by loop) -> the memory its run was estimated to need
    times: dict[tuple, float] = {}  # every run's time, kept across tries
    refused: list[tuple[int, ...]] = []  # trips whose run the memory check refused (other processes may hold memory meanwhile)

    def played(trips: dict[int, int]) -> Result:
        key = tuple(sorted(trips.items()))
        if key not in kept:
            kept.clear()
            try:
                kept[key] = play(_flattened(module_text, trips, source, overlap_sync))
            except ScenarioError as error:
                if not isinstance(error.__cause__, MemoryLimitError):
                    raise
                refused.append(tuple(trips[loop.line] for loop in loops))
                raise _Refused from error
            needs[tuple(trips[loop.line] for loop in loops)] = kept[key].program.memory_needed_bytes
            times[key] = kept[key].time
        return kept[key]

    def time_at(trips: dict[int, int]) -> float:
        key = tuple(sorted(trips.items()))
        return times[key] if key in times else played(trips).time

    def can_play(trips: dict[int, int]) -> bool:
        """Small enough to unroll, and, once runs of a few trips say how the memory grows with them, to fit."""
        point = tuple(trips[loop.line] for loop in loops)
        if unrolled_steps(module_text, trips) > MAX_STEPS or any(all(p >= r for p, r in zip(point, no, strict=True)) for no in refused):
            return False
        need, available = multilinear_at(needs, point), available_memory()
        return need is None or available is None or need <= available

    while True:  # (a run refused for memory: the extension again, without it; the runs played are kept)
        try:
            extension, top = extend(loops, time_at, can_play)
            break
        except DriftError as error:
            loop = loops[0]
            raise ScenarioError(source, f"line {loop.line}", f"while {loop.name}: {error}; simulate fewer trips") from None
        except _Refused as refusal:
            if all(t <= 2 for t in refused[-1]) or len(refused) > 16:  # (the first runs are not asked about: too big at all)
                raise refusal.__cause__ from None
    result = played(top)
    return dataclasses.replace(result, time=extension.time_s, program=dataclasses.replace(result.program, extension=extension))


class _Refused(Exception):
    """A loop run the memory check refused (said again as the ScenarioError it came from if nothing else can be played)."""


def _flattened(module: Any, trips: dict[int, int], source: str, overlap_sync: bool = False) -> HloProgram:
    try:
        check_steps(module, trips, ())
        return flatten(module, trips, overlap_sync)
    except HloSyntaxError as error:
        raise ScenarioError(source, f"line {error.line}", cut_long_words(error.problem)) from None


def _play(
    program: HloProgram,
    *,
    topo: Topology,
    device_map: DeviceMap,
    clock_hz: float | None,
    engine: str,
    name: str | None,
    algorithm: str,
    source: str,
    wanted: str | None = None,
) -> Result:
    """One run of the module's steps as flattened, with ``algorithm``'s collectives (f32 ones at ``wanted``, if given)."""
    if wanted is not None:
        program = at_source_dtype(program, wanted)
    slices = getattr(topo, "n_slices", 1)
    if slices > 1 and program.devices * slices == topo.n_devices:  # one slice's module (compiled for several): on every slice at once
        program, device_map = across_slices(program, slices), slice_device_map(device_map, slices)
    else:
        program = without_slices(program)
    hlo = lower_hlo(program, topo, device_map, clock_hz, name, algorithm)
    lowered = hlo.lowered
    needed = memory_needed(lowered)
    try:
        check_memory(needed, timing_only=True, fewer="fewer devices, collectives or loop trips")
    except MemoryLimitError as error:
        raise ScenarioError(source, "", str(error)) from error
    playback, _ = play_lowered(lowered, topo, engine, values=False)
    provenance: dict[str, Any] = {"netsim_version": __version__, "hlo": source, "device_map": device_map.source, "clock_hz": clock_hz}
    return program_result(
        lowered,
        topo,
        playback,
        output=None,
        bytes_per_device=0,
        total_bytes=0,
        verified=False,
        scenario=name or program.module,
        provenance=provenance,
        verification="timing only: an HLO module's values are not simulated",
        program=HloRun(
            lowered, {}, program, hlo, device_map, clock_hz, source, compiler=_compiler(device_map), algorithm=algorithm, memory_needed_bytes=needed.total
        ),
    )


def _compiler(device_map: DeviceMap) -> str:
    """What compiled the module, from its device map."""
    facts = device_map.compiler
    if facts.get("platform") == "tpu":
        slices = f" x {facts['num_slices']} slices" if facts.get("num_slices", "1") != "1" else ""
        return f"the TPU compiler (libtpu {facts.get('libtpu', '?')}, JAX {facts.get('jax', '?')}, for {facts.get('topology', '?')}{slices})"
    if facts.get("platform") == "cpu":
        return CPU_CAVEAT
    return "not said (no compiler in the device map)"


def run_hlo_program(program: str | Path | HloProgramFile, engine: str | None = None, compare: bool = True, topology: Topology | None = None) -> Result:
    """Simulate an HLO program file (``hlo:`` a module, ``topology:`` a slice; see :mod:`netsim.programs.hlo.files`).

    ``topology``: the file's slice as another calibration has it (default: the file's own).

    Examples
    --------
    >>> r = run_hlo_program("scenarios/programs/hlo/psum.yaml")
    >>> r.scenario, r.topology
    ('hlo_psum', 'tpu-v5e:2x4')
    """
    loaded = load_any_program(program) if isinstance(program, (str, Path)) else program
    if not isinstance(loaded, HloProgramFile):
        raise ValueError(f"{program}: not an HLO program file (it has no hlo: field); run it with netsim.run_program")
    options = {"clock_hz": loaded.clock_hz, "engine": engine or loaded.engine, "name": loaded.name, "algorithm": loaded.algorithm, "dtypes": loaded.dtypes}
    options.update(model=loaded.model.model_dump() if loaded.model is not None else None, sync_collectives=loaded.sync_collectives)
    try:
        return run_hlo(loaded.hlo_path, topology or loaded.topology_obj, compare=compare, require_fit=loaded.require_fit, **options)
    except ScenarioError as error:
        if error.field in ("dtypes", "require_fit"):  # the program file's field, not the module's
            raise ScenarioError(loaded.source, error.field, error.problem) from None
        raise
