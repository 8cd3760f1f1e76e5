"""Program files: arrays sharded on a mesh and the ops that run on them, read into a :class:`ProgramFile`.

A program file::

    name: allgather_matmul
    topology: tpu-v5e:4x4          # as in a scenario: a TPU slice, a topology file or a mapping
    mesh: {X: 4, Y: 4}             # named axes, row-major on the devices (or {shape:, devices:, axis_dims:})
    params: {B: 2048}              # optional sizes that shapes may name (a study can sweep them)
    arrays:                        # the arrays the program starts with: global shapes
      A: {shape: [B, 4096], dtype: bfloat16, sharding: [null, X]}   # a PartitionSpec over mesh axes
      W: {shape: [4096, 1024], dtype: bfloat16}                     # no sharding: replicated
      # g: {shape: [4096, 1024], dtype: float32, partial: [X, Y]}   # one addend per device (gradients): psum it
    ops:
      - {name: gather, op: all_gather, in: A, axes: X, axis: 1, tiled: true, out: A_full}
      - {name: mm, op: matmul, in: [A_full, W], out: C}
      # - {name: mm, op: matmul, in: [A, W], out: C, overlap: collective}   # a collective matmul
      # - {name: other, op: compute, flops: 1e12, bytes: 1 GB}              # or seconds: 10 us
      # a matmul, einsum or compute may say efficiency: 0.6 (the fraction of peak FLOP/s it reaches)
      # a compute may say unit: dma (a copy on the device's DMA engine: beside compute, its bytes at HBM bandwidth)
      # every op may say after: [names] (start only once those are done on the device)
    data: values                   # or none: timing only
    seed: 0
    calibration: nominal           # or calibrated: the chips' measured terms (docs/validation.md)
    require_fit: false             # true: refuse a program whose arrays do not fit in a chip's HBM
    expected: {time_s: 1.2e-4}     # what the bundled programs are known to take (tests check it)

Collectives run tiled (``tiled`` defaults to true; the untiled forms, which add or
remove a dimension, are not run in programs).

Mistakes are :class:`~netsim.scenario.ScenarioError` s naming the file, the op
(``ops.1``) and the field, e.g. ``prog.yaml: ops.1.in: op 'mm': no array 'Q'``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Discriminator, Field, Tag, model_validator

from netsim.network import units
from netsim.network.calibration import calibrate, check_calibration
from netsim.network.device_mesh import Mesh
from netsim.network.presets import is_slice_name, tpu_slice
from netsim.network.topology import Topology
from netsim.programs.model import Op, Program, ProgramError, Sharded
from netsim.programs.repeats import Block, unrolled, written_name
from netsim.scenario.errors import ScenarioError
from netsim.scenario.fields import Seconds, Strict
from netsim.scenario.models import ExpectedSpec, MeshSpec, mesh_shorthand
from netsim.scenario.suggestions import dtype_name
from netsim.scenario.topology_spec import DeviceSpec, TopologySpec, build_topology, load_topology
from netsim.scenario.yaml_files import read_yaml, validate
from netsim.semantics import ops as registry
from netsim.semantics.program_values import itemsize

__all__ = ["MAX_ARRAY_BYTES", "MAX_UNROLLED_OPS", "ProgramFile", "load_program", "program_as_data", "program_from_data"]

MAX_ARRAY_BYTES = 2**50
"""The largest array a program file may declare (1 PiB: more than any slice holds)."""

MAX_UNROLLED_OPS = 2**20
"""The most ops a program's ``repeat:`` blocks may unroll into when every trip is played (``unroll: true``, or values)."""

Axes = Annotated[list[str], BeforeValidator(lambda v: [v] if isinstance(v, str) else v)]
Names = Annotated[list[str], BeforeValidator(lambda v: [v] if isinstance(v, str) else v)]
Size = int | str


def _amount(parse):
    def read(value: Any) -> float:
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                return parse(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("expected a number")
        return float(value)

    def check(value: Any) -> float:
        amount = read(value)
        if not (math.isfinite(amount) and amount >= 0):  # nan would cost nothing and pass every check; inf never ends
            raise ValueError("expected a finite amount >= 0")
        return amount

    return BeforeValidator(check)


class ArraySpec(Strict):
    """An array the program starts with: global shape (sizes or ``params`` names), dtype, sharding."""

    shape: list[Size] = Field(max_length=8)
    dtype: Annotated[Literal["bfloat16", "float16", "float32", "float64", "int8", "int16", "int32", "int64"], BeforeValidator(dtype_name)] = "float32"
    sharding: list[str | list[str] | None] | None = None
    partial: Axes | None = None


_COLLECTIVE_FIELDS = {name: set(op.program) for name, op in registry.OPS.items()}
"""Each op's fields besides name, op, in, out and after (:data:`netsim.semantics.ops.OPS`)."""
_OP_FIELDS = tuple(dict.fromkeys(f for op in registry.OPS.values() for f in op.program))


_AS_TUPLES = {
    "axes": tuple,
    "groups": lambda groups: tuple(tuple(g) for g in groups),
    "perm": lambda perm: tuple((int(s), int(t)) for s, t in perm),
}
"""How the file's lists become the model's tuples."""


class OpSpec(Strict):
    """One op of a program file (the fields each op takes are listed in the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    name: str
    op: Literal[tuple(registry.OPS)]  # type: ignore[valid-type]
    inputs: Names = Field(default_factory=list, alias="in")
    out: str | None = None
    axes: Axes | None = None
    groups: list[list[Annotated[int, Field(ge=0)]]] | None = None
    axis: int | None = None
    tiled: bool | None = None
    scatter_dimension: int | None = None
    split_axis: int | None = None
    concat_axis: int | None = None
    perm: list[Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]] | None = None
    subscripts: str | None = None
    overlap: Literal["collective"] | None = None
    flops: Annotated[float, _amount(units.parse_work)] | None = None
    bytes: Annotated[float, _amount(units.parse_bytes)] | None = None
    seconds: Seconds | None = None
    efficiency: Annotated[float, Field(gt=0, le=1, strict=False)] | None = None
    unit: Literal["compute", "dma"] | None = None
    after: Names = Field(default_factory=list)
    algorithm: str | None = None

    @model_validator(mode="after")
    def _fields_of_the_op(self) -> OpSpec:
        allowed = _COLLECTIVE_FIELDS[self.op]
        given = {f for f in _OP_FIELDS if getattr(self, f) is not None}
        extra = sorted(given - allowed)
        if extra:
            raise ValueError(f"{self.op} takes no {extra[0]}; its fields are: name, op, in, out, after, {', '.join(sorted(allowed))}")
        return self

    def to_op(self) -> Op:
        """The op as the program model has it: the fields the file gives, over the registry's defaults for a program file."""
        given = {f: getattr(self, f) for f in _OP_FIELDS if getattr(self, f) is not None}
        for name, convert in _AS_TUPLES.items():
            if name in given:
                given[name] = convert(given[name])
        return Op.of(self.name, self.op, tuple(self.inputs), self.out, after=tuple(self.after), **{**registry.OPS[self.op].program, **given})


class RepeatSpec(Strict):
    """A block of ops that runs ``repeat`` times in a row (as ``jax.lax.scan`` over layers): see :mod:`netsim.programs.repeats`."""

    repeat: Annotated[int, Field(ge=1, le=10**9)]
    ops: list[OpSpec] = Field(min_length=1, max_length=1 << 16)


def _op_or_block(value: Any) -> str | None:
    """Which an entry of ``ops`` is: a block (it says ``repeat``) or an op."""
    if isinstance(value, (RepeatSpec, OpSpec)):
        return type(value).__name__
    return ("RepeatSpec" if "repeat" in value else "OpSpec") if isinstance(value, dict) else None


OpOrBlock = Annotated[Annotated[OpSpec, Tag("OpSpec")] | Annotated[RepeatSpec, Tag("RepeatSpec")], Discriminator(_op_or_block)]


class ProgramFile(Strict):
    """A validated program file. Build one with :func:`load_program`."""

    name: str
    description: str | None = None
    topology: str | TopologySpec
    device: DeviceSpec | None = None
    mesh: Annotated[MeshSpec, BeforeValidator(mesh_shorthand)]
    params: dict[str, Annotated[int, Field(ge=1, le=1 << 40)]] = Field(default_factory=dict)
    arrays: dict[str, ArraySpec] = Field(min_length=1)
    ops: list[OpOrBlock] = Field(min_length=1, max_length=1 << 16)
    unroll: bool = False
    """Play every trip of ``repeat:`` blocks (default: a few trips, the rest extended from their steady or periodic state)."""
    symmetry: Literal["auto"] | bool = "auto"
    """Timing only, on a torus: play one device of each set the slice's shifts map onto one another, where every
    collective's plan does the same on them (``true``); every device (``false``); ``true`` when a run of one trip of
    each block, times the most trips, streams more than 2**24 transfers (``auto``). See docs/programs_limits.md."""
    data: Literal["values", "none"] = "values"
    seed: Annotated[int, Field(ge=0, lt=2**63)] = 0
    engine: Literal["auto", "processes", "fast"] = "auto"
    calibration: Literal["nominal", "calibrated"] = "nominal"
    require_fit: bool = False
    """Refuse to run when a device's arrays do not fit in its chip's HBM (a sweep's point then has an error)."""
    expected: ExpectedSpec | None = None
    source: str = Field("<program>", exclude=True)
    base_dir: Path | None = Field(None, exclude=True)

    @cached_property
    def topology_obj(self) -> Topology:
        """The topology the program runs on (with the file's device facts)."""
        try:
            if isinstance(self.topology, TopologySpec):
                topology = build_topology(self.topology, self.source, "topology", self.name)
            elif is_slice_name(self.topology):
                topology = tpu_slice(self.topology)
            else:
                topology = load_topology(self.topology, base_dir=self.base_dir)
        except ValueError as error:
            if isinstance(error, ScenarioError):
                raise
            raise ScenarioError(self.source, "topology", str(error)) from None
        return calibrate(topology.with_device(self.device.facts()) if self.device is not None else topology, self.calibration)

    def with_calibration(self, mode: str) -> ProgramFile:
        """The same program run with ``calibration: mode`` (what ``--calibration`` asks for)."""
        copy = self.model_copy(update={"calibration": check_calibration(mode)})
        for cached in ("topology_obj", "mesh_obj"):  # built from the topology: built again
            copy.__dict__.pop(cached, None)
        return copy

    @cached_property
    def mesh_obj(self) -> Mesh:
        """The mesh laid on the topology."""
        try:
            return Mesh(self.mesh.shape, self.topology_obj, devices=self.mesh.devices, axis_dims=self.mesh.axis_dims)
        except ValueError as error:
            raise ScenarioError(self.source, "mesh", str(error)) from None

    @cached_property
    def arrays_obj(self) -> dict[str, Sharded]:
        """The arrays the program starts with, as the program model has them."""
        arrays = {}
        for name, spec in self.arrays.items():
            shape = tuple(self._size(f"arrays.{name}.shape", s) for s in spec.shape)
            if math.prod(shape) * itemsize(spec.dtype) > MAX_ARRAY_BYTES:
                shown = ", ".join(map(str, shape))
                raise ScenarioError(
                    self.source, f"arrays.{name}.shape", f"[{shown}] of {spec.dtype} is more than 2^50 bytes (1 PiB, beyond any slice); give the real shape"
                )
            sharding = spec.sharding if spec.sharding is not None else [None] * len(shape)
            axes = tuple(() if s is None else (s,) if isinstance(s, str) else tuple(s) for s in sharding)
            arrays[name] = Sharded(shape, spec.dtype, axes, tuple(spec.partial or ()))
        return arrays

    @cached_property
    def program(self) -> Program:
        """The program as data (:class:`~netsim.programs.model.Program`), every trip of its ``repeat:`` blocks unrolled, checked.

        Raises
        ------
        ScenarioError
            For a mistake, or blocks that unroll into more than :data:`MAX_UNROLLED_OPS` ops.
        """
        ops = sum(item.count * len(item.ops) if isinstance(item, Block) else 1 for item in self.items)
        if ops > MAX_UNROLLED_OPS:
            raise ScenarioError(
                self.source,
                "ops",
                f"the repeat: blocks unroll into {ops} ops, more than the {MAX_UNROLLED_OPS} netsim plays; "
                "run it timing-only (data: none) without unroll: true",
            )
        return self.program_at(self.repeats)

    @cached_property
    def checked(self) -> Program:
        """The program with at most 3 trips of each block: what loading checks (each trip's ops, and the carry from trip to trip)."""
        return self.program_at(tuple(min(count, 3) for count in self.repeats))

    @cached_property
    def items(self) -> tuple[Op | Block, ...]:
        """The ops as written: an :class:`~netsim.programs.model.Op` each, a :class:`~netsim.programs.repeats.Block` per ``repeat:``."""
        return tuple(Block(item.repeat, tuple(op.to_op() for op in item.ops)) if isinstance(item, RepeatSpec) else item.to_op() for item in self.ops)

    @property
    def repeats(self) -> tuple[int, ...]:
        """Each ``repeat:`` block's trips, in the order written."""
        return tuple(item.count for item in self.items if isinstance(item, Block))

    def program_at(self, trips: tuple[int, ...]) -> Program:
        """The program with block ``i`` unrolled for ``trips[i]`` trips (what a run of a few trips plays), checked."""
        program = Program(self.name, dict(self.mesh.shape), self.arrays_obj, unrolled(self.items, trips), self.description)
        try:
            program.arrays_after()
        except ProgramError as error:
            raise self._error(error) from None
        return program

    def _size(self, field: str, value: Size) -> int:
        if isinstance(value, int):
            if value < 1:
                raise ScenarioError(self.source, field, f"sizes must be positive, got {value}")
            return value
        if value not in self.params:
            raise ScenarioError(self.source, field, f"no param {value!r}; give a size or a name from params ({', '.join(self.params) or 'none'})")
        return self.params[value]

    def _error(self, error: ProgramError) -> ScenarioError:
        if error.array:
            return ScenarioError(self.source, f"arrays.{error.op}.{error.field}", error.problem)
        written = written_name(error.op)  # an op of a repeated block: named as written
        where = error.field
        for i, item in enumerate(self.ops):
            if isinstance(item, RepeatSpec):
                inner = next((j for j, op in enumerate(item.ops) if op.name == written), None)
                if inner is not None:
                    where = f"ops.{i}.ops.{inner}.{error.field}"
                    break
            elif item.name == error.op:
                where = f"ops.{i}.{error.field}"
                break
        return ScenarioError(self.source, where, f"op {error.op!r}: {error.problem}")


def _op_fields(data: dict[str, Any]) -> Callable[[list[str]], tuple[str, list[str]] | None]:
    """The fields an op of ``data`` takes, by its path (``["ops", "3"]``), for naming a misspelt one; None elsewhere."""

    def fields_at(path: list[str]) -> tuple[str, list[str]] | None:
        if len(path) != 2 or path[0] != "ops" or not path[1].isdigit() or not isinstance(data.get("ops"), list) or int(path[1]) >= len(data["ops"]):
            return None
        entry = data["ops"][int(path[1])]
        op = entry.get("op") if isinstance(entry, dict) else None
        if op not in _COLLECTIVE_FIELDS:
            return "an op takes", ["name", "op", "in", "out", "after", *_OP_FIELDS]
        return f"{op} takes", ["name", "op", "in", "out", "after", *sorted(_COLLECTIVE_FIELDS[op])]

    return fields_at


def load_program(path: str | Path) -> ProgramFile:
    """Read and check a program file.

    Raises
    ------
    ScenarioError
        Naming the file, the op and the field.

    Examples
    --------
    >>> p = load_program("scenarios/programs/allgather_matmul.yaml")
    >>> p.program.ops[0].op, p.topology_obj.n_devices
    ('all_gather', 16)
    """
    path = Path(path)
    return program_from_data(read_yaml(path), str(path), path.parent)


def program_from_data(data: Any, source: str = "<program>", base_dir: Path | None = None) -> ProgramFile:
    """Check a program given as a mapping (as a program file holds it).

    Examples
    --------
    >>> data = {"name": "p", "topology": "ring4", "mesh": {"X": 4}, "arrays": {"A": {"shape": [8], "sharding": ["X"]}},
    ...         "ops": [{"name": "g", "op": "all_gather", "in": "A", "axes": "X", "out": "B"}]}
    >>> program_from_data(data).program.arrays_after()["B"].sharding
    ((),)
    >>> program_from_data({**data, "ops": [{"name": "g", "op": "psum", "in": "A", "axes": "X", "out": "B"}]})
    Traceback (most recent call last):
    ...
    netsim.scenario.ScenarioError: <program>: ops.0.axes: op 'g': the input is split over 'X': summing over it would add different blocks; gather it first
    """
    if isinstance(data, dict) and "collective" in data and "ops" not in data:
        raise ScenarioError(source, "", "this is a scenario file (it has a collective): run it with `netsim run` or netsim.simulate")
    loaded = validate(ProgramFile, data, source, {"source": source, "base_dir": base_dir}, _op_fields(data) if isinstance(data, dict) else None)
    _ = loaded.topology_obj, loaded.mesh_obj, loaded.checked
    return loaded


def program_as_data(
    program: Program | ProgramFile, topology: str | dict[str, Any] | None = None, *, data: str | None = None, seed: int | None = None
) -> dict[str, Any]:
    """A program built in Python (or read from a file) as a program file's mapping (write it with ``yaml.safe_dump``).

    The file runs as the program does: with values unless ``data="none"`` (as
    :func:`netsim.run_program` runs a Program), or in a :class:`ProgramFile`'s own mode,
    seed and topology.

    Examples
    --------
    >>> from netsim.programs.model import Op, Program, Sharded
    >>> p = Program("g", {"X": 4}, {"A": Sharded((8, 4), "bfloat16", (("X",), ()))}, (Op.of("g", "all_gather", ("A",), "B", axes=("X",), tiled=True),))
    >>> data = program_as_data(p, "tpu-v5e:4x1")
    >>> data["ops"], data["data"]
    ([{'name': 'g', 'op': 'all_gather', 'in': ['A'], 'out': 'B', 'axes': ['X'], 'axis': 0, 'tiled': True}], 'values')
    >>> program_from_data(data).program == p
    True
    >>> program_as_data(load_program("scenarios/programs/megatron_mlp.yaml"))["seed"]
    2
    """
    if isinstance(program, ProgramFile):
        file = program
        topology = (
            topology
            if topology is not None
            else file.topology.model_dump(mode="json", exclude_none=True)
            if isinstance(file.topology, TopologySpec)
            else file.topology
        )
        data, seed, program = data or file.data, file.seed if seed is None else seed, file.program
    if topology is None:
        raise ValueError("program_as_data needs the topology the program runs on, e.g. 'tpu-v5e:4x4'")
    data, seed = data or "values", seed or 0
    arrays = {}
    for name, array in program.arrays.items():
        spec: dict[str, Any] = {"shape": list(array.shape), "dtype": array.dtype}
        if array.axes_used:
            spec["sharding"] = [None if not axes else axes[0] if len(axes) == 1 else list(axes) for axes in array.sharding]
        if array.partial:
            spec["partial"] = list(array.partial)
        arrays[name] = spec
    ops = []
    for op in program.ops:
        entry: dict[str, Any] = {"name": op.name, "op": op.op, "in": list(op.inputs)}
        if op.output is not None:
            entry["out"] = op.output
        defaults, always = Op.of(op.name, op.op).program_fields(), getattr(registry.OPS[op.op], "arguments", {})
        for field, value in op.program_fields().items():
            if value != defaults[field] or field in always:
                entry[field] = [list(v) for v in value] if field in ("groups", "perm") else list(value) if field == "axes" else value
        if op.after:
            entry["after"] = list(op.after)
        ops.append(entry)
    return {"name": program.name, "topology": topology, "mesh": dict(program.mesh), "arrays": arrays, "ops": ops, "data": data, "seed": seed}
