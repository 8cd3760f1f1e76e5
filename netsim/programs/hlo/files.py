"""HLO program files: a compiled module to simulate on a slice, read into an :class:`HloProgramFile`.

A program file may name an HLO module instead of arrays and ops::

    name: fsdp_matmul
    hlo: hlo/fsdp_matmul.txt       # the text of a compiled module, relative to this file;
                                   # its device map (hlo/fsdp_matmul.devices.json) is read if it is there
    topology: tpu-v5e:2x4          # as in a scenario: as many chips as the module has devices
    device: {peak_flops: 197 TFLOP/s}   # optional: the chips' compute facts
    clock_hz: 1.5e9                # optional: times compute steps that carry estimated_cycles
    algorithm: compiler            # optional: compiler (the TPU compiler's, where the module names
                                   # them; the default then) or netsim (netsim's own)
    dtypes: source                 # optional: compiled (default) or source: a CPU module's f32
                                   # collectives and dots timed at its parameters' dtype (bf16)
    sync_collectives: in_order     # optional: overlap (the default for a TPU-compiled module: the work
                                   # after a sync collective that does not read it runs beside it) or in_order
    engine: auto
    model: {params: 1.6e10, layers: 48, heads: 40, head_dim: 128, seq: 2048, per_device_batch: 6}
                                   # optional: the transformer's shape; the step report then counts
                                   # FLOPs by MaxText's formula and gives tokens/s
    require_fit: false             # true: refuse, before it plays, a module whose HBM peak exceeds a chip's
    expected: {time_s: 2.3e-4}     # what a bundled file is known to take (tests check it)

Such a file runs timing only. :func:`load_any_program` reads either kind of program file.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from netsim.network.topology import Topology
from netsim.programs.files import ProgramFile, program_from_data
from netsim.programs.hlo.validate import shown
from netsim.scenario.errors import ScenarioError
from netsim.scenario.fields import Strict
from netsim.scenario.models import ExpectedSpec
from netsim.scenario.topology_spec import DeviceSpec, TopologySpec
from netsim.scenario.yaml_files import read_yaml, validate

__all__ = ["HloProgramFile", "ModelSpec", "hlo_program_from_data", "load_any_program"]


class ModelSpec(Strict):
    """``model:``: the transformer's shape, for the step report's MaxText FLOP formula and tokens/s."""

    params: Annotated[float, Field(gt=0, allow_inf_nan=False, strict=False)]  # (YAML reads 16e9 as a string: taken as the number)
    layers: Annotated[int, Field(gt=0)]
    heads: Annotated[int, Field(gt=0)]
    head_dim: Annotated[int, Field(gt=0)]
    seq: Annotated[int, Field(gt=0)]
    per_device_batch: Annotated[float, Field(gt=0, allow_inf_nan=False, strict=False)]
    causal_attention: bool = False
    """Whether MaxText's formula halves attention's FLOPs (causal), as it did from December 2023."""


class HloProgramFile(Strict):
    """A validated HLO program file (see the module docstring)."""

    name: str
    description: str | None = None
    hlo: str = Field(min_length=1)
    topology: str | TopologySpec
    device: DeviceSpec | None = None
    clock_hz: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    algorithm: Literal["compiler", "netsim"] | None = None
    dtypes: Literal["compiled", "source"] = "compiled"
    sync_collectives: Literal["overlap", "in_order"] | None = None
    engine: Literal["auto", "processes", "fast"] = "auto"
    calibration: Literal["nominal", "calibrated"] = "nominal"
    model: ModelSpec | None = None
    require_fit: bool = False
    expected: ExpectedSpec | None = None
    source: str = Field("<program>", exclude=True)
    base_dir: Path | None = Field(None, exclude=True)

    @property
    def hlo_path(self) -> Path:
        """The module's text file (relative paths are relative to the program file)."""
        path = Path(self.hlo)
        return path if path.is_absolute() or self.base_dir is None else self.base_dir / path

    @cached_property
    def topology_obj(self) -> Topology:
        """The slice the module runs on (with the file's device facts), read as a program file reads its topology."""
        return ProgramFile.topology_obj.func(self)  # type: ignore[arg-type]


def hlo_program_from_data(data: Any, source: str = "<program>", base_dir: Path | None = None) -> HloProgramFile:
    """Check an HLO program given as a mapping.

    Examples
    --------
    >>> hlo_program_from_data({"name": "p", "hlo": "m.txt", "topology": "tpu-v5e:2x2", "clock": 1}, "p.yaml")
    Traceback (most recent call last):
    ...
    netsim.scenario.ScenarioError: p.yaml: clock: unknown field; ...
    """
    loaded = validate(HloProgramFile, data, source, {"source": source, "base_dir": base_dir})
    try:
        found = loaded.hlo_path.is_file()
    except OSError as error:  # a name too long for the file system, say
        raise ScenarioError(source, "hlo", f"cannot read {shown(loaded.hlo)}: {error.strerror}") from None
    if not found:
        raise ScenarioError(source, "hlo", f"no module text at {shown(str(loaded.hlo_path))}; write one with netsim.programs.hlo.export(compiled, mesh, path)")
    _ = loaded.topology_obj
    return loaded


def load_any_program(path: str | Path) -> ProgramFile | HloProgramFile:
    """Read a program file of either kind: arrays and ops, or ``hlo:`` a compiled module.

    Examples
    --------
    >>> type(load_any_program("scenarios/programs/hlo/psum.yaml")).__name__
    'HloProgramFile'
    """
    path = Path(path)
    data = read_yaml(path)
    if isinstance(data, dict) and "hlo" in data:
        return hlo_program_from_data(data, str(path), path.parent)
    return program_from_data(data, str(path), path.parent)
