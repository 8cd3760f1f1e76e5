"""A JAX program's communication, from its compiled HLO, simulated on any TPU slice.

What XLA compiles is what runs: its collectives, on which device groups, with which
shapes, in which order. This package reads the text that
``jax.jit(f).lower(*args).compile().as_text()`` prints (the ``after_optimizations`` dump)
into an :class:`~netsim.programs.hlo.ops.HloProgram`: every collective and compute step
with the steps it waits for, ``while`` loops unrolled, and a list of the instructions that
are not modelled; then simulates it on a slice. A module per job, in the data's order:

- :mod:`~netsim.programs.hlo.shapes`: shapes and dtypes, TPU layouts stripped.
- :mod:`~netsim.programs.hlo.text`: lines into computations and instructions.
- :mod:`~netsim.programs.hlo.groups`: replica groups in all three spellings, id modes.
- :mod:`~netsim.programs.hlo.opcodes`: the opcodes known.
- :mod:`~netsim.programs.hlo.compute`: FLOPs of dots and convolutions, bytes, cycles.
- :mod:`~netsim.programs.hlo.reading`: one collective instruction (sync or async).
- :mod:`~netsim.programs.hlo.ops`: the plain form (collectives, compute, steps).
- :mod:`~netsim.programs.hlo.validate`: what the walk relies on, checked first (names,
  calls, header counts, shape sizes).
- :mod:`~netsim.programs.hlo.loops`: long ``while`` loops: trip counts, steps counted before
  they are made, the steady state a few trips reach and the extension past it.
- :mod:`~netsim.programs.hlo.trips`: a loop's trip count read from its condition (the TPU
  compiler writes none).
- :mod:`~netsim.programs.hlo.flatten`: the module walked into steps
  (:func:`hlo_from_text` and :func:`load_hlo`, here, put the above together).
- :mod:`~netsim.programs.hlo.memory`: the HBM one device holds at the module's peak
  (parameters, outputs, live temporaries), by a liveness pass over the module.
- :mod:`~netsim.programs.hlo.dtypes`: a CPU module timed at its arguments' dtype (``dtypes: source``).
- :mod:`~netsim.programs.hlo.strategies`: the TPU compiler's collective algorithms, read,
  and how ``algorithm: compiler`` plays them.
- :mod:`~netsim.programs.hlo.devices`: the device map (``NAME.devices.json``) that places
  the module's device ids on chips.
- :mod:`~netsim.programs.hlo.files`: HLO program files (``hlo:`` a module, ``topology:`` a slice).
- :mod:`~netsim.programs.hlo.translate`: a module's steps as a program of the program model
  (:mod:`netsim.programs.model`), lowered by :func:`netsim.programs.lowering.lower`.
- :mod:`~netsim.programs.hlo.run`: :func:`~netsim.programs.hlo.run.run_hlo` and
  :func:`~netsim.programs.hlo.run.run_hlo_program` simulate a module's text, or a
  program file that names one, on a slice.
- :mod:`~netsim.programs.hlo.export`: write a compiled program's HLO text and its device
  map for ``netsim program --hlo NAME.txt``.
- :mod:`~netsim.programs.hlo.from_jax`: compile a JAX function (with the TPU compiler when
  libtpu is installed, else XLA's CPU compiler) and simulate it.
- :mod:`~netsim.programs.hlo.examples`: the small JAX programs whose modules ship in
  ``scenarios/programs/hlo/`` (``scripts/make_hlo_modules.py`` writes them).

:mod:`netsim.analysis.hlo_stats` reads a module's run: the ``collectives`` list and
bytes per mesh axis. JAX is imported only when used (the ``jax`` extra). Every mistake
in a module is a :class:`~netsim.scenario.ScenarioError` naming the file and the line.
"""

from __future__ import annotations

import stat
from pathlib import Path

from netsim.programs.hlo.flatten import flatten
from netsim.programs.hlo.flops import module_flops
from netsim.programs.hlo.loops import check_steps, long_loops
from netsim.programs.hlo.memory import module_memory
from netsim.programs.hlo.ops import COLLECTIVES, Collective, Compute, HloProgram, Step, Unmodelled
from netsim.programs.hlo.text import HloSyntaxError, parse_module
from netsim.programs.hlo.validate import check_module, cut_long_words
from netsim.scenario.errors import ScenarioError

__all__ = ["COLLECTIVES", "Collective", "Compute", "HloProgram", "Step", "Unmodelled", "hlo_from_text", "load_hlo"]

MAX_HLO_BYTES = 64 * 2**20
"""The largest HLO text read (64 MiB: reading takes about 0.3 s and 10 bytes of memory per byte of text)."""


def hlo_from_text(text: str, source: str = "<hlo>", overlap_sync: bool | None = None) -> HloProgram:
    """The steps of the HLO module written in ``text``; ``source`` names it in errors.

    ``overlap_sync``: sync collectives leave the instruction stream free
    (:func:`~netsim.programs.hlo.flatten.flatten`); default: when the module has the TPU's
    layouts, as :func:`~netsim.programs.hlo.run.run_hlo` plays such a module by default.

    Raises
    ------
    ScenarioError
        ``source: line N: what was not understood``.

    Examples
    --------
    >>> program = hlo_from_text('''HloModule m, num_partitions=2
    ... ENTRY %main (p: bf16[4,8]) -> bf16[4,8] {
    ...   %p = bf16[4,8]{1,0:T(4,128)(2,1)} parameter(0)
    ...   ROOT %ar = bf16[4,8]{1,0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
    ... }
    ... %add (a: f32[], b: f32[]) -> f32[] {
    ...   ROOT %s = f32[] add(%a, %b)
    ... }''')
    >>> c = program.collectives[0].op
    >>> c.op, str(c.operands[0]), c.nbytes, c.groups
    ('all-reduce', 'bf16[4,8]', 64, [[0, 1]])
    >>> hlo_from_text("HloModule m\\nENTRY %main () -> f32[] {\\n  %x = f32[] frobnicate()\\n}", "m.txt").unmodelled[0].reason
    "unknown opcode 'frobnicate': timed by the bytes it touches"
    >>> hlo_from_text("HloModule m\\nENTRY %main () -> f32[] {\\n  %x = f32[] negate(%y)\\n}", "m.txt")
    Traceback (most recent call last):
    ...
    netsim.scenario.ScenarioError: m.txt: line 3: negate x: unknown operand 'y'
    """
    try:
        module = parse_module(text)
        check_module(module)
        loops = long_loops(module)
        trips = {loop.line: 1 for loop in loops}
        check_steps(module, {loop.line: 3 for loop in loops}, loops)
        tpu_layouts = ":T(" in module.attrs.get("entry_computation_layout", "")
        program = flatten(module, trips, tpu_layouts if overlap_sync is None else overlap_sync)
        program.text, program.flops = text, _executed_flops(module)
    except HloSyntaxError as error:
        raise ScenarioError(source, f"line {error.line}", cut_long_words(error.problem)) from None
    if loops:
        program.long_loops, program.parsed = loops, module
    program.memory = module_memory(module)
    program.tpu_layouts = tpu_layouts
    return program


def _gunzipped(data: bytes, path: Path) -> bytes:
    """A gzipped module's text, refused past :data:`MAX_HLO_BYTES` (read in pieces: a small file may unpack to gigabytes)."""
    import gzip
    import io

    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as file:
            text = file.read(MAX_HLO_BYTES + 1)
    except (OSError, EOFError) as error:
        raise ScenarioError(str(path), "", f"not a gzip file netsim can read ({error}); give the module's text, or the text gzipped") from None
    if len(text) > MAX_HLO_BYTES:
        raise ScenarioError(str(path), "", f"unpacks to more than the {MAX_HLO_BYTES // 2**20} MiB of HLO text netsim reads; simulate a smaller program")
    return text


def _executed_flops(module) -> int | None:
    """The module's FLOPs per device, each loop by its trips; None where a computation the steps never reach is not understood."""
    try:
        return module_flops(module, "trips")
    except (ValueError, KeyError):
        return None


def load_hlo(path: str | Path) -> HloProgram:
    """The steps of the HLO module in the text file ``path`` (see :func:`hlo_from_text`); ``NAME.txt.gz`` is read gzipped.

    Raises
    ------
    ScenarioError
        If the file is missing, too big, not UTF-8 text, or not understood (naming the line).

    Examples
    --------
    >>> module = load_hlo("scenarios/programs/hlo/psum.txt")
    >>> module.devices, [step.op.op for step in module.steps]
    (8, ['all-reduce'])
    """
    path = Path(path)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ScenarioError(str(path), "", "not a regular file (a device, a FIFO or a folder); give the text file of a compiled module")
        if info.st_size > MAX_HLO_BYTES:
            size, limit = info.st_size / 2**20, MAX_HLO_BYTES // 2**20
            raise ScenarioError(
                str(path), "", f"{size:.1f} MiB, more than the {limit} MiB of HLO text netsim reads; simulate a smaller program, or one step of it"
            )
        with path.open("rb") as file:
            data = file.read(info.st_size + 1)  # read(n) sets n bytes aside first: never more than the file
        if len(data) > info.st_size:
            raise ScenarioError(str(path), "", "it grew while it was read; read it once it is written")
        if path.suffix == ".gz":
            data = _gunzipped(data, path)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise ScenarioError(str(path), "", "no such file") from None
    except UnicodeDecodeError:
        raise ScenarioError(str(path), "", "not UTF-8 text; expected the text of an HLO module (compiled.as_text())") from None
    except OSError as error:
        raise ScenarioError(str(path), "", f"cannot read: {error.strerror}") from None
    return hlo_from_text(text, str(path))
